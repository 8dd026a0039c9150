//! BACnet values as Python values, and back.
//!
//! Out (a property read): Null is `None`, Boolean `bool`, Unsigned and
//! Signed `int`, Real and Double `float`, CharacterString `str`,
//! OctetString `bytes`, Enumerated a `trellis.Enumerated` (an `int` that
//! knows its standard name when the property's enumeration is known), Date
//! `datetime.date` and Time `datetime.time` (a Date followed by a Time is
//! one `datetime.datetime`; a date or time with unspecified fields is its
//! text, `2026-*-01`), an object identifier a `trellis.ObjectIdentifier`,
//! and named bit strings (Status_Flags, Event_Enable, …) a dict of flags. A
//! list or array is a `list`; constructed data the client has no schema for
//! is a dict keyed by context tag, its primitives as their content octets.
//!
//! In (a write): the property and object type decide, as on the command
//! line: `None` relinquishes, a `float` or `int` to an analog Present_Value
//! is a Real, `True`/`"active"` to a binary one is the enumeration, a `str`
//! takes the command line's forms (`"real:1.5"`, `"enum:3"`, …).
//!
//! Must never: guess silently when a Python value fits no BACnet datatype
//! (that is a `TypeError` naming the value), or hold on to Python objects
//! after the call.

use bacnet::enums::PropertyIdentifier as P;
use bacnet::value::{AnyValue, Element, Value};
use bacnet::{BitString, Date, ObjectIdentifier, ObjectType, Time};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, intern};

/// `trellis._values`' classes, looked up once.
struct Classes {
    enumerated: Py<PyAny>,
    object_identifier: Py<PyAny>,
    date: Py<PyAny>,
    time: Py<PyAny>,
    datetime: Py<PyAny>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let values = py.import(intern!(py, "trellis._values"))?;
        let datetime = py.import(intern!(py, "datetime"))?;
        Ok(Classes {
            enumerated: values.getattr("Enumerated")?.unbind(),
            object_identifier: values.getattr("ObjectIdentifier")?.unbind(),
            date: datetime.getattr("date")?.unbind(),
            time: datetime.getattr("time")?.unbind(),
            datetime: datetime.getattr("datetime")?.unbind(),
        })
    })
}

/// The properties whose value is an array or a list: read whole, they are a
/// Python list even with one element.
fn is_list(property: P) -> bool {
    matches!(
        property,
        P::OBJECT_LIST
            | P::PROPERTY_LIST
            | P::STRUCTURED_OBJECT_LIST
            | P::PRIORITY_ARRAY
            | P::STATE_TEXT
            | P::ALARM_VALUES
            | P::FAULT_VALUES
            | P::EVENT_TIME_STAMPS
            | P::EVENT_MESSAGE_TEXTS
            | P::DEVICE_ADDRESS_BINDING
            | P::ACTIVE_COV_SUBSCRIPTIONS
            | P::WEEKLY_SCHEDULE
            | P::EXCEPTION_SCHEDULE
            | P::DATE_LIST
            | P::RECIPIENT_LIST
            | P::LIST_OF_OBJECT_PROPERTY_REFERENCES
            | P::LOG_BUFFER
            | P::LOG_DEVICE_OBJECT_PROPERTY
            | P::ROUTING_TABLE
            | P::BBMD_BROADCAST_DISTRIBUTION_TABLE
            | P::BBMD_FOREIGN_DEVICE_TABLE
            | P::SUBORDINATE_LIST
            | P::SUBORDINATE_ANNOTATIONS
    )
}

/// Names of the bits of the named bit strings, by property.
fn bit_names(property: P) -> Option<&'static [&'static str]> {
    Some(match property {
        P::STATUS_FLAGS => &["in-alarm", "fault", "overridden", "out-of-service"],
        P::EVENT_ENABLE | P::ACKED_TRANSITIONS => &["to-offnormal", "to-fault", "to-normal"],
        P::LIMIT_ENABLE => &["low-limit-enable", "high-limit-enable"],
        _ => return None,
    })
}

/// A property's value as a Python value (`index`: the array index read).
pub fn to_py(
    py: Python<'_>,
    object_type: ObjectType,
    property: P,
    index: Option<u32>,
    v: &AnyValue,
) -> PyResult<Py<PyAny>> {
    let items = sequence(py, object_type, property, &v.0)?;
    if items.len() == 1 && !(index.is_none() && is_list(property)) {
        return Ok(items.into_iter().next().expect("one item"));
    }
    Ok(PyList::new(py, items)?.into_any().unbind())
}

/// Elements in order: a Date followed by a Time is one datetime, and a run
/// of context-tagged elements (the fields of one constructed value) is one
/// dict.
fn sequence(py: Python<'_>, object_type: ObjectType, property: P, elements: &[Element]) -> PyResult<Vec<Py<PyAny>>> {
    let mut out = Vec::with_capacity(elements.len());
    let mut i = 0;
    while i < elements.len() {
        match &elements[i] {
            Element::Application(Value::Date(d)) => {
                if let Some(Element::Application(Value::Time(t))) = elements.get(i + 1)
                    && let Some(dt) = datetime(py, d, t)?
                {
                    out.push(dt);
                    i += 2;
                    continue;
                }
                out.push(primitive(py, object_type, property, &Value::Date(*d))?);
                i += 1;
            }
            Element::Application(v) => {
                out.push(primitive(py, object_type, property, v)?);
                i += 1;
            }
            Element::Context { .. } | Element::Constructed { .. } => {
                // The fields of one SEQUENCE have increasing tags: a tag that
                // does not increase starts the next value (the entries of a
                // Weekly_Schedule, of Event_Time_Stamps, …).
                let mut end = i + 1;
                while let Some(next) = elements.get(end).and_then(context_tag)
                    && context_tag(&elements[end - 1]).is_some_and(|previous| next > previous)
                {
                    end += 1;
                }
                out.push(tagged(py, object_type, property, &elements[i..end])?);
                i = end;
            }
        }
    }
    Ok(out)
}

/// The tag of a context-tagged element.
fn context_tag(e: &Element) -> Option<u8> {
    match e {
        Element::Context { tag, .. } | Element::Constructed { tag, .. } => Some(*tag),
        Element::Application(_) => None,
    }
}

/// Context-tagged elements as a dict keyed by their tag numbers.
fn tagged(py: Python<'_>, object_type: ObjectType, property: P, elements: &[Element]) -> PyResult<Py<PyAny>> {
    let dict = PyDict::new(py);
    for e in elements {
        match e {
            Element::Context { tag, data } => dict.set_item(tag, PyBytes::new(py, data))?,
            Element::Constructed { tag, elements } => {
                let inner = sequence(py, object_type, property, elements)?;
                let value = if inner.len() == 1 {
                    inner.into_iter().next().expect("one item")
                } else {
                    PyList::new(py, inner)?.into_any().unbind()
                };
                dict.set_item(tag, value)?
            }
            Element::Application(_) => {}
        }
    }
    Ok(dict.into_any().unbind())
}

fn primitive(py: Python<'_>, object_type: ObjectType, property: P, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Boolean(b) => b.into_py_any(py)?,
        Value::Unsigned(u) => u.into_py_any(py)?,
        Value::Signed(i) => i.into_py_any(py)?,
        Value::Real(r) => f64::from(*r).into_py_any(py)?,
        Value::Double(d) => d.into_py_any(py)?,
        Value::OctetString(o) => PyBytes::new(py, o).into_any().unbind(),
        Value::CharacterString(s) => match s.to_text() {
            Ok(t) => t.into_py_any(py)?,
            // A character set this library cannot decode: its octets.
            Err(_) => PyBytes::new(py, &s.bytes).into_any().unbind(),
        },
        Value::BitString(b) => bits(py, property, b)?,
        Value::Enumerated(e) => enumerated(py, object_type, property, *e)?,
        Value::Date(d) => match date(py, d)? {
            Some(d) => d,
            None => d.to_string().into_py_any(py)?,
        },
        Value::Time(t) => match time(py, t)? {
            Some(t) => t,
            None => t.to_string().into_py_any(py)?,
        },
        Value::ObjectIdentifier(o) => object_identifier(py, *o)?,
    })
}

/// A `trellis.Enumerated` with its standard name, when known.
pub fn enumerated(py: Python<'_>, object_type: ObjectType, property: P, v: u32) -> PyResult<Py<PyAny>> {
    let name = trellis::cli::format::enum_name(object_type, property, v);
    let name = (name != v.to_string()).then_some(name);
    classes(py)?.enumerated.call1(py, (v, name))
}

/// A `trellis.ObjectIdentifier` (type name, instance).
pub fn object_identifier(py: Python<'_>, o: ObjectIdentifier) -> PyResult<Py<PyAny>> {
    let kind = match o.object_type.name() {
        Some(n) => n.into_py_any(py)?,
        None => o.object_type.0.into_py_any(py)?,
    };
    classes(py)?.object_identifier.call1(py, (kind, o.instance))
}

fn bits(py: Python<'_>, property: P, b: &BitString) -> PyResult<Py<PyAny>> {
    match bit_names(property) {
        Some(names) => {
            let dict = PyDict::new(py);
            for (i, on) in b.iter().enumerate() {
                match names.get(i) {
                    Some(n) => dict.set_item(*n, on)?,
                    None => dict.set_item(i, on)?,
                }
            }
            Ok(dict.into_any().unbind())
        }
        None => Ok(PyList::new(py, b.iter())?.into_any().unbind()),
    }
}

fn date(py: Python<'_>, d: &Date) -> PyResult<Option<Py<PyAny>>> {
    const U: u8 = 255;
    if d.year == U || d.month == U || d.month > 12 || d.day == U || d.day > 31 {
        return Ok(None);
    }
    let made = classes(py)?.date.call1(py, (1900 + u16::from(d.year), d.month, d.day));
    // A day the calendar does not have (February 30) stays text.
    Ok(made.ok())
}

fn time(py: Python<'_>, t: &Time) -> PyResult<Option<Py<PyAny>>> {
    const U: u8 = 255;
    if t.hour > 23 || t.minute > 59 || t.second > 59 {
        return Ok(None);
    }
    let micros = if t.hundredths == U || t.hundredths > 99 { 0 } else { u32::from(t.hundredths) * 10_000 };
    Ok(classes(py)?.time.call1(py, (t.hour, t.minute, t.second, micros)).ok())
}

fn datetime(py: Python<'_>, d: &Date, t: &Time) -> PyResult<Option<Py<PyAny>>> {
    let (Some(day), Some(at)) = (date(py, d)?, time(py, t)?) else { return Ok(None) };
    let combine = classes(py)?.datetime.getattr(py, "combine")?;
    Ok(Some(combine.call1(py, (day, at))?))
}

/// A Python value as the BACnet value to write to `property` of an object
/// of `object_type`.
pub fn from_py(object_type: ObjectType, property: P, v: &Bound<'_, PyAny>) -> PyResult<AnyValue> {
    if let Ok(list) = v.cast::<PyList>() {
        let mut elements = Vec::with_capacity(list.len());
        for item in list.iter() {
            elements.extend(from_py(object_type, property, &item)?.0);
        }
        return Ok(AnyValue(elements));
    }
    Ok(AnyValue::primitive(primitive_from_py(object_type, property, v)?))
}

fn primitive_from_py(object_type: ObjectType, property: P, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = v.py();
    if v.is_none() {
        return Ok(Value::Null);
    }
    let classes = classes(py)?;
    if v.is_instance(classes.enumerated.bind(py))? {
        return Ok(Value::Enumerated(v.extract()?));
    }
    if v.is_instance(classes.object_identifier.bind(py))? {
        return Ok(Value::ObjectIdentifier(object_id(v)?));
    }
    let analog = trellis::cli::format::is_analog(object_type) || property == P::COV_INCREMENT;
    let binary_pv =
        trellis::cli::format::is_binary(object_type) && matches!(property, P::PRESENT_VALUE | P::RELINQUISH_DEFAULT);
    if let Ok(b) = v.cast::<PyBool>() {
        let b = b.is_true();
        return Ok(if binary_pv { Value::Enumerated(u32::from(b)) } else { Value::Boolean(b) });
    }
    if v.cast::<PyInt>().is_ok() {
        if analog && matches!(property, P::PRESENT_VALUE | P::RELINQUISH_DEFAULT | P::COV_INCREMENT) {
            return Ok(Value::Real(v.extract::<f64>()? as f32));
        }
        if binary_pv {
            return Ok(Value::Enumerated(v.extract()?));
        }
        return Ok(match v.extract::<u64>() {
            Ok(u) => Value::Unsigned(u),
            Err(_) => {
                Value::Signed(v.extract().map_err(|_| PyValueError::new_err(format!("{v} does not fit 64 bits")))?)
            }
        });
    }
    if v.cast::<PyFloat>().is_ok() {
        return Ok(Value::Real(v.extract::<f64>()? as f32));
    }
    if let Ok(s) = v.cast::<PyString>() {
        let text = s.to_str()?;
        let parsed = trellis::cli::parse::value(object_type, property, text).map_err(PyValueError::new_err)?;
        return match <[Element; 1]>::try_from(parsed.0) {
            Ok([Element::Application(v)]) => Ok(v),
            _ => Err(PyValueError::new_err(format!("{text:?} is not one value"))),
        };
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Value::OctetString(b.as_bytes().to_vec()));
    }
    let name = v.get_type().name()?;
    if name == "datetime" {
        return Err(PyTypeError::new_err(
            "a datetime is two values (a Date and a Time): write a list [value.date(), value.time()]",
        ));
    }
    if name == "date" {
        let (y, m, d): (u16, u8, u8) =
            (v.getattr("year")?.extract()?, v.getattr("month")?.extract()?, v.getattr("day")?.extract()?);
        let weekday: u8 = v.call_method0("isoweekday")?.extract()?;
        if !(1900..=2154).contains(&y) {
            // 2155 would encode as 255, "any year".
            return Err(PyValueError::new_err(format!("year {y} is outside BACnet's 1900..=2154")));
        }
        let year = (y - 1900) as u8;
        return Ok(Value::Date(Date { year, month: m, day: d, weekday }));
    }
    if name == "time" {
        let micros: u32 = v.getattr("microsecond")?.extract()?;
        return Ok(Value::Time(Time {
            hour: v.getattr("hour")?.extract()?,
            minute: v.getattr("minute")?.extract()?,
            second: v.getattr("second")?.extract()?,
            hundredths: (micros / 10_000) as u8,
        }));
    }
    if v.cast::<PyTuple>().is_ok() {
        return Ok(Value::ObjectIdentifier(object_id(v)?));
    }
    Err(PyTypeError::new_err(format!(
        "cannot write a {name} as a BACnet value (give None, bool, int, float, str, bytes, date, time, \
         trellis.Enumerated, an object identifier or a list of these)"
    )))
}

/// An object identifier from `"analog-value,1"`, `"analog-value:1"`,
/// `("analog-value", 1)`, `(ObjectType.ANALOG_VALUE, 1)` or a
/// `trellis.ObjectIdentifier`.
pub fn object_id(v: &Bound<'_, PyAny>) -> PyResult<ObjectIdentifier> {
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_str()?;
        return s
            .parse()
            .map_err(|e| PyValueError::new_err(format!("{s:?} is not an object identifier (`analog-value,1`): {e}")));
    }
    if let Ok(t) = v.cast::<PyTuple>()
        && t.len() == 2
    {
        let kind = t.get_item(0)?;
        let instance: u32 = t.get_item(1)?.extract()?;
        let object_type =
            enum_arg(&kind, "object type", ObjectType::from_name, |n| (n < 1024).then_some(ObjectType(n)))?;
        if instance > ObjectIdentifier::MAX_INSTANCE {
            return Err(PyValueError::new_err(format!("instance {instance} is beyond 4194303")));
        }
        return ObjectIdentifier::new(object_type, instance)
            .map_err(|e| PyValueError::new_err(format!("({object_type}, {instance}): {e}")));
    }
    Err(PyTypeError::new_err(format!(
        "{v:?} is not an object identifier: give \"analog-value,1\" or (\"analog-value\", 1)"
    )))
}

/// A property from `"present-value"`, `PropertyIdentifier.PRESENT_VALUE` or
/// its number.
pub fn property_id(v: &Bound<'_, PyAny>) -> PyResult<P> {
    enum_arg(v, "property", P::from_name, |n| Some(P(n)))
}

/// An enumeration argument by its standard name or its number.
pub fn enum_arg<T>(
    v: &Bound<'_, PyAny>,
    what: &str,
    by_name: impl Fn(&str) -> Option<T>,
    by_number: impl Fn(u32) -> Option<T>,
) -> PyResult<T> {
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_str()?;
        return by_name(s).ok_or_else(|| PyValueError::new_err(format!("{s:?} is not a {what} this library knows")));
    }
    if v.cast::<PyInt>().is_ok() {
        let n: u32 = v.extract()?;
        return by_number(n).ok_or_else(|| PyValueError::new_err(format!("{n} is not a {what} number")));
    }
    Err(PyTypeError::new_err(format!("a {what} is a name (str) or a number (int), not {v:?}")))
}
