//! Point values as JSON, the same way for every JSON-speaking surface (the
//! MQTT bridge's payloads, the HTTP API): a single element as a bare JSON
//! value (number, boolean, string, `null`; a bit string as booleans), a
//! list as an array.
//!
//! Must never: guess a datatype the object does not take (a value that
//! fits none is `None`, and the caller says so).

use bacnet::{AnyValue, Element, ObjectType, Value};
use serde_json::json;

/// A property value as JSON.
pub fn to_json(v: &AnyValue) -> serde_json::Value {
    let one = |e: &Element| match e {
        Element::Application(v) => match v {
            Value::Null => json!(null),
            Value::Boolean(b) => json!(b),
            Value::Unsigned(u) => json!(u),
            Value::Signed(i) => json!(i),
            Value::Real(r) => json!(r),
            Value::Double(d) => json!(d),
            Value::Enumerated(e) => json!(e),
            Value::CharacterString(s) => json!(s.to_text().unwrap_or_default()),
            Value::BitString(b) => json!((0..b.len()).map(|i| b.get(i)).collect::<Vec<_>>()),
            other => json!(other.to_string()),
        },
        other => json!(format!("{other:?}")),
    };
    match v.0.as_slice() {
        [e] => one(e),
        many => json!(many.iter().map(one).collect::<Vec<_>>()),
    }
}

/// A JSON value as the object's Present_Value type: analog objects take a
/// number (Real), binary ones `true`/`false`, 0/1 or "active"/"inactive"
/// (Enumerated), multi-state ones a state number (Unsigned); `null`
/// relinquishes.
pub fn from_json(kind: ObjectType, v: &serde_json::Value) -> Option<Value> {
    use ObjectType as T;
    if v.is_null() {
        return Some(Value::Null);
    }
    match kind {
        T::ANALOG_INPUT | T::ANALOG_OUTPUT | T::ANALOG_VALUE => Some(Value::Real(v.as_f64()? as f32)),
        T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE => {
            let active = match v {
                serde_json::Value::Bool(b) => *b,
                serde_json::Value::Number(n) => n.as_u64()? == 1,
                serde_json::Value::String(s) => match s.as_str() {
                    "active" => true,
                    "inactive" => false,
                    _ => return None,
                },
                _ => return None,
            };
            Some(Value::Enumerated(u32::from(active)))
        }
        T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE => Some(Value::Unsigned(v.as_u64()?)),
        _ => match v {
            serde_json::Value::Number(n) if n.is_f64() => Some(Value::Real(n.as_f64()? as f32)),
            serde_json::Value::Number(n) => Some(Value::Unsigned(n.as_u64()?)),
            serde_json::Value::Bool(b) => Some(Value::Boolean(*b)),
            serde_json::Value::String(s) => Some(Value::CharacterString(bacnet::CharacterString::utf8(s))),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_take_the_objects_types() {
        use serde_json::json;
        assert_eq!(from_json(ObjectType::ANALOG_VALUE, &json!(21.5)), Some(Value::Real(21.5)));
        assert_eq!(from_json(ObjectType::BINARY_VALUE, &json!("active")), Some(Value::Enumerated(1)));
        assert_eq!(from_json(ObjectType::BINARY_OUTPUT, &json!(false)), Some(Value::Enumerated(0)));
        assert_eq!(from_json(ObjectType::MULTI_STATE_VALUE, &json!(3)), Some(Value::Unsigned(3)));
        assert_eq!(from_json(ObjectType::ANALOG_VALUE, &json!(null)), Some(Value::Null));
        assert_eq!(from_json(ObjectType::ANALOG_VALUE, &json!("hot")), None);
        assert_eq!(from_json(ObjectType::BINARY_VALUE, &json!("on")), None);
    }
}
