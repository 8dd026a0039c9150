//! Initial COV notifications held back until the subscriber has had its
//! answer, without holding anything else.
//!
//! Some subscribers (bacpypes3) only know a subscription once they have
//! processed its SimpleACK, and refuse a notification that overtakes it
//! (unknown-subscription). The notifier used to sleep
//! [`INITIAL_NOTIFICATION_DELAY`](crate::cov::INITIAL_NOTIFICATION_DELAY)
//! after every subscription: every other subscriber's notifications waited
//! too, and the changes made meanwhile were read once at the end, so a
//! value that changed twice in that time was reported once. Under a front
//! end's renewals (a SubscribeCOV every few milliseconds) that was most of
//! the time. Now only the subscription's own notifications wait: its
//! initial one until its delay has passed, its later ones behind it, in
//! order.
//!
//! A held notification whose subscription was cancelled (or has expired)
//! by its release is dropped: the subscriber no longer knows it.
//!
//! Must never: reorder one subscription's notifications, or hold a
//! notification of a subscription that has no initial one waiting.

use bacnet::ObjectIdentifier;
use bacnet::cov::Notification;
use std::collections::{HashSet, VecDeque};
use tokio::time::{Duration, Instant};

/// One subscription's notifications, as far as holding goes.
type Key<A> = (A, u32, ObjectIdentifier);

fn key<A: Clone>(n: &Notification<A>) -> Key<A> {
    (n.subscriber.clone(), n.subscriber_process_identifier, n.monitored_object)
}

/// The held notifications, oldest first, each with the time it may go.
#[derive(Debug)]
pub(crate) struct InitialHold<A> {
    delay: Duration,
    held: VecDeque<(Instant, Notification<A>)>,
}

impl<A: Clone + Eq + std::hash::Hash> InitialHold<A> {
    /// Hold each initial notification `delay` from when it is [`InitialHold::sort`]ed.
    pub(crate) fn new(delay: Duration) -> Self {
        InitialHold { delay, held: VecDeque::new() }
    }

    /// When the next held notification may go, if one is held: the
    /// soonest of each subscription's first held one (those behind go with it).
    pub(crate) fn next_release(&self) -> Option<Instant> {
        let mut seen = HashSet::new();
        self.held.iter().filter(|(_, n)| seen.insert(key(n))).map(|(at, _)| *at).min()
    }

    /// What may go `now`, in order: the held notifications whose time has
    /// come (and no earlier one of theirs is still held) and whose
    /// subscription is still `alive`, then those of `fresh` not held. An
    /// initial notification of `fresh` is held until `now + delay`, and
    /// every later one of its subscription behind it.
    pub(crate) fn sort(
        &mut self,
        now: Instant,
        alive: impl Fn(&Notification<A>) -> bool,
        fresh: impl IntoIterator<Item = Notification<A>>,
    ) -> Vec<Notification<A>> {
        let mut ready = Vec::new();
        let mut waiting: HashSet<Key<A>> = HashSet::new();
        let mut still = VecDeque::new();
        for (at, n) in self.held.drain(..) {
            let k = key(&n);
            if at <= now && !waiting.contains(&k) {
                if alive(&n) {
                    ready.push(n);
                }
            } else {
                waiting.insert(k);
                still.push_back((at, n));
            }
        }
        for n in fresh {
            if n.initial {
                waiting.insert(key(&n));
                still.push_back((now + self.delay, n));
            } else if !waiting.is_empty() && waiting.contains(&key(&n)) {
                // Behind its subscription's held one: goes when that one has.
                still.push_back((now, n));
            } else {
                ready.push(n);
            }
        }
        self.held = still;
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::ObjectType;

    fn n(subscriber: &'static str, instance: u32, initial: bool) -> Notification<&'static str> {
        Notification {
            subscriber,
            subscriber_process_identifier: 1,
            confirmed: false,
            monitored_object: ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).unwrap(),
            time_remaining: 60,
            values: Vec::new(),
            multiple: false,
            timestamped: false,
            initial,
        }
    }

    fn who(v: &[Notification<&'static str>]) -> Vec<(&'static str, u32, bool)> {
        v.iter().map(|n| (n.subscriber, n.monitored_object.instance, n.initial)).collect()
    }

    #[test]
    fn a_new_subscription_waits_alone_and_its_changes_wait_behind_it_in_order() {
        let delay = Duration::from_millis(200);
        let mut hold = InitialHold::new(delay);
        let t0 = Instant::now();
        // The workstation subscribes to av1 while the logger's av2 keeps changing.
        let ready = hold.sort(t0, |_| true, [n("workstation", 1, true), n("logger", 2, false)]);
        assert_eq!(who(&ready), [("logger", 2, false)], "the logger's change goes at once");
        assert_eq!(hold.next_release(), Some(t0 + delay));
        let ready =
            hold.sort(t0 + Duration::from_millis(50), |_| true, [n("workstation", 1, false), n("logger", 2, false)]);
        assert_eq!(who(&ready), [("logger", 2, false)], "a change of av1 waits behind its initial notification");
        assert_eq!(hold.next_release(), Some(t0 + delay), "and goes with it, not before");
        let ready = hold.sort(t0 + delay, |_| true, []);
        assert_eq!(who(&ready), [("workstation", 1, true), ("workstation", 1, false)], "then both, in order");
        assert_eq!(hold.next_release(), None);
    }

    #[test]
    fn a_subscription_cancelled_while_its_initial_notification_is_held_gets_none() {
        let delay = Duration::from_millis(200);
        let mut hold = InitialHold::new(delay);
        let t0 = Instant::now();
        let ready = hold.sort(t0, |_| true, [n("workstation", 1, true), n("logger", 2, true)]);
        assert!(ready.is_empty());
        // The workstation cancelled av1 within the 200 ms.
        let ready = hold.sort(t0 + delay, |n| n.subscriber != "workstation", []);
        assert_eq!(who(&ready), [("logger", 2, true)]);
        assert_eq!(hold.next_release(), None, "nothing left held");
    }

    #[test]
    fn a_renewal_holds_only_its_own_subscription() {
        let delay = Duration::from_millis(200);
        let mut hold = InitialHold::new(delay);
        let t0 = Instant::now();
        let ready = hold.sort(t0, |_| true, [n("workstation", 1, true), n("workstation", 2, false)]);
        assert_eq!(who(&ready), [("workstation", 2, false)], "the same subscriber's other object is not held");
        // Renewals of other objects every 10 ms do not push av1's release back.
        let mut av1_released_at = None;
        for i in 1..=20u32 {
            let at = t0 + Duration::from_millis(10) * i;
            if who(&hold.sort(at, |_| true, [n("workstation", 100 + i, true)])).contains(&("workstation", 1, true)) {
                av1_released_at = Some(at);
            }
        }
        assert_eq!(av1_released_at, Some(t0 + delay));
    }
}
