//! `flaps`: the MQTT broker stops and starts every few seconds while
//! values change (issue 41, item 4, the broker part). Nothing the gateway
//! took may be lost: every value a client wrote and the gateway
//! acknowledged reaches a subscriber, in order, once the broker stays up.
//!
//! ```text
//! our client ──WriteProperty analog-value,1 = n (every 20 ms)──▶ Trellis ──COV──▶ spool ──▶ mosquitto ──▶ durable subscriber
//!                                                  mosquitto: SIGTERM, start again, every --period
//! ```
//!
//! mosquitto keeps its sessions on disk (persistence, saved at SIGTERM), so
//! the subscriber's session (QoS 1, clean session off) survives each flap
//! and a message the broker took is the broker's to deliver. One JSON line
//! per round: writes acknowledged, values heard (distinct and with
//! repeats: QoS 1 is at least once), acknowledged values never heard,
//! values heard out of order, broker restarts, the time from the last
//! restart until the last acknowledged value arrived, and the gateway's
//! resident memory before and after.
//!
//! A benchmark, not a test. Trellis only; needs mosquitto (the README's
//! test command installs it).

use super::Env;
use crate::json_line::JsonLine;
use crate::procfs;
use crate::target::{Spawned, free_port};
use anyhow::{Context, bail};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trellis::client::{Client, DeviceAddress};

const DEVICE: u32 = 1001;
const SETPOINT: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
const TOPIC: &str = "flaps/1001/analog-value,1";
/// The first value written, one less.
const FIRST_VALUE: u32 = 1000;

/// What to run: `rounds` of `duration` each, the broker restarted every `period`.
#[derive(Debug, Clone, Copy)]
pub struct FlapOptions {
    /// Rounds, a fresh gateway and broker each.
    pub rounds: u32,
    /// How long values are written (and the broker flaps).
    pub duration: Duration,
    /// Time between two broker restarts.
    pub period: Duration,
}

/// Run the scenario: one JSON line per round, a table on stderr.
pub fn run(env: &Env, o: &FlapOptions) -> anyhow::Result<()> {
    anyhow::ensure!(o.rounds >= 1, "--rounds: at least 1");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut rows = Vec::new();
    for round in 1..=o.rounds {
        let line = runtime.block_on(one_round(env, o, round))?.finish();
        println!("{line}");
        rows.push(line);
    }
    let mut lost = 0;
    eprintln!(
        "| round | writes acknowledged | values heard (with repeats) | lost | out of order | broker restarts | drained after (s) |"
    );
    eprintln!("|---|---|---|---|---|---|---|");
    for row in &rows {
        let v: serde_json::Value = serde_json::from_str(row)?;
        lost += v["lost"].as_u64().unwrap_or(0);
        eprintln!(
            "| {} | {} | {} ({}) | {} | {} | {} | {} |",
            v["round"],
            v["acknowledged"],
            v["heard"],
            v["heard_with_repeats"],
            v["lost"],
            v["out_of_order"],
            v["broker_restarts"],
            v["drained_after_s"]
        );
    }
    if lost > 0 {
        bail!("{lost} acknowledged values never reached the subscriber");
    }
    Ok(())
}

pub(super) fn broker(env: &Env, dir: &Path, port: u16, n: u32) -> anyhow::Result<Spawned> {
    // mosquitto started as root drops to its own user, which must write here.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location {}/\n",
            dir.display()
        ),
    )?;
    let args = ["-c".to_string(), conf.display().to_string()];
    let spawned = Spawned::start(&format!("mosquitto-flaps-{n}"), Path::new("mosquitto"), &args, &env.programs, None)
        .context("mosquitto (the README's test command installs it)")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "mosquitto did not listen on {port}: {}", spawned.log_tail());
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(spawned)
}

/// SIGTERM (mosquitto saves its sessions), then wait for it to go.
pub(super) fn stop_broker(b: Spawned) {
    let _ = std::process::Command::new("kill").args(["-TERM", &b.pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.exited().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(b);
}

fn gateway_config(dir: &Path, port: u16, mqtt: u16) -> String {
    format!(
        r#"# Generated by stress-test flaps.
[[device]]
bind = "127.0.0.1"
port = {port}
instance = {DEVICE}
plugin = "builtin:demo-building"

[mqtt]
broker = "127.0.0.1:{mqtt}"
client_id = "trellis-flaps"
topic_prefix = "flaps"
qos = 1
spool_dir = "{spool}"
"#,
        spool = dir.join("spool").display()
    )
}

/// A durable QoS 1 subscriber to [`TOPIC`]: every Present_Value heard, in order.
/// `fresh_sessions` counts the connections on which the broker had no
/// session for it (the first one's aside): values published meanwhile
/// were the broker's to drop.
pub(super) fn subscriber(
    port: u16,
    heard: Arc<Mutex<Vec<f64>>>,
    fresh_sessions: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
) {
    let mut o = rumqttc::MqttOptions::new("flaps-subscriber", "127.0.0.1", port);
    o.set_clean_session(false);
    o.set_keep_alive(Duration::from_secs(5));
    let (client, mut events) = rumqttc::AsyncClient::new(o, 1024);
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            match events.poll().await {
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::ConnAck(ack))) => {
                    if !ack.session_present {
                        fresh_sessions.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = client.try_subscribe(TOPIC, rumqttc::QoS::AtLeastOnce);
                }
                Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                    let value = serde_json::from_slice::<serde_json::Value>(&p.payload)
                        .ok()
                        .and_then(|v| v["present-value"].as_f64());
                    if let Some(v) = value {
                        heard.lock().unwrap().push(v);
                    }
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
}

async fn one_round(env: &Env, o: &FlapOptions, round: u32) -> anyhow::Result<JsonLine> {
    let dir = env.programs.work_dir.join(format!("flaps-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    let broker_dir = dir.join("broker");
    std::fs::create_dir_all(&broker_dir)?;
    let (port, mqtt) = (free_port()?, free_port()?);
    let mut restarts = 0;
    let mut mosquitto = Some(broker(env, &broker_dir, mqtt, restarts)?);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let fresh_sessions = Arc::new(AtomicU32::new(0));
    subscriber(mqtt, heard.clone(), fresh_sessions.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(500)).await;

    let config = dir.join("trellis.toml");
    std::fs::write(&config, gateway_config(&dir, port, mqtt))?;
    let args = ["run", "--config", &config.display().to_string()].map(String::from);
    let gateway = Spawned::start(&format!("trellis-flaps-{round}"), &env.programs.trellis, &args, &env.programs, None)?;
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let client = Client::bind(crate::workload::client_config(Duration::from_millis(500), 1)).await?;
    let started = Instant::now();
    let any_device = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 4_194_303 };
    while client.read_property(&device, any_device, P::OBJECT_NAME, None).await.is_err() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "the gateway did not answer: {}",
            gateway.log_tail()
        );
    }
    let rss_before_kib = procfs::status_kib(gateway.pid, "VmRSS");

    // Write 1001, 1002, … every 20 ms for the round (above any value the
    // setpoint had before: the first heard is its initial one); flap the
    // broker meanwhile.
    let mut acked = Vec::new();
    let t0 = Instant::now();
    let mut next_flap = t0 + o.period;
    let mut n = FIRST_VALUE;
    while t0.elapsed() < o.duration {
        n += 1;
        let value = AnyValue::primitive(Value::Real(n as f32));
        if client.write_property(&device, SETPOINT, P::PRESENT_VALUE, None, value, Some(8)).await.is_ok() {
            acked.push(f64::from(n));
        }
        if Instant::now() >= next_flap {
            if let Some(b) = mosquitto.take() {
                let (env, dir) = (env.clone(), broker_dir.clone());
                restarts += 1;
                let r = restarts;
                mosquitto = Some(
                    tokio::task::spawn_blocking(move || {
                        stop_broker(b);
                        broker(&env, &dir, mqtt, r)
                    })
                    .await??,
                );
            }
            next_flap += o.period;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let last_restart = Instant::now();
    // The broker stays up now: wait for the last acknowledged value.
    let last = acked.last().copied();
    let deadline = Instant::now() + Duration::from_secs(120);
    while last.is_some_and(|l| !heard.lock().unwrap().contains(&l)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drained_after = last_restart.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after_kib = procfs::status_kib(gateway.pid, "VmRSS");
    stop.store(true, Ordering::Relaxed);
    // What was written: the initial value heard first is not.
    let heard: Vec<f64> = heard.lock().unwrap().iter().copied().filter(|v| *v > f64::from(FIRST_VALUE)).collect();
    let distinct: std::collections::BTreeSet<u64> = heard.iter().map(|v| *v as u64).collect();
    let lost_values: Vec<u64> = acked.iter().map(|v| *v as u64).filter(|v| !distinct.contains(v)).collect();
    let lost = lost_values.len();
    // Out of order: a value heard after a larger one (a repeat of an older
    // one after a reconnection is QoS 1's at-least-once, not counted).
    let mut highest = 0.0f64;
    let mut seen = std::collections::BTreeSet::new();
    let mut out_of_order = 0;
    let mut first_out_of_order = None;
    for (i, v) in heard.iter().enumerate() {
        if *v < highest && !seen.contains(&(*v as u64)) {
            out_of_order += 1;
            first_out_of_order.get_or_insert_with(|| heard[i.saturating_sub(5)..(i + 5).min(heard.len())].to_vec());
        }
        highest = highest.max(*v);
        seen.insert(*v as u64);
    }
    drop(gateway);
    if let Some(b) = mosquitto {
        stop_broker(b);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(JsonLine::new()
        .put("scenario", json!("flaps"))
        .put("round", json!(round))
        .put("secs", json!(o.duration.as_secs_f64()))
        .put("period_secs", json!(o.period.as_secs_f64()))
        .put("acknowledged", json!(acked.len()))
        .put("heard", json!(distinct.len()))
        .put("heard_with_repeats", json!(heard.len()))
        .put("lost", json!(lost))
        .put("lost_ranges", json!(ranges(&lost_values, 10)))
        .put("subscriber_fresh_sessions", json!(fresh_sessions.load(Ordering::Relaxed).saturating_sub(1)))
        .put("out_of_order", json!(out_of_order))
        .put("first_out_of_order", json!(first_out_of_order))
        .put("broker_restarts", json!(restarts))
        .put("drained_after_s", json!((drained_after.as_secs_f64() * 10.0).round() / 10.0))
        .put("rss_before_kib", json!(rss_before_kib))
        .put("rss_after_kib", json!(rss_after_kib)))
}

/// The first `at_most` runs of consecutive values, as `[first, last]`.
pub(super) fn ranges(values: &[u64], at_most: usize) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &v in values {
        if let Some(r) = out.last_mut()
            && r[1] + 1 == v
        {
            r[1] = v;
        } else if out.len() == at_most {
            break;
        } else {
            out.push([v, v]);
        }
    }
    out
}
