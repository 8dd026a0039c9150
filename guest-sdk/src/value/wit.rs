//! Conversion between the core's values and the interface's types.
//!
//! `value` is flat: primitives cross as themselves, anything else as
//! `encoded` (the application-tagged encoding of the whole value, as between
//! the opening and closing tags of a ReadProperty-ACK). A UTF-8
//! CharacterString crosses as `character-string`; one in any other set (or
//! with octets that are not UTF-8) as `encoded`, so it round-trips unchanged.

use crate::__private::bindings::trellis::bacnet::types as t;
use crate::DateTime;
use bacnet::codec::Primitive;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, BitString, CharacterString, Date, DecodeError, ObjectIdentifier, Time};
use bacnet::{ObjectType, Value};

/// The interface's `value` for `v`.
pub(crate) fn value_to_wit(v: &AnyValue) -> t::Value {
    let Some(p) = v.as_primitive() else {
        return encoded(v);
    };
    match p {
        Value::Null => t::Value::Null,
        Value::Boolean(b) => t::Value::Boolean(*b),
        Value::Unsigned(n) => t::Value::Unsigned(*n),
        Value::Signed(n) => t::Value::Signed(*n),
        Value::Real(x) => t::Value::Real(*x),
        Value::Double(x) => t::Value::Double(*x),
        Value::OctetString(o) => t::Value::OctetString(o.clone()),
        Value::CharacterString(s) if super::is_plain_utf8(s) => {
            t::Value::CharacterString(String::from_utf8_lossy(&s.bytes).into_owned())
        }
        Value::CharacterString(_) => encoded(v),
        Value::BitString(b) => {
            let mut content = Vec::new();
            b.encode_content(&mut content);
            let (unused, octets) = content.split_first().map(|(u, o)| (*u, o.to_vec())).unwrap_or((0, Vec::new()));
            t::Value::BitString(t::BitString { unused_bits: unused, octets })
        }
        Value::Enumerated(e) => t::Value::Enumerated(*e),
        Value::Date(d) => t::Value::Date(t::Date { year: d.year, month: d.month, day: d.day, weekday: d.weekday }),
        Value::Time(x) => {
            t::Value::Time(t::Time { hour: x.hour, minute: x.minute, second: x.second, hundredths: x.hundredths })
        }
        Value::ObjectIdentifier(o) => t::Value::ObjectId(object_id_to_wit(o)),
    }
}

fn encoded(v: &AnyValue) -> t::Value {
    let mut out = Vec::new();
    v.encode(&mut out);
    t::Value::Encoded(out)
}

/// The core's value for the interface's `value`. Fails only for `encoded`
/// bytes that do not decode and a bit-string with more than 7 unused bits.
pub(crate) fn value_from_wit(v: &t::Value) -> Result<AnyValue, DecodeError> {
    let p = match v {
        t::Value::Null => Value::Null,
        t::Value::Boolean(b) => Value::Boolean(*b),
        t::Value::Unsigned(n) => Value::Unsigned(*n),
        t::Value::Signed(n) => Value::Signed(*n),
        t::Value::Real(x) => Value::Real(*x),
        t::Value::Double(x) => Value::Double(*x),
        t::Value::OctetString(o) => Value::OctetString(o.clone()),
        t::Value::CharacterString(s) => Value::CharacterString(CharacterString::utf8(s)),
        t::Value::BitString(b) => {
            let mut content = Vec::with_capacity(1 + b.octets.len());
            content.push(b.unused_bits);
            content.extend_from_slice(&b.octets);
            Value::BitString(BitString::decode_content(&content, 0)?)
        }
        t::Value::Enumerated(e) => Value::Enumerated(*e),
        t::Value::Date(d) => Value::Date(Date { year: d.year, month: d.month, day: d.day, weekday: d.weekday }),
        t::Value::Time(x) => {
            Value::Time(Time { hour: x.hour, minute: x.minute, second: x.second, hundredths: x.hundredths })
        }
        t::Value::ObjectId(o) => Value::ObjectIdentifier(object_id_from_wit(o)),
        t::Value::Encoded(bytes) => return AnyValue::from_bytes(bytes),
    };
    Ok(AnyValue::primitive(p))
}

pub(crate) fn object_id_to_wit(o: &ObjectIdentifier) -> t::ObjectId {
    t::ObjectId { object_type: o.object_type.0 as u16, instance: o.instance }
}

/// Out-of-range fields are kept as they are: such an identifier names no
/// object, and the store answers object/unknown-object.
pub(crate) fn object_id_from_wit(o: &t::ObjectId) -> ObjectIdentifier {
    ObjectIdentifier { object_type: ObjectType(o.object_type as u32), instance: o.instance }
}

pub(crate) fn error_to_wit(e: &BacnetError) -> t::BacnetError {
    t::BacnetError { error_class: e.class.0, error_code: e.code.0 }
}

pub(crate) fn datetime_from_wit(d: t::Datetime) -> DateTime {
    DateTime::new(d.unix_ms, d.utc_offset_minutes)
}

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn datetime_to_wit(d: DateTime) -> t::Datetime {
    t::Datetime { unix_ms: d.unix_ms, utc_offset_minutes: d.utc_offset_minutes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::{CharacterSet, Element};

    fn round_trip(v: AnyValue) -> t::Value {
        let w = value_to_wit(&v);
        assert_eq!(value_from_wit(&w).unwrap(), v, "{w:?}");
        w
    }

    #[test]
    fn primitives_cross_as_themselves() {
        assert!(matches!(round_trip(Value::Null.into()), t::Value::Null));
        assert!(matches!(round_trip(Value::Boolean(true).into()), t::Value::Boolean(true)));
        assert!(matches!(round_trip(Value::Unsigned(1 << 40).into()), t::Value::Unsigned(n) if n == 1 << 40));
        assert!(matches!(round_trip(Value::Signed(-7).into()), t::Value::Signed(-7)));
        assert!(matches!(round_trip(Value::Real(21.5).into()), t::Value::Real(x) if x == 21.5));
        assert!(matches!(round_trip(Value::Double(-0.25).into()), t::Value::Double(x) if x == -0.25));
        assert!(matches!(round_trip(Value::OctetString(vec![1, 2]).into()), t::Value::OctetString(o) if o == [1, 2]));
        assert!(matches!(round_trip(Value::Enumerated(62).into()), t::Value::Enumerated(62)));
        let d = Date { year: 124, month: 3, day: 1, weekday: 5 };
        assert!(matches!(round_trip(Value::Date(d).into()), t::Value::Date(t::Date { year: 124, .. })));
        let tm = Time { hour: 23, minute: 59, second: 1, hundredths: 255 };
        assert!(matches!(round_trip(Value::Time(tm).into()), t::Value::Time(t::Time { hundredths: 255, .. })));
        let o = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 4_194_302).unwrap();
        assert!(matches!(
            round_trip(Value::ObjectIdentifier(o).into()),
            t::Value::ObjectId(t::ObjectId { object_type: 2, instance: 4_194_302 })
        ));
    }

    #[test]
    fn a_utf8_character_string_crosses_as_a_string() {
        let w = round_trip(Value::CharacterString(CharacterString::utf8("Zone °C")).into());
        assert!(matches!(w, t::Value::CharacterString(s) if s == "Zone °C"));
    }

    #[test]
    fn a_character_string_in_another_set_crosses_encoded_and_round_trips() {
        let latin1 = CharacterString::encode(CharacterSet::ISO_8859_1, 0, "Zone °C").unwrap();
        let w = round_trip(Value::CharacterString(latin1).into());
        // 0x75: application tag 7, extended length; then the length, set 5, octets.
        assert!(matches!(&w, t::Value::Encoded(b) if b[..3] == [0x75, 8, 5]), "{w:?}");
        // UTF-8 set but octets that are not UTF-8: also encoded, unchanged.
        let bad = CharacterString { charset: CharacterSet::UTF_8, code_page: 0, bytes: vec![0xFF] };
        assert!(matches!(round_trip(Value::CharacterString(bad).into()), t::Value::Encoded(_)));
    }

    #[test]
    fn a_bit_string_keeps_its_unused_bits_count() {
        let w = round_trip(Value::BitString(BitString::from_bits(&[false, true, false, false])).into());
        assert!(matches!(w, t::Value::BitString(t::BitString { unused_bits: 4, ref octets }) if octets == &[0x40]));
        let bad = t::Value::BitString(t::BitString { unused_bits: 8, octets: vec![0] });
        assert!(value_from_wit(&bad).is_err());
    }

    #[test]
    fn constructed_data_and_arrays_cross_encoded() {
        let arr = crate::value::array([Value::Unsigned(1), Value::Null]);
        assert!(matches!(round_trip(arr), t::Value::Encoded(b) if b == [0x21, 0x01, 0x00]));
        let nested =
            AnyValue(vec![Element::Constructed { tag: 0, elements: vec![Element::Context { tag: 1, data: vec![9] }] }]);
        assert!(matches!(round_trip(nested), t::Value::Encoded(b) if b == [0x0E, 0x19, 0x09, 0x0F]));
        assert!(matches!(round_trip(AnyValue::default()), t::Value::Encoded(b) if b.is_empty()));
    }

    #[test]
    fn encoded_bytes_that_do_not_decode_are_an_error() {
        assert!(value_from_wit(&t::Value::Encoded(vec![0x0E])).is_err());
        assert!(value_from_wit(&t::Value::Encoded(vec![0x44, 0x41])).is_err());
    }
}
