//! `sc`: BACnet/SC side by side with the rusty-bacnet wheel.
//!
//! - **read**: each side is a hub process and a device process that is a
//!   node of it — Trellis: `trellis sc hub` and `trellis run` with the demo
//!   building on an SC port; rusty: `rusty_sc.py hub` (its `ScHub`) and
//!   `rusty_sc.py server` (its SC `BACnetServer`). The same clients — nodes
//!   of this process (`trellis-sc`, TLS 1.3 with a test PKI), each keeping K
//!   confirmed ReadProperty requests of analog-input,1 present-value in
//!   flight — load each side in turn, rotated. Beside them, the same load
//!   over B/IP against Trellis (the raw generator): SC's p50 is set against
//!   B/IP's.
//! - **hub**: a fresh hub of each side; N nodes (default 1,000) connect, 64
//!   at a time: TLS plus WebSocket plus Connect-Request handshakes per
//!   second, the hub's resident memory per idle connection, then one node's
//!   broadcasts copied to every other node: copies delivered per second.
//!
//! Every process is killed by PID when the scenario ends.

use super::clients::{measure, report_log};
use super::{Env, StepOptions, check_alive, outcome_fields, probe_request, progress, round_to};
use crate::json_line::JsonLine;
use crate::load::LoadConfig;
use crate::procfs;
use crate::request::{Answer, classify_npdu, encode_npdu};
use crate::stats::{Latencies, Outcomes};
use crate::target::{Setup, Spawned, TargetKind};
use anyhow::Context;
use bacnet::bvlc_sc::{BROADCAST_VMAC, ConnectInfo, HubConnectionStatus, ScVmac};
use bacnet::enums::PropertyIdentifier;
use bacnet::sc::connection::ConnectionConfig;
use bacnet::sc::connector::{ConnectorConfig, Up};
use bacnet::{ObjectIdentifier, ObjectType};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use trellis_sc::node::{NodeConfig, ScNode};

/// A global Who-Is, as an NPDU.
const WHO_IS: [u8; 8] = [0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08];
/// How many nodes connect at once in the hub step.
const CONNECTING_AT_ONCE: usize = 64;
/// Broadcasts sent in the hub step.
const BROADCASTS: usize = 20;

/// One side: its hub and its device, and where the hub listens.
struct Side {
    name: &'static str,
    hub: Spawned,
    device: Spawned,
    uri: String,
    /// The device's VMAC (from its I-Am).
    vmac: ScVmac,
}

/// Run the scenario.
pub fn run(env: &Env, idle_nodes: usize, o: &StepOptions) -> anyhow::Result<()> {
    let pki = env.programs.work_dir.join("sc-pki");
    trellis_sc::pki::write_test_pki(&pki, &["127.0.0.1", "localhost"], 2, 1, &[]).context("write the test PKI")?;
    let tls = trellis_sc::tls::ScCredentials::from_pem_files(
        &pki.join("node2.pem"),
        &pki.join("node2.key"),
        &pki.join("ca.pem"),
    )?
    .client_config()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut sides =
        vec![runtime.block_on(start_trellis(env, &pki, &tls))?, runtime.block_on(start_rusty(env, &pki, &tls))?];
    let bip = env.start(TargetKind::Trellis, &Setup::default())?;
    let (request, invoke_at) = encode_npdu(
        ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).expect("a valid identifier"),
        PropertyIdentifier::PRESENT_VALUE,
    )
    .map_err(|e| anyhow::anyhow!("encode: {e}"))?;
    let request = Arc::new((request, invoke_at));
    let mut turn = 0usize;
    for round in 1..=o.rounds {
        for &in_flight in &o.in_flight {
            for &clients in &o.clients {
                for k in 0..sides.len() {
                    let side = &sides[(turn + k) % sides.len()];
                    let line = runtime.block_on(read_step(env, side, &tls, &request, clients, in_flight, o, round))?;
                    println!("{line}");
                    for p in [&side.hub, &side.device] {
                        anyhow::ensure!(p.exited().is_none(), "{} exited: {}", p.name, p.log_tail());
                    }
                }
                turn += 1;
                let cfg = LoadConfig {
                    target: bip.addr.into(),
                    also: Vec::new(),
                    clients,
                    in_flight: in_flight as usize,
                    warmup: o.warmup,
                    measure: o.measure,
                    timeout: o.timeout,
                    threads: o.client_threads,
                    echo: false,
                    requests: Arc::new([probe_request()]),
                };
                let extra = JsonLine::new().put("step", json!("read")).put("transport", json!("bip"));
                println!("{}", measure("sc", env, round, &bip, &cfg, extra)?);
                check_alive(&bip)?;
            }
        }
    }
    report_log(&bip, env);
    drop(bip);
    sides.clear();

    for name in ["trellis", "rusty"] {
        let line = runtime.block_on(hub_step(env, &pki, &tls, name, idle_nodes))?;
        println!("{line}");
    }
    Ok(())
}

pub(super) fn hub_args(env: &Env, pki: &Path, name: &str, port: u16) -> (std::path::PathBuf, Vec<String>) {
    let file = |f: &str| pki.join(f).display().to_string();
    if name == "trellis" {
        let args = ["sc", "hub", "--listen", &format!("127.0.0.1:{port}")]
            .into_iter()
            .map(String::from)
            .chain(["--cert".into(), file("hub.pem"), "--key".into(), file("hub.key"), "--ca".into(), file("ca.pem")])
            .collect();
        (env.programs.trellis.clone(), args)
    } else {
        let script = env.programs.peers_dir.join("rusty_sc.py").display().to_string();
        let args = vec![
            script,
            "hub".into(),
            "--bind".into(),
            format!("127.0.0.1:{port}"),
            "--pki".into(),
            pki.display().to_string(),
        ];
        (env.programs.python.clone(), args)
    }
}

/// A hub of `name` (trellis or rusty) on `port`, its log called `log_name`,
/// listening once this returns.
pub(super) fn hub_on(env: &Env, pki: &Path, name: &str, port: u16, log_name: &str) -> anyhow::Result<Spawned> {
    let (program, args) = hub_args(env, pki, name, port);
    let hub = Spawned::start(log_name, &program, &args, &env.programs, env.server_cpu.as_deref())?;
    // Listening once a TCP connection is taken (Python starts slowly).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(hub.exited().is_none(), "{} exited: {}", hub.name, hub.log_tail());
        anyhow::ensure!(std::time::Instant::now() < deadline, "{} not listening within 60 s", hub.name);
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(hub)
}

fn start_hub(env: &Env, pki: &Path, name: &str) -> anyhow::Result<(Spawned, String)> {
    let port = crate::target::free_port()?;
    let hub = hub_on(env, pki, name, port, &format!("{name}-sc-hub-{port}"))?;
    Ok((hub, format!("wss://127.0.0.1:{port}/")))
}

async fn start_trellis(env: &Env, pki: &Path, tls: &Arc<trellis_sc::rustls::ClientConfig>) -> anyhow::Result<Side> {
    let (hub, uri) = start_hub(env, pki, "trellis")?;
    let file = |f: &str| pki.join(f).display().to_string();
    let config = env.programs.work_dir.join("trellis-sc.toml");
    std::fs::write(
        &config,
        format!(
            "# Generated by stress-test.\n[[device]]\nsc = {{ primary_hub = \"{uri}\", certificate = \"{}\", key = \"{}\", issuers = \"{}\" }}\n",
            file("node1.pem"),
            file("node1.key"),
            file("ca.pem")
        ),
    )?;
    let admin = env.programs.work_dir.join("trellis-sc-admin").join("admin.sock");
    let args: Vec<String> =
        ["run", "--config", &config.display().to_string(), "--admin-socket", &admin.display().to_string()]
            .map(String::from)
            .to_vec();
    let device =
        Spawned::start("trellis-sc-device", &env.programs.trellis, &args, &env.programs, env.server_cpu.as_deref())?;
    let vmac = find_device(&uri, tls, &device).await?;
    Ok(Side { name: "trellis", hub, device, uri, vmac })
}

async fn start_rusty(env: &Env, pki: &Path, tls: &Arc<trellis_sc::rustls::ClientConfig>) -> anyhow::Result<Side> {
    let (hub, uri) = start_hub(env, pki, "rusty")?;
    let script = env.programs.peers_dir.join("rusty_sc.py").display().to_string();
    let args = vec![
        script,
        "server".into(),
        "--hub".into(),
        uri.clone(),
        "--pki".into(),
        pki.display().to_string(),
        "--node".into(),
        "1".into(),
    ];
    let device =
        Spawned::start("rusty-sc-device", &env.programs.python, &args, &env.programs, env.server_cpu.as_deref())?;
    let vmac = find_device(&uri, tls, &device).await?;
    Ok(Side { name: "rusty", hub, device, uri, vmac })
}

/// A client node of this process on `uri`.
fn node(uri: &str, tls: &Arc<trellis_sc::rustls::ClientConfig>, i: u32) -> (ScNode, mpsc::Receiver<Up>) {
    let me = ConnectInfo {
        vmac: trellis_sc::identity::random_vmac(),
        uuid: trellis_sc::identity::derived_uuid(i, b"stress-test"),
        max_bvlc_len: 1600,
        max_npdu_len: 1497,
    };
    ScNode::start(NodeConfig {
        direct: None,
        primary: uri.to_string(),
        failover: None,
        tls: tls.clone(),
        connector: ConnectorConfig::new(ConnectionConfig::new(me), false),
    })
}

async fn all_connected(nodes: &[ScNode], within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while nodes.iter().any(|n| n.status().hub != HubConnectionStatus::CONNECTED_TO_PRIMARY) {
        anyhow::ensure!(Instant::now() < deadline, "nodes not connected to their hub within {within:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The device's VMAC, from its answer to a global Who-Is (asked once a
/// second for up to two minutes while it starts).
async fn find_device(
    uri: &str,
    tls: &Arc<trellis_sc::rustls::ClientConfig>,
    device: &Spawned,
) -> anyhow::Result<ScVmac> {
    let (probe, mut up) = node(uri, tls, u32::MAX);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        anyhow::ensure!(device.exited().is_none(), "{} exited: {}", device.name, device.log_tail());
        anyhow::ensure!(Instant::now() < deadline, "{} did not answer a Who-Is within 120 s", device.name);
        if probe.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY {
            probe.send(BROADCAST_VMAC, WHO_IS.to_vec()).await?;
        }
        let until = Instant::now() + Duration::from_secs(1);
        while let Ok(Some(u)) = tokio::time::timeout_at(until, up.recv()).await {
            let is_i_am = bacnet::npdu::Npdu::decode(&u.npdu).ok().is_some_and(
                |n| matches!(n.payload, bacnet::npdu::NpduPayload::Apdu(a) if a.starts_with(&[0x10, 0x00])),
            );
            if let (true, Some(origin)) = (is_i_am, u.origin) {
                eprintln!("stress-test: {} on {uri}: VMAC {}", device.name, trellis_sc::identity::hex(&origin));
                return Ok(origin);
            }
        }
    }
}

/// What one client measured.
#[derive(Default)]
struct ClientResult {
    outcomes: Outcomes,
    latencies: Latencies,
}

#[allow(clippy::too_many_arguments)]
async fn read_step(
    env: &Env,
    side: &Side,
    tls: &Arc<trellis_sc::rustls::ClientConfig>,
    request: &Arc<(Vec<u8>, usize)>,
    clients: usize,
    in_flight: u8,
    o: &StepOptions,
    round: u32,
) -> anyhow::Result<String> {
    let nodes: Vec<_> = (0..clients).map(|i| node(&side.uri, tls, i as u32)).collect();
    let handles: Vec<ScNode> = nodes.iter().map(|(n, _)| n.clone()).collect();
    all_connected(&handles, Duration::from_secs(60)).await?;
    let start = Instant::now();
    let window = (start + o.warmup, start + o.warmup + o.measure);
    let pids = [side.hub.pid, side.device.pid, std::process::id()];
    let cpu = tokio::spawn(cpu_window(pids, window, env.ticks));
    let mut tasks = Vec::new();
    for (node, up) in nodes {
        tasks.push(tokio::spawn(client(node, up, side.vmac, in_flight as usize, request.clone(), window, o.timeout)));
    }
    let mut outcomes = Outcomes::default();
    let mut latencies = Latencies::default();
    for t in tasks {
        let r = t.await?;
        outcomes.merge(&r.outcomes);
        latencies.merge(r.latencies);
    }
    let [hub_cpu, device_cpu, client_cpu] = cpu.await?;
    let secs = o.measure.as_secs_f64();
    let cores = |s: Option<f64>| s.map(|s| round_to(s / secs, 100.0));
    let line = JsonLine::new()
        .put("scenario", json!("sc"))
        .put("target", json!(side.name))
        .put("step", json!("read"))
        .put("transport", json!("sc"))
        .put("clients", json!(clients))
        .put("in_flight", json!(in_flight));
    let line = outcome_fields(line, &outcomes, &mut latencies.clone(), secs);
    let server_cpu = hub_cpu.zip(device_cpu).map(|(a, b)| a + b);
    let per_answer = server_cpu.filter(|_| outcomes.ok > 0).map(|s| round_to(s / outcomes.ok as f64 * 1e6, 100.0));
    let line = line
        .put("hub_cpu", json!(cores(hub_cpu)))
        .put("device_cpu", json!(cores(device_cpu)))
        .put("server_cpu", json!(cores(server_cpu)))
        .put("client_cpu", json!(cores(client_cpu)))
        .put("server_cpu_us_per_answer", json!(per_answer))
        .put("hub_rss_kib", json!(side.hub.rss_kib()))
        .put("device_rss_kib", json!(side.device.rss_kib()))
        .put("pin", env.pin_label())
        .put("round", json!(round))
        .finish();
    let what = format!("{:>9} SC clients {clients:>3} × {in_flight:>2}", side.name);
    progress("sc", &what, &outcomes, &mut latencies, secs);
    Ok(line)
}

/// CPU seconds of each of `pids` over the window.
async fn cpu_window(pids: [u32; 3], window: (Instant, Instant), ticks: u64) -> [Option<f64>; 3] {
    tokio::time::sleep_until(window.0).await;
    let before = pids.map(|p| procfs::cpu_time(p, ticks));
    tokio::time::sleep_until(window.1).await;
    let after = pids.map(|p| procfs::cpu_time(p, ticks));
    let mut out = [None; 3];
    for i in 0..3 {
        out[i] = before[i].zip(after[i]).map(|(a, b)| b.saturating_sub(a).as_secs_f64());
    }
    out
}

/// One client: `k` requests in flight until the window ends; each answer
/// (or timeout) replaced by a new request at once.
async fn client(
    node: ScNode,
    mut up: mpsc::Receiver<Up>,
    target: ScVmac,
    k: usize,
    request: Arc<(Vec<u8>, usize)>,
    window: (Instant, Instant),
    timeout: Duration,
) -> ClientResult {
    let mut r = ClientResult::default();
    let mut sent: Vec<Option<Instant>> = vec![None; 256];
    let mut next = 0u8;
    let in_window = |t: Instant| t >= window.0 && t < window.1;
    let (template, invoke_at) = (&request.0, request.1);
    let mut send = async |sent: &mut Vec<Option<Instant>>, r: &mut ClientResult| {
        while sent[next as usize].is_some() {
            next = next.wrapping_add(1);
        }
        let id = next;
        next = next.wrapping_add(1);
        let mut npdu = template.clone();
        npdu[invoke_at] = id;
        sent[id as usize] = Some(Instant::now());
        if node.send(target, npdu).await.is_err() {
            r.outcomes.io_errors += 1;
        }
    };
    for _ in 0..k.min(255) {
        send(&mut sent, &mut r).await;
    }
    loop {
        let now = Instant::now();
        if now >= window.1 {
            return r;
        }
        let oldest = sent.iter().flatten().min().copied().unwrap_or(now);
        let expiry = (oldest + timeout).min(window.1);
        tokio::select! {
            u = up.recv() => {
                let Some(u) = u else { return r };
                let now = Instant::now();
                let Some((id, answer)) = classify_npdu(&u.npdu, false) else { continue };
                match sent[id as usize].take() {
                    Some(t0) => {
                        if in_window(now) {
                            r.outcomes.count(answer);
                            if answer == Answer::Ack {
                                r.latencies.record(now - t0);
                            }
                        }
                        send(&mut sent, &mut r).await;
                    }
                    None => {
                        if in_window(now) {
                            r.outcomes.late += 1;
                        }
                    }
                }
            }
            _ = tokio::time::sleep_until(expiry) => {
                let now = Instant::now();
                let mut expired = 0;
                for slot in sent.iter_mut() {
                    if slot.is_some_and(|t0| t0 + timeout <= now) {
                        *slot = None;
                        expired += 1;
                    }
                }
                if in_window(now) {
                    r.outcomes.timeout += expired;
                }
                for _ in 0..expired {
                    send(&mut sent, &mut r).await;
                }
            }
        }
    }
}

/// A fresh hub of `name`; `count` nodes connect to it (64 at a time; the
/// ramp ends where the hub takes no more), sit idle, then one broadcasts to
/// the others. With a ramp that ended early, the handshake rate is of what
/// connected.
async fn hub_step(
    env: &Env,
    pki: &Path,
    tls: &Arc<trellis_sc::rustls::ClientConfig>,
    name: &str,
    count: usize,
) -> anyhow::Result<String> {
    let (hub, uri) = start_hub(env, pki, name)?;
    // The hub is up once one node connects; its memory then is the base.
    let first = node(&uri, tls, 0);
    let ready = Instant::now() + Duration::from_secs(60);
    while first.0.status().hub != HubConnectionStatus::CONNECTED_TO_PRIMARY {
        anyhow::ensure!(hub.exited().is_none(), "{} exited: {}", hub.name, hub.log_tail());
        anyhow::ensure!(Instant::now() < ready, "{} took no connection within 60 s", hub.name);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base_rss = hub.rss_kib();
    let mut nodes = vec![first];
    let started = Instant::now();
    let mut i = 1;
    // A hub that takes no more (a connection bound) ends the ramp: the
    // figures are then for the nodes it took.
    let mut refused_at = None;
    let mut ramp_ended = started;
    while nodes.len() < count {
        let batch: Vec<_> = (0..CONNECTING_AT_ONCE.min(count - nodes.len()))
            .map(|_| {
                i += 1;
                node(&uri, tls, i)
            })
            .collect();
        let handles: Vec<ScNode> = batch.iter().map(|(n, _)| n.clone()).collect();
        if all_connected(&handles, Duration::from_secs(20)).await.is_err() {
            let took = batch.into_iter().filter(|(n, _)| n.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY);
            nodes.extend(took);
            refused_at = Some(nodes.len());
            eprintln!("stress-test: sc hub {name}: takes no more than {} nodes", nodes.len());
            break;
        }
        nodes.extend(batch);
        ramp_ended = Instant::now();
    }
    let connected = nodes.len();
    // Up to the last batch that connected in full (a refused one waited
    // out its timeout).
    let connect_secs = (ramp_ended - started).as_secs_f64().max(1e-3);
    let full_batches =
        if refused_at.is_some() { (connected - 1) / CONNECTING_AT_ONCE * CONNECTING_AT_ONCE } else { connected - 1 };
    let handshakes_per_sec = full_batches as f64 / connect_secs;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = hub.rss_kib();
    let per_connection =
        base_rss.zip(idle_rss).map(|(a, b)| b.saturating_sub(a) as f64 / (connected - 1).max(1) as f64);

    // Fan-out: node 0 broadcasts; every other node counts its copies.
    let (sender, _) = nodes.remove(0);
    let expected = (nodes.len() * BROADCASTS) as u64;
    let sent_at = Instant::now();
    let deadline = sent_at + Duration::from_secs(30);
    let counters: Vec<_> = nodes
        .into_iter()
        .map(|(n, mut up)| {
            tokio::spawn(async move {
                let mut got = 0u64;
                let mut last = None;
                while got < BROADCASTS as u64 {
                    match tokio::time::timeout_at(deadline, up.recv()).await {
                        Ok(Some(_)) => {
                            got += 1;
                            last = Some(Instant::now());
                        }
                        _ => break,
                    }
                }
                drop(n);
                (got, last)
            })
        })
        .collect();
    for _ in 0..BROADCASTS {
        sender.send(BROADCAST_VMAC, WHO_IS.to_vec()).await?;
    }
    let mut delivered = 0u64;
    let mut last = sent_at;
    for c in counters {
        let (got, at) = c.await?;
        delivered += got;
        if let Some(at) = at {
            last = last.max(at);
        }
    }
    let fan_out_secs = (last - sent_at).as_secs_f64();
    let copies_per_sec = (fan_out_secs > 0.0).then(|| delivered as f64 / fan_out_secs);
    eprintln!(
        "stress-test: sc hub {name}: {connected} nodes at {handshakes_per_sec:.0} handshakes/s, {} KiB resident per idle connection; \
         {delivered}/{expected} broadcast copies in {:.0} ms",
        per_connection.map_or("–".into(), |p| format!("{p:.1}")),
        fan_out_secs * 1e3
    );
    Ok(JsonLine::new()
        .put("scenario", json!("sc"))
        .put("target", json!(name))
        .put("step", json!("hub"))
        .put("nodes", json!(count))
        .put("nodes_connected", json!(connected))
        .put("refused_at", json!(refused_at))
        .put("handshakes_per_sec", json!(round_to(handshakes_per_sec, 1.0)))
        .put("hub_rss_kib_base", json!(base_rss))
        .put("hub_rss_kib_idle", json!(idle_rss))
        .put("rss_kib_per_connection", json!(per_connection.map(|p| round_to(p, 10.0))))
        .put("broadcasts", json!(BROADCASTS))
        .put("copies_expected", json!(expected))
        .put("copies_delivered", json!(delivered))
        .put("fan_out_ms", json!(round_to(fan_out_secs * 1e3, 10.0)))
        .put("copies_per_sec", json!(copies_per_sec.map(|c| round_to(c, 1.0))))
        .finish())
}
