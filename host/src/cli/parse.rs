//! Turning a value typed on the command line into the BACnet datatype the
//! property expects.
//!
//! Explicit forms always work: `null`, `real:21.5`, `double:1.5`,
//! `unsigned:3`, `signed:-2`, `bool:true`, `enum:1`, `string:text`,
//! `octets:0a0b`, `object:analog-value,1`. Without a prefix the object type
//! and property decide: analog Present_Value is a Real, binary Present_Value
//! an enumeration (`active`/`inactive`), multi-state Present_Value an
//! Unsigned, names and descriptions strings, Out_Of_Service a Boolean.

use super::format::{is_analog, is_binary};
use bacnet::enums::{BinaryPV, PropertyIdentifier as P};
use bacnet::{AnyValue, CharacterString, ObjectType, Value};

/// Parse `text` as the value of `property` of an object of `object_type`.
pub fn value(object_type: ObjectType, property: P, text: &str) -> Result<AnyValue, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("null") {
        return Ok(Value::Null.into());
    }
    if let Some((kind, rest)) = t.split_once(':')
        && let Some(v) = explicit(kind, rest)?
    {
        return Ok(v.into());
    }
    let bad =
        |what: &str| format!("`{t}` is not {what} (or give the type: real:…, unsigned:…, enum:…, string:…, null)");
    let v = match property {
        P::PRESENT_VALUE | P::RELINQUISH_DEFAULT | P::COV_INCREMENT
            if is_analog(object_type) || property == P::COV_INCREMENT =>
        {
            Value::Real(t.parse().map_err(|_| bad("a number"))?)
        }
        P::PRESENT_VALUE | P::RELINQUISH_DEFAULT if is_binary(object_type) => {
            let pv = BinaryPV::from_name(t).filter(|v| v.0 <= 1).ok_or_else(|| bad("active or inactive"))?;
            Value::Enumerated(pv.0)
        }
        P::PRESENT_VALUE | P::RELINQUISH_DEFAULT
            if matches!(
                object_type,
                ObjectType::MULTI_STATE_INPUT | ObjectType::MULTI_STATE_OUTPUT | ObjectType::MULTI_STATE_VALUE
            ) =>
        {
            Value::Unsigned(t.parse().map_err(|_| bad("a state number (1, 2, …)"))?)
        }
        P::OBJECT_NAME | P::DESCRIPTION | P::LOCATION | P::PROFILE_NAME => {
            Value::CharacterString(CharacterString::utf8(t))
        }
        P::OUT_OF_SERVICE => Value::Boolean(parse_bool(t).ok_or_else(|| bad("true or false"))?),
        _ => {
            // Best effort for everything else: number, then boolean, then text.
            if let Ok(u) = t.parse::<u64>() {
                Value::Unsigned(u)
            } else if let Ok(f) = t.parse::<f32>() {
                Value::Real(f)
            } else if let Some(b) = parse_bool(t) {
                Value::Boolean(b)
            } else {
                Value::CharacterString(CharacterString::utf8(t))
            }
        }
    };
    Ok(v.into())
}

fn parse_bool(t: &str) -> Option<bool> {
    match t.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn explicit(kind: &str, rest: &str) -> Result<Option<Value>, String> {
    let err = |what: &str| format!("`{rest}` is not {what}");
    Ok(Some(match kind.to_ascii_lowercase().as_str() {
        "real" => Value::Real(rest.parse().map_err(|_| err("a Real"))?),
        "double" => Value::Double(rest.parse().map_err(|_| err("a Double"))?),
        "unsigned" => Value::Unsigned(rest.parse().map_err(|_| err("an Unsigned"))?),
        "signed" | "integer" => Value::Signed(rest.parse().map_err(|_| err("a Signed"))?),
        "bool" | "boolean" => Value::Boolean(parse_bool(rest).ok_or_else(|| err("a Boolean"))?),
        "enum" | "enumerated" => Value::Enumerated(rest.parse().map_err(|_| err("an Enumerated number"))?),
        "string" | "str" => Value::CharacterString(CharacterString::utf8(rest)),
        "octets" | "hex" => Value::OctetString(trellis_net::parse_hex(rest).ok_or_else(|| err("hex octets"))?),
        "object" => Value::ObjectIdentifier(rest.parse().map_err(|_| err("an object identifier"))?),
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_the_type_the_property_expects() {
        let av = ObjectType::ANALOG_VALUE;
        assert_eq!(value(av, P::PRESENT_VALUE, "21.5").unwrap(), Value::Real(21.5).into());
        assert_eq!(value(ObjectType::BINARY_VALUE, P::PRESENT_VALUE, "active").unwrap(), Value::Enumerated(1).into());
        assert_eq!(value(ObjectType::MULTI_STATE_VALUE, P::PRESENT_VALUE, "2").unwrap(), Value::Unsigned(2).into());
        assert_eq!(value(av, P::PRESENT_VALUE, "null").unwrap(), Value::Null.into());
        assert_eq!(value(av, P::PRESENT_VALUE, "unsigned:7").unwrap(), Value::Unsigned(7).into());
        assert!(value(av, P::PRESENT_VALUE, "warm").unwrap_err().contains("not a number"));
        assert!(value(ObjectType::BINARY_VALUE, P::PRESENT_VALUE, "maybe").is_err());
        assert!(value(av, P::PRESENT_VALUE, "octets:aéb").is_err(), "non-ASCII hex is an error, not a panic");
    }
}
