//! `router`: what the gateway's router costs, and how many devices one
//! port carries.
//!
//! - **hop**: the same ReadProperty load against Trellis serving the demo
//!   building directly on its port (`direct`), against Trellis with the demo
//!   building on a virtual network behind its router port (`routed`: the
//!   request carries DNET/DADR, the answer SNET/SADR), the same with the
//!   `firewall` routing policy asked about both (`firewalled`, the rules of
//!   `examples/router-policy.toml`), and against the rusty-bacnet wheel's
//!   server directly, each step A/B rotated. The router's added p50 is
//!   routed − direct (and firewalled − direct); its throughput is set beside
//!   rusty's direct one.
//! - **scale**: a gateway with N devices on one virtual network behind one
//!   port (default 100) and one with a single device: idle resident memory
//!   per added device, and a Who-Is to the whole virtual network (a remote
//!   broadcast through the router): how many answered within 1 s, and when
//!   the last did.

use super::clients::{measure, report_log};
use super::{Env, StepOptions, check_alive, probe_request, routed_request};
use crate::json_line::JsonLine;
use crate::load::LoadConfig;
use crate::target::{ROUTED_NETWORK, Server, Setup, TargetKind};
use bacnet::bvll::Bvll;
use bacnet::npdu::{NetAddress, Npdu, NpduPayload};
use serde_json::json;
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the Who-Is of the scale step waits for I-Ams.
const WHO_IS_WINDOW: Duration = Duration::from_secs(1);

/// Run the scenario: hop lines per step and round, then the scale lines.
pub fn run(env: &Env, scale: u32, o: &StepOptions) -> anyhow::Result<()> {
    let direct = env.start(TargetKind::Trellis, &Setup::default())?;
    let routed = env.start(TargetKind::Trellis, &Setup { routed: 1, ..Setup::default() })?;
    let firewalled = env.start(TargetKind::Trellis, &Setup { routed: 1, firewall: true, ..Setup::default() })?;
    let rusty = env.start(TargetKind::Rusty, &Setup::default())?;
    let servers: [(&Server, &str); 4] =
        [(&direct, "direct"), (&routed, "routed"), (&firewalled, "firewalled"), (&rusty, "direct")];
    let plain: Arc<[_]> = Arc::new([probe_request()]);
    let through: Arc<[_]> = Arc::new([routed_request()]);
    let mut step = 0usize;
    for round in 1..=o.rounds {
        for &clients in &o.clients {
            for k in 0..servers.len() {
                let (server, mode) = servers[(step + k) % servers.len()];
                let requests = if mode == "direct" { plain.clone() } else { through.clone() };
                let cfg = LoadConfig {
                    target: server.addr.into(),
                    also: Vec::new(),
                    clients,
                    in_flight: 1,
                    warmup: o.warmup,
                    measure: o.measure,
                    timeout: o.timeout,
                    threads: o.client_threads,
                    echo: false,
                    requests,
                };
                let extra = JsonLine::new().put("step", json!("hop")).put("mode", json!(mode));
                println!("{}", measure("router", env, round, server, &cfg, extra)?);
                check_alive(server)?;
            }
            step += 1;
        }
    }
    for (s, _) in servers {
        report_log(s, env);
    }
    drop((direct, routed, firewalled, rusty));

    let one = env.start(TargetKind::Trellis, &Setup { routed: 1, ..Setup::default() })?;
    let one_rss = settled_rss(&one);
    drop(one);
    let many = env.start(TargetKind::Trellis, &Setup { routed: scale, ..Setup::default() })?;
    let many_rss = settled_rss(&many);
    let (answered, last) = who_is_everyone(&many)?;
    let per_device = match (one_rss, many_rss) {
        (Some(a), Some(b)) if scale > 1 => Some((b.saturating_sub(a)) as f64 / f64::from(scale - 1)),
        _ => None,
    };
    eprintln!(
        "stress-test: router scale: {scale} devices behind one port: {answered} answered a Who-Is within {} ms \
         (last at {} ms); {} KiB resident per device",
        WHO_IS_WINDOW.as_millis(),
        last.map_or("–".into(), |l| l.as_millis().to_string()),
        per_device.map_or("–".into(), |p| format!("{p:.0}"))
    );
    let line = JsonLine::new()
        .put("scenario", json!("router"))
        .put("target", json!("trellis"))
        .put("step", json!("scale"))
        .put("devices", json!(scale))
        .put("idle_rss_kib_one", json!(one_rss))
        .put("idle_rss_kib", json!(many_rss))
        .put("rss_kib_per_device", json!(per_device.map(|p| p.round())))
        .put("who_is_window_ms", json!(WHO_IS_WINDOW.as_millis() as u64))
        .put("who_is_answered", json!(answered))
        .put("who_is_last_ms", json!(last.map(|l| (l.as_secs_f64() * 1e4).round() / 10.0)))
        .finish();
    println!("{line}");
    report_log(&many, env);
    Ok(())
}

/// A Who-Is to every station of the virtual network, sent to the router:
/// how many devices answered within the window, and when the last did.
fn who_is_everyone(server: &Server) -> anyhow::Result<(usize, Option<Duration>)> {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let who_is = [0x10, 0x08];
    let n = Npdu {
        destination: Some(NetAddress { net: ROUTED_NETWORK, mac: &[] }),
        hop_count: bacnet::npdu::DEFAULT_HOP_COUNT,
        ..Npdu::local_apdu(&who_is, false)
    };
    let mut npdu = Vec::new();
    n.encode(&mut npdu).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut datagram = Vec::new();
    Bvll::OriginalUnicastNpdu(&npdu).encode(&mut datagram).map_err(|e| anyhow::anyhow!("{e}"))?;
    let sent = Instant::now();
    socket.send_to(&datagram, server.addr)?;
    let mut seen = BTreeSet::new();
    let mut last = None;
    let mut buf = [0u8; 1500];
    while sent.elapsed() < WHO_IS_WINDOW {
        let Ok(len) = socket.recv(&mut buf) else { continue };
        let Some(i_am) = Bvll::decode(&buf[..len]).ok().and_then(|b| b.npdu()).and_then(|n| Npdu::decode(n).ok())
        else {
            continue;
        };
        if let (NpduPayload::Apdu(apdu), Some(source)) = (i_am.payload, i_am.source)
            && source.net == ROUTED_NETWORK
            && apdu.starts_with(&[0x10, 0x00])
            && seen.insert(source.mac.to_vec())
        {
            last = Some(sent.elapsed());
        }
    }
    Ok((seen.len(), last))
}

/// Resident memory once the server has idled half a second.
fn settled_rss(server: &Server) -> Option<u64> {
    std::thread::sleep(Duration::from_millis(500));
    super::objects::settled_rss(server)
}
