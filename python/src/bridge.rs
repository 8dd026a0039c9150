//! Rust futures as asyncio futures: run on the package's tokio runtime,
//! completed on the event loop's thread.
//!
//! A call returns an `asyncio.Future` made by the running loop. Its Rust
//! future runs on a tokio worker and ends with an [`Outcome`]: a conversion
//! to a Python value (or exception) that runs later, on the loop's thread,
//! with the GIL the loop already holds. Finished outcomes wait in the loop's
//! queue; a worker wakes the loop (`call_soon_threadsafe`, one write to its
//! self-pipe) only when the queue was empty, so a burst of answers costs
//! one wake-up and one GIL hand-over, not one each.
//!
//! Cancelling the asyncio future aborts the tokio task: the Rust future is
//! dropped at once (the client then abandons its transaction).
//!
//! Must never: attach a worker thread to Python (convert values, raise
//! exceptions, call the loop) — outcomes run on the loop's thread.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use pyo3::{IntoPyObjectExt, intern};
use std::collections::HashMap;
use std::future::Future;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::sync::{Arc, Mutex, OnceLock};

/// What a finished Rust future hands to the loop: its result, converted
/// there.
pub type Outcome = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// An outcome from its conversion (the closure's signature fixed here, so
/// that it holds for any `Python<'py>`).
pub fn convert<F>(f: F) -> Outcome
where
    F: for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Box::new(f)
}

/// An outcome that is `None`.
pub fn none() -> Outcome {
    convert(|py| Ok(py.None()))
}

/// An outcome that is `value` converted.
pub fn value<T>(value: T) -> Outcome
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    convert(move |py| value.into_py_any(py))
}

/// The outcome of a fallible step: its value, or its error as the
/// exception `error` makes of it.
pub fn result<T, E>(r: Result<T, E>, error: impl FnOnce(Python<'_>, E) -> PyErr + Send + 'static) -> Outcome
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
    E: Send + 'static,
{
    match r {
        Ok(v) => value(v),
        Err(e) => convert(move |py| Err(error(py, e))),
    }
}

/// The runtime every call runs on: one worker thread. A request crosses
/// from the event loop to it and back, and the client's tasks (the request,
/// the transaction state machine's actor, the port's receive task) stay on
/// it, with no hop between workers. Measured (release wheel, client pinned
/// to one CPU): the bridge's round trip 49.6 → 42.7 µs against two
/// workers; one task awaiting ReadProperty 5.1k → 6.2k reads/s, 32 tasks
/// 23k → 29k reads/s.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("trellis-worker")
            .enable_all()
            .build()
            .expect("the tokio runtime starts (a thread and an epoll instance)")
    })
}

/// One event loop's finished outcomes, and the socket pair that wakes it:
/// the loop watches `wake_rx` (`add_reader`), workers write to `wake_tx`.
struct LoopQueue {
    /// Held so that no other loop can take its address while it is mapped.
    event_loop: Py<PyAny>,
    pending: Mutex<Vec<(Py<PyAny>, Outcome)>>,
    wake_tx: UnixDatagram,
    wake_rx: UnixDatagram,
}

static QUEUES: Mutex<Option<HashMap<usize, Arc<LoopQueue>>>> = Mutex::new(None);

fn queue_for(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Arc<LoopQueue>> {
    let key = event_loop.as_ptr() as usize;
    // The lock is never held while Python runs: Python may hand the GIL to
    // another thread, which would then wait for the lock holding the GIL.
    let known: Vec<(usize, Arc<LoopQueue>)> = {
        let queues = QUEUES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(q) = queues.as_ref().and_then(|m| m.get(&key)) {
            return Ok(q.clone());
        }
        queues.iter().flatten().map(|(k, q)| (*k, q.clone())).collect()
    };
    // A new loop: forget the closed ones (their sockets close with the last
    // task that still holds their queue).
    let closed: Vec<usize> = known
        .iter()
        .filter(|(_, q)| {
            q.event_loop.call_method0(py, intern!(py, "is_closed")).and_then(|c| c.is_truthy(py)).unwrap_or(true)
        })
        .map(|(k, _)| *k)
        .collect();
    drop(known);
    let (wake_tx, wake_rx) = UnixDatagram::pair()?;
    wake_tx.set_nonblocking(true)?;
    wake_rx.set_nonblocking(true)?;
    let queue = Arc::new(LoopQueue {
        event_loop: event_loop.clone().unbind(),
        pending: Mutex::new(Vec::new()),
        wake_tx,
        wake_rx,
    });
    let weak = Arc::downgrade(&queue);
    let drain = PyCFunction::new_closure(py, None, None, move |args, _| {
        if let Some(q) = weak.upgrade() {
            drain_queue(args.py(), &q);
        }
    })?;
    event_loop.call_method1(intern!(py, "add_reader"), (queue.wake_rx.as_raw_fd(), drain))?;
    let removed: Vec<Arc<LoopQueue>> = {
        let mut queues = QUEUES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let queues = queues.get_or_insert_with(HashMap::new);
        let removed = closed.iter().filter_map(|k| queues.remove(k)).collect();
        // A loop runs on one thread, so no other call registered it meanwhile.
        queues.insert(key, queue.clone());
        removed
    };
    // Dropped here, with the GIL and without the lock.
    drop(removed);
    Ok(queue)
}

/// On the loop's thread: settle every finished future.
fn drain_queue(py: Python<'_>, queue: &LoopQueue) {
    let mut wakes = [0u8; 64];
    while queue.wake_rx.recv(&mut wakes).is_ok() {}
    let ready = std::mem::take(&mut *queue.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    for (future, outcome) in ready {
        let future = future.bind(py);
        // A cancelled future was settled by its canceller.
        if future.call_method0(intern!(py, "done")).and_then(|d| d.is_truthy()).unwrap_or(true) {
            continue;
        }
        let settled = match outcome(py) {
            Ok(v) => future.call_method1(intern!(py, "set_result"), (v,)),
            Err(e) => future.call_method1(intern!(py, "set_exception"), (e.into_value(py),)),
        };
        if let Err(e) = settled {
            e.write_unraisable(py, Some(future));
        }
    }
}

/// On a worker: queue the outcome, waking the loop if it was not already.
/// Never touches Python.
fn finish(queue: &LoopQueue, future: Py<PyAny>, outcome: Outcome) {
    let wake = {
        let mut pending = queue.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.push((future, outcome));
        pending.len() == 1
    };
    if wake {
        // A full socket buffer already holds a wake-up; a closed loop has
        // stopped reading and its futures are gone with it.
        let _ = queue.wake_tx.send(&[1]);
    }
}

/// Aborts a task when its asyncio future is cancelled (a done callback).
#[pyclass(frozen, module = "trellis._native")]
pub struct Canceller {
    task: tokio::task::AbortHandle,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0(intern!(future.py(), "cancelled"))?.is_truthy()? {
            self.task.abort();
        }
        Ok(())
    }
}

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Run `fut` on the runtime; returns the asyncio future of the running loop
/// that its outcome settles.
pub fn spawn<'py, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome> + Send + 'static,
{
    let get_loop = GET_RUNNING_LOOP.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import(intern!(py, "asyncio"))?.getattr(intern!(py, "get_running_loop"))?.unbind())
    })?;
    let event_loop = get_loop.call0(py)?.into_bound(py);
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    let queue = queue_for(py, &event_loop)?;
    let settled = future.clone().unbind();
    let task = runtime().spawn(async move {
        let outcome = fut.await;
        finish(&queue, settled, outcome);
    });
    future.call_method1(intern!(py, "add_done_callback"), (Canceller { task: task.abort_handle() },))?;
    Ok(future)
}
