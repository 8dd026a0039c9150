//! Which properties each object has (Clause 12's tables, as this store
//! implements them) and what they read as.
//!
//! The order of each table is the object's Property_List order; ALL, REQUIRED
//! and OPTIONAL expand in it, after Object_Identifier, Object_Name and
//! Object_Type, with Property_List last. Property_List itself lists neither
//! those three nor itself (Clause 12.1.1.4.1).
//!
//! "Required" follows the tables for Protocol_Revision 22, with two
//! conditional properties counted as required because this gateway meets
//! their condition: COV_Increment (the device supports COV reporting) and
//! Priority_Array, Relinquish_Default and Current_Command_Priority of a
//! commandable Value object. Reliability and Description are optional;
//! Local_Date, Local_Time and UTC_Offset of the Device object too.
//! Of a Trend Log, Log_DeviceObjectProperty and Log_Interval count as
//! required: the table makes them conditional on polled logging of a
//! property, which is what this store's Trend Logs do.

use super::alarm::{self, Condition, Reporting};
use super::{Class, Object, Store, TrendLog};
use crate::errors;
use crate::model::PropertyRef;
use crate::value::text;
use bacnet::codec::BitString;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, BinaryPV, ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};

const R: bool = true;
const O: bool = false;

/// The Device object's properties served by the model (the host adds its
/// protocol properties and Vendor_Identifier to the Device object, and to
/// its Property_List and ALL/REQUIRED answers).
const DEVICE: &[(P, bool)] = &[
    (P::OBJECT_IDENTIFIER, R),
    (P::OBJECT_NAME, R),
    (P::OBJECT_TYPE, R),
    (P::SYSTEM_STATUS, R),
    (P::VENDOR_NAME, R),
    (P::MODEL_NAME, R),
    (P::FIRMWARE_REVISION, R),
    (P::APPLICATION_SOFTWARE_VERSION, R),
    (P::LOCATION, O),
    (P::DESCRIPTION, O),
    (P::LOCAL_TIME, O),
    (P::LOCAL_DATE, O),
    (P::UTC_OFFSET, O),
    (P::OBJECT_LIST, R),
    (P::PROPERTY_LIST, R),
];

/// A Trend Log's properties (Clause 12.25, Table 12-27), in Property_List order.
const TREND_LOG: &[(P, bool)] = &[
    (P::OBJECT_IDENTIFIER, R),
    (P::OBJECT_NAME, R),
    (P::OBJECT_TYPE, R),
    (P::DESCRIPTION, O),
    (P::ENABLE, R),
    (P::LOG_DEVICE_OBJECT_PROPERTY, R),
    (P::LOG_INTERVAL, R),
    (P::STOP_WHEN_FULL, R),
    (P::BUFFER_SIZE, R),
    (P::LOG_BUFFER, R),
    (P::RECORD_COUNT, R),
    (P::TOTAL_RECORD_COUNT, R),
    (P::LOGGING_TYPE, R),
    (P::STATUS_FLAGS, R),
    (P::EVENT_STATE, R),
    (P::RELIABILITY, O),
    (P::PROPERTY_LIST, R),
];

/// A point object's properties, in Property_List order, with whether each is
/// required.
fn point_properties(o: &Object) -> Vec<(P, bool)> {
    let mut v = Vec::with_capacity(20);
    v.extend([
        (P::OBJECT_IDENTIFIER, R),
        (P::OBJECT_NAME, R),
        (P::OBJECT_TYPE, R),
        (P::PRESENT_VALUE, R),
        (P::DESCRIPTION, O),
        (P::STATUS_FLAGS, R),
        (P::EVENT_STATE, R),
        (P::RELIABILITY, O),
        (P::OUT_OF_SERVICE, R),
    ]);
    match &o.class {
        Class::Analog { .. } => v.push((P::UNITS, R)),
        Class::Binary { polarity, .. } => {
            if polarity.is_some() {
                v.push((P::POLARITY, R));
            }
            v.extend([(P::INACTIVE_TEXT, O), (P::ACTIVE_TEXT, O)]);
        }
        Class::MultiState { .. } => v.extend([(P::NUMBER_OF_STATES, R), (P::STATE_TEXT, O)]),
    }
    if o.command.is_some() {
        v.extend([(P::PRIORITY_ARRAY, R), (P::RELINQUISH_DEFAULT, R), (P::CURRENT_COMMAND_PRIORITY, R)]);
    }
    if matches!(o.class, Class::Analog { .. }) {
        v.push((P::COV_INCREMENT, R));
    }
    if o.reporting.is_some() {
        // Required of an object that supports intrinsic reporting, but
        // for the message texts and Time_Delay_Normal.
        let optional = [P::EVENT_MESSAGE_TEXTS, P::EVENT_MESSAGE_TEXTS_CONFIG, P::TIME_DELAY_NORMAL];
        v.extend(super::alarm::properties(&o.class).into_iter().map(|p| (p, !optional.contains(&p))));
    }
    v.push((P::PROPERTY_LIST, R));
    v
}

/// A property's value before an array index is applied.
pub(crate) enum Prop {
    One(Value),
    Array(Vec<Value>),
    /// Constructed data or a list (not an array): Log_Buffer,
    /// Log_DeviceObjectProperty.
    Any(AnyValue),
    /// An array of constructed elements (Event_Time_Stamps).
    Elements(Vec<bacnet::Element>),
}

impl Store {
    /// The object's properties in Property_List order with whether each is
    /// required, or `None` for an unknown object.
    fn properties(&self, id: ObjectIdentifier) -> Option<Vec<(P, bool)>> {
        if id == self.device.id() {
            return Some(DEVICE.to_vec());
        }
        if self.trend_logs.contains_key(&id) {
            return Some(TREND_LOG.to_vec());
        }
        self.objects.get(&id).map(point_properties)
    }

    /// Property_List of an object (for the Device object, the part the model
    /// serves).
    pub fn property_list(&self, id: ObjectIdentifier) -> Option<Vec<P>> {
        Some(
            self.properties(id)?
                .into_iter()
                .map(|(p, _)| p)
                .filter(|p| !matches!(*p, P::OBJECT_IDENTIFIER | P::OBJECT_NAME | P::OBJECT_TYPE | P::PROPERTY_LIST))
                .collect(),
        )
    }

    /// True when the object has this property.
    pub(crate) fn has_property(&self, id: ObjectIdentifier, p: P) -> Option<bool> {
        Some(self.properties(id)?.iter().any(|(q, _)| *q == p))
    }

    /// Expand ALL, REQUIRED and OPTIONAL into one reference per property, in
    /// Property_List order; any other property is itself. An unknown object
    /// is object/unknown-object; an array index with ALL, REQUIRED or
    /// OPTIONAL is property/property-is-not-an-array.
    pub fn expand(&self, target: &PropertyRef) -> Result<Vec<PropertyRef>, BacnetError> {
        let props = self.properties(target.object).ok_or(errors::UNKNOWN_OBJECT)?;
        let keep: fn(bool) -> bool = match target.property {
            P::ALL => |_| true,
            P::REQUIRED => |r| r,
            P::OPTIONAL => |r| !r,
            _ => return Ok(vec![*target]),
        };
        if target.array_index.is_some() {
            return Err(errors::PROPERTY_IS_NOT_AN_ARRAY);
        }
        Ok(props
            .into_iter()
            .filter(|(_, required)| keep(*required))
            .map(|(p, _)| PropertyRef::new(target.object, p))
            .collect())
    }

    /// Read one property (not ALL/REQUIRED/OPTIONAL: [`expand`](Self::expand)
    /// them first, or use [`read_multiple`](Self::read_multiple)).
    pub fn read(&self, target: &PropertyRef) -> Result<AnyValue, BacnetError> {
        let whole = self.read_whole(target.object, target.property)?;
        match (whole, target.array_index) {
            (Prop::One(v), None) => Ok(v.into()),
            (Prop::Any(v), None) => Ok(v),
            (Prop::One(_) | Prop::Any(_), Some(_)) => Err(errors::PROPERTY_IS_NOT_AN_ARRAY),
            (Prop::Elements(items), None) => Ok(AnyValue(items)),
            (Prop::Elements(items), Some(0)) => Ok(Value::Unsigned(items.len() as u64).into()),
            (Prop::Elements(items), Some(i)) => {
                items.into_iter().nth(i as usize - 1).map(|e| AnyValue(vec![e])).ok_or(errors::INVALID_ARRAY_INDEX)
            }
            (Prop::Array(items), None) => Ok(crate::value::array(items)),
            (Prop::Array(items), Some(0)) => Ok(Value::Unsigned(items.len() as u64).into()),
            (Prop::Array(items), Some(i)) => {
                items.into_iter().nth(i as usize - 1).map(AnyValue::from).ok_or(errors::INVALID_ARRAY_INDEX)
            }
        }
    }

    /// Read a whole ReadPropertyMultiple's worth: ALL, REQUIRED and OPTIONAL
    /// expanded, one result per property, errors in place.
    pub fn read_multiple(&self, targets: &[PropertyRef]) -> Vec<(PropertyRef, Result<AnyValue, BacnetError>)> {
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            match self.expand(t) {
                Ok(refs) => out.extend(refs.into_iter().map(|r| (r, self.read(&r)))),
                Err(e) => out.push((*t, Err(e))),
            }
        }
        out
    }

    pub(crate) fn read_whole(&self, id: ObjectIdentifier, p: P) -> Result<Prop, BacnetError> {
        if id == self.device.id() {
            return self.read_device(p);
        }
        if let Some(t) = self.trend_logs.get(&id) {
            return self.read_trend_log(t, p);
        }
        let o = self.objects.get(&id).ok_or(errors::UNKNOWN_OBJECT)?;
        if !point_properties(o).iter().any(|(q, _)| *q == p) {
            return Err(errors::UNKNOWN_PROPERTY);
        }
        let one = |v: Value| Ok(Prop::One(v));
        match (p, &o.class) {
            (P::OBJECT_IDENTIFIER, _) => one(Value::ObjectIdentifier(o.id)),
            (P::OBJECT_NAME, _) => one(text(&o.name)),
            (P::OBJECT_TYPE, _) => one(Value::Enumerated(o.id.object_type.0)),
            (P::PRESENT_VALUE, _) => one(o.present_value().to_value()),
            (P::DESCRIPTION, _) => one(text(&o.description)),
            (P::STATUS_FLAGS, _) => one(o.status_flags_value()),
            (P::EVENT_STATE, _) => one(Value::Enumerated(o.event_state.0)),
            (P::RELIABILITY, _) => one(Value::Enumerated(o.effective_reliability().0)),
            (P::OUT_OF_SERVICE, _) => one(Value::Boolean(o.out_of_service)),
            (P::UNITS, Class::Analog { units, .. }) => one(Value::Enumerated(units.0)),
            (P::COV_INCREMENT, Class::Analog { cov_increment, .. }) => one(Value::Real(*cov_increment)),
            (P::POLARITY, Class::Binary { polarity: Some(pol), .. }) => one(Value::Enumerated(pol.0)),
            (P::ACTIVE_TEXT, Class::Binary { active_text, .. }) => one(text(active_text)),
            (P::INACTIVE_TEXT, Class::Binary { inactive_text, .. }) => one(text(inactive_text)),
            (P::NUMBER_OF_STATES, Class::MultiState { states }) => one(Value::Unsigned(states.len() as u64)),
            (P::STATE_TEXT, Class::MultiState { states }) => Ok(Prop::Array(states.iter().map(|s| text(s)).collect())),
            (P::PRIORITY_ARRAY, _) => {
                let c = o.command.as_ref().ok_or(errors::UNKNOWN_PROPERTY)?;
                Ok(Prop::Array(c.slots.iter().map(|s| s.map(|v| v.to_value()).unwrap_or(Value::Null)).collect()))
            }
            (P::RELINQUISH_DEFAULT, _) => {
                one(o.command.as_ref().ok_or(errors::UNKNOWN_PROPERTY)?.relinquish_default.to_value())
            }
            (P::CURRENT_COMMAND_PRIORITY, _) => {
                let c = o.command.as_ref().ok_or(errors::UNKNOWN_PROPERTY)?;
                one(c.active().map(|(p, _)| Value::Unsigned(p as u64)).unwrap_or(Value::Null))
            }
            (P::PROPERTY_LIST, _) => Ok(Prop::Array(
                self.property_list(id).unwrap_or_default().into_iter().map(|p| Value::Enumerated(p.0)).collect(),
            )),
            _ => match &o.reporting {
                Some(r) => read_reporting(r, p),
                None => Err(errors::UNKNOWN_PROPERTY),
            },
        }
    }

    fn read_device(&self, p: P) -> Result<Prop, BacnetError> {
        let d = &self.device;
        let one = |v: Value| Ok(Prop::One(v));
        match p {
            P::OBJECT_IDENTIFIER => one(Value::ObjectIdentifier(d.id())),
            P::OBJECT_NAME => one(text(&d.name)),
            P::OBJECT_TYPE => one(Value::Enumerated(ObjectType::DEVICE.0)),
            P::SYSTEM_STATUS => one(Value::Enumerated(d.system_status.0)),
            P::VENDOR_NAME => one(text(&d.vendor_name)),
            P::MODEL_NAME => one(text(&d.model_name)),
            P::FIRMWARE_REVISION => one(text(&d.firmware_revision)),
            P::APPLICATION_SOFTWARE_VERSION => one(text(&d.application_software_version)),
            P::LOCATION => one(text(&d.location)),
            P::DESCRIPTION => one(text(&d.description)),
            P::LOCAL_TIME => one(Value::Time(self.now().local_time())),
            P::LOCAL_DATE => one(Value::Date(self.now().local_date())),
            P::UTC_OFFSET => one(Value::Signed(self.now().bacnet_utc_offset())),
            P::OBJECT_LIST => {
                Ok(Prop::Array(core::iter::once(d.id()).chain(self.ids()).map(Value::ObjectIdentifier).collect()))
            }
            P::PROPERTY_LIST => Ok(Prop::Array(
                self.property_list(d.id()).unwrap_or_default().into_iter().map(|p| Value::Enumerated(p.0)).collect(),
            )),
            _ => Err(errors::UNKNOWN_PROPERTY),
        }
    }

    fn read_trend_log(&self, t: &TrendLog, p: P) -> Result<Prop, BacnetError> {
        let one = |v: Value| Ok(Prop::One(v));
        let unsigned = |n: u64| one(Value::Unsigned(n));
        match p {
            P::OBJECT_IDENTIFIER => one(Value::ObjectIdentifier(t.id)),
            P::OBJECT_NAME => one(text(&t.name)),
            P::OBJECT_TYPE => one(Value::Enumerated(ObjectType::TREND_LOG.0)),
            P::DESCRIPTION => one(text(&t.description)),
            P::ENABLE => one(Value::Boolean(t.enable)),
            P::LOG_DEVICE_OBJECT_PROPERTY => Ok(Prop::Any(t.log_device_object_property())),
            P::LOG_INTERVAL => unsigned(t.log_interval.into()),
            P::STOP_WHEN_FULL => one(Value::Boolean(t.stop_when_full)),
            P::BUFFER_SIZE => unsigned(t.buffer_size.into()),
            P::LOG_BUFFER => Ok(Prop::Any(t.log_buffer())),
            P::RECORD_COUNT => unsigned(t.records.len() as u64),
            P::TOTAL_RECORD_COUNT => unsigned(t.total_record_count.into()),
            P::LOGGING_TYPE => one(TrendLog::logging_type()),
            P::STATUS_FLAGS => one(t.status_flags()),
            P::EVENT_STATE => one(Value::Enumerated(bacnet::EventState::NORMAL.0)),
            P::RELIABILITY => one(Value::Enumerated(t.reliability.0)),
            P::PROPERTY_LIST => Ok(Prop::Array(
                self.property_list(t.id).unwrap_or_default().into_iter().map(|p| Value::Enumerated(p.0)).collect(),
            )),
            _ => Err(errors::UNKNOWN_PROPERTY),
        }
    }

    /// True when `p` of the object is a BACnetARRAY.
    pub(crate) fn is_array(p: P) -> bool {
        matches!(
            p,
            P::PRIORITY_ARRAY
                | P::STATE_TEXT
                | P::OBJECT_LIST
                | P::PROPERTY_LIST
                | P::EVENT_TIME_STAMPS
                | P::EVENT_MESSAGE_TEXTS
                | P::EVENT_MESSAGE_TEXTS_CONFIG
        )
    }
}

/// The intrinsic reporting properties (Clause 12's tables, Clause 13.2).
pub(crate) fn read_reporting(r: &Reporting, p: P) -> Result<Prop, BacnetError> {
    let one = |v: Value| Ok(Prop::One(v));
    let spec = &r.spec;
    match (p, &spec.condition) {
        (P::TIME_DELAY, _) => one(Value::Unsigned(spec.time_delay.into())),
        (P::TIME_DELAY_NORMAL, _) => one(Value::Unsigned(spec.time_delay_normal.unwrap_or(spec.time_delay).into())),
        (P::NOTIFICATION_CLASS, _) => one(Value::Unsigned(spec.notification_class.into())),
        (P::HIGH_LIMIT, Condition::OutOfRange { high, .. }) => one(Value::Real(*high)),
        (P::LOW_LIMIT, Condition::OutOfRange { low, .. }) => one(Value::Real(*low)),
        (P::DEADBAND, Condition::OutOfRange { deadband, .. }) => one(Value::Real(*deadband)),
        (P::LIMIT_ENABLE, Condition::OutOfRange { low_enabled, high_enabled, .. }) => {
            one(Value::BitString(BitString::from_bits(&[*low_enabled, *high_enabled])))
        }
        (P::ALARM_VALUE, Condition::AlarmValue(active)) => {
            one(Value::Enumerated(if *active { BinaryPV::ACTIVE.0 } else { BinaryPV::INACTIVE.0 }))
        }
        (P::ALARM_VALUES, Condition::AlarmValues { alarm, .. }) => Ok(Prop::Any(alarm::unsigned_list(alarm))),
        (P::FAULT_VALUES, Condition::AlarmValues { fault, .. }) => Ok(Prop::Any(alarm::unsigned_list(fault))),
        (P::EVENT_ENABLE, _) => one(alarm::transition_bits(spec.event_enable)),
        (P::ACKED_TRANSITIONS, _) => one(alarm::transition_bits(r.acked)),
        (P::NOTIFY_TYPE, _) => one(Value::Enumerated(spec.notify_type.0)),
        (P::EVENT_TIME_STAMPS, _) => Ok(Prop::Elements(r.time_stamps.iter().map(|t| alarm::time_stamp(*t)).collect())),
        (P::EVENT_MESSAGE_TEXTS, _) => Ok(Prop::Array(r.texts.iter().map(|t| text(t)).collect())),
        (P::EVENT_MESSAGE_TEXTS_CONFIG, _) => Ok(Prop::Array(spec.message_texts.iter().map(|t| text(t)).collect())),
        (P::EVENT_DETECTION_ENABLE, _) => one(Value::Boolean(r.detection_enabled)),
        _ => Err(errors::UNKNOWN_PROPERTY),
    }
}
