//! `alarms`: alarm notification latency — how long from a WriteProperty
//! that takes a value across its High_Limit (or back inside it) to the
//! EventNotification at the Notification Class's recipient.
//!
//! Each target serves one object with intrinsic reporting (OUT_OF_RANGE,
//! limits 16 and 28, Time_Delay 0) whose Notification Class has one
//! recipient: a bare UDP socket of this process, unconfirmed
//! notifications. Trellis: the demo building's zone temperature
//! (analog-input,1, taken out of service so it can be written);
//! rusty-bacnet: its commandable analog-value,1, written at priority 8
//! (`rusty_server.py --alarm-recipient`). The writer alternates 31.5
//! (to HIGH_LIMIT) and 22.0 (to NORMAL), one transition at a time; each
//! is timed from the write's send to the arrival of the notification into
//! the state it asked for. Targets alternate transition by transition, so
//! both see the same machine at the same moment. One JSON line per target.

use super::{CpuWindow, Env, bacnet_targets, check_alive, micros, round_to, server_fields};
use crate::json_line::JsonLine;
use crate::stats::Latencies;
use crate::target::{Setup, TargetKind};
use crate::workload::client_config;
use bacnet::enums::{EventState, PropertyIdentifier as P};
use bacnet::services::{EventNotification, ServiceCodec};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use trellis::client::{Client, DeviceAddress};

/// How long one notification may take before it counts as missing.
const WAIT: Duration = Duration::from_secs(5);

/// The alarming object of a target.
fn alarm_object(kind: TargetKind) -> ObjectIdentifier {
    match kind {
        TargetKind::Trellis => ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 1 },
        _ => ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 },
    }
}

/// The state an UnconfirmedEventNotification entered, if `frame` is one
/// (B/IP Original-Unicast-NPDU, an NPDU without addresses).
fn entered(frame: &[u8]) -> Option<EventState> {
    let npdu = frame.get(4..).filter(|_| frame.first() == Some(&0x81))?;
    if npdu.first() != Some(&0x01) || npdu.get(1).is_some_and(|c| c & 0x28 != 0) {
        return None;
    }
    let apdu = npdu.get(2..)?;
    if apdu.first()? >> 4 != 1 || *apdu.get(1)? != 3 {
        return None;
    }
    EventNotification::decode(&apdu[2..]).ok().map(|n| n.to_state)
}

/// Wait for the notification into `state` on `socket`.
async fn arrival(socket: &UdpSocket, state: EventState) -> Option<Instant> {
    let mut buf = [0u8; 1500];
    let until = Instant::now() + WAIT;
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        let n = tokio::time::timeout(left, socket.recv(&mut buf)).await.ok()?.ok()?;
        if entered(&buf[..n]) == Some(state) {
            return Some(Instant::now());
        }
    }
}

/// One target with its recipient.
struct Armed {
    server: crate::target::Server,
    device: DeviceAddress,
    recipient: UdpSocket,
    latencies: Latencies,
    missing: u64,
    cpu: CpuWindow,
}

/// Run the scenario: `transitions` timed transitions per target.
pub fn run(env: &Env, targets: &[TargetKind], transitions: u32) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(run_async(env, targets, transitions))
}

async fn run_async(env: &Env, targets: &[TargetKind], transitions: u32) -> anyhow::Result<()> {
    let writer = Client::bind(client_config(WAIT, 4)).await?;
    let mut armed = Vec::new();
    for kind in bacnet_targets(targets) {
        if !matches!(kind, TargetKind::Trellis | TargetKind::Rusty) {
            eprintln!("stress-test: {} has no intrinsic reporting to measure: left out", kind.name());
            continue;
        }
        let recipient = UdpSocket::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let setup = Setup { alarm_recipient: Some(recipient.local_addr()?.port()), ..Setup::default() };
        let server = env.start(kind, &setup)?;
        let device = DeviceAddress::direct(server.addr);
        let object = alarm_object(kind);
        if kind == TargetKind::Trellis {
            writer.write_property(&device, object, P::OUT_OF_SERVICE, None, Value::Boolean(true).into(), None).await?;
            writer.write_property(&device, object, P::TIME_DELAY, None, Value::Unsigned(0).into(), None).await?;
        }
        // Start from NORMAL, and let whatever that reported go by.
        write(&writer, &device, kind, 22.0).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut buf = [0u8; 1500];
        while recipient.try_recv(&mut buf).is_ok() {}
        let cpu = CpuWindow::new(server.pid, env.ticks);
        armed.push(Armed { server, device, recipient, latencies: Latencies::default(), missing: 0, cpu });
    }
    let t0 = Instant::now();
    for a in &mut armed {
        a.cpu.mark(crate::load::Mark::WindowStart);
    }
    for i in 0..transitions {
        let (value, state) = if i % 2 == 0 { (31.5, EventState::HIGH_LIMIT) } else { (22.0, EventState::NORMAL) };
        for a in &mut armed {
            let kind = a.server.kind;
            let sent = Instant::now();
            let (written, arrived) = tokio::join!(write(&writer, &a.device, kind, value), arrival(&a.recipient, state));
            written?;
            match arrived {
                Some(at) => a.latencies.record(at - sent),
                None => a.missing += 1,
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    for a in &mut armed {
        a.cpu.mark(crate::load::Mark::WindowEnd);
        check_alive(&a.server)?;
        let summary = a.latencies.summary();
        let line = JsonLine::new()
            .put("scenario", json!("alarms"))
            .put("target", json!(a.server.kind.name()))
            .put("transitions", json!(transitions))
            .put("received", json!(a.latencies.len()))
            .put("missing", json!(a.missing))
            .put("p50_us", micros(summary.as_ref(), |s| s.p50))
            .put("p99_us", micros(summary.as_ref(), |s| s.p99))
            .put("max_us", micros(summary.as_ref(), |s| s.max))
            .put("secs", json!(round_to(secs, 1000.0)));
        println!("{}", server_fields(line, env, &a.server, &a.cpu, secs).finish());
        eprintln!(
            "stress-test: alarms {:>9}: {} of {transitions} notifications, p99 {} µs",
            a.server.kind.name(),
            a.latencies.len(),
            summary.map(|s| format!("{:.0}", s.p99.as_secs_f64() * 1e6)).unwrap_or_else(|| "-".into())
        );
        super::clients::report_log(&a.server, env);
    }
    Ok(())
}

async fn write(writer: &Client, device: &DeviceAddress, kind: TargetKind, value: f32) -> anyhow::Result<()> {
    let priority = (kind != TargetKind::Trellis).then_some(8);
    writer
        .write_property(device, alarm_object(kind), P::PRESENT_VALUE, None, Value::Real(value).into(), priority)
        .await?;
    Ok(())
}
