//! `trellis._native.NativeClient`: the Rust client's services, each
//! returning an asyncio future. `trellis.Client` (client.py) wraps it in
//! coroutines with keyword arguments and the package's types.
//!
//! Every request runs on the shared tokio runtime; Python is attached only
//! to convert arguments before and the result after. A cancelled asyncio
//! future drops the Rust future, and the client's transaction state machine
//! then abandons the transaction.
//!
//! Must never: block the event loop's thread on the network, or keep the
//! client's port open after `close()` once the calls in flight end.

use crate::bridge::{self, Outcome};
use crate::errors::to_pyerr;
use crate::values::{enum_arg, from_py, object_id, object_identifier, property_id, to_py};
use bacnet::enums::{EnableDisable, PropertyIdentifier as P, ReinitializedState};
use bacnet::services::{
    PropertyReference, PropertyValue, Range, ReadAccessSpecification, ReadResult, WriteAccessSpecification,
};
use bacnet::{Date, ObjectIdentifier, Time};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::num::NonZeroI16;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use trellis_client::{Client, ClientConfig, ClientError, CovSubscription, Destination, DeviceAddress, ForeignDevice};

type Awaitable<'py> = PyResult<Bound<'py, PyAny>>;

/// Requests that may wait for one device before a call fails (QueueFull).
const MAX_QUEUED_PER_DEVICE: usize = 100_000;

/// A BACnet client on one B/IP port.
#[pyclass(frozen, module = "trellis._native")]
pub struct NativeClient {
    client: Mutex<Option<Client>>,
    local: String,
}

fn address(text: &str) -> PyResult<DeviceAddress> {
    text.parse().map_err(|e| {
        PyValueError::new_err(format!(
            "{e}: a device address is IP[:PORT], optionally @NET:MAC (hex) for a device behind a router"
        ))
    })
}

/// Run a request on the runtime: its outcome, or its failure as the
/// exception for it (made on the loop's thread).
fn requested<'py, F>(py: Python<'py>, request: F) -> Awaitable<'py>
where
    F: std::future::Future<Output = Result<Outcome, ClientError>> + Send + 'static,
{
    bridge::spawn(py, async move {
        match request.await {
            Ok(outcome) => outcome,
            Err(e) => bridge::convert(move |py| Err(to_pyerr(py, &e))),
        }
    })
}

fn seconds(s: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| PyValueError::new_err(format!("{what} must be a positive number of seconds")))
}

impl NativeClient {
    fn client(&self) -> PyResult<Client> {
        let client = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        // The lock is released before Python runs (building the exception).
        client.ok_or_else(|| Python::attach(|py| to_pyerr(py, &ClientError::Closed)))
    }
}

#[pymethods]
impl NativeClient {
    /// Bind a B/IP port; resolves to the client.
    #[staticmethod]
    #[pyo3(signature = (bind, port, broadcast, broadcast_port, timeout, retries, max_in_flight, bbmd, ttl))]
    #[allow(clippy::too_many_arguments)]
    fn bind<'py>(
        py: Python<'py>,
        bind: String,
        port: u16,
        broadcast: Option<String>,
        broadcast_port: u16,
        timeout: f64,
        retries: u8,
        max_in_flight: Option<usize>,
        bbmd: Option<String>,
        ttl: u16,
    ) -> Awaitable<'py> {
        let mut bip = trellis_bip::BipConfig::from_cidr(&bind, port)
            .map_err(|e| PyValueError::new_err(format!("bind {bind:?}: {e}")))?;
        // Broadcasts go to the network's port, whatever the local one.
        bip.broadcast_port = Some(broadcast_port);
        if let Some(b) = broadcast {
            bip.broadcast =
                Some(b.parse().map_err(|_| PyValueError::new_err(format!("broadcast {b:?} is not an IPv4 address")))?);
        }
        let mut tsm =
            bacnet::tsm::TsmConfig { apdu_timeout: seconds(timeout, "timeout")?, retries, ..Default::default() };
        if let Some(n) = max_in_flight {
            tsm.max_in_flight_per_peer = n;
        }
        // `asyncio.gather` of thousands of reads is ordinary Python: they
        // wait their turn (max_in_flight at a time) instead of failing.
        tsm.max_queued_per_peer = MAX_QUEUED_PER_DEVICE;
        let foreign_device = match bbmd {
            Some(b) => Some(ForeignDevice {
                bbmd: b.parse().map_err(|_| PyValueError::new_err(format!("bbmd {b:?} is not IP:PORT")))?,
                ttl,
            }),
            None => None,
        };
        let config = ClientConfig { bip, tsm, foreign_device };
        bridge::spawn(py, async move {
            match Client::bind(config).await {
                Ok(client) => {
                    let local = client.local_addr().to_string();
                    bridge::value(NativeClient { client: Mutex::new(Some(client)), local })
                }
                Err(e) => {
                    let message = e.to_string();
                    bridge::convert(move |py| Err(crate::errors::communication_error(py, message)))
                }
            }
        })
    }

    /// Our address (IP:PORT).
    #[getter]
    fn local_address(&self) -> String {
        self.local.clone()
    }

    /// Let go of the port once the calls in flight end (no event loop needed).
    fn close(&self) {
        self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }

    /// Shut down: calls in flight fail with ClientClosedError, and the port
    /// is closed when this resolves.
    fn shutdown<'py>(&self, py: Python<'py>) -> Awaitable<'py> {
        let client = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        bridge::spawn(py, async move {
            if let Some(c) = client {
                c.shutdown().await;
            }
            bridge::none()
        })
    }

    /// Who-Is; resolves to a list of (instance, address, max_apdu, segmentation, vendor_id).
    #[pyo3(signature = (low, high, target, timeout, global_broadcast))]
    fn who_is<'py>(
        &self,
        py: Python<'py>,
        low: Option<u32>,
        high: Option<u32>,
        target: Option<String>,
        timeout: f64,
        global_broadcast: bool,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let range = match (low, high) {
            (None, None) => None,
            (lo, hi) => Some((lo.unwrap_or(0), hi.unwrap_or(ObjectIdentifier::MAX_INSTANCE))),
        };
        if range.is_some_and(|(lo, hi)| lo > hi || hi > ObjectIdentifier::MAX_INSTANCE) {
            return Err(PyValueError::new_err("the instance range must be low <= high <= 4194303"));
        }
        let to = match target {
            Some(t) => Destination::Device(address(&t)?),
            None if global_broadcast => Destination::GlobalBroadcast,
            None => Destination::LocalBroadcast,
        };
        let wait = seconds(timeout, "timeout")?;
        requested(py, async move {
            let found = client.who_is(to, range, wait).await?.collect().await;
            Ok(bridge::value(
                found
                    .into_iter()
                    .map(|d| {
                        (
                            d.i_am.device.instance,
                            d.address.to_string(),
                            d.i_am.max_apdu_length_accepted,
                            d.i_am.segmentation_supported.to_string(),
                            d.i_am.vendor_id,
                        )
                    })
                    .collect::<Vec<_>>(),
            ))
        })
    }

    /// ReadProperty.
    #[pyo3(signature = (device, object, property, index=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        object: &Bound<'py, PyAny>,
        property: &Bound<'py, PyAny>,
        index: Option<u32>,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let (device, object, property) = (address(device)?, object_id(object)?, property_id(property)?);
        requested(py, async move {
            let value = client.read_property(&device, object, property, index).await?;
            Ok(bridge::convert(move |py| to_py(py, object.object_type, property, index, &value)))
        })
    }

    /// ReadPropertyMultiple: `specs` is [(object, [(property, index)])];
    /// resolves to [(object, [(property, index, value or exception)])].
    fn read_multiple<'py>(&self, py: Python<'py>, device: &str, specs: &Bound<'py, PyList>) -> Awaitable<'py> {
        let client = self.client()?;
        let device = address(device)?;
        let mut request = Vec::with_capacity(specs.len());
        for spec in specs.iter() {
            let (object, properties): (Bound<'py, PyAny>, Bound<'py, PyList>) = spec.extract()?;
            let mut refs = Vec::with_capacity(properties.len());
            for p in properties.iter() {
                let (property, array_index): (Bound<'py, PyAny>, Option<u32>) = p.extract()?;
                refs.push(PropertyReference { property: property_id(&property)?, array_index });
            }
            if refs.is_empty() {
                return Err(PyValueError::new_err("each object needs at least one property to read"));
            }
            request.push(ReadAccessSpecification { object: object_id(&object)?, properties: refs });
        }
        requested(py, async move {
            let results = client.read_property_multiple(&device, request).await?;
            Ok(bridge::convert(move |py| -> PyResult<Py<PyAny>> {
                let out = PyList::empty(py);
                for r in results {
                    let props = PyList::empty(py);
                    for ReadResult { property, array_index, outcome } in r.results {
                        let value = match outcome {
                            Ok(v) => to_py(py, r.object.object_type, property, array_index, &v)?,
                            Err(e) => to_pyerr(py, &ClientError::Bacnet { class: e.class, code: e.code })
                                .into_value(py)
                                .into_any(),
                        };
                        props.append((property_name(property), array_index, value))?;
                    }
                    out.append((object_identifier(py, r.object)?, props))?;
                }
                Ok(out.into_any().unbind())
            }))
        })
    }

    /// WriteProperty; `value` None relinquishes (with a priority).
    #[pyo3(signature = (device, object, property, value, priority=None, index=None))]
    #[allow(clippy::too_many_arguments)]
    fn write<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        object: &Bound<'py, PyAny>,
        property: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
        priority: Option<u8>,
        index: Option<u32>,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let (device, object, property) = (address(device)?, object_id(object)?, property_id(property)?);
        check_priority(priority)?;
        let value = from_py(object.object_type, property, value)?;
        requested(py, async move {
            client.write_property(&device, object, property, index, value, priority).await?;
            Ok(bridge::none())
        })
    }

    /// WritePropertyMultiple: `specs` is [(object, [(property, value, index, priority)])].
    fn write_multiple<'py>(&self, py: Python<'py>, device: &str, specs: &Bound<'py, PyList>) -> Awaitable<'py> {
        let client = self.client()?;
        let device = address(device)?;
        let mut request = Vec::with_capacity(specs.len());
        for spec in specs.iter() {
            let (object, values): (Bound<'py, PyAny>, Bound<'py, PyList>) = spec.extract()?;
            let object = object_id(&object)?;
            let mut out = Vec::with_capacity(values.len());
            for v in values.iter() {
                let (property, value, array_index, priority): (
                    Bound<'py, PyAny>,
                    Bound<'py, PyAny>,
                    Option<u32>,
                    Option<u8>,
                ) = v.extract()?;
                check_priority(priority)?;
                let property = property_id(&property)?;
                let value = from_py(object.object_type, property, &value)?;
                out.push(PropertyValue { property, array_index, value, priority });
            }
            if out.is_empty() {
                return Err(PyValueError::new_err("each object needs at least one property to write"));
            }
            request.push(WriteAccessSpecification { object, values: out });
        }
        requested(py, async move {
            client.write_property_multiple(&device, request).await?;
            Ok(bridge::none())
        })
    }

    /// SubscribeCOV (or SubscribeCOVProperty with `property`); also renews.
    #[pyo3(signature = (device, object, process_id, confirmed, lifetime, property=None, increment=None, cancel=false))]
    #[allow(clippy::too_many_arguments)]
    fn subscribe_cov<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        object: &Bound<'py, PyAny>,
        process_id: u32,
        confirmed: bool,
        lifetime: u32,
        property: Option<&Bound<'py, PyAny>>,
        increment: Option<f32>,
        cancel: bool,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let device = address(device)?;
        let mut sub = CovSubscription::new(process_id, object_id(object)?).confirmed(confirmed).lifetime(lifetime);
        if let Some(p) = property {
            sub = sub.property(PropertyReference::new(property_id(p)?), increment);
        }
        requested(py, async move {
            if cancel { client.cancel_cov(&device, &sub).await } else { client.subscribe_cov(&device, &sub).await }?;
            Ok(bridge::none())
        })
    }

    /// A listener for every COV notification this client receives from now on.
    fn cov_listener(&self) -> PyResult<CovListener> {
        let client = self.client()?;
        Ok(CovListener { rx: Arc::new(tokio::sync::Mutex::new(client.cov_notifications())) })
    }

    /// ReadRange: `by` is None (everything), "position", "sequence" or "time".
    #[pyo3(signature = (device, object, property, index, by, reference, count))]
    #[allow(clippy::too_many_arguments)]
    fn read_range<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        object: &Bound<'py, PyAny>,
        property: &Bound<'py, PyAny>,
        index: Option<u32>,
        by: Option<&str>,
        reference: Option<&Bound<'py, PyAny>>,
        count: i16,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let (device, object, property) = (address(device)?, object_id(object)?, property_id(property)?);
        let count = NonZeroI16::new(count);
        let need =
            |what: &str| PyValueError::new_err(format!("a ReadRange by {what} needs a reference and a non-zero count"));
        let range = match by {
            None => None,
            Some("position") => Some(Range::ByPosition {
                reference_index: reference.ok_or_else(|| need("position"))?.extract()?,
                count: count.ok_or_else(|| need("position"))?,
            }),
            Some("sequence") => Some(Range::BySequenceNumber {
                reference_sequence: reference.ok_or_else(|| need("sequence"))?.extract()?,
                count: count.ok_or_else(|| need("sequence"))?,
            }),
            Some("time") => {
                let at = reference.ok_or_else(|| need("time"))?;
                Some(Range::ByTime { reference_time: date_time(at)?, count: count.ok_or_else(|| need("time"))? })
            }
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "by={other:?}: give \"position\", \"sequence\" or \"time\""
                )));
            }
        };
        requested(py, async move {
            let ack = client.read_range(&device, object, property, index, range).await?;
            Ok(bridge::convert(move |py| -> PyResult<Py<PyAny>> {
                let d = PyDict::new(py);
                d.set_item("first_sequence_number", ack.first_sequence_number)?;
                d.set_item("first_item", ack.result_flags.first_item)?;
                d.set_item("last_item", ack.result_flags.last_item)?;
                d.set_item("more_items", ack.result_flags.more_items)?;
                d.set_item("item_count", ack.item_count)?;
                let items = match crate::records::log_records(py, &ack.item_data.0)? {
                    Some(records) => records,
                    None => {
                        let v = to_py(py, object.object_type, property, None, &ack.item_data)?;
                        if v.bind(py).cast::<PyList>().is_ok() { v } else { PyList::new(py, [v])?.into_any().unbind() }
                    }
                };
                d.set_item("items", items)?;
                Ok(d.into_any().unbind())
            }))
        })
    }

    /// DeviceCommunicationControl: `state` is enable, disable or disable-initiation.
    #[pyo3(signature = (device, state, duration=None, password=None))]
    fn device_communication_control<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        state: &Bound<'py, PyAny>,
        duration: Option<u16>,
        password: Option<String>,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let device = address(device)?;
        let state = enum_arg(state, "communication state", EnableDisable::from_name, |n| Some(EnableDisable(n)))?;
        requested(py, async move {
            client.device_communication_control(&device, duration, state, password.as_deref()).await?;
            Ok(bridge::none())
        })
    }

    /// ReinitializeDevice: `state` is coldstart, warmstart, activate-changes, …
    #[pyo3(signature = (device, state, password=None))]
    fn reinitialize<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        state: &Bound<'py, PyAny>,
        password: Option<String>,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let device = address(device)?;
        let state =
            enum_arg(state, "reinitialized state", ReinitializedState::from_name, |n| Some(ReinitializedState(n)))?;
        requested(py, async move {
            client.reinitialize_device(&device, state, password.as_deref()).await?;
            Ok(bridge::none())
        })
    }

    /// TimeSynchronization (local time) or UTCTimeSynchronization, to one
    /// device or broadcast; `when` is a datetime.
    #[pyo3(signature = (target, when, utc))]
    fn time_sync<'py>(
        &self,
        py: Python<'py>,
        target: Option<String>,
        when: &Bound<'py, PyAny>,
        utc: bool,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let to = match target {
            Some(t) => Destination::Device(address(&t)?),
            None => Destination::LocalBroadcast,
        };
        let (date, time) = date_time(when)?;
        requested(py, async move {
            if utc {
                client.utc_time_synchronization(to, date, time).await
            } else {
                client.time_synchronization(to, date, time).await
            }?;
            Ok(bridge::none())
        })
    }

    /// Who-Is, then each device's objects and their names, as JSON text
    /// (what `trellis discover --json` prints).
    #[pyo3(signature = (low, high, target, timeout))]
    fn discover<'py>(
        &self,
        py: Python<'py>,
        low: Option<u32>,
        high: Option<u32>,
        target: Option<String>,
        timeout: f64,
    ) -> Awaitable<'py> {
        let client = self.client()?;
        let range = match (low, high) {
            (None, None) => None,
            (lo, hi) => Some((lo.unwrap_or(0), hi.unwrap_or(ObjectIdentifier::MAX_INSTANCE))),
        };
        let to = match target {
            Some(t) => Destination::Device(address(&t)?),
            None => Destination::LocalBroadcast,
        };
        let wait = seconds(timeout, "timeout")?;
        requested(py, async move {
            let found = client.who_is(to, range, wait).await?.collect().await;
            let mut reports = Vec::with_capacity(found.len());
            for d in &found {
                reports.push(trellis::cli::discover::describe(&client, d).await);
            }
            let text = serde_json::to_string(&reports).map_err(|e| std::io::Error::other(e.to_string()));
            Ok(bridge::value(text.map_err(ClientError::Io)?))
        })
    }
}

fn check_priority(priority: Option<u8>) -> PyResult<()> {
    match priority {
        Some(p) if !(1..=16).contains(&p) => Err(PyValueError::new_err(format!("priority {p} is not 1..=16"))),
        _ => Ok(()),
    }
}

fn property_name(p: P) -> String {
    p.to_string()
}

/// A datetime as a BACnet Date and Time (its own fields, as given).
fn date_time(when: &Bound<'_, PyAny>) -> PyResult<(Date, Time)> {
    let year: u16 = when.getattr("year")?.extract()?;
    if !(1900..=2154).contains(&year) {
        return Err(PyValueError::new_err(format!("year {year} is outside BACnet's 1900..=2154")));
    }
    let date = Date {
        year: (year - 1900) as u8,
        month: when.getattr("month")?.extract()?,
        day: when.getattr("day")?.extract()?,
        weekday: when.call_method0("isoweekday")?.extract()?,
    };
    let micros: u32 = when.getattr("microsecond")?.extract()?;
    let time = Time {
        hour: when.getattr("hour")?.extract()?,
        minute: when.getattr("minute")?.extract()?,
        second: when.getattr("second")?.extract()?,
        hundredths: (micros / 10_000) as u8,
    };
    Ok((date, time))
}

/// Every COV notification the client receives, in order; a listener that
/// falls more than the channel's capacity behind loses the oldest and
/// counts them in `missed`.
#[pyclass(frozen, module = "trellis._native")]
pub struct CovListener {
    rx: Arc<tokio::sync::Mutex<broadcast::Receiver<trellis_client::CovNotificationReceived>>>,
}

#[pymethods]
impl CovListener {
    /// The next notification: (source, confirmed, process_id, device,
    /// object, time_remaining, missed, [(property, index, value)]).
    fn next<'py>(&self, py: Python<'py>) -> Awaitable<'py> {
        let rx = self.rx.clone();
        requested(py, async move {
            let mut rx = rx.lock().await;
            let mut missed = 0u64;
            let n = loop {
                match rx.recv().await {
                    Ok(n) => break n,
                    Err(broadcast::error::RecvError::Lagged(k)) => missed += k,
                    Err(broadcast::error::RecvError::Closed) => return Err(ClientError::Closed),
                }
            };
            Ok(bridge::convert(move |py| -> PyResult<Py<PyAny>> {
                let c = &n.notification;
                let values = PyList::empty(py);
                for v in &c.values {
                    let value = to_py(py, c.monitored_object.object_type, v.property, v.array_index, &v.value)?;
                    values.append((property_name(v.property), v.array_index, value))?;
                }
                (
                    n.source.to_string(),
                    n.confirmed,
                    c.subscriber_process_identifier,
                    c.initiating_device.instance,
                    object_identifier(py, c.monitored_object)?,
                    c.time_remaining,
                    missed,
                    values,
                )
                    .into_py_any(py)
            }))
        })
    }
}
