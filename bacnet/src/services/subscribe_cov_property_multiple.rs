//! SubscribeCOVPropertyMultiple (Clause 13.16, 135-2016): one subscription
//! to several properties of several objects, notified together in
//! COVNotificationMultiple.

use super::ServiceCodec;
use super::common::{PropertyReference, ctx_field, opening_field, opt_ctx_field};
use super::error::BacnetError;
use crate::codec::{
    ObjectIdentifier, Reader, expect_closing, next_is_closing, write_constructed, write_ctx, write_opt_ctx,
};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A SubscribeCOVPropertyMultiple request.
///
/// ```text
/// SubscribeCOVPropertyMultiple-Request ::= SEQUENCE {
///     subscriberProcessIdentifier [0] Unsigned32,
///     issueConfirmedNotifications [1] BOOLEAN OPTIONAL,
///     lifetime [2] Unsigned OPTIONAL,
///     maxNotificationDelay [3] Unsigned OPTIONAL,
///     listOfCovSubscriptionSpecifications [4] SEQUENCE OF SEQUENCE {
///         monitoredObjectIdentifier [0] BACnetObjectIdentifier,
///         listOfCovReferences [1] SEQUENCE OF SEQUENCE {
///             monitoredProperty [0] BACnetPropertyReference,
///             covIncrement [1] REAL OPTIONAL,
///             timestamped [2] BOOLEAN
///         }
///     }
/// }
/// ```
///
/// Both `issue_confirmed_notifications` and `lifetime` absent cancel the
/// listed references (Clause 13.16.1.2); `max_notification_delay` (seconds)
/// lets the device gather changes into one notification.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscribeCOVPropertyMultipleRequest {
    /// A handle meaningful to the subscriber.
    pub subscriber_process_identifier: u32,
    /// `true` for confirmed notifications; absent for a cancellation.
    pub issue_confirmed_notifications: Option<bool>,
    /// Seconds until the subscription lapses (0 = indefinite).
    pub lifetime: Option<u32>,
    /// The longest the device may hold a change to report it with others.
    pub max_notification_delay: Option<u32>,
    /// What is monitored, object by object.
    pub specifications: Vec<CovSubscriptionSpecification>,
}

impl SubscribeCOVPropertyMultipleRequest {
    /// True when both `issue_confirmed_notifications` and `lifetime` are
    /// absent: a cancellation.
    pub fn is_cancellation(&self) -> bool {
        self.issue_confirmed_notifications.is_none() && self.lifetime.is_none()
    }
}

/// The properties monitored on one object.
#[derive(Debug, Clone, PartialEq)]
pub struct CovSubscriptionSpecification {
    /// The object.
    pub object: ObjectIdentifier,
    /// Its monitored properties.
    pub references: Vec<CovReference>,
}

/// One monitored property.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CovReference {
    /// The property (and optionally the array element).
    pub property: PropertyReference,
    /// The minimum change that is reported, for a REAL property.
    pub cov_increment: Option<f32>,
    /// Whether each value carries the time of its change.
    pub timestamped: bool,
}

impl ServiceCodec for SubscribeCOVPropertyMultipleRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.subscriber_process_identifier);
        write_opt_ctx(out, 1, &self.issue_confirmed_notifications);
        write_opt_ctx(out, 2, &self.lifetime);
        write_opt_ctx(out, 3, &self.max_notification_delay);
        write_constructed(out, 4, |o| encode_specifications(o, &self.specifications));
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let subscriber_process_identifier = ctx_field(r, 0, "subscriber-process-identifier")?;
        let issue_confirmed_notifications = opt_ctx_field(r, 1, "issue-confirmed-notifications")?;
        let lifetime = opt_ctx_field(r, 2, "lifetime")?;
        let max_notification_delay = opt_ctx_field(r, 3, "max-notification-delay")?;
        if lifetime.is_some() && issue_confirmed_notifications.is_none() {
            return Err(DecodeError::Inconsistent {
                at: r.position(),
                what: "a lifetime without issue-confirmed-notifications",
            });
        }
        let specifications = decode_specifications(r, 4)?;
        Ok(SubscribeCOVPropertyMultipleRequest {
            subscriber_process_identifier,
            issue_confirmed_notifications,
            lifetime,
            max_notification_delay,
            specifications,
        })
    }
}

/// The contents of `listOfCovSubscriptionSpecifications` (shared with
/// Active_COV_Multiple_Subscriptions' `BACnetCOVMultipleSubscription`).
pub(crate) fn encode_specifications(out: &mut Vec<u8>, specifications: &[CovSubscriptionSpecification]) {
    for spec in specifications {
        write_ctx(out, 0, &spec.object);
        write_constructed(out, 1, |o| {
            for reference in &spec.references {
                write_constructed(o, 0, |o| reference.property.encode(o));
                write_opt_ctx(o, 1, &reference.cov_increment);
                write_ctx(o, 2, &reference.timestamped);
            }
        });
    }
}

/// `listOfCovSubscriptionSpecifications` under context tag `tag`, with its
/// opening and closing tags.
pub(crate) fn decode_specifications(
    r: &mut Reader<'_>,
    tag: u8,
) -> Result<Vec<CovSubscriptionSpecification>, DecodeError> {
    opening_field(r, tag, "list-of-cov-subscription-specifications")?;
    // Each specification and reference consumes at least one octet or
    // fails, so the lists are bounded by the input.
    let mut specifications = Vec::new();
    while !r.is_empty() && !next_is_closing(r, tag) {
        let object = ctx_field(r, 0, "monitored-object-identifier")?;
        opening_field(r, 1, "list-of-cov-references")?;
        let mut references = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 1) {
            opening_field(r, 0, "monitored-property")?;
            let property = PropertyReference::decode_from(r)?;
            expect_closing(r, 0, "end of monitored-property")?;
            let cov_increment = opt_ctx_field(r, 1, "cov-increment")?;
            let timestamped = ctx_field(r, 2, "timestamped")?;
            references.push(CovReference { property, cov_increment, timestamped });
        }
        expect_closing(r, 1, "end of list-of-cov-references")?;
        specifications.push(CovSubscriptionSpecification { object, references });
    }
    expect_closing(r, tag, "end of list-of-cov-subscription-specifications")?;
    Ok(specifications)
}

/// The Error answer to a refused SubscribeCOVPropertyMultiple.
///
/// ```text
/// SubscribeCOVPropertyMultiple-Error ::= SEQUENCE {
///     error-type [0] Error,
///     first-failed-subscription [1] SEQUENCE {
///         monitoredObjectIdentifier [0] BACnetObjectIdentifier,
///         monitoredPropertyReference [1] BACnetPropertyReference,
///         errorType [2] Error
///     }
/// }
/// ```
///
/// Nothing was subscribed: the service is all or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscribeCOVPropertyMultipleError {
    /// Why the request failed.
    pub error: BacnetError,
    /// The reference that failed.
    pub first_failed_object: ObjectIdentifier,
    /// Its property.
    pub first_failed_property: PropertyReference,
    /// Why that reference failed.
    pub first_failed_error: BacnetError,
}

impl ServiceCodec for SubscribeCOVPropertyMultipleError {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.error.encode(o));
        write_constructed(out, 1, |o| {
            write_ctx(o, 0, &self.first_failed_object);
            write_constructed(o, 1, |o| self.first_failed_property.encode(o));
            write_constructed(o, 2, |o| self.first_failed_error.encode(o));
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "error-type")?;
        let error = BacnetError::decode_from(r)?;
        expect_closing(r, 0, "end of error-type")?;
        opening_field(r, 1, "first-failed-subscription")?;
        let first_failed_object = ctx_field(r, 0, "monitored-object-identifier")?;
        opening_field(r, 1, "monitored-property-reference")?;
        let first_failed_property = PropertyReference::decode_from(r)?;
        expect_closing(r, 1, "end of monitored-property-reference")?;
        opening_field(r, 2, "error-type")?;
        let first_failed_error = BacnetError::decode_from(r)?;
        expect_closing(r, 2, "end of error-type")?;
        expect_closing(r, 1, "end of first-failed-subscription")?;
        Ok(SubscribeCOVPropertyMultipleError { error, first_failed_object, first_failed_property, first_failed_error })
    }
}
