//! One plugin instance: the wasmtime [`Store`] and its component, called in
//! place on the caller's thread.
//!
//! There is no worker thread and no queue: the task that received a request
//! (on a shard, see `trellis::shard`) takes the instance's lock, runs the
//! export under the epoch deadline and the memory limit, and goes on with
//! the answer. Every caller of one device runs on that device's shard, so
//! the lock is uncontended on the request path; only a hot swap or a
//! ReinitializeDevice from elsewhere ever waits on it, for one export or
//! import (the swap's pause).
//!
//! Calls are wasmtime's async calls: the guest runs on a fiber stack from
//! the pool, and WASI's imports are the async ones. A guest that never
//! waits (the normal case: no host import of ours waits) completes at the
//! first poll, so a request still never leaves its thread; a guest that
//! asks WASI to wait (a sleep, a poll on a clock) suspends its call rather
//! than the thread, and the call fails when its deadline passes, like a
//! runaway loop: nothing a plugin calls can block the thread it runs on.
//!
//! Failure handling. A call that traps, overruns its deadline or hits the
//! memory limit fails with the matching [`ModelError`]; the instance is then
//! dropped and re-instantiated from the pre-instantiated component (microseconds
//! with the pooling allocator) according to the [`RestartPolicy`] — at once
//! the first time, with back-off after repeated failures (calls meanwhile
//! fail fast with `Restarting`, naming the failure), and finally not at all:
//! the instance is disabled and every later call fails with `Disabled`.
//! Other plugins have their own stores and are never affected. A trap is
//! reported by what the plugin wrote on stderr during the call (a panic's
//! message) and the trap itself, in one line; its wasm backtrace goes to the
//! debug log.
//!
//! State across restarts: a snapshot and a journal. The instance keeps the
//! model's last exported state and, since it, every write the plugin
//! accepted (the journal). A fresh instance imports the snapshot and replays
//! the journal, so an acknowledged write survives a crash without costing an
//! export per write. Snapshots are taken when the journal grows past
//! [`JOURNAL_WRITES`] writes or [`JOURNAL_OCTETS`] octets of values, after a
//! successful `import-state`, whenever the host asks for `export-state`, and
//! after a `tick` when the last snapshot is older than the configured
//! interval (so time-driven state is at most that old). A journal entry is
//! replayed with the priority it was written at; replayed writes that the
//! fresh instance refuses are logged, not retried.
//!
//! Must never: call the plugin re-entrantly, wait on anything but the
//! guest while holding the lock, or answer a write as done before it is in
//! the journal.

use super::bindings::{types as wit, v1, v2, v3, v4};
use super::convert::{self, Contract};
use super::engine::PluginEngine;
use super::host_imports::HostImports;
use super::limits::{LimitHits, Limits, StoreLimiter};
use super::log::PluginLog;
use super::persisted::DiskState;
use super::restart::{RestartPolicy, Restarts, Verdict};
use super::state::PluginState;
use super::wasi::{self, DataDir};
use bacnet::ObjectIdentifier;
use bacnet::enums::ErrorCode;
use bacnet::read_records::ReadRecords;
use bacnet::services::{BacnetError, CreateObjectError, ObjectSpecifier};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, MutexGuard};
use trellis_model::{
    ChangeFeed, DateTime, EncodedRead, HostClock, ModelError, ObjectInfo, PluginInfo, PropertyRead, PropertyTarget,
    PropertyWrite,
};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap};

/// Accepted writes kept in the journal before a snapshot replaces them.
pub const JOURNAL_WRITES: usize = 1024;
/// Octets of written values kept in the journal before a snapshot replaces them.
pub const JOURNAL_OCTETS: usize = 256 << 10;
/// Journal entries replayed per guest call.
const REPLAY_CHUNK: usize = 64;

/// Everything needed to start (and restart) instances of one plugin.
pub struct Spec {
    /// Plugin name (from the configuration; used in every error and log line).
    pub name: Arc<str>,
    /// The engine (kept alive, with its ticker, by every instance).
    pub engine: PluginEngine,
    /// The linked, pre-instantiated component.
    pub pre: Pre,
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
}

/// A linked, pre-instantiated component, by the interface version it
/// exports.
pub enum Pre {
    /// `trellis:bacnet/object-model@0.1.0`.
    V1(v1::ObjectModelPluginPre<PluginState>),
    /// `trellis:bacnet/object-model@0.2.0`.
    V2(v2::ObjectModelPluginPre<PluginState>),
    /// `trellis:bacnet/object-model@0.3.0`.
    V3(v3::ObjectModelPluginPre<PluginState>),
    /// `trellis:bacnet/object-model@0.4.0`.
    V4(v4::ObjectModelPluginPre<PluginState>),
}

impl Pre {
    /// The package the component exports, as WIT names it.
    pub fn interface(&self) -> &'static str {
        match self {
            Pre::V1(_) => "trellis:bacnet@0.1.0",
            Pre::V2(_) => "trellis:bacnet@0.2.0",
            Pre::V3(_) => "trellis:bacnet@0.3.0",
            Pre::V4(_) => "trellis:bacnet@0.4.0",
        }
    }

    async fn instantiate(&self, store: &mut Store<PluginState>) -> wasmtime::Result<Plugin> {
        Ok(match self {
            Pre::V1(pre) => Plugin::V1(pre.instantiate_async(store).await?),
            Pre::V2(pre) => Plugin::V2(pre.instantiate_async(store).await?),
            Pre::V3(pre) => Plugin::V3(pre.instantiate_async(store).await?),
            Pre::V4(pre) => Plugin::V4(pre.instantiate_async(store).await?),
        })
    }
}

/// An instantiated component, by interface version.
enum Plugin {
    V1(v1::ObjectModelPlugin),
    V2(v2::ObjectModelPlugin),
    V3(v3::ObjectModelPlugin),
    V4(v4::ObjectModelPlugin),
}

/// How an instance is doing, readable without its lock.
#[derive(Debug, Default)]
struct Health {
    disabled: AtomicBool,
    backing_off: AtomicBool,
    restarts: AtomicU64,
    failures: AtomicU64,
    snapshots: AtomicU64,
    replayed: AtomicU64,
    /// Failures by kind: traps, deadline and memory limit hits.
    traps: AtomicU64,
    deadline_hits: AtomicU64,
    memory_hits: AtomicU64,
    /// How long each export call took (the guest's time, not the queue's).
    calls: trellis_model::latency::LatencyHistogram,
    /// The last failure, in one line.
    last_failure: std::sync::Mutex<Option<String>>,
}

/// A point-in-time copy of an instance's health counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthReport {
    /// Failed for good; every call fails with `Disabled`.
    pub disabled: bool,
    /// Waiting out a back-off delay; calls fail with `Restarting`.
    pub backing_off: bool,
    /// Instances started after the first.
    pub restarts: u64,
    /// Calls (or restarts) that trapped, overran or ran out of memory.
    pub failures: u64,
    /// State snapshots taken (exports the host asked for itself).
    pub snapshots: u64,
    /// Journal entries replayed into fresh instances.
    pub replayed: u64,
    /// Failures that were traps.
    pub traps: u64,
    /// Failures that were the time limit.
    pub deadline_hits: u64,
    /// Failures that were the memory limit.
    pub memory_hits: u64,
}

impl Health {
    fn report(&self) -> HealthReport {
        HealthReport {
            disabled: self.disabled.load(Ordering::Relaxed),
            backing_off: self.backing_off.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            snapshots: self.snapshots.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
            traps: self.traps.load(Ordering::Relaxed),
            deadline_hits: self.deadline_hits.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
        }
    }

    fn count_failure(&self, err: &ModelError) {
        let kind = match err {
            ModelError::Trapped { .. } => &self.traps,
            ModelError::DeadlineExceeded { .. } => &self.deadline_hits,
            ModelError::MemoryExceeded { .. } => &self.memory_hits,
            _ => return,
        };
        kind.fetch_add(1, Ordering::Relaxed);
    }

    fn carry_over(&self, from: &Health, restart: bool, failure: bool) {
        let old = from.report();
        self.restarts.store(old.restarts + restart as u64, Ordering::Relaxed);
        self.failures.store(old.failures + failure as u64, Ordering::Relaxed);
        self.snapshots.store(old.snapshots, Ordering::Relaxed);
        self.replayed.store(old.replayed, Ordering::Relaxed);
        self.traps.store(old.traps, Ordering::Relaxed);
        self.deadline_hits.store(old.deadline_hits, Ordering::Relaxed);
        self.memory_hits.store(old.memory_hits, Ordering::Relaxed);
        let last = from.last_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        *self.last_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = last;
    }
}

/// One plugin instance and what restarts it.
pub struct Instance {
    spec: Arc<Spec>,
    health: Health,
    info: PluginInfo,
    core: Mutex<Core>,
}

/// A running component.
struct Live {
    store: Store<PluginState>,
    plugin: Plugin,
}

/// One export call, with its arguments in WIT types.
enum Call<'a> {
    Describe,
    Objects,
    Read(&'a [wit::PropertyRef]),
    /// 0.2.0 only.
    ReadEncoded(&'a [wit::PropertyRef]),
    Write(&'a [wit::WriteRequest]),
    /// 0.3.0 on.
    Acknowledge(wit::ObjectId, u8),
    /// 0.4.0 on: type, instance, initial values.
    Create(u16, Option<u32>, &'a [wit::WriteRequest]),
    /// 0.4.0 on.
    Delete(wit::ObjectId),
    Tick(wit::Datetime),
    Export,
    Import(&'a [u8]),
}

/// What an export answered, in WIT types.
enum Answer {
    Describe(wit::PluginInfo),
    Objects(Vec<wit::ObjectInfo>),
    Read(Vec<Vec<wit::ReadResult>>),
    ReadEncoded(Vec<u8>),
    Write(Vec<Result<(), wit::BacnetError>>),
    Acknowledge(Result<(), wit::BacnetError>),
    Create(Result<wit::ObjectId, (wit::BacnetError, u32)>),
    Delete(Result<(), wit::BacnetError>),
    Tick,
    Export(Vec<u8>),
    Import(Result<(), String>),
}

/// One of the calls every version exports, on any version's exports.
macro_rules! run_common {
    ($m:expr, $s:expr, $call:expr) => {{
        let (m, s) = ($m, $s);
        Ok(match $call {
            Call::Describe => Answer::Describe(m.call_describe(&mut *s).await?),
            Call::Objects => Answer::Objects(m.call_objects(&mut *s).await?),
            Call::Read(refs) => Answer::Read(m.call_read_properties(&mut *s, refs).await?),
            Call::Write(writes) => Answer::Write(m.call_write_properties(&mut *s, writes).await?),
            Call::Tick(now) => {
                m.call_tick(&mut *s, now).await?;
                Answer::Tick
            }
            Call::Export => Answer::Export(m.call_export_state(&mut *s).await?),
            Call::Import(state) => Answer::Import(m.call_import_state(&mut *s, state).await?),
            Call::ReadEncoded(_) | Call::Acknowledge(..) | Call::Create(..) | Call::Delete(_) => {
                unreachable!("answered by version in `Live::run`")
            }
        })
    }};
}

impl Live {
    async fn run(&mut self, call: Call<'_>) -> wasmtime::Result<Answer> {
        let s = &mut self.store;
        match (&self.plugin, call) {
            // What a version added, where it has it; what a component
            // without it answers elsewhere.
            (Plugin::V2(p), Call::ReadEncoded(refs)) => {
                Ok(Answer::ReadEncoded(p.trellis_bacnet_object_model().call_read_encoded(s, refs).await?))
            }
            (Plugin::V3(p), Call::ReadEncoded(refs)) => {
                Ok(Answer::ReadEncoded(p.trellis_bacnet_object_model().call_read_encoded(s, refs).await?))
            }
            (Plugin::V4(p), Call::ReadEncoded(refs)) => {
                Ok(Answer::ReadEncoded(p.trellis_bacnet_object_model().call_read_encoded(s, refs).await?))
            }
            // `Instance::read_encoded` never asks a 0.1.0 instance.
            (Plugin::V1(_), Call::ReadEncoded(_)) => {
                Err(wasmtime::format_err!("read-encoded is not in trellis:bacnet@0.1.0"))
            }
            (Plugin::V3(p), Call::Acknowledge(object, transition)) => {
                Ok(Answer::Acknowledge(p.trellis_bacnet_object_model().call_acknowledge(s, object, transition).await?))
            }
            (Plugin::V4(p), Call::Acknowledge(object, transition)) => {
                Ok(Answer::Acknowledge(p.trellis_bacnet_object_model().call_acknowledge(s, object, transition).await?))
            }
            (_, Call::Acknowledge(..)) => Ok(Answer::Acknowledge(Err(object_error(ErrorCode::NO_ALARM_CONFIGURED)))),
            (Plugin::V4(p), Call::Create(object_type, instance, initial)) => Ok(Answer::Create(
                p.trellis_bacnet_object_model().call_create_object(s, object_type, instance, initial).await?,
            )),
            (_, Call::Create(..)) => {
                Ok(Answer::Create(Err((object_error(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED), 0))))
            }
            (Plugin::V4(p), Call::Delete(object)) => {
                Ok(Answer::Delete(p.trellis_bacnet_object_model().call_delete_object(s, object).await?))
            }
            (_, Call::Delete(_)) => Ok(Answer::Delete(Err(object_error(ErrorCode::OBJECT_DELETION_NOT_PERMITTED)))),
            (Plugin::V1(p), call) => run_common!(p.trellis_bacnet_object_model(), s, call),
            (Plugin::V2(p), call) => run_common!(p.trellis_bacnet_object_model(), s, call),
            (Plugin::V3(p), call) => run_common!(p.trellis_bacnet_object_model(), s, call),
            (Plugin::V4(p), call) => run_common!(p.trellis_bacnet_object_model(), s, call),
        }
    }
}

/// An object-class error, as a component before 0.3.0 (no `acknowledge`:
/// no-alarm-configured) or 0.4.0 (no `create-object`:
/// dynamic-creation-not-supported; no `delete-object`:
/// object-deletion-not-permitted) answers.
fn object_error(code: ErrorCode) -> wit::BacnetError {
    wit::BacnetError { error_class: bacnet::enums::ErrorClass::OBJECT.0, error_code: code.0 }
}

/// What the lock guards.
struct Core {
    live: Option<Live>,
    restarts: Restarts,
    restart_at: Option<Instant>,
    /// The last exported state, imported into every fresh instance.
    snapshot: Option<Arc<[u8]>>,
    last_snapshot: Instant,
    /// Writes the plugin accepted since the snapshot, in order.
    journal: Vec<PropertyWrite>,
    journal_octets: usize,
    /// The targets of the read in progress, in WIT types (kept between
    /// reads so a read does not allocate them).
    refs: Vec<wit::PropertyRef>,
    /// A call started and never came back (its caller dropped it while
    /// the guest was suspended): the store is not to be used again.
    call_abandoned: bool,
    /// An instance has been started before (later starts are restarts).
    started: bool,
    /// The last failure, told to calls while no instance runs.
    last_failure: Option<ModelError>,
    /// The device's state on disk, while this instance serves it.
    disk: Option<DiskState>,
}

impl Core {
    /// No instance, no snapshot, no journal (the default policy until
    /// [`Instance::start`] sets the plugin's).
    fn empty() -> Self {
        Core {
            live: None,
            restarts: Restarts::new(RestartPolicy::default()),
            restart_at: None,
            snapshot: None,
            last_snapshot: Instant::now(),
            journal: Vec::new(),
            journal_octets: 0,
            refs: Vec::new(),
            call_abandoned: false,
            started: false,
            last_failure: None,
            disk: None,
        }
    }
}

impl Instance {
    /// Instantiate the component, import `state` when given, and ask it what
    /// it is (fast from the pre-instantiated component).
    pub async fn start(spec: Arc<Spec>, state: Option<Arc<[u8]>>) -> Result<Self, ModelError> {
        let mut core = Core { restarts: Restarts::new(spec.restart.clone()), snapshot: state, ..Core::empty() };
        let mut instance =
            Instance { spec, health: Health::default(), info: PluginInfo::default(), core: Mutex::new(Core::empty()) };
        instance.instantiate(&mut core).await?;
        let Answer::Describe(info) = instance.invoke(&mut core, Call::Describe).await? else { unreachable!() };
        instance.info = convert::info_from_wit(info);
        instance.core = Mutex::new(core);
        Ok(instance)
    }

    /// A fresh instance of the same component for ReinitializeDevice, with
    /// `state` imported (`None`: from scratch); counted as a restart, not a
    /// failure.
    pub async fn restart(&self, state: Option<Arc<[u8]>>) -> Result<Self, ModelError> {
        let fresh = Instance::start(self.spec.clone(), state).await?;
        fresh.health.carry_over(&self.health, true, false);
        Ok(fresh)
    }

    /// What the plugin said it is when this instance started.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// The interface the component exports.
    pub fn interface(&self) -> &'static str {
        self.spec.pre.interface()
    }

    /// The clock this instance reads.
    pub fn clock(&self) -> &HostClock {
        &self.spec.clock
    }

    /// Health counters.
    pub fn health(&self) -> HealthReport {
        self.health.report()
    }

    /// How long its export calls took.
    pub fn call_latency(&self) -> trellis_model::latency::LatencySnapshot {
        self.health.calls.snapshot()
    }

    /// Its last failure, in one line.
    pub fn last_failure(&self) -> Option<String> {
        self.health.last_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A snapshot now, written to disk when the device's state is kept
    /// there (a clean stop: what only the clock changed since the last
    /// one is not lost).
    pub async fn save(&self) -> Result<(), ModelError> {
        let mut core = self.ready().await?;
        self.take_snapshot(&mut core, true).await
    }

    /// Writes in the journal now (accepted since the last snapshot).
    pub async fn journal_len(&self) -> usize {
        self.core.lock().await.journal.len()
    }

    /// `objects`.
    pub async fn objects(&self) -> Result<Vec<ObjectInfo>, ModelError> {
        let mut core = self.ready().await?;
        let Answer::Objects(r) = self.call(&mut core, Call::Objects).await? else { unreachable!() };
        self.convert(convert::objects_from_wit(r))
    }

    /// `read-properties`: one list of results per target.
    pub async fn read(&self, targets: &[PropertyTarget]) -> Result<Vec<Vec<PropertyRead>>, ModelError> {
        let mut core = self.ready().await?;
        let mut refs = std::mem::take(&mut core.refs);
        refs.clear();
        refs.extend(targets.iter().map(convert::target_to_wit));
        let answer = self.call(&mut core, Call::Read(&refs)).await;
        core.refs = refs;
        let Answer::Read(r) = answer? else { unreachable!() };
        self.convert(convert::reads_from_wit(r, targets.len()))
    }

    /// `read-encoded` of one target, its value's octets appended to `out`
    /// after the core checked them; `Unsupported` for a 0.1.0 component.
    pub async fn read_encoded(&self, target: PropertyTarget, out: &mut Vec<u8>) -> Result<EncodedRead, ModelError> {
        if matches!(self.spec.pre, Pre::V1(_)) {
            return Ok(EncodedRead::Unsupported);
        }
        let mut core = self.ready().await?;
        let mut refs = std::mem::take(&mut core.refs);
        refs.clear();
        refs.push(convert::target_to_wit(&target));
        let answer = self.call(&mut core, Call::ReadEncoded(&refs)).await;
        core.refs = refs;
        let Answer::ReadEncoded(records) = answer? else { unreachable!() };
        self.convert(one_encoded_read(&records, target, out))
    }

    /// `acknowledge`: an AcknowledgeAlarm the server checked, for one
    /// transition (0 to-offnormal, 1 to-fault, 2 to-normal) of `object`.
    pub async fn acknowledge(
        &self,
        object: bacnet::ObjectIdentifier,
        transition: u8,
    ) -> Result<Result<(), BacnetError>, ModelError> {
        let mut core = self.ready().await?;
        let call = Call::Acknowledge(convert::object_id_to_wit(object), transition);
        let Answer::Acknowledge(r) = self.call(&mut core, call).await? else { unreachable!() };
        if r.is_ok() {
            // The journal holds writes only: a snapshot keeps the
            // acknowledgment across a restart (acknowledgments are rare).
            let _ = self.take_snapshot(&mut core, true).await;
        }
        Ok(r.map_err(convert::error_from_wit))
    }

    /// `create-object`: a CreateObject the server let through; the
    /// creation is answered once a snapshot holds it (the journal holds
    /// writes only), so it outlives a restart. An identifier other than the
    /// one asked for breaks the contract and restarts the instance.
    pub async fn create_object(
        &self,
        object: ObjectSpecifier,
        initial: &[PropertyWrite],
    ) -> Result<Result<ObjectIdentifier, CreateObjectError>, ModelError> {
        let mut core = self.ready().await?;
        let (object_type, instance) = match object {
            ObjectSpecifier::Type(t) => (t, None),
            ObjectSpecifier::Identifier(id) => (id.object_type, Some(id.instance)),
        };
        let Ok(wit_type) = u16::try_from(object_type.0) else {
            return Ok(Err(CreateObjectError {
                error: convert::error_from_wit(object_error(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED)),
                first_failed: 0,
            }));
        };
        let requests = convert::writes_to_wit(initial);
        let call = Call::Create(wit_type, instance, &requests);
        let Answer::Create(r) = self.call(&mut core, call).await? else { unreachable!() };
        let created = match r {
            Ok(id) => {
                let id = match convert::created_from_wit(id, object) {
                    Ok(id) => id,
                    Err(Contract(detail)) => {
                        // The guest made something it was not asked for:
                        // its state is not to be trusted, so it starts
                        // again from the snapshot (without that object).
                        let e = ModelError::Contract { plugin: self.spec.name.to_string(), detail };
                        self.failed(&mut core, e.clone()).await;
                        return Err(e);
                    }
                };
                // Acknowledged only once it is in a snapshot: a failed
                // snapshot restarts the instance without the object, and
                // the client hears of the failure.
                self.take_snapshot(&mut core, true).await?;
                Ok(id)
            }
            Err((error, first_failed)) => {
                let first_failed = self.convert(convert::first_failed_from_wit(first_failed, initial.len()))?;
                Err(CreateObjectError { error: convert::error_from_wit(error), first_failed })
            }
        };
        Ok(created)
    }

    /// `delete-object`: a DeleteObject the server let through; answered
    /// once a snapshot holds it, as a creation is.
    pub async fn delete_object(&self, object: ObjectIdentifier) -> Result<Result<(), BacnetError>, ModelError> {
        let mut core = self.ready().await?;
        let call = Call::Delete(convert::object_id_to_wit(object));
        let Answer::Delete(r) = self.call(&mut core, call).await? else { unreachable!() };
        if r.is_ok() {
            self.take_snapshot(&mut core, true).await?;
        }
        Ok(r.map_err(convert::error_from_wit))
    }

    /// `write-properties`: one result per write. What the plugin accepted is
    /// in the journal before this returns.
    pub async fn write(&self, writes: &[PropertyWrite]) -> Result<Vec<Result<(), BacnetError>>, ModelError> {
        let mut core = self.ready().await?;
        let requests = convert::writes_to_wit(writes);
        let Answer::Write(r) = self.call(&mut core, Call::Write(&requests)).await? else { unreachable!() };
        let results = self.convert(convert::write_results_from_wit(r, writes.len()))?;
        let mut encoded = Vec::new();
        for (w, r) in writes.iter().zip(&results) {
            if r.is_ok() {
                encoded.clear();
                w.value.encode(&mut encoded);
                core.journal_octets += encoded.len() + 16;
                core.journal.push(w.clone());
            }
        }
        let mut owed = false;
        if let Some(disk) = core.disk.as_mut() {
            let accepted = writes.iter().zip(&results).filter(|(_, r)| r.is_ok()).map(|(w, _)| w);
            disk.append(&self.spec.name, accepted);
            owed = disk.retry_due();
        }
        if owed || core.journal.len() >= JOURNAL_WRITES || core.journal_octets >= JOURNAL_OCTETS {
            // The writes are in the journal: a failed snapshot loses nothing
            // (the restart replays them), so it does not fail this call.
            let _ = self.take_snapshot(&mut core, false).await;
        }
        Ok(results)
    }

    /// `tick`, then a snapshot if the last is older than the interval.
    pub async fn tick(&self, now: DateTime) -> Result<(), ModelError> {
        let mut core = self.ready().await?;
        self.call(&mut core, Call::Tick(convert::datetime_to_wit(now))).await?;
        let owed = core.disk.as_mut().is_some_and(DiskState::retry_due);
        if owed || core.last_snapshot.elapsed() >= self.spec.snapshot_interval {
            self.take_snapshot(&mut core, false).await?;
        }
        Ok(())
    }

    /// `export-state` (kept as the snapshot).
    pub async fn export(&self) -> Result<Vec<u8>, ModelError> {
        let mut core = self.ready().await?;
        let Answer::Export(state) = self.call(&mut core, Call::Export).await? else { unreachable!() };
        self.keep_snapshot(&mut core, Arc::from(state.as_slice()), false);
        Ok(state)
    }

    /// What a fresh instance would start from: the last snapshot and the
    /// writes accepted since. For a successor when this instance cannot
    /// export (it is disabled, backing off, or traps in `export-state`).
    pub async fn saved_state(&self) -> (Option<Arc<[u8]>>, Vec<PropertyWrite>) {
        let core = self.core.lock().await;
        (core.snapshot.clone(), core.journal.clone())
    }

    /// `import-state`; the inner error is the plugin's refusal.
    pub async fn import(&self, state: &[u8]) -> Result<Result<(), String>, ModelError> {
        let mut core = self.ready().await?;
        let Answer::Import(r) = self.call(&mut core, Call::Import(state)).await? else { unreachable!() };
        if r.is_ok() {
            self.keep_snapshot(&mut core, Arc::from(state), true);
        }
        Ok(r)
    }

    /// The lock, with a live instance in it: restarted here when its
    /// back-off is over; otherwise the reason there is none.
    async fn ready(&self) -> Result<MutexGuard<'_, Core>, ModelError> {
        if self.health.disabled.load(Ordering::Relaxed) {
            return Err(self.disabled());
        }
        let mut core = self.core.lock().await;
        if std::mem::take(&mut core.call_abandoned) && core.live.is_some() {
            // Not the plugin's fault: a caller gave up on a suspended call.
            tracing::debug!(plugin = &*self.spec.name, "a call was abandoned mid-way: starting a fresh instance");
            core.live = None;
            if let Err(e) = self.instantiate(&mut core).await {
                self.failed(&mut core, e).await;
            }
        }
        if core.live.is_none()
            && let Some(at) = core.restart_at
            && Instant::now() >= at
        {
            core.restart_at = None;
            self.health.backing_off.store(false, Ordering::Relaxed);
            if let Err(e) = self.instantiate(&mut core).await {
                self.failed(&mut core, e).await;
            }
        }
        if self.health.disabled.load(Ordering::Relaxed) {
            return Err(self.disabled());
        }
        match core.live {
            Some(_) => Ok(core),
            None => Err(self.unavailable(&core)),
        }
    }

    /// Call an export under the deadline and limits; a failure drops the
    /// instance and applies the restart policy.
    async fn call(&self, core: &mut Core, call: Call<'_>) -> Result<Answer, ModelError> {
        let r = self.invoke(core, call).await;
        match &r {
            Ok(_) => core.restarts.succeeded(),
            Err(e) => self.failed(core, e.clone()).await,
        }
        r
    }

    /// Call an export under the deadline and limits, and say how it failed;
    /// nothing else. The deadline holds twice: the epoch interrupts a guest
    /// that computes too long, the timer one that waits too long.
    async fn invoke(&self, core: &mut Core, call: Call<'_>) -> Result<Answer, ModelError> {
        let Some(live) = core.live.as_mut() else {
            return Err(self.unavailable(core));
        };
        let deadline = self.spec.deadline;
        live.store.set_epoch_deadline(self.spec.engine.ticks_for(deadline));
        live.store.data_mut().limiter.reset();
        self.spec.log.begin_call();
        // Marked until the call completes: a caller that drops this future
        // mid-call (it suspended, and the caller gave up) leaves the mark,
        // and the next call starts a fresh instance instead of using a store
        // with half a call in it (see `ready`).
        core.call_abandoned = true;
        let started = std::time::Instant::now();
        let outcome = {
            // A guest that does not wait completes at the first poll: only
            // a call that suspends needs the timer, for what is left of its
            // deadline (the epoch counts from the call's start too).
            let mut run = std::pin::pin!(live.run(call));
            match std::future::poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await {
                Poll::Ready(r) => Ok(r),
                Poll::Pending => tokio::time::timeout(deadline.saturating_sub(started.elapsed()), run).await,
            }
        };
        core.call_abandoned = false;
        self.health.calls.record(started.elapsed());
        match outcome {
            Ok(r) => r.map_err(|e| classify(&self.spec, &e, live.store.data().limiter.hits())),
            Err(_) => {
                // The guest waited in a host call (a WASI sleep or poll):
                // its call was dropped mid-way, so is the instance.
                core.live = None;
                tracing::debug!(plugin = &*self.spec.name, "a call waited in a host import past its deadline");
                Err(ModelError::DeadlineExceeded {
                    plugin: self.spec.name.to_string(),
                    limit_ms: deadline.as_millis() as u64,
                })
            }
        }
    }

    /// What a call gets while no instance runs: the failure being waited
    /// out, when there is one.
    fn unavailable(&self, core: &Core) -> ModelError {
        let plugin = self.spec.name.to_string();
        match &core.last_failure {
            Some(cause) => ModelError::Restarting { plugin, cause: Box::new(cause.clone()) },
            None => ModelError::Busy { plugin },
        }
    }

    fn disabled(&self) -> ModelError {
        ModelError::Disabled { plugin: self.spec.name.to_string() }
    }

    fn convert<T>(&self, r: Result<T, Contract>) -> Result<T, ModelError> {
        r.map_err(|Contract(detail)| ModelError::Contract { plugin: self.spec.name.to_string(), detail })
    }

    /// Drop the failed instance and restart it, later, or never.
    async fn failed(&self, core: &mut Core, err: ModelError) {
        core.live = None;
        core.last_failure = Some(err.clone());
        self.health.failures.fetch_add(1, Ordering::Relaxed);
        self.health.count_failure(&err);
        *self.health.last_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(err.to_string());
        let name = &*self.spec.name;
        match core.restarts.failed(Instant::now()) {
            Verdict::RestartNow => {
                tracing::warn!(plugin = name, "{err}; restarting");
                if let Err(e) = Box::pin(self.instantiate(core)).await {
                    Box::pin(self.failed(core, e)).await;
                }
            }
            Verdict::RestartAt(at) => {
                let ms = at.saturating_duration_since(Instant::now()).as_millis();
                tracing::warn!(plugin = name, "{err}; restarting in {ms} ms");
                core.restart_at = Some(at);
                self.health.backing_off.store(true, Ordering::Relaxed);
            }
            Verdict::Disable => {
                tracing::error!(
                    plugin = name,
                    "{err}; disabled after {} consecutive failures",
                    core.restarts.consecutive()
                );
                self.health.disabled.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Instantiate (again), import the snapshot and replay the journal. A
    /// failure leaves no instance; the caller applies the restart policy.
    async fn instantiate(&self, core: &mut Core) -> Result<(), ModelError> {
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
        let plugin =
            spec.pre.instantiate(&mut store).await.map_err(|e| classify(spec, &e, store.data().limiter.hits()))?;
        core.live = Some(Live { store, plugin });
        if std::mem::replace(&mut core.started, true) {
            self.health.restarts.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(state) = core.snapshot.clone() {
            match self.invoke(core, Call::Import(&state)).await {
                Ok(Answer::Import(Err(reason))) => {
                    tracing::warn!(plugin = &*spec.name, "plugin refused its saved state ({reason}); starting fresh");
                }
                Ok(_) => {}
                Err(e) => {
                    core.live = None;
                    return Err(e);
                }
            }
        }
        if !core.journal.is_empty() {
            self.replay(core).await?;
        }
        Ok(())
    }

    /// Apply the journal to a fresh instance, in order, then make it the
    /// new snapshot so the next restart does not replay it again.
    async fn replay(&self, core: &mut Core) -> Result<(), ModelError> {
        let journal = std::mem::take(&mut core.journal);
        let requests = convert::writes_to_wit(&journal);
        let mut refused = 0;
        // In calls of REPLAY_CHUNK writes, each under its own deadline: a
        // long journal is not one call a slow plugin cannot finish.
        for chunk in requests.chunks(REPLAY_CHUNK) {
            match self.invoke(core, Call::Write(chunk)).await {
                Ok(Answer::Write(results)) => refused += results.iter().filter(|r| r.is_err()).count(),
                Ok(_) => unreachable!(),
                Err(e) => {
                    // Keep the whole journal for the next attempt, which
                    // starts again from the snapshot: the writes were acknowledged.
                    core.journal = journal;
                    core.live = None;
                    return Err(e);
                }
            }
        }
        if refused > 0 {
            tracing::warn!(
                plugin = &*self.spec.name,
                refused,
                "the restarted plugin refused {refused} of {} replayed writes",
                journal.len()
            );
        }
        self.health.replayed.fetch_add(journal.len() as u64, Ordering::Relaxed);
        tracing::info!(plugin = &*self.spec.name, writes = journal.len(), "replayed the write journal");
        match self.invoke(core, Call::Export).await {
            Ok(Answer::Export(state)) => {
                self.keep_snapshot(core, Arc::from(state), true);
                Ok(())
            }
            Ok(_) => unreachable!(),
            Err(e) => {
                core.journal = journal;
                core.live = None;
                Err(e)
            }
        }
    }

    async fn take_snapshot(&self, core: &mut Core, forced: bool) -> Result<(), ModelError> {
        match self.invoke(core, Call::Export).await {
            Ok(Answer::Export(state)) => {
                self.keep_snapshot(core, Arc::from(state), forced);
                Ok(())
            }
            Ok(_) => unreachable!(),
            Err(e) => {
                self.failed(core, e.clone()).await;
                Err(e)
            }
        }
    }

    fn keep_snapshot(&self, core: &mut Core, state: Arc<[u8]>, forced: bool) {
        core.snapshot = Some(state);
        core.last_snapshot = Instant::now();
        core.journal.clear();
        core.journal_octets = 0;
        self.health.snapshots.fetch_add(1, Ordering::Relaxed);
        if let (Some(disk), Some(state)) = (core.disk.as_mut(), core.snapshot.as_ref()) {
            disk.keep(&self.spec.name, &self.info, state, forced);
        }
    }

    /// Serve the device's state on disk from now on: it gets this
    /// instance's state at once (a snapshot), then every accepted write.
    /// An instance that is not running takes it when it starts again.
    pub async fn attach_disk(&self, disk: DiskState) -> Result<(), ModelError> {
        let mut core = self.core.lock().await;
        core.disk = Some(disk);
        drop(core);
        let mut core = self.ready().await?;
        self.take_snapshot(&mut core, true).await
    }

    /// Stop writing the device's state (it goes to the instance that
    /// serves next, `attach_disk`).
    pub async fn detach_disk(&self) -> Option<DiskState> {
        self.core.lock().await.disk.take()
    }
}

/// The one result `records` holds for `target`, checked: its value appended
/// to `out`, or its error.
fn one_encoded_read(records: &[u8], target: PropertyTarget, out: &mut Vec<u8>) -> Result<EncodedRead, Contract> {
    let bad = |e: bacnet::DecodeError| Contract(format!("read-encoded answered records that do not parse: {e}"));
    let mut r = ReadRecords::new(records);
    let count = r.count().map_err(bad)?;
    if count != 1 {
        return Err(Contract(format!("read-encoded answered {count} results for one property")));
    }
    let record = r.result().map_err(bad)?;
    r.finish().map_err(bad)?;
    if (record.object, record.property, record.array_index) != (target.object, target.property, target.array_index) {
        return Err(Contract(format!(
            "read-encoded answered {} property {} for {} property {}",
            record.object, record.property.0, target.object, target.property.0
        )));
    }
    Ok(match record.outcome {
        Ok(value) => {
            out.extend_from_slice(value);
            EncodedRead::Value
        }
        Err(e) => EncodedRead::Error(e),
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::read_records::{write_count, write_result};
    use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};

    const AV1: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };

    fn target(property: P) -> PropertyTarget {
        PropertyTarget { object: AV1, property, array_index: None }
    }

    fn records(results: &[(P, Result<bacnet::AnyValue, BacnetError>)]) -> Vec<u8> {
        let mut out = Vec::new();
        write_count(&mut out, results.len() as u32);
        for (p, r) in results {
            write_result(&mut out, AV1, *p, None, r.as_ref());
        }
        out
    }

    #[test]
    fn one_result_for_the_target_is_appended() {
        let mut out = vec![9];
        let r = records(&[(P::PRESENT_VALUE, Ok(Value::Real(1.0).into()))]);
        assert_eq!(one_encoded_read(&r, target(P::PRESENT_VALUE), &mut out), Ok(EncodedRead::Value));
        assert_eq!(out, [9, 0x44, 0x3F, 0x80, 0, 0]);
    }

    #[test]
    fn answers_that_break_the_contract_name_what_was_wrong() {
        let mut out = Vec::new();
        let two = records(&[(P::PRESENT_VALUE, Ok(Value::Null.into())), (P::OBJECT_NAME, Ok(Value::Null.into()))]);
        let e = one_encoded_read(&two, target(P::PRESENT_VALUE), &mut out).unwrap_err();
        assert!(e.0.contains("2 results for one property"), "{}", e.0);
        let other = records(&[(P::OBJECT_NAME, Ok(Value::Null.into()))]);
        let e = one_encoded_read(&other, target(P::PRESENT_VALUE), &mut out).unwrap_err();
        assert!(e.0.contains("answered analog-value"), "{}", e.0);
        let e = one_encoded_read(&[1, 0, 0], target(P::PRESENT_VALUE), &mut out).unwrap_err();
        assert!(e.0.contains("do not parse"), "{}", e.0);
        assert!(out.is_empty(), "nothing appended on a broken answer");
    }
}
