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
//! Partial, on purpose: recipients given as a device (not an address) are
//! not resolved (counted as unreachable), nor are addresses on another
//! network; Event Enrollment objects are not built.
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use tokio::sync::Notify;
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

/// One device's alarm machinery.
#[derive(Debug, Default)]
pub struct Alarms {
    /// What was sent and what failed.
    pub stats: AlarmStats,
    /// Acknowledgment notifications waiting for the notifier.
    queued: Mutex<Vec<EventNotification>>,
    /// Wakes the notifier: an acknowledgment queued its notification.
    pub(crate) wake: Notify,
}

impl Alarms {
    fn queue(&self, n: EventNotification) {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner).push(n);
        self.wake.notify_one();
    }

    pub(crate) fn take_queued(&self) -> Vec<EventNotification> {
        std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Event_Enable, Acked_Transitions and Event_Time_Stamps index of a
/// transition into `to`: 0 to-offnormal, 1 to-fault, 2 to-normal.
pub fn transition_index(to: EventState) -> usize {
    match to {
        EventState::FAULT => 1,
        EventState::NORMAL => 2,
        _ => 0,
    }
}

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
        let to = match &d.recipient {
            bacnet::cov::Recipient::Address { network_number: 0, mac_address } => sink.local_station(mac_address),
            _ => None,
        };
        let Some(to) = to else {
            alarms.stats.unreachable.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(recipient = ?d.recipient, "event recipient not reachable from this port (device recipients and other networks are not resolved yet)");
            continue;
        };
        n.process_identifier = d.process_identifier;
        let body = n.to_vec();
        if d.issue_confirmed_notifications {
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

const EVENT_PROPERTIES: [P; 6] = [
    P::EVENT_STATE,
    P::ACKED_TRANSITIONS,
    P::EVENT_TIME_STAMPS,
    P::NOTIFY_TYPE,
    P::EVENT_ENABLE,
    P::NOTIFICATION_CLASS,
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
        if info.stamps[i] != r.time_stamp {
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
            let event_type = if info.state == EventState::FAULT {
                EventType::CHANGE_OF_RELIABILITY
            } else {
                algorithm_event_type(info.object.object_type)
            };
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
    let [state, acked, stamps, notify, enable, class] = v else { return None };
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
