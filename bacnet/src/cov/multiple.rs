//! SubscribeCOVPropertyMultiple (Clause 13.16, 135-2016) on the
//! [`CovTable`]: one request, many (object, property) references, each kept
//! as a subscription of its own (keyed apart from SubscribeCOVProperty's)
//! so the change decision, lifetimes and Active_COV_Subscriptions work as
//! for the other services.
//!
//! What is decided here:
//! - All or nothing: every reference is checked (its [`Target`], its
//!   covIncrement) and room is made sure of for all the new ones before
//!   any is added; a refusal names the first reference that failed, or
//!   none when the request as a whole was refused (its lifetime, the
//!   limits).
//! - A reference listed twice counts once (the later one's parameters).
//! - A cancellation removes the listed references of this subscriber
//!   process; one with no references removes all of that process's
//!   COV-multiple subscriptions (the "whole context" of Clause 13.16.1).
//! - `maxNotificationDelay` is accepted and not used to hold changes back:
//!   notifications go out as soon as the driver drains them, which is
//!   within any delay a subscriber gives.

use super::table::{Request, SubscriptionKey};
use super::{CovTable, Refusal, Subscribed, Target, check_increment};
use crate::codec::ObjectIdentifier;
use crate::services::{PropertyReference, SubscribeCOVPropertyMultipleRequest};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::time::Duration;

/// Why a SubscribeCOVPropertyMultiple request was refused: the error and,
/// when one reference caused it, that reference (the
/// `first-failed-subscription` of SubscribeCOVPropertyMultiple-Error).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultipleRefusal {
    /// The refusal.
    pub refusal: Refusal,
    /// The reference that failed, in request order.
    pub first_failed: Option<(ObjectIdentifier, PropertyReference)>,
}

impl<A: Ord + Clone> CovTable<A> {
    /// Handle a SubscribeCOVPropertyMultiple request from `subscriber`:
    /// subscribe to, renew or cancel every reference it lists. `targets`
    /// holds what the host found for each reference, in the request's
    /// order (object by object, reference by reference); a missing entry
    /// counts as an unknown object.
    pub fn subscribe_cov_property_multiple(
        &mut self,
        now: Duration,
        subscriber: A,
        request: &SubscribeCOVPropertyMultipleRequest,
        targets: &[Target],
    ) -> Result<Subscribed, MultipleRefusal> {
        self.expire(now);
        let result = self.try_multiple(now, subscriber, request, targets);
        self.count(result.as_ref().copied().map_err(|r| r.refusal));
        result
    }

    fn try_multiple(
        &mut self,
        now: Duration,
        subscriber: A,
        request: &SubscribeCOVPropertyMultipleRequest,
        targets: &[Target],
    ) -> Result<Subscribed, MultipleRefusal> {
        let whole = |refusal| MultipleRefusal { refusal, first_failed: None };
        // Every reference with its target, in order; a repeated reference
        // keeps its later parameters.
        let mut references = BTreeMap::new();
        let mut order = 0usize;
        for spec in &request.specifications {
            for reference in &spec.references {
                let target = targets.get(order).copied().unwrap_or(Target::UnknownObject);
                order += 1;
                let failed =
                    |refusal| MultipleRefusal { refusal, first_failed: Some((spec.object, reference.property)) };
                target.verdict().map_err(failed)?;
                let p = reference.property;
                let key = SubscriptionKey {
                    subscriber: subscriber.clone(),
                    process_identifier: request.subscriber_process_identifier,
                    property: Some((p.property, p.array_index)),
                    multiple: true,
                };
                if request.issue_confirmed_notifications.is_some() {
                    check_increment(reference.cov_increment).map_err(failed)?;
                }
                references.insert((spec.object, key), (reference.cov_increment, reference.timestamped));
            }
        }
        let Some(confirmed) = request.issue_confirmed_notifications else {
            if request.lifetime.is_some() {
                return Err(whole(Refusal::InconsistentParameters));
            }
            let keys: Vec<_> = if request.specifications.is_empty() {
                self.multiple_of(&subscriber, request.subscriber_process_identifier)
            } else {
                references.into_keys().collect()
            };
            let mut removed = false;
            for (object, key) in keys {
                removed |= self.remove(object, &key);
            }
            return Ok(if removed { Subscribed::Cancelled } else { Subscribed::NothingToCancel });
        };
        let expires = self.expiry(now, request.lifetime).map_err(whole)?;
        let new = references
            .keys()
            .filter(|(object, key)| !self.objects.get(object).is_some_and(|m| m.subscriptions.contains_key(key)))
            .count();
        self.room_for(&subscriber, new).map_err(whole)?;
        for ((object, key), (cov_increment, timestamped)) in references {
            let request = Request {
                process_identifier: key.process_identifier,
                object,
                confirmed: Some(confirmed),
                lifetime: request.lifetime,
                property: key.property,
                cov_increment,
                multiple: true,
                timestamped,
                max_notification_delay: request.max_notification_delay.unwrap_or(0),
            };
            if !self.renew(&request, &key, confirmed, expires) {
                self.insert(request, key, confirmed, expires);
            }
        }
        Ok(if new > 0 { Subscribed::Created } else { Subscribed::Renewed })
    }

    /// Every COV-multiple subscription of one subscriber process.
    fn multiple_of(&self, subscriber: &A, process: u32) -> Vec<(ObjectIdentifier, SubscriptionKey<A>)> {
        self.objects
            .iter()
            .flat_map(|(object, m)| m.subscriptions.keys().map(move |k| (*object, k)))
            .filter(|(_, k)| k.multiple && k.subscriber == *subscriber && k.process_identifier == process)
            .map(|(o, k)| (o, k.clone()))
            .collect()
    }
}
