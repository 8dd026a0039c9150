//! A crowd against one served device: 100 clients, each keeping twice as
//! many requests in flight as the device admits per peer, while a writer
//! changes the setpoint and a subscriber follows it by confirmed COV.
//! Every request gets an answer or a classified admission refusal (never a
//! timeout), every change reaches the subscriber, and memory stays bounded.

use crate::peers::free_port;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::tsm::TsmConfig;
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use trellis::client::{Client, ClientConfig, ClientError, CovSubscription, DeviceAddress};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, build, serve};
use trellis_bip::BipConfig;

const CLIENTS: u32 = 100;
const IN_FLIGHT: u32 = 32;
const ROUNDS: u32 = 3;
const CHANGES: u32 = 20;

fn object(t: ObjectType, i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, i).unwrap()
}

async fn client(tsm: TsmConfig) -> Client {
    Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), tsm, ..Default::default() }).await.unwrap()
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Retry what admission control refuses: the refusal says "later".
async fn persist<T, F: std::future::Future<Output = Result<T, ClientError>>>(mut op: impl FnMut() -> F) -> T {
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if e.is_admission_refusal() => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("{e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_get_answers_or_admission_refusals_and_no_cov_notification_is_lost() {
    let _alone = crate::peers::exclusive().await;
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("crowd-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo")).unwrap();
    let server = Arc::new(build(model, DeviceConfig::default(), 999).await.unwrap());
    let port = free_port();
    let gateway = tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let setpoint = object(ObjectType::ANALOG_VALUE, 1);

    // The subscriber: confirmed notifications of the setpoint.
    let subscriber = client(TsmConfig::default()).await;
    let mut notes = subscriber.cov_notifications();
    let sub = CovSubscription::new(1, setpoint).confirmed(true).lifetime(600);
    persist(|| subscriber.subscribe_cov(&device, &sub)).await;
    // The last value notified, so the writer moves on only once its change
    // was reported: COV reports the value present when the change is
    // observed, and two writes faster than that would rightly be one change.
    let (last_tx, mut last) = tokio::sync::watch::channel(i64::MIN);
    let seen = tokio::spawn(async move {
        let mut values = BTreeSet::new();
        while let Ok(n) = notes.recv().await {
            for v in n.notification.values.iter().filter(|v| v.property == P::PRESENT_VALUE) {
                if let Some(Value::Real(r)) = v.value.as_primitive() {
                    values.insert((*r * 100.0) as i64);
                    let _ = last_tx.send((*r * 100.0) as i64);
                }
            }
            if (0..CHANGES).all(|i| values.contains(&(((10.0 + i as f32) * 100.0) as i64))) {
                break;
            }
        }
        values
    });

    let answered = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let rss_start = rss_kib();
    let mut rss_after_first_round = 0;
    let mut failures = Vec::new();
    let writer = client(TsmConfig::default()).await;
    for round in 0..ROUNDS {
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let (device, refused, answered) = (device.clone(), refused.clone(), answered.clone());
            tasks.push(tokio::spawn(async move {
                let tsm = TsmConfig {
                    max_in_flight_per_peer: IN_FLIGHT as usize,
                    apdu_timeout: Duration::from_secs(10),
                    ..TsmConfig::default()
                };
                let client = client(tsm).await;
                let mut reads = Vec::new();
                for k in 0..IN_FLIGHT {
                    let (client, device) = (client.clone(), device.clone());
                    let ai = object(ObjectType::ANALOG_INPUT, 1 + (c + k) % 3);
                    reads.push(tokio::spawn(
                        async move { client.read_property(&device, ai, P::PRESENT_VALUE, None).await },
                    ));
                }
                let mut other = Vec::new();
                for r in reads {
                    match r.await.unwrap() {
                        Ok(_) => answered.fetch_add(1, Ordering::Relaxed),
                        Err(e) if e.is_admission_refusal() => refused.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            other.push(e.to_string());
                            0
                        }
                    };
                }
                other
            }));
        }
        // Meanwhile the writer moves the setpoint (CHANGES over all rounds).
        for i in (round * CHANGES / ROUNDS)..((round + 1) * CHANGES / ROUNDS) {
            let v: bacnet::AnyValue = Value::Real(10.0 + i as f32).into();
            persist(|| writer.write_property(&device, setpoint, P::PRESENT_VALUE, None, v.clone(), Some(8))).await;
            let written = ((10.0 + i as f32) * 100.0) as i64;
            let _ = tokio::time::timeout(Duration::from_secs(10), last.wait_for(|v| *v == written)).await;
        }
        for t in tasks {
            failures.extend(t.await.unwrap());
        }
        if round == 0 {
            rss_after_first_round = rss_kib();
        }
    }
    let rss_end = rss_kib();
    let values = tokio::time::timeout(Duration::from_secs(30), seen).await.expect("every change notified").unwrap();
    let (answered, refused) = (answered.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    let (_, acked, failed, send_failed) = server.cov().stats.snapshot();
    println!(
        "{CLIENTS} clients × {IN_FLIGHT} reads × {ROUNDS} rounds: {answered} answered, {refused} refused by admission \
         control; COV: {} values seen, {acked} confirmed notifications acknowledged, {failed} failed; \
         RSS {rss_start} → {rss_after_first_round} → {rss_end} KiB",
        values.len()
    );
    assert!(failures.is_empty(), "only answers and admission refusals: {:?}", &failures[..failures.len().min(5)]);
    assert_eq!(answered + refused, (CLIENTS * IN_FLIGHT * ROUNDS) as u64);
    assert!(answered >= (CLIENTS * ROUNDS) as u64, "every client had requests admitted");
    assert_eq!((failed, send_failed), (0, 0), "no COV notification lost");
    // Refusals come from the transaction state machine's admission control
    // and from the plugin's full queue; the device counts both.
    let counted = server.stats().refused.load(Ordering::Relaxed) + server.stats().model_busy.load(Ordering::Relaxed);
    assert!(counted >= refused, "the device counted every refusal: {counted} < {refused}");
    // Later rounds must not grow memory: what the first round needed is enough.
    let growth = rss_end.saturating_sub(rss_after_first_round);
    assert!(growth < 64 * 1024, "resident memory grew {growth} KiB after the first round");
    gateway.abort();
}
