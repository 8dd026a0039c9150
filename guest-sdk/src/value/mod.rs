//! Typed helpers over the `bacnet` core's values.
//!
//! A property value is an [`AnyValue`]: one application-tagged primitive
//! ([`Value`]) or any sequence of elements (a BACnetARRAY, a list, constructed
//! data). Between host and plugin it crosses as the interface's flat `value`:
//! primitives as themselves, everything else — and CharacterStrings in sets
//! other than UTF-8 — as `encoded`, the application-tagged bytes. The
//! conversion is this module's (`wit`), the one place in the SDK besides the
//! runtime glue that knows the interface's types.
//!
//! The `as_*` readers are for write hooks: each answers the standard's
//! property/invalid-data-type when the value is not of the expected datatype.

pub(crate) mod wit;

use crate::errors;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, CharacterSet, CharacterString, Element, Value};

/// A CharacterString in UTF-8.
pub fn text(s: &str) -> Value {
    Value::CharacterString(CharacterString::utf8(s))
}

/// An Enumerated from any of the core's enumerations (`EngineeringUnits`,
/// `Reliability`, `EventState`, …) or a raw number.
pub fn enumerated(e: impl Into<u32>) -> Value {
    Value::Enumerated(e.into())
}

/// A BACnetARRAY or BACnetLIST as it travels whole: its elements in order,
/// each application-tagged.
pub fn array(items: impl IntoIterator<Item = Value>) -> AnyValue {
    AnyValue(items.into_iter().map(Element::Application).collect())
}

/// The one primitive of `v`, or property/invalid-data-type.
pub fn as_primitive(v: &AnyValue) -> Result<&Value, BacnetError> {
    v.as_primitive().ok_or(errors::INVALID_DATA_TYPE)
}

/// A REAL, or property/invalid-data-type.
pub fn as_real(v: &AnyValue) -> Result<f32, BacnetError> {
    match as_primitive(v)? {
        Value::Real(x) => Ok(*x),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

/// A BOOLEAN, or property/invalid-data-type.
pub fn as_boolean(v: &AnyValue) -> Result<bool, BacnetError> {
    match as_primitive(v)? {
        Value::Boolean(x) => Ok(*x),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

/// An Unsigned, or property/invalid-data-type.
pub fn as_unsigned(v: &AnyValue) -> Result<u64, BacnetError> {
    match as_primitive(v)? {
        Value::Unsigned(x) => Ok(*x),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

/// An ENUMERATED, or property/invalid-data-type.
pub fn as_enumerated(v: &AnyValue) -> Result<u32, BacnetError> {
    match as_primitive(v)? {
        Value::Enumerated(x) => Ok(*x),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

/// A CharacterString as Rust text, in any character set the core converts;
/// property/invalid-data-type for another datatype and
/// property/character-set-not-supported for text it cannot convert.
pub fn as_text(v: &AnyValue) -> Result<String, BacnetError> {
    match as_primitive(v)? {
        Value::CharacterString(s) => decode_text(s).ok_or(errors::CHARACTER_SET_NOT_SUPPORTED),
        _ => Err(errors::INVALID_DATA_TYPE),
    }
}

/// True for a Null (the relinquish command of a commandable property).
pub fn is_null(v: &AnyValue) -> bool {
    matches!(v.as_primitive(), Some(Value::Null))
}

/// Text of a CharacterString in UTF-8, ISO 8859-1, UCS-2 or UCS-4. The
/// DBCS and JIS X 0208 sets, which `CharacterString::to_text` also converts,
/// are left out on purpose: their tables would triple a plugin's size, and
/// Object_Name and Description in those sets are vanishingly rare (a write
/// in them is answered property/character-set-not-supported).
pub(crate) fn decode_text(s: &CharacterString) -> Option<String> {
    match s.charset {
        CharacterSet::UTF_8 => String::from_utf8(s.bytes.clone()).ok(),
        CharacterSet::ISO_8859_1 => Some(s.bytes.iter().map(|b| *b as char).collect()),
        CharacterSet::ISO_10646_UCS_2 => {
            if !s.bytes.len().is_multiple_of(2) {
                return None;
            }
            char::decode_utf16(s.bytes.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])))
                .collect::<Result<String, _>>()
                .ok()
        }
        CharacterSet::ISO_10646_UCS_4 => {
            if !s.bytes.len().is_multiple_of(4) {
                return None;
            }
            s.bytes.chunks_exact(4).map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]]))).collect()
        }
        _ => None,
    }
}

/// True when `s` crosses the interface as a `character-string` rather than
/// `encoded`: UTF-8 set and valid UTF-8 octets.
pub(crate) fn is_plain_utf8(s: &CharacterString) -> bool {
    s.charset == CharacterSet::UTF_8 && core::str::from_utf8(&s.bytes).is_ok()
}
