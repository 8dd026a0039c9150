//! Alarms and events (Clause 13) for a served device: the host side of its
//! model's intrinsic reporting.
//!
//! The model finds its objects' Event_State transitions and hands them over
//! (`host.event-transitions`, through the change feed); the device's
//! notifier task sends each to the recipients of the object's Notification
//! Class ([`super::notification_class`], host-owned) whose days, hours and
//! transitions match, as a ConfirmedEventNotification (through the
//! station's client state machine: retried, and counted when acknowledged
//! or failed) or an UnconfirmedEventNotification. The services a front end
//! uses are executed here: AcknowledgeAlarm (time stamp checked against
//! Event_Time_Stamps, then the model sets Acked_Transitions and the
//! recipients get an ack-notification), GetEventInformation (Object_List
//! order, paged by what the answer has room for), GetAlarmSummary and
//! GetEnrollmentSummary, all read through the model's properties.
//!
//! A recipient given as a device is found by a Who-Is for its instance
//! (broadcast on the notifier's port) and its I-Am; the address is kept for
//! [`BINDING_LIFETIME`] and then asked again. A notification waits at most
//! [`BINDING_TIMEOUT`] for its recipient's I-Am (at most [`MAX_AWAITING`]
//! wait), then counts as unreachable.
//!
//! Partial, on purpose: addresses on another network are not reached
//! (counted as unreachable); Event Enrollment objects are not built.
//!
//! Must never: hold a lock across an await, send a notification for a
//! class the device does not have, or drop one without counting it.

use super::dispatch::{Failure, Server};
use bacnet::codec::Reader;
use bacnet::enums::{
    AcknowledgmentFilter, ConfirmedServiceChoice, ErrorClass, ErrorCode, EventState, EventStateFilter, EventType,
    NotifyType, ObjectType, PropertyIdentifier as P, UnconfirmedServiceChoice,
};
use bacnet::services::{
    AcknowledgeAlarmRequest, AlarmSummary, BacnetError, Destination, EnrollmentSummary, EventNotification,
    EventSummary, GetAlarmSummaryAck, GetEnrollmentSummaryAck, GetEnrollmentSummaryRequest, GetEventInformationAck,
    GetEventInformationRequest, NotificationParameters, ServiceCodec, TimeStamp,
};
use bacnet::{AnyValue, BitString, CharacterString, ObjectIdentifier, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use trellis_model::{EventTransition, ObjectModel, PropertyTarget};
use trellis_net::DeviceAddress;

/// Counters of the alarm notifier, for status and tests.
#[derive(Debug, Default)]
pub struct AlarmStats {
    /// Transitions the model reported.
    pub transitions: AtomicU64,
    /// UnconfirmedEventNotifications sent.
    pub unconfirmed_sent: AtomicU64,
    /// ConfirmedEventNotifications handed to the client state machine.
    pub confirmed_queued: AtomicU64,
    /// ConfirmedEventNotifications the recipient acknowledged.
    pub confirmed_acknowledged: AtomicU64,
    /// ConfirmedEventNotifications that failed after their retries, or
    /// could not be queued.
    pub confirmed_failed: AtomicU64,
    /// Notifications that could not be sent (socket error).
    pub send_failed: AtomicU64,
    /// Recipients that could not be reached: a device recipient (not
    /// resolved yet), an address on another network or one this port does
    /// not speak.
    pub unreachable: AtomicU64,
    /// Transitions of an object whose Notification Class the device does
    /// not have.
    pub no_class: AtomicU64,
    /// Notifications not sent because DeviceCommunicationControl disabled
    /// initiation.
    pub suppressed: AtomicU64,
}

/// How long a device recipient's address, learned from its I-Am, is used
/// before it is asked again.
pub const BINDING_LIFETIME: Duration = Duration::from_secs(300);
/// How long a notification waits for its device recipient's I-Am.
pub const BINDING_TIMEOUT: Duration = Duration::from_secs(3);
/// Notifications that may wait for an I-Am at once; past that they count
/// as unreachable.
pub const MAX_AWAITING: usize = 256;
/// Device recipients whose address is kept at once.
const MAX_BINDINGS: usize = 1024;

/// A notification waiting for its device recipient's address.
#[derive(Debug)]
struct Awaiting {
    instance: u32,
    confirmed: bool,
    notification: EventNotification,
    since: Instant,
}

/// One device's alarm machinery.
#[derive(Debug, Default)]
pub struct Alarms {
    /// What was sent and what failed.
    pub stats: AlarmStats,
    /// Acknowledgment notifications waiting for the notifier.
    queued: Mutex<Vec<EventNotification>>,
    /// Device recipients' addresses, by instance, and when learned.
    bindings: Mutex<HashMap<u32, (DeviceAddress, Instant)>>,
    /// Notifications waiting for an I-Am.
    awaiting: Mutex<Vec<Awaiting>>,
    /// Devices another part of the host asked an address for (a schedule's
    /// writes): their I-Am is kept too.
    wanted: Mutex<HashMap<u32, Instant>>,
    /// Wakes the notifier: an acknowledgment queued its notification, or a
    /// device recipient's I-Am came.
    pub(crate) wake: Notify,
}

impl Alarms {
    /// The address of device recipient `instance`, if known and fresh.
    pub(crate) fn binding(&self, instance: u32) -> Option<DeviceAddress> {
        let bindings = self.bindings.lock().unwrap_or_else(PoisonError::into_inner);
        bindings.get(&instance).filter(|(_, at)| at.elapsed() < BINDING_LIFETIME).map(|(a, _)| a.clone())
    }

    /// An I-Am from `instance` at `address`: kept when a notification waits
    /// for it or it is a recipient already bound (other devices' I-Ams are
    /// not remembered).
    pub(crate) fn i_am(&self, instance: u32, address: &DeviceAddress) {
        let awaited =
            self.awaiting.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|a| a.instance == instance);
        let wanted = self.wanted.lock().unwrap_or_else(PoisonError::into_inner).remove(&instance).is_some();
        let awaited = awaited || wanted;
        let mut bindings = self.bindings.lock().unwrap_or_else(PoisonError::into_inner);
        if !awaited && !bindings.contains_key(&instance) {
            return;
        }
        if bindings.len() >= MAX_BINDINGS && !bindings.contains_key(&instance) {
            bindings.retain(|_, (_, at)| at.elapsed() < BINDING_LIFETIME);
        }
        if bindings.len() < MAX_BINDINGS || bindings.contains_key(&instance) {
            bindings.insert(instance, (address.clone(), Instant::now()));
        }
        drop(bindings);
        if awaited {
            self.wake.notify_one();
        }
    }

    /// Keep the next I-Am of device `instance` (a write will need its
    /// address); at most [`MAX_BINDINGS`] devices are asked for at once.
    pub(crate) fn want(&self, instance: u32) {
        let mut wanted = self.wanted.lock().unwrap_or_else(PoisonError::into_inner);
        if wanted.len() >= MAX_BINDINGS {
            // Those that never answered give up their place.
            wanted.retain(|_, asked| asked.elapsed() < BINDING_LIFETIME);
        }
        if wanted.len() < MAX_BINDINGS {
            wanted.insert(instance, Instant::now());
        }
    }

    /// Park `n` for device recipient `instance`; whether a Who-Is should go
    /// out (none was sent for it in the last second); `None` when too many
    /// wait already.
    fn park(&self, instance: u32, confirmed: bool, notification: EventNotification) -> Option<bool> {
        let mut awaiting = self.awaiting.lock().unwrap_or_else(PoisonError::into_inner);
        if awaiting.len() >= MAX_AWAITING {
            return None;
        }
        let asked = awaiting.iter().any(|a| a.instance == instance && a.since.elapsed() < Duration::from_secs(1));
        awaiting.push(Awaiting { instance, confirmed, notification, since: Instant::now() });
        Some(!asked)
    }

    /// Device_Address_Binding: the device recipients whose address is
    /// known, as (Device object identifier, BACnetAddress), in instance
    /// order.
    pub fn device_address_binding(&self) -> AnyValue {
        let bindings = self.bindings.lock().unwrap_or_else(PoisonError::into_inner);
        let mut fresh: Vec<(&u32, &DeviceAddress)> =
            bindings.iter().filter(|(_, (_, at))| at.elapsed() < BINDING_LIFETIME).map(|(i, (a, _))| (i, a)).collect();
        fresh.sort_by_key(|(i, _)| **i);
        let mut out = Vec::new();
        for (instance, address) in fresh {
            let (net, mac) = match &address.remote {
                Some(r) => (r.net, r.mac.clone()),
                None => (0, address.link.mac_octets()),
            };
            let device = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: *instance };
            out.extend([
                bacnet::Element::Application(Value::ObjectIdentifier(device)),
                bacnet::Element::Application(Value::Unsigned(u64::from(net))),
                bacnet::Element::Application(Value::OctetString(mac)),
            ]);
        }
        AnyValue(out)
    }

    /// When the oldest waiting notification gives up.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let awaiting = self.awaiting.lock().unwrap_or_else(PoisonError::into_inner);
        awaiting.iter().map(|a| a.since + BINDING_TIMEOUT).min()
    }

    /// The waiting notifications whose recipient is now known (with its
    /// address), and the number that gave up.
    fn ready(&self) -> (Vec<(DeviceAddress, bool, EventNotification)>, u64) {
        let mut awaiting = self.awaiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ready = Vec::new();
        let mut expired = 0;
        awaiting.retain_mut(|a| {
            if let Some(to) = self.binding(a.instance) {
                let n = std::mem::replace(&mut a.notification, placeholder());
                ready.push((to, a.confirmed, n));
                return false;
            }
            if a.since.elapsed() >= BINDING_TIMEOUT {
                expired += 1;
                return false;
            }
            true
        });
        (ready, expired)
    }

    fn queue(&self, n: EventNotification) {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(n);
        self.wake.notify_one();
    }

    pub(crate) fn take_queued(&self) -> Vec<EventNotification> {
        std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

pub use bacnet::event::transition_index;

/// The notification of a model's transition, before its recipient's
/// process identifier is filled in; `None` when the class is unknown.
pub(crate) fn notification_of<M: ObjectModel>(server: &Server<M>, t: &EventTransition) -> Option<EventNotification> {
    let class = server.host().notification_classes.class(t.notification_class)?;
    let (date, time) = t.time.local_date_time();
    Some(EventNotification {
        process_identifier: 0,
        initiating_device: server.device_id(),
        event_object: t.object,
        time_stamp: TimeStamp::DateTime(date, time),
        notification_class: t.notification_class,
        priority: u8::try_from(class.priority[transition_index(t.to)]).unwrap_or(u8::MAX),
        event_type: t.event_type,
        message_text: t.message_text.as_deref().map(CharacterString::utf8),
        notify_type: t.notify_type,
        ack_required: Some(t.ack_required),
        from_state: Some(t.from),
        to_state: t.to,
        event_values: NotificationParameters::decode(&t.event_values).ok(),
    })
}

/// Whether `d` wants a notification into `to` at local `now`.
fn matches(d: &Destination, to: EventState, now: (bacnet::Date, bacnet::Time)) -> bool {
    let (date, time) = now;
    let day = usize::from(date.weekday.saturating_sub(1));
    let bit = |b: &BitString, i: usize| i < b.len() && b.get(i);
    let key = |t: bacnet::Time| (t.hour, t.minute, t.second, t.hundredths);
    bit(&d.transitions, transition_index(to))
        && (date.weekday > 7 || bit(&d.valid_days, day))
        && key(d.from_time) <= key(time)
        && key(time) <= key(d.to_time)
}

/// Where notifications leave: the notifier's sink, with how a recipient's
/// address reads on its port.
pub(crate) trait EventSink: super::cov::NotificationSink {
    /// A station on the local network of this port by its MAC address, if
    /// the MAC is one this port speaks.
    fn local_station(&self, mac: &[u8]) -> Option<DeviceAddress>;
    /// Broadcast an unconfirmed request on this port's network (a Who-Is
    /// for a device recipient).
    fn broadcast(
        &self,
        service: UnconfirmedServiceChoice,
        body: Vec<u8>,
    ) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
}

/// What a taken notification leaves behind (never sent).
fn placeholder() -> EventNotification {
    EventNotification {
        process_identifier: 0,
        initiating_device: ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 0 },
        event_object: ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 0 },
        time_stamp: TimeStamp::SequenceNumber(0),
        notification_class: 0,
        priority: 0,
        event_type: EventType::CHANGE_OF_STATE,
        message_text: None,
        notify_type: NotifyType::EVENT,
        ack_required: None,
        from_state: None,
        to_state: EventState::NORMAL,
        event_values: None,
    }
}

/// Send the notifications whose device recipient answered, and count those
/// that waited too long.
pub(crate) async fn send_awaiting<M: ObjectModel, S: EventSink>(server: &Server<M>, sink: &S) {
    let (ready, expired) = server.alarms().ready();
    if expired > 0 {
        server.alarms().stats.unreachable.fetch_add(expired, Ordering::Relaxed);
        tracing::warn!(notifications = expired, "no I-Am from a device recipient in time: notifications not sent");
    }
    for (to, confirmed, n) in ready {
        deliver(server, sink, to, confirmed, &n).await;
    }
}

/// Send one notification to one recipient, counted.
async fn deliver<M: ObjectModel, S: EventSink>(
    server: &Server<M>,
    sink: &S,
    to: DeviceAddress,
    confirmed: bool,
    n: &EventNotification,
) {
    let alarms = server.alarms();
    let body = n.to_vec();
    if confirmed {
        if sink.confirmed(to, ConfirmedServiceChoice::CONFIRMED_EVENT_NOTIFICATION, body) {
            alarms.stats.confirmed_queued.fetch_add(1, Ordering::Relaxed);
        } else {
            alarms.stats.confirmed_failed.fetch_add(1, Ordering::Relaxed);
        }
    } else {
        match sink.unconfirmed(&to, UnconfirmedServiceChoice::UNCONFIRMED_EVENT_NOTIFICATION, body).await {
            Ok(()) => alarms.stats.unconfirmed_sent.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                tracing::warn!(to = %to, error = %e, "event notification not sent");
                alarms.stats.send_failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Send `n` (its process identifier filled in per recipient) to every
/// recipient of its class that wants it now.
pub(crate) async fn send_to_recipients<M: ObjectModel, S: EventSink>(
    server: &Server<M>,
    sink: &S,
    mut n: EventNotification,
) {
    let alarms = server.alarms();
    let Some(class) = server.host().notification_classes.class(n.notification_class) else {
        alarms.stats.no_class.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(object = %n.event_object, class = n.notification_class, "no such Notification Class: transition not notified");
        return;
    };
    if !server.communication().initiates() {
        alarms.stats.suppressed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let now = server.model().clock().unwrap_or_default().now().local_date_time();
    for d in class.recipients.iter().filter(|d| matches(d, n.to_state, now)) {
        n.process_identifier = d.process_identifier;
        let to = match &d.recipient {
            bacnet::cov::Recipient::Address { network_number: 0, mac_address } => sink.local_station(mac_address),
            bacnet::cov::Recipient::Device(device) => match alarms.binding(device.instance) {
                Some(to) => Some(to),
                None => {
                    match alarms.park(device.instance, d.issue_confirmed_notifications, n.clone()) {
                        Some(true) => {
                            let range = Some((device.instance, device.instance));
                            let who_is = bacnet::services::WhoIs { range }.to_vec();
                            if let Err(e) = sink.broadcast(UnconfirmedServiceChoice::WHO_IS, who_is).await {
                                tracing::warn!(device = device.instance, error = %e, "Who-Is for an event recipient not sent");
                            }
                        }
                        Some(false) => {}
                        None => {
                            alarms.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(
                                device = device.instance,
                                "too many notifications wait for an I-Am: not sent"
                            );
                        }
                    }
                    continue;
                }
            },
            _ => None,
        };
        let Some(to) = to else {
            alarms.stats.unreachable.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(recipient = ?d.recipient, "event recipient not reachable from this port (another network, or a MAC this port does not speak)");
            continue;
        };
        deliver(server, sink, to, d.issue_confirmed_notifications, &n).await;
    }
}

/// Notify the model's transitions, in order.
pub(crate) async fn notify_transitions<M: ObjectModel, S: EventSink>(
    server: &Server<M>,
    sink: &S,
    transitions: Vec<EventTransition>,
) {
    for t in transitions {
        server.alarms().stats.transitions.fetch_add(1, Ordering::Relaxed);
        match notification_of(server, &t) {
            Some(n) => send_to_recipients(server, sink, n).await,
            None => {
                server.alarms().stats.no_class.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(object = %t.object, class = t.notification_class, "no such Notification Class: transition not notified");
            }
        }
    }
}

/// The object types whose intrinsic reporting the guest SDK's store
/// implements: the only ones the summaries look at.
fn may_report(t: ObjectType) -> bool {
    matches!(
        t,
        ObjectType::ANALOG_INPUT
            | ObjectType::ANALOG_OUTPUT
            | ObjectType::ANALOG_VALUE
            | ObjectType::BINARY_INPUT
            | ObjectType::BINARY_VALUE
            | ObjectType::MULTI_STATE_INPUT
            | ObjectType::MULTI_STATE_VALUE
    )
}

/// The event type of an object's algorithm (the store's: OUT_OF_RANGE for
/// analog objects, CHANGE_OF_STATE for the others).
fn algorithm_event_type(t: ObjectType) -> EventType {
    match t {
        ObjectType::ANALOG_INPUT | ObjectType::ANALOG_OUTPUT | ObjectType::ANALOG_VALUE => EventType::OUT_OF_RANGE,
        _ => EventType::CHANGE_OF_STATE,
    }
}

/// What the summaries need of one object, read through the model.
#[derive(Debug, Clone)]
struct EventInfo {
    object: ObjectIdentifier,
    state: EventState,
    acked: BitString,
    stamps: [TimeStamp; 3],
    notify_type: NotifyType,
    enable: BitString,
    class: u32,
}

impl EventInfo {
    fn all_acked(&self) -> bool {
        (0..3).all(|i| i >= self.acked.len() || self.acked.get(i))
    }
}

/// What the summaries read of each object. An object whose
/// Event_Detection_Enable is FALSE is not considered (Clause 12,
/// Event_Detection_Enable).
const EVENT_PROPERTIES: [P; 7] = [
    P::EVENT_STATE,
    P::ACKED_TRANSITIONS,
    P::EVENT_TIME_STAMPS,
    P::NOTIFY_TYPE,
    P::EVENT_ENABLE,
    P::NOTIFICATION_CLASS,
    P::EVENT_DETECTION_ENABLE,
];

fn error(class: ErrorClass, code: ErrorCode) -> Failure {
    Failure::Error(BacnetError { class, code })
}

fn primitive(v: &AnyValue) -> Option<&Value> {
    v.as_primitive()
}

fn time_stamps(v: &AnyValue) -> Option<[TimeStamp; 3]> {
    let mut octets = Vec::new();
    v.encode(&mut octets);
    let mut r = Reader::new(&octets);
    let stamps = [
        TimeStamp::decode_from(&mut r).ok()?,
        TimeStamp::decode_from(&mut r).ok()?,
        TimeStamp::decode_from(&mut r).ok()?,
    ];
    r.expect_end().ok()?;
    Some(stamps)
}

impl<M: ObjectModel> Server<M> {
    /// The object's event information; `Ok(None)` for an object without
    /// intrinsic reporting; the object's own read error when the first
    /// property fails for another reason than unknown-property.
    async fn event_infos(&self, objects: &[ObjectIdentifier]) -> Result<Vec<Result<EventInfo, BacnetError>>, Failure> {
        let targets: Vec<PropertyTarget> = objects
            .iter()
            .flat_map(|o| EVENT_PROPERTIES.map(|property| PropertyTarget { object: *o, property, array_index: None }))
            .collect();
        let lists = self.read_targets(&targets).await?;
        let mut out = Vec::with_capacity(objects.len());
        for (object, reads) in objects.iter().zip(lists.chunks(EVENT_PROPERTIES.len())) {
            let values: Result<Vec<&AnyValue>, BacnetError> = reads
                .iter()
                .map(|l| l.first().map_or(Err(no_alarm()), |r| r.outcome.as_ref().map_err(|e| *e)))
                .collect();
            let info = match values {
                Err(e) if e.code == ErrorCode::UNKNOWN_PROPERTY => Err(no_alarm()),
                Err(e) => Err(e),
                Ok(v) => parse_info(*object, &v).ok_or(no_alarm()),
            };
            out.push(info);
        }
        Ok(out)
    }

    /// The model's objects that may report, in Object_List order.
    async fn reporting_candidates(&self) -> Result<Vec<ObjectIdentifier>, Failure> {
        let objects = self.model().objects().await?;
        Ok(objects.into_iter().map(|o| o.id).filter(|o| may_report(o.object_type)).collect())
    }

    /// AcknowledgeAlarm (Clause 13.5).
    pub(super) async fn acknowledge_alarm(&self, r: AcknowledgeAlarmRequest) -> Result<(), Failure> {
        let object = r.event_object;
        let info = self.event_infos(&[object]).await?.remove(0).map_err(Failure::Error)?;
        let i = transition_index(r.event_state_acknowledged);
        // A transition that has not happened has an unspecified time stamp:
        // it cannot be acknowledged.
        let happened = !matches!(info.stamps[i], TimeStamp::DateTime(d, _) if d.year == 255);
        if !happened || info.stamps[i] != r.time_stamp {
            return Err(error(ErrorClass::SERVICES, ErrorCode::INVALID_TIME_STAMP));
        }
        self.model().acknowledge(object, i as u8).await?.map_err(Failure::Error)?;
        let class = self.host().notification_classes.class(info.class);
        let event_type = if r.event_state_acknowledged == EventState::FAULT {
            EventType::CHANGE_OF_RELIABILITY
        } else {
            algorithm_event_type(object.object_type)
        };
        self.alarms().queue(EventNotification {
            process_identifier: 0,
            initiating_device: self.device_id(),
            event_object: object,
            time_stamp: r.time_of_acknowledgment,
            notification_class: info.class,
            priority: class.map_or(u8::MAX, |c| u8::try_from(c.priority[i]).unwrap_or(u8::MAX)),
            event_type,
            message_text: None,
            notify_type: NotifyType::ACK_NOTIFICATION,
            ack_required: None,
            from_state: None,
            to_state: r.event_state_acknowledged,
            event_values: None,
        });
        Ok(())
    }

    /// GetEventInformation (Clause 13.9): objects in an offnormal or fault
    /// state or with a transition not acknowledged, in Object_List order
    /// after `last_received_object`, as many as the answer has room for.
    pub(super) async fn get_event_information(
        &self,
        r: GetEventInformationRequest,
        room: super::dispatch::AnswerRoom,
    ) -> Result<Vec<u8>, Failure> {
        let mut candidates = self.reporting_candidates().await?;
        if let Some(last) = r.last_received_object
            && let Some(at) = candidates.iter().position(|o| *o == last)
        {
            candidates.drain(..=at);
        }
        let mut ack = GetEventInformationAck { summaries: Vec::new(), more_events: false };
        for info in self.event_infos(&candidates).await?.into_iter().flatten() {
            if info.state == EventState::NORMAL && info.all_acked() {
                continue;
            }
            let priorities = self.host().notification_classes.class(info.class).map_or([255; 3], |c| c.priority);
            ack.summaries.push(EventSummary {
                object: info.object,
                event_state: info.state,
                acknowledged_transitions: info.acked.clone(),
                event_time_stamps: info.stamps,
                notify_type: info.notify_type,
                event_enable: info.enable.clone(),
                event_priorities: priorities,
            });
            if ack.to_vec().len() > room.octets {
                ack.summaries.pop();
                if ack.summaries.is_empty() {
                    // Not even one summary fits: paging would never end.
                    return Err(Failure::Abort(room.too_long()));
                }
                ack.more_events = true;
                break;
            }
        }
        Ok(ack.to_vec())
    }

    /// GetAlarmSummary (Clause 13.10): objects with Notify_Type ALARM
    /// whose Event_State is not NORMAL.
    pub(super) async fn get_alarm_summary(&self) -> Result<Vec<u8>, Failure> {
        let candidates = self.reporting_candidates().await?;
        let summaries = self
            .event_infos(&candidates)
            .await?
            .into_iter()
            .flatten()
            .filter(|i| i.state != EventState::NORMAL && i.notify_type == NotifyType::ALARM)
            .map(|i| AlarmSummary { object: i.object, alarm_state: i.state, acknowledged_transitions: i.acked })
            .collect();
        Ok(GetAlarmSummaryAck(summaries).to_vec())
    }

    /// GetEnrollmentSummary (Clause 13.11): the objects with intrinsic
    /// reporting that pass every filter given.
    pub(super) async fn get_enrollment_summary(&self, r: GetEnrollmentSummaryRequest) -> Result<Vec<u8>, Failure> {
        let candidates = self.reporting_candidates().await?;
        let mut out = Vec::new();
        for info in self.event_infos(&candidates).await?.into_iter().flatten() {
            let class = self.host().notification_classes.class(info.class);
            let priority = class.as_ref().map_or(255, |c| c.priority[transition_index(info.state)]);
            let priority = u8::try_from(priority).unwrap_or(u8::MAX);
            // The enrollment's event type is its algorithm's, in FAULT too.
            let event_type = algorithm_event_type(info.object.object_type);
            let acked = match r.acknowledgment_filter {
                AcknowledgmentFilter::ACKED => info.all_acked(),
                AcknowledgmentFilter::NOT_ACKED => !info.all_acked(),
                _ => true,
            };
            let state = match r.event_state_filter {
                None | Some(EventStateFilter::ALL) => true,
                Some(EventStateFilter::OFFNORMAL) => !matches!(info.state, EventState::NORMAL | EventState::FAULT),
                Some(EventStateFilter::FAULT) => info.state == EventState::FAULT,
                Some(EventStateFilter::NORMAL) => info.state == EventState::NORMAL,
                Some(EventStateFilter::ACTIVE) => info.state != EventState::NORMAL,
                Some(_) => false,
            };
            let enrolled = match &r.enrollment_filter {
                None => true,
                Some(f) => class.as_ref().is_some_and(|c| {
                    c.recipients
                        .iter()
                        .any(|d| d.recipient == f.recipient && d.process_identifier == f.process_identifier)
                }),
            };
            let keep = acked
                && state
                && enrolled
                && r.event_type_filter.is_none_or(|t| t == event_type)
                && r.priority_filter.is_none_or(|(lo, hi)| (lo..=hi).contains(&priority))
                && r.notification_class_filter.is_none_or(|c| c == info.class);
            if keep {
                out.push(EnrollmentSummary {
                    object: info.object,
                    event_type,
                    event_state: info.state,
                    priority,
                    notification_class: Some(info.class),
                });
            }
        }
        Ok(GetEnrollmentSummaryAck(out).to_vec())
    }
}

fn no_alarm() -> BacnetError {
    BacnetError { class: ErrorClass::OBJECT, code: ErrorCode::NO_ALARM_CONFIGURED }
}

fn parse_info(object: ObjectIdentifier, v: &[&AnyValue]) -> Option<EventInfo> {
    let [state, acked, stamps, notify, enable, class, detection] = v else { return None };
    if primitive(detection)? != &Value::Boolean(true) {
        return None;
    }
    let bits = |v: &AnyValue| match primitive(v) {
        Some(Value::BitString(b)) => Some(b.clone()),
        _ => None,
    };
    Some(EventInfo {
        object,
        state: match primitive(state)? {
            Value::Enumerated(n) => EventState(*n),
            _ => return None,
        },
        acked: bits(acked)?,
        stamps: time_stamps(stamps)?,
        notify_type: match primitive(notify)? {
            Value::Enumerated(n) => NotifyType(*n),
            _ => return None,
        },
        enable: bits(enable)?,
        class: match primitive(class)? {
            Value::Unsigned(n) => u32::try_from(*n).ok()?,
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::Time;

    fn destination(days: &[bool], from: (u8, u8), to: (u8, u8), transitions: [bool; 3]) -> Destination {
        Destination {
            valid_days: BitString::from_bits(days),
            from_time: Time { hour: from.0, minute: from.1, second: 0, hundredths: 0 },
            to_time: Time { hour: to.0, minute: to.1, second: 59, hundredths: 99 },
            recipient: bacnet::cov::Recipient::Address {
                network_number: 0,
                mac_address: vec![127, 0, 0, 1, 0xBA, 0xC0],
            },
            process_identifier: 1,
            issue_confirmed_notifications: false,
            transitions: BitString::from_bits(&transitions),
        }
    }

    fn at(weekday: u8, hour: u8) -> (bacnet::Date, bacnet::Time) {
        (bacnet::Date { year: 126, month: 12, day: 3, weekday }, Time { hour, minute: 30, second: 0, hundredths: 0 })
    }

    /// What the notifier sent, as (to, service number, body); broadcasts
    /// have no address.
    type Datagram = (Option<DeviceAddress>, u8, Vec<u8>);

    #[derive(Default)]
    struct Sent(Mutex<Vec<Datagram>>);

    impl super::super::cov::NotificationSink for Sent {
        async fn unconfirmed(
            &self,
            to: &DeviceAddress,
            s: UnconfirmedServiceChoice,
            body: Vec<u8>,
        ) -> std::io::Result<()> {
            self.0.lock().unwrap().push((Some(to.clone()), s.0, body));
            Ok(())
        }
        fn confirmed(&self, to: DeviceAddress, s: ConfirmedServiceChoice, body: Vec<u8>) -> bool {
            self.0.lock().unwrap().push((Some(to), s.0, body));
            true
        }
    }

    impl EventSink for Sent {
        fn local_station(&self, _: &[u8]) -> Option<DeviceAddress> {
            None
        }
        async fn broadcast(&self, s: UnconfirmedServiceChoice, body: Vec<u8>) -> std::io::Result<()> {
            self.0.lock().unwrap().push((None, s.0, body));
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_device_recipient_is_found_by_who_is_and_told_once_its_i_am_comes() {
        let front_end = 389_100;
        let mut d = destination(&[true; 7], (0, 0), (23, 59), [true, true, true]);
        d.recipient =
            bacnet::cov::Recipient::Device(ObjectIdentifier { object_type: ObjectType::DEVICE, instance: front_end });
        let class = super::super::notification_class::NotificationClassConfig {
            instance: 1,
            name: "c".into(),
            description: None,
            priority: [10, 20, 30],
            ack_required: [false; 3],
            recipients: vec![d],
            writable: false,
        };
        let config = super::super::DeviceConfig { notification_classes: vec![class], ..Default::default() };
        let model = super::super::DeviceOnlyModel::new(4000, "dut");
        let server = super::super::build(model, config, 0).await.unwrap();
        let sent = Sent::default();
        let mut n = placeholder();
        n.notification_class = 1;
        n.to_state = EventState::HIGH_LIMIT;
        n.notify_type = NotifyType::ALARM;
        send_to_recipients(&server, &sent, n.clone()).await;
        send_to_recipients(&server, &sent, n).await;
        {
            let sent = sent.0.lock().unwrap();
            assert_eq!(sent.len(), 1, "one Who-Is for both");
            assert_eq!((sent[0].0.clone(), sent[0].1), (None, UnconfirmedServiceChoice::WHO_IS.0));
            let who_is = bacnet::services::WhoIs::decode(&sent[0].2).unwrap();
            assert_eq!(who_is.range, Some((front_end, front_end)));
        }
        // Another device's I-Am is not remembered; the recipient's is.
        let at = DeviceAddress::direct(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 47_809));
        server.alarms().i_am(777, &at);
        assert!(server.alarms().binding(777).is_none());
        // The recipient's I-Am, as the station hands it to the server.
        let i_am = bacnet::services::IAm {
            device: ObjectIdentifier { object_type: ObjectType::DEVICE, instance: front_end },
            max_apdu_length_accepted: 1476,
            segmentation_supported: bacnet::Segmentation::NO_SEGMENTATION,
            vendor_id: 555,
        };
        let mut apdu = Vec::new();
        bacnet::apdu::Apdu::UnconfirmedRequest { service: UnconfirmedServiceChoice::I_AM, body: &i_am.to_vec() }
            .encode(&mut apdu);
        assert!(server.handle(&at, &apdu, true).await.is_none(), "an I-Am is not answered");
        send_awaiting(&server, &sent).await;
        let sent = sent.0.lock().unwrap();
        assert_eq!(sent.len(), 3, "both notifications, to the address of the I-Am");
        for (to, service, body) in &sent[1..] {
            assert_eq!(
                (to.as_ref(), *service),
                (Some(&at), UnconfirmedServiceChoice::UNCONFIRMED_EVENT_NOTIFICATION.0)
            );
            assert_eq!(EventNotification::decode(body).unwrap().process_identifier, 1, "the destination's process");
        }
        assert_eq!(server.alarms().next_deadline(), None, "nothing waits");
        let binding = server.alarms().device_address_binding();
        assert_eq!(binding.0.len(), 3, "one (device, network, MAC): {binding:?}");
        assert_eq!(binding.0[2], bacnet::Element::Application(Value::OctetString(vec![127, 0, 0, 1, 0xBA, 0xC1])));
    }

    #[test]
    fn a_recipient_is_told_on_its_days_within_its_hours_of_the_transitions_it_asked_for() {
        let weekdays =
            destination(&[true, true, true, true, true, false, false], (8, 0), (17, 59), [true, false, true]);
        assert!(matches(&weekdays, EventState::HIGH_LIMIT, at(4, 9)), "Thursday 09:30");
        assert!(!matches(&weekdays, EventState::HIGH_LIMIT, at(6, 9)), "Saturday");
        assert!(!matches(&weekdays, EventState::HIGH_LIMIT, at(4, 18)), "after hours");
        assert!(!matches(&weekdays, EventState::FAULT, at(4, 9)), "to-fault not asked for");
        assert!(matches(&weekdays, EventState::NORMAL, at(4, 9)));
    }
}
