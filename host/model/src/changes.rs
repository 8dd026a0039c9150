//! Change notifications from a model (`host.values-changed`,
//! `host.objects-changed`) on their way to the server's COV machinery.
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
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// Distinct objects remembered before the feed reports `all_values`.
pub const MAX_PENDING: usize = 65_536;

/// What changed since the last [`ChangeFeed::take`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Objects whose present value or status changed, in identifier order.
    pub values: Vec<ObjectIdentifier>,
    /// Too many to list: treat every object's values as changed.
    pub all_values: bool,
    /// Objects were created or deleted: read the object list again.
    pub objects: bool,
}

impl Changes {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty() && !self.all_values && !self.objects
    }
}

/// One model's change feed (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct ChangeFeed {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    pending: Mutex<Pending>,
    notify: Notify,
}

#[derive(Debug, Default)]
struct Pending {
    values: BTreeSet<ObjectIdentifier>,
    all_values: bool,
    objects: bool,
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

    /// Take everything pending, leaving the feed empty.
    pub fn take(&self) -> Changes {
        let mut p = self.inner.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let p = std::mem::take(&mut *p);
        Changes { values: p.values.into_iter().collect(), all_values: p.all_values, objects: p.objects }
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
