//! The Criterion suites (`cargo bench -p trellis-benches`), one binary:
//!
//! - `codec`: encode and decode of the datagram layers and the common
//!   services, per operation and per byte (Criterion's throughput).
//! - `bip`: round trips over loopback to a gateway served in this process
//!   (the bulk-objects WASM plugin, the B/IP endpoint on two tokio workers):
//!   ReadProperty, ReadPropertyMultiple of 10 and of 256 values, WriteProperty
//!   — and a bare UDP echo in the same group, the physical limit of a
//!   loopback round trip here. At the end every round trip is printed as a
//!   ratio to the echo.
//! - `plugin`: the plugin boundary without the network — one crossing (one
//!   property), a 256-property crossing, and a hot swap (load from the
//!   in-memory component memo, state handed across).
//! - `routing`: a routed ReadProperty through the core's router alone, with
//!   the `firewall` routing-policy plugin asked about it, and with a policy
//!   that decides nothing (`misbehave-policy` untriggered): the policy
//!   crossing is the difference to the router alone, and the do-nothing
//!   policy separates the crossing's own cost from the firewall's rules.
//!
//! ReadProperty, RPM-10, WriteProperty and the echo use one blocking std
//! socket and pre-encoded datagrams (only the invoke ID changes), so the
//! client adds the least it can. RPM-256's answer (about 4 KB) needs
//! segmentation, so it goes through our `Client`, which reassembles it.

use bacnet::apdu::{Apdu, MaxApdu, MaxSegments};
use bacnet::bvll::Bvll;
use bacnet::enums::{ConfirmedServiceChoice, PropertyIdentifier as P, Segmentation};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::services::{
    IAm, PropertyReference, ReadAccessResult, ReadAccessSpecification, ReadPropertyAck, ReadPropertyMultipleAck,
    ReadPropertyMultipleRequest, ReadPropertyRequest, ReadResult, ServiceCodec, WhoIs, WritePropertyRequest,
};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use trellis::client::{Client, DeviceAddress};
use trellis::model::{ObjectModel, PropertyTarget};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, PluginSource, builtin};
use trellis::server::{DeviceConfig, build, serve};
use trellis_benches::workload::client_config;

fn ai(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_INPUT, instance).expect("a valid instance")
}

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).expect("a valid instance")
}

fn real(v: f32) -> AnyValue {
    AnyValue::primitive(Value::Real(v))
}

// ---- codec ----

/// Encode and decode one service body, per operation and per byte.
fn service<S: ServiceCodec>(c: &mut Criterion, name: &str, s: &S) {
    let bytes = s.to_vec();
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function(BenchmarkId::new("encode", name), |b| b.iter(|| black_box(s).to_vec()));
    g.bench_function(BenchmarkId::new("decode", name), |b| b.iter(|| S::decode(black_box(&bytes)).is_ok()));
    g.finish();
}

fn codec(c: &mut Criterion) {
    let rp = ReadPropertyRequest { object: ai(1), property: P::PRESENT_VALUE, array_index: None };
    service(c, "read-property-request", &rp);
    let ack = ReadPropertyAck { object: ai(1), property: P::PRESENT_VALUE, array_index: None, value: real(21.5) };
    service(c, "read-property-ack", &ack);
    let pv = vec![PropertyReference::new(P::PRESENT_VALUE)];
    let rpm = ReadPropertyMultipleRequest(
        (1..=10).map(|i| ReadAccessSpecification { object: ai(i), properties: pv.clone() }).collect(),
    );
    service(c, "rpm-10-request", &rpm);
    let rpm_ack = ReadPropertyMultipleAck(
        (1..=10)
            .map(|i| ReadAccessResult {
                object: ai(i),
                results: vec![ReadResult {
                    property: P::PRESENT_VALUE,
                    array_index: None,
                    outcome: Ok(real(i as f32)),
                }],
            })
            .collect(),
    );
    service(c, "rpm-10-ack", &rpm_ack);
    let wp = WritePropertyRequest {
        object: av(1),
        property: P::PRESENT_VALUE,
        array_index: None,
        value: real(22.0),
        priority: Some(8),
    };
    service(c, "write-property-request", &wp);
    let i_am = IAm {
        device: ObjectIdentifier::new(ObjectType::DEVICE, 389_001).expect("a valid instance"),
        max_apdu_length_accepted: 1476,
        segmentation_supported: Segmentation::NO_SEGMENTATION,
        vendor_id: 999,
    };
    service(c, "i-am", &i_am);
    service(c, "who-is", &WhoIs { range: Some((0, 4_194_303)) });

    // The datagram layers of a ReadProperty request: BVLL, NPDU, APDU.
    let datagram = trellis_benches::request::encode(ai(1), P::PRESENT_VALUE, 7).expect("encodes");
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(datagram.len() as u64));
    g.bench_function(BenchmarkId::new("decode", "datagram-bvll-npdu-apdu"), |b| {
        b.iter(|| {
            let bvll = Bvll::decode(black_box(&datagram)).ok()?;
            let npdu = Npdu::decode(bvll.npdu()?).ok()?;
            let NpduPayload::Apdu(apdu) = npdu.payload else { return None };
            Apdu::decode(apdu).ok().map(|a| matches!(a, Apdu::ConfirmedRequest(_)))
        })
    });
    g.bench_function(BenchmarkId::new("encode", "datagram-bvll-npdu-apdu"), |b| {
        b.iter(|| trellis_benches::request::encode(black_box(ai(1)), P::PRESENT_VALUE, 7))
    });
    g.finish();
}

// ---- B/IP round trips ----

/// A gateway in this process: bulk-objects with 256 Analog Inputs and one
/// commandable Analog Value, its RPM bounds raised for the 256-value read.
struct Gateway {
    addr: SocketAddrV4,
    _runtime: tokio::runtime::Runtime,
}

fn work_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trellis-criterion-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

fn engine(dir: &Path) -> PluginEngine {
    PluginEngine::new(&EngineConfig { cache_dir: Some(dir.join("cache")), ..EngineConfig::default() })
        .expect("the WebAssembly engine starts")
}

fn bulk_model(engine: &PluginEngine, dir: &Path) -> PluginModel {
    let data = dir.join("bulk");
    std::fs::create_dir_all(&data).expect("a data directory");
    std::fs::write(data.join("bulk.toml"), "count = 256\nvalues = 1\nchanges_per_tick = 0\n").expect("bulk.toml");
    let mut config = PluginConfig::new("bulk");
    config.data_dir = Some(data);
    PluginModel::load(engine, Path::new(builtin::BULK_OBJECTS_PATH), config).expect("bulk-objects loads")
}

fn gateway(dir: &Path) -> Gateway {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let model = bulk_model(&engine(dir), dir);
    let mut device = DeviceConfig::default();
    device.limits.max_rpm_results = 1024;
    device.limits.max_rpm_octets = 64 * 1024;
    let server = runtime.block_on(build(model, device, 999)).expect("the device builds");
    let port = trellis_benches::target::free_port().expect("a free port");
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    runtime.spawn(serve(trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, port), Arc::new(server)));
    Gateway { addr, _runtime: runtime }
}

/// A confirmed request datagram whose invoke ID is patched per send.
struct Request {
    datagram: Vec<u8>,
    invoke_at: usize,
}

impl Request {
    fn new(service: ConfirmedServiceChoice, body: &[u8]) -> Request {
        let mut apdu = Vec::new();
        Apdu::ConfirmedRequest(bacnet::apdu::ConfirmedRequest {
            segment: None,
            segmented_response_accepted: false,
            max_segments: MaxSegments::UNSPECIFIED,
            max_apdu: MaxApdu::UP_TO_1476,
            invoke_id: 0,
            service,
            body,
        })
        .encode(&mut apdu);
        let mut npdu = Vec::new();
        Npdu::local_apdu(&apdu, true).encode(&mut npdu).expect("an NPDU encodes");
        let mut datagram = Vec::new();
        Bvll::OriginalUnicastNpdu(&npdu).encode(&mut datagram).expect("a BVLL encodes");
        let invoke_at = datagram.len() - apdu.len() + 2;
        Request { datagram, invoke_at }
    }
}

/// Send `r` and wait for its answer: a ComplexACK or a SimpleACK with its
/// invoke ID (any datagram at all from the echo, when `echo`).
fn round_trip(socket: &UdpSocket, r: &mut Request, id: &mut u8, buf: &mut [u8], echo: bool) {
    *id = id.wrapping_add(1);
    r.datagram[r.invoke_at] = *id;
    socket.send(&r.datagram).expect("send");
    loop {
        let n = socket.recv(buf).expect("an answer within 5 s");
        if echo {
            return;
        }
        let apdu =
            Bvll::decode(&buf[..n]).ok().and_then(|b| Npdu::decode(b.npdu()?).ok()).and_then(|n| match n.payload {
                NpduPayload::Apdu(a) => Apdu::decode(a).ok(),
                _ => None,
            });
        match apdu {
            Some(Apdu::ComplexAck(a)) if a.invoke_id == *id => return,
            Some(Apdu::SimpleAck { invoke_id, .. }) if invoke_id == *id => return,
            Some(other) if other.invoke_id() == Some(*id) => panic!("the gateway answered {other:?}"),
            _ => {}
        }
    }
}

fn bip(c: &mut Criterion) {
    let dir = work_dir();
    let gw = gateway(&dir);
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a client socket");
    socket.set_read_timeout(Some(Duration::from_secs(5))).expect("a timeout");
    let mut buf = vec![0u8; 2048];
    let mut id = 0u8;

    let rp = ReadPropertyRequest { object: ai(1), property: P::PRESENT_VALUE, array_index: None }.to_vec();
    let mut read = Request::new(ConfirmedServiceChoice::READ_PROPERTY, &rp);
    let pv = vec![PropertyReference::new(P::PRESENT_VALUE)];
    let rpm10 = ReadPropertyMultipleRequest(
        (1..=10).map(|i| ReadAccessSpecification { object: ai(i), properties: pv.clone() }).collect(),
    )
    .to_vec();
    let mut read10 = Request::new(ConfirmedServiceChoice::READ_PROPERTY_MULTIPLE, &rpm10);
    let wp = WritePropertyRequest {
        object: av(1),
        property: P::PRESENT_VALUE,
        array_index: None,
        value: real(22.0),
        priority: Some(8),
    }
    .to_vec();
    let mut write = Request::new(ConfirmedServiceChoice::WRITE_PROPERTY, &wp);

    // The echo: one thread, blocking std sockets, answering a datagram of
    // the ReadProperty request's size.
    let echo = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("an echo socket");
    let echo_addr = echo.local_addr().expect("its address");
    std::thread::spawn(move || trellis_benches::echo::serve(&echo));
    let echo_client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a client socket");
    echo_client.connect(echo_addr).expect("connect");
    echo_client.set_read_timeout(Some(Duration::from_secs(5))).expect("a timeout");

    socket.connect(gw.addr).expect("connect");
    // The gateway is ready once it answers.
    for _ in 0..100 {
        read.datagram[read.invoke_at] = 0;
        let _ = socket.send(&read.datagram);
        if socket.recv(&mut buf).is_ok() {
            break;
        }
    }

    // RPM of 256 values through our client (the answer is segmented).
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let client = client_rt.block_on(Client::bind(client_config(Duration::from_secs(5), 1))).expect("a client");
    let device = DeviceAddress::direct(gw.addr);
    let specs: Vec<_> = (1..=256).map(|i| ReadAccessSpecification { object: ai(i), properties: pv.clone() }).collect();

    let mut g = c.benchmark_group("bip");
    g.bench_function("udp-echo", |b| b.iter(|| round_trip(&echo_client, &mut read, &mut id, &mut buf, true)));
    g.bench_function("read-property", |b| b.iter(|| round_trip(&socket, &mut read, &mut id, &mut buf, false)));
    g.bench_function("rpm-10", |b| b.iter(|| round_trip(&socket, &mut read10, &mut id, &mut buf, false)));
    g.bench_function("write-property", |b| b.iter(|| round_trip(&socket, &mut write, &mut id, &mut buf, false)));
    g.bench_function("rpm-256-segmented-via-client", |b| {
        b.iter(|| {
            let results = client_rt.block_on(client.read_property_multiple(&device, specs.clone()));
            assert_eq!(results.expect("answered").len(), 256);
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- the plugin boundary ----

fn plugin(c: &mut Criterion) {
    let dir = work_dir();
    let engine = engine(&dir);
    let model = bulk_model(&engine, &dir);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let one = vec![PropertyTarget { object: ai(1), property: P::PRESENT_VALUE, array_index: None }];
    let many: Vec<_> =
        (1..=256).map(|i| PropertyTarget { object: ai(i), property: P::PRESENT_VALUE, array_index: None }).collect();
    let mut g = c.benchmark_group("plugin");
    g.bench_function("read-1-property", |b| b.iter(|| rt.block_on(model.read(&one)).expect("read")));
    g.throughput(Throughput::Elements(256));
    g.bench_function("read-256-properties", |b| b.iter(|| rt.block_on(model.read(&many)).expect("read")));
    g.finish();

    // A swap to the demo building and back, each from the in-memory memo
    // after the first load: load + hand-over, as `trellis plugin swap` does.
    let demo = PluginModel::load(&engine, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new("demo"))
        .expect("demo-building loads");
    let mut g = c.benchmark_group("plugin");
    g.sample_size(20);
    g.bench_function("swap-load-and-hand-over", |b| {
        b.iter(|| {
            let next =
                PluginModel::load(&engine, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new("demo+"))
                    .expect("loads");
            rt.block_on(demo.swap(&next)).expect("swaps")
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- routing policy ----

/// The firewall rules of `examples/router-policy.toml` (deny by default;
/// a read is forwarded by the fourth rule).
const FIREWALL_SETTINGS: &str = r#"
default = "reject"
default_reject_reason = "security-error"
[[rule]]
name = "no-device-control"
action = "drop"
services = ["device-communication-control", "reinitialize-device"]
[[rule]]
name = "answers"
action = "forward"
kinds = ["simple-ack", "complex-ack", "segment-ack", "error", "reject", "abort"]
[[rule]]
name = "bms-setpoints"
action = "forward"
arrival_networks = [1]
departure_networks = [2]
sources = ["1:7f000001bac1"]
services = ["write-property"]
objects = ["analog-value,1"]
[[rule]]
name = "reads-cov-discovery"
action = "forward"
services = ["read-property", "read-property-multiple", "read-range", "subscribe-cov", "subscribe-cov-property",
            "confirmed-cov-notification", "unconfirmed-cov-notification", "who-is", "i-am", "who-has", "i-have"]
[[rule]]
name = "network-layer"
action = "forward"
kinds = ["network-message"]
"#;

/// The routing-policy crossing: the router's hop (handle the NPDU, take
/// what it sends) for a routed ReadProperty without a policy, with the
/// firewall (four rules tried) and with a policy that only answers
/// "forward".
fn routing(c: &mut Criterion) {
    use bacnet::router::{PortConfig, PortId, Router, RouterConfig};
    use trellis::plugin::routing::{PolicyConfig, PolicyPlugin};
    let dir = work_dir();
    let engine = engine(&dir);
    let mut firewall =
        PolicyPlugin::load(&engine, PluginSource::Bytes(builtin::FIREWALL), PolicyConfig::new("fw", FIREWALL_SETTINGS))
            .expect("the firewall loads");
    let read = ReadPropertyRequest { object: av(1), property: P::PRESENT_VALUE, array_index: None }.to_vec();
    let mut apdu = vec![0x00, 0x05, 1, ConfirmedServiceChoice::READ_PROPERTY.0];
    apdu.extend(&read);
    let npdu = Npdu {
        destination: Some(bacnet::npdu::NetAddress { net: 2, mac: &[0, 0, 201] }),
        source: None,
        hop_count: 255,
        expecting_reply: true,
        priority: bacnet::enums::NetworkPriority::NORMAL,
        payload: NpduPayload::Apdu(&apdu),
    }
    .to_vec_for_bench();
    let from = [127, 0, 0, 1, 0xBA, 0xC1];
    let mut router = Router::new(RouterConfig::new(vec![
        PortConfig { id: PortId(1), network: 1, max_npdu: 1497, mac_len: Some(6), broadcast_mac: None },
        PortConfig { id: PortId(2), network: 2, max_npdu: 1497, mac_len: Some(3), broadcast_mac: None },
    ]))
    .expect("a router");
    let mut g = c.benchmark_group("routing");
    g.bench_function("router-hop", |b| {
        b.iter(|| {
            let _ = router.handle_npdu(Duration::ZERO, PortId(1), &from, black_box(&npdu));
            router.poll_transmit().expect("forwarded")
        })
    });
    g.bench_function("router-hop-with-firewall", |b| {
        b.iter(|| {
            let _ = router.handle_npdu_with(Duration::ZERO, PortId(1), &from, black_box(&npdu), &mut firewall);
            router.poll_transmit().expect("forwarded")
        })
    });
    let mut bare = PolicyPlugin::load(
        &engine,
        PluginSource::File(Path::new(builtin::MISBEHAVE_POLICY_PATH)),
        PolicyConfig::new("bare", ""),
    )
    .expect("misbehave-policy loads");
    g.bench_function("router-hop-with-do-nothing-policy", |b| {
        b.iter(|| {
            let _ = router.handle_npdu_with(Duration::ZERO, PortId(1), &from, black_box(&npdu), &mut bare);
            router.poll_transmit().expect("forwarded")
        })
    });
    g.finish();
    let status = firewall.status();
    assert_eq!((status.failures, status.failed_closed), (0, 0), "the firewall never failed: {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

trait ToVecForBench {
    fn to_vec_for_bench(&self) -> Vec<u8>;
}

impl ToVecForBench for Npdu<'_> {
    fn to_vec_for_bench(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out).expect("encodes");
        out
    }
}

// ---- ratios to the echo ----

/// Criterion's median estimate of `group/id`, nanoseconds.
fn median_ns(root: &Path, group: &str, id: &str) -> Option<f64> {
    let text = std::fs::read_to_string(root.join(group).join(id).join("new/estimates.json")).ok()?;
    serde_json::from_str::<serde_json::Value>(&text).ok()?["median"]["point_estimate"].as_f64()
}

fn print_ratios(root: &Path) {
    let Some(echo) = median_ns(root, "bip", "udp-echo") else { return };
    println!("\nround trips as a ratio to the bare UDP echo ({:.1} µs median):", echo / 1e3);
    for id in ["read-property", "rpm-10", "write-property", "rpm-256-segmented-via-client"] {
        if let Some(t) = median_ns(root, "bip", id) {
            println!("  {id:<30} {:>9.1} µs  {:>6.2} × echo", t / 1e3, t / echo);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    let mut c = Criterion::default()
        .output_directory(&root)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    codec(&mut c);
    bip(&mut c);
    plugin(&mut c);
    routing(&mut c);
    c.final_summary();
    print_ratios(&root);
}
