//! Observed values in, notifications out: the change decision of Clause
//! 13.1 applied to every subscription of an observed object.

use super::change::{increment_from, reports_by_cov_increment, usable_increment, value_changed};
use super::table::{PropertyKey, Subscription, SubscriptionKey, time_remaining};
use super::{CovTable, Notification, bump};
use crate::codec::ObjectIdentifier;
use crate::enums::{ObjectType, PropertyIdentifier};
use crate::services::{PropertyReference, PropertyValue};
use crate::value::AnyValue;
use alloc::vec::Vec;
use core::time::Duration;

const PRESENT_VALUE: PropertyKey = (PropertyIdentifier::PRESENT_VALUE, None);
pub(super) const STATUS_FLAGS: PropertyKey = (PropertyIdentifier::STATUS_FLAGS, None);
const COV_INCREMENT: PropertyKey = (PropertyIdentifier::COV_INCREMENT, None);

/// The values a subscriber was last told.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Snapshot {
    /// The monitored value (Present_Value, or the monitored property).
    value: Option<AnyValue>,
    /// Status_Flags, unless the monitored property is Status_Flags itself.
    status_flags: Option<AnyValue>,
}

impl<A> SubscriptionKey<A> {
    /// True when the increment for this subscription comes from the
    /// object's COV_Increment: SubscribeCOV on a type that
    /// [`reports_by_cov_increment`], or SubscribeCOVProperty on Present_Value
    /// without a covIncrement of its own (Clause 13.15, covIncrement).
    fn uses_object_increment(&self, sub: &Subscription, object_type: ObjectType) -> bool {
        match self.property {
            None => reports_by_cov_increment(object_type),
            Some(p) => p == PRESENT_VALUE && sub.cov_increment.is_none(),
        }
    }
}

impl Subscription {
    /// The minimum change of a numeric monitored value that is reported;
    /// `None` reports any change.
    fn increment<A>(&self, key: &SubscriptionKey<A>, object_type: ObjectType, object: Option<f64>) -> Option<f64> {
        match self.cov_increment {
            Some(own) => usable_increment(f64::from(own)),
            None if key.uses_object_increment(self, object_type) => object,
            None => None,
        }
    }
}

impl<A: Ord + Clone> CovTable<A> {
    /// The properties of `object` that [`CovTable::observe`] needs: every
    /// monitored property, Status_Flags, and COV_Increment when some
    /// subscription's increment comes from the object. Empty when nothing
    /// monitors the object.
    pub fn properties_to_read(&self, object: ObjectIdentifier) -> Vec<PropertyReference> {
        let Some(m) = self.objects.get(&object) else { return Vec::new() };
        let mut wanted = m.needed();
        if m.subscriptions.iter().any(|(key, sub)| key.uses_object_increment(sub, object.object_type)) {
            wanted.insert(COV_INCREMENT);
        }
        wanted.into_iter().map(|(property, array_index)| PropertyReference { property, array_index }).collect()
    }

    /// Feed the current values of some of `object`'s properties, typically
    /// those [`CovTable::properties_to_read`] lists; a property left out
    /// keeps the value last observed, and properties no subscription needs
    /// are ignored. An entry for COV_Increment sets the object's increment
    /// (a value that is not a number ≥ 0 means none). When a property
    /// appears twice, the last entry counts.
    ///
    /// Queues a notification for every subscription to `object` whose
    /// initial notification is due, whose monitored value changed enough
    /// since its last notification, or whose Status_Flags changed. A
    /// subscription notifies only once its monitored value has been
    /// observed. Returns how many notifications were queued.
    pub fn observe(&mut self, now: Duration, object: ObjectIdentifier, values: &[PropertyValue]) -> usize {
        self.expire(now);
        let CovTable { objects, notifications, counters, .. } = self;
        let Some(m) = objects.get_mut(&object) else { return 0 };
        let needed = m.needed();
        for v in values {
            let key = (v.property, v.array_index);
            if key == COV_INCREMENT {
                m.increment = increment_from(&v.value);
            }
            if needed.contains(&key) {
                m.observed.insert(key, v.value.clone());
            }
        }
        let mut queued = 0;
        for (key, sub) in m.subscriptions.iter_mut() {
            let monitored = key.monitored();
            let Some(value) = m.observed.get(&monitored) else { continue };
            let flags = if monitored == STATUS_FLAGS || key.multiple { None } else { m.observed.get(&STATUS_FLAGS) };
            let increment = sub.increment(key, object.object_type, m.increment);
            let due = sub.initial_due
                || value_changed(sub.notified.value.as_ref(), value, increment)
                || (flags.is_some() && flags != sub.notified.status_flags.as_ref());
            if !due {
                continue;
            }
            let mut reported = Vec::with_capacity(2);
            reported.push(PropertyValue {
                property: monitored.0,
                array_index: monitored.1,
                value: value.clone(),
                priority: None,
            });
            if let Some(f) = flags {
                reported.push(PropertyValue {
                    property: PropertyIdentifier::STATUS_FLAGS,
                    array_index: None,
                    value: f.clone(),
                    priority: None,
                });
            }
            sub.notified = Snapshot { value: Some(value.clone()), status_flags: flags.cloned() };
            let initial = core::mem::replace(&mut sub.initial_due, false);
            notifications.push_back(Notification {
                subscriber: key.subscriber.clone(),
                subscriber_process_identifier: key.process_identifier,
                confirmed: sub.confirmed,
                monitored_object: object,
                time_remaining: time_remaining(sub.expires, now),
                values: reported,
                multiple: key.multiple,
                timestamped: sub.timestamped,
                initial,
            });
            bump(&mut counters.notifications);
            queued += 1;
        }
        queued
    }

    /// The next notification to send.
    pub fn poll_notification(&mut self) -> Option<Notification<A>> {
        self.notifications.pop_front()
    }
}
