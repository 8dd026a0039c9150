//! The MS/TP wire-limit benchmark: two of our stations on a simulated
//! RS-485 line paced in real time (10 bits per octet), one serving a device
//! whose object model runs in the `bulk-objects` WASM plugin, the other our
//! client keeping a few ReadProperty requests queued. The achieved request
//! rate is divided by the most the line could carry for the same frames.
//!
//! **The wire limit.** With two masters and Max_Info_Frames N, one token
//! rotation carries N request/reply pairs and two Token frames, and every
//! frame is preceded by the standard's minimum turnaround (Tturnaround, 40
//! bit times): `(N × (request + reply) + 2 × token) × 10 + (2N + 2) × 40`
//! bit times for N requests. Frame lengths are the ones seen on the line.
//! Nothing else belongs on the line in the steady state: Max_Master is the
//! top address in use, so no maintenance Poll For Master goes to an empty
//! address (the brief's "set Max_Master to the real top address").
//!
//! **The achieved rate** is read off the line's own log: replies counted
//! between the first and the last reply of the measured window, on the
//! line's clock, so neither the client's scheduling nor the warm-up count.
//!
//! **Routed** (`MstpStep::routed`, JSON scenario `mstp-routed`): the
//! requesting station is Trellis's router instead — its MS/TP port on the
//! line, a B/IP port on loopback — and the client reads over B/IP with
//! DNET/DADR, so every request crosses the router onto the trunk (SNET/SADR
//! added: a longer request frame) and every reply back (DNET/DADR: a longer
//! reply frame). The wire limit is computed for the frames the line carried.
//!
//! Must never: assert on speed (this is a measurement), or run a station
//! anywhere but on the in-process simulated line.

use crate::json_line::JsonLine;
use crate::scenario::round_to;
use anyhow::{Context, bail};
use bacnet::apdu::MaxApdu;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::mstp::{FrameType, Micros, bit_times};
use bacnet::tsm::TsmConfig;
use bacnet::{ObjectIdentifier, ObjectType};
use serde_json::{Value as Json, json};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use trellis::client::{Client, ClientConfig, DeviceAddress, RemoteStation};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::network_port::RoutingView;
use trellis::server::{
    DeviceConfig, RouterBipPort, RouterMstpPort, RouterNode, bind, bind_mstp, build, serve_mstp, serve_router,
};
use trellis_bip::BipConfig;
use trellis_mstp::MstpConfig;
use trellis_mstp::sim::timing::{Percentiles, Timings};
use trellis_mstp::sim::{Line, LineConfig, LineFrame, Noise};

/// The baud rates Clause 9 names (9.2.3) and rusty-bacnet's validator
/// accepts.
pub const CLAUSE_9_BAUDS: [u32; 6] = [9_600, 19_200, 38_400, 57_600, 76_800, 115_200];

/// The served station's MAC and the client's: adjacent, Max_Master 1.
const SERVER_MAC: u8 = 1;
const CLIENT_MAC: u8 = 0;

/// Analog Inputs in the served device: its Object_List (device + 90
/// inputs, 91 identifiers) is a 467-octet ReadProperty-ACK, the largest
/// read that fits a standard MS/TP frame at Max_APDU 480.
const OBJECTS: u32 = 90;

/// What each request reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Present_Value of analog-input,1: a REAL, the brief's 29-octet reply
    /// frame.
    Small,
    /// The device's Object_List: a reply filling a standard frame.
    Large,
}

impl Reply {
    /// The name used on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Reply::Small => "small",
            Reply::Large => "large",
        }
    }

    /// Octets of one exchange on the line (two tokens, the request, the
    /// reply), roughly: how long a step must be to hold enough of them.
    pub fn exchange_octets(self) -> u64 {
        match self {
            Reply::Small => 68,
            Reply::Large => 520,
        }
    }

    fn target(self) -> (ObjectIdentifier, P) {
        match self {
            Reply::Small => (ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).expect("valid"), P::PRESENT_VALUE),
            Reply::Large => (
                ObjectIdentifier::new(ObjectType::DEVICE, ObjectIdentifier::MAX_INSTANCE).expect("valid"),
                P::OBJECT_LIST,
            ),
        }
    }
}

/// One step's settings.
#[derive(Debug, Clone)]
pub struct MstpStep {
    /// Line speed.
    pub baud: u32,
    /// What each request reads.
    pub reply: Reply,
    /// Max_Info_Frames of both stations.
    pub max_info_frames: u8,
    /// Requests the client keeps queued (≥ Max_Info_Frames so that every
    /// token finds one waiting).
    pub in_flight: usize,
    /// Measured for this long (line time), after `warmup`.
    pub duration: Duration,
    /// Ring formation and first requests, not measured.
    pub warmup: Duration,
    /// Where the plugin's data directory and cache go.
    pub work_dir: PathBuf,
    /// Write the line's capture (pcap, linktype 165) here.
    pub capture: Option<PathBuf>,
    /// The requests come over B/IP through Trellis's router, whose MS/TP
    /// port is the requesting station.
    pub routed: bool,
    /// Bit errors on the line (0: clean): each of an octet's 10 bits is hit
    /// with this probability; a hit data bit arrives flipped (the frame
    /// then fails its CRC), a hit start or stop bit loses the octet (a
    /// framing error). Seeded: the same run damages the same octets.
    pub bit_error_rate: f64,
}

impl MstpStep {
    /// The line's noise for [`MstpStep::bit_error_rate`].
    fn noise(&self) -> Noise {
        let clean = |bits: i32| (1.0 - self.bit_error_rate).powi(bits);
        Noise { flip: 1.0 - clean(8), drop: 1.0 - clean(2), seed: 41 }
    }

    /// A noisy line's requests are timed out after 1 s and sent again up to
    /// 3 times; a clean line's wait 10 s and are never repeated.
    fn timeout_and_retries(&self) -> (Duration, u8) {
        if self.bit_error_rate > 0.0 { (Duration::from_secs(1), 3) } else { (Duration::from_secs(10), 0) }
    }
}

/// Run one step; its JSON line.
pub fn run_step(step: &MstpStep) -> anyhow::Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(run(step))
}

async fn run(step: &MstpStep) -> anyhow::Result<String> {
    let line = Line::new(LineConfig { noise: step.noise(), ..LineConfig::new(step.baud) });
    if let Some(path) = &step.capture {
        line.capture_file(path).with_context(|| format!("capture to {}", path.display()))?;
    }
    let server =
        tokio::spawn(serve_mstp(port(&line, SERVER_MAC, step), Arc::new(served_device(&step.work_dir).await?)));
    let (apdu_timeout, retries) = step.timeout_and_retries();
    let tsm = TsmConfig {
        apdu_timeout,
        retries,
        max_apdu_accepted: MaxApdu::UP_TO_480,
        max_in_flight_per_peer: step.in_flight.max(1),
        ..TsmConfig::default()
    };
    let (client, device, router) = if step.routed {
        // The router's MS/TP port takes the client's place on the line.
        let trunk = bind_mstp(port(&line, CLIENT_MAC, step)).context("open the router's MS/TP port")?;
        let ip = bind(&BipConfig::new(Ipv4Addr::LOCALHOST, 0)).context("bind the router's B/IP port")?;
        let router_addr = ip.local_addr();
        let node = RouterNode::<PluginModel> {
            ports: vec![RouterBipPort { port: ip, network: 1, device: None, routes: RoutingView::default() }],
            mstp_ports: vec![RouterMstpPort { port: trunk, network: 2, routes: RoutingView::default() }],
            bip6_ports: Vec::new(),
            ethernet_ports: Vec::new(),
            sc_ports: Vec::new(),
            virtual_networks: Vec::new(),
            counters: Default::default(),
            policy: None,
        };
        let router = tokio::spawn(serve_router(node));
        let config = ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), tsm, ..ClientConfig::default() };
        let client = Arc::new(Client::bind(config).await?);
        let device =
            DeviceAddress { link: router_addr.into(), remote: Some(RemoteStation { net: 2, mac: vec![SERVER_MAC] }) };
        (client, device, Some(router))
    } else {
        let client = Arc::new(Client::bind_mstp(port(&line, CLIENT_MAC, step), tsm).await?);
        (client, DeviceAddress::mstp(SERVER_MAC), None)
    };

    // Readers keep `in_flight` requests queued until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let (object, property) = step.reply.target();
    let mut readers = Vec::new();
    for _ in 0..step.in_flight.max(1) {
        let (client, stop, device) = (client.clone(), stop.clone(), device.clone());
        let (failures, answered) = (failures.clone(), answered.clone());
        readers.push(tokio::spawn(async move {
            let mut first_error = None;
            while !stop.load(Ordering::Relaxed) {
                match client.read_property(&device, object, property, None).await {
                    Ok(_) => answered.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        first_error.get_or_insert(e.to_string());
                        failures.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
            first_error
        }));
    }

    tokio::time::sleep(step.warmup).await;
    let _ = line.take_frames();
    let (failures_before, answered_before) = (failures.load(Ordering::Relaxed), answered.load(Ordering::Relaxed));
    let stats_before = line.stats();
    tokio::time::sleep(step.duration).await;
    let frames = line.take_frames();
    let failed = failures.load(Ordering::Relaxed) - failures_before;
    let answered = answered.load(Ordering::Relaxed) - answered_before;
    stop.store(true, Ordering::Relaxed);
    let mut first_error = None;
    for r in readers {
        if let Ok(Some(e)) = tokio::time::timeout(Duration::from_secs(20), r).await.unwrap_or(Ok(None)) {
            first_error.get_or_insert(e);
        }
    }
    drop(client);
    if let Some(router) = router {
        router.abort();
        let _ = router.await;
    }
    server.abort();
    let _ = server.await;
    line.flush()?;

    let measured = measure(&frames, step)?;
    let timings = Timings::from_frames(&frames);
    let stats = line.stats();
    let limit = measured.limit(step);
    // Requests the client finished in the window, against those the line
    // carried: the difference is what the TSM sent again (give or take
    // the few in flight at the window's edges).
    let retransmissions = measured.requests.saturating_sub(answered + failed);
    let line = JsonLine::new()
        .put("scenario", json!(if step.routed { "mstp-routed" } else { "mstp" }))
        .put("reply", json!(step.reply.name()))
        .put("baud", json!(step.baud))
        .put("max_info_frames", json!(step.max_info_frames))
        .put("in_flight", json!(step.in_flight))
        .put("line_secs", json!(measured.span as f64 / 1e6))
        .put("replies", json!(measured.replies))
        .put("rate_per_s", json!(round_to(measured.rate(), 1000.0)))
        .put("limit_per_s", json!(round_to(limit, 1000.0)))
        .put("wire_fraction", json!(round_to(measured.rate() / limit, 10_000.0)))
        .put("frame_octets", json!({ "token": measured.token, "request": measured.request, "reply": measured.reply }))
        .put("other_frames", json!(measured.other))
        .put("failures", json!(failed))
        .put("bit_error_rate", json!(step.bit_error_rate))
        .put("answered", json!(answered))
        .put("requests_on_line", json!(measured.requests))
        .put("retransmissions", json!(retransmissions))
        .put("octets_flipped", json!(stats.flipped - stats_before.flipped))
        .put("octets_lost_to_noise", json!(stats.dropped - stats_before.dropped))
        .put("first_error", json!(first_error))
        .put("collisions", json!(stats.collisions))
        .put("tturnaround_min_us", json!(bit_times(40, step.baud)))
        .put("turnaround_us", percentiles(&timings.turnaround))
        .put("reply_delay_us", percentiles(&timings.reply_delay))
        .put("usage_delay_us", percentiles(&timings.usage_delay))
        .finish();
    Ok(line)
}

/// The served device: `bulk-objects` with [`OBJECTS`] Analog Inputs that
/// do not change.
async fn served_device(work_dir: &Path) -> anyhow::Result<trellis::server::Server<PluginModel>> {
    let data = work_dir.join("mstp-bulk");
    std::fs::create_dir_all(&data).with_context(|| format!("create {}", data.display()))?;
    std::fs::write(data.join("bulk.toml"), format!("count = {OBJECTS}\nchanges_per_tick = 0\n"))?;
    let engine =
        PluginEngine::new(&EngineConfig { cache_dir: Some(work_dir.join("cache")), ..EngineConfig::default() })
            .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    let mut config = PluginConfig::new("bulk");
    config.data_dir = Some(data);
    let model = PluginModel::load(&engine, Path::new(builtin::BULK_OBJECTS_PATH), config)
        .context("load the bulk-objects plugin")?;
    build(model, DeviceConfig::default(), 999).await
}

fn port(line: &Line, mac: u8, step: &MstpStep) -> MstpConfig {
    let mut config = MstpConfig::sim(line, mac);
    // Max_Master is the top address in use: no poll to an empty address.
    const _: () = assert!(SERVER_MAC > CLIENT_MAC);
    config.node.max_master = SERVER_MAC;
    config.node.max_info_frames = step.max_info_frames;
    config
}

fn percentiles(sample: &[Micros]) -> Json {
    match Percentiles::of(sample) {
        Some(p) => json!({ "n": p.count, "min": p.min, "p50": p.p50, "p90": p.p90, "p99": p.p99, "max": p.max }),
        None => Json::Null,
    }
}

/// What the line carried in the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Measured {
    /// Replies from the first reply's start to the last's.
    replies: u64,
    /// Line time between those two starts, µs.
    span: Micros,
    /// Octets of a Token frame, a request frame, a reply frame (the most
    /// common lengths seen).
    token: usize,
    request: usize,
    reply: usize,
    /// Frames other than tokens, requests and replies (Poll For Master,
    /// Reply Postponed, broadcasts…).
    other: u64,
    /// Request frames the client's station sent.
    requests: u64,
}

impl Measured {
    /// Replies per second achieved.
    fn rate(&self) -> f64 {
        (self.replies.saturating_sub(1)) as f64 * 1e6 / self.span.max(1) as f64
    }

    /// Replies per second the line could carry for the same frames.
    fn limit(&self, step: &MstpStep) -> f64 {
        let n = u64::from(step.max_info_frames.max(1));
        let octets = n * (self.request + self.reply) as u64 + 2 * self.token as u64;
        let rotation = bit_times(10 * octets + (2 * n + 2) * 40, step.baud);
        n as f64 * 1e6 / rotation as f64
    }
}

fn measure(frames: &[LineFrame], step: &MstpStep) -> anyhow::Result<Measured> {
    let mut tokens = Vec::new();
    let mut requests = Vec::new();
    let mut replies = Vec::new();
    let mut other = 0;
    for f in frames {
        match f.header() {
            Some(h) if h.frame_type == FrameType::TOKEN => tokens.push(f.sent.len()),
            Some(h) if h.frame_type == FrameType::BACNET_DATA_EXPECTING_REPLY && h.source == CLIENT_MAC => {
                requests.push(f.sent.len());
            }
            Some(h) if h.frame_type == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY && h.source == SERVER_MAC => {
                replies.push((f.start, f.sent.len()));
            }
            _ => other += 1,
        }
    }
    let (Some(first), Some(last)) = (replies.first(), replies.last()) else {
        bail!("no reply on the line at {} baud in {:?}", step.baud, step.duration);
    };
    Ok(Measured {
        replies: replies.len() as u64,
        span: last.0 - first.0,
        token: mode(tokens.iter().copied()).unwrap_or(8),
        request: mode(requests.iter().copied()).unwrap_or(0),
        reply: mode(replies.iter().map(|r| r.1)).unwrap_or(0),
        other,
        requests: requests.len() as u64,
    })
}

/// The most common value.
fn mode(values: impl Iterator<Item = usize>) -> Option<usize> {
    let mut counts = std::collections::BTreeMap::new();
    for v in values {
        *counts.entry(v).or_insert(0u64) += 1;
    }
    counts.into_iter().max_by_key(|&(_, n)| n).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The brief's 2-master table (protocol-notes §4.3): 68 octets and 4
    /// turnarounds per ReadProperty, 137.1/s at 115,200 and 11.4/s at 9,600.
    #[test]
    fn the_wire_limit_matches_the_briefs_two_master_cycle() {
        let m = Measured { replies: 0, span: 0, token: 8, request: 23, reply: 29, other: 0, requests: 0 };
        let step = |baud| MstpStep {
            baud,
            reply: Reply::Small,
            max_info_frames: 1,
            in_flight: 1,
            duration: Duration::ZERO,
            warmup: Duration::ZERO,
            work_dir: PathBuf::new(),
            capture: None,
            routed: false,
            bit_error_rate: 0.0,
        };
        assert!((m.limit(&step(115_200)) - 137.1).abs() < 0.1, "{}", m.limit(&step(115_200)));
        assert!((m.limit(&step(9_600)) - 11.43).abs() < 0.01, "{}", m.limit(&step(9_600)));
    }

    #[test]
    fn a_bit_error_rate_hits_data_bits_as_flips_and_framing_bits_as_losses() {
        let step = MstpStep {
            baud: 38_400,
            reply: Reply::Small,
            max_info_frames: 1,
            in_flight: 1,
            duration: Duration::ZERO,
            warmup: Duration::ZERO,
            work_dir: PathBuf::new(),
            capture: None,
            routed: false,
            bit_error_rate: 1e-3,
        };
        let n = step.noise();
        assert!((n.flip - 7.97e-3).abs() < 1e-5 && (n.drop - 2.0e-3).abs() < 1e-5, "{n:?}");
        assert_eq!(MstpStep { bit_error_rate: 0.0, ..step }.noise(), Noise { flip: 0.0, drop: 0.0, seed: 41 });
    }

    #[test]
    fn mode_picks_the_most_common_length() {
        assert_eq!(mode([8, 23, 8, 29, 8].into_iter()), Some(8));
        assert_eq!(mode(std::iter::empty()), None);
    }
}
