//! `console`: what the operator's HTTP surface costs the request path, and
//! how long a Prometheus scrape takes.
//!
//! 1. ReadProperty load on the gateway (its embedded default) with and
//!    without a console watching the device's point table — a live
//!    server-sent-event stream of its changes, as the browser's — in
//!    alternating order each round; the ratio of the two is the console's
//!    cost (target: ≤ 2 %).
//! 2. A gateway serving N devices (default 100): `/metrics` scraped
//!    repeatedly, the time to the last octet of each answer (target:
//!    ≤ 10 ms at 100 devices).
//!
//! Trellis only; the URL comes from the gateway's start-up line.

use super::clients::{measure, report_log};
use super::{Env, StepOptions, check_alive, probe_request};
use crate::json_line::JsonLine;
use crate::load::LoadConfig;
use crate::target::{Server, Setup, TargetKind};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The console's address, from the gateway's stderr.
fn console_of(server: &Server) -> anyhow::Result<SocketAddr> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&server.log).unwrap_or_default();
        if let Some(url) = log.lines().find_map(|l| l.strip_prefix("trellis: console http://")) {
            return Ok(url.split('/').next().unwrap_or_default().parse()?);
        }
        if log.contains("trellis: no console") || Instant::now() > deadline {
            anyhow::bail!("the gateway has no console (is its port taken?):\n{log}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One GET; the answer's body.
fn get(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    anyhow::ensure!(raw.starts_with("HTTP/1.1 200"), "GET {path}: {}", raw.lines().next().unwrap_or(""));
    Ok(raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// A console watching `device`'s points until `stop`: counts the octets of events received.
fn watch(addr: SocketAddr, device: u64, stop: Arc<AtomicBool>, octets: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut s) = TcpStream::connect(addr) else { return };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = write!(
            s,
            "GET /api/devices/{device}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
        );
        let mut buf = [0u8; 8192];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(n) = s.read(&mut buf) {
                octets.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    })
}

/// Run the scenario: one JSON line per step.
pub fn run(env: &Env, devices: u32, scrapes: usize, o: &StepOptions) -> anyhow::Result<()> {
    let requests: Arc<[_]> = Arc::new([probe_request()]);
    let server = env.start(TargetKind::Trellis, &Setup::default())?;
    let console = console_of(&server)?;
    let list: serde_json::Value = serde_json::from_str(&get(console, "/api/devices")?)?;
    let device = list[0]["instance"].as_u64().ok_or_else(|| anyhow::anyhow!("no device in /api/devices"))?;
    for round in 1..=o.rounds {
        for &clients in &o.clients {
            for &in_flight in &o.in_flight {
                // A different order each round: no side always goes first.
                let order = if round % 2 == 1 { [false, true] } else { [true, false] };
                for watched in order {
                    let stop = Arc::new(AtomicBool::new(false));
                    let octets = Arc::new(AtomicU64::new(0));
                    let watcher = watched.then(|| watch(console, device, stop.clone(), octets.clone()));
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
                    let extra = JsonLine::new().put("step", json!("read")).put("console_watching", json!(watched));
                    let line = measure("console", env, round, &server, &cfg, extra)?;
                    stop.store(true, Ordering::Relaxed);
                    if let Some(w) = watcher {
                        let _ = w.join();
                    }
                    println!("{line}");
                    check_alive(&server)?;
                }
            }
        }
    }
    report_log(&server, env);
    drop(server);

    let server = env.start(TargetKind::Trellis, &Setup { devices, ..Setup::default() })?;
    let console = console_of(&server)?;
    // Every device answers a few requests first, so each has request
    // counters and a latency histogram to show (a scrape of idle devices
    // would be shorter than one of a gateway at work).
    let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut probe = probe_request();
    let mut answer = [0u8; 1500];
    for (i, addr) in server.addrs.iter().enumerate() {
        for k in 0..3u8 {
            socket.send_to(probe.with_invoke_id((i as u8).wrapping_mul(3).wrapping_add(k)), addr)?;
            socket.recv_from(&mut answer)?;
        }
    }
    let mut times = Vec::with_capacity(scrapes);
    let mut size = 0;
    get(console, "/metrics")?; // warm-up
    for _ in 0..scrapes {
        let started = Instant::now();
        size = get(console, "/metrics")?.len();
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let line = JsonLine::new()
        .put("scenario", json!("console"))
        .put("target", json!("trellis"))
        .put("step", json!("metrics"))
        .put("devices", json!(server.addrs.len()))
        .put("scrapes", json!(scrapes))
        .put("octets", json!(size))
        .put("p50_ms", json!(super::round_to(at(0.5), 1000.0)))
        .put("p99_ms", json!(super::round_to(at(0.99), 1000.0)))
        .put("max_ms", json!(super::round_to(at(1.0), 1000.0)))
        .finish();
    println!("{line}");
    report_log(&server, env);
    Ok(())
}
