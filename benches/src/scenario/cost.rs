//! `cost`: what one served ReadProperty costs Trellis in the steady state —
//! heap allocations and bytes (counted by [`crate::alloc_count`]) and, when
//! run under callgrind, instructions — with the cold start counted apart.
//!
//! The gateway runs inside this process, as `trellis run` builds it: the
//! demo-building plugin (compiled component from a cache directory, so a
//! second run loads it rather than compiles), `server::build`, the B/IP
//! endpoint on a shard (`trellis::shard`: one thread from the datagram in to
//! the answer out, the port bound inside it). One client thread sends
//! sequential ReadProperty requests of analog-input,1 present-value on a
//! blocking std socket from one pre-encoded datagram, so the client itself
//! allocates nothing per request: every allocation counted between the two
//! marks is the server's (the tokio and plugin threads' included).
//!
//! Phases: `cold` is from before the engine starts to the first answer,
//! with the compiled component already in the cache directory (a restart's
//! start; the first start ever also compiles);
//! `warm-up` requests are not counted; then `requests` are. Instructions per
//! request come from two callgrind runs with different request counts (the
//! recipe does that: see `benches/report.sh`), so start-up cancels out.

use super::probe_request;
use crate::alloc_count::Counts;
use crate::json_line::JsonLine;
use crate::request::{Answer, classify};
use anyhow::Context;
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, PluginSource, builtin};
use trellis::server::{DeviceConfig, build};
use trellis_bip::BipConfig;

/// Requests of the two callgrind runs: their difference is what is divided.
const CALLGRIND_REQUESTS: (u64, u64) = (200, 1200);
/// Warm-up requests of each callgrind run.
const CALLGRIND_WARMUP: u64 = 100;

/// Instructions per request and of the cold start (up to the first answer
/// and the warm-up), from two runs of this binary under callgrind.
fn callgrind(cache_dir: &Path) -> anyhow::Result<(f64, f64)> {
    let me = std::env::current_exe()?;
    let collected = |requests: u64| -> anyhow::Result<f64> {
        let out = std::process::Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(&me)
            .args(["cost", "--requests", &requests.to_string(), "--warmup", &CALLGRIND_WARMUP.to_string()])
            .arg("--no-pooling")
            .arg("--cache-dir")
            .arg(cache_dir)
            .stdin(std::process::Stdio::null())
            .output()
            .context("run valgrind (is it installed? .ci/setup installs it)")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        anyhow::ensure!(out.status.success(), "callgrind run failed: {}", stderr.lines().last().unwrap_or(""));
        // "==PID== Collected : 123456789"
        stderr
            .lines()
            .find_map(|l| l.split_once("Collected :").and_then(|(_, n)| n.trim().parse::<f64>().ok()))
            .context("no \"Collected :\" line in callgrind's summary")
    };
    // Both runs must start alike: a first run under valgrind compiles the
    // component into the cache (valgrind's CPU has other features than the
    // real one, so a native run's entry would not match).
    collected(1).context("the priming run under callgrind")?;
    let (a, b) = CALLGRIND_REQUESTS;
    let (ia, ib) = (collected(a)?, collected(b)?);
    anyhow::ensure!(ib > ia, "callgrind counted fewer instructions for more requests ({ia} then {ib})");
    let per_request = (ib - ia) / (b - a) as f64;
    Ok((per_request, ia - per_request * (a + CALLGRIND_WARMUP) as f64))
}

/// Run the scenario: one JSON line. With `with_callgrind`, also run this
/// binary twice under callgrind for the instruction counts.
///
/// `pooling: false` allocates instances on demand instead of from the
/// pooling allocator's reservation (over 100 GiB of address space, which
/// valgrind cannot map): the callgrind runs use it. Instantiation is then
/// slower; a request, which reuses the instance, is the same.
pub fn run(requests: u64, warmup: u64, cache_dir: &Path, with_callgrind: bool, pooling: bool) -> anyhow::Result<()> {
    anyhow::ensure!(requests >= 1, "--requests: at least 1");
    let port = crate::target::free_port()?;
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let mut engine_config = EngineConfig { cache_dir: Some(cache_dir.to_path_buf()), ..EngineConfig::default() };
    if !pooling {
        engine_config.pooling = None;
    }
    // The cold start measured is a restart's: the compiled component is
    // already in the cache directory (compiling it once is not per start).
    PluginEngine::new(&engine_config).ok().and_then(|e| {
        PluginModel::load(&e, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new("prime")).ok()
    });
    let before = Counts::now();
    let started = Instant::now();
    // As `trellis run` does it: the device on a shard, its port bound inside it.
    let shard = trellis::shard::Shard::start("cost-shard".into())?;
    let engine =
        PluginEngine::new(&engine_config).map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    let model = PluginModel::load(&engine, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new("demo"))
        .context("load the demo-building plugin")?;
    let bip = BipConfig::new(Ipv4Addr::LOCALHOST, port);
    let port = {
        let _in_shard = shard.enter();
        trellis::server::bind(&bip)?
    };
    let serving = shard.spawn(async move {
        let server = build(model, DeviceConfig::default(), 999).await?;
        trellis::server::serve_on(port, Arc::new(server)).await
    });

    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    socket.connect(addr)?;
    socket.set_read_timeout(Some(Duration::from_secs(5)))?;
    // (Under callgrind a 5-second wait still holds: a request is slower, not stuck.)
    let mut template = probe_request();
    let mut buf = vec![0u8; 2048];
    let mut id = 0u8;
    let mut ask = |n: u64| -> anyhow::Result<()> {
        for _ in 0..n {
            id = id.wrapping_add(1);
            socket.send(template.with_invoke_id(id))?;
            loop {
                let len = socket.recv(&mut buf).context("no answer within 5 s")?;
                match classify(&buf[..len], false) {
                    Some((got, Answer::Ack)) if got == id => break,
                    Some((got, other)) if got == id => anyhow::bail!("answered {other:?}"),
                    _ => {}
                }
            }
        }
        Ok(())
    };
    // The first answer ends the cold start (the endpoint may still be binding).
    // Generous: under callgrind everything runs about fifty times slower.
    let deadline = Instant::now() + Duration::from_secs(300);
    while ask(1).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "the in-process gateway did not answer within 300 s");
    }
    let cold = Counts::now().since(before);
    let cold_ms = started.elapsed().as_secs_f64() * 1e3;
    ask(warmup)?;
    let mark = Counts::now();
    let t0 = Instant::now();
    ask(requests)?;
    let elapsed = t0.elapsed();
    let steady = Counts::now().since(mark);
    serving.abort();
    drop(shard);
    let per = |v: u64| super::round_to(v as f64 / requests as f64, 100.0);
    let instructions = if with_callgrind {
        eprintln!("stress-test: cost: three runs under callgrind (about a minute)…");
        Some(callgrind(cache_dir)?)
    } else {
        None
    };
    let line = JsonLine::new()
        .put("scenario", json!("cost"))
        .put("target", json!("trellis"))
        .put("request", json!("ReadProperty analog-input,1 present-value (demo-building plugin)"))
        .put("requests", json!(requests))
        .put("pooling", json!(pooling))
        .put("warmup", json!(warmup))
        .put("allocations_per_request", json!(per(steady.allocations)))
        .put("bytes_per_request", json!(per(steady.bytes)))
        .put("cold_allocations", json!(cold.allocations))
        .put("cold_bytes", json!(cold.bytes))
        .put("cold_ms", json!(super::round_to(cold_ms, 10.0)))
        .put("mean_us", json!(super::round_to(elapsed.as_secs_f64() * 1e6 / requests as f64, 10.0)))
        .put("instructions_per_request", json!(instructions.map(|i| i.0.round())))
        .put("cold_instructions", json!(instructions.map(|i| i.1.round())))
        .put("callgrind_requests", json!(instructions.map(|_| [CALLGRIND_REQUESTS.0, CALLGRIND_REQUESTS.1])))
        .finish();
    eprintln!(
        "stress-test: cost: {} allocations ({} bytes) per ReadProperty; cold start {} allocations, {cold_ms:.0} ms{}",
        per(steady.allocations),
        per(steady.bytes),
        cold.allocations,
        instructions.map(|i| format!("; {:.0} instructions per request", i.0)).unwrap_or_default()
    );
    println!("{line}");
    Ok(())
}
