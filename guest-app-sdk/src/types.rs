//! Points, values and errors as an application sees them.

use bacnet::{ObjectIdentifier, PropertyIdentifier};
use std::fmt;

/// A point: one property of one object of one device the gateway knows, or
/// a name the operator gave one in the plugin's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Point {
    /// By address.
    Address {
        /// The device instance.
        device: u32,
        /// The object.
        object: ObjectIdentifier,
        /// The property.
        property: PropertyIdentifier,
        /// An array element, or the whole property.
        array_index: Option<u32>,
    },
    /// By a configured name (`[[app]] points = { name = "…" }`).
    Named(String),
}

impl Point {
    /// A configured name.
    pub fn named(name: impl Into<String>) -> Point {
        Point::Named(name.into())
    }

    /// An object's Present_Value.
    pub fn present_value(device: u32, object: ObjectIdentifier) -> Point {
        Point::Address { device, object, property: PropertyIdentifier::PRESENT_VALUE, array_index: None }
    }

    /// `1001/analog-value,1/present-value` (the property may be left out:
    /// Present_Value) is an address; anything else is a configured name.
    /// This is how settings name points.
    pub fn parse(s: &str) -> Point {
        let mut parts = s.split('/');
        let (Some(d), Some(o)) = (parts.next(), parts.next()) else { return Point::named(s) };
        let property = match parts.next() {
            None => Some(PropertyIdentifier::PRESENT_VALUE),
            Some(p) => PropertyIdentifier::from_name(p),
        };
        match (d.parse::<u32>(), o.parse::<ObjectIdentifier>(), property, parts.next()) {
            (Ok(device), Ok(object), Some(property), None) => {
                Point::Address { device, object, property, array_index: None }
            }
            _ => Point::named(s),
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Point::Address { device, object, property, array_index } => {
                write!(f, "{device}/{object}/{property}")?;
                if let Some(i) = array_index {
                    write!(f, "[{i}]")?;
                }
                Ok(())
            }
            Point::Named(n) => f.write_str(n),
        }
    }
}

/// A value as BACnet encodes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Null (in a write: relinquish).
    Null,
    /// BOOLEAN.
    Boolean(bool),
    /// Unsigned.
    Unsigned(u64),
    /// INTEGER.
    Signed(i64),
    /// REAL.
    Real(f32),
    /// Double.
    Double(f64),
    /// ENUMERATED (binary Present_Value: 0 inactive, 1 active).
    Enumerated(u32),
    /// CharacterString.
    Text(String),
    /// OCTET STRING.
    Octets(Vec<u8>),
    /// Any other value: its application-tagged encoding.
    Encoded(Vec<u8>),
}

impl Value {
    /// The value as a number, if it is one (binary states as 0/1, a
    /// boolean as 0/1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Boolean(b) => Some(f64::from(u8::from(*b))),
            Value::Unsigned(u) => Some(*u as f64),
            Value::Signed(i) => Some(*i as f64),
            Value::Real(r) => Some(f64::from(*r)),
            Value::Double(d) => Some(*d),
            Value::Enumerated(e) => Some(f64::from(*e)),
            _ => None,
        }
    }

    /// The value as JSON text (numbers, booleans, strings, null; others
    /// as their encoding in hex, quoted).
    pub fn to_json(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Boolean(b) => b.to_string(),
            Value::Unsigned(u) => u.to_string(),
            Value::Signed(i) => i.to_string(),
            Value::Real(r) if r.is_finite() => format!("{r}"),
            Value::Double(d) if d.is_finite() => format!("{d}"),
            Value::Real(_) | Value::Double(_) => "null".into(),
            Value::Enumerated(e) => e.to_string(),
            Value::Text(s) => json_string(s),
            Value::Octets(b) | Value::Encoded(b) => {
                json_string(&b.iter().map(|x| format!("{x:02x}")).collect::<String>())
            }
        }
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Why a point operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointError {
    /// The operator did not grant it.
    NotPermitted(String),
    /// No such point name or device.
    UnknownPoint(String),
    /// The device answered with a BACnet Error: class, code.
    Bacnet(u32, u32),
    /// Rejected, aborted, a value that does not fit, no answer.
    Failed(String),
}

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointError::NotPermitted(s) => write!(f, "not permitted: {s}"),
            PointError::UnknownPoint(s) => write!(f, "unknown point: {s}"),
            PointError::Bacnet(class, code) => write!(f, "BACnet error {class}/{code}"),
            PointError::Failed(s) => f.write_str(s),
        }
    }
}

/// What an application says it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppInfo {
    /// Its name, e.g. "alarm-threshold".
    pub name: String,
    /// Its version.
    pub version: String,
    /// One line on what this configuration does.
    pub summary: String,
}

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something is off but the application carries on.
    Warn,
    /// Something failed.
    Error,
}
