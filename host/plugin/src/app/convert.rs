//! Between `trellis:app`'s generated types and the host's: the one module
//! that builds or takes apart the bindings' records.

use super::bindings::trellis::app::types as wit;
use super::grants::PointAddress;
use super::{AppInfo, AppPoint, PointError};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, PropertyIdentifier, Value};
use tracing::Level;

pub fn level_from_wit(level: wit::LogLevel) -> Level {
    match level {
        wit::LogLevel::Trace => Level::TRACE,
        wit::LogLevel::Debug => Level::DEBUG,
        wit::LogLevel::Info => Level::INFO,
        wit::LogLevel::Warn => Level::WARN,
        wit::LogLevel::Error => Level::ERROR,
    }
}

pub fn point_from_wit(p: wit::Point) -> Result<AppPoint, PointError> {
    match p {
        wit::Point::Named(name) => Ok(AppPoint::Named(name)),
        wit::Point::Address(a) => {
            let object = ObjectIdentifier::new(ObjectType::from(u32::from(a.object.object_type)), a.object.instance)
                .map_err(|_| {
                    PointError::UnknownPoint(format!("object {}:{}", a.object.object_type, a.object.instance))
                })?;
            if a.device > ObjectIdentifier::MAX_INSTANCE {
                return Err(PointError::UnknownPoint(format!("device {}", a.device)));
            }
            Ok(AppPoint::Address(PointAddress {
                device: a.device,
                object,
                property: PropertyIdentifier::from(a.property),
                array_index: a.array_index,
            }))
        }
    }
}

pub fn point_to_wit(p: &AppPoint) -> wit::Point {
    match p {
        AppPoint::Named(n) => wit::Point::Named(n.clone()),
        AppPoint::Address(a) => wit::Point::Address(wit::PointAddress {
            device: a.device,
            object: object_entry_to_wit(a.object, String::new()).id,
            property: u32::from(a.property),
            array_index: a.array_index,
        }),
    }
}

pub fn value_from_wit(v: wit::Value) -> Result<AnyValue, PointError> {
    let primitive = match v {
        wit::Value::Null => Value::Null,
        wit::Value::Boolean(b) => Value::Boolean(b),
        wit::Value::Unsigned(u) => Value::Unsigned(u),
        wit::Value::Signed(i) => Value::Signed(i),
        wit::Value::Real(r) => Value::Real(r),
        wit::Value::Double(d) => Value::Double(d),
        wit::Value::Enumerated(e) => Value::Enumerated(e),
        wit::Value::CharacterString(s) => Value::CharacterString(bacnet::CharacterString::utf8(&s)),
        wit::Value::OctetString(o) => Value::OctetString(o),
        wit::Value::Encoded(bytes) => {
            return AnyValue::from_bytes(&bytes)
                .map_err(|e| PointError::Failed(format!("an encoded value that does not decode: {e}")));
        }
    };
    Ok(AnyValue::primitive(primitive))
}

pub fn value_to_wit(v: &AnyValue) -> wit::Value {
    match v.as_primitive() {
        Some(Value::Null) => wit::Value::Null,
        Some(Value::Boolean(b)) => wit::Value::Boolean(*b),
        Some(Value::Unsigned(u)) => wit::Value::Unsigned(*u),
        Some(Value::Signed(i)) => wit::Value::Signed(*i),
        Some(Value::Real(r)) => wit::Value::Real(*r),
        Some(Value::Double(d)) => wit::Value::Double(*d),
        Some(Value::Enumerated(e)) => wit::Value::Enumerated(*e),
        Some(Value::CharacterString(s)) if s.to_text().is_ok() => {
            wit::Value::CharacterString(s.to_text().unwrap_or_default())
        }
        Some(Value::OctetString(o)) => wit::Value::OctetString(o.clone()),
        _ => {
            let mut out = Vec::new();
            v.encode(&mut out);
            wit::Value::Encoded(out)
        }
    }
}

pub fn error_to_wit(e: PointError) -> wit::PointError {
    match e {
        PointError::NotPermitted(s) => wit::PointError::NotPermitted(s),
        PointError::UnknownPoint(s) => wit::PointError::UnknownPoint(s),
        PointError::Bacnet { class, code } => wit::PointError::Bacnet((class, code)),
        PointError::Failed(s) => wit::PointError::Failed(s),
    }
}

pub fn info_from_wit(i: wit::AppInfo) -> AppInfo {
    AppInfo { name: i.name, version: i.version, summary: i.summary }
}

pub fn object_entry_to_wit(id: ObjectIdentifier, name: String) -> wit::ObjectEntry {
    wit::ObjectEntry {
        id: wit::ObjectId { object_type: u32::from(id.object_type) as u16, instance: id.instance },
        name,
    }
}
