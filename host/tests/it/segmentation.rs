//! Segmentation over real sockets on loopback: the
//! served device answers a 250-object ReadPropertyMultiple in segments to
//! bacpypes3 and to our client; our client reassembles peers' segmented
//! answers and sends segmented requests.

use crate::peers::{Kind, Peer, free_port, python};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{PropertyReference, PropertyValue, ReadAccessSpecification, WriteAccessSpecification};
use bacnet::tsm::TsmConfig;
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, ClientError, Destination, DeviceAddress};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, Limits, build, serve};
use trellis_bip::BipConfig;

/// Device instance of the bulk-objects plugin.
const BULK_DEVICE: u32 = 389_002;
const OBJECTS: u32 = 250;

fn ai(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_INPUT, i).unwrap()
}

/// Serve the bulk-objects plugin with `count` analog inputs on a free port.
/// The RPM limits are raised so a read of everything fits (the defaults,
/// 256 results and 16 KiB, would refuse it with Abort apdu-too-long).
async fn serve_bulk(count: u32, limits: Limits) -> (DeviceAddress, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bulk-{count}-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bulk.toml"), format!("count = {count}\nchanges_per_tick = 0\n")).unwrap();
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("segmentation-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let mut config = PluginConfig::new("bulk");
    config.data_dir = Some(dir);
    config.deadline = Duration::from_secs(2);
    let model = PluginModel::load(&engine, Path::new(builtin::BULK_OBJECTS_PATH), config).expect("load bulk-objects");
    let server = build(model, DeviceConfig { limits, ..DeviceConfig::default() }, 999).await.unwrap();
    let port = free_port();
    let task = tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server));
    tokio::time::sleep(Duration::from_millis(200)).await;
    (DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)), task)
}

fn big_limits() -> Limits {
    Limits { max_rpm_results: 10_000, max_rpm_octets: 256 * 1024, ..Limits::default() }
}

async fn client(tsm: TsmConfig) -> Client {
    Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), tsm, ..Default::default() }).await.unwrap()
}

fn all_of(objects: impl Iterator<Item = ObjectIdentifier>) -> Vec<ReadAccessSpecification> {
    objects.map(|object| ReadAccessSpecification { object, properties: vec![PropertyReference::new(P::ALL)] }).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_every_property_of_250_objects_in_one_segmented_answer() {
    let _timing = crate::peers::shared().await;
    let (device, gateway) = serve_bulk(OBJECTS, big_limits()).await;
    let client = client(TsmConfig::default()).await;
    let started = std::time::Instant::now();
    let results = client.read_property_multiple(&device, all_of((1..=OBJECTS).map(ai))).await.unwrap();
    let octets =
        bacnet::services::ServiceCodec::to_vec(&bacnet::services::ReadPropertyMultipleAck(results.clone())).len();
    println!(
        "RPM ALL of {OBJECTS} objects: {octets} octets in {} segments of 1471, {:?}",
        octets.div_ceil(1471),
        started.elapsed()
    );
    assert_eq!(results.len(), OBJECTS as usize);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.object, ai(i as u32 + 1));
        let name = r.results.iter().find(|x| x.property == P::OBJECT_NAME).expect("Object_Name");
        let name = name.outcome.as_ref().unwrap().as_primitive().unwrap().clone();
        assert_eq!(name, Value::CharacterString(bacnet::CharacterString::utf8(&format!("Bulk AI {}", i + 1))));
        assert!(r.results.iter().any(|x| x.property == P::PRESENT_VALUE && x.outcome.is_ok()));
    }
    let total: usize = results.iter().map(|r| r.results.len()).sum();
    assert!(total > 2000, "every property of 250 objects, got {total} results");
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_limits_refuse_a_read_above_256_results_with_a_classified_abort() {
    let _timing = crate::peers::shared().await;
    let (device, gateway) = serve_bulk(OBJECTS, Limits::default()).await;
    let client = client(TsmConfig::default()).await;
    let err = client.read_property_multiple(&device, all_of((1..=OBJECTS).map(ai))).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Abort { reason: bacnet::AbortReason::APDU_TOO_LONG, from_server: true }),
        "{err}"
    );
    // A read within the limits still works, segmented when it must be.
    let small = TsmConfig { max_apdu_accepted: bacnet::apdu::MaxApdu::UP_TO_206, ..TsmConfig::default() };
    let client = self::client(small).await;
    let results = client.read_property_multiple(&device, all_of((1..=10).map(ai))).await.unwrap();
    assert_eq!(results.len(), 10);
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bacpypes3_reads_every_property_of_250_objects_segmented() {
    let _timing = crate::peers::shared().await;
    let (device, gateway) = serve_bulk(OBJECTS, big_limits()).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/bacpypes3_bulk_read.py");
    let target = device.link.to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(script)
            .args(["--target", &target, "--device", &BULK_DEVICE.to_string()])
            .args(["--port", &free_port().to_string(), "--objects", &OBJECTS.to_string()])
            .output()
            .expect("run bacpypes3_bulk_read.py")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(line["ok"], true, "{line}");
    assert_eq!(line["present_values"], OBJECTS, "{line}");
    assert_eq!(line["names"], OBJECTS, "{line}");
    assert!(line["results"].as_u64().unwrap() > 2000, "{line}");
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reassembles_a_segmented_answer_from_bacpypes3() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start_with(Kind::Bacpypes3, 3101, &["--objects", "200"]);
    let client = client(TsmConfig::default()).await;
    let avs = (2..=201).map(|i| ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap());
    let results = client.read_property_multiple(&peer.address, all_of(avs)).await.unwrap();
    assert_eq!(results.len(), 200);
    for (i, r) in results.iter().enumerate() {
        let pv = r.results.iter().find(|x| x.property == P::PRESENT_VALUE).expect("Present_Value");
        assert_eq!(pv.outcome.as_ref().unwrap().as_primitive().unwrap().clone(), Value::Real((i + 2) as f32));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reassembles_a_segmented_answer_from_rusty_bacnet() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start_with(Kind::RustyBacnet, 4101, &["--objects", "200", "--segmentation"]);
    let client = client(TsmConfig::default()).await;
    // rusty-bacnet bounds an RPM answer at 256 results and 16 KiB: ask for
    // what fits in those, and in several segments.
    let avs = (2..=201).map(|i| ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap());
    let specs: Vec<_> = avs
        .map(|object| ReadAccessSpecification { object, properties: vec![PropertyReference::new(P::OBJECT_NAME)] })
        .collect();
    let results = client.read_property_multiple(&peer.address, specs).await.unwrap();
    assert_eq!(results.len(), 200);
    for (i, r) in results.iter().enumerate() {
        let name = r.results[0].outcome.as_ref().unwrap().as_primitive().unwrap().clone();
        assert_eq!(name, Value::CharacterString(bacnet::CharacterString::utf8(&format!("av{}", i + 2))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segmented_write_property_multiple_from_our_client_is_accepted_by_bacpypes3() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start_with(Kind::Bacpypes3, 3102, &["--objects", "200"]);
    let client = client(TsmConfig::default()).await;
    // Learn the peer's Max-APDU (1024) and segmentation from its I-Am.
    let scan = client
        .who_is(Destination::Device(peer.address.clone()), Some((3102, 3102)), Duration::from_secs(3))
        .await
        .unwrap();
    assert!(!scan.collect().await.is_empty(), "bacpypes3 answered the Who-Is");
    let specs: Vec<_> = (2..=201u32)
        .map(|i| WriteAccessSpecification {
            object: ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap(),
            values: vec![PropertyValue {
                property: P::PRESENT_VALUE,
                array_index: None,
                value: Value::Real(1000.0 + i as f32).into(),
                priority: None,
            }],
        })
        .collect();
    let body_len =
        bacnet::services::ServiceCodec::to_vec(&bacnet::services::WritePropertyMultipleRequest(specs.clone())).len();
    assert!(body_len > 1024 * 2, "the request needs at least 3 segments of 1024 ({body_len} octets)");
    client.write_property_multiple(&peer.address, specs).await.unwrap();
    for i in [2u32, 100, 201] {
        let object = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap();
        let v = client.read_property(&peer.address, object, P::PRESENT_VALUE, None).await.unwrap();
        assert_eq!(v.as_primitive().unwrap().clone(), Value::Real(1000.0 + i as f32));
    }
}
