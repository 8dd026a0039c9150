//! Application-logic plugins: a component exporting `trellis:app/app`
//! (`wit/app`) that runs next to the gateway's points — reads and writes
//! them, watches their changes, keeps timers, talks MQTT through the
//! gateway's broker link, and keeps a small persisted state.
//!
//! ```text
//! gateway's app task ──start / on-change / on-timer / on-message──▶ AppPlugin ──▶ guest
//!        ▲                                                            │ imports
//!        └── Effects (watch, unwatch, timers, subscriptions) ◀───────┤ (recorded, applied by the task)
//!            AppServices (read, write, publish, clock) ◀──────────────┘ (called at once, awaited)
//! ```
//!
//! One [`AppPlugin`] is driven by one task of the gateway, one call at a
//! time, never on a device's request path. A point read or write waits on
//! the device's answer through [`AppServices`] (the gateway's), under the
//! call's deadline. What the guest asks that outlives the call — watches,
//! timers, topic subscriptions — is recorded as [`Effects`] for the task to
//! apply. Every point and topic is checked against the operator's
//! [`Grants`] first; a refusal is the guest's error, never a trap.
//!
//! Same sandbox and failure handling as the other plugin kinds: the shared
//! engine's epoch deadline, the memory limiter, a WASI context with no
//! network and no files, the plugin's log; a call that traps, overruns or
//! runs out of memory drops the instance, which restarts with back-off
//! (`start` runs again and makes its watches again, the last exported state
//! handed over) and is disabled after repeated failures. Events that come
//! while no instance runs are dropped and counted (a restarted instance's
//! watches deliver the current values again).
//!
//! Must never: let a guest reach a point or topic it was not granted, trap
//! the guest for the host's or a device's failure, or block the thread it
//! runs on beyond a call's deadline.

mod bindings;
mod convert;
pub mod grants;
mod kv;

use super::engine::PluginEngine;
use super::limits::{LimitHits, Limits, StoreLimiter};
use super::log::PluginLog;
use super::restart::{RestartPolicy, Restarts, Verdict as Restart};
use super::wasi::{self, DataDir};
use super::{LoadError, PluginSource};
use bacnet::AnyValue;
use bindings::ApplicationPre;
use bindings::trellis::app::types as wit;
pub use grants::{Grants, PointAddress, PointPattern, TopicFilter};
use kv::KvState;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use trellis_model::HostClock;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The interface an application component exports.
pub const APP_INTERFACE: &str = "trellis:app@0.1.0";

/// A point as the guest named it: by address, or by a configured name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AppPoint {
    /// By address.
    Address(PointAddress),
    /// By a name in the plugin's configuration.
    Named(String),
}

impl std::fmt::Display for AppPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppPoint::Address(a) => a.fmt(f),
            AppPoint::Named(n) => write!(f, "`{n}`"),
        }
    }
}

/// Why a point operation failed (the guest gets it as its error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointError {
    /// Not granted.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// No such name or device.
    #[error("unknown point: {0}")]
    UnknownPoint(String),
    /// The device's BACnet Error.
    #[error("BACnet error {class}/{code}")]
    Bacnet {
        /// Error class.
        class: u32,
        /// Error code.
        code: u32,
    },
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

/// A future the services answer with.
pub type ServiceFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the gateway does for its applications.
pub trait AppServices: Send + Sync + 'static {
    /// A device's objects and their names.
    fn objects(&self, device: u32) -> ServiceFuture<Result<Vec<(bacnet::ObjectIdentifier, String)>, PointError>>;
    /// Read a point.
    fn read(&self, point: PointAddress) -> ServiceFuture<Result<AnyValue, PointError>>;
    /// Write a point at a priority.
    fn write(
        &self,
        point: PointAddress,
        value: AnyValue,
        priority: Option<u8>,
    ) -> ServiceFuture<Result<(), PointError>>;
    /// Publish through the broker link (spooled).
    fn publish(&self, topic: &str, payload: &[u8], qos: u8, retain: bool) -> Result<(), String>;
    /// Milliseconds since the Unix epoch, the gateway's clock.
    fn now_ms(&self) -> u64;
}

/// A timer change an application asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerChange {
    /// Fire `id` after `after`, then every `every`.
    Set {
        /// The guest's timer id.
        id: u32,
        /// First firing.
        after: Duration,
        /// Period, if it repeats.
        every: Option<Duration>,
    },
    /// Cancel `id`.
    Cancel(u32),
}

/// What calls asked that the driving task applies, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    /// A new instance started: forget every earlier watch, timer and
    /// subscription before applying the rest.
    pub reset: bool,
    /// Watch these points (as the guest named them, and where they are).
    pub watch: Vec<(AppPoint, PointAddress)>,
    /// Stop watching these.
    pub unwatch: Vec<AppPoint>,
    /// Timers set and cancelled.
    pub timers: Vec<TimerChange>,
    /// Topic filters subscribed.
    pub subscribe: Vec<String>,
}

impl Effects {
    fn is_empty(&self) -> bool {
        !self.reset
            && self.watch.is_empty()
            && self.unwatch.is_empty()
            && self.timers.is_empty()
            && self.subscribe.is_empty()
    }

    fn append(&mut self, mut later: Effects) {
        if later.reset {
            *self = later;
            return;
        }
        self.watch.append(&mut later.watch);
        self.unwatch.append(&mut later.unwatch);
        self.timers.append(&mut later.timers);
        self.subscribe.append(&mut later.subscribe);
    }
}

/// How an application plugin runs.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Name in logs and errors (the operator's).
    pub name: String,
    /// The settings handed to `start` (TOML text).
    pub settings: String,
    /// Point names the guest may use, and what they are.
    pub points: HashMap<String, PointAddress>,
    /// What it may touch.
    pub grants: Grants,
    /// Where its persisted state lives (`None`: in memory only).
    pub state_file: Option<PathBuf>,
    /// Bound of the persisted state (default 64 KiB).
    pub state_bytes: usize,
    /// Memory, table and instance limits (default 32 MiB of memory).
    pub limits: Limits,
    /// Wall-clock limit of one call, device answers included (default 2 s).
    pub deadline: Duration,
    /// Restarts and back-off.
    pub restart: RestartPolicy,
}

impl AppConfig {
    /// Defaults for an application called `name` with `settings`: no
    /// points named, nothing granted.
    pub fn new(name: impl Into<String>, settings: impl Into<String>) -> Self {
        AppConfig {
            name: name.into(),
            settings: settings.into(),
            points: HashMap::new(),
            grants: Grants::default(),
            state_file: None,
            state_bytes: 64 << 10,
            limits: Limits { memory_bytes: 32 << 20, ..Limits::default() },
            deadline: Duration::from_secs(2),
            restart: RestartPolicy::default(),
        }
    }
}

/// What an application said it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What this configuration does.
    pub summary: String,
}

/// An application's health, for operators.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppStatus {
    /// What the running instance said it is.
    pub info: AppInfo,
    /// No instance runs now (backing off or disabled).
    pub failing: bool,
    /// Failed for good.
    pub disabled: bool,
    /// Instances started after the first.
    pub restarts: u64,
    /// Calls that trapped, overran or ran out of memory.
    pub failures: u64,
    /// The last failure, in one line.
    pub last_failure: Option<String>,
    /// Events delivered (changes, timers, messages).
    pub events: u64,
    /// Events dropped while no instance ran.
    pub missed: u64,
    /// Point operations and publications refused as not granted.
    pub refused: u64,
}

/// The store's data: WASI, limits, and what the imports need.
struct AppState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: StoreLimiter,
    log: Arc<PluginLog>,
    shared: Arc<Shared>,
    effects: Effects,
    refused: u64,
}

/// What every instance of one application shares.
struct Shared {
    services: Arc<dyn AppServices>,
    points: HashMap<String, PointAddress>,
    grants: Grants,
    kv: Mutex<KvState>,
}

impl WasiView for AppState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl AppState {
    /// Where a point is, if it may be touched (`write`: for writing).
    fn resolve(&mut self, point: &AppPoint, write: bool) -> Result<PointAddress, PointError> {
        let address =
            match point {
                AppPoint::Address(a) => *a,
                AppPoint::Named(n) => *self.shared.points.get(n).ok_or_else(|| {
                    PointError::UnknownPoint(format!("no point is named `{n}` in this plugin's points"))
                })?,
            };
        let granted =
            if write { self.shared.grants.may_write(&address) } else { self.shared.grants.may_read(&address) };
        if !granted {
            self.refused += 1;
            let what = if write { "write" } else { "read" };
            return Err(PointError::NotPermitted(format!("{point} ({address}) is not granted for {what}")));
        }
        Ok(address)
    }
}

impl wit::Host for AppState {}

impl bindings::trellis::app::host::Host for AppState {
    async fn log(&mut self, level: wit::LogLevel, message: String) {
        self.log.line(convert::level_from_wit(level), "log", &message);
    }

    async fn now_ms(&mut self) -> u64 {
        self.shared.services.now_ms()
    }

    async fn objects(&mut self, device: u32) -> Result<Vec<wit::ObjectEntry>, wit::PointError> {
        if !self.shared.grants.may_name_device(device) {
            self.refused += 1;
            return Err(wit::PointError::NotPermitted(format!("no point of device {device} is granted")));
        }
        let objects = self.shared.services.objects(device).await.map_err(convert::error_to_wit)?;
        Ok(objects.into_iter().map(|(id, name)| convert::object_entry_to_wit(id, name)).collect())
    }

    async fn read(&mut self, point: wit::Point) -> Result<wit::Value, wit::PointError> {
        let point = convert::point_from_wit(point).map_err(convert::error_to_wit)?;
        let address = self.resolve(&point, false).map_err(convert::error_to_wit)?;
        let value = self.shared.services.read(address).await.map_err(convert::error_to_wit)?;
        Ok(convert::value_to_wit(&value))
    }

    async fn write(
        &mut self,
        point: wit::Point,
        value: wit::Value,
        priority: Option<u8>,
    ) -> Result<(), wit::PointError> {
        let point = convert::point_from_wit(point).map_err(convert::error_to_wit)?;
        let address = self.resolve(&point, true).map_err(convert::error_to_wit)?;
        if priority.is_some_and(|p| !(1..=16).contains(&p)) {
            return Err(wit::PointError::Failed("a priority is 1..=16".into()));
        }
        let value = convert::value_from_wit(value).map_err(convert::error_to_wit)?;
        self.shared.services.write(address, value, priority).await.map_err(convert::error_to_wit)
    }

    async fn watch(&mut self, point: wit::Point) -> Result<(), wit::PointError> {
        let point = convert::point_from_wit(point).map_err(convert::error_to_wit)?;
        let address = self.resolve(&point, false).map_err(convert::error_to_wit)?;
        self.effects.watch.push((point, address));
        Ok(())
    }

    async fn unwatch(&mut self, point: wit::Point) {
        if let Ok(point) = convert::point_from_wit(point) {
            self.effects.unwatch.push(point);
        }
    }

    async fn set_timer(&mut self, id: u32, after_ms: u64, every_ms: Option<u64>) {
        // At least a millisecond apart: a zero period would spin.
        let every = every_ms.map(|ms| Duration::from_millis(ms.max(1)));
        self.effects.timers.push(TimerChange::Set { id, after: Duration::from_millis(after_ms), every });
    }

    async fn cancel_timer(&mut self, id: u32) {
        self.effects.timers.push(TimerChange::Cancel(id));
    }

    async fn publish(&mut self, topic: String, payload: Vec<u8>, qos: u8, retain: bool) -> Result<(), String> {
        if !self.shared.grants.may_publish(&topic) {
            self.refused += 1;
            return Err(format!("publishing on `{topic}` is not granted"));
        }
        if qos > 1 {
            return Err("QoS is 0 or 1".into());
        }
        self.shared.services.publish(&topic, &payload, qos, retain)
    }

    async fn subscribe(&mut self, filter: String) -> Result<(), String> {
        if !self.shared.grants.may_subscribe(&filter) {
            self.refused += 1;
            return Err(format!("subscribing to `{filter}` is not granted"));
        }
        self.effects.subscribe.push(filter);
        Ok(())
    }

    async fn state_get(&mut self, key: String) -> Option<Vec<u8>> {
        self.shared.kv.lock().unwrap_or_else(PoisonError::into_inner).get(&key)
    }

    async fn state_set(&mut self, key: String, value: Option<Vec<u8>>) -> Result<(), String> {
        self.shared.kv.lock().unwrap_or_else(PoisonError::into_inner).set(key, value)
    }
}

struct Spec {
    name: Arc<str>,
    engine: PluginEngine,
    pre: ApplicationPre<AppState>,
    limits: Limits,
    deadline: Duration,
    settings: String,
    log: Arc<PluginLog>,
    shared: Arc<Shared>,
}

struct Live {
    store: Store<AppState>,
    plugin: bindings::Application,
}

enum Call<'a> {
    Start,
    Change(&'a AppPoint, &'a AnyValue),
    Timer(u32),
    Message(&'a str, &'a [u8]),
    Export,
    Import(&'a [u8]),
}

enum Answer {
    Start(Result<wit::AppInfo, String>),
    Done,
    Export(Vec<u8>),
    Import(Result<(), String>),
}

/// A loaded application and its instance (see the module docs).
pub struct AppPlugin {
    spec: Arc<Spec>,
    live: Option<Live>,
    restarts: Restarts,
    restart_at: Option<Instant>,
    snapshot: Option<Vec<u8>>,
    status: AppStatus,
    effects: Effects,
}

impl std::fmt::Debug for AppPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppPlugin").field("name", &self.spec.name).finish_non_exhaustive()
    }
}

impl AppPlugin {
    /// Compile (or take from the cache) and start an application: `start`
    /// runs with its settings; an error there refuses to load.
    pub async fn load<'a>(
        engine: &PluginEngine,
        source: impl Into<PluginSource<'a>>,
        config: AppConfig,
        services: Arc<dyn AppServices>,
    ) -> Result<AppPlugin, LoadError> {
        let fail = |reason: String| LoadError { plugin: config.name.clone(), reason };
        let (component, cache) = super::failure::compile(engine, source.into(), &config.limits).map_err(fail)?;
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| fail(format!("{e:#}")))?;
        bindings::Application::add_to_linker::<AppState, HasSelf<AppState>>(&mut linker, |s| s)
            .map_err(|e| fail(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(ApplicationPre::new)
            .map_err(|e| fail(format!("does not export {APP_INTERFACE} (world application): {e:#}")))?;
        let name: Arc<str> = config.name.as_str().into();
        let kv = KvState::open(config.state_file.clone(), config.state_bytes);
        let spec = Arc::new(Spec {
            log: PluginLog::new(name.clone()),
            name: name.clone(),
            engine: engine.clone(),
            pre,
            limits: config.limits,
            deadline: config.deadline,
            settings: config.settings,
            shared: Arc::new(Shared { services, points: config.points, grants: config.grants, kv: Mutex::new(kv) }),
        });
        let mut app = AppPlugin {
            spec,
            live: None,
            restarts: Restarts::new(config.restart),
            restart_at: None,
            snapshot: None,
            status: AppStatus::default(),
            effects: Effects::default(),
        };
        app.instantiate().await.map_err(fail)?;
        let info = &app.status.info;
        tracing::info!(
            app = &*name,
            "loaded application {} {} ({APP_INTERFACE}, {cache:?}): {}",
            info.name,
            info.version,
            info.summary
        );
        Ok(app)
    }

    /// The operator's name for it.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its health.
    pub fn status(&self) -> AppStatus {
        self.status.clone()
    }

    /// What its calls asked since the last time, to apply.
    pub fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// When a failed instance is due to start again, if one is.
    pub fn restart_due(&self) -> Option<Instant> {
        self.restart_at
    }

    /// A watched point's value.
    pub async fn on_change(&mut self, point: &AppPoint, value: &AnyValue) {
        self.event(Call::Change(point, value)).await
    }

    /// A timer fired.
    pub async fn on_timer(&mut self, id: u32) {
        self.event(Call::Timer(id)).await
    }

    /// A message on a subscribed topic.
    pub async fn on_message(&mut self, topic: &str, payload: &[u8]) {
        self.event(Call::Message(topic, payload)).await
    }

    /// Start a failed instance again if it is due (call when
    /// [`AppPlugin::restart_due`] passes).
    pub async fn restart_if_due(&mut self) {
        if self.live.is_none() && !self.status.disabled && self.restart_at.is_some_and(|at| Instant::now() >= at) {
            self.restart_at = None;
            if let Err(e) = self.instantiate().await {
                self.failed(e);
            }
        }
    }

    /// Keep the running instance's exported state, for the instance that
    /// follows a failure (call now and then; the driving task does every
    /// few seconds).
    pub async fn snapshot(&mut self) {
        if self.live.is_some()
            && let Ok(Answer::Export(state)) = self.call(Call::Export).await
        {
            self.snapshot = Some(state);
        }
    }

    /// Hand this application's state to `next` and put `next` in its place;
    /// an error (the successor refused the state, or failed taking it)
    /// keeps this one running.
    pub async fn swap(&mut self, mut next: AppPlugin) -> Result<AppInfo, String> {
        let exported = match self.live.is_some() {
            true => match self.call_raw(Call::Export).await {
                Ok(Answer::Export(state)) => Some(state),
                _ => None,
            },
            false => None,
        };
        if let Some(state) = exported.or_else(|| self.snapshot.clone()) {
            match next.call_raw(Call::Import(&state)).await {
                Ok(Answer::Import(Ok(()))) => next.snapshot = Some(state),
                Ok(Answer::Import(Err(reason))) => {
                    return Err(format!("the new application refused the state: {reason}"));
                }
                Ok(_) => return Err("the new application answered import-state with something else".into()),
                Err(e) => return Err(format!("the new application failed taking the state: {e}")),
            }
        }
        let info = next.status.info.clone();
        next.status = AppStatus { info: info.clone(), ..self.status.clone() };
        next.status.failing = false;
        next.status.disabled = false;
        let mut effects = std::mem::take(&mut next.effects);
        effects.reset = true;
        *self = next;
        self.effects = effects;
        tracing::info!(
            app = &*self.spec.name,
            "swapped in application {} {}: {}",
            info.name,
            info.version,
            info.summary
        );
        Ok(info)
    }

    async fn event(&mut self, call: Call<'_>) {
        if self.live.is_none() {
            self.status.missed += 1;
            return;
        }
        self.status.events += 1;
        let _ = self.call(call).await;
    }

    async fn instantiate(&mut self) -> Result<(), String> {
        let spec = self.spec.clone();
        let wasi = wasi::context(&spec.log, &HostClock::default(), &DataDir::default())
            .map_err(|e| format!("cannot build its WASI context: {e:#}"))?;
        let state = AppState {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimiter::new(spec.limits.clone()),
            log: spec.log.clone(),
            shared: spec.shared.clone(),
            effects: Effects { reset: true, ..Effects::default() },
            refused: 0,
        };
        let mut store = Store::new(spec.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        store.set_epoch_deadline(spec.engine.ticks_for(spec.deadline));
        spec.log.begin_call();
        let plugin = match spec.pre.instantiate_async(&mut store).await {
            Ok(p) => p,
            Err(e) => return Err(classify(&spec, &e, store.data().limiter.hits())),
        };
        let started_before = self.status.restarts > 0 || self.status.failures > 0 || !self.status.info.name.is_empty();
        self.live = Some(Live { store, plugin });
        let info = match self.call_raw(Call::Start).await? {
            Answer::Start(Ok(info)) => convert::info_from_wit(info),
            Answer::Start(Err(reason)) => {
                self.live = None;
                return Err(format!("refused to start: {reason}"));
            }
            _ => return Err("start answered something else".into()),
        };
        if let Some(state) = self.snapshot.clone()
            && let Answer::Import(Err(reason)) = self.call_raw(Call::Import(&state)).await?
        {
            tracing::warn!(app = &*spec.name, "application refused its saved state ({reason}); going on without it")
        }
        if started_before {
            self.status.restarts += 1;
        }
        self.status.info = info;
        self.status.failing = false;
        Ok(())
    }

    /// A call under the restart policy: a failure drops the instance.
    async fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
        let r = self.call_raw(call).await;
        match &r {
            Ok(_) => self.restarts.succeeded(),
            Err(e) => self.failed(e.clone()),
        }
        r
    }

    /// A call under the deadline and limits; its effects collected.
    async fn call_raw(&mut self, call: Call<'_>) -> Result<Answer, String> {
        let spec = self.spec.clone();
        let Some(live) = self.live.as_mut() else { return Err("no instance runs".into()) };
        live.store.set_epoch_deadline(spec.engine.ticks_for(spec.deadline));
        live.store.data_mut().limiter.reset();
        spec.log.begin_call();
        let app = live.plugin.trellis_app_app();
        let s = &mut live.store;
        let outcome = match call {
            Call::Start => app.call_start(&mut *s, &spec.settings).await.map(Answer::Start),
            Call::Change(point, value) => {
                let (p, v) = (convert::point_to_wit(point), convert::value_to_wit(value));
                app.call_on_change(&mut *s, &p, &v).await.map(|()| Answer::Done)
            }
            Call::Timer(id) => app.call_on_timer(&mut *s, id).await.map(|()| Answer::Done),
            Call::Message(topic, payload) => app.call_on_message(&mut *s, topic, payload).await.map(|()| Answer::Done),
            Call::Export => app.call_export_state(&mut *s).await.map(Answer::Export),
            Call::Import(state) => app.call_import_state(&mut *s, state).await.map(Answer::Import),
        };
        let data = live.store.data_mut();
        self.status.refused += std::mem::take(&mut data.refused);
        let effects = std::mem::take(&mut data.effects);
        match outcome {
            Ok(answer) => {
                if !effects.is_empty() {
                    self.effects.append(effects);
                }
                Ok(answer)
            }
            Err(e) => {
                let hits = live.store.data().limiter.hits();
                self.live = None;
                Err(classify(&spec, &e, hits))
            }
        }
    }

    /// Apply the restart policy after a failure.
    fn failed(&mut self, err: String) {
        self.live = None;
        self.status.failures += 1;
        self.status.failing = true;
        self.status.last_failure = Some(err.clone());
        let name = self.spec.name.clone();
        match self.restarts.failed(Instant::now()) {
            Restart::RestartNow => {
                tracing::error!(app = &*name, "application failed: {err}; restarting");
                self.restart_at = Some(Instant::now());
            }
            Restart::RestartAt(at) => {
                let ms = at.saturating_duration_since(Instant::now()).as_millis();
                tracing::error!(app = &*name, "application failed: {err}; restarting in {ms} ms");
                self.restart_at = Some(at);
            }
            Restart::Disable => {
                tracing::error!(
                    app = &*name,
                    "application failed: {err}; DISABLED after {} consecutive failures (swap in a working one to recover)",
                    self.restarts.consecutive()
                );
                self.status.disabled = true;
                self.restart_at = None;
            }
        }
    }
}

/// What kind of failure `e` was, in one line.
fn classify(spec: &Spec, e: &wasmtime::Error, hits: LimitHits) -> String {
    super::failure::describe(&spec.name, spec.limits.memory_bytes, spec.deadline, &spec.log, e, hits)
}
