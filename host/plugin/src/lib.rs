//! The plugin runtime: a device's object model served by a sandboxed
//! WebAssembly component (world `trellis:bacnet/object-model-plugin`).
//!
//! [`PluginModel`] is the server's handle on one plugin instance: a cheap
//! [`Clone`] that implements [`ObjectModel`]. A call runs the guest on the
//! caller's thread (`instance`), under an epoch deadline and a memory limit:
//! no hand-off to another thread, so a request is answered on the thread
//! that received it. Its futures are ready at their first poll.
//!
//! Codemap, one purpose per file (each file's doc says what it must never do):
//! - `engine`: the shared wasmtime `Engine` and its epoch ticker.
//! - `cache`: compiled components on disk (`.cwasm`), verified before use.
//! - `limits`: the per-store `ResourceLimiter`.
//! - `wasi`: the plugin's WASI context (no network, one data directory).
//! - `bindings`: the generated WIT bindings; `convert` is the only module
//!   that translates their types.
//! - `host_imports`, `log`: what a plugin may call — log, clock, change
//!   notifications (the clock and the change feed belong to the model
//!   boundary, `trellis_model`; `wasi` hands the clock to WASI too).
//! - `state`: what one instance's `Store` holds.
//! - `instance`: one instance's store, called in place; failure handling,
//!   restarts (policy in `restart`), snapshots and the write journal.
//! - [`policy`] and [`signing`]: whether a plugin file may load (signature,
//!   trusted keys, capability manifest against the operator's `[policy]`,
//!   [`policy::PolicySection`], which the configuration file embeds) and
//!   what it is granted. Built-in plugins are trusted by construction (they
//!   live in the binary, `trellis::plugin::builtin`).
//! - [`routing`]: routing-policy plugins (`trellis:routing@0.1.0`), which
//!   the router asks about every NPDU it would send on: the same engine,
//!   limits, log and restart policy, called synchronously from the router's
//!   thread, failing closed or open as configured.
//! - `bounded_read`: every plugin file is read through it — regular files
//!   only, opened without blocking, never more than its cap.
//!
//! Architecture invariant: nothing outside this crate knows wasmtime or the
//! WIT types. It is the only crate of the workspace that depends on
//! wasmtime; the server, the client, the model boundary and the network
//! crate never depend on it (the `trellis` crate's `layering` test), and it
//! knows none of them but the model boundary. A plugin call runs on its
//! device's shard thread (or, for loading, swapping and restarting, off the
//! runtime's workers); it never waits on anything but the guest, whose
//! imports never block.
//!
//! Hot swap (issue #3 item 8) is built in: [`PluginModel::swap`] loads nothing
//! itself; it takes a model loaded beside this one, hands the state across
//! with writes paused, and switches the handle between two calls. A call
//! already running on the old instance finishes there.

pub mod app;
mod bindings;
pub mod bounded_read;
mod cache;
mod convert;
mod engine;
mod failure;
mod host_imports;
mod instance;
mod limits;
mod log;
mod persisted;
pub mod policy;
mod restart;
pub mod routing;
pub mod signing;
mod state;
mod wasi;

pub use cache::{CacheOutcome, ComponentCache};
pub use engine::{EngineConfig, PluginEngine, PoolConfig};
pub use instance::{HealthReport, JOURNAL_OCTETS, JOURNAL_WRITES};
pub use limits::{LimitHits, Limits};
pub use restart::RestartPolicy;
/// The model boundary's change feed and clock, which a plugin drives.
pub use trellis_model::{ChangeFeed, Changes, HostClock};
pub use wasi::DataDir;

use bacnet::ObjectIdentifier;
use bacnet::services::{BacnetError, CreateObjectError, ObjectSpecifier};
use instance::{Instance, Spec};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use trellis_model::{
    DateTime, EncodedRead, ModelError, ObjectInfo, ObjectModel, PluginInfo, PropertyRead, PropertyTarget, PropertyWrite,
};
use wasmtime::component::Linker;

/// Largest component file accepted.
pub const MAX_COMPONENT_BYTES: u64 = 256 << 20;

/// Longest that reading and checking a plugin file's signature and manifest
/// may take (they are at most a few kilobytes besides the component).
pub const VET_TIME_LIMIT: Duration = Duration::from_secs(30);
/// Longest that loading a plugin may take: compiling a large component on a
/// cache miss takes seconds to minutes on a small gateway.
pub const LOAD_TIME_LIMIT: Duration = Duration::from_secs(300);

/// Where a plugin's component comes from.
#[derive(Debug, Clone, Copy)]
pub enum PluginSource<'a> {
    /// Component bytes in memory (e.g. a built-in plugin, `trellis::plugin::builtin`).
    Bytes(&'a [u8]),
    /// A `.wasm` component file.
    File(&'a Path),
}

impl<'a> From<&'a [u8]> for PluginSource<'a> {
    fn from(b: &'a [u8]) -> Self {
        PluginSource::Bytes(b)
    }
}

impl<'a> From<&'a Path> for PluginSource<'a> {
    fn from(p: &'a Path) -> Self {
        PluginSource::File(p)
    }
}

/// How one plugin instance runs.
#[derive(Debug, Clone)]
pub struct PluginConfig {
    /// Name used in logs and errors (the operator's, not the plugin's own).
    pub name: String,
    /// Host directory preopened as `/data`, if any.
    pub data_dir: Option<PathBuf>,
    /// Whether the plugin may write to its data directory.
    pub data_writable: bool,
    /// Memory, table and instance limits.
    pub limits: Limits,
    /// Wall-clock limit of one call (default 100 ms).
    pub deadline: Duration,
    /// Restarts and back-off.
    pub restart: RestartPolicy,
    /// Longest time between state snapshots while only ticks change state
    /// (default 10 s).
    pub snapshot_interval: Duration,
    /// The gateway clock the plugin sees.
    pub clock: HostClock,
    /// The change feed the plugin reports into (`None`: a new one). A hot
    /// swap's successor shares its predecessor's, so the device's COV
    /// machinery hears the new version.
    pub changes: Option<ChangeFeed>,
}

impl PluginConfig {
    /// Defaults for a plugin called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PluginConfig {
            name: name.into(),
            data_dir: None,
            data_writable: false,
            limits: Limits::default(),
            deadline: Duration::from_millis(100),
            restart: RestartPolicy::default(),
            snapshot_interval: Duration::from_secs(10),
            clock: HostClock::default(),
            changes: None,
        }
    }
}

/// Why a plugin could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot load plugin {plugin}: {reason}")]
pub struct LoadError {
    /// Plugin name.
    pub plugin: String,
    /// What went wrong.
    pub reason: String,
}

/// Why a state hand-over failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The plugin refused the state (its `import-state` returned an error).
    #[error("plugin {plugin} refused the state: {reason}")]
    Refused {
        /// Plugin name.
        plugin: String,
        /// The plugin's reason.
        reason: String,
    },
    /// The call itself failed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// A plugin instance serving one device's object model (cheap to clone).
///
/// Its async methods run the guest in place, inside a tokio runtime with
/// the time driver (a call's deadline is also a timer); a guest that does
/// not wait on WASI completes at the first poll.
#[derive(Clone)]
pub struct PluginModel {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    active: RwLock<Arc<Instance>>,
    /// Held shared by every state-changing call and exclusively by a swap, so
    /// no write lands on the old instance after its state was exported.
    writes: tokio::sync::RwLock<()>,
    changes: ChangeFeed,
    cache: CacheOutcome,
    /// The runtime of the thread the device runs on (its shard), where a
    /// swap moves the state: there it waits for no other thread.
    home: std::sync::OnceLock<tokio::runtime::Handle>,
    /// The counters of the device's state on disk, once persisted.
    disk: std::sync::OnceLock<Arc<persisted::DiskCounters>>,
}

/// What [`PluginModel::persist`] took from disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Who exported the saved state that was imported ("name version").
    pub state_from: Option<String>,
    /// Why the saved state was refused, when it was.
    pub state_refused: Option<String>,
    /// Journaled writes applied after it.
    pub writes_applied: usize,
    /// Journaled writes left out (refused now, or undecodable).
    pub writes_dropped: usize,
}

impl std::fmt::Debug for PluginModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginModel").field("name", &self.inner.name).finish_non_exhaustive()
    }
}

impl PluginModel {
    /// Compile (or fetch from the cache), link and instantiate a plugin, and
    /// start its first instance. Blocking — compiling takes seconds on a cache miss:
    /// call it before the runtime starts or from `spawn_blocking`.
    pub fn load<'a>(
        engine: &PluginEngine,
        source: impl Into<PluginSource<'a>>,
        config: PluginConfig,
    ) -> Result<PluginModel, LoadError> {
        let fail = |reason: String| LoadError { plugin: config.name.clone(), reason };
        let file;
        let bytes = match source.into() {
            PluginSource::Bytes(b) => b,
            PluginSource::File(path) => {
                file = read_component(path).map_err(fail)?;
                &file[..]
            }
        };
        engine.check_limits(&config.limits).map_err(fail)?;
        let (component, cache) = match engine.cache() {
            Some(c) => c.load(engine.engine(), bytes),
            None => cache::compile_uncached(engine.engine(), bytes),
        }
        .map_err(|e| fail(format!("not a valid component: {e:#}")))?;
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| fail(format!("{e:#}")))?;
        host_imports::add_to_linker(&mut linker).map_err(|e| fail(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(|pre| {
                // The newest interface the component exports.
                if let Ok(v4) = bindings::v4::ObjectModelPluginPre::new(pre.clone()) {
                    return Ok(instance::Pre::V4(v4));
                }
                if let Ok(v3) = bindings::v3::ObjectModelPluginPre::new(pre.clone()) {
                    return Ok(instance::Pre::V3(v3));
                }
                match bindings::v2::ObjectModelPluginPre::new(pre.clone()) {
                    Ok(v2) => Ok(instance::Pre::V2(v2)),
                    Err(_) => bindings::v1::ObjectModelPluginPre::new(pre).map(instance::Pre::V1),
                }
            })
            .map_err(|e| {
                fail(format!(
                    "exports none of trellis:bacnet/object-model@0.4.0, @0.3.0, @0.2.0, @0.1.0 \
                     (world object-model-plugin): {e:#}"
                ))
            })?;
        let interface = pre.interface();
        let name: Arc<str> = config.name.as_str().into();
        let changes = config.changes.clone().unwrap_or_default();
        let spec = Arc::new(Spec {
            log: log::PluginLog::new(name.clone()),
            name: name.clone(),
            engine: engine.clone(),
            pre,
            limits: config.limits,
            deadline: config.deadline,
            data: DataDir { path: config.data_dir, writable: config.data_writable },
            clock: config.clock,
            changes: changes.clone(),
            restart: config.restart,
            snapshot_interval: config.snapshot_interval,
        });
        let instance = start_off_runtime(spec).map_err(|e| fail(e.to_string()))?;
        let info = instance.info();
        tracing::info!(plugin = &*name, "loaded {} {} ({interface}, {cache:?})", info.name, info.version);
        Ok(PluginModel {
            inner: Arc::new(Inner {
                name,
                active: RwLock::new(Arc::new(instance)),
                writes: tokio::sync::RwLock::new(()),
                changes,
                cache,
                home: std::sync::OnceLock::new(),
                disk: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Say which runtime the device's requests run on (its shard): swaps
    /// then hand the state across there, between two batches of requests,
    /// instead of from another thread that would contend for the instance.
    /// Set once; later calls change nothing.
    pub fn set_home(&self, home: tokio::runtime::Handle) {
        let _ = self.inner.home.set(home);
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the plugin said it is (its `describe`, asked once per instance).
    pub fn describe(&self) -> PluginInfo {
        self.active().info().clone()
    }

    /// The interface the running component exports, e.g.
    /// "trellis:bacnet@0.2.0".
    pub fn interface(&self) -> &'static str {
        self.active().interface()
    }

    /// Whether the compiled component came from the cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.inner.cache
    }

    /// Restarts, failures, back-off and disabled state.
    pub fn health(&self) -> HealthReport {
        self.active().health()
    }

    /// How long the serving instance's export calls took.
    pub fn call_latency(&self) -> trellis_model::latency::LatencySnapshot {
        self.active().call_latency()
    }

    /// The serving instance's last failure, in one line.
    pub fn last_failure(&self) -> Option<String> {
        self.active().last_failure()
    }

    /// The model's change notifications (for COV and Database_Revision).
    pub fn changes(&self) -> ChangeFeed {
        self.inner.changes.clone()
    }

    /// Time-driven behaviour; the host's timer calls this (1 s by default).
    pub async fn tick(&self, now: DateTime) -> Result<(), ModelError> {
        let _w = self.inner.writes.read().await;
        self.active().tick(now).await
    }

    /// The model's state as versioned bytes.
    pub async fn export_state(&self) -> Result<Vec<u8>, ModelError> {
        self.active().export().await
    }

    /// Replace the model's state with `state` (from this or an earlier
    /// version).
    pub async fn import_state(&self, state: Vec<u8>) -> Result<(), StateError> {
        let _w = self.inner.writes.read().await;
        self.active()
            .import(&state)
            .await?
            .map_err(|reason| StateError::Refused { plugin: self.inner.name.to_string(), reason })
    }

    /// Hot swap: move this model's state into `next` (loaded beside this one,
    /// typically a new version) and serve from `next` from the next call on.
    /// Writes wait while the state crosses; reads keep being answered by the
    /// old instance. If `next` refuses the state, nothing changes and the old
    /// instance keeps serving. Returns what `next` says it is.
    pub async fn swap(&self, next: &PluginModel) -> Result<PluginInfo, StateError> {
        self.swap_timed(next).await.map(|(info, _)| info)
    }

    /// [`swap`](Self::swap), and how long the device paused: from the
    /// state's export to the new instance serving (run on the device's
    /// home runtime when it has one, see [`set_home`](Self::set_home)).
    pub async fn swap_timed(&self, next: &PluginModel) -> Result<(PluginInfo, std::time::Duration), StateError> {
        let Some(home) = self.inner.home.get() else { return self.swap_here(next).await };
        let (me, next) = (self.clone(), next.clone());
        home.spawn(async move { me.swap_here(&next).await }).await.map_err(|e| {
            StateError::Model(ModelError::RestartFailed {
                plugin: self.inner.name.to_string(),
                detail: format!("the device's thread did not run the swap: {e}"),
            })
        })?
    }

    async fn swap_here(&self, next: &PluginModel) -> Result<(PluginInfo, std::time::Duration), StateError> {
        let _w = self.inner.writes.write().await;
        let paused = std::time::Instant::now();
        let outgoing = self.active();
        let incoming = next.active();
        let refused = |reason| StateError::Refused { plugin: next.inner.name.to_string(), reason };
        match outgoing.export().await {
            Ok(state) => incoming.import(&state).await?.map_err(refused)?,
            // A broken plugin is what a swap is most needed for: the new
            // version starts from what a restart would have started from.
            Err(broken) => self.take_over_saved_state(&outgoing, &incoming, &broken).await?,
        }
        // The device's state on disk follows the version that serves it.
        if let Some(disk) = outgoing.detach_disk().await
            && let Err(e) = incoming.attach_disk(disk).await
        {
            tracing::warn!(plugin = &*self.inner.name, "the new version could not snapshot its state to disk yet: {e}");
        }
        let info = incoming.info().clone();
        let old = std::mem::replace(&mut *self.inner.active.write().unwrap_or_else(PoisonError::into_inner), incoming);
        let pause = paused.elapsed();
        drop(old);
        if !self.inner.changes.same_as(&next.inner.changes) {
            tracing::warn!(
                plugin = &*self.inner.name,
                "the new instance reports changes into a feed of its own: load it with PluginConfig::changes \
                 set to this model's, or COV stops hearing it"
            );
        }
        // The new version's objects may differ: the object list is read again.
        self.inner.changes.objects_changed();
        Ok((info, pause))
    }

    /// Hand `incoming` the state `outgoing` would restart from (its last
    /// snapshot and the writes accepted since), because `outgoing` could not
    /// export its own (`broken`).
    async fn take_over_saved_state(
        &self,
        outgoing: &Instance,
        incoming: &Instance,
        broken: &ModelError,
    ) -> Result<(), StateError> {
        let (snapshot, journal) = outgoing.saved_state().await;
        if let Some(state) = &snapshot {
            incoming
                .import(state)
                .await?
                .map_err(|reason| StateError::Refused { plugin: incoming.info().name.clone(), reason })?;
        }
        let refused =
            if journal.is_empty() { 0 } else { incoming.write(&journal).await?.iter().filter(|r| r.is_err()).count() };
        tracing::warn!(
            plugin = &*self.inner.name,
            "swapping out a plugin that could not export its state ({broken}): the new version starts from {}, \
             with {} journaled writes replayed ({refused} refused)",
            if snapshot.is_some() { "the last snapshot" } else { "scratch" },
            journal.len(),
        );
        Ok(())
    }

    /// Snapshot the state to disk now, when it is kept there
    /// ([`persist`](Self::persist)); nothing otherwise. For a clean stop:
    /// the state only the clock changed (a trend log's records) since the
    /// last snapshot is kept too.
    pub async fn save(&self) -> Result<(), ModelError> {
        if self.inner.disk.get().is_none() {
            return Ok(());
        }
        let _w = self.inner.writes.write().await;
        self.active().save().await
    }

    /// Restart the plugin in a fresh instance (ReinitializeDevice): with its
    /// current state (`keep_state`, a warm start) or from scratch (a cold
    /// start). Writes wait; if the new instance cannot start, the old one
    /// keeps serving.
    pub async fn restart(&self, keep_state: bool) -> Result<(), ModelError> {
        let _w = self.inner.writes.write().await;
        let old = self.active();
        let state: Option<Arc<[u8]>> = if keep_state { Some(old.export().await?.into()) } else { None };
        let failed = |detail: String| ModelError::RestartFailed { plugin: self.inner.name.to_string(), detail };
        let fresh = old.restart(state).await.map_err(|e| failed(e.to_string()))?;
        if let Some(disk) = old.detach_disk().await
            && let Err(e) = fresh.attach_disk(disk).await
        {
            tracing::warn!(
                plugin = &*self.inner.name,
                "the restarted instance could not snapshot its state to disk yet: {e}"
            );
        }
        *self.inner.active.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        if !keep_state {
            // Everything may differ now: the object list and every value.
            self.inner.changes.objects_changed();
        }
        Ok(())
    }

    /// Keep the device's state on disk from now on (issue 42), starting
    /// from what `journal` held: the saved state is imported, the writes
    /// journaled after it are applied in order, then the journal takes a
    /// snapshot of the result and every write accepted later. Called once,
    /// before the device serves. Never fails: damage the journal reported,
    /// a state this version refuses (set aside beside the journal) and
    /// writes it no longer accepts are logged and left out — the device
    /// starts from its configured state for whatever could not be taken.
    pub async fn persist(&self, journal: trellis_persist::Journal, recovered: trellis_persist::Recovered) -> Restored {
        let _w = self.inner.writes.write().await;
        let name = &*self.inner.name;
        for note in &recovered.notes {
            if note.damage {
                tracing::warn!(plugin = name, "{}", note.text);
            } else {
                tracing::info!(plugin = name, "{}", note.text);
            }
        }
        let active = self.active();
        let disk = persisted::DiskState::new(journal);
        let _ = self.inner.disk.set(disk.counters());
        let mut restored = Restored::default();
        if let Some(saved) = &recovered.snapshot {
            let refusal = match persisted::open_envelope(saved) {
                Err(why) => Some(("an unknown version".to_string(), why)),
                Ok((by, state)) => match active.import(state).await {
                    Ok(Ok(())) => {
                        restored.state_from = Some(by);
                        None
                    }
                    Ok(Err(reason)) => Some((by, reason)),
                    Err(e) => Some((by, e.to_string())),
                },
            };
            if let Some((by, reason)) = refusal {
                let aside = match disk.journal().set_aside("refused") {
                    Ok(Some(p)) => format!("set aside as {}", p.display()),
                    Ok(None) => "nothing to set aside".into(),
                    Err(e) => format!("could not be set aside: {e}"),
                };
                let me = active.info();
                tracing::warn!(
                    plugin = name,
                    "{} {} refused the saved state exported by {by} ({reason}): starting from the configured state;                      the saved state {aside}",
                    me.name,
                    me.version
                );
                restored.state_refused = Some(reason);
            }
        }
        let mut writes = Vec::with_capacity(recovered.records.len());
        for r in &recovered.records {
            match PropertyWrite::from_record(r) {
                Ok(w) => writes.push(w),
                Err(e) => {
                    tracing::warn!(plugin = name, "a journaled write does not decode ({e}): left out");
                    restored.writes_dropped += 1;
                }
            }
        }
        for chunk in writes.chunks(64) {
            let results = match active.write(chunk).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(plugin = name, "{} journaled writes are left out: {e}", chunk.len());
                    restored.writes_dropped += chunk.len();
                    continue;
                }
            };
            for (w, r) in chunk.iter().zip(results) {
                match r {
                    Ok(()) => restored.writes_applied += 1,
                    Err(e) => {
                        restored.writes_dropped += 1;
                        tracing::warn!(
                            plugin = name,
                            "a journaled write is left out: {} property {} at priority {}: the plugin refuses it                              now ({}/{})",
                            w.target.object,
                            w.target.property,
                            w.priority.unwrap_or(16),
                            e.class,
                            e.code
                        );
                    }
                }
            }
        }
        if let Err(e) = active.attach_disk(disk).await {
            tracing::warn!(plugin = name, "could not snapshot the restored state to disk yet: {e}");
        }
        tracing::info!(
            plugin = name,
            "state restored from disk: {}, {} journaled writes applied, {} left out",
            restored.state_from.as_deref().unwrap_or("no saved state"),
            restored.writes_applied,
            restored.writes_dropped
        );
        restored
    }

    /// Appends, snapshots and failures of the state on disk, when
    /// [`persist`](Self::persist) was called.
    pub fn disk_counters(&self) -> Option<(u64, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        let c = self.inner.disk.get()?;
        Some((c.appended.load(Relaxed), c.snapshots.load(Relaxed), c.failures.load(Relaxed)))
    }

    /// The clock the plugin reads (shared with its successors).
    pub fn clock(&self) -> HostClock {
        self.active().clock().clone()
    }

    /// Writes accepted since the last state snapshot (replayed into a fresh
    /// instance if this one fails).
    pub async fn journal_len(&self) -> usize {
        self.active().journal_len().await
    }

    fn active(&self) -> Arc<Instance> {
        self.inner.active.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ObjectModel for PluginModel {
    fn changes(&self) -> Option<ChangeFeed> {
        Some(PluginModel::changes(self))
    }

    fn clock(&self) -> Option<HostClock> {
        Some(PluginModel::clock(self))
    }

    async fn reinitialize(&self, cold: bool) -> Result<(), ModelError> {
        self.restart(!cold).await
    }

    async fn objects(&self) -> Result<Vec<ObjectInfo>, ModelError> {
        self.active().objects().await
    }

    async fn read(&self, targets: &[PropertyTarget]) -> Result<Vec<Vec<PropertyRead>>, ModelError> {
        self.active().read(targets).await
    }

    async fn read_encoded(&self, target: PropertyTarget, out: &mut Vec<u8>) -> Result<EncodedRead, ModelError> {
        self.active().read_encoded(target, out).await
    }

    async fn write(&self, writes: Vec<PropertyWrite>) -> Result<Vec<Result<(), BacnetError>>, ModelError> {
        let _w = self.inner.writes.read().await;
        self.active().write(&writes).await
    }

    async fn acknowledge(
        &self,
        object: bacnet::ObjectIdentifier,
        transition: u8,
    ) -> Result<Result<(), BacnetError>, ModelError> {
        // Like a write: it changes state a swap hands over.
        let _w = self.inner.writes.read().await;
        self.active().acknowledge(object, transition).await
    }

    async fn create_object(
        &self,
        object: ObjectSpecifier,
        initial: Vec<PropertyWrite>,
    ) -> Result<Result<ObjectIdentifier, CreateObjectError>, ModelError> {
        // Like a write: it changes state a swap hands over.
        let _w = self.inner.writes.read().await;
        self.active().create_object(object, &initial).await
    }

    async fn delete_object(&self, object: ObjectIdentifier) -> Result<Result<(), BacnetError>, ModelError> {
        let _w = self.inner.writes.read().await;
        self.active().delete_object(object).await
    }
}

/// Start the first instance on a thread of its own, with a runtime of its
/// own (the guest's constructor may use WASI, which wants tokio's clock):
/// `load` is blocking and may be called from anywhere, a runtime included.
fn start_off_runtime(spec: Arc<Spec>) -> Result<Instance, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .map_err(|e| format!("cannot start a runtime to instantiate in: {e}"))?;
                runtime.block_on(Instance::start(spec, None)).map_err(|e| e.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("instantiating panicked".to_string()))
    })
}

pub(crate) fn read_component(path: &Path) -> Result<Vec<u8>, String> {
    match bounded_read::read(path, MAX_COMPONENT_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(format!("{}: {}", path.display(), std::io::Error::from(std::io::ErrorKind::NotFound))),
        Err(e) => Err(e.to_string()),
    }
}
