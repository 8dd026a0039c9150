//! The named scenarios of `stress-test`, one module each, and what they
//! share: the servers' environment, CPU-time windows and the fields every
//! JSON line carries.
//!
//! - [`clients`]: 1 → 100 clients × K ReadProperty requests in flight (the
//!   raw generator, [`crate::load`]).
//! - [`objects`]: the same reads spread over 100 → 10,000 objects; latency
//!   and resident memory per object.
//! - [`segmentation`]: ReadPropertyMultiple of 50 and 250 objects, answers
//!   in segments ([`crate::workload`]).
//! - [`cov`]: 1,024 COV subscriptions over 16 subscribers and a writer;
//!   every expected notification counted.
//! - [`mixed`]: weighted reads, writes, RPM, COV subscriptions and Who-Is.
//! - [`cost`]: allocations (and, under callgrind, instructions) per served
//!   ReadProperty, the gateway in this process.
//! - [`idle_memory`]: resident and proportional memory per extra idle
//!   object-model instance of the demo plugin, pooling on and off.
//! - [`amplification`]: octets out ÷ octets in for a requester that
//!   acknowledges segmented answers blind (reflection attacks).
//! - [`sc`]: ReadProperty over BACnet/SC through each side's hub, against
//!   rusty-bacnet's hub and SC server (and our B/IP beside it); a hub's
//!   handshakes per second, memory per idle connection and broadcast fan-out.
//! - [`opcua`]: OPC UA Reads against Trellis's server and the other stacks
//!   (open62541, async-opcua, o6, asyncua) with one native client; COV →
//!   DataChange latency; memory per session and monitored item.
//! - [`swap`]: hot swaps of Trellis's plugin under load (Trellis only: no
//!   peer can swap its object model).
//! - [`faults`]: `kill -9` during acknowledged writes, creations, file
//!   writes and hot swaps; what the restarted gateway serves (Trellis only).
//! - [`flaps`]: the MQTT broker restarted every few seconds while values
//!   change; every acknowledged value must reach a durable subscriber.
//! - [`sc_failover`]: the BACnet/SC primary hub killed under load and
//!   started again; reads lost and the time of each switch.
//! - [`clock_jumps`]: the gateway's wall clock stepped forward and back
//!   (libfaketime): schedules, COV lifetimes, reads.
//! - [`disk_full`]: the state's disk fills up and frees again under writes.
//! - [`soak`]: an hour (or more) of paced mixed traffic with MQTT and an
//!   OPC UA subscription on: RSS and p99 per window, the northbound truth.
//!
//! A scenario never leaves a server running: servers are [`Server`] drop
//! guards, and the binary's signal handler reaps the rest.

pub mod alarms;
pub mod amplification;
pub mod clients;
pub mod clock_jumps;
pub mod console;
pub mod cost;
pub mod cov;
pub mod devices;
pub mod disk_full;
pub mod faults;
pub mod flaps;
pub mod idle_memory;
pub mod mixed;
pub mod mqtt;
pub mod objects;
pub mod opcua;
pub mod python;
pub mod router;
pub mod sc;
pub mod sc_failover;
pub mod segmentation;
pub mod soak;
pub mod swap;

use crate::json_line::JsonLine;
use crate::load::Mark;
use crate::procfs;
use crate::request::ReadPropertyTemplate;
use crate::stats::{Latencies, Outcomes, Summary};
use crate::target::{Programs, Server, Setup, TargetKind};
use anyhow::Context;
use bacnet::enums::PropertyIdentifier;
use bacnet::{ObjectIdentifier, ObjectType};
use serde_json::json;
use std::time::Duration;

/// Where the servers run and how the processes are pinned.
#[derive(Debug, Clone)]
pub struct Env {
    /// The programs.
    pub programs: Programs,
    /// `taskset -c` list for the servers, if pinned.
    pub server_cpu: Option<String>,
    /// The load generator's CPU, if pinned.
    pub client_cpu: Option<String>,
    /// Clock ticks per second (for `/proc` CPU times).
    pub ticks: u64,
}

/// Step timing and sizes shared by the scenarios.
#[derive(Debug, Clone)]
pub struct StepOptions {
    /// Client counts, one step each.
    pub clients: Vec<usize>,
    /// Requests in flight per client, one step each.
    pub in_flight: Vec<u8>,
    /// The measured window of a step.
    pub measure: Duration,
    /// Warm-up before it.
    pub warmup: Duration,
    /// A request unanswered this long is a timeout.
    pub timeout: Duration,
    /// Repeats of the whole sequence.
    pub rounds: u32,
    /// Raw generator threads.
    pub client_threads: usize,
}

/// The same request to the first device behind Trellis's router (the
/// probe of a [`Setup::routed`](crate::target::Setup::routed) gateway).
pub fn routed_request() -> ReadPropertyTemplate {
    let mac = crate::target::ROUTED_FIRST.to_be_bytes();
    ReadPropertyTemplate::routed(
        ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).expect("a valid identifier"),
        PropertyIdentifier::PRESENT_VALUE,
        crate::target::ROUTED_NETWORK,
        &mac[1..],
    )
    .expect("a small request encodes")
}

/// The readiness probe and the `clients` request: ReadProperty of
/// analog-input,1 present-value.
pub fn probe_request() -> ReadPropertyTemplate {
    let object = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).expect("analog-input,1 is a valid identifier");
    ReadPropertyTemplate::new(object, PropertyIdentifier::PRESENT_VALUE).expect("a ReadProperty encodes")
}

impl Env {
    /// Start `kind` serving `setup`, and say so on stderr.
    pub fn start(&self, kind: TargetKind, setup: &Setup) -> anyhow::Result<Server> {
        let probe = if setup.routed > 0 && kind == TargetKind::Trellis { routed_request() } else { probe_request() };
        let s = Server::start(kind, &self.programs, setup, self.server_cpu.as_deref(), &probe, READY_WITHIN)
            .with_context(|| format!("start {}", kind.name()))?;
        eprintln!(
            "stress-test: {} on {} (pid {}, answering after {} ms): analog-input,1 present-value = {}",
            kind.name(),
            s.addr,
            s.pid,
            s.ready.as_millis(),
            s.probe
        );
        Ok(s)
    }

    /// The `pin` field of a JSON line.
    pub fn pin_label(&self) -> serde_json::Value {
        match (&self.server_cpu, &self.client_cpu) {
            (Some(s), Some(c)) => json!(format!("server:{s} client:{c}")),
            _ => json!(null),
        }
    }
}

/// How long a server may take to answer its first request (bacpypes3 with
/// 10,000 objects takes a while).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// CPU time of the server and of this process over the measured window.
#[derive(Debug, Clone, Copy)]
pub struct CpuWindow {
    pid: u32,
    ticks: u64,
    at: [(Option<Duration>, Option<Duration>); 2],
}

impl CpuWindow {
    /// For the server process `pid`.
    pub fn new(pid: u32, ticks: u64) -> Self {
        CpuWindow { pid, ticks, at: [(None, None); 2] }
    }

    /// Record the CPU times at a window mark.
    pub fn mark(&mut self, m: Mark) {
        let i = (m == Mark::WindowEnd) as usize;
        self.at[i] = (procfs::cpu_time(self.pid, self.ticks), procfs::cpu_time(std::process::id(), self.ticks));
    }

    /// The server's CPU seconds in the window, unrounded.
    pub fn server_seconds(&self) -> Option<f64> {
        self.at[0].0.zip(self.at[1].0).map(|(a, b)| b.saturating_sub(a).as_secs_f64())
    }

    /// Cores used on average over `secs` by (the server, this process).
    pub fn cores(&self, secs: f64) -> (Option<f64>, Option<f64>) {
        let cores = |a: Option<Duration>, b: Option<Duration>| {
            a.zip(b).map(|(a, b)| round_to(b.saturating_sub(a).as_secs_f64() / secs, 100.0))
        };
        (cores(self.at[0].0, self.at[1].0), cores(self.at[0].1, self.at[1].1))
    }
}

/// Round `v` to `1 / per_unit`.
pub fn round_to(v: f64, per_unit: f64) -> f64 {
    (v * per_unit).round() / per_unit
}

/// Microseconds of a percentile, to 0.1 µs.
pub fn micros(s: Option<&Summary>, f: fn(&Summary) -> Duration) -> serde_json::Value {
    json!(s.map(|s| round_to(f(s).as_secs_f64() * 1e6, 10.0)))
}

/// The outcome fields every step line carries: requests, throughput,
/// latency percentiles, failures classified.
pub fn outcome_fields(line: JsonLine, o: &Outcomes, latencies: &mut Latencies, secs: f64) -> JsonLine {
    let s = latencies.summary();
    let failures = JsonLine::new()
        .put("admission", json!(o.admission))
        .put("timeout", json!(o.timeout))
        .put("other", json!(o.other()))
        .finish();
    let other_detail = JsonLine::new()
        .put("abort", json!(o.abort))
        .put("reject", json!(o.reject))
        .put("error", json!(o.error))
        .put("unexpected", json!(o.unexpected))
        .finish();
    line.put("secs", json!(secs))
        .put("requests", json!(o.requests()))
        .put("throughput", json!(round_to(o.ok as f64 / secs, 10.0)))
        .put("p50_us", micros(s.as_ref(), |s| s.p50))
        .put("p99_us", micros(s.as_ref(), |s| s.p99))
        .put("max_us", micros(s.as_ref(), |s| s.max))
        .put("mean_us", micros(s.as_ref(), |s| s.mean))
        .raw("failures", &failures)
        .raw("other_detail", &other_detail)
        .put("late", json!(o.late))
        .put("io_errors", json!(o.io_errors))
}

/// The server fields every step line carries: memory, CPU, pinning.
pub fn server_fields(line: JsonLine, env: &Env, server: &Server, cpu: &CpuWindow, secs: f64) -> JsonLine {
    let (server_cpu, client_cpu) = cpu.cores(secs);
    line.put("peak_rss_kib", json!(server.peak_rss_kib()))
        .put("rss_kib", json!(server.rss_kib()))
        .put("rss_of", json!("server"))
        .put("server_cpu", json!(server_cpu))
        .put("client_cpu", json!(client_cpu))
        .put("pin", env.pin_label())
}

/// One progress line on stderr.
pub fn progress(scenario: &str, what: &str, o: &Outcomes, latencies: &mut Latencies, secs: f64) {
    let s = latencies.summary();
    let us = |d: Option<Duration>| d.map(|d| format!("{:.1}", d.as_secs_f64() * 1e6)).unwrap_or_else(|| "-".into());
    eprintln!(
        "stress-test: {scenario} {what}: {:>9.0}/s p50 {:>8} µs p99 {:>8} µs, failures a{}/t{}/o{}",
        o.ok as f64 / secs,
        us(s.map(|s| s.p50)),
        us(s.map(|s| s.p99)),
        o.admission,
        o.timeout,
        o.other()
    );
}

/// Fail the scenario if the server died during a step.
pub fn check_alive(server: &Server) -> anyhow::Result<()> {
    match server.exited() {
        Some(status) => anyhow::bail!("{} exited during the step: {status}", server.kind.name()),
        None => Ok(()),
    }
}

/// Run one [`crate::workload`] step against one server; its JSON line:
/// `scenario`, `target`, `clients`, `in_flight`, `extra`'s fields, the
/// outcome fields over every request, `kinds` (the same per kind of
/// request), then the server fields.
pub fn measure_workload(
    scenario: &str,
    env: &Env,
    round: u32,
    server: &Server,
    cfg: &crate::workload::WorkloadConfig,
    next_op: impl Fn(usize, u64) -> crate::workload::Op + 'static,
    extra: JsonLine,
) -> anyhow::Result<String> {
    let mut cpu = CpuWindow::new(server.pid, env.ticks);
    let mut r = crate::workload::run(cfg, next_op, |m| cpu.mark(m))?;
    let secs = cfg.measure.as_secs_f64();
    let mut kinds = JsonLine::new();
    for (name, k) in r.kinds.iter_mut() {
        let per_kind = outcome_fields(JsonLine::new(), &k.outcomes, &mut k.latencies, secs).finish();
        kinds = kinds.raw(name, &per_kind);
    }
    let mut total = r.total();
    let line = JsonLine::new()
        .put("scenario", json!(scenario))
        .put("target", json!(server.label))
        .put("clients", json!(cfg.clients))
        .put("in_flight", json!(cfg.in_flight))
        .merge(extra);
    let line = outcome_fields(line, &total.outcomes, &mut total.latencies, secs)
        .raw("kinds", &kinds.finish())
        .put("i_ams_heard", json!(r.i_ams));
    let line = server_fields(line, env, server, &cpu, secs).put("round", json!(round)).finish();
    let what = format!("{:>9} clients {:>3} × {:>2}", server.label, cfg.clients, cfg.in_flight);
    progress(scenario, &what, &total.outcomes, &mut total.latencies, secs);
    Ok(line)
}

/// The targets a [`crate::workload`] scenario can measure: the BACnet
/// servers (the echo answers no BACnet service; its floor is in `clients`).
pub fn bacnet_targets(targets: &[TargetKind]) -> Vec<TargetKind> {
    let t: Vec<_> = targets.iter().copied().filter(|&k| k != TargetKind::Echo).collect();
    if t.len() < targets.len() {
        eprintln!("stress-test: the echo target answers no BACnet service: left out (its floor is in `clients`)");
    }
    t
}
