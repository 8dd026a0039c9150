//! `swap`: hot swaps of Trellis's plugin under load — the operator's promise
//! that device logic can be replaced without dropping a request.
//!
//! Trellis serves the demo building with unsigned plugin files allowed (a
//! generated configuration); the demo-building component is written to a
//! file beside it. Each round is two steps with the same ReadProperty load
//! (the raw generator): `steady`, with no swap, then `swapping`, during
//! whose window `trellis plugin swap` (the admin socket, from this process)
//! replaces the plugin with that file `--swaps` times, evenly spaced; a swap
//! that takes longer than its share starts the next at once. The line
//! reports failed requests, latency percentiles (to compare with the steady
//! step's), every swap's load time and pause, and failed swaps.
//!
//! Trellis only: no peer can replace its object model while serving.

use super::{Env, StepOptions, check_alive, probe_request, round_to};
use crate::json_line::JsonLine;
use crate::load::{LoadConfig, Mark};
use crate::stats::Latencies;
use crate::target::{Setup, TargetKind};
use anyhow::Context;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis::admin::{Request, Response};

/// What the swapper did during one window.
#[derive(Debug, Default)]
struct Swaps {
    load: Latencies,
    pause: Latencies,
    failures: Vec<String>,
    /// Swaps that finished inside the measured window.
    in_window: u32,
}

/// Run the scenario: two JSON lines (steady, swapping) per round, client
/// count and in-flight value.
pub fn run(env: &Env, swaps: u32, o: &StepOptions) -> anyhow::Result<()> {
    anyhow::ensure!(swaps >= 1, "--swaps: at least 1");
    let server = env.start(TargetKind::Trellis, &Setup { swappable: true, ..Setup::default() })?;
    let socket = server.admin_socket.clone().context("trellis has an admin socket")?;
    let file = env.programs.work_dir.join("demo-building-swap.wasm");
    std::fs::write(&file, trellis::plugin::builtin::DEMO_BUILDING)
        .with_context(|| format!("write {}", file.display()))?;
    let device = device_instance(&socket)?;
    let requests: Arc<[_]> = Arc::new([probe_request()]);
    for round in 1..=o.rounds {
        for &in_flight in &o.in_flight {
            for &clients in &o.clients {
                let cfg = LoadConfig {
                    target: server.addr.into(),
                    also: Vec::new(),
                    clients,
                    in_flight: in_flight as usize,
                    warmup: o.warmup,
                    measure: o.measure,
                    timeout: o.timeout,
                    threads: o.client_threads,
                    echo: false,
                    requests: requests.clone(),
                };
                for swapping in [false, true] {
                    let line = step(env, &server, &cfg, round, swapping.then_some((swaps, &socket, device, &file)))?;
                    println!("{line}");
                    check_alive(&server)?;
                }
            }
        }
    }
    super::clients::report_log(&server, env);
    Ok(())
}

/// The device the gateway serves (its status), to name in swap requests.
pub(super) fn device_instance(socket: &std::path::Path) -> anyhow::Result<u32> {
    match admin(socket, &Request::Status)? {
        Response::Status { devices, .. } => devices.first().map(|d| d.device).context("the gateway serves no device"),
        other => anyhow::bail!("status: unexpected answer {other:?}"),
    }
}

fn admin(socket: &std::path::Path, request: &Request) -> anyhow::Result<Response> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(trellis::admin::request(socket, request, Duration::from_secs(60)))
}

type SwapPlan<'a> = (u32, &'a PathBuf, u32, &'a PathBuf);

fn step(
    env: &Env,
    server: &crate::target::Server,
    cfg: &LoadConfig,
    round: u32,
    swapping: Option<SwapPlan<'_>>,
) -> anyhow::Result<String> {
    let mut swapper: Option<std::thread::JoinHandle<Swaps>> = None;
    let measure = cfg.measure;
    let mut cpu = super::CpuWindow::new(server.pid, env.ticks);
    // The swapper starts with the measured window.
    let mut r = crate::load::run(cfg, |m| {
        cpu.mark(m);
        if let (Mark::WindowStart, Some((count, socket, device, file))) = (m, swapping) {
            let (socket, file) = (socket.clone(), file.clone());
            swapper = Some(std::thread::spawn(move || swap_repeatedly(count, &socket, device, &file, measure)));
        }
    })?;
    let mut swaps = match swapper.take() {
        Some(h) => h.join().map_err(|_| anyhow::anyhow!("the swapper thread panicked"))?,
        None => Swaps::default(),
    };
    let secs = cfg.measure.as_secs_f64();
    let (load, pause) = (swaps.load.summary(), swaps.pause.summary());
    let line = JsonLine::new()
        .put("scenario", json!("swap"))
        .put("target", json!("trellis"))
        .put("clients", json!(cfg.clients))
        .put("in_flight", json!(cfg.in_flight))
        .put("phase", json!(if swapping.is_some() { "swapping" } else { "steady" }))
        .put("swaps_requested", json!(swapping.map_or(0, |s| s.0)))
        .put("swaps", json!(swaps.pause.len()))
        .put("swaps_in_window", json!(swaps.in_window))
        .put("swaps_per_sec", json!(super::round_to(f64::from(swaps.in_window) / cfg.measure.as_secs_f64(), 10.0)))
        .put("swap_failures", json!(swaps.failures.len()))
        .put("load_ms_p50", json!(load.map(|s| round_to(s.p50.as_secs_f64() * 1e3, 100.0))))
        .put("load_ms_max", json!(load.map(|s| round_to(s.max.as_secs_f64() * 1e3, 100.0))))
        .put("pause_us_p50", super::micros(pause.as_ref(), |s| s.p50))
        .put("pause_us_p99", super::micros(pause.as_ref(), |s| s.p99))
        .put("pause_us_max", super::micros(pause.as_ref(), |s| s.max));
    let line = super::outcome_fields(line, &r.outcomes, &mut r.latencies, secs);
    let line = super::server_fields(line, env, server, &cpu, secs).put("round", json!(round)).finish();
    let phase = if swapping.is_some() { format!("swapping ({} swaps)", swaps.pause.len()) } else { "steady".into() };
    let what = format!("clients {:>3} × {:>2} {phase}", cfg.clients, cfg.in_flight);
    super::progress("swap", &what, &r.outcomes, &mut r.latencies, secs);
    if let Some(first) = swaps.failures.first() {
        eprintln!("stress-test: swap: {} swaps failed; the first: {first}", swaps.failures.len());
    }
    Ok(line)
}

/// Swap `count` times, evenly spaced over `window` (at once when behind).
fn swap_repeatedly(
    count: u32,
    socket: &std::path::Path,
    device: u32,
    file: &std::path::Path,
    window: Duration,
) -> Swaps {
    let mut swaps = Swaps::default();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            swaps.failures.push(format!("no runtime: {e}"));
            return swaps;
        }
    };
    let t0 = Instant::now();
    let request = Request::Swap { device, file: file.to_path_buf() };
    for n in 0..count {
        let at = t0 + window.mul_f64(f64::from(n) / f64::from(count));
        if let Some(wait) = at.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        match runtime.block_on(trellis::admin::request(socket, &request, Duration::from_secs(60))) {
            Ok(Response::Swapped { load_ms, pause_us, .. }) => {
                swaps.load.record(Duration::from_secs_f64(load_ms / 1e3));
                swaps.pause.record(Duration::from_secs_f64(pause_us / 1e6));
                swaps.in_window += u32::from(t0.elapsed() <= window);
            }
            Ok(other) => swaps.failures.push(format!("{other:?}")),
            Err(e) => swaps.failures.push(format!("{e:#}")),
        }
    }
    swaps
}
