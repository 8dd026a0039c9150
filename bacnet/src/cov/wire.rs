//! The productions of the Device object's Active_COV_Subscriptions and
//! Active_COV_Multiple_Subscriptions properties: `BACnetCOVSubscription`,
//! `BACnetCOVMultipleSubscription` and the `BACnetRecipient` they name.

use crate::codec::tag::{self, TagClass, TagKind};
use crate::codec::{ObjectIdentifier, Reader, expect_closing, write_app, write_constructed, write_ctx, write_opt_ctx};
use crate::error::DecodeError;
use crate::services::CovSubscriptionSpecification;
use crate::services::ServiceCodec;
use crate::services::common::{ObjectPropertyReference, app_field, ctx_field, opening_field, opt_ctx_field};
use alloc::vec::Vec;

/// Where notifications go.
///
/// ```text
/// BACnetRecipient ::= CHOICE {
///     device [0] BACnetObjectIdentifier,
///     address [1] BACnetAddress
/// }
///
/// BACnetAddress ::= SEQUENCE {
///     network-number Unsigned16, -- A value of 0 indicates the local network
///     mac-address OCTET STRING -- A string of length 0 indicates a broadcast
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Recipient {
    /// A device, by its Device object identifier.
    Device(ObjectIdentifier),
    /// A network address.
    Address {
        /// The network number (0 = the local network).
        network_number: u16,
        /// The MAC address on that network (empty = broadcast). For
        /// BACnet/IP, the 4 octets of the IPv4 address and 2 of the port.
        mac_address: Vec<u8>,
    },
}

impl ServiceCodec for Recipient {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Recipient::Device(d) => write_ctx(out, 0, d),
            Recipient::Address { network_number, mac_address } => write_constructed(out, 1, |o| {
                write_app(o, network_number);
                write_app(o, mac_address);
            }),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        match tag::peek_tag(r) {
            Some(Ok(t)) if t.class == TagClass::Context && t.number == 0 && matches!(t.kind, TagKind::Primitive(_)) => {
                Ok(Recipient::Device(ctx_field(r, 0, "device")?))
            }
            Some(Ok(t)) if t.is_opening(1) => {
                opening_field(r, 1, "address")?;
                let network_number = app_field(r, "network-number")?;
                let mac_address = app_field(r, "mac-address")?;
                expect_closing(r, 1, "end of address")?;
                Ok(Recipient::Address { network_number, mac_address })
            }
            Some(Err(e)) => Err(e),
            Some(Ok(_)) => Err(DecodeError::InvalidTag { at, what: "a BACnetRecipient (device [0] or address [1])" }),
            None => Err(DecodeError::Truncated { at, what: "a BACnetRecipient" }),
        }
    }
}

/// A recipient and the process within it.
///
/// ```text
/// BACnetRecipientProcess ::= SEQUENCE {
///     recipient [0] BACnetRecipient,
///     processIdentifier [1] Unsigned32
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecipientProcess {
    /// The subscriber.
    pub recipient: Recipient,
    /// The subscriber's process identifier.
    pub process_identifier: u32,
}

impl ServiceCodec for RecipientProcess {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.recipient.encode(o));
        write_ctx(out, 1, &self.process_identifier);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "recipient")?;
        let recipient = Recipient::decode_from(r)?;
        expect_closing(r, 0, "end of recipient")?;
        let process_identifier = ctx_field(r, 1, "process-identifier")?;
        Ok(RecipientProcess { recipient, process_identifier })
    }
}

/// One entry of Active_COV_Subscriptions.
///
/// ```text
/// BACnetCOVSubscription ::= SEQUENCE {
///     recipient [0] BACnetRecipientProcess,
///     monitoredPropertyReference [1] BACnetObjectPropertyReference,
///     issueConfirmedNotifications [2] BOOLEAN,
///     timeRemaining [3] Unsigned,
///     covIncrement [4] REAL OPTIONAL
/// }
/// ```
///
/// The property's value is a `BACnetLIST of BACnetCOVSubscription`: the
/// entries one after the other, with no tags between them;
/// [`COVSubscription::decode_list`] reads such a value.
#[derive(Debug, Clone, PartialEq)]
pub struct COVSubscription {
    /// The subscriber and its process identifier.
    pub recipient: RecipientProcess,
    /// The monitored object and property (Present_Value for a SubscribeCOV
    /// subscription).
    pub monitored_property: ObjectPropertyReference,
    /// Confirmed (true) or unconfirmed notifications.
    pub issue_confirmed_notifications: bool,
    /// Seconds left (0 = indefinite).
    pub time_remaining: u32,
    /// The subscription's own COV increment, if it gave one.
    pub cov_increment: Option<f32>,
}

impl COVSubscription {
    /// Decode a whole `BACnetLIST of BACnetCOVSubscription` (the value of
    /// Active_COV_Subscriptions without its enclosing tags).
    pub fn decode_list(data: &[u8]) -> Result<Vec<COVSubscription>, DecodeError> {
        let mut r = Reader::new(data);
        // Every entry consumes at least one octet or fails, so the list is
        // bounded by the input.
        let mut list = Vec::new();
        while !r.is_empty() {
            list.push(COVSubscription::decode_from(&mut r)?);
        }
        Ok(list)
    }
}

impl ServiceCodec for COVSubscription {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.recipient.encode(o));
        write_constructed(out, 1, |o| self.monitored_property.encode(o));
        write_ctx(out, 2, &self.issue_confirmed_notifications);
        write_ctx(out, 3, &self.time_remaining);
        write_opt_ctx(out, 4, &self.cov_increment);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "recipient")?;
        let recipient = RecipientProcess::decode_from(r)?;
        expect_closing(r, 0, "end of recipient")?;
        opening_field(r, 1, "monitored-property-reference")?;
        let monitored_property = ObjectPropertyReference::decode_from(r)?;
        expect_closing(r, 1, "end of monitored-property-reference")?;
        let issue_confirmed_notifications = ctx_field(r, 2, "issue-confirmed-notifications")?;
        let time_remaining = ctx_field(r, 3, "time-remaining")?;
        let cov_increment = opt_ctx_field(r, 4, "cov-increment")?;
        Ok(COVSubscription {
            recipient,
            monitored_property,
            issue_confirmed_notifications,
            time_remaining,
            cov_increment,
        })
    }
}

/// One entry of Active_COV_Multiple_Subscriptions (135-2016): one
/// subscriber process's SubscribeCOVPropertyMultiple subscriptions that
/// share their parameters.
///
/// ```text
/// BACnetCOVMultipleSubscription ::= SEQUENCE {
///     recipient [0] BACnetRecipientProcess,
///     issue-confirmed-notifications [1] BOOLEAN,
///     time-remaining [2] Unsigned,
///     max-notification-delay [3] Unsigned,
///     list-of-cov-subscription-specifications [4] SEQUENCE OF SEQUENCE {
///         monitored-object-identifier [0] BACnetObjectIdentifier,
///         list-of-cov-references [1] SEQUENCE OF SEQUENCE {
///             monitored-property [0] BACnetPropertyReference,
///             cov-increment [1] REAL OPTIONAL,
///             timestamped [2] BOOLEAN
///         }
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct COVMultipleSubscription {
    /// The subscriber and its process identifier.
    pub recipient: RecipientProcess,
    /// Confirmed (true) or unconfirmed notifications.
    pub issue_confirmed_notifications: bool,
    /// Seconds left (0 = indefinite).
    pub time_remaining: u32,
    /// The subscriber's maxNotificationDelay, in seconds.
    pub max_notification_delay: u32,
    /// What is monitored, object by object.
    pub specifications: Vec<CovSubscriptionSpecification>,
}

impl COVMultipleSubscription {
    /// Decode a whole `BACnetLIST of BACnetCOVMultipleSubscription` (the
    /// value of Active_COV_Multiple_Subscriptions without its enclosing tags).
    pub fn decode_list(data: &[u8]) -> Result<Vec<COVMultipleSubscription>, DecodeError> {
        let mut r = Reader::new(data);
        let mut list = Vec::new();
        while !r.is_empty() {
            list.push(COVMultipleSubscription::decode_from(&mut r)?);
        }
        Ok(list)
    }
}

impl ServiceCodec for COVMultipleSubscription {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.recipient.encode(o));
        write_ctx(out, 1, &self.issue_confirmed_notifications);
        write_ctx(out, 2, &self.time_remaining);
        write_ctx(out, 3, &self.max_notification_delay);
        write_constructed(out, 4, |o| crate::services::encode_specifications(o, &self.specifications));
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "recipient")?;
        let recipient = RecipientProcess::decode_from(r)?;
        expect_closing(r, 0, "end of recipient")?;
        let issue_confirmed_notifications = ctx_field(r, 1, "issue-confirmed-notifications")?;
        let time_remaining = ctx_field(r, 2, "time-remaining")?;
        let max_notification_delay = ctx_field(r, 3, "max-notification-delay")?;
        let specifications = crate::services::decode_specifications(r, 4)?;
        Ok(COVMultipleSubscription {
            recipient,
            issue_confirmed_notifications,
            time_remaining,
            max_notification_delay,
            specifications,
        })
    }
}
