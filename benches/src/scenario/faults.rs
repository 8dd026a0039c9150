//! `faults`: `kill -9` of the gateway in the middle of what it acknowledges
//! (issue 41, item 2): on restart nothing acknowledged is lost and nothing
//! half-written is served.
//!
//! Each round starts Trellis on a fresh state directory (the demo building
//! with `[device.persistence]` at `power-loss` durability, a writable
//! stream File object, CreateObject of Analog Values allowed), runs one
//! kind of acknowledged operation back to back from our client, and
//! SIGKILLs the gateway at a random moment 0.2–1.5 s after the first
//! acknowledgment:
//!
//! | fault | operation | after the restart |
//! |---|---|---|
//! | `write` | WriteProperty analog-value,1 = n at priority 8 | Priority_Array\[8\] is the last acknowledged n, or the one in flight |
//! | `create` | CreateObject analog-value,1000+n | every acknowledged object is there; no other but the one in flight |
//! | `file` | AtomicWriteFile appending `record n` | the file is the acknowledged records in order, maybe with the one in flight, whole |
//! | `swap` | `write` while the plugin is hot-swapped over and over | as `write` |
//! | `spool` | `write`, the MQTT broker down: every change goes to the spool | the broker back, the spool's messages arrive whole and in order, with no gap, ending at the value BACnet serves |
//!
//! The gateway is then started again on the same directory. One JSON line
//! per round: operations acknowledged, lost (acknowledged but not served),
//! torn (served but neither acknowledged nor the one in flight, or a
//! partial record), the recovery time (spawn to the first answered
//! ReadProperty) and resident memory before the kill and after the
//! restart. A table per fault follows on stderr.
//!
//! A benchmark, not a test: it takes seconds per round. Trellis only.

use super::Env;
use crate::json_line::JsonLine;
use crate::procfs;
use crate::target::{Spawned, free_port};
use anyhow::{Context, bail};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{FileData, ObjectSpecifier};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trellis::client::{Client, DeviceAddress};

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `kill -9` during WriteProperty.
    Write,
    /// During CreateObject.
    Create,
    /// During AtomicWriteFile.
    File,
    /// During WriteProperty while the plugin is being hot-swapped.
    Swap,
    /// During WriteProperty while each change goes to the MQTT spool (the
    /// broker down).
    Spool,
}

impl Fault {
    /// Every fault, in the table's order.
    pub const ALL: [Fault; 5] = [Fault::Write, Fault::Create, Fault::File, Fault::Swap, Fault::Spool];

    /// Its name on the command line and in the JSON lines.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Write => "write",
            Fault::Create => "create",
            Fault::File => "file",
            Fault::Swap => "swap",
            Fault::Spool => "spool",
        }
    }

    /// The fault named `name`.
    pub fn parse(name: &str) -> anyhow::Result<Fault> {
        Fault::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .with_context(|| format!("no fault {name:?} (one of {})", Fault::ALL.map(Fault::name).join(", ")))
    }
}

/// What one round found.
#[derive(Debug, Default, Clone)]
struct Round {
    acknowledged: u64,
    lost: u64,
    torn: u64,
    recovery: Duration,
    rss_before_kib: Option<u64>,
    rss_after_kib: Option<u64>,
}

/// The operations sent: the last sent and every acknowledged one.
#[derive(Debug, Default)]
struct Progress {
    sent: u64,
    acked: Vec<u64>,
}

impl Progress {
    /// The one sent but not acknowledged when the gateway died, if any.
    fn in_flight(&self) -> Option<u64> {
        (self.acked.last() != Some(&self.sent) && self.sent > 0).then_some(self.sent)
    }
}

const SETPOINT: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
const LOG_FILE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::FILE, instance: 1 };
const FIRST_CREATED: u32 = 1000;

fn record(n: u64) -> Vec<u8> {
    format!("record {n:08}\n").into_bytes()
}

/// Run `rounds` rounds of each of `faults`.
pub fn run(env: &Env, faults: &[Fault], rounds: u32) -> anyhow::Result<()> {
    anyhow::ensure!(rounds >= 1, "--rounds: at least 1");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let swap_file = env.programs.work_dir.join("demo-building-faults.wasm");
    std::fs::write(&swap_file, trellis::plugin::builtin::DEMO_BUILDING)
        .with_context(|| format!("write {}", swap_file.display()))?;
    let mut table = Vec::new();
    for &fault in faults {
        let mut results = Vec::new();
        for round in 1..=rounds {
            let r = runtime.block_on(one_round(env, fault, round, &swap_file))?;
            let line = JsonLine::new()
                .put("scenario", json!("faults"))
                .put("fault", json!(fault.name()))
                .put("round", json!(round))
                .put("acknowledged", json!(r.acknowledged))
                .put("lost", json!(r.lost))
                .put("torn", json!(r.torn))
                .put("recovery_ms", json!((r.recovery.as_secs_f64() * 1e4).round() / 10.0))
                .put("rss_before_kib", json!(r.rss_before_kib))
                .put("rss_after_kib", json!(r.rss_after_kib));
            println!("{}", line.finish());
            results.push(r);
        }
        table.push((fault, results));
    }
    eprintln!("{}", markdown(&table));
    let lost: u64 = table.iter().flat_map(|(_, rs)| rs.iter().map(|r| r.lost + r.torn)).sum();
    if lost > 0 {
        bail!("{lost} acknowledged operations lost or half-written records served (see the table)");
    }
    Ok(())
}

fn markdown(table: &[(Fault, Vec<Round>)]) -> String {
    let mut out = String::from(
        "| fault (kill -9 during) | rounds | acknowledged | lost | half-written served | recovery p50 / max (ms) | RSS before → after (KiB, median) |\n|---|---|---|---|---|---|---|\n",
    );
    for (fault, rounds) in table {
        let mut recovery: Vec<f64> = rounds.iter().map(|r| r.recovery.as_secs_f64() * 1e3).collect();
        recovery.sort_by(f64::total_cmp);
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        let before = median(rounds.iter().filter_map(|r| r.rss_before_kib).collect());
        let after = median(rounds.iter().filter_map(|r| r.rss_after_kib).collect());
        let kib = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} / {:.1} | {} → {} |\n",
            fault.name(),
            rounds.len(),
            rounds.iter().map(|r| r.acknowledged).sum::<u64>(),
            rounds.iter().map(|r| r.lost).sum::<u64>(),
            rounds.iter().map(|r| r.torn).sum::<u64>(),
            recovery.get(recovery.len() / 2).copied().unwrap_or(0.0),
            recovery.last().copied().unwrap_or(0.0),
            kib(before),
            kib(after),
        ));
    }
    out
}

/// A pseudo-random delay in `[low, high)`: faults at no fixed phase.
fn random_between(low: Duration, high: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut x = u64::from(nanos) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    low + (high - low).mul_f64((x % 10_000) as f64 / 10_000.0)
}

/// The gateway's configuration for a round, in `dir`; with `mqtt`, the
/// bridge to a broker on that port, its spool in `dir/spool`.
fn config(dir: &Path, port: u16, mqtt: Option<u16>) -> String {
    let bridge = match mqtt {
        Some(mqtt) => format!(
            "\n[mqtt]\nbroker = \"127.0.0.1:{mqtt}\"\nclient_id = \"trellis-faults\"\ntopic_prefix = \"faults\"\n\
             qos = 1\nspool_dir = \"{}\"\n",
            dir.join("spool").display()
        ),
        None => String::new(),
    };
    bridge
        + &format!(
            r#"# Generated by stress-test faults.
[policy]
allow_unsigned = true

[[device]]
bind = "127.0.0.1"
port = {port}
plugin = "builtin:demo-building"
data_dir = "{data}"
create_objects = ["analog-value"]

[device.limits]
answer_octets_per_second = 0

[device.persistence]
dir = "{state}"
durability = "power-loss"

[[device.file]]
instance = 1
name = "fault-log"
path = "log.txt"
access = "stream"
writable = true
max_size = 16777216
"#,
            data = dir.join("data").display(),
            state = dir.join("state").display(),
        )
}

struct Gateway {
    process: Spawned,
    admin: PathBuf,
    started: Instant,
}

fn start(env: &Env, dir: &Path, port: u16, mqtt: Option<u16>, name: &str) -> anyhow::Result<Gateway> {
    let config_file = dir.join("trellis.toml");
    std::fs::write(&config_file, config(dir, port, mqtt))?;
    let admin = dir.join("admin").join("admin.sock");
    let args = ["run", "--config", &config_file.display().to_string(), "--admin-socket", &admin.display().to_string()]
        .map(String::from);
    let started = Instant::now();
    let process = Spawned::start(name, &env.programs.trellis, &args, &env.programs, env.server_cpu.as_deref())?;
    Ok(Gateway { process, admin, started })
}

/// Wait for the first answered ReadProperty; how long it took from the
/// spawn (asked every 5 ms, each with a 20 ms timeout: a request sent
/// before the port is bound is lost, and must not cost a long timeout).
async fn ready(device: &DeviceAddress, gateway: &Gateway) -> anyhow::Result<Duration> {
    let client = Client::bind(crate::workload::client_config(Duration::from_millis(20), 1)).await?;
    let any_device = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 4_194_303 };
    while gateway.started.elapsed() < Duration::from_secs(60) {
        if client.read_property(device, any_device, P::OBJECT_NAME, None).await.is_ok() {
            return Ok(gateway.started.elapsed());
        }
        if let Some(status) = gateway.process.exited() {
            bail!("the gateway exited ({status}): {}", gateway.process.log_tail());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    bail!("the gateway did not answer within 60 s: {}", gateway.process.log_tail())
}

async fn one_round(env: &Env, fault: Fault, round: u32, swap_file: &Path) -> anyhow::Result<Round> {
    let dir = env.programs.work_dir.join(format!("faults-{}-{round}", fault.name()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data"))?;
    std::fs::write(dir.join("data").join("log.txt"), b"")?;
    let port = free_port()?;
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let client = Client::bind(crate::workload::client_config(Duration::from_millis(500), 1)).await?;

    // The spool fault's broker is down until the restart: every change
    // the gateway makes goes to its spool, and stays there.
    let mqtt = (fault == Fault::Spool).then(free_port).transpose()?;
    let gateway = start(env, &dir, port, mqtt, &format!("trellis-faults-{}-{round}", fault.name()))?;
    ready(&device, &gateway).await?;
    let progress = Arc::new(Mutex::new(Progress::default()));
    let load = tokio::spawn(operations(client.clone(), device.clone(), fault, progress.clone()));
    let swapping = (fault == Fault::Swap).then(|| swapper(gateway.admin.clone(), swap_file.to_path_buf()));
    // Some operations acknowledged first, then the kill at no fixed phase.
    while progress.lock().unwrap().acked.is_empty() {
        if load.is_finished() {
            bail!("{}: the first operation failed: {}", fault.name(), gateway.process.log_tail());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(random_between(Duration::from_millis(200), Duration::from_millis(1500))).await;
    let rss_before_kib = procfs::status_kib(gateway.process.pid, "VmRSS");
    drop(gateway); // SIGKILL, reaped
    let _ = load.await;
    if let Some((stop, thread)) = swapping {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = thread.join();
    }

    let listening = match mqtt {
        Some(mqtt) => {
            let broker_dir = dir.join("broker");
            std::fs::create_dir_all(&broker_dir)?;
            let broker = super::flaps::broker(env, &broker_dir, mqtt, round)?;
            let heard = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            spool_listener(mqtt, heard.clone(), stop.clone()).await?;
            Some((broker, heard, stop))
        }
        None => None,
    };
    let gateway = start(env, &dir, port, mqtt, &format!("trellis-faults-{}-{round}-again", fault.name()))?;
    let recovery = ready(&device, &gateway).await?;
    let progress = std::mem::take(&mut *progress.lock().unwrap());
    let (lost, torn) = match listening {
        Some((broker, heard, stop)) => {
            let found = verify_spool(&client, &device, &progress, &heard).await;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            super::flaps::stop_broker(broker);
            found?
        }
        None => verify(&client, &device, fault, &progress).await?,
    };
    let rss_after_kib = procfs::status_kib(gateway.process.pid, "VmRSS");
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Round { acknowledged: progress.acked.len() as u64, lost, torn, recovery, rss_before_kib, rss_after_kib })
}

/// Operations back to back until one fails (the gateway is gone).
async fn operations(client: Client, device: DeviceAddress, fault: Fault, progress: Arc<Mutex<Progress>>) {
    for n in 1.. {
        progress.lock().unwrap().sent = n;
        let done = match fault {
            Fault::Write | Fault::Swap | Fault::Spool => client
                .write_property(
                    &device,
                    SETPOINT,
                    P::PRESENT_VALUE,
                    None,
                    AnyValue::primitive(Value::Real(n as f32)),
                    Some(8),
                )
                .await
                .is_ok(),
            Fault::Create => {
                let id = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: FIRST_CREATED + n as u32 };
                client.create_object(&device, ObjectSpecifier::Identifier(id), Vec::new()).await.is_ok()
            }
            Fault::File => {
                let data = FileData::Stream { start_position: -1, data: record(n) };
                client.atomic_write_file(&device, LOG_FILE, data).await.is_ok()
            }
        };
        if !done {
            return;
        }
        progress.lock().unwrap().acked.push(n);
    }
}

/// Hot swaps of the device's plugin over and over, until told to stop.
fn swapper(socket: PathBuf, file: PathBuf) -> (Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::spawn(move || {
        let Ok(device) = super::swap::device_instance(&socket) else { return };
        let request = trellis::admin::Request::Swap { device, file };
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            if runtime.block_on(trellis::admin::request(&socket, &request, Duration::from_secs(10))).is_err() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });
    (stop, thread)
}

/// (lost, torn): acknowledged operations the restarted gateway does not
/// serve, and what it serves that was never sent or is partial.
async fn verify(client: &Client, device: &DeviceAddress, fault: Fault, p: &Progress) -> anyhow::Result<(u64, u64)> {
    let last = p.acked.last().copied().unwrap_or(0);
    let in_flight = p.in_flight();
    match fault {
        Fault::Write | Fault::Swap | Fault::Spool => {
            let v = client.read_property(device, SETPOINT, P::PRIORITY_ARRAY, Some(8)).await?;
            let served = match v.as_primitive() {
                Some(Value::Real(x)) => Some(*x as u64),
                _ => None,
            };
            Ok(match served {
                Some(n) if n == last || Some(n) == in_flight => (0, 0),
                Some(n) if n < last => (1, 0),
                None if last > 0 => (1, 0),
                _ => (0, 1),
            })
        }
        Fault::Create => {
            let device_object = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 4_194_303 };
            let list = client.read_property(device, device_object, P::OBJECT_LIST, None).await?;
            let created: std::collections::BTreeSet<u64> = list
                .0
                .iter()
                .filter_map(|e| match e {
                    bacnet::Element::Application(Value::ObjectIdentifier(o))
                        if o.object_type == ObjectType::ANALOG_VALUE && o.instance > FIRST_CREATED =>
                    {
                        Some(u64::from(o.instance - FIRST_CREATED))
                    }
                    _ => None,
                })
                .collect();
            let lost = p.acked.iter().filter(|n| !created.contains(n)).count() as u64;
            let torn = created.iter().filter(|n| !p.acked.contains(n) && Some(**n) != in_flight).count() as u64;
            Ok((lost, torn))
        }
        Fault::File => {
            let content = client.read_file(device, LOG_FILE, 64 << 20).await?;
            let expected: Vec<u8> = p.acked.iter().flat_map(|&n| record(n)).collect();
            if content == expected || in_flight.is_some_and(|n| content == [&expected[..], &record(n)[..]].concat()) {
                return Ok((0, 0));
            }
            // Which acknowledged records are missing, and how much else is there.
            let text = String::from_utf8_lossy(&content);
            let whole: Vec<&str> = text.split_inclusive('\n').collect();
            let lost =
                p.acked.iter().filter(|&&n| !whole.contains(&String::from_utf8_lossy(&record(n)).as_ref())).count();
            let torn = whole.iter().filter(|l| !l.ends_with('\n') || !l.starts_with("record ")).count();
            Ok((lost as u64, torn.max(1) as u64))
        }
    }
}

/// What the spool fault's subscriber heard on `faults/+/analog-value,1`:
/// each message's Present_Value, or the payload it could not read.
type Heard = Arc<Mutex<Vec<Result<f64, String>>>>;

/// Subscribe (QoS 1) before the gateway comes back; returns once subscribed.
async fn spool_listener(port: u16, heard: Heard, stop: Arc<std::sync::atomic::AtomicBool>) -> anyhow::Result<()> {
    let mut o = rumqttc::MqttOptions::new("faults-subscriber", "127.0.0.1", port);
    o.set_keep_alive(Duration::from_secs(5));
    let (client, mut events) = rumqttc::AsyncClient::new(o, 1024);
    let (subscribed, acked) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut subscribed = Some(subscribed);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match events.poll().await {
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(_))) => {
                    let _ = client.try_subscribe("faults/+/analog-value,1", rumqttc::QoS::AtLeastOnce);
                }
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::SubAck(_))) => {
                    if let Some(s) = subscribed.take() {
                        let _ = s.send(());
                    }
                }
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                    let value = serde_json::from_slice::<serde_json::Value>(&p.payload)
                        .ok()
                        .and_then(|v| v["present-value"].as_f64())
                        .ok_or_else(|| String::from_utf8_lossy(&p.payload).into_owned());
                    heard.lock().unwrap().push(value);
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), acked).await.context("the subscriber's SUBACK")??;
    Ok(())
}

/// (lost, torn) for the spool fault, once the restarted gateway has
/// published the value BACnet serves (its initial message at the
/// reconnection, after what the spool kept): the messages before it are
/// the spool's, and must be whole values that were sent, rising by one
/// from their first (each acknowledged write is a change of at least 1.0,
/// each a message), and the last must be what BACnet serves.
async fn verify_spool(
    client: &Client,
    device: &DeviceAddress,
    p: &Progress,
    heard: &Heard,
) -> anyhow::Result<(u64, u64)> {
    let served = match client.read_property(device, SETPOINT, P::PRESENT_VALUE, None).await?.as_primitive() {
        Some(Value::Real(x)) => f64::from(*x),
        other => bail!("analog-value,1 Present_Value: {other:?}"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && heard.lock().unwrap().last() != Some(&Ok(served)) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let heard = heard.lock().unwrap().clone();
    Ok(judge_spool(&heard, served, p))
}

/// The demo building's setpoint before any write: the spool's first message.
const RELINQUISHED: f64 = 21.0;

/// See [`verify_spool`]: after the setpoint's value at the first start,
/// 1, 2, … up to the last change the spool took (the first write was
/// acknowledged at least 200 ms before the kill: it is in the spool), then
/// the value served after the restart. QoS 1 may repeat a message, which
/// is no loss.
fn judge_spool(heard: &[Result<f64, String>], served: f64, p: &Progress) -> (u64, u64) {
    let sent = p.sent as f64;
    let heard = match heard.first() {
        Some(Ok(v)) if *v == RELINQUISHED => &heard[1..],
        _ => heard,
    };
    let mut torn = 0u64;
    let mut values = Vec::new();
    for h in heard {
        match h {
            Ok(v) if *v == v.trunc() && *v >= 1.0 && *v <= sent => values.push(*v as u64),
            _ => torn += 1,
        }
    }
    values.dedup();
    // Missing at the front, in the middle (or out of order), at the end.
    let mut lost = values.first().map_or(1, |&first| first.saturating_sub(1));
    for pair in values.windows(2) {
        if pair[1] != pair[0] + 1 {
            lost += pair[1].abs_diff(pair[0] + 1).max(1);
        }
    }
    if values.last().map(|&v| v as f64) != Some(served) {
        lost += 1;
    }
    (lost, torn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(sent: u64) -> Progress {
        Progress { sent, acked: (1..sent).collect() }
    }

    fn ok(v: &[f64]) -> Vec<Result<f64, String>> {
        v.iter().map(|&v| Ok(v)).collect()
    }

    #[test]
    fn the_spool_judge_wants_every_change_from_the_first_in_order_ending_at_the_served_value() {
        let whole = ok(&[RELINQUISHED, 1.0, 2.0, 3.0, 3.0, 4.0, 4.0]);
        assert_eq!(judge_spool(&whole, 4.0, &progress(5)), (0, 0), "repeats are QoS 1's");
        assert_eq!(judge_spool(&ok(&[1.0, 2.0]), 2.0, &progress(5)), (0, 0), "no initial message");
        assert_eq!(judge_spool(&ok(&[RELINQUISHED, 1.0, 3.0, 4.0]), 4.0, &progress(5)), (1, 0), "2 is missing");
        assert_eq!(judge_spool(&ok(&[RELINQUISHED, 3.0, 4.0]), 4.0, &progress(5)), (2, 0), "1 and 2 are missing");
        assert_eq!(judge_spool(&ok(&[1.0, 2.0]), 3.0, &progress(5)), (1, 0), "the served 3 never came");
        assert_eq!(judge_spool(&ok(&[1.0, 9.0, 2.0]), 2.0, &progress(5)), (0, 1), "9 was never sent");
        let garbage = vec![Ok(1.0), Err("{\"present-val".into()), Ok(2.0)];
        assert_eq!(judge_spool(&garbage, 2.0, &progress(5)), (0, 1));
    }
}
