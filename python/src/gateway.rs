//! `trellis._native.NativeGateway`: a gateway served in-process, on a
//! thread and a runtime of its own (its devices on their shard threads, as
//! `trellis run` does), so that it never needs the GIL and the Python
//! program's event loop never runs it.
//!
//! Stopping it ends its tasks, joins its threads and drops its runtime:
//! every port it bound is closed when `stop()` resolves.
//!
//! Must never: install signal handlers (Python owns SIGINT), or outlive the
//! object without being stopped (dropping it stops it).

use crate::bridge;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use trellis::admin::{Admin, Request, Response};
use trellis::cli::{StartOptions, Started};
use trellis::config::Config;

type Awaitable<'py> = PyResult<Bound<'py, PyAny>>;

/// What the running gateway shares with Python.
struct Running {
    admin: Arc<Admin>,
    gateway: Arc<trellis::http::Gateway>,
    runtime: tokio::runtime::Handle,
}

/// A gateway served in this process.
#[pyclass(frozen, module = "trellis._native")]
pub struct NativeGateway {
    running: Running,
    devices: Vec<u32>,
    console_url: Option<String>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    thread: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// The configuration to serve: a TOML file, TOML text, or the embedded
/// single device with the caller's overrides.
fn configuration(
    config: Option<&Bound<'_, PyAny>>,
    plugin: Option<String>,
    bind: Option<String>,
    port: Option<u16>,
    device_id: Option<u32>,
    data_dir: Option<PathBuf>,
) -> PyResult<(Config, PathBuf)> {
    let here = std::env::current_dir().unwrap_or_default();
    if let Some(c) = config {
        if plugin.is_some() || port.is_some() || device_id.is_some() || bind.is_some() {
            return Err(PyValueError::new_err(
                "give either a configuration or plugin/port/bind/device_id, not both (the configuration's \
                 [[device]] sections say those)",
            ));
        }
        if let Ok(text) = c.extract::<String>()
            && text.contains('\n')
        {
            let config = Config::parse(&text).map_err(|e| PyValueError::new_err(format!("configuration: {e:#}")))?;
            return Ok((config, here));
        }
        let path: PathBuf = c.extract()?;
        let config = Config::load(&path).map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
        let base =
            path.parent().map_or(here, |p| if p.as_os_str().is_empty() { PathBuf::from(".") } else { p.to_path_buf() });
        return Ok((config, base));
    }
    let plugin = plugin
        .map(|p| if p.contains(':') || p.ends_with(".wasm") || p.contains('/') { p } else { format!("builtin:{p}") });
    let config = trellis::cli::single_device(bind, port, device_id, plugin, data_dir);
    Ok((config, here))
}

#[pymethods]
impl NativeGateway {
    /// Start serving; resolves to the gateway once every port is bound.
    #[staticmethod]
    #[pyo3(signature = (config, plugin, bind, port, device_id, data_dir, http, admin_socket))]
    #[allow(clippy::too_many_arguments)]
    fn serve<'py>(
        py: Python<'py>,
        config: Option<&Bound<'py, PyAny>>,
        plugin: Option<String>,
        bind: Option<String>,
        port: Option<u16>,
        device_id: Option<u32>,
        data_dir: Option<PathBuf>,
        http: Option<String>,
        admin_socket: Option<PathBuf>,
    ) -> Awaitable<'py> {
        let (config, base) = configuration(config, plugin, bind, port, device_id, data_dir)?;
        let options = StartOptions { http: Some(http.unwrap_or_else(|| "off".into())), admin_socket };
        let (ready_tx, ready_rx) = oneshot::channel::<Result<(Running, Vec<u32>, Option<String>), String>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("trellis-gateway".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("cannot start the gateway's runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let mut started: Started = match trellis::cli::start(config, base, options).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = ready_tx.send(Err(format!("{e:#}")));
                            return;
                        }
                    };
                    let running = Running {
                        admin: started.admin().clone(),
                        gateway: started.gateway().clone(),
                        runtime: tokio::runtime::Handle::current(),
                    };
                    let devices = started.gateway().devices.keys().copied().collect();
                    let url = started.console_url().map(str::to_owned);
                    if ready_tx.send(Ok((running, devices, url))).is_err() {
                        started.stop().await;
                        return;
                    }
                    tokio::select! {
                        _ = stop_rx => {}
                        ended = started.stopped() => {
                            if let Err(e) = ended {
                                eprintln!("trellis: the gateway stopped: {e:#}");
                            }
                        }
                    }
                    started.stop().await;
                });
                runtime.shutdown_timeout(std::time::Duration::from_secs(5));
            })
            .map_err(runtime_error)?;
        let thread = Arc::new(Mutex::new(Some(thread)));
        bridge::spawn(py, async move {
            let started = match ready_rx.await {
                Ok(Ok((running, devices, console_url))) => {
                    Ok(NativeGateway { running, devices, console_url, stop: Mutex::new(Some(stop_tx)), thread })
                }
                Ok(Err(e)) => {
                    join(&thread).await;
                    Err(runtime_error(format!("the gateway did not start: {e}")))
                }
                Err(_) => {
                    join(&thread).await;
                    Err(runtime_error("the gateway did not start (its thread ended)"))
                }
            };
            bridge::result(started, |_, e| e)
        })
    }

    /// The device instances served.
    #[getter]
    fn devices(&self) -> Vec<u32> {
        self.devices.clone()
    }

    /// The console's URL, when it listens.
    #[getter]
    fn console_url(&self) -> Option<String> {
        self.console_url.clone()
    }

    /// Ports, COV and request counters, as JSON text.
    fn counters(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let g = &self.running.gateway;
        let devices: serde_json::Map<String, serde_json::Value> = g
            .devices
            .iter()
            .map(|(instance, d)| {
                let s = d.server.stats();
                let h = d.server.model().health();
                (
                    instance.to_string(),
                    serde_json::json!({
                        "refused": s.refused.load(Relaxed),
                        "duplicates": s.duplicates.load(Relaxed),
                        "segmented_requests": s.segmented_requests.load(Relaxed),
                        "segmented_responses": s.segmented_responses.load(Relaxed),
                        "aborted": s.aborted.load(Relaxed),
                        "aborted_by_client": s.aborted_by_client.load(Relaxed),
                        "timed_out": s.timed_out.load(Relaxed),
                        "dropped_unconfirmed": s.dropped_unconfirmed.load(Relaxed),
                        "model_busy": s.model_busy.load(Relaxed),
                        "plugin": {
                            "restarts": h.restarts,
                            "failures": h.failures,
                            "disabled": h.disabled,
                        },
                    }),
                )
            })
            .collect();
        serde_json::json!({
            "devices": devices,
            "ports": trellis::http::gateway::ports_json(g),
            "cov": trellis::http::gateway::cov_json(g),
        })
        .to_string()
    }

    /// Plugin status (the admin socket's `status`), as JSON text.
    fn status<'py>(&self, py: Python<'py>) -> Awaitable<'py> {
        self.admin(py, Request::Status)
    }

    /// Hot swap a device's plugin for the component at `path` (vetted as at
    /// start-up); resolves to the admin socket's answer, as JSON text.
    fn swap<'py>(&self, py: Python<'py>, device: u32, path: PathBuf) -> Awaitable<'py> {
        self.admin(py, Request::Swap { device, file: path })
    }

    /// Stop serving; resolves once every thread has ended and every port is closed.
    fn stop<'py>(&self, py: Python<'py>) -> Awaitable<'py> {
        if let Some(stop) = self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = stop.send(());
        }
        let thread = self.thread.clone();
        bridge::spawn(py, async move {
            join(&thread).await;
            bridge::none()
        })
    }

    /// `stop()` without an event loop: returns once the gateway has stopped.
    fn stop_blocking(&self, py: Python<'_>) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = stop.send(());
        }
        let handle = self.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(h) = handle {
            py.detach(move || {
                let _ = h.join();
            });
        }
    }

    /// True until `stop()` was called or the gateway ended on its own.
    #[getter]
    fn running(&self) -> bool {
        let stopping = self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_none();
        let ended = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_none_or(|t| t.is_finished());
        !stopping && !ended
    }
}

impl NativeGateway {
    fn admin<'py>(&self, py: Python<'py>, request: Request) -> Awaitable<'py> {
        let admin = self.running.admin.clone();
        let task = self.running.runtime.spawn(async move { admin.handle(request).await });
        bridge::spawn(py, async move {
            let answer = match task.await {
                Err(_) => Err(runtime_error("the gateway has stopped")),
                Ok(Response::Failed { error }) => Err(runtime_error(error)),
                Ok(response) => serde_json::to_string(&response).map_err(runtime_error),
            };
            bridge::result(answer, |_, e| e)
        })
    }
}

impl Drop for NativeGateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = stop.send(());
        }
    }
}

/// Wait for the gateway's thread to end, off the runtime's workers.
async fn join(thread: &Arc<Mutex<Option<std::thread::JoinHandle<()>>>>) {
    let handle = thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    if let Some(h) = handle {
        let _ = tokio::task::spawn_blocking(move || h.join()).await;
    }
}
