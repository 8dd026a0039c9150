//! The broker link against a real mosquitto on loopback (Debian's package,
//! installed by the README's test command):
//!
//! ```text
//! link ──QoS 1 publishes──▶ mosquitto ──▶ a durable subscriber: every message, in order per topic
//! mosquitto stopped ── link publishes 300 (spooled on disk) ── the gateway stops, starts again (spool reopened)
//! mosquitto back (sessions persisted) ── link replays ──▶ subscriber: all 300, in order; the spool empties
//! ```

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use trellis_mqtt::link::{Link, LinkConfig};
use trellis_mqtt::spool::{Spool, SpoolConfig};

/// A fresh directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("trellis-mqtt-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// mosquitto on 127.0.0.1:`port`, persisting sessions in `dir`; stopped
/// (SIGTERM: it saves them) and reaped by PID when dropped.
struct Broker(Child);

impl Broker {
    fn start(port: u16, dir: &Path) -> Broker {
        // mosquitto started as root drops to its own user, which must be
        // able to write its persistence file here.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let conf = dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location {}/\n",
                dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("mosquitto")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto is installed by the README's test command (.ci/setup)");
        // Reaped by Drop, whatever happens next.
        let broker = Broker(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return broker;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("mosquitto did not listen on {port} within 5 s");
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A durable QoS 1 subscriber to `site/#` that keeps reconnecting; what it
/// got, in arrival order.
fn subscriber(port: u16) -> Arc<Mutex<Vec<(String, String)>>> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let mut o = MqttOptions::new("durable-subscriber", "127.0.0.1", port);
    o.set_clean_session(false);
    o.set_keep_alive(Duration::from_secs(5));
    let (client, mut events) = AsyncClient::new(o, 1024);
    let sink = got.clone();
    tokio::spawn(async move {
        let _client = client.clone();
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    let _ = client.try_subscribe("site/#", QoS::AtLeastOnce);
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    sink.lock().unwrap().push((p.topic.clone(), String::from_utf8_lossy(&p.payload).into_owned()));
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    got
}

async fn until(what: &str, secs: u64, ok: impl Fn() -> bool) {
    for _ in 0..secs * 20 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out ({secs} s) waiting for {what}");
}

fn link_config(port: u16) -> LinkConfig {
    let mut c = LinkConfig::new("127.0.0.1", port, "trellis-test");
    c.reconnect = Duration::from_millis(200);
    c.max_reconnect = Duration::from_millis(500);
    c
}

/// Per topic, the payloads in arrival order.
fn by_topic(got: &[(String, String)]) -> std::collections::BTreeMap<String, Vec<u32>> {
    let mut m: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for (t, p) in got.iter().filter(|(t, _)| t.starts_with("site/point/")) {
        m.entry(t.clone()).or_default().push(p.parse().unwrap());
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_points_reach_a_subscriber_in_order_and_the_spool_empties() {
    let dir = Dir::new("order");
    let port = free_port();
    let _broker = Broker::start(port, &dir.0);
    let got = subscriber(port);
    until("the subscriber", 10, || true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (spool, _) = Spool::open(SpoolConfig::new(dir.0.join("spool"))).unwrap();
    let (link, _incoming) = Link::start(link_config(port), spool);
    for i in 0..500u32 {
        link.publish(&format!("site/point/{}", i % 10), 1, (i / 10).to_string().as_bytes()).unwrap();
    }
    until("500 messages at the subscriber", 30, || {
        got.lock().unwrap().iter().filter(|(t, _)| t.starts_with("site/point/")).count() >= 500
    })
    .await;
    for (topic, values) in by_topic(&got.lock().unwrap()) {
        assert_eq!(values, (0..50).collect::<Vec<_>>(), "{topic}: every value once, in order");
    }
    until("the spool empty", 10, || link.pending() == 0).await;
    assert_eq!(link.status().delivered, 500);
    assert!(link.status().connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_and_a_gateway_restart_lose_nothing() {
    let dir = Dir::new("outage");
    let port = free_port();
    let broker = Broker::start(port, &dir.0);
    let got = subscriber(port);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let spool_dir = dir.0.join("spool");
    let (spool, _) = Spool::open(SpoolConfig::new(&spool_dir)).unwrap();
    let (link, _incoming) = Link::start(link_config(port), spool);
    until("the link connected", 10, || link.status().connected).await;

    // The broker goes (it saves the subscriber's session); the gateway
    // publishes into its spool meanwhile, then stops.
    drop(broker);
    until("the link's loss", 10, || !link.status().connected).await;
    for i in 0..300u32 {
        link.publish(&format!("site/point/{}", i % 3), 1, (i / 3).to_string().as_bytes()).unwrap();
    }
    assert_eq!(link.pending(), 300);
    drop(link);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // The gateway starts again: its spool is read back; the broker returns.
    let (spool, recovered) = Spool::open(SpoolConfig::new(&spool_dir)).unwrap();
    assert_eq!(recovered.pending, 300);
    let (link, _incoming) = Link::start(link_config(port), spool);
    let _broker = Broker::start(port, &dir.0);
    assert!(dir.0.join("mosquitto.db").exists(), "the broker saved the subscriber's session");
    until("all 300 at the subscriber", 60, || {
        by_topic(&got.lock().unwrap()).values().map(|v| v.len()).sum::<usize>() >= 300
    })
    .await;
    for (topic, values) in by_topic(&got.lock().unwrap()) {
        let mut first_seen = values.clone();
        first_seen.dedup();
        assert_eq!(first_seen, (0..100).collect::<Vec<_>>(), "{topic}: in order, nothing lost");
    }
    until("the spool empty", 10, || link.pending() == 0).await;
}

/// TLS to the broker: mosquitto with a certificate from a test CA; the
/// link checks it against that CA and delivers; with another CA's
/// certificate as its issuer it refuses the broker (and says why).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_the_broker_is_checked_against_the_configured_issuer() {
    let dir = Dir::new("tls");
    let pki = dir.0.join("pki");
    trellis_sc::pki::write_test_pki(&pki, &["127.0.0.1"], 0, 1, &[]).unwrap();
    let other = dir.0.join("other");
    trellis_sc::pki::write_test_pki(&other, &["127.0.0.1"], 0, 1, &[]).unwrap();
    // mosquitto started as root drops to its own user: let it read this
    // throwaway key (written 0600).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(pki.join("hub.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let port = free_port();
    let conf = dir.0.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\ncafile {p}/ca.pem\ncertfile {p}/hub.pem\nkeyfile {p}/hub.key\n",
            p = pki.display()
        ),
    )
    .unwrap();
    let child =
        Command::new("mosquitto").arg("-c").arg(&conf).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let _broker = Broker(child);
    until("mosquitto listening", 10, || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()).await;

    let mut config = link_config(port);
    config.tls = Some(trellis_mqtt::tls::client_config(&pki.join("ca.pem"), None).unwrap());
    let (spool, _) = Spool::open(SpoolConfig::new(dir.0.join("spool"))).unwrap();
    let (link, _incoming) = Link::start(config, spool);
    link.publish("site/tls", 1, b"sealed").unwrap();
    until("the message delivered over TLS", 10, || link.status().delivered == 1).await;

    let mut wrong = link_config(port);
    wrong.client_id = "trellis-wrong-ca".into();
    wrong.tls = Some(trellis_mqtt::tls::client_config(&other.join("ca.pem"), None).unwrap());
    let (spool, _) = Spool::open(SpoolConfig::new(dir.0.join("spool-wrong"))).unwrap();
    let (refused, _incoming) = Link::start(wrong, spool);
    refused.publish("site/tls", 1, b"never").unwrap();
    until("the refusal", 10, || refused.status().losses >= 1).await;
    assert!(!refused.status().connected);
    let why = refused.status().last_error.unwrap_or_default();
    assert!(why.to_lowercase().contains("certificate") || why.contains("Tls") || why.contains("TLS"), "{why}");
    assert_eq!(refused.pending(), 1, "kept for when the broker can be trusted");
}

/// Per topic, whether what arrived is every value 0..n in order, repeats
/// allowed only as a replay of what was already seen (at least once); and
/// how many repeats there were.
fn in_order_at_least_once(values: &[u32], n: u32) -> Result<usize, String> {
    let (mut next, mut repeats) = (0u32, 0usize);
    for &v in values {
        match v {
            v if v == next => next += 1,
            v if v < next => repeats += 1,
            v => return Err(format!("{v} arrived before {next}: lost or reordered")),
        }
    }
    if next != n {
        return Err(format!("only 0..{next} of 0..{n} arrived"));
    }
    Ok(repeats)
}

/// The issue's outage test: 1,000 points changing, the broker stopped for
/// 30 s, the gateway restarted in the middle (its spool ending in a torn
/// write), the broker back.
///
/// ```text
/// rounds 0-1 ──▶ broker ──▶ subscriber
/// broker stops ── rounds 2-3 spooled ── gateway stops, a torn record is left at the spool's end
/// gateway starts (torn tail cut, not fatal) ── round 4 spooled ── 30 s after the stop, the broker is back
/// replay (paced) ──▶ subscriber: every change of every point, in order, at least once
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thirty_second_outage_with_a_restart_and_a_torn_write_loses_none_of_1000_points() {
    const POINTS: u32 = 1000;
    const ROUNDS: u32 = 5;
    let dir = Dir::new("thousand");
    let port = free_port();
    let broker = Broker::start(port, &dir.0);
    let got = subscriber(port);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let spool_dir = dir.0.join("spool");
    let mut config = link_config(port);
    config.pace = Some(5_000);
    let (spool, _) = Spool::open(SpoolConfig::new(&spool_dir)).unwrap();
    let (link, _incoming) = Link::start(config.clone(), spool);
    until("the link connected", 10, || link.status().connected).await;
    let round = |link: &Link, r: u32| {
        for p in 0..POINTS {
            link.publish(&format!("site/point/{p}"), 1, r.to_string().as_bytes()).unwrap();
        }
    };
    round(&link, 0);
    round(&link, 1);
    until("rounds 0 and 1 delivered", 60, || link.pending() == 0).await;

    drop(broker);
    let stopped = std::time::Instant::now();
    until("the link's loss", 10, || !link.status().connected).await;
    round(&link, 2);
    round(&link, 3);
    drop(link);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The gateway died writing a record: half of one is left at the end of the newest segment.
    let newest = std::fs::read_dir(&spool_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .max()
        .unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&newest).unwrap();
    std::io::Write::write_all(&mut file, &[1, 200, 0, 0, 0, 0xde, 0xad]).unwrap();
    drop(file);

    let (spool, recovered) = Spool::open(SpoolConfig::new(&spool_dir)).unwrap();
    assert!(recovered.torn_tail, "the torn write is found: {recovered:?}");
    assert_eq!(recovered.pending, 2 * POINTS as usize, "rounds 2 and 3 kept");
    let (link, _incoming) = Link::start(config, spool);
    round(&link, 4);
    let down_for = Duration::from_secs(30).saturating_sub(stopped.elapsed());
    tokio::time::sleep(down_for).await;
    let back = std::time::Instant::now();
    let _broker = Broker::start(port, &dir.0);
    until("every change at the subscriber", 120, || {
        by_topic(&got.lock().unwrap()).values().map(|v| v.len()).sum::<usize>() >= (POINTS * ROUNDS) as usize
    })
    .await;
    let replayed_in = back.elapsed();
    until("the spool empty", 30, || link.pending() == 0).await;
    let arrived = by_topic(&got.lock().unwrap());
    assert_eq!(arrived.len(), POINTS as usize, "every point");
    let mut repeats = 0;
    for (topic, values) in &arrived {
        repeats += in_order_at_least_once(values, ROUNDS).unwrap_or_else(|e| panic!("{topic}: {e}"));
    }
    eprintln!(
        "outage test: {} changes of {POINTS} points after a 30 s outage and a restart: replayed in {:.2} s \
         (paced at 5,000/s), {repeats} repeats",
        POINTS * 3,
        replayed_in.as_secs_f64()
    );
}

/// Sizes both ways: a message over [`LinkConfig::max_incoming`] comes out
/// marked, without its payload, and the connection stays; what the link
/// publishes is bounded by the spool, not by rumqttc's 10 KiB default.
///
/// ```text
/// client ──site/in/big (100,000 octets)──▶ mosquitto ──▶ link (max 1 KiB): Incoming { oversized: Some(100000) }
///   (past the codec's bound of 1 KiB + 65,539: discarded as it arrives, never buffered)
/// client ──site/in/mid (5,000 octets)───▶ mosquitto ──▶ link: Incoming { oversized: Some(5000) }
///   (under the codec's bound: buffered whole, then refused by the link)
/// client ──site/in/small "ok"─────────▶ mosquitto ──▶ link: Incoming { payload: "ok" }   (same connection)
/// link ──site/out/big (200 KB)────────▶ mosquitto ──▶ client
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_is_handed_on_marked_and_large_publishes_go_out() {
    let dir = Dir::new("sizes");
    let port = free_port();
    let _broker = Broker::start(port, &dir.0);
    let mut config = link_config(port);
    config.max_incoming = 1024;
    config.subscriptions = vec!["site/in/#".into()];
    let (spool, _) = Spool::open(SpoolConfig::new(dir.0.join("spool"))).unwrap();
    let (link, mut incoming) = Link::start(config, spool);
    until("the link connected", 10, || link.status().connected).await;

    let mut o = MqttOptions::new("sizes-client", "127.0.0.1", port);
    o.set_max_packet_size(1 << 20, 1 << 20);
    let (client, mut events) = AsyncClient::new(o, 64);
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let subscriber = client.clone();
    tokio::spawn(async move {
        while let Ok(event) = events.poll().await {
            match event {
                Event::Incoming(Packet::ConnAck(_)) => {
                    let _ = subscriber.try_subscribe("site/out/#", QoS::AtLeastOnce);
                }
                Event::Incoming(Packet::Publish(p)) => sink.lock().unwrap().push(p.payload.len()),
                _ => {}
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.publish("site/in/big", QoS::AtLeastOnce, false, vec![b'x'; 100_000]).await.unwrap();
    client.publish("site/in/mid", QoS::AtLeastOnce, false, vec![b'x'; 5000]).await.unwrap();
    client.publish("site/in/small", QoS::AtLeastOnce, false, "ok").await.unwrap();
    for (topic, octets) in [("site/in/big", 100_000), ("site/in/mid", 5000)] {
        let m = tokio::time::timeout(Duration::from_secs(10), incoming.recv()).await.unwrap().unwrap();
        assert_eq!((m.topic.as_str(), m.payload.len(), m.oversized), (topic, 0, Some(octets)));
    }
    let second = tokio::time::timeout(Duration::from_secs(10), incoming.recv()).await.unwrap().unwrap();
    assert_eq!(second, trellis_mqtt::link::Incoming::new("site/in/small", "ok"));

    link.publish("site/out/big", 1, &vec![b'y'; 200_000]).unwrap();
    until("200 KB at the client", 10, || got.lock().unwrap().contains(&200_000)).await;
    until("the spool empty", 10, || link.pending() == 0).await;
    let status = link.status();
    assert_eq!((status.incoming_oversized, status.losses, status.connects), (2, 0, 1), "{status:?}");
}
