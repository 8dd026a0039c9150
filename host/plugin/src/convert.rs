//! The one translation between the WIT types of `trellis:bacnet` and the
//! core's types ([`AnyValue`], [`BacnetError`], [`PropertyTarget`], …).
//!
//! Host → guest conversions cannot fail. Guest → host conversions check
//! everything the WIT types cannot express (object types ≤ 1023, instances ≤
//! 4,194,303, BitString unused bits, the application-tagged encoding inside
//! `encoded`) and report a [`Contract`] error rather than passing on a value
//! the server could not encode.
//!
//! This module must never call a plugin, log, or allocate more than a small
//! multiple of what it converts.

use super::bindings::{host::LogLevel, types as wit};
use bacnet::codec::Primitive;
use bacnet::services::{BacnetError, ObjectSpecifier};
use bacnet::{
    AnyValue, BitString, CharacterSet, CharacterString, Date, ErrorClass, ErrorCode, ObjectIdentifier, ObjectType,
    PropertyIdentifier, Time, Value,
};
use trellis_model::{DateTime, ObjectInfo, PluginInfo, PropertyRead, PropertyTarget, PropertyWrite};

/// A guest answer that breaks the interface contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract(pub String);

type Result<T> = std::result::Result<T, Contract>;

/// Object identifier to WIT.
pub fn object_id_to_wit(o: ObjectIdentifier) -> wit::ObjectId {
    wit::ObjectId { object_type: (o.object_type.0 & ObjectIdentifier::MAX_TYPE) as u16, instance: o.instance }
}

/// Object identifier from WIT, range-checked.
pub fn object_id_from_wit(o: wit::ObjectId) -> Result<ObjectIdentifier> {
    ObjectIdentifier::new(ObjectType(o.object_type.into()), o.instance)
        .map_err(|_| Contract(format!("object identifier {},{} out of range", o.object_type, o.instance)))
}

/// Property reference to WIT.
pub fn target_to_wit(t: &PropertyTarget) -> wit::PropertyRef {
    wit::PropertyRef { object: object_id_to_wit(t.object), property: t.property.0, array_index: t.array_index }
}

/// Property reference from WIT.
pub fn target_from_wit(t: wit::PropertyRef) -> Result<PropertyTarget> {
    Ok(PropertyTarget {
        object: object_id_from_wit(t.object)?,
        property: PropertyIdentifier(t.property),
        array_index: t.array_index,
    })
}

/// A value to WIT: one primitive crosses as itself, anything else (and a
/// CharacterString that is not UTF-8) as its application-tagged encoding.
pub fn value_to_wit(v: &AnyValue) -> wit::Value {
    let Some(p) = v.as_primitive() else {
        return encoded(v);
    };
    match p {
        Value::Null => wit::Value::Null,
        Value::Boolean(b) => wit::Value::Boolean(*b),
        Value::Unsigned(u) => wit::Value::Unsigned(*u),
        Value::Signed(i) => wit::Value::Signed(*i),
        Value::Real(r) => wit::Value::Real(*r),
        Value::Double(d) => wit::Value::Double(*d),
        Value::OctetString(o) => wit::Value::OctetString(o.clone()),
        Value::CharacterString(s) => match (s.charset, std::str::from_utf8(&s.bytes)) {
            (CharacterSet::UTF_8, Ok(text)) => wit::Value::CharacterString(text.to_owned()),
            _ => encoded(v),
        },
        Value::BitString(b) => {
            let mut content = Vec::new();
            b.encode_content(&mut content);
            let (unused, octets) = content.split_first().map_or((0, &[][..]), |(u, o)| (*u, o));
            wit::Value::BitString(wit::BitString { unused_bits: unused, octets: octets.to_vec() })
        }
        Value::Enumerated(e) => wit::Value::Enumerated(*e),
        Value::Date(d) => wit::Value::Date(wit::Date { year: d.year, month: d.month, day: d.day, weekday: d.weekday }),
        Value::Time(t) => {
            wit::Value::Time(wit::Time { hour: t.hour, minute: t.minute, second: t.second, hundredths: t.hundredths })
        }
        Value::ObjectIdentifier(o) => wit::Value::ObjectId(object_id_to_wit(*o)),
    }
}

fn encoded(v: &AnyValue) -> wit::Value {
    let mut out = Vec::new();
    v.encode(&mut out);
    wit::Value::Encoded(out)
}

/// A value from WIT; `encoded` must hold a complete application-tagged
/// encoding.
pub fn value_from_wit(v: wit::Value) -> Result<AnyValue> {
    let p = match v {
        wit::Value::Null => Value::Null,
        wit::Value::Boolean(b) => Value::Boolean(b),
        wit::Value::Unsigned(u) => Value::Unsigned(u),
        wit::Value::Signed(i) => Value::Signed(i),
        wit::Value::Real(r) => Value::Real(r),
        wit::Value::Double(d) => Value::Double(d),
        wit::Value::OctetString(o) => Value::OctetString(o),
        wit::Value::CharacterString(s) => Value::CharacterString(CharacterString::utf8(&s)),
        wit::Value::BitString(b) => {
            let mut content = Vec::with_capacity(b.octets.len() + 1);
            content.push(b.unused_bits);
            content.extend_from_slice(&b.octets);
            Value::BitString(BitString::decode_content(&content, 0).map_err(|e| Contract(format!("bit-string: {e}")))?)
        }
        wit::Value::Enumerated(e) => Value::Enumerated(e),
        wit::Value::Date(d) => Value::Date(Date { year: d.year, month: d.month, day: d.day, weekday: d.weekday }),
        wit::Value::Time(t) => {
            Value::Time(Time { hour: t.hour, minute: t.minute, second: t.second, hundredths: t.hundredths })
        }
        wit::Value::ObjectId(o) => Value::ObjectIdentifier(object_id_from_wit(o)?),
        wit::Value::Encoded(bytes) => {
            return AnyValue::from_bytes(&bytes).map_err(|e| Contract(format!("encoded value does not decode: {e}")));
        }
    };
    Ok(AnyValue::primitive(p))
}

/// BACnet Error to WIT.
#[cfg(test)]
pub fn error_to_wit(e: BacnetError) -> wit::BacnetError {
    wit::BacnetError { error_class: e.class.0, error_code: e.code.0 }
}

/// BACnet Error from WIT (every class and code is representable).
pub fn error_from_wit(e: wit::BacnetError) -> BacnetError {
    BacnetError::new(ErrorClass(e.error_class), ErrorCode(e.error_code))
}

/// The identifier `create-object` answered, checked against the request:
/// the requested type, and the requested instance when one was given.
pub fn created_from_wit(id: wit::ObjectId, asked: ObjectSpecifier) -> Result<ObjectIdentifier> {
    let id = object_id_from_wit(id)?;
    let fits = match asked {
        ObjectSpecifier::Type(t) => id.object_type == t,
        ObjectSpecifier::Identifier(wanted) => id == wanted,
    };
    if !fits {
        let asked = match asked {
            ObjectSpecifier::Type(t) => format!("an object of type {t}"),
            ObjectSpecifier::Identifier(wanted) => wanted.to_string(),
        };
        return Err(Contract(format!("create-object was asked for {asked} and created {id}")));
    }
    Ok(id)
}

/// The refused initial value's position `create-object` answered: 0 (the
/// creation itself) to the number of initial values.
pub fn first_failed_from_wit(position: u32, initial: usize) -> Result<u32> {
    if position as usize > initial {
        return Err(Contract(format!("create-object refused initial value {position} of {initial}")));
    }
    Ok(position)
}

/// Read results from WIT: one inner list per requested target.
pub fn reads_from_wit(results: Vec<Vec<wit::ReadResult>>, expected: usize) -> Result<Vec<Vec<PropertyRead>>> {
    if results.len() != expected {
        return Err(Contract(format!("{} answers for {expected} read targets", results.len())));
    }
    results.into_iter().map(|inner| inner.into_iter().map(read_from_wit).collect()).collect()
}

fn read_from_wit(r: wit::ReadResult) -> Result<PropertyRead> {
    Ok(PropertyRead {
        target: target_from_wit(r.target)?,
        outcome: match r.outcome {
            Ok(v) => Ok(value_from_wit(v)?),
            Err(e) => Err(error_from_wit(e)),
        },
    })
}

/// Read results to WIT (the guest's side of `reads_from_wit`, for tests).
#[cfg(test)]
pub fn reads_to_wit(results: &[Vec<PropertyRead>]) -> Vec<Vec<wit::ReadResult>> {
    results
        .iter()
        .map(|inner| {
            inner
                .iter()
                .map(|r| wit::ReadResult {
                    target: target_to_wit(&r.target),
                    outcome: match &r.outcome {
                        Ok(v) => Ok(value_to_wit(v)),
                        Err(e) => Err(error_to_wit(*e)),
                    },
                })
                .collect()
        })
        .collect()
}

/// Writes to WIT.
pub fn writes_to_wit(writes: &[PropertyWrite]) -> Vec<wit::WriteRequest> {
    writes
        .iter()
        .map(|w| wit::WriteRequest {
            target: target_to_wit(&w.target),
            value: value_to_wit(&w.value),
            priority: w.priority,
        })
        .collect()
}

/// Write request from WIT.
#[cfg(test)]
pub fn write_from_wit(w: wit::WriteRequest) -> Result<PropertyWrite> {
    Ok(PropertyWrite { target: target_from_wit(w.target)?, value: value_from_wit(w.value)?, priority: w.priority })
}

/// Write results from WIT; there must be one per write.
pub fn write_results_from_wit(
    results: Vec<std::result::Result<(), wit::BacnetError>>,
    expected: usize,
) -> Result<Vec<std::result::Result<(), BacnetError>>> {
    if results.len() != expected {
        return Err(Contract(format!("{} results for {expected} writes", results.len())));
    }
    Ok(results.into_iter().map(|r| r.map_err(error_from_wit)).collect())
}

/// Object list from WIT.
pub fn objects_from_wit(objects: Vec<wit::ObjectInfo>) -> Result<Vec<ObjectInfo>> {
    objects.into_iter().map(|o| Ok(ObjectInfo { id: object_id_from_wit(o.id)?, name: o.name })).collect()
}

/// Object identifiers reported through `host.values-changed`; out-of-range
/// identifiers are dropped (a host import cannot answer with an error).
pub fn changed_from_wit(objects: Vec<wit::ObjectId>) -> impl Iterator<Item = ObjectIdentifier> {
    objects.into_iter().filter_map(|o| object_id_from_wit(o).ok())
}

/// Plugin description from WIT.
pub fn info_from_wit(i: wit::PluginInfo) -> PluginInfo {
    PluginInfo { name: i.name, version: i.version, description: i.description }
}

/// Time to WIT.
pub fn datetime_to_wit(t: DateTime) -> wit::Datetime {
    wit::Datetime { unix_ms: t.unix_ms, utc_offset_minutes: t.utc_offset_minutes }
}

/// Time from WIT.
#[cfg(test)]
pub fn datetime_from_wit(t: wit::Datetime) -> DateTime {
    DateTime { unix_ms: t.unix_ms, utc_offset_minutes: t.utc_offset_minutes }
}

/// Log level to `tracing`.
pub fn level_from_wit(l: LogLevel) -> tracing::Level {
    match l {
        LogLevel::Trace => tracing::Level::TRACE,
        LogLevel::Debug => tracing::Level::DEBUG,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Warn => tracing::Level::WARN,
        LogLevel::Error => tracing::Level::ERROR,
    }
}

/// A log level as a 0.2.0 component names it (the same enum).
pub fn level_from_wit_v2(l: super::bindings::v2::trellis::bacnet::host::LogLevel) -> tracing::Level {
    use super::bindings::v2::trellis::bacnet::host::LogLevel as L2;
    level_from_wit(match l {
        L2::Trace => LogLevel::Trace,
        L2::Debug => LogLevel::Debug,
        L2::Info => LogLevel::Info,
        L2::Warn => LogLevel::Warn,
        L2::Error => LogLevel::Error,
    })
}

/// A log level as a 0.3.0 component names it (the same enum).
pub fn level_from_wit_v3(l: super::bindings::v3::trellis::bacnet::host::LogLevel) -> tracing::Level {
    use super::bindings::v3::trellis::bacnet::host::LogLevel as L3;
    level_from_wit(match l {
        L3::Trace => LogLevel::Trace,
        L3::Debug => LogLevel::Debug,
        L3::Info => LogLevel::Info,
        L3::Warn => LogLevel::Warn,
        L3::Error => LogLevel::Error,
    })
}

/// A log level as a 0.4.0 component names it (the same enum).
pub fn level_from_wit_v4(l: super::bindings::v4::trellis::bacnet::host::LogLevel) -> tracing::Level {
    use super::bindings::v4::trellis::bacnet::host::LogLevel as L4;
    level_from_wit(match l {
        L4::Trace => LogLevel::Trace,
        L4::Debug => LogLevel::Debug,
        L4::Info => LogLevel::Info,
        L4::Warn => LogLevel::Warn,
        L4::Error => LogLevel::Error,
    })
}

/// A 0.4.0 event transition as 0.3.0 names it (the same record).
pub fn event_transition_v4_to_v3(
    t: super::bindings::v4::trellis::bacnet::host::EventTransition,
) -> super::bindings::v3::trellis::bacnet::host::EventTransition {
    super::bindings::v3::trellis::bacnet::host::EventTransition {
        object: t.object,
        event_type: t.event_type,
        from_state: t.from_state,
        to_state: t.to_state,
        notify_type: t.notify_type,
        notification_class: t.notification_class,
        message_text: t.message_text,
        time: t.time,
        event_values: t.event_values,
    }
}

/// The longest message text a transition may carry (characters).
pub const MAX_MESSAGE_TEXT: usize = 1024;

/// An event transition from WIT, with whether it waits for an
/// acknowledgment; why not, for one that breaks the contract (an object
/// identifier out of range, a state or type beyond its enumeration's
/// range, a message text too long, event values that do not decode as
/// BACnetNotificationParameters).
pub fn event_transition_from_wit(
    t: super::bindings::v3::trellis::bacnet::host::EventTransition,
    ack_required: impl FnOnce(u32, bacnet::enums::EventState) -> bool,
) -> Result<trellis_model::EventTransition> {
    use bacnet::enums::{EventState, EventType, NotifyType};
    use bacnet::services::{NotificationParameters, ServiceCodec};
    let object = object_id_from_wit(t.object)?;
    let state = |n: u32, what: &str| match u16::try_from(n) {
        Ok(n) => Ok(EventState(n.into())),
        Err(_) => Err(Contract(format!("{what} {n} of {object} is not a BACnetEventState"))),
    };
    let (from, to) = (state(t.from_state, "from-state")?, state(t.to_state, "to-state")?);
    if t.notify_type > 1 {
        return Err(Contract(format!("notify-type {} of {object} is neither alarm (0) nor event (1)", t.notify_type)));
    }
    if t.event_type > u16::MAX.into() {
        return Err(Contract(format!("event-type {} of {object} is not a BACnetEventType", t.event_type)));
    }
    if t.message_text.as_ref().is_some_and(|m| m.chars().count() > MAX_MESSAGE_TEXT) {
        return Err(Contract(format!(
            "the message text of {object}'s transition is over {MAX_MESSAGE_TEXT} characters"
        )));
    }
    NotificationParameters::decode(&t.event_values)
        .map_err(|e| Contract(format!("the event values of {object}'s transition do not decode: {e}")))?;
    Ok(trellis_model::EventTransition {
        object,
        event_type: EventType(t.event_type),
        from,
        to,
        notify_type: NotifyType(t.notify_type),
        notification_class: t.notification_class,
        message_text: t.message_text,
        time: DateTime { unix_ms: t.time.unix_ms, utc_offset_minutes: t.time.utc_offset_minutes },
        event_values: t.event_values,
        ack_required: ack_required(t.notification_class, to),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::Element;

    fn round_trip(v: AnyValue) -> wit::Value {
        let w = value_to_wit(&v);
        assert_eq!(value_from_wit(w.clone()).unwrap(), v, "{w:?}");
        w
    }

    fn oid(t: ObjectType, i: u32) -> ObjectIdentifier {
        ObjectIdentifier::new(t, i).unwrap()
    }

    #[test]
    fn primitives_cross_as_themselves_both_ways() {
        assert!(matches!(round_trip(Value::Null.into()), wit::Value::Null));
        assert!(matches!(round_trip(Value::Boolean(true).into()), wit::Value::Boolean(true)));
        assert!(matches!(round_trip(Value::Unsigned(u64::MAX).into()), wit::Value::Unsigned(u64::MAX)));
        assert!(matches!(round_trip(Value::Signed(-5).into()), wit::Value::Signed(-5)));
        assert!(matches!(round_trip(Value::Real(21.5).into()), wit::Value::Real(21.5)));
        assert!(matches!(round_trip(Value::Double(-0.25).into()), wit::Value::Double(-0.25)));
        assert!(matches!(round_trip(Value::OctetString(vec![1, 2]).into()), wit::Value::OctetString(_)));
        assert!(matches!(
            round_trip(Value::CharacterString(CharacterString::utf8("Zone 1 °C")).into()),
            wit::Value::CharacterString(s) if s == "Zone 1 °C"
        ));
        assert!(matches!(round_trip(Value::Enumerated(62).into()), wit::Value::Enumerated(62)));
        let date = Date { year: 126, month: 5, day: 17, weekday: 255 };
        assert!(
            matches!(round_trip(Value::Date(date).into()), wit::Value::Date(d) if d.year == 126 && d.weekday == 255)
        );
        let time = Time { hour: 23, minute: 59, second: 255, hundredths: 0 };
        assert!(matches!(round_trip(Value::Time(time).into()), wit::Value::Time(t) if t.hour == 23));
        let o = oid(ObjectType::DEVICE, ObjectIdentifier::MAX_INSTANCE);
        assert!(matches!(
            round_trip(Value::ObjectIdentifier(o).into()),
            wit::Value::ObjectId(w) if w.object_type == 8 && w.instance == 0x3F_FFFF
        ));
    }

    #[test]
    fn bit_strings_keep_their_unused_bits() {
        let b = BitString::from_bits(&[true, false, true, true]);
        let w = round_trip(Value::BitString(b).into());
        let wit::Value::BitString(w) = w else { panic!() };
        assert_eq!((w.unused_bits, w.octets), (4, vec![0b1011_0000]));
        let bad = wit::Value::BitString(wit::BitString { unused_bits: 8, octets: vec![0] });
        assert!(value_from_wit(bad).is_err());
    }

    #[test]
    fn constructed_values_and_other_charsets_cross_encoded() {
        let list = AnyValue(vec![
            Element::Application(Value::ObjectIdentifier(oid(ObjectType::ANALOG_INPUT, 1))),
            Element::Application(Value::ObjectIdentifier(oid(ObjectType::ANALOG_VALUE, 2))),
        ]);
        assert!(matches!(round_trip(list), wit::Value::Encoded(_)));
        let nested = AnyValue(vec![Element::Constructed {
            tag: 0,
            elements: vec![Element::Context { tag: 1, data: vec![0x55] }],
        }]);
        assert!(matches!(round_trip(nested), wit::Value::Encoded(b) if b == [0x0e, 0x19, 0x55, 0x0f]));
        assert!(matches!(round_trip(AnyValue::default()), wit::Value::Encoded(b) if b.is_empty()));
        let latin1 = CharacterString::encode(CharacterSet::ISO_8859_1, 0, "é").unwrap();
        assert!(matches!(round_trip(Value::CharacterString(latin1).into()), wit::Value::Encoded(_)));
    }

    #[test]
    fn an_encoded_value_that_does_not_decode_breaks_the_contract() {
        assert!(value_from_wit(wit::Value::Encoded(vec![0x44, 0x41])).is_err());
        assert!(value_from_wit(wit::Value::Encoded(vec![0x0e])).is_err());
    }

    #[test]
    fn object_identifiers_out_of_range_break_the_contract() {
        assert!(object_id_from_wit(wit::ObjectId { object_type: 1024, instance: 0 }).is_err());
        assert!(object_id_from_wit(wit::ObjectId { object_type: 0, instance: 0x40_0000 }).is_err());
        assert_eq!(changed_from_wit(vec![wit::ObjectId { object_type: 2, instance: 1 << 23 }]).count(), 0);
    }

    #[test]
    fn reads_writes_and_errors_round_trip() {
        let t = PropertyTarget {
            object: oid(ObjectType::ANALOG_VALUE, 1),
            property: PropertyIdentifier::PRESENT_VALUE,
            array_index: Some(3),
        };
        let unknown = BacnetError::new(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY);
        let reads = vec![
            vec![PropertyRead { target: t, outcome: Ok(Value::Real(1.5).into()) }],
            vec![PropertyRead { target: t, outcome: Err(unknown) }, PropertyRead { target: t, outcome: Err(unknown) }],
        ];
        assert_eq!(reads_from_wit(reads_to_wit(&reads), 2).unwrap(), reads);
        assert!(reads_from_wit(reads_to_wit(&reads), 3).is_err());
        assert_eq!(target_to_wit(&t).array_index, Some(3));
        let w = PropertyWrite { target: t, value: Value::Null.into(), priority: Some(8) };
        assert_eq!(write_from_wit(writes_to_wit(std::slice::from_ref(&w)).remove(0)).unwrap(), w);
        assert_eq!(error_from_wit(error_to_wit(unknown)), unknown);
        let results = write_results_from_wit(vec![Ok(()), Err(error_to_wit(unknown))], 2).unwrap();
        assert_eq!(results, vec![Ok(()), Err(unknown)]);
        assert!(write_results_from_wit(vec![Ok(())], 2).is_err());
    }

    #[test]
    fn times_and_objects_convert() {
        let t = DateTime { unix_ms: 1_700_000_000_123, utc_offset_minutes: -300 };
        assert_eq!(datetime_from_wit(datetime_to_wit(t)), t);
        let objs = objects_from_wit(vec![wit::ObjectInfo {
            id: wit::ObjectId { object_type: 8, instance: 260001 },
            name: "Demo".into(),
        }])
        .unwrap();
        assert_eq!(objs[0].id, oid(ObjectType::DEVICE, 260001));
        assert_eq!(level_from_wit(LogLevel::Warn), tracing::Level::WARN);
    }
}
