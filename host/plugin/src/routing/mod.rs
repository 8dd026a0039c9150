//! Routing-policy plugins: a component exporting `trellis:routing/policy`
//! (`wit/routing`) that the gateway's router asks about every NPDU it is
//! about to send on towards another network.
//!
//! [`PolicyPlugin`] implements the core's [`RoutingPolicy`]: the router,
//! which runs to completion on one thread, calls [`RoutingPolicy::decide`]
//! synchronously. The guest call is wasmtime's async call polled once: a
//! policy never waits on anything (it has no imports that wait), so it is
//! ready at the first poll; a guest that asks WASI to wait (a sleep) is not
//! ready, and that call fails like a trap rather than stall the router.
//!
//! Same sandbox as object models — the shared engine and its epoch
//! deadline, the memory limiter, a WASI context with no network and no
//! files, the plugin's log — and the same failure handling: a call that
//! traps, overruns its deadline or runs out of memory drops the instance,
//! which restarts with back-off (`restart`) and is disabled after repeated
//! failures. Until an instance runs again every routed NPDU gets the
//! configured [`FailMode`]: closed (dropped, the default) or open
//! (forwarded), and the log says so loudly — at every failure, and every
//! [`FAILING_REPORT`] while it lasts.
//!
//! State: the policy's `export-state` is kept as a snapshot (at most
//! [`PolicyConfig::snapshot_interval`] old, taken at ticks) and imported
//! into every fresh instance, so a restart does not reset a budget; a hot
//! swap ([`PolicyPlugin::swap`]) hands the running instance's current state
//! to its successor, between two routed NPDUs.
//!
//! Must never: block the router's thread beyond one call's deadline, panic
//! on anything a plugin answers, or forward an NPDU because a closed policy
//! failed.

mod bindings;
mod convert;

use super::engine::PluginEngine;
use super::limits::{LimitHits, Limits, StoreLimiter};
use super::log::PluginLog;
use super::restart::{RestartPolicy, Restarts, Verdict as Restart};
use super::wasi::{self, DataDir};
use super::{LoadError, PluginSource};
use bacnet::router::{RoutedNpdu, RoutingPolicy, Verdict};
use bindings::RoutingPolicyPre;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use trellis_model::HostClock;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The interface a policy component exports.
pub const ROUTING_INTERFACE: &str = "trellis:routing@0.1.0";

/// How often a failing policy's state is logged again while it lasts.
pub const FAILING_REPORT: Duration = Duration::from_secs(10);

/// What a routed NPDU gets while the policy cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailMode {
    /// Dropped: nothing crosses the router unchecked (the default).
    #[default]
    Closed,
    /// Forwarded as if there were no policy.
    Open,
}

impl std::fmt::Display for FailMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailMode::Closed => "closed",
            FailMode::Open => "open",
        })
    }
}

/// How a policy plugin runs.
#[derive(Debug, Clone)]
pub struct PolicyConfig {
    /// Name in logs and errors (the operator's).
    pub name: String,
    /// The settings handed to `configure` (TOML text).
    pub settings: String,
    /// What routed NPDUs get while the policy cannot answer.
    pub on_failure: FailMode,
    /// Memory, table and instance limits.
    pub limits: Limits,
    /// Wall-clock limit of one call (default 10 ms: the router waits for it).
    pub deadline: Duration,
    /// Restarts and back-off.
    pub restart: RestartPolicy,
    /// Longest time between state snapshots (default 10 s).
    pub snapshot_interval: Duration,
}

impl PolicyConfig {
    /// Defaults for a policy called `name` with `settings`.
    pub fn new(name: impl Into<String>, settings: impl Into<String>) -> Self {
        PolicyConfig {
            name: name.into(),
            settings: settings.into(),
            on_failure: FailMode::Closed,
            limits: Limits { memory_bytes: 16 << 20, ..Limits::default() },
            deadline: Duration::from_millis(10),
            restart: RestartPolicy::default(),
            snapshot_interval: Duration::from_secs(10),
        }
    }
}

/// What a policy said it is when configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What this configuration does.
    pub summary: String,
    /// Its drop reasons, by index.
    pub drop_reasons: Vec<String>,
}

/// A policy's health and what it decided, for operators.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyStatus {
    /// What the running instance said it is.
    pub info: PolicyInfo,
    /// What routed NPDUs get while it fails.
    pub on_failure: FailMode,
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
    /// Verdicts given.
    pub decided: u64,
    /// Drops per reason: the policy's reasons, by name.
    pub drops: Vec<(String, u64)>,
    /// Drops under a reason the policy never named.
    pub drops_unnamed: u64,
    /// Rejects.
    pub rejected: u64,
    /// Forwarded at another priority.
    pub reprioritized: u64,
    /// NPDUs dropped because the policy failed closed.
    pub failed_closed: u64,
    /// NPDUs forwarded unchecked because the policy failed open.
    pub failed_open: u64,
}

/// What one instance's store holds.
struct PolicyState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: StoreLimiter,
    log: Arc<PluginLog>,
}

impl WasiView for PolicyState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl bindings::trellis::routing::types::Host for PolicyState {}

impl bindings::trellis::routing::host::Host for PolicyState {
    fn log(&mut self, level: bindings::trellis::routing::host::LogLevel, message: String) {
        self.log.line(convert::level_from_wit(level), "log", &message);
    }
}

/// What starts (and restarts) instances.
struct Spec {
    name: Arc<str>,
    engine: PluginEngine,
    pre: RoutingPolicyPre<PolicyState>,
    limits: Limits,
    deadline: Duration,
    settings: String,
    log: Arc<PluginLog>,
}

struct Live {
    store: Store<PolicyState>,
    plugin: bindings::RoutingPolicy,
}

/// One call, with its arguments.
enum Call<'a> {
    Configure,
    Decide(u64, &'a bindings::trellis::routing::types::RoutedNpdu),
    Tick(u64),
    Export,
    Import(&'a [u8]),
}

/// What it answered.
enum Answer {
    Configure(Result<bindings::trellis::routing::types::PolicyInfo, String>),
    Decide(bindings::trellis::routing::types::Verdict),
    Tick,
    Export(Vec<u8>),
    Import(Result<(), String>),
}

/// A running policy: its instance, restarts, snapshot and counters.
struct Runner {
    spec: Arc<Spec>,
    on_failure: FailMode,
    snapshot_interval: Duration,
    live: Option<Live>,
    restarts: Restarts,
    restart_at: Option<Instant>,
    snapshot: Option<Vec<u8>>,
    last_snapshot: Instant,
    last_report: Option<Instant>,
    /// When a failure was last logged, and the failures since not logged.
    last_failure_log: Option<Instant>,
    unlogged_failures: u64,
    status: PolicyStatus,
    epoch: Instant,
}

/// A routing-policy plugin (cheap to clone: the router holds one, the
/// operator's tools another).
#[derive(Clone)]
pub struct PolicyPlugin {
    name: Arc<str>,
    runner: Arc<Mutex<Runner>>,
}

impl std::fmt::Debug for PolicyPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyPlugin").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Poll a guest call once: a policy never waits, so a call that is not
/// ready at once waited on WASI, and is given up.
fn poll_once<F: Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

impl PolicyPlugin {
    /// Compile (or fetch from the cache), link, instantiate and configure a
    /// policy. Blocking (compiling takes seconds on a cache miss): call it
    /// before the runtime starts or off its workers. A policy that refuses
    /// its settings does not load; the error is its own message.
    pub fn load<'a>(
        engine: &PluginEngine,
        source: impl Into<PluginSource<'a>>,
        config: PolicyConfig,
    ) -> Result<PolicyPlugin, LoadError> {
        let fail = |reason: String| LoadError { plugin: config.name.clone(), reason };
        let (component, cache) = super::failure::compile(engine, source.into(), &config.limits).map_err(fail)?;
        let mut linker = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| fail(format!("{e:#}")))?;
        bindings::RoutingPolicy::add_to_linker::<PolicyState, HasSelf<PolicyState>>(&mut linker, |s| s)
            .map_err(|e| fail(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(RoutingPolicyPre::new)
            .map_err(|e| fail(format!("does not export {ROUTING_INTERFACE} (world routing-policy): {e:#}")))?;
        let name: Arc<str> = config.name.as_str().into();
        let spec = Arc::new(Spec {
            log: PluginLog::new(name.clone()),
            name: name.clone(),
            engine: engine.clone(),
            pre,
            limits: config.limits,
            deadline: config.deadline,
            settings: config.settings,
        });
        let mut runner = Runner {
            spec,
            on_failure: config.on_failure,
            restarts: Restarts::new(config.restart),
            snapshot_interval: config.snapshot_interval,
            live: None,
            restart_at: None,
            snapshot: None,
            last_snapshot: Instant::now(),
            last_report: None,
            last_failure_log: None,
            unlogged_failures: 0,
            status: PolicyStatus { on_failure: config.on_failure, ..PolicyStatus::default() },
            epoch: Instant::now(),
        };
        runner.instantiate().map_err(fail)?;
        let info = &runner.status.info;
        tracing::info!(
            policy = &*name,
            "loaded routing policy {} {} ({ROUTING_INTERFACE}, {cache:?}): {}; fails {}",
            info.name,
            info.version,
            info.summary,
            config.on_failure
        );
        Ok(PolicyPlugin { name, runner: Arc::new(Mutex::new(runner)) })
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Health, the policy's own description and what it decided.
    pub fn status(&self) -> PolicyStatus {
        self.lock().status.clone()
    }

    /// Hot swap: hand this policy's state to `next` (loaded beside it: a
    /// new version, or the same with other settings) and route through
    /// `next` from the next NPDU on. The state is the running instance's
    /// current one, or its last snapshot when none runs (a broken policy is
    /// what a swap is most needed for). If `next` refuses the state, nothing
    /// changes. The counters carry over; `next`'s own handle is spent.
    pub fn swap(&self, next: PolicyPlugin) -> Result<PolicyInfo, String> {
        let mut incoming = Arc::try_unwrap(next.runner)
            .map_err(|_| "the new policy is in use elsewhere".to_string())?
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut current = self.lock();
        // Only a running instance is asked (a failed export here is not
        // counted against it: the swap replaces it anyway).
        let exported = match current.live.is_some() {
            true => match current.call_raw(Call::Export) {
                Ok(Answer::Export(state)) => Some(state),
                _ => None,
            },
            false => None,
        };
        let state = exported.or_else(|| current.snapshot.clone());
        if let Some(state) = &state {
            match incoming.call(Call::Import(state)) {
                Ok(Answer::Import(Ok(()))) => incoming.keep_snapshot(state.clone()),
                Ok(Answer::Import(Err(reason))) => return Err(format!("the new policy refused the state: {reason}")),
                Ok(_) => unreachable!("import answers import"),
                Err(e) => return Err(format!("the new policy failed taking the state: {e}")),
            }
        }
        let old = &current.status;
        let info = incoming.status.info.clone();
        incoming.status = PolicyStatus {
            info: info.clone(),
            on_failure: incoming.on_failure,
            decided: old.decided,
            restarts: old.restarts,
            failures: old.failures,
            failed_closed: old.failed_closed,
            failed_open: old.failed_open,
            rejected: old.rejected,
            reprioritized: old.reprioritized,
            drops_unnamed: old.drops_unnamed,
            // Reasons are the new policy's; counts carry over by name.
            drops: info
                .drop_reasons
                .iter()
                .map(|r| (r.clone(), old.drops.iter().find(|(n, _)| n == r).map_or(0, |(_, c)| *c)))
                .collect(),
            ..incoming.status.clone()
        };
        incoming.epoch = current.epoch;
        *current = incoming;
        tracing::info!(
            policy = &*self.name,
            "swapped in routing policy {} {}: {}",
            info.name,
            info.version,
            info.summary
        );
        Ok(info)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Runner> {
        self.runner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RoutingPolicy for PolicyPlugin {
    fn decide(&mut self, _now: Duration, npdu: &RoutedNpdu<'_>) -> Verdict {
        self.lock().decide(npdu)
    }

    fn tick(&mut self, _now: Duration) {
        self.lock().tick()
    }
}

impl Runner {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn decide(&mut self, npdu: &RoutedNpdu<'_>) -> Verdict {
        if !self.ready() {
            return self.fail_verdict();
        }
        let record = convert::routed_to_wit(npdu);
        let now = self.now_ms();
        match self.call(Call::Decide(now, &record)) {
            Ok(Answer::Decide(v)) => {
                let v = convert::verdict_from_wit(v);
                self.count(v);
                v
            }
            Ok(_) => unreachable!("decide answers decide"),
            Err(_) => self.fail_verdict(),
        }
    }

    fn count(&mut self, v: Verdict) {
        let s = &mut self.status;
        s.decided += 1;
        match v {
            Verdict::Forward => {}
            Verdict::Drop(reason) => match s.drops.get_mut(reason as usize) {
                Some((_, n)) => *n += 1,
                None => s.drops_unnamed += 1,
            },
            Verdict::Reject(_) => s.rejected += 1,
            Verdict::SetPriority(_) => s.reprioritized += 1,
        }
    }

    /// What an NPDU gets while the policy cannot answer.
    fn fail_verdict(&mut self) -> Verdict {
        let (verdict, what) = match self.on_failure {
            FailMode::Closed => {
                self.status.failed_closed += 1;
                (Verdict::Drop(u16::MAX), "dropping")
            }
            FailMode::Open => {
                self.status.failed_open += 1;
                (Verdict::Forward, "FORWARDING UNCHECKED")
            }
        };
        if self.last_report.is_none_or(|at| at.elapsed() >= FAILING_REPORT) {
            self.last_report = Some(Instant::now());
            tracing::error!(
                policy = &*self.spec.name,
                "routing policy {}: fails {}, {what} every routed NPDU ({} dropped, {} forwarded unchecked so far); \
                 last failure: {}",
                if self.status.disabled { "disabled" } else { "not running" },
                self.on_failure,
                self.status.failed_closed,
                self.status.failed_open,
                self.status.last_failure.as_deref().unwrap_or("none"),
            );
        }
        verdict
    }

    fn tick(&mut self) {
        if !self.ready() {
            return;
        }
        let now = self.now_ms();
        if self.call(Call::Tick(now)).is_err() {
            return;
        }
        if self.last_snapshot.elapsed() >= self.snapshot_interval
            && let Ok(Answer::Export(state)) = self.call(Call::Export)
        {
            self.keep_snapshot(state);
        }
    }

    fn keep_snapshot(&mut self, state: Vec<u8>) {
        self.snapshot = Some(state);
        self.last_snapshot = Instant::now();
    }

    /// An instance runs (restarted here when its back-off is over).
    fn ready(&mut self) -> bool {
        if self.live.is_some() {
            return true;
        }
        if self.status.disabled || self.restart_at.is_none_or(|at| Instant::now() < at) {
            return false;
        }
        self.restart_at = None;
        if let Err(e) = self.instantiate() {
            self.failed(e);
        }
        self.live.is_some()
    }

    /// Start an instance: configure it, import the snapshot.
    fn instantiate(&mut self) -> Result<(), String> {
        let spec = self.spec.clone();
        let wasi = wasi::context(&spec.log, &HostClock::default(), &DataDir::default())
            .map_err(|e| format!("cannot build its WASI context: {e:#}"))?;
        let state = PolicyState {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimiter::new(spec.limits.clone()),
            log: spec.log.clone(),
        };
        let mut store = Store::new(spec.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        store.set_epoch_deadline(spec.engine.ticks_for(spec.deadline));
        spec.log.begin_call();
        let plugin = match poll_once(spec.pre.instantiate_async(&mut store)) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Err(classify(&spec, &e, store.data().limiter.hits())),
            None => return Err("its instantiation waited on the host".into()),
        };
        let started_before = self.live.is_some() || self.status.restarts > 0 || self.status.failures > 0;
        self.live = Some(Live { store, plugin });
        let info = match self.call_raw(Call::Configure)? {
            Answer::Configure(Ok(info)) => convert::info_from_wit(info),
            Answer::Configure(Err(reason)) => {
                self.live = None;
                return Err(format!("refused its settings: {reason}"));
            }
            _ => unreachable!("configure answers configure"),
        };
        if let Some(state) = self.snapshot.clone() {
            match self.call_raw(Call::Import(&state)) {
                Ok(Answer::Import(Err(reason))) => {
                    tracing::warn!(policy = &*spec.name, "policy refused its saved state ({reason}); starting fresh")
                }
                Ok(_) => {}
                Err(e) => {
                    // A state that kills the instance would kill every
                    // restart: the next one starts without it.
                    self.snapshot = None;
                    tracing::warn!(
                        policy = &*spec.name,
                        "policy failed taking its saved state; the next instance starts without it"
                    );
                    return Err(e);
                }
            }
        }
        if started_before {
            self.status.restarts += 1;
        }
        let old = std::mem::take(&mut self.status.drops);
        self.status.drops = info
            .drop_reasons
            .iter()
            .map(|r| (r.clone(), old.iter().find(|(n, _)| n == r).map_or(0, |(_, c)| *c)))
            .collect();
        self.status.info = info;
        self.status.failing = false;
        Ok(())
    }

    /// A call under the restart policy: a failure drops the instance.
    fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
        let r = self.call_raw(call);
        match &r {
            Ok(_) => self.restarts.succeeded(),
            Err(e) => self.failed(e.clone()),
        }
        r
    }

    /// A call under the deadline and limits; nothing else.
    fn call_raw(&mut self, call: Call<'_>) -> Result<Answer, String> {
        let spec = self.spec.clone();
        let Some(live) = self.live.as_mut() else { return Err("no instance runs".into()) };
        live.store.set_epoch_deadline(spec.engine.ticks_for(spec.deadline));
        live.store.data_mut().limiter.reset();
        spec.log.begin_call();
        let p = live.plugin.trellis_routing_policy();
        let s = &mut live.store;
        let outcome = match call {
            Call::Configure => poll_once(p.call_configure(&mut *s, &spec.settings)).map(|r| r.map(Answer::Configure)),
            Call::Decide(now, npdu) => poll_once(p.call_decide(&mut *s, now, npdu)).map(|r| r.map(Answer::Decide)),
            Call::Tick(now) => poll_once(p.call_tick(&mut *s, now)).map(|r| r.map(|()| Answer::Tick)),
            Call::Export => poll_once(p.call_export_state(&mut *s)).map(|r| r.map(Answer::Export)),
            Call::Import(state) => poll_once(p.call_import_state(&mut *s, state)).map(|r| r.map(Answer::Import)),
        };
        match outcome {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(e)) => {
                let hits = live.store.data().limiter.hits();
                self.live = None;
                Err(classify(&spec, &e, hits))
            }
            None => {
                // Half a call is in the store: it is not used again.
                self.live = None;
                Err(format!("plugin {} waited on the host (a policy must answer at once)", spec.name))
            }
        }
    }

    /// Apply the restart policy after a failure. Logged at error level, at
    /// most once per [`FAILING_REPORT`] (with the count since), and always
    /// when the policy is disabled: a stream of NPDUs that make it trap
    /// does not become a stream of log lines.
    fn failed(&mut self, err: String) {
        self.live = None;
        self.status.failures += 1;
        self.status.failing = true;
        self.status.last_failure = Some(err.clone());
        let name = self.spec.name.clone();
        let mode = self.on_failure;
        let verdict = self.restarts.failed(Instant::now());
        let log_now = matches!(verdict, Restart::Disable)
            || self.last_failure_log.is_none_or(|at| at.elapsed() >= FAILING_REPORT);
        let since = if log_now {
            self.last_failure_log = Some(Instant::now());
            std::mem::take(&mut self.unlogged_failures)
        } else {
            self.unlogged_failures += 1;
            0
        };
        let also = if since > 0 { format!(" ({since} more failures since the last report)") } else { String::new() };
        match verdict {
            Restart::RestartNow => {
                if log_now {
                    tracing::error!(
                        policy = &*name,
                        "routing policy failed: {err}{also}; restarting (meanwhile fails {mode})"
                    );
                }
                if let Err(e) = self.instantiate() {
                    self.failed(e);
                }
            }
            Restart::RestartAt(at) => {
                if log_now {
                    let ms = at.saturating_duration_since(Instant::now()).as_millis();
                    tracing::error!(
                        policy = &*name,
                        "routing policy failed: {err}{also}; restarting in {ms} ms, failing {mode} until then"
                    );
                }
                self.restart_at = Some(at);
            }
            Restart::Disable => {
                tracing::error!(
                    policy = &*name,
                    "routing policy failed: {err}{also}; DISABLED after {} consecutive failures: the router now \
                     fails {mode} for good (swap in a working policy to recover)",
                    self.restarts.consecutive()
                );
                self.status.disabled = true;
            }
        }
    }
}

/// What kind of failure `e` was, in one line.
fn classify(spec: &Spec, e: &wasmtime::Error, hits: LimitHits) -> String {
    super::failure::describe(&spec.name, spec.limits.memory_bytes, spec.deadline, &spec.log, e, hits)
}
