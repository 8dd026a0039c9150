//! One OS thread per plugin instance, owning its [`Store`].
//!
//! Jobs arrive over a bounded channel, each with a oneshot reply; the async
//! side only ever `try_send`s and awaits the reply, so it never blocks on a
//! plugin. The worker converts arguments to WIT, sets the epoch deadline,
//! calls the export, converts the answer back and replies.
//!
//! Failure handling. A call that traps, overruns its deadline or hits the
//! memory limit fails with the matching [`ModelError`]; the instance is then
//! dropped and re-instantiated from the [`ObjectModelPluginPre`] according to
//! the [`RestartPolicy`] — at once the first time, with back-off after
//! repeated failures (calls meanwhile fail fast with `Restarting`, naming
//! the failure), and finally not at all: the worker marks itself disabled
//! and exits, and every later call fails with `Disabled`. Other plugins have
//! their own threads and stores and are never affected. A trap is reported
//! by what the plugin wrote on stderr during the call (a panic's message)
//! and the trap itself, in one line; its wasm backtrace goes to the debug log.
//!
//! State across restarts. The worker keeps the model's last exported state
//! (a snapshot) and imports it into every new instance. Snapshots are taken
//! after every write batch in which at least one write succeeded (so an
//! acknowledged write survives a later crash), after a successful
//! `import-state`, whenever the host asks for `export-state`, and after a
//! `tick` when the last snapshot is older than the configured interval (so
//! time-driven state is at most that old). A write whose snapshot traps is
//! reported as failed: its effect may be lost with the instance.
//!
//! Batching. Reads queued together cross into the guest together: the
//! worker takes the read it was given and every read queued behind it (up
//! to [`MAX_BATCH_JOBS`] jobs or [`MAX_BATCH_TARGETS`] targets, stopping at
//! the first job of another kind, which goes next), makes one
//! `read-properties` call and hands each caller its share. If that call
//! fails, nobody can tell which request was at fault: the instance is
//! restarted without counting a failure and each read is replayed alone, so
//! only the request at fault fails and counts against the restart policy.
//!
//! The worker must never hold a job without replying (dropping the reply
//! sender counts as replying `Disabled`), and never call the plugin
//! re-entrantly or from any other thread.

use super::bindings::{ObjectModelPlugin, ObjectModelPluginPre};
use super::changes::ChangeFeed;
use super::clock::HostClock;
use super::convert::{self, Contract};
use super::engine::PluginEngine;
use super::host_imports::HostImports;
use super::limits::{LimitHits, Limits, StoreLimiter};
use super::log::PluginLog;
use super::restart::{RestartPolicy, Restarts, Verdict};
use super::state::PluginState;
use super::wasi::{self, DataDir};
use crate::model::{DateTime, ModelError, ObjectInfo, PluginInfo, PropertyRead, PropertyTarget, PropertyWrite};
use bacnet::services::BacnetError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap};

/// Where a reply goes.
pub type Reply<T> = oneshot::Sender<Result<T, ModelError>>;

/// Reads taken into one guest call at most (see the module doc).
pub const MAX_BATCH_JOBS: usize = 64;
/// Targets in one batched call at most (an RPM of 256 results crosses
/// alone; reads beyond go in the next call).
pub const MAX_BATCH_TARGETS: usize = 256;

/// Reads waiting for one crossing: each caller's targets and reply.
type ReadBatch = Vec<(Vec<PropertyTarget>, Reply<Vec<Vec<PropertyRead>>>)>;

/// One request for the plugin.
pub enum Job {
    /// `objects`.
    Objects(Reply<Vec<ObjectInfo>>),
    /// `read-properties`.
    Read(Vec<PropertyTarget>, Reply<Vec<Vec<PropertyRead>>>),
    /// `write-properties`.
    Write(Vec<PropertyWrite>, Reply<Vec<Result<(), BacnetError>>>),
    /// `tick`.
    Tick(DateTime, Reply<()>),
    /// `export-state`.
    Export(Reply<Vec<u8>>),
    /// `import-state`; the inner error is the plugin's refusal.
    Import(Vec<u8>, Reply<Result<(), String>>),
}

impl Job {
    fn fail(self, e: ModelError) {
        match self {
            Job::Objects(r) => drop(r.send(Err(e))),
            Job::Read(_, r) => drop(r.send(Err(e))),
            Job::Write(_, r) => drop(r.send(Err(e))),
            Job::Tick(_, r) => drop(r.send(Err(e))),
            Job::Export(r) => drop(r.send(Err(e))),
            Job::Import(_, r) => drop(r.send(Err(e))),
        }
    }
}

/// Everything needed to start (and restart) instances of one plugin.
pub struct Spec {
    /// Plugin name (from the configuration; used in every error and log line).
    pub name: Arc<str>,
    /// The engine (kept alive, with its ticker, by every worker).
    pub engine: PluginEngine,
    /// The linked, pre-instantiated component.
    pub pre: ObjectModelPluginPre<PluginState>,
    /// Memory, table and instance limits.
    pub limits: Limits,
    /// Wall-clock limit of one call.
    pub deadline: Duration,
    /// The data directory.
    pub data: DataDir,
    /// The gateway clock.
    pub clock: HostClock,
    /// Where change notifications go.
    pub changes: ChangeFeed,
    /// The plugin's log.
    pub log: Arc<PluginLog>,
    /// Restart policy.
    pub restart: RestartPolicy,
    /// Longest time between snapshots while only ticks change state.
    pub snapshot_interval: Duration,
    /// Jobs queued before callers get `Busy`.
    pub queue_depth: usize,
}

/// How a worker is doing, shared with the async side.
#[derive(Debug, Default)]
pub struct Health {
    disabled: AtomicBool,
    backing_off: AtomicBool,
    /// The async side gave up waiting: the thread is stuck outside the guest.
    wedged: AtomicBool,
    /// A replacement for a wedged worker is being started.
    replacing: AtomicBool,
    restarts: AtomicU64,
    failures: AtomicU64,
}

/// A point-in-time copy of the worker's health counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthReport {
    /// Failed for good; every call fails with `Disabled`.
    pub disabled: bool,
    /// Waiting out a back-off delay; calls fail with `Busy`.
    pub backing_off: bool,
    /// Instances started after the first.
    pub restarts: u64,
    /// Calls (or restarts) that trapped, overran or ran out of memory.
    pub failures: u64,
}

impl Health {
    /// Copy the counters.
    pub fn report(&self) -> HealthReport {
        HealthReport {
            disabled: self.disabled.load(Ordering::Relaxed),
            backing_off: self.backing_off.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }
}

/// The async side's handle on a worker.
pub struct WorkerHandle {
    name: Arc<str>,
    spec: Arc<Spec>,
    tx: SyncSender<Job>,
    /// One permit per queue slot: a caller holds one from queueing its job
    /// to its answer, and waits for one (up to the call deadline) when the
    /// queue is full rather than failing at once, so a burst the server
    /// admitted is queued, not refused.
    room: Arc<tokio::sync::Semaphore>,
    health: Arc<Health>,
    info: PluginInfo,
    snapshot: Arc<Mutex<Option<Arc<[u8]>>>>,
}

impl WorkerHandle {
    /// Start a worker thread and its first instance, importing `state` when
    /// given. Blocks until the instance is ready (or failed to start).
    pub fn spawn(spec: Arc<Spec>, state: Option<Arc<[u8]>>) -> Result<Self, String> {
        let (tx, rx) = std::sync::mpsc::sync_channel(spec.queue_depth.max(1));
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let health = Arc::new(Health::default());
        let snapshot = Arc::new(Mutex::new(state));
        let name = spec.name.clone();
        let mut worker = Worker {
            restarts: Restarts::new(spec.restart.clone()),
            spec: spec.clone(),
            live: None,
            restart_at: None,
            health: health.clone(),
            snapshot: snapshot.clone(),
            last_snapshot: Instant::now(),
            started: false,
            pending: None,
            last_failure: None,
        };
        std::thread::Builder::new()
            .name(format!("plugin-{name}"))
            .spawn(move || {
                let ready = worker.start().and_then(|()| worker.describe());
                let ok = ready.is_ok();
                let _ = ready_tx.send(ready);
                if ok {
                    worker.run(rx);
                }
            })
            .map_err(|e| format!("cannot start worker thread: {e}"))?;
        let info =
            ready_rx.recv().map_err(|_| "worker thread died while starting".to_string())?.map_err(|e| e.to_string())?;
        let room = Arc::new(tokio::sync::Semaphore::new(spec.queue_depth.max(1)));
        Ok(WorkerHandle { name, spec, tx, room, health, info, snapshot })
    }

    /// Start a fresh worker to take over from this wedged one: same plugin,
    /// last snapshot, counters carried over. Blocking, like [`spawn`](Self::spawn).
    pub fn respawn(&self) -> Result<Self, String> {
        let fresh = WorkerHandle::spawn(self.spec.clone(), self.snapshot())?;
        let old = self.health.report();
        fresh.health.restarts.store(old.restarts + 1, Ordering::Relaxed);
        fresh.health.failures.store(old.failures + 1, Ordering::Relaxed);
        Ok(fresh)
    }

    /// A fresh instance of the same component for ReinitializeDevice, with
    /// `state` imported (`None`: from scratch); counted as a restart, not a
    /// failure. Blocking, like [`spawn`](Self::spawn).
    pub fn restart(&self, state: Option<Arc<[u8]>>) -> Result<Self, String> {
        let fresh = WorkerHandle::spawn(self.spec.clone(), state)?;
        let old = self.health.report();
        fresh.health.restarts.store(old.restarts + 1, Ordering::Relaxed);
        fresh.health.failures.store(old.failures, Ordering::Relaxed);
        Ok(fresh)
    }

    /// The clock this instance reads.
    pub fn clock(&self) -> &super::HostClock {
        &self.spec.clock
    }

    /// Whether the async side gave up on this worker, and nobody has started
    /// replacing it yet (true once per worker).
    pub fn needs_replacing(&self) -> bool {
        self.health.wedged.load(Ordering::Relaxed) && !self.health.replacing.swap(true, Ordering::Relaxed)
    }

    /// What the plugin said it is when this instance started.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// Health counters.
    pub fn health(&self) -> HealthReport {
        self.health.report()
    }

    /// The last state snapshot, if any.
    pub fn snapshot(&self) -> Option<Arc<[u8]>> {
        self.snapshot.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Queue a job and wait for its answer, at most `watchdog` (a worker stuck
    /// inside a host call cannot be interrupted by the epoch). With the queue
    /// full, wait up to one call deadline for room, then answer `Busy`.
    pub async fn submit<T>(&self, job: impl FnOnce(Reply<T>) -> Job, watchdog: Duration) -> Result<T, ModelError> {
        if self.health.disabled.load(Ordering::Relaxed) {
            return Err(self.disabled());
        }
        let _slot = match self.room.try_acquire() {
            Ok(permit) => permit,
            Err(_) => match tokio::time::timeout(self.spec.deadline, self.room.acquire()).await {
                Ok(Ok(permit)) => permit,
                Ok(Err(_)) | Err(_) => return Err(ModelError::Busy { plugin: self.name.to_string() }),
            },
        };
        let (tx, rx) = oneshot::channel();
        match self.tx.try_send(job(tx)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ModelError::Busy { plugin: self.name.to_string() }),
            Err(TrySendError::Disconnected(_)) => return Err(self.disabled()),
        }
        match tokio::time::timeout(watchdog, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(self.disabled()),
            Err(_) => {
                self.health.wedged.store(true, Ordering::Relaxed);
                Err(ModelError::DeadlineExceeded {
                    plugin: self.name.to_string(),
                    limit_ms: watchdog.as_millis() as u64,
                })
            }
        }
    }

    fn disabled(&self) -> ModelError {
        ModelError::Disabled { plugin: self.name.to_string() }
    }
}

/// A running instance.
struct Live {
    store: Store<PluginState>,
    plugin: ObjectModelPlugin,
}

/// The worker thread's state.
struct Worker {
    spec: Arc<Spec>,
    live: Option<Live>,
    restarts: Restarts,
    restart_at: Option<Instant>,
    health: Arc<Health>,
    snapshot: Arc<Mutex<Option<Arc<[u8]>>>>,
    last_snapshot: Instant,
    /// An instance has been started before (later starts are restarts).
    started: bool,
    /// A job taken from the queue while batching reads, handled next.
    pending: Option<Job>,
    /// The last failure, told to calls while no instance runs.
    last_failure: Option<ModelError>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Job>) {
        loop {
            let job = if let Some(job) = self.pending.take() {
                Some(job)
            } else {
                match self.restart_at {
                    Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                        Ok(job) => Some(job),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return,
                    },
                    None => match rx.recv() {
                        Ok(job) => Some(job),
                        Err(_) => return,
                    },
                }
            };
            if let Some(at) = self.restart_at
                && Instant::now() >= at
            {
                self.restart_at = None;
                self.health.backing_off.store(false, Ordering::Relaxed);
                if let Err(e) = self.start() {
                    self.failed(e);
                }
            }
            if self.health.disabled.load(Ordering::Relaxed) {
                // Dropping `rx` (by returning) answers every queued job `Disabled`.
                return;
            }
            let Some(job) = job else { continue };
            if self.live.is_none() {
                job.fail(self.unavailable());
                continue;
            }
            match job {
                // Alone in the queue (the common case): no batch to gather.
                Job::Read(targets, reply) => match rx.try_recv() {
                    Err(_) => self.handle(Job::Read(targets, reply)),
                    Ok(next) => {
                        let batch = self.take_reads(&rx, (targets, reply), next);
                        self.read_batch(batch);
                    }
                },
                other => self.handle(other),
            }
            if self.health.disabled.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    /// This read, `next` (the job queued behind it) if it is a read, and
    /// the reads queued behind those, up to the batch bounds; a job of
    /// another kind met on the way is kept for next.
    fn take_reads(
        &mut self,
        rx: &Receiver<Job>,
        first: (Vec<PropertyTarget>, Reply<Vec<Vec<PropertyRead>>>),
        next: Job,
    ) -> ReadBatch {
        let mut count = first.0.len();
        let mut batch = vec![first];
        let mut next = Some(next);
        while batch.len() < MAX_BATCH_JOBS && count < MAX_BATCH_TARGETS {
            match next.take().map(Ok).unwrap_or_else(|| rx.try_recv()) {
                Ok(Job::Read(targets, reply)) => {
                    count += targets.len();
                    batch.push((targets, reply));
                }
                Ok(other) => {
                    self.pending = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        // Bounds reached with `next` still in hand: it goes next.
        if let Some(job) = next {
            self.pending = Some(job);
        }
        batch
    }

    /// One `read-properties` call for every read in `batch`; on failure,
    /// a quiet restart and each read alone (see the module doc).
    fn read_batch(&mut self, mut batch: ReadBatch) {
        if batch.len() == 1 {
            let (targets, reply) = batch.remove(0);
            return self.handle(Job::Read(targets, reply));
        }
        let all: Vec<PropertyTarget> = batch.iter().flat_map(|(t, _)| t.iter().cloned()).collect();
        let refs = convert::targets_to_wit(&all);
        let r = self.invoke(|p, s| p.trellis_bacnet_object_model().call_read_properties(s, &refs));
        let answers = match r {
            Ok(w) => convert::reads_from_wit(w, all.len()).ok(),
            Err(_) => None,
        };
        match answers {
            Some(answers) => {
                self.restarts.succeeded();
                let mut answers = answers.into_iter();
                for (targets, reply) in batch {
                    let share: Vec<_> = answers.by_ref().take(targets.len()).collect();
                    drop(reply.send(Ok(share)));
                }
            }
            None => {
                tracing::debug!(
                    plugin = &*self.spec.name,
                    reads = batch.len(),
                    "a batched read failed; replaying each alone"
                );
                self.live = None;
                if let Err(e) = self.start() {
                    self.failed(e);
                }
                for (targets, reply) in batch {
                    if self.live.is_none() {
                        let e = if self.health.disabled.load(Ordering::Relaxed) {
                            ModelError::Disabled { plugin: self.spec.name.to_string() }
                        } else {
                            self.unavailable()
                        };
                        drop(reply.send(Err(e)));
                        continue;
                    }
                    self.handle(Job::Read(targets, reply));
                }
            }
        }
    }

    fn handle(&mut self, job: Job) {
        match job {
            Job::Objects(reply) => {
                let r = self.call(|p, s| p.trellis_bacnet_object_model().call_objects(s));
                drop(reply.send(self.convert(r, convert::objects_from_wit)));
            }
            Job::Read(targets, reply) => {
                let refs = convert::targets_to_wit(&targets);
                let r = self.call(|p, s| p.trellis_bacnet_object_model().call_read_properties(s, &refs));
                drop(reply.send(self.convert(r, |w| convert::reads_from_wit(w, targets.len()))));
            }
            Job::Write(writes, reply) => {
                let requests = convert::writes_to_wit(&writes);
                let r = self.call(|p, s| p.trellis_bacnet_object_model().call_write_properties(s, &requests));
                let r = self.convert(r, |w| convert::write_results_from_wit(w, writes.len()));
                let r = match r {
                    Ok(results) if results.iter().any(Result::is_ok) => self.take_snapshot().map(|()| results),
                    other => other,
                };
                drop(reply.send(r));
            }
            Job::Tick(now, reply) => {
                let now = convert::datetime_to_wit(now);
                let mut r = self.call(|p, s| p.trellis_bacnet_object_model().call_tick(s, now));
                if r.is_ok() && self.last_snapshot.elapsed() >= self.spec.snapshot_interval {
                    r = self.take_snapshot();
                }
                drop(reply.send(r));
            }
            Job::Export(reply) => {
                let r = self.call(|p, s| p.trellis_bacnet_object_model().call_export_state(s));
                if let Ok(state) = &r {
                    self.keep_snapshot(Arc::from(state.as_slice()));
                }
                drop(reply.send(r));
            }
            Job::Import(state, reply) => {
                let r = self.call(|p, s| p.trellis_bacnet_object_model().call_import_state(s, &state));
                if let Ok(Ok(())) = &r {
                    self.keep_snapshot(Arc::from(state));
                }
                drop(reply.send(r));
            }
        }
    }

    /// Call an export of the live instance under the deadline and limits;
    /// a failure drops the instance and applies the restart policy.
    fn call<R>(
        &mut self,
        f: impl FnOnce(&ObjectModelPlugin, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, ModelError> {
        let r = self.invoke(f);
        match &r {
            Ok(_) => self.restarts.succeeded(),
            Err(e) => self.failed(e.clone()),
        }
        r
    }

    /// Call an export of the live instance under the deadline and limits,
    /// and say how it failed; nothing else.
    fn invoke<R>(
        &mut self,
        f: impl FnOnce(&ObjectModelPlugin, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, ModelError> {
        let Some(live) = self.live.as_mut() else {
            return Err(self.unavailable());
        };
        live.store.set_epoch_deadline(self.spec.engine.ticks_for(self.spec.deadline));
        live.store.data_mut().limiter.reset();
        self.spec.log.begin_call();
        f(&live.plugin, &mut live.store).map_err(|e| classify(&self.spec, &e, live.store.data().limiter.hits()))
    }

    /// What a call gets while no instance runs: the failure being waited
    /// out, when there is one.
    fn unavailable(&self) -> ModelError {
        let plugin = self.spec.name.to_string();
        match &self.last_failure {
            Some(cause) => ModelError::Restarting { plugin, cause: Box::new(cause.clone()) },
            None => ModelError::Busy { plugin },
        }
    }

    fn convert<W, T>(
        &self,
        r: Result<W, ModelError>,
        f: impl FnOnce(W) -> Result<T, Contract>,
    ) -> Result<T, ModelError> {
        r.and_then(|w| {
            f(w).map_err(|Contract(detail)| ModelError::Contract { plugin: self.spec.name.to_string(), detail })
        })
    }

    /// Drop the failed instance and restart it, later, or never.
    fn failed(&mut self, err: ModelError) {
        self.live = None;
        self.last_failure = Some(err.clone());
        self.health.failures.fetch_add(1, Ordering::Relaxed);
        let name = &*self.spec.name;
        match self.restarts.failed(Instant::now()) {
            Verdict::RestartNow => {
                tracing::warn!(plugin = name, "{err}; restarting");
                if let Err(e) = self.start() {
                    self.failed(e);
                }
            }
            Verdict::RestartAt(at) => {
                let ms = at.saturating_duration_since(Instant::now()).as_millis();
                tracing::warn!(plugin = name, "{err}; restarting in {ms} ms");
                self.restart_at = Some(at);
                self.health.backing_off.store(true, Ordering::Relaxed);
            }
            Verdict::Disable => {
                tracing::error!(
                    plugin = name,
                    "{err}; disabled after {} consecutive failures",
                    self.restarts.consecutive()
                );
                self.health.disabled.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Instantiate (again) and restore the last snapshot. A failure leaves
    /// no instance; the caller applies the restart policy.
    fn start(&mut self) -> Result<(), ModelError> {
        let spec = &self.spec;
        let wasi = wasi::context(&spec.log, &spec.clock, &spec.data)
            .map_err(|e| ModelError::Trapped { plugin: spec.name.to_string(), detail: format!("{e:#}") })?;
        let state = PluginState {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimiter::new(spec.limits.clone()),
            host: HostImports::new(spec.log.clone(), spec.clock.clone(), spec.changes.clone()),
        };
        let mut store = Store::new(spec.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        store.set_epoch_deadline(spec.engine.ticks_for(spec.deadline));
        spec.log.begin_call();
        let plugin = spec.pre.instantiate(&mut store).map_err(|e| classify(spec, &e, store.data().limiter.hits()))?;
        self.live = Some(Live { store, plugin });
        if std::mem::replace(&mut self.started, true) {
            self.health.restarts.fetch_add(1, Ordering::Relaxed);
        }
        let snapshot = self.snapshot.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(state) = snapshot {
            match self.invoke(|p, s| p.trellis_bacnet_object_model().call_import_state(s, &state)) {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => {
                    let plugin = &*self.spec.name;
                    tracing::warn!(plugin, "plugin refused its saved state ({reason}); starting fresh");
                }
                Err(e) => {
                    self.live = None;
                    return Err(e);
                }
            }
        }
        self.last_snapshot = Instant::now();
        Ok(())
    }

    fn describe(&mut self) -> Result<PluginInfo, ModelError> {
        self.call(|p, s| p.trellis_bacnet_object_model().call_describe(s)).map(convert::info_from_wit)
    }

    fn take_snapshot(&mut self) -> Result<(), ModelError> {
        let state = self.call(|p, s| p.trellis_bacnet_object_model().call_export_state(s))?;
        self.keep_snapshot(Arc::from(state));
        Ok(())
    }

    fn keep_snapshot(&mut self, state: Arc<[u8]>) {
        *self.snapshot.lock().unwrap_or_else(PoisonError::into_inner) = Some(state);
        self.last_snapshot = Instant::now();
    }
}

/// What kind of failure `e` was, given what the limiter refused meanwhile.
fn classify(spec: &Spec, e: &wasmtime::Error, hits: LimitHits) -> ModelError {
    let plugin = spec.name.to_string();
    if hits.memory || hits.table {
        return ModelError::MemoryExceeded { plugin, limit_bytes: spec.limits.memory_bytes };
    }
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return ModelError::DeadlineExceeded { plugin, limit_ms: spec.deadline.as_millis() as u64 };
    }
    // One line: what the plugin said (a panic's message), then the trap —
    // not the wasm backtrace wasmtime wraps it in, which goes to debug.
    tracing::debug!(plugin, "call failed: {e:?}");
    let trap = match e.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => e.root_cause().to_string(),
    };
    let detail = match spec.log.last_words() {
        Some(said) => format!("{said} ({trap})"),
        None => trap,
    };
    let detail = detail.replace(['\r', '\n'], " ");
    ModelError::Trapped { plugin, detail: super::log::truncate(&detail, 1024).to_owned() }
}
