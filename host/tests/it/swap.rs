//! Hot swap under load, over BACnet/IP: clients keep reading and writing the
//! demo building's zone setpoint while its plugin is replaced 100 times.
//! Not one request may fail, and every written value must survive every swap.

use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use trellis::client::{Client, ClientConfig, DeviceAddress};
use trellis::plugin::{EngineConfig, Limits, PluginConfig, PluginEngine, PluginModel, PoolConfig, builtin};
use trellis::server::{DeviceConfig, build, serve};
use trellis_bip::BipConfig;

const SWAPS: usize = 100;
const CLIENTS: usize = 4;

fn load(engine: &PluginEngine, name: &str) -> PluginModel {
    PluginModel::load(engine, builtin::DEMO_BUILDING, PluginConfig::new(name)).expect("load demo-building")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_swaps_under_read_write_load_lose_no_request_and_no_written_value() {
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("swap-cache")),
        pooling: Some(PoolConfig { max_instances: 8, limits: Limits::default() }),
        ..EngineConfig::default()
    })
    .unwrap();
    let model = load(&engine, "demo");
    let server = build(model.clone(), DeviceConfig::default(), 999).await.unwrap();
    let port = crate::peers::free_port();
    let bip = BipConfig::new(Ipv4Addr::LOCALHOST, port);
    let gateway = tokio::spawn(serve(bip, server));
    tokio::time::sleep(Duration::from_millis(200)).await;

    let setpoint = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (stop, done, device) = (stop.clone(), done.clone(), device.clone());
        clients.push(tokio::spawn(async move {
            let client =
                Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
                    .await
                    .unwrap();
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                if c == 0 {
                    // The writer: every value it wrote must be the one it reads back.
                    n += 1;
                    let v = 15.0 + (n % 100) as f32 / 10.0;
                    client
                        .write_property(&device, setpoint, P::PRESENT_VALUE, None, Value::Real(v).into(), Some(8))
                        .await
                        .unwrap_or_else(|e| panic!("write {n} failed during swaps: {e}"));
                    let back = client.read_property(&device, setpoint, P::PRESENT_VALUE, None).await.unwrap();
                    assert_eq!(back.as_primitive(), Some(&Value::Real(v)), "write {n} lost");
                } else {
                    client
                        .read_property(&device, setpoint, P::PRIORITY_ARRAY, Some(8))
                        .await
                        .unwrap_or_else(|e| panic!("read failed during swaps: {e}"));
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    let mut pauses = Vec::with_capacity(SWAPS);
    for i in 0..SWAPS {
        let engine = engine.clone();
        let next = tokio::task::spawn_blocking(move || load(&engine, &format!("demo-{i}"))).await.unwrap();
        let t = Instant::now();
        model.swap(&next).await.unwrap_or_else(|e| panic!("swap {i} refused: {e}"));
        pauses.push(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.expect("a client failed");
    }
    gateway.abort();
    pauses.sort();
    println!(
        "{SWAPS} swaps under {CLIENTS} clients: {} requests, swap pause p50 {:?} max {:?}",
        done.load(Ordering::Relaxed),
        pauses[SWAPS / 2],
        pauses[SWAPS - 1]
    );
    assert!(done.load(Ordering::Relaxed) > 0);
}
