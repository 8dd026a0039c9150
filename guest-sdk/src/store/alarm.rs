//! Intrinsic reporting (Clause 13.2) of the store's point objects: the
//! properties an object gains when its spec names alarm conditions
//! ([`AlarmSpec`]), the event-state detection of `bacnet::event` run on
//! them, and the transitions handed to the host to notify.
//!
//! What is implemented, by object type:
//!
//! | objects | algorithm | properties |
//! |---|---|---|
//! | Analog Input, Output, Value | OUT_OF_RANGE | High_Limit, Low_Limit, Deadband, Limit_Enable |
//! | Binary Input, Value | CHANGE_OF_STATE | Alarm_Value |
//! | Multi-state Input, Value | CHANGE_OF_STATE, and FAULT on Fault_Values | Alarm_Values, Fault_Values |
//!
//! and for all of them Time_Delay, Time_Delay_Normal, Notification_Class,
//! Event_Enable, Acked_Transitions, Notify_Type, Event_Time_Stamps,
//! Event_Message_Texts, Event_Message_Texts_Config and
//! Event_Detection_Enable. Binary and Multi-state Outputs report
//! COMMAND_FAILURE in the standard, which needs Feedback_Value: not built,
//! [`Store::add`](super::Store::add) refuses an alarm spec on them.
//!
//! Rules kept here:
//! - A Reliability other than no-fault-detected (or a multi-state value
//!   in Fault_Values, which reads as multi-state-fault) moves the object
//!   to FAULT at once; those transitions are change-of-reliability
//!   notifications (Clause 13.2.5.2).
//! - Every transition is time-stamped (Event_Time_Stamps) and its
//!   configured message text kept (Event_Message_Texts). Only those
//!   Event_Enable enables go to the host; the others need no
//!   acknowledgment (their Acked_Transitions bit is set). Those that go
//!   wait for one when the host says their Notification Class requires it.
//! - Detection runs after every call that changed the object (a client's
//!   write, the model's update) and at the ticks while a Time_Delay runs:
//!   a delay is as precise as the host's tick interval.
//!
//! Must never: report a transition twice, or one Event_Enable disables.

use super::{Class, Kind, Object};
use crate::DateTime;
use crate::errors;
use crate::model::Write;
use crate::value::{as_boolean, as_enumerated, as_real, as_unsigned};
use bacnet::codec::BitString;
use bacnet::enums::{EventState, EventType, NotifyType, Reliability};
use bacnet::event::{Algorithm, Detector, Inputs, Monitored};
use bacnet::services::BacnetError;
use bacnet::services::{NotificationParameters, PropertyStates, PropertyValue, ServiceCodec};
use bacnet::{AnyValue, Element, PropertyIdentifier as P, Value};
use core::time::Duration;

/// The alarm conditions of a point object, for
/// [`ObjectSpec::alarm`](super::ObjectSpec::alarm).
///
/// ```
/// use trellis_guest_sdk::{AlarmSpec, ObjectSpec};
///
/// // A zone temperature alarming outside 16..=28 °C after a minute,
/// // told to Notification Class 1's recipients.
/// let zone = ObjectSpec::analog_input(1, "Zone Temperature")
///     .alarm(AlarmSpec::out_of_range(16.0, 28.0, 0.5).notification_class(1).time_delay(60));
/// // A filter switch alarming when active.
/// let filter = ObjectSpec::binary_input(2, "Filter Dirty").alarm(AlarmSpec::alarm_value(true));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmSpec {
    pub(crate) condition: Condition,
    pub(crate) notification_class: u32,
    pub(crate) notify_type: NotifyType,
    pub(crate) event_enable: [bool; 3],
    pub(crate) time_delay: u32,
    pub(crate) time_delay_normal: Option<u32>,
    pub(crate) message_texts: [String; 3],
}

/// The algorithm's parameters, by the class of object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Condition {
    OutOfRange { low: f32, high: f32, deadband: f32, low_enabled: bool, high_enabled: bool },
    AlarmValue(bool),
    AlarmValues { alarm: Vec<u32>, fault: Vec<u32> },
}

impl AlarmSpec {
    fn new(condition: Condition) -> Self {
        AlarmSpec {
            condition,
            notification_class: 0,
            notify_type: NotifyType::ALARM,
            event_enable: [true; 3],
            time_delay: 0,
            time_delay_normal: None,
            message_texts: Default::default(),
        }
    }

    /// OUT_OF_RANGE, for an analog object: offnormal above `high`
    /// (HIGH_LIMIT) or below `low` (LOW_LIMIT), normal again once back
    /// inside by `deadband`. Both limits enabled.
    pub fn out_of_range(low: f32, high: f32, deadband: f32) -> Self {
        Self::new(Condition::OutOfRange { low, high, deadband, low_enabled: true, high_enabled: true })
    }

    /// CHANGE_OF_STATE, for a binary object: offnormal while
    /// Present_Value is `active` (true) or inactive (false).
    pub fn alarm_value(active: bool) -> Self {
        Self::new(Condition::AlarmValue(active))
    }

    /// CHANGE_OF_STATE, for a multi-state object: offnormal while
    /// Present_Value is one of `states`.
    pub fn alarm_values(states: impl IntoIterator<Item = u32>) -> Self {
        Self::new(Condition::AlarmValues { alarm: states.into_iter().collect(), fault: Vec::new() })
    }

    /// Fault_Values of a multi-state object: in FAULT (Reliability
    /// multi-state-fault) while Present_Value is one of `states`.
    pub fn fault_values(mut self, states: impl IntoIterator<Item = u32>) -> Self {
        if let Condition::AlarmValues { fault, .. } = &mut self.condition {
            *fault = states.into_iter().collect();
        }
        self
    }

    /// Only the high limit (Limit_Enable) of an OUT_OF_RANGE alarm.
    pub fn high_limit_only(mut self) -> Self {
        if let Condition::OutOfRange { low_enabled, .. } = &mut self.condition {
            *low_enabled = false;
        }
        self
    }

    /// Only the low limit (Limit_Enable) of an OUT_OF_RANGE alarm.
    pub fn low_limit_only(mut self) -> Self {
        if let Condition::OutOfRange { high_enabled, .. } = &mut self.condition {
            *high_enabled = false;
        }
        self
    }

    /// Notification_Class: the host's Notification Class object whose
    /// recipients are told (0 by default).
    pub fn notification_class(mut self, class: u32) -> Self {
        self.notification_class = class;
        self
    }

    /// Notify_Type EVENT instead of ALARM.
    pub fn as_event(mut self) -> Self {
        self.notify_type = NotifyType::EVENT;
        self
    }

    /// Event_Enable: which transitions are notified (to-offnormal,
    /// to-fault, to-normal; all by default).
    pub fn event_enable(mut self, to_offnormal: bool, to_fault: bool, to_normal: bool) -> Self {
        self.event_enable = [to_offnormal, to_fault, to_normal];
        self
    }

    /// Time_Delay in seconds: how long an offnormal condition must hold.
    pub fn time_delay(mut self, seconds: u32) -> Self {
        self.time_delay = seconds;
        self
    }

    /// Time_Delay_Normal in seconds (Time_Delay when not given).
    pub fn time_delay_normal(mut self, seconds: u32) -> Self {
        self.time_delay_normal = Some(seconds);
        self
    }

    /// Event_Message_Texts_Config: the message text of to-offnormal,
    /// to-fault and to-normal notifications.
    pub fn message_texts(mut self, to_offnormal: &str, to_fault: &str, to_normal: &str) -> Self {
        self.message_texts = [to_offnormal.into(), to_fault.into(), to_normal.into()];
        self
    }

    /// Whether this spec fits an object of `kind` (outputs other than
    /// analog are refused: COMMAND_FAILURE is not built).
    pub(crate) fn fits(&self, kind: Kind, output: bool) -> bool {
        match (&self.condition, kind) {
            (Condition::OutOfRange { low, high, deadband, .. }, Kind::Analog) => {
                low.is_finite() && high.is_finite() && deadband.is_finite() && *deadband >= 0.0
            }
            (Condition::AlarmValue(_), Kind::Binary) => !output,
            (Condition::AlarmValues { .. }, Kind::MultiState) => !output,
            _ => false,
        }
    }
}

/// A transition the store hands to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventReport {
    /// The object.
    pub object: bacnet::ObjectIdentifier,
    /// The notification's event type.
    pub event_type: EventType,
    /// The state left.
    pub from: EventState,
    /// The state entered.
    pub to: EventState,
    /// Alarm or event.
    pub notify_type: NotifyType,
    /// Notification_Class.
    pub notification_class: u32,
    /// The configured message text, if not empty.
    pub message_text: Option<String>,
    /// When it took effect.
    pub time: DateTime,
    /// BACnetNotificationParameters, encoded.
    pub event_values: Vec<u8>,
}

/// An object's intrinsic reporting: configuration and state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reporting {
    pub(crate) spec: AlarmSpec,
    pub(crate) detection_enabled: bool,
    pub(crate) detector: Detector,
    pub(crate) acked: [bool; 3],
    /// Event_Time_Stamps: local date and time of each kind's last transition.
    pub(crate) time_stamps: [Option<(bacnet::Date, bacnet::Time)>; 3],
    pub(crate) texts: [String; 3],
    /// A client wrote the configuration (kept across a hot swap).
    pub(crate) written: bool,
    /// The Reliability that put the object in FAULT (a change to another
    /// fault value is a FAULT-to-FAULT transition).
    pub(crate) fault_reliability: Option<Reliability>,
}

pub(crate) use bacnet::event::transition_index;

impl Reporting {
    pub(crate) fn new(spec: AlarmSpec) -> Self {
        Reporting {
            spec,
            detection_enabled: true,
            detector: Detector::new(),
            acked: [true; 3],
            time_stamps: [None; 3],
            texts: Default::default(),
            written: false,
            fault_reliability: None,
        }
    }

    fn algorithm(&self) -> Algorithm {
        match &self.spec.condition {
            Condition::OutOfRange { low, high, deadband, low_enabled, high_enabled } => Algorithm::OutOfRange {
                low_limit: *low,
                high_limit: *high,
                deadband: *deadband,
                low_enabled: *low_enabled,
                high_enabled: *high_enabled,
            },
            Condition::AlarmValue(active) => Algorithm::ChangeOfState { alarm_values: vec![u32::from(*active)] },
            Condition::AlarmValues { alarm, .. } => Algorithm::ChangeOfState { alarm_values: alarm.clone() },
        }
    }

    /// The algorithm's event type.
    pub(crate) fn event_type(&self) -> EventType {
        match self.spec.condition {
            Condition::OutOfRange { .. } => EventType::OUT_OF_RANGE,
            _ => EventType::CHANGE_OF_STATE,
        }
    }

    /// True while a Time_Delay runs (detection is due at the ticks).
    pub(crate) fn waiting(&self) -> bool {
        self.detector.poll_timeout().is_some()
    }
}

impl Reporting {
    /// A client's write of a configuration property: Time_Delay,
    /// Time_Delay_Normal, Notification_Class, High_Limit, Low_Limit,
    /// Deadband (not negative), Limit_Enable, Alarm_Value, Event_Enable,
    /// Notify_Type (alarm or event) and Event_Detection_Enable. Alarm_Values,
    /// Fault_Values and Event_Message_Texts_Config are the model's
    /// (write-access-denied), the state properties too.
    pub(crate) fn write(&mut self, w: &Write) -> Result<(), BacnetError> {
        let v = &w.value;
        let spec = &mut self.spec;
        let seconds = |v: &AnyValue| u32::try_from(as_unsigned(v)?).map_err(|_| errors::VALUE_OUT_OF_RANGE);
        let finite = |v: &AnyValue| {
            let x = as_real(v)?;
            if x.is_finite() { Ok(x) } else { Err(errors::VALUE_OUT_OF_RANGE) }
        };
        match (w.target.property, &mut spec.condition) {
            (P::TIME_DELAY, _) => spec.time_delay = seconds(v)?,
            (P::TIME_DELAY_NORMAL, _) => spec.time_delay_normal = Some(seconds(v)?),
            (P::NOTIFICATION_CLASS, _) => spec.notification_class = seconds(v)?,
            (P::HIGH_LIMIT, Condition::OutOfRange { high, .. }) => *high = finite(v)?,
            (P::LOW_LIMIT, Condition::OutOfRange { low, .. }) => *low = finite(v)?,
            (P::DEADBAND, Condition::OutOfRange { deadband, .. }) => {
                let x = finite(v)?;
                if x < 0.0 {
                    return Err(errors::VALUE_OUT_OF_RANGE);
                }
                *deadband = x;
            }
            (P::LIMIT_ENABLE, Condition::OutOfRange { low_enabled, high_enabled, .. }) => {
                let bits = bits(v, 2)?;
                (*low_enabled, *high_enabled) = (bits[0], bits[1]);
            }
            (P::ALARM_VALUE, Condition::AlarmValue(active)) => {
                *active = match as_enumerated(v)? {
                    0 => false,
                    1 => true,
                    _ => return Err(errors::VALUE_OUT_OF_RANGE),
                }
            }
            (P::EVENT_ENABLE, _) => {
                let bits = bits(v, 3)?;
                spec.event_enable = [bits[0], bits[1], bits[2]];
            }
            (P::NOTIFY_TYPE, _) => {
                spec.notify_type = match as_enumerated(v)? {
                    0 => NotifyType::ALARM,
                    1 => NotifyType::EVENT,
                    _ => return Err(errors::VALUE_OUT_OF_RANGE),
                }
            }
            (P::EVENT_DETECTION_ENABLE, _) => self.detection_enabled = as_boolean(v)?,
            _ => return Err(errors::WRITE_ACCESS_DENIED),
        }
        self.written = true;
        Ok(())
    }
}

/// The first `n` bits of a BIT STRING value (missing ones false).
fn bits(v: &AnyValue, n: usize) -> Result<Vec<bool>, BacnetError> {
    match crate::value::as_primitive(v)? {
        Value::BitString(b) => Ok((0..n).map(|i| i < b.len() && b.get(i)).collect()),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

impl Object {
    /// Reliability as read: a multi-state value in Fault_Values is
    /// multi-state-fault.
    pub(crate) fn effective_reliability(&self) -> Reliability {
        if let (Some(r), super::PresentValue::MultiState(n)) = (&self.reporting, self.present_value())
            && let Condition::AlarmValues { fault, .. } = &r.spec.condition
            && fault.contains(&n)
        {
            return Reliability::MULTI_STATE_FAULT;
        }
        self.reliability
    }

    /// Run event-state detection at `now`; the transition made, to report
    /// when Event_Enable enables it.
    pub(crate) fn detect(&mut self, now: DateTime) -> Option<EventReport> {
        let reliability = self.effective_reliability();
        let fault = reliability != Reliability::NO_FAULT_DETECTED;
        let value = match self.present_value() {
            super::PresentValue::Analog(x) => Monitored::Real(x),
            super::PresentValue::Binary(b) => Monitored::State(u32::from(b)),
            super::PresentValue::MultiState(n) => Monitored::State(n),
        };
        let r = self.reporting.as_mut()?;
        let algorithm = r.algorithm();
        let inputs = Inputs {
            now: Duration::from_millis(now.unix_ms),
            value,
            fault,
            detection_enabled: r.detection_enabled,
            time_delay: Duration::from_secs(r.spec.time_delay.into()),
            time_delay_normal: Duration::from_secs(r.spec.time_delay_normal.unwrap_or(r.spec.time_delay).into()),
        };
        let mut transition = r.detector.evaluate(&algorithm, inputs);
        self.event_state = r.detector.state();
        if !r.detection_enabled {
            // Not considered by event summarization: nothing waits for an
            // acknowledgment (Clause 13.2.2.1.1).
            r.acked = [true; 3];
        }
        // In FAULT, a change to another fault reliability is a transition
        // of its own, FAULT to FAULT (Clause 13.2.5.2).
        if transition.is_none() && self.event_state == EventState::FAULT && r.fault_reliability != Some(reliability) {
            transition = Some(bacnet::event::Transition {
                from: EventState::FAULT,
                to: EventState::FAULT,
                at: inputs.now,
                value,
            });
        }
        r.fault_reliability = (self.event_state == EventState::FAULT).then_some(reliability);
        let t = transition?;
        let i = transition_index(t.to);
        r.time_stamps[i] = Some((now.local_date(), now.local_time()));
        r.texts[i] = r.spec.message_texts[i].clone();
        // Acknowledged unless it goes out and its class wants one (the
        // host's answer sets it; see `Store::take_events`).
        r.acked[i] = true;
        if !r.spec.event_enable[i] {
            return None;
        }
        let reliability = self.effective_reliability();
        let status_flags = self.status_flags_bits();
        let r = self.reporting.as_ref()?;
        let reliability_event = t.to == EventState::FAULT || t.from == EventState::FAULT;
        let parameters = match (&r.spec.condition, value) {
            _ if reliability_event => NotificationParameters::ChangeOfReliability {
                reliability,
                status_flags,
                property_values: vec![PropertyValue {
                    property: P::PRESENT_VALUE,
                    array_index: None,
                    value: self.present_value().to_value().into(),
                    priority: None,
                }],
            },
            (Condition::OutOfRange { low, high, deadband, .. }, Monitored::Real(x)) => {
                let high_side = t.to == EventState::HIGH_LIMIT || t.from == EventState::HIGH_LIMIT;
                NotificationParameters::OutOfRange {
                    exceeding_value: x,
                    status_flags,
                    deadband: *deadband,
                    exceeded_limit: if high_side { *high } else { *low },
                }
            }
            (Condition::AlarmValue(_), Monitored::State(v)) => {
                NotificationParameters::ChangeOfState { new_state: PropertyStates::binary(v == 1), status_flags }
            }
            (_, Monitored::State(v)) => {
                NotificationParameters::ChangeOfState { new_state: PropertyStates::unsigned(v), status_flags }
            }
            (_, Monitored::Real(_)) => return None,
        };
        Some(EventReport {
            object: self.id,
            event_type: if reliability_event { EventType::CHANGE_OF_RELIABILITY } else { r.event_type() },
            from: t.from,
            to: t.to,
            notify_type: r.spec.notify_type,
            notification_class: r.spec.notification_class,
            message_text: Some(r.texts[i].clone()).filter(|m| !m.is_empty()),
            time: now,
            event_values: parameters.to_vec(),
        })
    }

    fn status_flags_bits(&self) -> BitString {
        BitString::from_bits(&self.status_flags())
    }
}

/// A BACnetTimeStamp of the `dateTime [2]` choice (unspecified for a
/// transition that has not happened).
pub(crate) fn time_stamp(t: Option<(bacnet::Date, bacnet::Time)>) -> Element {
    let (date, time) = match t {
        Some(t) => t,
        None => {
            let u = 255;
            (
                bacnet::Date { year: u, month: u, day: u, weekday: u },
                bacnet::Time { hour: u, minute: u, second: u, hundredths: u },
            )
        }
    };
    Element::Constructed {
        tag: 2,
        elements: vec![Element::Application(Value::Date(date)), Element::Application(Value::Time(time))],
    }
}

/// BACnetEventTransitionBits (Event_Enable, Acked_Transitions).
pub(crate) fn transition_bits(bits: [bool; 3]) -> Value {
    Value::BitString(BitString::from_bits(&bits))
}

/// A BACnetLIST of Unsigned (Alarm_Values, Fault_Values).
pub(crate) fn unsigned_list(states: &[u32]) -> AnyValue {
    AnyValue(states.iter().map(|s| Element::Application(Value::Unsigned(u64::from(*s)))).collect())
}

/// The object's properties its reporting adds, in Property_List order.
pub(crate) fn properties(class: &Class) -> Vec<P> {
    let mut v = vec![P::TIME_DELAY, P::NOTIFICATION_CLASS];
    match class {
        Class::Analog { .. } => v.extend([P::HIGH_LIMIT, P::LOW_LIMIT, P::DEADBAND, P::LIMIT_ENABLE]),
        Class::Binary { .. } => v.push(P::ALARM_VALUE),
        Class::MultiState { .. } => v.extend([P::ALARM_VALUES, P::FAULT_VALUES]),
    }
    v.extend([
        P::EVENT_ENABLE,
        P::ACKED_TRANSITIONS,
        P::NOTIFY_TYPE,
        P::EVENT_TIME_STAMPS,
        P::EVENT_MESSAGE_TEXTS,
        P::EVENT_MESSAGE_TEXTS_CONFIG,
        P::EVENT_DETECTION_ENABLE,
        P::TIME_DELAY_NORMAL,
    ]);
    v
}
