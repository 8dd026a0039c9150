//! ConfirmedCOVNotification (Clause 13.7) and UnconfirmedCOVNotification
//! (Clause 13.6): a COV server reports changed values to a subscriber.

use super::ServiceCodec;
use super::common::{PropertyValue, ctx_field, opening_field};
use crate::codec::{ObjectIdentifier, Reader, expect_closing, next_is_closing, write_constructed, write_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// The body of a COV notification; the Confirmed and Unconfirmed services
/// share it, and the APDU's service choice tells them apart.
///
/// ```text
/// ConfirmedCOVNotification-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     initiatingDeviceIdentifier [1] BACnetObjectIdentifier,
///     monitoredObjectIdentifier [2] BACnetObjectIdentifier,
///     timeRemaining [3] Unsigned,
///     listOfValues [4] SEQUENCE OF BACnetPropertyValue
/// }
///
/// UnconfirmedCOVNotification-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     initiatingDeviceIdentifier [1] BACnetObjectIdentifier,
///     monitoredObjectIdentifier [2] BACnetObjectIdentifier,
///     timeRemaining [3] Unsigned,
///     listOfValues [4] SEQUENCE OF BACnetPropertyValue
/// }
/// ```
///
/// A subscriber process identifier of 0 in an unconfirmed notification means
/// "no subscription" (a device broadcasting its changes unasked).
/// `values` (listOfValues) may be empty on the wire; the decoder accepts it.
#[derive(Debug, Clone, PartialEq)]
pub struct COVNotification {
    /// The subscriber's handle from its SubscribeCOV request.
    pub subscriber_process_identifier: u32,
    /// The Device object of the notifying device.
    pub initiating_device: ObjectIdentifier,
    /// The object whose values changed.
    pub monitored_object: ObjectIdentifier,
    /// Seconds left in the subscription (0 = indefinite).
    pub time_remaining: u32,
    /// The reported values (typically Present_Value and Status_Flags).
    pub values: Vec<PropertyValue>,
}

impl ServiceCodec for COVNotification {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.subscriber_process_identifier);
        write_ctx(out, 1, &self.initiating_device);
        write_ctx(out, 2, &self.monitored_object);
        write_ctx(out, 3, &self.time_remaining);
        write_constructed(out, 4, |o| {
            for v in &self.values {
                v.encode(o);
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let subscriber_process_identifier = ctx_field(r, 0, "subscriber-process-identifier")?;
        let initiating_device = ctx_field(r, 1, "initiating-device-identifier")?;
        let monitored_object = ctx_field(r, 2, "monitored-object-identifier")?;
        let time_remaining = ctx_field(r, 3, "time-remaining")?;
        opening_field(r, 4, "list-of-values")?;
        // Every value consumes at least one octet or fails, so the list is
        // bounded by the input.
        let mut values = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 4) {
            values.push(PropertyValue::decode_from(r)?);
        }
        expect_closing(r, 4, "end of list-of-values")?;
        Ok(COVNotification {
            subscriber_process_identifier,
            initiating_device,
            monitored_object,
            time_remaining,
            values,
        })
    }
}
