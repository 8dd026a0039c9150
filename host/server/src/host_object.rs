//! What every object the host serves itself (File, Notification Class,
//! Schedule, Calendar, the Device's restart properties) answers the same
//! way: Property_List, the expansion of ALL, REQUIRED and OPTIONAL, and
//! values made of the core's encoded productions.
//!
//! Must never: list Object_Identifier, Object_Name, Object_Type or
//! Property_List in Property_List (Clause 12.1.1.4.1), or Property_List in
//! the expansion of ALL or REQUIRED (135.1 §9.20.1.7).

use bacnet::codec::Reader;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::BacnetError;
use bacnet::{AnyValue, Element, Value};

/// A value made of encoded productions (BACnetDestinations, a schedule's
/// days, a time stamp), as a read answers it; device/operational-problem
/// if they do not decode as one value (they do: the core encoded them).
pub(crate) fn encoded(encode: impl FnOnce(&mut Vec<u8>)) -> Result<AnyValue, BacnetError> {
    let mut octets = Vec::new();
    encode(&mut octets);
    AnyValue::decode(&mut Reader::new(&octets))
        .map_err(|_| BacnetError { class: ErrorClass::DEVICE, code: ErrorCode::OPERATIONAL_PROBLEM })
}

/// A written value's octets, to decode as productions.
pub(crate) fn octets(value: &AnyValue) -> Vec<u8> {
    let mut out = Vec::new();
    value.encode(&mut out);
    out
}

/// The Property_List of an object whose properties are `properties` (the
/// whole array, its length at index 0, or element `index`).
pub(crate) fn property_list(properties: &[P], index: Option<u32>) -> Result<AnyValue, BacnetError> {
    let list: Vec<Element> = properties
        .iter()
        .filter(|q| ![P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE, P::PROPERTY_LIST].contains(q))
        .map(|q| Element::Application(Value::Enumerated(q.0)))
        .collect();
    match index {
        None => Ok(AnyValue(list)),
        Some(0) => Ok(Value::Unsigned(list.len() as u64).into()),
        Some(i) => list
            .get(i as usize - 1)
            .map(|e| AnyValue(vec![e.clone()]))
            .ok_or(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::INVALID_ARRAY_INDEX }),
    }
}

/// The properties ALL, REQUIRED or OPTIONAL (`which`) names among
/// `properties`, of which `optional` are the optional ones.
pub(crate) fn expand(properties: &[P], optional: &[P], which: P) -> Vec<P> {
    properties
        .iter()
        .copied()
        .filter(|p| *p != P::PROPERTY_LIST)
        .filter(|p| match which {
            P::OPTIONAL => optional.contains(p),
            P::REQUIRED => !optional.contains(p),
            _ => true,
        })
        .collect()
}
