//! Client failures as the typed Python exceptions of `trellis._errors`:
//! a caller catches `trellis.DeviceError` and reads `error_class` and
//! `error_code`, never parses a message.
//!
//! Must never: turn a failure into a generic `Exception`; every
//! `ClientError` has its class.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::{IntoPyObjectExt, intern};
use trellis_client::ClientError;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module = ERRORS.get_or_try_init(py, || Ok::<_, PyErr>(py.import(intern!(py, "trellis._errors"))?.unbind()))?;
    module.bind(py).getattr(name)
}

/// The exception for a failed request.
pub fn to_pyerr(py: Python<'_>, e: &ClientError) -> PyErr {
    match build(py, e) {
        Ok(err) => err,
        Err(failed) => failed,
    }
}

fn build(py: Python<'_>, e: &ClientError) -> PyResult<PyErr> {
    let message = e.to_string();
    let instance = match e {
        ClientError::Bacnet { class: c, code } | ClientError::CreateFailed { class: c, code, .. } => {
            class(py, "DeviceError")?.call1((message, c.to_string(), code.to_string(), c.0, code.0))?
        }
        ClientError::WriteFailed { class: c, code, first_failed } => {
            let failed = (
                crate::values::object_identifier(py, first_failed.object)?,
                first_failed.property.to_string(),
                first_failed.array_index,
            );
            class(py, "WriteFailed")?.call1((message, c.to_string(), code.to_string(), c.0, code.0, failed))?
        }
        ClientError::Reject(r) => class(py, "RejectError")?.call1((message, r.to_string(), r.0))?,
        ClientError::Abort { reason, from_server } => {
            class(py, "AbortError")?.call1((message, reason.to_string(), reason.0, *from_server))?
        }
        ClientError::Timeout { attempts, timeout_ms } => {
            class(py, "BACnetTimeoutError")?.call1((message, *attempts, *timeout_ms as f64 / 1e3))?
        }
        ClientError::Closed => class(py, "ClientClosedError")?.call1((message,))?,
        _ => class(py, "CommunicationError")?.call1((message,))?,
    };
    Ok(PyErr::from_value(instance.into_bound_py_any(py)?))
}

/// A `CommunicationError` with `message` (a port that cannot be bound, …).
pub fn communication_error(py: Python<'_>, message: String) -> PyErr {
    match class(py, "CommunicationError").and_then(|c| c.call1((message,))) {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}
