//! SubscribeCOVProperty (Clause 13.15): subscribe to, renew or cancel
//! change-of-value notifications for one property of one object.

use super::ServiceCodec;
use super::common::{PropertyReference, ctx_field, opening_field, opt_ctx_field};
use super::subscribe_cov::read_subscription_options;
use crate::codec::{ObjectIdentifier, Reader, expect_closing, write_constructed, write_ctx, write_opt_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A SubscribeCOVProperty request.
///
/// ```text
/// SubscribeCOVProperty-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     monitoredObjectIdentifier [1] BACnetObjectIdentifier,
///     issueConfirmedNotifications [2] BOOLEAN OPTIONAL,
///     lifetime [3] Unsigned OPTIONAL,
///     monitoredPropertyIdentifier [4] BACnetPropertyReference,
///     covIncrement [5] REAL OPTIONAL
/// }
/// ```
///
/// `issue_confirmed_notifications` and `lifetime` follow the same rules as in
/// [`SubscribeCOVRequest`](super::SubscribeCOVRequest): both absent is a
/// cancellation, a lifetime without issue-confirmed is `Inconsistent`
/// (inconsistent-parameters). `cov_increment` overrides the object's
/// COV_Increment for this subscription and only matters for numeric
/// properties.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubscribeCOVPropertyRequest {
    /// A handle meaningful to the subscriber.
    pub subscriber_process_identifier: u32,
    /// The object holding the monitored property.
    pub monitored_object: ObjectIdentifier,
    /// `true` for confirmed notifications; absent for a cancellation.
    pub issue_confirmed_notifications: Option<bool>,
    /// Seconds until the subscription lapses (0 = indefinite).
    pub lifetime: Option<u32>,
    /// The property (and optionally the array element) monitored.
    pub monitored_property: PropertyReference,
    /// The minimum change that triggers a notification.
    pub cov_increment: Option<f32>,
}

impl SubscribeCOVPropertyRequest {
    /// True when both `issue_confirmed_notifications` and `lifetime` are
    /// absent: a cancellation.
    pub fn is_cancellation(&self) -> bool {
        self.issue_confirmed_notifications.is_none() && self.lifetime.is_none()
    }
}

impl ServiceCodec for SubscribeCOVPropertyRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.subscriber_process_identifier);
        write_ctx(out, 1, &self.monitored_object);
        write_opt_ctx(out, 2, &self.issue_confirmed_notifications);
        write_opt_ctx(out, 3, &self.lifetime);
        write_constructed(out, 4, |o| self.monitored_property.encode(o));
        write_opt_ctx(out, 5, &self.cov_increment);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let subscriber_process_identifier = ctx_field(r, 0, "subscriber-process-identifier")?;
        let monitored_object = ctx_field(r, 1, "monitored-object-identifier")?;
        let (issue_confirmed_notifications, lifetime) = read_subscription_options(r)?;
        opening_field(r, 4, "monitored-property-identifier")?;
        let monitored_property = PropertyReference::decode_from(r)?;
        expect_closing(r, 4, "end of monitored-property-identifier")?;
        let cov_increment = opt_ctx_field(r, 5, "cov-increment")?;
        Ok(SubscribeCOVPropertyRequest {
            subscriber_process_identifier,
            monitored_object,
            issue_confirmed_notifications,
            lifetime,
            monitored_property,
            cov_increment,
        })
    }
}
