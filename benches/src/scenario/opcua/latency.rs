//! `opcua`'s Trellis-only steps, on `trellis run` serving 100 Analog Values:
//! - **latency**: this process writes analog-value,1 over BACnet/IP at a
//!   fixed rate (each write a new value, 1.0 apart: past the COV
//!   increment); an async-opcua client subscribed to its Present_Value
//!   (publishing interval 1 ms, sampling interval 0) times each value from
//!   the write's send to its DataChange: BACnet COV → OPC UA client.
//! - **memory**: the gateway's resident memory before and after 50 more
//!   sessions, then after 10,000 monitored items (100 per node): memory per
//!   session and per monitored item.
//!
//! Must never: count a value that did not arrive as arrived.

use super::{OpcUaOptions, start_trellis};
use crate::json_line::JsonLine;
use anyhow::Context;
use bacnet::enums::PropertyIdentifier;
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use opcua::client::{ClientBuilder, DataChangeCallback, IdentityToken, Session};
use opcua::types::{
    MessageSecurityMode, MonitoredItemCreateRequest, MonitoringMode, MonitoringParameters, NodeId, TimestampsToReturn,
    Variant,
};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trellis::client::{Client, DeviceAddress};
use trellis_opcua::opcua;

const SESSIONS: usize = 50;
const ITEMS: usize = 10_000;

pub(crate) async fn session(url: &str, work: &Path) -> anyhow::Result<Arc<Session>> {
    let mut client = ClientBuilder::new()
        .application_name("trellis opcua latency")
        .application_uri("urn:trellis:bench:latency")
        .pki_dir(work.join("latency-client-pki"))
        .create_sample_keypair(false)
        .trust_server_certs(true)
        .session_retry_limit(0)
        .client()
        .map_err(|e| anyhow::anyhow!("{}", e.join("; ")))?;
    let (session, event_loop) = client
        .connect_to_matching_endpoint(
            (url, "http://opcfoundation.org/UA/SecurityPolicy#None", MessageSecurityMode::None),
            IdentityToken::Anonymous,
        )
        .await?;
    event_loop.spawn();
    anyhow::ensure!(session.wait_for_connection().await, "no session");
    Ok(session)
}

pub(crate) fn item(node: &NodeId) -> MonitoredItemCreateRequest {
    MonitoredItemCreateRequest::new(
        node.clone().into(),
        MonitoringMode::Reporting,
        MonitoringParameters { sampling_interval: 0.0, queue_size: 100, discard_oldest: true, ..Default::default() },
    )
}

/// Run both steps.
pub fn run(o: &OpcUaOptions, work: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run_async(o, work))
}

async fn run_async(o: &OpcUaOptions, work: &Path) -> anyhow::Result<()> {
    let bip = crate::target::free_port()?;
    let (gateway, url, nodes) = start_trellis(o, work, bip)?;
    let pid = gateway.0.id();
    let node = NodeId::from_str(&nodes[0]).map_err(|_| anyhow::anyhow!("{:?}", nodes[0]))?;

    // Latency.
    let subscriber = session(&url, work).await?;
    let arrived: Arc<Mutex<HashMap<u32, Instant>>> = Arc::default();
    let sink = arrived.clone();
    let callback = DataChangeCallback::new(move |dv, _| {
        let at = Instant::now();
        if let Some(Variant::Float(x)) = dv.value {
            sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(x.to_bits()).or_insert(at);
        }
    });
    let sub = subscriber.create_subscription(Duration::from_millis(1), 10_000, 100, 0, 0, true, callback).await?;
    subscriber.create_monitored_items(sub, TimestampsToReturn::Both, vec![item(&node)]).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let writer = Client::bind(crate::workload::client_config(Duration::from_secs(2), 16)).await?;
    let device = DeviceAddress::direct(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, bip));
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1)?;
    let n = u64::from(o.rate) * o.latency_secs;
    let mut sent: Vec<(u32, Instant)> = Vec::with_capacity(n as usize);
    let start = tokio::time::Instant::now();
    let mut failed = 0u64;
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / f64::from(o.rate))).await;
        let v = 10_000.0 + i as f32;
        let at = Instant::now();
        let value = AnyValue::from(Value::Real(v));
        match writer.write_property(&device, av1, PropertyIdentifier::PRESENT_VALUE, None, value, Some(8)).await {
            Ok(()) => sent.push((v.to_bits(), at)),
            Err(_) => failed += 1,
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut latencies = crate::stats::Latencies::default();
    let mut lost = 0u64;
    {
        let arrived = arrived.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (bits, at) in &sent {
            match arrived.get(bits) {
                Some(got) => latencies.record(got.saturating_duration_since(*at)),
                None => lost += 1,
            }
        }
    }
    let summary = latencies.summary().context("no change arrived")?;
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("opcua"))
            .put("step", json!("latency"))
            .put("writes_per_s", json!(o.rate))
            .put("writes", json!(sent.len()))
            .put("write_failures", json!(failed))
            .put("not_arrived", json!(lost))
            .put(
                "cov_to_datachange_us",
                json!({"p50": us(summary.p50), "p99": us(summary.p99), "max": us(summary.max)})
            )
            .finish()
    );

    // Memory.
    let rss = || crate::procfs::status_kib(pid, "VmRSS").unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(session(&url, work).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_sessions = rss();
    let all: Vec<NodeId> = nodes.iter().filter_map(|n| NodeId::from_str(n).ok()).collect();
    // 1,000 items per subscription (async-opcua's default bound), 10 subscriptions.
    let holder = &sessions[0];
    for chunk in (0..ITEMS).collect::<Vec<_>>().chunks(1000) {
        let sub = holder
            .create_subscription(Duration::from_millis(100), 100, 10, 0, 0, true, DataChangeCallback::new(|_, _| {}))
            .await?;
        let items = chunk.iter().map(|i| item(&all[i % all.len()])).collect();
        holder.create_monitored_items(sub, TimestampsToReturn::Both, items).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let with_items = rss();
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("opcua"))
            .put("step", json!("memory"))
            .put("rss_kib", json!({"before": before, "sessions": with_sessions, "items": with_items}))
            .put("sessions", json!(SESSIONS))
            .put("monitored_items", json!(ITEMS))
            .put(
                "kib_per_session",
                json!(((with_sessions.saturating_sub(before)) as f64 / SESSIONS as f64 * 10.0).round() / 10.0)
            )
            .put(
                "bytes_per_monitored_item",
                json!(((with_items.saturating_sub(with_sessions)) * 1024) as f64 / ITEMS as f64)
            )
            .finish()
    );
    for s in sessions {
        let _ = s.disconnect().await;
    }
    let _ = subscriber.disconnect().await;
    drop(gateway);
    Ok(())
}
