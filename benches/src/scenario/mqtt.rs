//! `mqtt`: publishing through the gateway's MQTT path beside raw `rumqttc`,
//! to the same mosquitto, in the same run (the shape of the
//! ruststream-rumqttc benchmark).
//!
//! - **publish**: N messages (512-byte JSON payloads, over 1,000 point
//!   topics) published as fast as each side can, QoS 0 and QoS 1, counted
//!   by a `mosquitto_sub -C N` subscriber process that exits on the last:
//!   messages per second from the first publish to its exit. Side *raw* is
//!   a `rumqttc` client (100 in flight); side *trellis* is what the gateway
//!   publishes point changes through: `trellis_mqtt::spool` (on disk) and
//!   `trellis_mqtt::link` (100 in flight), in this process. Sides rotate
//!   each round; best and median rounds are reported, with the ratio.
//! - **cost**: heap allocations per published message on the trellis side
//!   (this binary's counting allocator; the subscriber is another process,
//!   so everything counted is the publisher's: the spool, the link and
//!   rumqttc), QoS 1, steady state.
//! - **cold**: the trellis side from opening its spool to the first
//!   message at the subscriber (connect, session, first publish).
//! - **replay**: N messages spooled while no broker runs, then the broker
//!   started: messages per second until the subscriber has them all.
//! - **latency**: the shipped `trellis run` serving the demo building with
//!   `[mqtt]` (QoS 0) to the same broker; this process writes analog-value,1
//!   over BACnet/IP at a fixed rate (1,000/s by default), each write a new
//!   value, and a rumqttc subscriber here times each value from the write's
//!   send to its arrival: BACnet COV → MQTT subscriber, end to end.
//!
//! Every process is killed by PID when the scenario ends.

use crate::alloc_count::Counts;
use crate::json_line::JsonLine;
use anyhow::Context;
use rumqttc::{AsyncClient, MqttOptions as MqttOptions_, QoS};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use trellis_mqtt::link::{Link, LinkConfig};
use trellis_mqtt::spool::{Spool, SpoolConfig};

/// Point topics the messages spread over.
const POINTS: u64 = 1000;
/// Unacknowledged messages at most, both sides.
const IN_FLIGHT: usize = 100;

/// A child process killed by PID when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).stderr(Stdio::null()).status();
        }
        let _ = self.0.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn broker(port: u16, dir: &Path) -> anyhow::Result<Proc> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
    let conf = dir.join("mosquitto.conf");
    // No queue bound: a message the broker drops is not one a side failed to publish.
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 100\n"),
    )?;
    let child = Command::new("mosquitto")
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start mosquitto (.ci/setup installs it)")?;
    let p = Proc(child);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(p);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    anyhow::bail!("mosquitto did not listen on {port}")
}

/// A subscriber process that exits after `count` messages on `bench/#`.
fn counter(port: u16, count: u64, qos: u8) -> anyhow::Result<Proc> {
    let child = Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", "bench/#", "-q", &qos.to_string()])
        .args(["-C", &count.to_string(), "-i", "bench-counter"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start mosquitto_sub")?;
    // Subscribed well before the first publish.
    std::thread::sleep(Duration::from_millis(300));
    Ok(Proc(child))
}

/// Wait for the counter to exit (it has every message); `false` at `limit`.
fn counted(c: &mut Proc, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if matches!(c.0.try_wait(), Ok(Some(_))) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// The payload of message `i`: 512 bytes of JSON, as a point change.
fn payload(i: u64, size: usize) -> Vec<u8> {
    let head = format!(
        "{{\"present-value\": {}.5, \"status-flags\": [false, false, false, false], \"seq\": {i}, \"pad\": \"",
        i % 997
    );
    let mut p = head.into_bytes();
    let pad = size.saturating_sub(p.len() + 2);
    p.extend(std::iter::repeat_n(b'x', pad));
    p.extend_from_slice(b"\"}");
    p
}

fn topic(i: u64) -> String {
    format!("bench/point/{}", i % POINTS)
}

/// One trial of raw rumqttc: messages per second.
async fn raw(port: u16, n: u64, qos: u8, size: usize, limit: Duration) -> anyhow::Result<f64> {
    let mut sub = counter(port, n, qos)?;
    let mut o = MqttOptions_::new("bench-raw", "127.0.0.1", port);
    o.set_inflight(IN_FLIGHT as u16);
    o.set_max_packet_size(1 << 20, 1 << 20);
    let (client, mut events) = AsyncClient::new(o, 1024);
    let driver = tokio::spawn(async move {
        loop {
            if events.poll().await.is_err() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    let level = if qos == 0 { QoS::AtMostOnce } else { QoS::AtLeastOnce };
    let payloads: Vec<Vec<u8>> = (0..n).map(|i| payload(i, size)).collect();
    let started = Instant::now();
    for (i, p) in payloads.into_iter().enumerate() {
        client.publish(topic(i as u64), level, false, p).await?;
    }
    let done = tokio::task::spawn_blocking(move || counted(&mut sub, limit)).await?;
    let secs = started.elapsed().as_secs_f64();
    driver.abort();
    anyhow::ensure!(done, "raw QoS {qos}: the subscriber did not get {n} messages within {limit:?}");
    Ok(n as f64 / secs)
}

fn link_config(port: u16) -> LinkConfig {
    let mut c = LinkConfig::new("127.0.0.1", port, "bench-trellis");
    c.availability_topic = None;
    c.max_in_flight = IN_FLIGHT;
    c.reconnect = Duration::from_millis(100);
    c.max_reconnect = Duration::from_millis(200);
    c
}

fn spool(dir: &Path, n: u64, size: usize) -> anyhow::Result<Spool> {
    let _ = std::fs::remove_dir_all(dir);
    let config = SpoolConfig { max_bytes: (n + 10) * (size as u64 + 64) * 2, ..SpoolConfig::new(dir) };
    Ok(Spool::open(config)?.0)
}

/// One trial of the gateway's path: messages per second, allocations.
async fn trellis(
    port: u16,
    dir: &Path,
    n: u64,
    qos: u8,
    size: usize,
    limit: Duration,
) -> anyhow::Result<(f64, Counts)> {
    let mut sub = counter(port, n, qos)?;
    let (link, _incoming) = Link::start(link_config(port), spool(dir, n, size)?);
    for _ in 0..200 {
        if link.status().connected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let payloads: Vec<Vec<u8>> = (0..n).map(|i| payload(i, size)).collect();
    let topics: Vec<String> = (0..n).map(topic).collect();
    let before = Counts::now();
    let started = Instant::now();
    for (t, p) in topics.iter().zip(&payloads) {
        link.publish(t, qos, p)?;
    }
    let done = tokio::task::spawn_blocking(move || counted(&mut sub, limit)).await?;
    let secs = started.elapsed().as_secs_f64();
    let counts = Counts::now().since(before);
    let st = link.status();
    anyhow::ensure!(
        done,
        "trellis QoS {qos}: the subscriber did not get {n} messages within {limit:?} (the link: {} delivered to the \
         broker, {} pending, connected {}, {} losses, last error {:?})",
        st.delivered,
        link.pending(),
        st.connected,
        st.losses,
        st.last_error
    );
    Ok((n as f64 / secs, counts))
}

fn best_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v.last().copied().unwrap_or(0.0), v.get(v.len() / 2).copied().unwrap_or(0.0))
}

/// What the scenario runs.
#[derive(Debug, Clone)]
pub struct MqttOptions {
    /// Messages per publishing trial.
    pub messages: u64,
    /// Rounds of the publishing trials.
    pub rounds: u32,
    /// Payload bytes.
    pub payload: usize,
    /// The `trellis` binary (the latency step runs it).
    pub trellis: PathBuf,
    /// Writes per second in the latency step.
    pub rate: u32,
    /// Seconds of writing in the latency step.
    pub latency_secs: u64,
}

/// Run the scenario: one JSON line per measurement.
pub fn run(o: &MqttOptions, work: &Path) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(run_async(o.messages, o.rounds.max(1), o.payload, work))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(latency(o, work))
}

/// The `trellis run` of the latency step, killed by PID when dropped.
fn gateway(trellis: &Path, work: &Path, broker: u16, bip: u16) -> anyhow::Result<Proc> {
    use std::io::BufRead;
    let config = work.join("mqtt-gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\ninstance = 1001\nplugin = \"builtin:demo-building\"\npassword = \"x\"\nport = {bip}\n\n\
             [mqtt]\nbroker = \"127.0.0.1:{broker}\"\nclient_id = \"bench-gateway\"\ntopic_prefix = \"bench\"\nqos = 0\n\
             commands = false\nspool_dir = \"{}\"\n",
            work.join("mqtt-gateway-spool").display()
        ),
    )?;
    let mut child = Command::new(trellis)
        .args(["run", "--config"])
        .arg(&config)
        .env("XDG_CACHE_HOME", work.join("cache"))
        .env("TRELLIS_ADMIN_SOCKET", work.join("mqtt-admin.sock"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("start {}", trellis.display()))?;
    let stderr = child.stderr.take().context("the gateway's stderr")?;
    let p = Proc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("trellis: serving") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(120)).context("the gateway did not start serving")?;
    Ok(p)
}

/// BACnet write → COV → MQTT → subscriber, timed per value.
async fn latency(o: &MqttOptions, work: &Path) -> anyhow::Result<()> {
    use bacnet::enums::PropertyIdentifier;
    use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use trellis::client::{Client, DeviceAddress};

    let port = free_port()?;
    let _broker = broker(port, &work.join("mqtt-broker-latency"))?;
    let bip = free_port()?;
    let _gateway = gateway(&o.trellis, work, port, bip)?;
    let arrived: Arc<Mutex<HashMap<u32, Instant>>> = Arc::default();
    let mut mo = MqttOptions_::new("bench-latency", "127.0.0.1", port);
    mo.set_keep_alive(Duration::from_secs(30));
    let (client, mut events) = AsyncClient::new(mo, 1024);
    client.subscribe("bench/1001/analog-value,1", QoS::AtMostOnce).await?;
    let sink = arrived.clone();
    let listener = tokio::spawn(async move {
        while let Ok(event) = events.poll().await {
            if let rumqttc::Event::Incoming(rumqttc::Packet::Publish(p)) = event {
                let at = Instant::now();
                let v: serde_json::Value = serde_json::from_slice(&p.payload).unwrap_or_default();
                if let Some(x) = v["present-value"].as_f64() {
                    sink.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .entry((x as f32).to_bits())
                        .or_insert(at);
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writer = Client::bind(crate::workload::client_config(Duration::from_secs(2), 16)).await?;
    let device = DeviceAddress::direct(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, bip));
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1)?;
    let n = u64::from(o.rate) * o.latency_secs;
    let mut sent: Vec<(u32, Instant)> = Vec::with_capacity(n as usize);
    let start = tokio::time::Instant::now();
    let mut failed = 0u64;
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / f64::from(o.rate))).await;
        // Distinct values 0.25 apart (exact in f32): every write is a change past the COV increment.
        let v = 1000.0 + i as f32 * 0.25;
        let at = Instant::now();
        match writer
            .write_property(
                &device,
                av1,
                PropertyIdentifier::PRESENT_VALUE,
                None,
                AnyValue::from(Value::Real(v)),
                Some(8),
            )
            .await
        {
            Ok(()) => sent.push((v.to_bits(), at)),
            Err(_) => failed += 1,
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    listener.abort();
    let arrived = arrived.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut latencies = crate::stats::Latencies::default();
    let mut lost = 0u64;
    for (bits, at) in &sent {
        match arrived.get(bits) {
            Some(got) => latencies.record(got.saturating_duration_since(*at)),
            None => lost += 1,
        }
    }
    let summary = latencies.summary().context("no change arrived")?;
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("mqtt"))
            .put("step", json!("latency"))
            .put("writes_per_s", json!(o.rate))
            .put("writes", json!(sent.len()))
            .put("write_failures", json!(failed))
            .put("not_arrived", json!(lost))
            .put("cov_to_mqtt_us", json!({"p50": us(summary.p50), "p99": us(summary.p99), "max": us(summary.max)}))
            .finish()
    );
    Ok(())
}

async fn run_async(n: u64, rounds: u32, size: usize, work: &Path) -> anyhow::Result<()> {
    let port = free_port()?;
    let broker_dir: PathBuf = work.join("mqtt-broker");
    let spool_dir = work.join("mqtt-spool");
    let _broker = broker(port, &broker_dir)?;
    let limit = Duration::from_secs(120);
    for qos in [0u8, 1] {
        let (mut raws, mut ours, mut allocations) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let trellis_first = round % 2 == 1;
            for side in 0..2 {
                if (side == 0) != trellis_first {
                    raws.push(raw(port, n, qos, size, limit).await?);
                } else {
                    let (rate, counts) = trellis(port, &spool_dir, n, qos, size, limit).await?;
                    ours.push(rate);
                    allocations.push(counts.allocations as f64 / n as f64);
                }
            }
            eprintln!(
                "mqtt QoS {qos} round {}: raw {:.0}/s, trellis {:.0}/s",
                round + 1,
                raws.last().unwrap_or(&0.0),
                ours.last().unwrap_or(&0.0)
            );
        }
        let (raw_best, raw_median) = best_median(raws);
        let (our_best, our_median) = best_median(ours);
        let (_, alloc_median) = best_median(allocations);
        let line = JsonLine::new()
            .put("scenario", json!("mqtt"))
            .put("step", json!("publish"))
            .put("qos", json!(qos))
            .put("messages", json!(n))
            .put("payload_bytes", json!(size))
            .put("rounds", json!(rounds))
            .put("raw_rumqttc_per_s", json!({"best": raw_best.round(), "median": raw_median.round()}))
            .put("trellis_per_s", json!({"best": our_best.round(), "median": our_median.round()}))
            .put("ratio_median", json!((our_median / raw_median * 100.0).round() / 100.0))
            .put("trellis_allocations_per_message", json!((alloc_median * 100.0).round() / 100.0));
        println!("{}", line.finish());
    }

    // Cold start: spool opened → first message at the subscriber.
    let mut sub = counter(port, 1, 1)?;
    let started = Instant::now();
    let (link, _incoming) = Link::start(link_config(port), spool(&spool_dir, 1, size)?);
    link.publish(&topic(0), 1, &payload(0, size))?;
    let done = tokio::task::spawn_blocking(move || counted(&mut sub, Duration::from_secs(30))).await?;
    anyhow::ensure!(done, "cold start: no first message");
    let cold_ms = started.elapsed().as_secs_f64() * 1e3;
    drop(link);
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("mqtt"))
            .put("step", json!("cold"))
            .put("first_message_ms", json!((cold_ms * 10.0).round() / 10.0))
            .finish()
    );

    // Replay: spooled while the broker is away, then the broker back.
    drop(_broker);
    // Attempts 1.5 s apart: the counter subscribes before the link's next one.
    let mut config = link_config(port);
    (config.reconnect, config.max_reconnect) = (Duration::from_millis(1500), Duration::from_millis(1500));
    let (link, _incoming) = Link::start(config, spool(&spool_dir, n, size)?);
    for i in 0..n {
        link.publish(&topic(i), 1, &payload(i, size))?;
    }
    let connects = link.status().connects;
    let _broker = broker(port, &broker_dir)?;
    let mut sub = counter(port, n, 1)?;
    // From the link's connection on.
    while link.status().connects == connects {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let started = Instant::now();
    let done = tokio::task::spawn_blocking(move || counted(&mut sub, limit)).await?;
    anyhow::ensure!(done, "replay: the subscriber did not get {n} messages");
    let secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(link.pending() == 0 || link.status().connected, "replay: the link did not reconnect");
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("mqtt"))
            .put("step", json!("replay"))
            .put("messages", json!(n))
            .put("per_s", json!((n as f64 / secs).round()))
            .put("lost", json!(0))
            .finish()
    );
    Ok(())
}

/// Messages of the two callgrind runs: their difference is what is divided.
const CALLGRIND_MESSAGES: (u64, u64) = (1000, 5000);

/// The trellis side alone, for callgrind: connect to the broker on `port`,
/// publish `n` QoS 1 messages (one payload, 1,000 topics made before, so
/// only the publishing grows with `n`), wait until the broker acknowledged
/// every one, exit.
pub fn publish_only(port: u16, n: u64, size: usize, work: &Path) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async {
        let (link, _incoming) = Link::start(link_config(port), spool(&work.join("callgrind-spool"), n, size)?);
        let until = Instant::now() + Duration::from_secs(300);
        while !link.status().connected {
            anyhow::ensure!(Instant::now() < until, "no connection to the broker");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let topics: Vec<String> = (0..POINTS).map(topic).collect();
        let body = payload(0, size);
        for i in 0..n {
            link.publish(&topics[(i % POINTS) as usize], 1, &body)?;
        }
        while link.pending() > 0 {
            anyhow::ensure!(Instant::now() < until, "the broker did not acknowledge everything");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    })
}

/// Instructions per QoS 1 message on the trellis side, from two runs of
/// this binary under callgrind (`valgrind`, installed by `.ci/setup`).
pub fn callgrind(size: usize, work: &Path) -> anyhow::Result<()> {
    let port = free_port()?;
    let _broker = broker(port, &work.join("mqtt-broker-callgrind"))?;
    let me = std::env::current_exe()?;
    let collected = |n: u64| -> anyhow::Result<f64> {
        let out = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(&me)
            .args(["mqtt-publish", "--port", &port.to_string(), "--messages", &n.to_string()])
            .args(["--payload", &size.to_string(), "--work-dir"])
            .arg(work)
            .stdin(Stdio::null())
            .output()
            .context("run valgrind (.ci/setup installs it)")?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        anyhow::ensure!(out.status.success(), "callgrind run failed: {}", stderr.lines().last().unwrap_or(""));
        stderr
            .lines()
            .find_map(|l| l.split_once("Collected :").and_then(|(_, n)| n.trim().parse::<f64>().ok()))
            .context("no \"Collected :\" line in callgrind's summary")
    };
    let (a, b) = CALLGRIND_MESSAGES;
    let (ia, ib) = (collected(a)?, collected(b)?);
    anyhow::ensure!(ib > ia, "callgrind counted fewer instructions for more messages ({ia} then {ib})");
    let per_message = (ib - ia) / (b - a) as f64;
    println!(
        "{}",
        JsonLine::new()
            .put("scenario", json!("mqtt"))
            .put("step", json!("instructions"))
            .put("qos", json!(1))
            .put("payload_bytes", json!(size))
            .put("instructions_per_message", json!(per_message.round()))
            .put("runs", json!([a, b]))
            .finish()
    );
    Ok(())
}
