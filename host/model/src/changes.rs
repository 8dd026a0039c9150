//! Change notifications from a model (`host.values-changed`,
//! `host.objects-changed`) on their way to the server's COV machinery, and
//! its event transitions (`host.event-transitions`) on their way to the
//! alarm notifier.
//!
//! Event transitions are queued, not coalesced: each is one notification.
//! At most [`MAX_PENDING_EVENTS`] wait; past that the newest are dropped
//! and counted ([`ChangeFeed::events_dropped`]), never the producer blocked.
//!
//! A feed coalesces rather than queues: it holds the *set* of objects whose
//! values changed since the consumer last took them, so a plugin reporting
//! the same object every tick costs nothing extra and memory stays bounded
//! by [`MAX_PENDING`] objects. Past that bound the feed degrades to "every
//! value may have changed" instead of dropping anything.
//!
//! The producer side (a plugin's host import, on its device's thread) must never block or wait for
//! the consumer; the consumer side never touches a plugin.

use bacnet::ObjectIdentifier;
use bacnet::enums::{EventState, EventType, NotifyType};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// Distinct objects remembered before the feed reports `all_values`.
pub const MAX_PENDING: usize = 65_536;

/// Event transitions waiting for the notifier before new ones are dropped.
pub const MAX_PENDING_EVENTS: usize = 4096;

/// A change of an object's Event_State that its model found (intrinsic
/// reporting) and that is to be notified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTransition {
    /// The object.
    pub object: ObjectIdentifier,
    /// The notification's event type (change-of-reliability for a
    /// transition to or from FAULT).
    pub event_type: EventType,
    /// The state left.
    pub from: EventState,
    /// The state entered.
    pub to: EventState,
    /// Alarm or event.
    pub notify_type: NotifyType,
    /// The Notification Class whose recipients are told.
    pub notification_class: u32,
    /// The configured message text, if any.
    pub message_text: Option<String>,
    /// When it took effect.
    pub time: crate::DateTime,
    /// BACnetNotificationParameters, encoded (checked by the consumer).
    pub event_values: Vec<u8>,
    /// Whether it waits for an AcknowledgeAlarm (the class's Ack_Required
    /// when it was reported).
    pub ack_required: bool,
}

/// Whether a transition into `to` of class `class` waits for an
/// acknowledgment: the server's Notification Classes answer it.
pub type AckRequired = std::sync::Arc<dyn Fn(u32, EventState) -> bool + Send + Sync>;

/// What changed since the last [`ChangeFeed::take`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Objects whose present value or status changed, in identifier order.
    pub values: Vec<ObjectIdentifier>,
    /// Too many to list: treat every object's values as changed.
    pub all_values: bool,
    /// Objects were created or deleted: read the object list again.
    pub objects: bool,
    /// Event transitions to notify, in the order they were reported.
    pub events: Vec<EventTransition>,
}

impl Changes {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && !self.all_values && !self.objects && self.events.is_empty()
    }
}

/// One model's change feed (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct ChangeFeed {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    pending: Mutex<Pending>,
    notify: Notify,
    ack_required: Mutex<Option<AckRequired>>,
    events_dropped: AtomicU64,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("pending", &self.pending)
            .field("events_dropped", &self.events_dropped)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Pending {
    values: BTreeSet<ObjectIdentifier>,
    all_values: bool,
    objects: bool,
    events: Vec<EventTransition>,
}

impl ChangeFeed {
    /// An empty feed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `other` is this very feed (a clone of it), not merely
    /// another one.
    pub fn same_as(&self, other: &ChangeFeed) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Record that these objects' values changed (producer side).
    pub fn values_changed(&self, objects: impl IntoIterator<Item = ObjectIdentifier>) {
        let mut any = false;
        {
            let mut p = self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for o in objects {
                any = true;
                if p.all_values {
                    break;
                }
                if p.values.len() >= MAX_PENDING && !p.values.contains(&o) {
                    p.values.clear();
                    p.all_values = true;
                    break;
                }
                p.values.insert(o);
            }
        }
        if any {
            self.inner.notify.notify_one();
        }
    }

    /// Record that objects were created or deleted (producer side).
    pub fn objects_changed(&self) {
        self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner).objects = true;
        self.inner.notify.notify_one();
    }

    /// Install who answers whether a transition waits for an
    /// acknowledgment (the server's Notification Classes). Without one,
    /// none does.
    pub fn set_ack_required(&self, policy: AckRequired) {
        *self.inner.ack_required.lock().unwrap_or_else(PoisonError::into_inner) = Some(policy);
    }

    /// Whether a transition into `to` of class `class` waits for an
    /// acknowledgment, by the installed policy.
    pub fn ack_required(&self, class: u32, to: EventState) -> bool {
        let policy = self.inner.ack_required.lock().unwrap_or_else(PoisonError::into_inner).clone();
        policy.is_some_and(|p| p(class, to))
    }

    /// Queue event transitions for the notifier (producer side); past
    /// [`MAX_PENDING_EVENTS`] waiting, the rest are dropped and counted.
    /// Returns how many were queued: the first ones, in order.
    pub fn events(&self, transitions: impl IntoIterator<Item = EventTransition>) -> usize {
        let mut any = false;
        let mut queued = 0;
        {
            let mut p = self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for t in transitions {
                if p.events.len() >= MAX_PENDING_EVENTS {
                    self.inner.events_dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                p.events.push(t);
                queued += 1;
                any = true;
            }
        }
        if any {
            self.inner.notify.notify_one();
        }
        queued
    }

    /// Event transitions dropped because too many were waiting.
    pub fn events_dropped(&self) -> u64 {
        self.inner.events_dropped.load(Ordering::Relaxed)
    }

    /// Take everything pending, leaving the feed empty.
    pub fn take(&self) -> Changes {
        let mut p = self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let p = std::mem::take(&mut *p);
        Changes {
            values: p.values.into_iter().collect(),
            all_values: p.all_values,
            objects: p.objects,
            events: p.events,
        }
    }

    /// Wait until something is pending, then take it (single consumer).
    pub async fn next(&self) -> Changes {
        loop {
            let c = self.take();
            if !c.is_empty() {
                return c;
            }
            self.inner.notify.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::ObjectType;

    fn av(i: u32) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: i }
    }

    #[test]
    fn repeated_reports_coalesce_into_one_set() {
        let f = ChangeFeed::new();
        f.values_changed([av(2), av(1), av(2)]);
        f.values_changed([av(1)]);
        assert_eq!(f.take(), Changes { values: vec![av(1), av(2)], ..Changes::default() });
        assert!(f.take().is_empty());
    }

    #[test]
    fn too_many_objects_degrade_to_all_values_instead_of_growing() {
        let f = ChangeFeed::new();
        f.values_changed((0..MAX_PENDING as u32 + 10).map(av));
        f.objects_changed();
        let c = f.take();
        assert!(c.all_values && c.objects && c.values.is_empty());
    }

    #[tokio::test]
    async fn next_waits_for_a_report() {
        let f = ChangeFeed::new();
        let g = f.clone();
        let waiter = tokio::spawn(async move { g.next().await });
        tokio::task::yield_now().await;
        f.objects_changed();
        assert!(waiter.await.unwrap().objects);
    }
}
