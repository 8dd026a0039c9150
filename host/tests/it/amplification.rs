//! Reflection over real sockets: a served device's segmented answers
//! against a requester that acknowledges blind, and a flood of such
//! requests from many source ports of one address, counted in UDP payload
//! octets both ways. The state machine's bounds are proved exhaustively in
//! the core's `amplification` tests; these check that the served device
//! applies them on the wire, charges the budget to the requester's IP
//! address, and keeps serving another address meanwhile.

use crate::peers::free_port;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::UdpSocket;
use trellis::client::DeviceAddress;
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, Limits, Server, build, serve};
use trellis_bip::BipConfig;

/// Device instance of the bulk-objects plugin.
const BULK_DEVICE: u32 = 389_002;
/// T_seg of the served device, short so the retries play out quickly.
const SEGMENT_TIMEOUT_MS: u32 = 150;

/// A ReadProperty of the Device's Object_List (5,001 objects: ~25 KB, 18
/// segments of 1,476-octet APDUs), accepting more than 64 segments: 17
/// octets of UDP payload.
fn read_object_list(invoke_id: u8) -> Vec<u8> {
    let device = (8u32 << 22) | BULK_DEVICE;
    let mut d = vec![0x81, 0x0A, 0, 17, 0x01, 0x04, 0x02, 0x75, invoke_id, 0x0C, 0x0C];
    d.extend_from_slice(&device.to_be_bytes());
    d.extend_from_slice(&[0x19, 0x4C]);
    assert_eq!(d.len(), 17);
    d
}

/// A client's Segment-ACK: 10 octets.
fn segment_ack(invoke_id: u8, sequence_number: u8, window: u8) -> Vec<u8> {
    vec![0x81, 0x0A, 0, 10, 0x01, 0x00, 0x40, invoke_id, sequence_number, window]
}

async fn serve_bulk(limits: Limits) -> (Arc<Server<PluginModel>>, SocketAddrV4) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("amplify-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bulk.toml"), "count = 5000\nchanges_per_tick = 0\n").unwrap();
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("segmentation-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let mut config = PluginConfig::new("bulk");
    config.data_dir = Some(dir);
    config.deadline = Duration::from_secs(2);
    let model = PluginModel::load(&engine, Path::new(builtin::BULK_OBJECTS_PATH), config).expect("load bulk-objects");
    let device = DeviceConfig { limits, segment_timeout_ms: SEGMENT_TIMEOUT_MS, ..DeviceConfig::default() };
    let server = Arc::new(build(model, device, 999).await.unwrap());
    let port = free_port();
    tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    (server, SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// Octets and datagrams received on `socket` until it has been quiet for
/// `quiet`, and how many of them were Aborts.
async fn drain(socket: &UdpSocket, quiet: Duration) -> (usize, usize, usize) {
    let (mut octets, mut datagrams, mut aborts) = (0, 0, 0);
    let mut buf = [0u8; 2048];
    while let Ok(Ok(n)) = tokio::time::timeout(quiet, socket.recv(&mut buf)).await {
        octets += n;
        datagrams += 1;
        aborts += usize::from(n > 6 && buf[6] >> 4 == 7);
    }
    (octets, datagrams, aborts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_blind_segment_ack_naming_window_127_draws_the_proposed_window_and_its_retries() {
    let _timing = crate::peers::shared().await;
    let (_server, device) = serve_bulk(Limits::default()).await;
    let attacker = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    attacker.connect(device).await.unwrap();
    let request = read_object_list(1);
    let ack = segment_ack(1, 0, 127);
    attacker.send(&request).await.unwrap();
    // Segment 0 arrives; the attacker acknowledges it blind, claiming the
    // largest window.
    let mut buf = [0u8; 2048];
    let first = tokio::time::timeout(Duration::from_secs(10), attacker.recv(&mut buf)).await.unwrap().unwrap();
    attacker.send(&ack).await.unwrap();
    let (rest, datagrams, _) = drain(&attacker, Duration::from_millis(SEGMENT_TIMEOUT_MS as u64 * 4)).await;
    let octets_in = request.len() + ack.len();
    let octets_out = first + rest;
    let ratio = octets_out as f64 / octets_in as f64;
    println!(
        "one blind Segment-ACK: {octets_in} octets in, {octets_out} out in {} datagrams, ratio {ratio:.0}",
        datagrams + 1
    );
    // Segment 0 up to 4 times, then the window of 16 (not 127) and its 3
    // resends: at most 1 + 3 + 16 × 4 segment datagrams.
    let total = datagrams + 1;
    assert!(total <= 4 + 16 * 4, "{total} datagrams");
    assert!(datagrams >= 16, "the clamped window did come: {datagrams}");
    let bound = ((4 + 16 * 4) * (1476 + 6)) as f64 / octets_in as f64;
    assert!(ratio <= bound, "ratio {ratio:.0} over the bound {bound:.0}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_many_ports_of_one_address_is_held_to_its_budget_while_another_address_is_served() {
    let _timing = crate::peers::shared().await;
    // A small budget so the test is quick: 30 KB/s, 30 KB at once.
    let limits = Limits { answer_octets_per_second: 30_000, answer_burst_octets: 30_000, ..Limits::default() };
    let (server, device) = serve_bulk(limits).await;
    let started = std::time::Instant::now();
    let mut attackers = Vec::new();
    for _ in 0..20 {
        let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.connect(device).await.unwrap();
        attackers.push(Arc::new(s));
    }
    let mut octets_in = 0;
    for round in 0..4u8 {
        for s in &attackers {
            let request = read_object_list(round);
            s.send(&request).await.unwrap();
            octets_in += request.len();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        for s in &attackers {
            let ack = segment_ack(round, 0, 127);
            s.send(&ack).await.unwrap();
            octets_in += ack.len();
        }
    }
    let drains: Vec<_> = attackers
        .iter()
        .map(|s| {
            let s = s.clone();
            tokio::spawn(async move { drain(&s, Duration::from_millis(SEGMENT_TIMEOUT_MS as u64 * 5)).await })
        })
        .collect();
    let (mut octets_out, mut aborts) = (0, 0);
    for d in drains {
        let (o, _, a) = d.await.unwrap();
        octets_out += o;
        aborts += a;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let ratio = octets_out as f64 / octets_in as f64;
    let refused = server.stats().budget_refused.load(Ordering::Relaxed);
    println!(
        "flood from 20 ports: {octets_in} octets in, {octets_out} out over {elapsed:.1} s, ratio {ratio:.0}, \
         {aborts} Aborts, {refused} refusals counted"
    );
    // Burst + rate × time, one window of overdraft, the Aborts.
    let bound = 30_000.0 + 30_000.0 * elapsed + 16.0 * 1482.0 + aborts as f64 * 10.0;
    assert!((octets_out as f64) < bound * 1482.0 / 1476.0, "{octets_out} octets out, over the budget's {bound:.0}");
    assert!(refused > 0 && aborts > 0, "refusals are counted and answered with Abort out-of-resources");

    // Another address, meanwhile, reads the whole list.
    let client = trellis::client::Client::bind(trellis::client::ClientConfig {
        bip: BipConfig::new(Ipv4Addr::new(127, 0, 0, 2), 0),
        tsm: bacnet::tsm::TsmConfig::default(),
        foreign_device: None,
    })
    .await
    .unwrap();
    let list = client
        .read_property(
            &DeviceAddress::direct(device),
            bacnet::ObjectIdentifier::new(bacnet::ObjectType::DEVICE, BULK_DEVICE).unwrap(),
            bacnet::enums::PropertyIdentifier::OBJECT_LIST,
            None,
        )
        .await
        .expect("127.0.0.2 has a budget of its own");
    assert_eq!(list.0.len(), 5001);
}
