//! A Trend Log's Log_Buffer (a list of BACnetLogRecord, Clause 12.25) as
//! Python dicts: `{"timestamp": datetime, "value": …, "status_flags": {…}}`.
//!
//! Must never: drop a record it cannot read; a list that is not made of
//! log records is left to the generic conversion (`None` here).

use bacnet::codec::Primitive;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::value::{Element, Value};
use bacnet::{AnyValue, BitString, ObjectType};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The records, or `None` when `elements` are not log records.
pub fn log_records(py: Python<'_>, elements: &[Element]) -> PyResult<Option<Py<PyAny>>> {
    let out = PyList::empty(py);
    let mut rest = elements;
    while !rest.is_empty() {
        let (timestamp, datum, tail) = match rest {
            [
                Element::Constructed { tag: 0, elements: ts },
                Element::Constructed { tag: 1, elements: datum },
                tail @ ..,
            ] => (ts, datum, tail),
            _ => return Ok(None),
        };
        let record = PyDict::new(py);
        let when =
            crate::values::to_py(py, ObjectType::TREND_LOG, P::LOG_BUFFER, Some(1), &AnyValue(timestamp.clone()))?;
        record.set_item("timestamp", when)?;
        let Some((kind, value)) = log_datum(py, datum)? else { return Ok(None) };
        record.set_item("kind", kind)?;
        record.set_item("value", value)?;
        rest = tail;
        if let [Element::Context { tag: 2, data }, tail @ ..] = rest {
            let Ok(flags) = BitString::decode_content(data, 0) else { return Ok(None) };
            let flags = AnyValue::primitive(Value::BitString(flags));
            record.set_item(
                "status_flags",
                crate::values::to_py(py, ObjectType::TREND_LOG, P::STATUS_FLAGS, None, &flags)?,
            )?;
            rest = tail;
        } else {
            record.set_item("status_flags", py.None())?;
        }
        out.append(record)?;
    }
    Ok(Some(out.into_any().unbind()))
}

/// The `logDatum` CHOICE: its name and its value.
fn log_datum(py: Python<'_>, datum: &[Element]) -> PyResult<Option<(&'static str, Py<PyAny>)>> {
    let ok = |kind, v: PyResult<Py<PyAny>>| v.map(|v| Some((kind, v)));
    match datum {
        [Element::Context { tag: 0, data }] => {
            const LOG_STATUS: [&str; 3] = ["log-disabled", "buffer-purged", "log-interrupted"];
            let Ok(bits) = BitString::decode_content(data, 0) else { return Ok(None) };
            let d = PyDict::new(py);
            for (i, on) in bits.iter().enumerate() {
                match LOG_STATUS.get(i) {
                    Some(n) => d.set_item(*n, on)?,
                    None => d.set_item(i, on)?,
                }
            }
            ok("log-status", Ok(d.into_any().unbind()))
        }
        [Element::Context { tag: 1, data }] => match bool::decode_content(data, 0) {
            Ok(b) => ok("boolean", b.into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 2, data }] => match f32::decode_content(data, 0) {
            Ok(r) => ok("real", f64::from(r).into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 3, data }] => match u64::decode_content(data, 0) {
            Ok(e) => ok("enumerated", e.into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 4, data }] => match u64::decode_content(data, 0) {
            Ok(u) => ok("unsigned", u.into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 5, data }] => match i64::decode_content(data, 0) {
            Ok(i) => ok("signed", i.into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 6, data }] => match BitString::decode_content(data, 0) {
            Ok(b) => ok("bitstring", PyList::new(py, b.iter()).map(|l| l.into_any().unbind())),
            Err(_) => Ok(None),
        },
        [Element::Context { tag: 7, data }] if data.is_empty() => ok("null", Ok(py.None())),
        [Element::Constructed { tag: 8, elements }] => match elements.as_slice() {
            [Element::Application(Value::Enumerated(class)), Element::Application(Value::Enumerated(code))] => {
                ok("failure", (ErrorClass(*class).to_string(), ErrorCode(*code).to_string()).into_py_any(py))
            }
            _ => Ok(None),
        },
        [Element::Context { tag: 9, data }] => match f32::decode_content(data, 0) {
            Ok(r) => ok("time-change", f64::from(r).into_py_any(py)),
            Err(_) => Ok(None),
        },
        [Element::Constructed { tag: 10, elements }] => ok(
            "any-value",
            crate::values::to_py(py, ObjectType::TREND_LOG, P::LOG_BUFFER, Some(1), &AnyValue(elements.clone())),
        ),
        _ => Ok(None),
    }
}
