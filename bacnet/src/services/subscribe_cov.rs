//! SubscribeCOV (Clause 13.14): subscribe to, renew or cancel change-of-value
//! notifications for one object.

use super::ServiceCodec;
use super::common::{ctx_field, opt_ctx_field};
use crate::codec::{ObjectIdentifier, Reader, write_ctx, write_opt_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A SubscribeCOV request.
///
/// ```text
/// SubscribeCOV-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     monitoredObjectIdentifier [1] BACnetObjectIdentifier,
///     issueConfirmedNotifications [2] BOOLEAN OPTIONAL,
///     lifetime [3] Unsigned OPTIONAL
/// }
/// ```
///
/// The two optional parameters select what the request means (Clause
/// 13.14.1.3–13.14.1.4):
///
/// | issue-confirmed | lifetime | meaning |
/// |---|---|---|
/// | absent | absent | cancellation of the subscription |
/// | present | absent | subscription with an indefinite lifetime |
/// | present | present | subscription for `lifetime` seconds (0 = indefinite) |
/// | absent | present | not allowed: a lifetime requires issue-confirmed |
///
/// Decoding refuses the last combination with `Inconsistent`
/// (inconsistent-parameters). `encode` writes what it is given; build
/// cancellations with [`SubscribeCOVRequest::cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscribeCOVRequest {
    /// A handle meaningful to the subscriber; it comes back in every
    /// notification and identifies the subscription with the monitored object.
    pub subscriber_process_identifier: u32,
    /// The object whose changes are reported.
    pub monitored_object: ObjectIdentifier,
    /// `true` for ConfirmedCOVNotifications, `false` for unconfirmed ones;
    /// absent (with `lifetime`) for a cancellation.
    pub issue_confirmed_notifications: Option<bool>,
    /// Seconds until the subscription lapses (0 = indefinite).
    pub lifetime: Option<u32>,
}

impl SubscribeCOVRequest {
    /// A request cancelling the subscription of this process for this object.
    pub fn cancel(subscriber_process_identifier: u32, monitored_object: ObjectIdentifier) -> Self {
        SubscribeCOVRequest {
            subscriber_process_identifier,
            monitored_object,
            issue_confirmed_notifications: None,
            lifetime: None,
        }
    }

    /// True when both optional parameters are absent: a cancellation.
    pub fn is_cancellation(&self) -> bool {
        self.issue_confirmed_notifications.is_none() && self.lifetime.is_none()
    }
}

impl ServiceCodec for SubscribeCOVRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.subscriber_process_identifier);
        write_ctx(out, 1, &self.monitored_object);
        write_opt_ctx(out, 2, &self.issue_confirmed_notifications);
        write_opt_ctx(out, 3, &self.lifetime);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let subscriber_process_identifier = ctx_field(r, 0, "subscriber-process-identifier")?;
        let monitored_object = ctx_field(r, 1, "monitored-object-identifier")?;
        let (issue_confirmed_notifications, lifetime) = read_subscription_options(r)?;
        Ok(SubscribeCOVRequest {
            subscriber_process_identifier,
            monitored_object,
            issue_confirmed_notifications,
            lifetime,
        })
    }
}

/// Read `issueConfirmedNotifications [2]` and `lifetime [3]`, shared with
/// SubscribeCOVProperty; a lifetime without issue-confirmed is `Inconsistent`.
pub(crate) fn read_subscription_options(r: &mut Reader<'_>) -> Result<(Option<bool>, Option<u32>), DecodeError> {
    let confirmed = opt_ctx_field(r, 2, "issue-confirmed-notifications")?;
    let lifetime_at = r.position();
    let lifetime = opt_ctx_field(r, 3, "lifetime")?;
    if lifetime.is_some() && confirmed.is_none() {
        return Err(DecodeError::Inconsistent {
            at: lifetime_at,
            what: "lifetime present without issue-confirmed-notifications",
        });
    }
    Ok((confirmed, lifetime))
}
