//! proptest strategies for the core's types, shared by every test module.

#![allow(dead_code)]

use bacnet::codec::{BitString, CharacterSet, CharacterString, Date, ObjectIdentifier, Time};
use bacnet::enums::*;
use bacnet::value::{AnyValue, Element, Value};
use proptest::collection::vec;
use proptest::prelude::*;

pub fn object_id() -> impl Strategy<Value = ObjectIdentifier> {
    (0u32..=1023, 0u32..=ObjectIdentifier::MAX_INSTANCE)
        .prop_map(|(t, i)| ObjectIdentifier::new(ObjectType(t), i).unwrap())
}

pub fn property_id() -> impl Strategy<Value = PropertyIdentifier> {
    prop_oneof![
        3 => (0u32..600).prop_map(PropertyIdentifier),
        1 => any::<u32>().prop_map(|v| PropertyIdentifier(v % (1 << 22))),
    ]
}

pub fn array_index() -> impl Strategy<Value = Option<u32>> {
    proptest::option::of(any::<u32>())
}

pub fn character_string() -> impl Strategy<Value = CharacterString> {
    prop_oneof![
        ".{0,40}".prop_map(|s| CharacterString::utf8(&s)),
        (0u8..=255, any::<u16>(), vec(any::<u8>(), 0..40)).prop_map(|(cs, cp, bytes)| CharacterString {
            charset: CharacterSet(cs),
            code_page: if cs == 1 { cp } else { 0 },
            bytes,
        }),
    ]
}

pub fn bit_string() -> impl Strategy<Value = BitString> {
    vec(any::<bool>(), 0..40).prop_map(|b| BitString::from_bits(&b))
}

pub fn date() -> impl Strategy<Value = Date> {
    any::<[u8; 4]>().prop_map(|b| Date { year: b[0], month: b[1], day: b[2], weekday: b[3] })
}

pub fn time() -> impl Strategy<Value = Time> {
    any::<[u8; 4]>().prop_map(|b| Time { hour: b[0], minute: b[1], second: b[2], hundredths: b[3] })
}

/// Primitive values; floats exclude NaN so `PartialEq` round trips hold.
pub fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Boolean),
        any::<u64>().prop_map(Value::Unsigned),
        any::<i64>().prop_map(Value::Signed),
        any::<f32>().prop_filter("not NaN", |f| !f.is_nan()).prop_map(Value::Real),
        any::<f64>().prop_filter("not NaN", |f| !f.is_nan()).prop_map(Value::Double),
        vec(any::<u8>(), 0..300).prop_map(Value::OctetString),
        character_string().prop_map(Value::CharacterString),
        bit_string().prop_map(Value::BitString),
        any::<u32>().prop_map(Value::Enumerated),
        date().prop_map(Value::Date),
        time().prop_map(Value::Time),
        object_id().prop_map(Value::ObjectIdentifier),
    ]
}

/// Trees of elements up to a few levels deep.
pub fn element() -> impl Strategy<Value = Element> {
    let leaf = prop_oneof![
        value().prop_map(Element::Application),
        (0u8..=254, vec(any::<u8>(), 0..20)).prop_map(|(tag, data)| Element::Context { tag, data }),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        (0u8..=254, vec(inner, 0..6)).prop_map(|(tag, elements)| Element::Constructed { tag, elements })
    })
}

pub fn any_value() -> impl Strategy<Value = AnyValue> {
    vec(element(), 0..5).prop_map(AnyValue)
}

pub fn priority() -> impl Strategy<Value = Option<u8>> {
    proptest::option::of(1u8..=16)
}
