//! `python`: ReadProperty from Python, side by side: the `trellis` wheel,
//! the rusty-bacnet wheel's client and bacpypes3's, and beneath them our
//! Rust client (`trellis-client`) the wheel wraps — all against the same
//! Trellis server, in the same run.
//!
//! Each step is one library with T asyncio tasks, each awaiting one read
//! at a time (`benches/peers/python_read_bench.py`, a process of its own
//! on the load generator's CPU); the Rust client's step is T tokio tasks in
//! this process, on a runtime shaped like the wheel's. A round's line per T
//! gives every library's reads per second and p50, the ratios the targets
//! name (trellis ÷ rusty-bacnet, trellis ÷ bacpypes3) and the wheel's
//! overhead per call over the Rust client (the difference of the time per
//! read at the same concurrency, and of the client CPU per read). One more
//! line gives each package's import time (`python -X importtime`, median of
//! five fresh interpreters) and the wheel's size.
//!
//! The `trellis` package must be installed in the peers' venv: `report.sh`
//! builds the release wheel and installs it first.

use super::Env;
use crate::target::{Setup, TargetKind};
use anyhow::Context;
use serde_json::{Value, json};
use std::net::SocketAddrV4;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The libraries compared, as `python_read_bench.py --lib` names them.
const LIBS: [&str; 3] = ["trellis", "rusty", "bacpypes3"];

/// What the scenario measures.
#[derive(Debug, Clone)]
pub struct PythonOptions {
    /// Concurrent tasks, one step each.
    pub tasks: Vec<usize>,
    /// Measured seconds per step.
    pub seconds: f64,
    /// Warm-up seconds per step.
    pub warmup: f64,
    /// Rounds (for medians).
    pub rounds: u32,
    /// The wheel whose size is reported.
    pub wheel: Option<std::path::PathBuf>,
}

/// Run the scenario: an import line, then one line per round and task count.
pub fn run(env: &Env, o: &PythonOptions) -> anyhow::Result<()> {
    let script = env.programs.peers_dir.join("../../../benches/peers/python_read_bench.py");
    anyhow::ensure!(script.exists(), "{} is missing", script.display());
    println!("{}", imports(&env.programs.python, o.wheel.as_deref())?);
    let server = env.start(TargetKind::Trellis, &Setup::default())?;
    for round in 1..=o.rounds {
        for &tasks in &o.tasks {
            let rust = rust_client(server.addr, tasks, o.warmup, o.seconds, env.ticks)?;
            let mut libs = serde_json::Map::new();
            for lib in LIBS {
                libs.insert(lib.to_string(), python_client(&env.programs.python, &script, lib, server.addr, tasks, o)?);
            }
            let rate = |v: &Value| v["reads_per_sec"].as_f64().unwrap_or(0.0);
            let (ours, rusty, bp3) = (rate(&libs["trellis"]), rate(&libs["rusty"]), rate(&libs["bacpypes3"]));
            let rust_rate = rust["reads_per_sec"].as_f64().unwrap_or(0.0);
            let per_read_us = |r: f64| if r > 0.0 { 1e6 / r } else { f64::NAN };
            let cpu = |v: &Value| v["cpu_us_per_read"].as_f64().unwrap_or(f64::NAN);
            let line = json!({
                "scenario": "python",
                "round": round,
                "tasks": tasks,
                "server": server.kind.name(),
                "rust_client": rust,
                "libs": libs,
                "trellis_vs_rusty": round_to(ours / rusty, 2),
                "trellis_vs_bacpypes3": round_to(ours / bp3, 1),
                "overhead_us_per_call": round_to(per_read_us(ours) - per_read_us(rust_rate), 1),
                "overhead_cpu_us_per_call": round_to(cpu(&libs["trellis"]) - cpu(&rust), 1),
            });
            println!("{line}");
            super::check_alive(&server)?;
        }
    }
    Ok(())
}

fn round_to(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

/// One Python client's step.
fn python_client(
    python: &Path,
    script: &Path,
    lib: &str,
    target: SocketAddrV4,
    tasks: usize,
    o: &PythonOptions,
) -> anyhow::Result<Value> {
    let out = Command::new(python)
        .arg(script)
        .args(["--lib", lib, "--target", &target.to_string(), "--tasks", &tasks.to_string()])
        .args(["--warmup", &o.warmup.to_string(), "--seconds", &o.seconds.to_string()])
        .output()
        .with_context(|| format!("run {}", script.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{lib} client failed: {}",
        String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().rev().find(|l| l.starts_with('{')).context("no JSON line from the Python client")?;
    Ok(serde_json::from_str(line)?)
}

/// The Rust client's step: `tasks` tasks on a runtime shaped like the
/// wheel's (as many workers as cores, at most four).
fn rust_client(target: SocketAddrV4, tasks: usize, warmup: f64, seconds: f64, ticks: u64) -> anyhow::Result<Value> {
    let own_cpu = || {
        crate::procfs::cpu_time(std::process::id(), ticks).map(|d| d.as_secs_f64()).context("this process's CPU time")
    };
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()?;
    let cpu0 = own_cpu()?;
    let result = runtime.block_on(async move {
        let config = trellis::client::ClientConfig {
            bip: trellis_bip::BipConfig::from_cidr("127.0.0.1", 0).map_err(|e| anyhow::anyhow!("{e}"))?,
            ..Default::default()
        };
        let client = trellis::client::Client::bind(config).await?;
        let device: trellis::client::DeviceAddress = target.to_string().parse()?;
        let object: bacnet::ObjectIdentifier = "analog-input,1".parse().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let started = Instant::now();
        let warm_until = started + Duration::from_secs_f64(warmup);
        let end = warm_until + Duration::from_secs_f64(seconds);
        let mut workers = Vec::new();
        for _ in 0..tasks {
            let (client, device) = (client.clone(), device.clone());
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failures = 0u64;
                loop {
                    let t = Instant::now();
                    if t >= end {
                        break;
                    }
                    let r =
                        client.read_property(&device, object, bacnet::PropertyIdentifier::PRESENT_VALUE, None).await;
                    if t >= warm_until {
                        match r {
                            Ok(_) => latencies.push(t.elapsed()),
                            Err(_) => failures += 1,
                        }
                    }
                }
                (latencies, failures)
            }));
        }
        let mut all = Vec::new();
        let mut failures = 0;
        for w in workers {
            let (l, f) = w.await?;
            all.extend(l);
            failures += f;
        }
        client.shutdown().await;
        anyhow::Ok((all, failures))
    })?;
    let cpu = own_cpu()? - cpu0;
    let (mut latencies, failures) = result;
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| round_to(d.as_secs_f64() * 1e6, 1))
    };
    let reads = latencies.len();
    Ok(json!({
        "reads": reads,
        "reads_per_sec": round_to(reads as f64 / seconds, 1),
        "p50_us": pct(0.5),
        "p99_us": pct(0.99),
        "failures": failures,
        "client_cpu_s": round_to(cpu, 3),
        "cpu_us_per_read": round_to(cpu / reads.max(1) as f64 * 1e6, 2),
    }))
}

/// Each package's import time (median of five fresh interpreters) and the
/// wheel's size.
fn imports(python: &Path, wheel: Option<&Path>) -> anyhow::Result<Value> {
    let mut times = serde_json::Map::new();
    for (name, module) in [("trellis", "trellis"), ("rusty", "rusty_bacnet"), ("bacpypes3", "bacpypes3.app")] {
        let mut ms = Vec::new();
        for _ in 0..5 {
            let out = Command::new(python).args(["-X", "importtime", "-c", &format!("import {module}")]).output()?;
            anyhow::ensure!(out.status.success(), "import {module} failed: {}", String::from_utf8_lossy(&out.stderr));
            // The last line is the module itself: "import time: self | cumulative | name".
            let err = String::from_utf8_lossy(&out.stderr);
            let cumulative = err
                .lines()
                .rev()
                .find_map(|l| l.split('|').nth(1).and_then(|c| c.trim().parse::<f64>().ok()))
                .context("no importtime line")?;
            ms.push(cumulative / 1e3);
        }
        ms.sort_by(f64::total_cmp);
        times.insert(name.to_string(), json!(round_to(ms[2], 1)));
    }
    let wheel_bytes = wheel.map(std::fs::metadata).transpose()?.map(|m| m.len());
    Ok(json!({
        "scenario": "python",
        "step": "import",
        "import_ms": times,
        "wheel": wheel.map(|w| w.display().to_string()),
        "wheel_bytes": wheel_bytes,
    }))
}
