//! Change-of-value reporting for a served device: the host side of the
//! core's [`CovTable`]. SubscribeCOV and SubscribeCOVProperty are executed
//! here (`Cov::subscribe_cov`, `Cov::subscribe_cov_property`); the
//! device's notifier task (`run_notifier`) turns the model's change feed
//! into reads of the monitored objects and the table's notifications into
//! Unconfirmed- and ConfirmedCOVNotifications. SubscribeCOVPropertyMultiple
//! (`Cov::subscribe_cov_property_multiple`) is all or nothing; what its
//! subscriptions report in one drain goes out as one
//! COVNotificationMultiple per subscriber process (more where one would
//! not fit an unsegmented APDU of the subscriber's datalink), stamped with
//! the device's clock.
//!
//! Values reach the table only when the model says they changed (its
//! `values-changed` feed) or at a subscription (the initial notification):
//! nothing polls every object on every tick.
//!
//! Must never: hold the table's lock across an await, call the model for an
//! object nobody monitors, or drop a notification without counting it.

use super::dispatch::Server;
use bacnet::cov::{CovConfig, CovTable, MultipleRefusal, Notification, Recipient, Target};
use bacnet::enums::{ConfirmedServiceChoice, ErrorCode, PropertyIdentifier as P, UnconfirmedServiceChoice};
use bacnet::services::{
    BacnetError, COVNotification, COVNotificationMultiple, CovObjectValues, CovValue, PropertyValue, ServiceCodec,
    SubscribeCOVPropertyMultipleError, SubscribeCOVPropertyMultipleRequest, SubscribeCOVPropertyRequest,
    SubscribeCOVRequest,
};
use bacnet::{AnyValue, ObjectIdentifier};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use trellis_model::{ObjectModel, PropertyTarget};
use trellis_net::{DeviceAddress, LinkAddress, sleep_until};

/// How long a subscription's initial notification is held (and its later
/// ones behind it; no other subscriber's), so that its SimpleACK reaches
/// the subscriber first: see `cov_hold`.
pub const INITIAL_NOTIFICATION_DELAY: Duration = Duration::from_millis(200);

/// Counters of the COV machinery, for status and tests.
#[derive(Debug, Default)]
pub struct CovStats {
    /// UnconfirmedCOVNotifications sent.
    pub unconfirmed_sent: AtomicU64,
    /// ConfirmedCOVNotifications acknowledged by their subscriber.
    pub confirmed_acknowledged: AtomicU64,
    /// ConfirmedCOVNotifications that failed after every retry (timeout,
    /// Error, Reject or Abort from the subscriber), or could not be queued.
    pub confirmed_failed: AtomicU64,
    /// Notifications that could not be sent (socket error).
    pub send_failed: AtomicU64,
    /// Notifications not sent because DeviceCommunicationControl disabled
    /// initiation.
    pub suppressed: AtomicU64,
}

impl CovStats {
    /// A snapshot as (unconfirmed sent, confirmed acknowledged, confirmed failed, send failed).
    pub fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.unconfirmed_sent.load(Ordering::Relaxed),
            self.confirmed_acknowledged.load(Ordering::Relaxed),
            self.confirmed_failed.load(Ordering::Relaxed),
            self.send_failed.load(Ordering::Relaxed),
        )
    }
}

/// One device's COV subscriptions.
#[derive(Debug)]
pub struct Cov {
    table: Mutex<CovTable<DeviceAddress>>,
    epoch: Instant,
    /// Subscribers inside the gateway (`LinkAddress::Local`): their
    /// notifications go to a channel, never to the network.
    local: Mutex<LocalSubscribers>,
    /// Wakes the notifier: a subscription queued an initial notification.
    pub(crate) initial: Notify,
    /// What was sent and what failed.
    pub stats: CovStats,
}

impl Cov {
    /// An empty table with `config`'s limits.
    pub fn new(config: CovConfig) -> Self {
        Cov {
            // The gateway's own subscribers (the northbound bridges) follow
            // every object once; the limits are for requesters on networks.
            table: Mutex::new(
                CovTable::with_origin(config, DeviceAddress::origin)
                    .exempting(|a| matches!(a.link, LinkAddress::Local(_))),
            ),
            epoch: Instant::now(),
            local: Mutex::new(LocalSubscribers::default()),
            initial: Notify::new(),
            stats: CovStats::default(),
        }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    pub(crate) fn with_table<R>(&self, f: impl FnOnce(&mut CovTable<DeviceAddress>, Duration) -> R) -> R {
        let now = self.now();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut table, now)
    }

    /// Subscriptions in force.
    pub fn subscriptions(&self) -> usize {
        self.with_table(|t, _| t.len())
    }

    /// Every subscription in force, for the operator: the subscriber's
    /// address, its process identifier, the object and property, whether
    /// confirmed, the seconds left (0 = indefinite).
    pub fn list(&self) -> Vec<(DeviceAddress, u32, ObjectIdentifier, P, bool, u32)> {
        self.with_table(|t, now| {
            t.active_subscriptions(now)
                .map(|s| {
                    (
                        s.subscriber.clone(),
                        s.subscriber_process_identifier,
                        s.monitored_property.object,
                        s.monitored_property.property,
                        s.issue_confirmed_notifications,
                        s.time_remaining,
                    )
                })
                .collect()
        })
    }

    /// The Active_COV_Subscriptions value of the Device object.
    pub fn active_subscriptions(&self) -> AnyValue {
        let mut out = Vec::new();
        self.with_table(|t, now| t.encode_active_cov_subscriptions(now, &mut out, recipient));
        AnyValue::from_bytes(&out).unwrap_or_default()
    }

    /// Active_COV_Multiple_Subscriptions: the SubscribeCOVPropertyMultiple
    /// subscriptions, one entry per subscriber process and parameters.
    pub fn active_multiple_subscriptions(&self) -> AnyValue {
        let mut out = Vec::new();
        self.with_table(|t, now| t.encode_active_cov_multiple_subscriptions(now, &mut out, recipient));
        AnyValue::from_bytes(&out).unwrap_or_default()
    }

    /// A subscriber inside the gateway: the address to subscribe as (with
    /// [`Server::execute`](super::dispatch::Server::execute) and SubscribeCOV
    /// or SubscribeCOVProperty, unconfirmed) and where its notifications
    /// arrive. At most `capacity` wait; past that they are dropped and
    /// counted (`CovStats::send_failed`).
    pub fn local_subscriber(&self, capacity: usize) -> (DeviceAddress, mpsc::Receiver<COVNotification>) {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        local.next += 1;
        let id = local.next;
        let (tx, rx) = mpsc::channel(capacity.max(1));
        local.senders.insert(id, tx);
        (DeviceAddress::from(LinkAddress::Local(id)), rx)
    }

    /// Forget a local subscriber (its subscriptions cancelled or left to
    /// expire): its channel goes now rather than at the next notification.
    pub fn forget_local(&self, subscriber: &DeviceAddress) {
        if let LinkAddress::Local(id) = subscriber.link {
            self.local.lock().unwrap_or_else(PoisonError::into_inner).senders.remove(&id);
        }
    }

    /// Hand a notification to a local subscriber; false if it is gone or full.
    fn deliver_local(&self, id: u32, n: COVNotification) -> bool {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(tx) = local.senders.get(&id) else { return false };
        match tx.try_send(n) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => false,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                local.senders.remove(&id);
                false
            }
        }
    }

    /// Execute SubscribeCOV for `peer`; `found` is the result of reading the
    /// object's Present_Value, Status_Flags and COV_Increment.
    pub(crate) fn subscribe_cov(
        &self,
        peer: &DeviceAddress,
        r: &SubscribeCOVRequest,
        found: Found,
    ) -> Result<(), BacnetError> {
        let target = found.target(false);
        let subscribed = self
            .with_table(|t, now| t.subscribe_cov(now, peer.clone(), r, target))
            .map_err(|refusal| refusal.error())?;
        if subscribed.initial_notification_due() {
            self.observe_initial(r.monitored_object, &found.values);
        }
        Ok(())
    }

    /// Execute SubscribeCOVProperty for `peer`; `found` is the result of
    /// reading the monitored property, Status_Flags and COV_Increment.
    pub(crate) fn subscribe_cov_property(
        &self,
        peer: &DeviceAddress,
        r: &SubscribeCOVPropertyRequest,
        found: Found,
    ) -> Result<(), BacnetError> {
        let target = found.target(true);
        let subscribed = self
            .with_table(|t, now| t.subscribe_cov_property(now, peer.clone(), r, target))
            .map_err(|refusal| refusal.error())?;
        if subscribed.initial_notification_due() {
            self.observe_initial(r.monitored_object, &found.values);
        }
        Ok(())
    }

    /// Execute SubscribeCOVPropertyMultiple for `peer`; `found` holds, per
    /// reference in request order, its object and what reading it found.
    pub(crate) fn subscribe_cov_property_multiple(
        &self,
        peer: &DeviceAddress,
        r: &SubscribeCOVPropertyMultipleRequest,
        found: Vec<(ObjectIdentifier, Found)>,
    ) -> Result<(), SubscribeCOVPropertyMultipleError> {
        let targets: Vec<Target> = found.iter().map(|(_, f)| f.target(true)).collect();
        let subscribed = self
            .with_table(|t, now| t.subscribe_cov_property_multiple(now, peer.clone(), r, &targets))
            .map_err(|refused| multiple_error(r, refused))?;
        if subscribed.initial_notification_due() {
            let mut queued = 0;
            for (object, f) in &found {
                queued += self.with_table(|t, now| t.observe(now, *object, &f.values));
            }
            if queued > 0 {
                self.initial.notify_one();
            }
        }
        Ok(())
    }

    /// The values read at a subscription: they produce its initial
    /// notification, which the notifier sends [`INITIAL_NOTIFICATION_DELAY`]
    /// later.
    fn observe_initial(&self, object: ObjectIdentifier, values: &[PropertyValue]) {
        if self.with_table(|t, now| t.observe(now, object, values)) > 0 {
            self.initial.notify_one();
        }
    }

    /// Hand observed values to the table (the notifier drains what that
    /// produced).
    pub(crate) fn observe(&self, object: ObjectIdentifier, values: &[PropertyValue]) {
        self.with_table(|t, now| t.observe(now, object, values));
    }
}

/// The SubscribeCOVPropertyMultiple-Error for a refusal: the reference
/// that failed, or (the request refused as a whole) its first reference
/// with the same error.
fn multiple_error(
    r: &SubscribeCOVPropertyMultipleRequest,
    refused: MultipleRefusal,
) -> SubscribeCOVPropertyMultipleError {
    multiple_error_at(r, refused.refusal.error(), refused.first_failed)
}

/// A SubscribeCOVPropertyMultiple-Error with `error` for the reference
/// `at`, or, without one, for the request's first reference.
pub(crate) fn multiple_error_at(
    r: &SubscribeCOVPropertyMultipleRequest,
    error: BacnetError,
    at: Option<(ObjectIdentifier, bacnet::services::PropertyReference)>,
) -> SubscribeCOVPropertyMultipleError {
    let first = r.specifications.iter().find_map(|s| s.references.first().map(|x| (s.object, x.property)));
    let (object, property) = at
        .or(first)
        .unwrap_or((ObjectIdentifier::from_u32(u32::MAX), bacnet::services::PropertyReference::new(P::ALL)));
    SubscribeCOVPropertyMultipleError {
        error,
        first_failed_object: object,
        first_failed_property: property,
        first_failed_error: error,
    }
}

/// The BACnetRecipient shown for a subscriber: its network (0 for the
/// local one) and MAC (a B/IP station's IP address and port, 6 octets; an
/// MS/TP station's one octet; a VMAC).
fn recipient(a: &DeviceAddress) -> Recipient {
    match &a.remote {
        Some(r) => Recipient::Address { network_number: r.net, mac_address: r.mac.clone() },
        None => Recipient::Address { network_number: 0, mac_address: a.link.mac_octets() },
    }
}

/// What reading a monitored object found: its first target's outcome tells
/// whether it exists; the successful reads are the values to observe.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The outcome of reading the monitored property (Present_Value for
    /// SubscribeCOV).
    pub first: Option<Result<(), BacnetError>>,
    /// Values read.
    pub values: Vec<PropertyValue>,
    /// The object is the Device object (not COV-capable here).
    pub is_device: bool,
}

impl Found {
    fn target(&self, property: bool) -> Target {
        if self.is_device && !property {
            return Target::ObjectNotCovCapable;
        }
        match &self.first {
            Some(Ok(())) => Target::Monitorable,
            Some(Err(e)) => match e.code {
                ErrorCode::UNKNOWN_OBJECT => Target::UnknownObject,
                ErrorCode::UNKNOWN_PROPERTY if property => Target::UnknownProperty,
                ErrorCode::PROPERTY_IS_NOT_AN_ARRAY => Target::PropertyIsNotAnArray,
                ErrorCode::INVALID_ARRAY_INDEX => Target::InvalidArrayIndex,
                _ if property => Target::NotCovProperty,
                _ => Target::ObjectNotCovCapable,
            },
            None => Target::UnknownObject,
        }
    }
}

/// The properties read for a subscription: the monitored one first, then
/// Status_Flags and COV_Increment (which the table uses when present).
pub(crate) fn subscription_reads(object: ObjectIdentifier, monitored: P, index: Option<u32>) -> Vec<PropertyTarget> {
    let mut t = vec![PropertyTarget { object, property: monitored, array_index: index }];
    for p in [P::STATUS_FLAGS, P::COV_INCREMENT] {
        if p != monitored {
            t.push(PropertyTarget { object, property: p, array_index: None });
        }
    }
    t
}

/// Requests the notifier hands to the endpoint: a confirmed notification's
/// service and body for a subscriber, sent through the endpoint's client
/// state machine (retries, timeouts) so the answer is counted.
pub(crate) type ConfirmedOut = (DeviceAddress, ConfirmedServiceChoice, Vec<u8>);

/// The claim of the device's first notifier (see [`run_notifier`]),
/// released when that notifier's task ends.
struct FirstNotifier<'a> {
    taken: &'a std::sync::atomic::AtomicBool,
    ours: bool,
}

impl FirstNotifier<'_> {
    /// Take the claim if no notifier holds it.
    fn claim(&mut self) -> bool {
        self.ours = !self.taken.swap(true, Ordering::AcqRel);
        self.ours
    }
}

impl Drop for FirstNotifier<'_> {
    fn drop(&mut self) {
        if self.ours {
            self.taken.store(false, Ordering::Release);
        }
    }
}

/// How often the schedules are evaluated (a scheduled write happens at
/// most this long after its time).
const SCHEDULE_PERIOD: Duration = Duration::from_secs(1);

/// The gateway's own subscribers, by id.
#[derive(Debug, Default)]
struct LocalSubscribers {
    next: u32,
    senders: std::collections::HashMap<u32, mpsc::Sender<COVNotification>>,
}

/// Where the notifier sends what it produces.
pub(crate) trait NotificationSink: Send + Sync {
    /// Send an unconfirmed notification to a subscriber.
    fn unconfirmed(
        &self,
        to: &DeviceAddress,
        service: UnconfirmedServiceChoice,
        body: Vec<u8>,
    ) -> impl Future<Output = std::io::Result<()>> + Send;
    /// Queue a confirmed notification; false when the queue is full.
    fn confirmed(&self, to: DeviceAddress, service: ConfirmedServiceChoice, body: Vec<u8>) -> bool;
}

/// Run a device's COV notifier until `server`'s model has no change feed
/// and no subscription needs the timer… that is, for the device's life.
///
/// The same task sends the model's event transitions and the
/// acknowledgment notifications to their Notification Class's recipients
/// ([`super::alarms`]), and, in the first station's notifier, evaluates the
/// device's schedules once a second and whenever a write or a time
/// synchronization asks ([`super::schedule::runner`]) and sends the restart
/// notification ([`super::restart`]).
pub(crate) async fn run_notifier<M: ObjectModel, S: super::alarms::EventSink>(
    server: std::sync::Arc<Server<M>>,
    sink: S,
) {
    let cov = server.cov();
    let feed = server.model().changes();
    let schedules = &server.host().schedules;
    let mut first = FirstNotifier { taken: &server.host().first_notifier, ours: false };
    let mut next_evaluation = None;
    let mut hold = super::cov_hold::InitialHold::new(INITIAL_NOTIFICATION_DELAY);
    loop {
        // The first notifier to get here evaluates the schedules and sends
        // the restart notification; another takes over if its task ends.
        if !first.ours && first.claim() && schedules.has_schedules() {
            next_evaluation = Some(Instant::now());
        }
        let first_one = first.ours;
        let deadline = cov.with_table(|t, _| t.poll_timeout()).map(|d| cov.epoch + d);
        let mut transitions = Vec::new();
        tokio::select! {
            mut changes = next_changes(feed.as_ref()) => {
                transitions = std::mem::take(&mut changes.events);
                if changes.objects {
                    server.objects_changed().await;
                }
                let monitored: Vec<ObjectIdentifier> = cov.with_table(|t, _| {
                    if changes.all_values || changes.objects {
                        t.monitored_objects().collect()
                    } else {
                        changes.values.iter().copied().filter(|o| t.is_monitored(*o)).collect()
                    }
                });
                if !monitored.is_empty() {
                    server.observe_objects(&monitored).await;
                }
            }
            // A subscription queued its initial notification: `hold` keeps
            // it (and its subscription's later ones) until its SimpleACK has
            // reached the subscriber (see `cov_hold`); the rest goes on.
            _ = cov.initial.notified() => {}
            _ = sleep_until(hold.next_release()) => {}
            _ = sleep_until(deadline) => cov.with_table(|t, now| t.handle_timeout(now)),
            _ = server.alarms().wake.notified() => {}
            _ = sleep_until(server.alarms().next_deadline()) => {}
            _ = schedules.wake.notified(), if first_one => next_evaluation = Some(Instant::now()),
            _ = server.host().restart.wake.notified(), if first_one => {}
            _ = sleep_until(next_evaluation) => {}
        }
        if let Some(due) = next_evaluation.filter(|due| *due <= Instant::now()) {
            super::schedule::runner::run(&server, &sink).await;
            let now = Instant::now();
            next_evaluation =
                Some(if due + SCHEDULE_PERIOD > now { due + SCHEDULE_PERIOD } else { now + SCHEDULE_PERIOD });
        }
        if first_one {
            super::restart::notify(&server, &sink).await;
        }
        super::alarms::notify_transitions(&server, &sink, transitions).await;
        for n in server.alarms().take_queued() {
            super::alarms::send_to_recipients(&server, &sink, n).await;
        }
        super::alarms::send_awaiting(&server, &sink).await;
        let initiating = server.device_id();
        let mut multiple = Vec::new();
        let fresh = std::iter::from_fn(|| cov.with_table(|t, _| t.poll_notification()));
        let alive = |n: &Notification<DeviceAddress>| {
            cov.with_table(|t, _| t.is_subscribed(&n.subscriber, n.subscriber_process_identifier, n.monitored_object))
        };
        for n in hold.sort(Instant::now(), alive, fresh) {
            if !server.communication().initiates() {
                cov.stats.suppressed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if n.multiple {
                multiple.push(n);
            } else {
                send(&sink, cov, n, initiating).await;
            }
        }
        if !multiple.is_empty() {
            let now = server.model().clock().unwrap_or_default().now().local_date_time();
            for (to, confirmed, body) in gather_multiple(multiple, initiating, now) {
                for part in fit_to_apdu(body, max_body(&to)) {
                    send_body(&sink, cov, to.clone(), confirmed, Service::CovMultiple, part).await;
                }
            }
        }
    }
}

/// The COV-multiple notifications drained together, one
/// COVNotificationMultiple per subscriber process and kind (confirmed or
/// not), stamped with `now` (the device's local date and time): each
/// object's values once, with their time of change where the subscriber
/// asked for it. The time of change is the time of the drain, which
/// follows the model's change report by at most one notifier turn.
fn gather_multiple(
    drained: Vec<Notification<DeviceAddress>>,
    initiating: ObjectIdentifier,
    now: (bacnet::Date, bacnet::Time),
) -> Vec<(DeviceAddress, bool, COVNotificationMultiple)> {
    let mut out: Vec<(DeviceAddress, bool, COVNotificationMultiple)> = Vec::new();
    for n in drained {
        let values = n
            .values
            .into_iter()
            .map(|v| CovValue {
                property: v.property,
                array_index: v.array_index,
                value: v.value,
                time_of_change: n.timestamped.then_some(now.1),
            })
            .collect::<Vec<_>>();
        let same = |(to, confirmed, body): &&mut (DeviceAddress, bool, COVNotificationMultiple)| {
            *to == n.subscriber
                && *confirmed == n.confirmed
                && body.subscriber_process_identifier == n.subscriber_process_identifier
        };
        let body = match out.iter_mut().find(same) {
            Some((_, _, body)) => body,
            None => {
                out.push((
                    n.subscriber.clone(),
                    n.confirmed,
                    COVNotificationMultiple {
                        subscriber_process_identifier: n.subscriber_process_identifier,
                        initiating_device: initiating,
                        time_remaining: n.time_remaining,
                        timestamp: Some(now),
                        notifications: Vec::new(),
                    },
                ));
                &mut out.last_mut().expect("just pushed").2
            }
        };
        // The soonest end of the references reported (0 is indefinite:
        // it never comes sooner than a finite one).
        let soonest = |t: u32| if t == 0 { u32::MAX } else { t };
        if soonest(n.time_remaining) < soonest(body.time_remaining) {
            body.time_remaining = n.time_remaining;
        }
        match body.notifications.iter_mut().find(|o| o.object == n.monitored_object) {
            Some(o) => o.values.extend(values),
            None => body.notifications.push(CovObjectValues { object: n.monitored_object, values }),
        }
    }
    out
}

async fn send<S: NotificationSink>(sink: &S, cov: &Cov, n: Notification<DeviceAddress>, initiating: ObjectIdentifier) {
    if let LinkAddress::Local(id) = n.subscriber.link {
        let counter = if cov.deliver_local(id, n.into_request(initiating)) {
            &cov.stats.unconfirmed_sent
        } else {
            &cov.stats.send_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let to = n.subscriber.clone();
    let confirmed = n.confirmed;
    send_body(sink, cov, to, confirmed, Service::Cov, n.into_request(initiating)).await;
}

/// The most octets a notification body may take for `to`: one unsegmented
/// APDU of its datalink (MS/TP 480, the others 1476) less the confirmed
/// request's header (4 octets, the longer of the two).
fn max_body(to: &DeviceAddress) -> usize {
    let apdu = match to.link {
        LinkAddress::Mstp(_) => 480,
        _ => 1476,
    };
    apdu - 4
}

/// `body` cut into notifications of at most `limit` octets each, object by
/// object and, for an object whose values alone are too long, value by
/// value (a single value longer than `limit` goes alone: the datalink
/// refuses it and the failure is counted).
fn fit_to_apdu(body: COVNotificationMultiple, limit: usize) -> Vec<COVNotificationMultiple> {
    if body.to_vec().len() <= limit {
        return vec![body];
    }
    let empty = COVNotificationMultiple { notifications: Vec::new(), ..body.clone() };
    let mut parts = vec![empty.clone()];
    for object in body.notifications {
        for value in object.values {
            let part = parts.last_mut().expect("one part at least");
            let mut grown = part.clone();
            match grown.notifications.last_mut() {
                Some(o) if o.object == object.object => o.values.push(value.clone()),
                _ => grown.notifications.push(CovObjectValues { object: object.object, values: vec![value.clone()] }),
            }
            if grown.to_vec().len() <= limit || part.notifications.is_empty() {
                *part = grown;
            } else {
                let mut next = empty.clone();
                next.notifications.push(CovObjectValues { object: object.object, values: vec![value] });
                parts.push(next);
            }
        }
    }
    parts
}

/// Send one notification body, confirmed or not, and count what happened.
async fn send_body<S: NotificationSink>(
    sink: &S,
    cov: &Cov,
    to: DeviceAddress,
    confirmed: bool,
    service: Service,
    body: impl ServiceCodec,
) {
    if let LinkAddress::Local(_) = to.link {
        // The gateway's own subscribers hold SubscribeCOV subscriptions only.
        cov.stats.send_failed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let body = body.to_vec();
    if confirmed {
        if !sink.confirmed(to, service.confirmed(), body) {
            cov.stats.confirmed_failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(service = %service.confirmed(), "confirmed notification queue full: counted as failed");
        }
    } else {
        match sink.unconfirmed(&to, service.unconfirmed(), body).await {
            Ok(()) => cov.stats.unconfirmed_sent.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                tracing::warn!(to = %to, error = %e, service = %service.unconfirmed(), "notification not sent");
                cov.stats.send_failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Which notification service a body travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    /// Confirmed/UnconfirmedCOVNotification.
    Cov,
    /// Confirmed/UnconfirmedCOVNotificationMultiple.
    CovMultiple,
}

impl Service {
    fn confirmed(self) -> ConfirmedServiceChoice {
        match self {
            Service::Cov => ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION,
            Service::CovMultiple => ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION_MULTIPLE,
        }
    }

    fn unconfirmed(self) -> UnconfirmedServiceChoice {
        match self {
            Service::Cov => UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION,
            Service::CovMultiple => UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION_MULTIPLE,
        }
    }
}

async fn next_changes(feed: Option<&trellis_model::ChangeFeed>) -> trellis_model::Changes {
    match feed {
        Some(f) => f.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::{ObjectType, Value};
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn subscriber() -> DeviceAddress {
        DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 47809))
    }

    fn av(i: u32) -> ObjectIdentifier {
        ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap()
    }

    fn changed(object: ObjectIdentifier, remaining: u32, text: &str) -> Notification<DeviceAddress> {
        Notification {
            subscriber: subscriber(),
            subscriber_process_identifier: 3,
            confirmed: false,
            monitored_object: object,
            time_remaining: remaining,
            values: vec![PropertyValue {
                property: P::DESCRIPTION,
                array_index: None,
                value: Value::CharacterString(bacnet::CharacterString::utf8(text)).into(),
                priority: None,
            }],
            multiple: true,
            timestamped: false,
            initial: false,
        }
    }

    fn now() -> (bacnet::Date, bacnet::Time) {
        bacnet::civil::local_date_time(0, 0)
    }

    #[test]
    fn one_notification_per_process_with_the_soonest_end_of_its_references() {
        let device = ObjectIdentifier::new(ObjectType::DEVICE, 1).unwrap();
        // An indefinite reference (0) and one with 300 s left: 300, not
        // "indefinite", or the subscriber would never renew the other.
        let gathered = gather_multiple(vec![changed(av(1), 0, "a"), changed(av(2), 300, "b")], device, now());
        assert_eq!(gathered.len(), 1);
        let body = &gathered[0].2;
        assert_eq!(body.time_remaining, 300);
        assert_eq!(body.notifications.len(), 2);
    }

    #[test]
    fn a_notification_too_long_for_one_apdu_is_cut_by_object_and_by_value() {
        let device = ObjectIdentifier::new(ObjectType::DEVICE, 1).unwrap();
        let long = "x".repeat(200);
        let drained: Vec<_> = (1..=12).map(|i| changed(av(i), 60, &long)).collect();
        let (to, _, body) = gather_multiple(drained, device, now()).remove(0);
        let limit = max_body(&to);
        let parts = fit_to_apdu(body.clone(), limit);
        assert!(parts.len() > 1);
        for p in &parts {
            assert!(p.to_vec().len() <= limit, "{} > {limit}", p.to_vec().len());
        }
        let objects: Vec<_> = parts.iter().flat_map(|p| p.notifications.iter().map(|o| o.object)).collect();
        assert_eq!(objects, (1..=12).map(av).collect::<Vec<_>>(), "every object once, in order");
        assert_eq!(fit_to_apdu(parts[0].clone(), limit), vec![parts[0].clone()], "what fits is left whole");
    }
}
