//! ConfirmedCOVNotificationMultiple (Clause 13.17) and
//! UnconfirmedCOVNotificationMultiple (Clause 13.18), 135-2016: the changes
//! of a SubscribeCOVPropertyMultiple subscription, several objects at once.

use super::ServiceCodec;
use super::common::{ctx_field, opening_field, opt_ctx_field};
use super::time_synchronization::{read_date_time, write_date_time};
use crate::codec::{
    Date, ObjectIdentifier, Reader, Time, expect_closing, expect_opening, next_is_closing, next_is_opening,
    write_constructed, write_ctx, write_opt_ctx,
};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;

/// The body of a COV notification multiple; the Confirmed and Unconfirmed
/// services share it.
///
/// ```text
/// ConfirmedCOVNotificationMultiple-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     initiatingDeviceIdentifier [1] BACnetObjectIdentifier,
///     timeRemaining [2] Unsigned,
///     timestamp [3] BACnetDateTime OPTIONAL,
///     listOfCovNotifications [4] SEQUENCE OF SEQUENCE {
///         monitoredObjectIdentifier [0] BACnetObjectIdentifier,
///         listOfValues [1] SEQUENCE OF SEQUENCE {
///             propertyIdentifier [0] BACnetPropertyIdentifier,
///             propertyArrayIndex [1] Unsigned OPTIONAL,
///             propertyValue [2] ABSTRACT-SYNTAX.&Type,
///             timeOfChange [3] Time OPTIONAL
///         }
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct COVNotificationMultiple {
    /// The subscriber's handle from its request.
    pub subscriber_process_identifier: u32,
    /// The Device object of the notifying device.
    pub initiating_device: ObjectIdentifier,
    /// Seconds left in the subscription (0 = indefinite).
    pub time_remaining: u32,
    /// The date and time the notification was built, if the device says.
    pub timestamp: Option<(Date, Time)>,
    /// The changed values, object by object.
    pub notifications: Vec<CovObjectValues>,
}

/// The changed values of one object.
#[derive(Debug, Clone, PartialEq)]
pub struct CovObjectValues {
    /// The object.
    pub object: ObjectIdentifier,
    /// Its changed properties.
    pub values: Vec<CovValue>,
}

/// One changed property.
#[derive(Debug, Clone, PartialEq)]
pub struct CovValue {
    /// The property.
    pub property: PropertyIdentifier,
    /// The array element, or the whole property.
    pub array_index: Option<u32>,
    /// The new value.
    pub value: AnyValue,
    /// When it changed, for a timestamped reference.
    pub time_of_change: Option<Time>,
}

impl ServiceCodec for COVNotificationMultiple {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.subscriber_process_identifier);
        write_ctx(out, 1, &self.initiating_device);
        write_ctx(out, 2, &self.time_remaining);
        if let Some((d, t)) = &self.timestamp {
            write_constructed(out, 3, |o| write_date_time(o, d, t));
        }
        write_constructed(out, 4, |o| {
            for n in &self.notifications {
                write_ctx(o, 0, &n.object);
                write_constructed(o, 1, |o| {
                    for v in &n.values {
                        write_ctx(o, 0, &v.property);
                        write_opt_ctx(o, 1, &v.array_index);
                        write_constructed(o, 2, |o| v.value.encode(o));
                        write_opt_ctx(o, 3, &v.time_of_change);
                    }
                });
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let subscriber_process_identifier = ctx_field(r, 0, "subscriber-process-identifier")?;
        let initiating_device = ctx_field(r, 1, "initiating-device-identifier")?;
        let time_remaining = ctx_field(r, 2, "time-remaining")?;
        let timestamp = if next_is_opening(r, 3) {
            opening_field(r, 3, "timestamp")?;
            let dt = read_date_time(r, "timestamp date", "timestamp time")?;
            expect_closing(r, 3, "end of timestamp")?;
            Some(dt)
        } else {
            None
        };
        opening_field(r, 4, "list-of-cov-notifications")?;
        // Each entry consumes at least one octet or fails.
        let mut notifications = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 4) {
            let object = ctx_field(r, 0, "monitored-object-identifier")?;
            opening_field(r, 1, "list-of-values")?;
            let mut values = Vec::new();
            while !r.is_empty() && !next_is_closing(r, 1) {
                let property = ctx_field(r, 0, "property-identifier")?;
                let array_index = opt_ctx_field(r, 1, "property-array-index")?;
                expect_opening(r, 2, "property-value")?;
                let value = AnyValue::decode(r)?;
                expect_closing(r, 2, "end of property-value")?;
                let time_of_change = opt_ctx_field(r, 3, "time-of-change")?;
                values.push(CovValue { property, array_index, value, time_of_change });
            }
            expect_closing(r, 1, "end of list-of-values")?;
            notifications.push(CovObjectValues { object, values });
        }
        expect_closing(r, 4, "end of list-of-cov-notifications")?;
        Ok(COVNotificationMultiple {
            subscriber_process_identifier,
            initiating_device,
            time_remaining,
            timestamp,
            notifications,
        })
    }
}
