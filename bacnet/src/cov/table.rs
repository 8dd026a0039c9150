//! [`CovTable`]: the subscriptions, the refusals, the lifetimes, and the
//! Active_COV_Subscriptions listing. Observed values and the notifications
//! they cause are in `notify.rs`.

use super::change::supports_subscribe_cov;
use super::notify::{STATUS_FLAGS, Snapshot};
use super::{
    ActiveSubscription, COVMultipleSubscription, CovConfig, CovCounters, Notification, Recipient, RecipientProcess,
    Refusal, Subscribed, Target, bump, check_increment,
};
use crate::codec::ObjectIdentifier;
use crate::enums::PropertyIdentifier;
use crate::services::{ObjectPropertyReference, ServiceCodec, SubscribeCOVPropertyRequest, SubscribeCOVRequest};
use crate::value::AnyValue;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

/// A monitored property and array index, ordered (unlike
/// [`PropertyReference`](crate::services::PropertyReference)) so it can be
/// part of a map key.
pub(super) type PropertyKey = (PropertyIdentifier, Option<u32>);

/// What identifies a subscription within one monitored object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SubscriptionKey<A> {
    pub(super) subscriber: A,
    pub(super) process_identifier: u32,
    /// `None` for SubscribeCOV.
    pub(super) property: Option<PropertyKey>,
    /// Made by SubscribeCOVPropertyMultiple: reported in
    /// COVNotificationMultiple, apart from a SubscribeCOVProperty
    /// subscription to the same property.
    pub(super) multiple: bool,
}

impl<A> SubscriptionKey<A> {
    /// The value the subscription reports first: Present_Value for
    /// SubscribeCOV, the monitored property for SubscribeCOVProperty.
    pub(super) fn monitored(&self) -> PropertyKey {
        self.property.unwrap_or((PropertyIdentifier::PRESENT_VALUE, None))
    }
}

#[derive(Debug)]
pub(super) struct Subscription {
    pub(super) confirmed: bool,
    /// `None`: indefinite.
    pub(super) expires: Option<Duration>,
    /// The subscriber's covIncrement (SubscribeCOVProperty).
    pub(super) cov_increment: Option<f32>,
    pub(super) initial_due: bool,
    /// The values as last notified.
    pub(super) notified: Snapshot,
    /// Each notified value carries its time of change (COV-multiple).
    pub(super) timestamped: bool,
    /// The subscriber's maxNotificationDelay in seconds (COV-multiple; 0
    /// for the other services), shown in Active_COV_Multiple_Subscriptions.
    pub(super) max_notification_delay: u32,
}

impl Subscription {
    fn alive(&self, now: Duration) -> bool {
        self.expires.is_none_or(|e| e > now)
    }
}

/// One monitored object: its subscriptions and what is known of its values.
#[derive(Debug)]
pub(super) struct Monitored<A> {
    pub(super) subscriptions: BTreeMap<SubscriptionKey<A>, Subscription>,
    /// The latest observed value of every property some subscription
    /// monitors, and of Status_Flags.
    pub(super) observed: BTreeMap<PropertyKey, AnyValue>,
    /// The object's COV_Increment as last observed (`None`: none, or not a
    /// number ≥ 0).
    pub(super) increment: Option<f64>,
}

impl<A: Ord> Monitored<A> {
    fn new() -> Self {
        Monitored { subscriptions: BTreeMap::new(), observed: BTreeMap::new(), increment: None }
    }

    /// The properties whose observed values are kept.
    pub(super) fn needed(&self) -> BTreeSet<PropertyKey> {
        let mut needed: BTreeSet<_> = self.subscriptions.keys().map(SubscriptionKey::monitored).collect();
        needed.insert(STATUS_FLAGS);
        needed
    }

    /// Forget observed values no subscription needs any more, so churning
    /// subscriptions cannot grow the object's state.
    fn prune(&mut self) {
        let needed = self.needed();
        self.observed.retain(|k, _| needed.contains(k));
    }
}

/// Seconds left until `expires`, rounded up; 0 for an indefinite lifetime.
pub(super) fn time_remaining(expires: Option<Duration>, now: Duration) -> u32 {
    let Some(e) = expires else { return 0 };
    let left = e.saturating_sub(now);
    let secs = left.as_secs().saturating_add(u64::from(left.subsec_nanos() > 0));
    u32::try_from(secs).unwrap_or(u32::MAX)
}

/// The parameters the subscription services share.
pub(super) struct Request {
    pub(super) process_identifier: u32,
    pub(super) object: ObjectIdentifier,
    pub(super) confirmed: Option<bool>,
    pub(super) lifetime: Option<u32>,
    pub(super) property: Option<PropertyKey>,
    pub(super) cov_increment: Option<f32>,
    pub(super) multiple: bool,
    pub(super) timestamped: bool,
    pub(super) max_notification_delay: u32,
}

/// The COV subscriptions of one device, keyed by subscriber address `A`.
///
/// See the [module documentation](super) for the calling order and the
/// rules. Every operation is at most linear in the number of subscriptions,
/// which [`CovConfig::max_subscriptions`] bounds.
#[derive(Debug)]
pub struct CovTable<A> {
    config: CovConfig,
    pub(super) objects: BTreeMap<ObjectIdentifier, Monitored<A>>,
    pub(super) notifications: VecDeque<Notification<A>>,
    pub(super) counters: CovCounters,
    /// Maps a subscriber to the origin its subscriptions count against.
    origin: fn(&A) -> A,
    /// Subscribers the limits do not apply to (see [`CovTable::exempting`]).
    exempt: fn(&A) -> bool,
}

impl<A: Ord + Clone> CovTable<A> {
    /// An empty table with `config`; each subscriber address is its own
    /// origin.
    pub fn new(config: CovConfig) -> Self {
        Self::with_origin(config, A::clone)
    }

    /// An empty table with `config` whose per-origin quota counts each
    /// subscriber against `origin(subscriber)`: for B/IP its IP address
    /// without the port.
    pub fn with_origin(config: CovConfig, origin: fn(&A) -> A) -> Self {
        CovTable {
            config,
            objects: BTreeMap::new(),
            notifications: VecDeque::new(),
            counters: CovCounters::default(),
            origin,
            exempt: |_| false,
        }
    }

    /// The same table, where the subscribers `exempt` picks are held to no
    /// limit and take no place from the others: the host's own subscribers
    /// inside the gateway (its northbound bridges), which follow every
    /// object of the device once each. Only the host may create such
    /// subscriber addresses; a requester on a network never is one.
    pub fn exempting(mut self, exempt: fn(&A) -> bool) -> Self {
        self.exempt = exempt;
        self
    }

    /// The limits in force.
    pub fn config(&self) -> &CovConfig {
        &self.config
    }

    /// What the table has done so far.
    pub fn counters(&self) -> &CovCounters {
        &self.counters
    }

    /// Subscriptions held, including any whose lifetime ended since the last
    /// call that took `now`.
    pub fn len(&self) -> usize {
        self.objects.values().map(|m| m.subscriptions.len()).sum()
    }

    /// True when the table holds no subscription.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Handle a SubscribeCOV request from `subscriber` (Clause 13.14):
    /// subscribe, renew or cancel. `target` is what the host found for the
    /// monitored object.
    pub fn subscribe_cov(
        &mut self,
        now: Duration,
        subscriber: A,
        request: &SubscribeCOVRequest,
        target: Target,
    ) -> Result<Subscribed, Refusal> {
        let request = Request {
            process_identifier: request.subscriber_process_identifier,
            object: request.monitored_object,
            confirmed: request.issue_confirmed_notifications,
            lifetime: request.lifetime,
            property: None,
            cov_increment: None,
            multiple: false,
            timestamped: false,
            max_notification_delay: 0,
        };
        self.subscribe(now, subscriber, request, target)
    }

    /// Handle a SubscribeCOVProperty request from `subscriber` (Clause
    /// 13.15): subscribe, renew or cancel. `target` is what the host found
    /// for the monitored object and property.
    pub fn subscribe_cov_property(
        &mut self,
        now: Duration,
        subscriber: A,
        request: &SubscribeCOVPropertyRequest,
        target: Target,
    ) -> Result<Subscribed, Refusal> {
        let p = request.monitored_property;
        let request = Request {
            process_identifier: request.subscriber_process_identifier,
            object: request.monitored_object,
            confirmed: request.issue_confirmed_notifications,
            lifetime: request.lifetime,
            property: Some((p.property, p.array_index)),
            cov_increment: request.cov_increment,
            multiple: false,
            timestamped: false,
            max_notification_delay: 0,
        };
        self.subscribe(now, subscriber, request, target)
    }

    pub(super) fn subscribe(
        &mut self,
        now: Duration,
        subscriber: A,
        request: Request,
        target: Target,
    ) -> Result<Subscribed, Refusal> {
        self.expire(now);
        let result = self.try_subscribe(now, subscriber, request, target);
        self.count(result);
        result
    }

    /// Count what a subscription request did.
    pub(super) fn count(&mut self, outcome: Result<Subscribed, Refusal>) {
        match outcome {
            Ok(Subscribed::Created) => bump(&mut self.counters.created),
            Ok(Subscribed::Renewed) => bump(&mut self.counters.renewed),
            Ok(Subscribed::Cancelled) => bump(&mut self.counters.cancelled),
            Ok(Subscribed::NothingToCancel) => {}
            Err(r) => self.counters.refused.bump(r),
        }
    }

    fn try_subscribe(
        &mut self,
        now: Duration,
        subscriber: A,
        request: Request,
        target: Target,
    ) -> Result<Subscribed, Refusal> {
        target.verdict()?;
        if request.property.is_none() && !supports_subscribe_cov(request.object.object_type) {
            return Err(Refusal::ObjectNotCovCapable);
        }
        let key = SubscriptionKey {
            subscriber,
            process_identifier: request.process_identifier,
            property: request.property,
            multiple: request.multiple,
        };
        let Some(confirmed) = request.confirmed else {
            if request.lifetime.is_some() {
                return Err(Refusal::InconsistentParameters);
            }
            return Ok(if self.remove(request.object, &key) {
                Subscribed::Cancelled
            } else {
                Subscribed::NothingToCancel
            });
        };
        check_increment(request.cov_increment)?;
        let expires = self.expiry(now, request.lifetime)?;
        if self.renew(&request, &key, confirmed, expires) {
            return Ok(Subscribed::Renewed);
        }
        self.room_for(&key.subscriber, 1)?;
        self.insert(request, key, confirmed, expires);
        Ok(Subscribed::Created)
    }

    /// When a subscription with `lifetime` (seconds) made at `now` ends
    /// (`None`: never), or the refusal of that lifetime.
    pub(super) fn expiry(&self, now: Duration, lifetime: Option<u32>) -> Result<Option<Duration>, Refusal> {
        match lifetime {
            None | Some(0) if !self.config.allow_indefinite => Err(Refusal::LifetimeOutOfRange),
            None | Some(0) => Ok(None),
            Some(s) if self.config.max_lifetime.is_some_and(|max| s > max) => Err(Refusal::LifetimeOutOfRange),
            Some(s) => Ok(Some(now.saturating_add(Duration::from_secs(u64::from(s))))),
        }
    }

    /// Give an existing subscription with `key` the request's parameters;
    /// false when there is none.
    pub(super) fn renew(
        &mut self,
        request: &Request,
        key: &SubscriptionKey<A>,
        confirmed: bool,
        expires: Option<Duration>,
    ) -> bool {
        let Some(sub) = self.objects.get_mut(&request.object).and_then(|m| m.subscriptions.get_mut(key)) else {
            return false;
        };
        sub.confirmed = confirmed;
        sub.expires = expires;
        sub.cov_increment = request.cov_increment;
        sub.timestamped = request.timestamped;
        sub.max_notification_delay = request.max_notification_delay;
        sub.initial_due = true;
        true
    }

    /// Whether `subscriber` may take `new` more places, by every limit.
    pub(super) fn room_for(&self, subscriber: &A, new: usize) -> Result<(), Refusal> {
        if (self.exempt)(subscriber) {
            return Ok(());
        }
        let origin = (self.origin)(subscriber);
        let (mut held, mut held_by_origin, mut total) = (0, 0, 0);
        let bounded =
            self.objects.values().flat_map(|m| m.subscriptions.keys()).filter(|k| !(self.exempt)(&k.subscriber));
        for k in bounded {
            total += 1;
            held += usize::from(k.subscriber == *subscriber);
            held_by_origin += usize::from((self.origin)(&k.subscriber) == origin);
        }
        // Place by place, as if they were asked for one at a time.
        for _ in 0..new {
            if held >= self.config.max_subscriptions_per_subscriber {
                return Err(Refusal::SubscriberLimit);
            }
            if held_by_origin >= self.config.max_subscriptions_per_origin {
                return Err(Refusal::OriginLimit);
            }
            if total >= self.config.max_subscriptions {
                return Err(Refusal::TableFull);
            }
            // The reserve: the last places go to light origins only.
            let unreserved = self.config.max_subscriptions.saturating_sub(self.config.reserved_subscriptions);
            if total >= unreserved && held_by_origin >= self.config.max_subscriptions_per_subscriber {
                return Err(Refusal::TableFull);
            }
            held += 1;
            held_by_origin += 1;
            total += 1;
        }
        Ok(())
    }

    /// Add a subscription (the caller checked there is room).
    pub(super) fn insert(
        &mut self,
        request: Request,
        key: SubscriptionKey<A>,
        confirmed: bool,
        expires: Option<Duration>,
    ) {
        let sub = Subscription {
            confirmed,
            expires,
            cov_increment: request.cov_increment,
            initial_due: true,
            notified: Snapshot::default(),
            timestamped: request.timestamped,
            max_notification_delay: request.max_notification_delay,
        };
        self.objects.entry(request.object).or_insert_with(Monitored::new).subscriptions.insert(key, sub);
    }

    /// Remove one subscription; true if it existed.
    pub(super) fn remove(&mut self, object: ObjectIdentifier, key: &SubscriptionKey<A>) -> bool {
        let Some(m) = self.objects.get_mut(&object) else { return false };
        let removed = m.subscriptions.remove(key).is_some();
        if m.subscriptions.is_empty() {
            self.objects.remove(&object);
        } else if removed {
            m.prune();
        }
        removed
    }

    /// Remove every subscription whose lifetime has ended by `now`.
    pub(super) fn expire(&mut self, now: Duration) {
        let mut expired = 0u64;
        self.objects.retain(|_, m| {
            let before = m.subscriptions.len();
            m.subscriptions.retain(|_, s| s.alive(now));
            let gone = before - m.subscriptions.len();
            if gone > 0 {
                expired = expired.saturating_add(gone as u64);
                m.prune();
            }
            !m.subscriptions.is_empty()
        });
        self.counters.expired = self.counters.expired.saturating_add(expired);
    }

    /// Remove the subscriptions whose lifetime has ended by `now`. No
    /// notification goes to them afterwards.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.expire(now);
    }

    /// The instant the next subscription's lifetime ends, if any has a
    /// lifetime.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.objects.values().flat_map(|m| m.subscriptions.values()).filter_map(|s| s.expires).min()
    }

    /// Remove every subscription for `object` (it was deleted); returns how
    /// many there were.
    pub fn remove_object(&mut self, object: ObjectIdentifier) -> usize {
        let n = self.objects.remove(&object).map_or(0, |m| m.subscriptions.len());
        self.counters.removed_with_object = self.counters.removed_with_object.saturating_add(n as u64);
        n
    }

    /// True when `subscriber`'s process `process_identifier` holds some
    /// subscription to `object` (a notification made for it may still go).
    pub fn is_subscribed(&self, subscriber: &A, process_identifier: u32, object: ObjectIdentifier) -> bool {
        self.objects.get(&object).is_some_and(|m| {
            m.subscriptions.keys().any(|k| k.subscriber == *subscriber && k.process_identifier == process_identifier)
        })
    }

    /// True when some subscription monitors `object`.
    pub fn is_monitored(&self, object: ObjectIdentifier) -> bool {
        self.objects.contains_key(&object)
    }

    /// Every monitored object, once each, in order.
    pub fn monitored_objects(&self) -> impl Iterator<Item = ObjectIdentifier> + '_ {
        self.objects.keys().copied()
    }

    /// The subscriptions alive at `now`, as Active_COV_Subscriptions lists
    /// them: by monitored object, then subscriber, process identifier and
    /// property.
    pub fn active_subscriptions(&self, now: Duration) -> impl Iterator<Item = ActiveSubscription<'_, A>> + '_ {
        self.objects.iter().flat_map(move |(object, m)| {
            m.subscriptions.iter().filter(move |(_, s)| s.alive(now)).map(move |(key, sub)| {
                let (property, array_index) = key.monitored();
                ActiveSubscription {
                    subscriber: &key.subscriber,
                    subscriber_process_identifier: key.process_identifier,
                    monitored_property: ObjectPropertyReference { object: *object, property, array_index },
                    issue_confirmed_notifications: sub.confirmed,
                    time_remaining: time_remaining(sub.expires, now),
                    cov_increment: sub.cov_increment,
                }
            })
        })
    }

    /// Append the value of the Device object's
    /// Active_COV_Multiple_Subscriptions property at `now`: a `BACnetLIST
    /// of BACnetCOVMultipleSubscription`, one entry per subscriber process
    /// and parameters (confirmed, time remaining, maxNotificationDelay),
    /// its references object by object.
    pub fn encode_active_cov_multiple_subscriptions(
        &self,
        now: Duration,
        out: &mut Vec<u8>,
        mut recipient: impl FnMut(&A) -> Recipient,
    ) {
        use crate::services::{CovReference, CovSubscriptionSpecification, PropertyReference};
        type Group<'a, A> = (&'a A, u32, bool, u32, u32);
        let mut groups: BTreeMap<Group<'_, A>, Vec<CovSubscriptionSpecification>> = BTreeMap::new();
        for (object, m) in &self.objects {
            for (key, sub) in m.subscriptions.iter().filter(|(k, s)| k.multiple && s.alive(now)) {
                let group = (
                    &key.subscriber,
                    key.process_identifier,
                    sub.confirmed,
                    time_remaining(sub.expires, now),
                    sub.max_notification_delay,
                );
                let (property, array_index) = key.monitored();
                let reference = CovReference {
                    property: PropertyReference { property, array_index },
                    cov_increment: sub.cov_increment,
                    timestamped: sub.timestamped,
                };
                let specs = groups.entry(group).or_default();
                match specs.last_mut() {
                    Some(spec) if spec.object == *object => spec.references.push(reference),
                    _ => specs.push(CovSubscriptionSpecification { object: *object, references: vec![reference] }),
                }
            }
        }
        for ((subscriber, process_identifier, confirmed, time_remaining, delay), specifications) in groups {
            COVMultipleSubscription {
                recipient: RecipientProcess { recipient: recipient(subscriber), process_identifier },
                issue_confirmed_notifications: confirmed,
                time_remaining,
                max_notification_delay: delay,
                specifications,
            }
            .encode(out);
        }
    }

    /// Append the value of the Device object's Active_COV_Subscriptions
    /// property at `now`: a `BACnetLIST of BACnetCOVSubscription` (the
    /// encoded entries one after the other, without the `[3]` of a ReadProperty-ACK
    /// around them). `recipient` turns a subscriber address into the
    /// [`Recipient`] shown (normally [`Recipient::Address`]).
    pub fn encode_active_cov_subscriptions(
        &self,
        now: Duration,
        out: &mut Vec<u8>,
        mut recipient: impl FnMut(&A) -> Recipient,
    ) {
        for s in self.active_subscriptions(now) {
            s.to_wire(&mut recipient).encode(out);
        }
    }
}

impl<A: Ord + Clone> Default for CovTable<A> {
    fn default() -> Self {
        CovTable::new(CovConfig::default())
    }
}
