//! The MQTT bridge (`examples/mqtt.toml`) against a real mosquitto on
//! loopback, watched by `mosquitto_sub` and commanded by `mosquitto_pub`:
//!
//! ```text
//! gateway ──CONNECT (will: building/availability offline)──▶ mosquitto ──▶ building/availability online
//! device 1001 ──COV (local subscriber)──▶ building/1001/analog-value,1 {"present-value": …}
//! CLI ──WriteProperty 23.5 over B/IP──▶ device ──COV──▶ building/1001/analog-value,1 {"present-value": 23.5, …}
//! mosquitto_pub building/1001/analog-value,1/set {"value": 19.25} ──▶ WriteProperty ──▶ …/set/result {"ok": true}
//! ```

use crate::scratch::Scratch;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A child process killed by PID when dropped: SIGTERM, and SIGKILL if it
/// is still there 5 s later (mosquitto_sub's SIGTERM handler has been seen
/// to deadlock, which would hang the test forever).
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        for _ in 0..250 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn broker(port: u16, dir: &Path) -> Proc {
    let conf = dir.join("mosquitto.conf");
    std::fs::write(&conf, format!("listener {port} 127.0.0.1\nallow_anonymous true\n")).unwrap();
    let child = Command::new("mosquitto")
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto is installed by the README's test command (.ci/setup)");
    let p = Proc(child);
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return p;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("mosquitto did not listen on {port}");
}

/// `mosquitto_sub -v` on `building/#`.
pub fn watch(port: u16) -> (Proc, Arc<Mutex<Vec<String>>>) {
    watch_on(port, "building/#")
}

/// `mosquitto_sub -v` on `filter`: its lines as they come.
pub fn watch_on(port: u16, filter: &str) -> (Proc, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", filter, "-v", "-q", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto_sub (mosquitto-clients)");
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        // Lossy: a payload that is not UTF-8 must not end the watch.
        for line in std::io::BufReader::new(out).split(b'\n').map_while(Result::ok) {
            sink.lock().unwrap().push(String::from_utf8_lossy(&line).into_owned());
        }
    });
    (Proc(child), lines)
}

pub fn wait_for(lines: &Mutex<Vec<String>>, what: &str, ok: impl Fn(&str) -> bool) -> String {
    for _ in 0..600 {
        if let Some(l) = lines.lock().unwrap().iter().find(|l| ok(l)) {
            return l.clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no {what} within 30 s; seen:\n{}", lines.lock().unwrap().join("\n"));
}

#[test]
fn the_mqtt_example_publishes_changes_and_takes_writes() {
    let scratch = Scratch::new("mqtt", "example");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(Duration::from_millis(300));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mqtt.toml"))
        .unwrap()
        .replace("127.0.0.1:1883", &format!("127.0.0.1:{mqtt}"))
        .replace("password = \"change-me\"", &format!("password = \"change-me\"\nport = {bip}"));
    let config = scratch.path("mqtt.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    assert!(gateway.log().contains("trellis: MQTT to"), "{}", gateway.log());

    wait_for(&lines, "availability online", |l| l == "building/availability online");
    let first = wait_for(&lines, "a point of device 1001", |l| l.starts_with("building/1001/analog-value,1 {"));
    assert!(first.contains("\"present-value\"") && first.contains("\"status-flags\""), "{first}");

    // A change made over BACnet reaches MQTT.
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--port", "0"]).args(args).output().unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let device = format!("127.0.0.1:{bip}");
    let (ok, said) = cli(&["write", &device, "analog-value,1", "present-value", "23.5", "--priority", "8"]);
    assert!(ok, "{said}");
    wait_for(&lines, "23.5 in MQTT", |l| l.starts_with("building/1001/analog-value,1 {") && l.contains("23.5"));

    // A write asked over MQTT reaches the device, and its result comes back.
    let publish = |payload: &str| {
        let status = Command::new("mosquitto_pub")
            .args(["-h", "127.0.0.1", "-p", &mqtt.to_string(), "-q", "1"])
            .args(["-t", "building/1001/analog-value,1/set", "-m", payload])
            .status()
            .unwrap();
        assert!(status.success());
    };
    publish(r#"{"value": 19.25, "priority": 8}"#);
    wait_for(&lines, "the write's result", |l| l == r#"building/1001/analog-value,1/set/result {"ok":true}"#);
    let (ok, back) = cli(&["read", &device, "analog-value,1", "present-value"]);
    assert!(ok && back.contains("19.25"), "read back over BACnet: {back}");
    publish(r#"{"value": "hot"}"#);
    wait_for(&lines, "a refusal", |l| {
        l.starts_with("building/1001/analog-value,1/set/result {\"error\"")
            || (l.contains("/set/result") && l.contains("\"ok\":false"))
    });
    drop(gateway);
}

/// More objects than one network subscriber may follow (164 > 64): the
/// bridge, a subscriber inside the gateway, follows every one of them.
#[test]
fn every_object_of_a_large_device_is_published_not_only_the_first_64() {
    let scratch = Scratch::new("mqtt", "large-device");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch_on(mqtt, "large/#");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(
        scratch.path("bulk.toml"),
        "count = 100\nvalues = 64\nchanges_per_tick = 0\ndevice_instance = 1001\n",
    )
    .unwrap();
    let config = scratch.path("large.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\ninstance = 1001\nport = {bip}\nplugin = \"builtin:bulk-objects\"\ndata_dir = \"{}\"\n\n\
             [mqtt]\nbroker = \"127.0.0.1:{mqtt}\"\nclient_id = \"trellis-large\"\ntopic_prefix = \"large\"\nqos = 1\n",
            scratch.0.display()
        ),
    )
    .unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    // The last object of the list (after 100 inputs and 63 values) has its first message.
    wait_for(&lines, "analog-value,64's initial value", |l| l.starts_with("large/1001/analog-value,64 {"));
    // And its changes.
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", "0", "write", &format!("127.0.0.1:{bip}"), "analog-value,64", "present-value", "42.5"])
        .args(["--priority", "8"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for(&lines, "42.5 in MQTT", |l| l.starts_with("large/1001/analog-value,64 {") && l.contains("42.5"));
    assert!(!gateway.log().contains("will not be followed"), "{}", gateway.log());
    drop(gateway);
}

/// The body of `GET path` on loopback (the console without credentials).
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

/// `mosquitto_pub` of the file `payload` on `topic` at `qos`.
fn publish_file(port: u16, topic: &str, qos: u8, payload: &Path) {
    let status = Command::new("mosquitto_pub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-q", &qos.to_string(), "-t", topic, "-f"])
        .arg(payload)
        .status()
        .unwrap();
    assert!(status.success(), "mosquitto_pub -f {}", payload.display());
}

/// One publisher on a command topic must not take the gateway off its
/// broker: oversized and malformed commands are answered and counted,
/// and the commands around them all take effect.
///
/// ```text
/// mosquitto_pub …/set {"value": 19.25, "priority": 8}   ──▶ …/set/result {"ok":true}
/// mosquitto_pub …/set (400 KB, QoS 1)                   ──▶ …/set/result {"ok":false,"error":"the message is 400000 octets, over …"}
/// mosquitto_pub …/set {"value": null, "priority": 8}    ──▶ …/set/result {"ok":true}   (sent at once: not lost)
/// mosquitto_pub …/set (2 MB, QoS 0), (octets not JSON)  ──▶ two refusals
/// no `building/availability offline`, one connection; /metrics: 2 discarded, 3 written, 3 refused
/// ```
#[test]
fn oversized_and_malformed_commands_are_refused_without_dropping_the_broker() {
    let scratch = Scratch::new("mqtt", "oversized");
    let (mqtt, bip, http) = (crate::peers::free_port(), crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(Duration::from_millis(300));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mqtt.toml"))
        .unwrap()
        .replace("127.0.0.1:1883", &format!("127.0.0.1:{mqtt}"))
        .replace("password = \"change-me\"", &format!("password = \"change-me\"\nport = {bip}"))
        + &format!("\n[http]\nbind = \"127.0.0.1:{http}\"\n");
    let config = scratch.path("mqtt.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    wait_for(&lines, "availability online", |l| l == "building/availability online");
    let set = "building/1001/analog-value,1/set";
    let results = |lines: &Mutex<Vec<String>>| -> Vec<String> {
        let prefix = format!("{set}/result ");
        lines.lock().unwrap().iter().filter_map(|l| l.strip_prefix(&prefix).map(str::to_string)).collect()
    };
    let wait_results = |n: usize| {
        for _ in 0..600 {
            if results(&lines).len() >= n {
                return results(&lines);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen: Vec<String> = lines.lock().unwrap().iter().map(|l| l.chars().take(300).collect()).collect();
        panic!("fewer than {n} results in 30 s:\n{}\n{}", seen.join("\n"), gateway.log());
    };
    let file = |name: &str, octets: Vec<u8>| {
        let path = scratch.path(name);
        std::fs::write(&path, octets).unwrap();
        path
    };
    let command = |json: &str| file(&format!("command-{}.json", results(&lines).len()), json.as_bytes().to_vec());

    publish_file(mqtt, set, 1, &command(r#"{"value": 19.25, "priority": 8}"#));
    assert_eq!(wait_results(1), [r#"{"ok":true}"#]);
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--port", "0"]).args(args).output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let device = format!("127.0.0.1:{bip}");
    assert!(cli(&["read", &device, "analog-value,1", "priority-array"]).contains("19.25"));

    // 400 KB at QoS 1, then at once the relinquish: both are answered, in order.
    let big = file("big.json", format!(r#"{{"value": 21.0, "pad": "{}"}}"#, "x".repeat(400_000 - 26)).into_bytes());
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 400_000);
    let relinquish = command(r#"{"value": null, "priority": 8}"#);
    publish_file(mqtt, set, 1, &big);
    publish_file(mqtt, set, 1, &relinquish);
    let got = wait_results(3);
    assert!(
        got[1].contains(r#""ok":false"#) && got[1].contains("400000 octets") && got[1].contains("mqtt.max_incoming_kb"),
        "{got:?}"
    );
    assert_eq!(got[2], r#"{"ok":true}"#, "the command after the oversized one took effect");
    let array = cli(&["read", &device, "analog-value,1", "priority-array"]);
    assert!(!array.contains("19.25") && !array.contains("21"), "priority 8 relinquished: {array}");

    // 2 MB at QoS 0, and octets that are not JSON: refused, the connection stays.
    publish_file(mqtt, set, 0, &file("huge.bin", vec![0xA5; 2 << 20]));
    publish_file(mqtt, set, 1, &file("binary.bin", vec![0xFF, 0x00, 0xFE]));
    publish_file(mqtt, set, 1, &command(r#"{"value": 22.5, "priority": 8}"#));
    let got = wait_results(6);
    assert!(got[3].contains("2097152 octets"), "{got:?}");
    assert!(got[4].contains(r#""ok":false"#) && got[4].contains("not JSON"), "{got:?}");
    assert_eq!(got[5], r#"{"ok":true}"#);
    assert!(cli(&["read", &device, "analog-value,1", "present-value"]).contains("22.5"));

    let seen: Vec<String> = lines.lock().unwrap().iter().map(|l| l.chars().take(300).collect()).collect();
    assert!(!seen.iter().any(|l| l == "building/availability offline"), "the will was published:\n{}", seen.join("\n"));
    let log = gateway.log();
    assert!(!log.contains("; again in"), "the connection was lost:\n{log}");
    assert!(log.contains("a message over the size limit was discarded"), "{log}");
    let metrics = http_get(http, "/metrics");
    for line in [
        "trellis_mqtt_incoming_discarded_total{reason=\"oversized\"} 2",
        // 19.25, the relinquish, 22.5; the 400 KB, the 2 MB, the octets that are not JSON.
        "trellis_mqtt_commands_total{result=\"written\"} 3",
        "trellis_mqtt_commands_total{result=\"refused\"} 3",
        "trellis_mqtt_connections_total 1",
        "trellis_mqtt_connected 1.0",
        "trellis_mqtt_spool_memory_only 0.0",
        "trellis_mqtt_spool_disk_errors_total 0",
        "trellis_mqtt_spool_dropped_total 0",
    ] {
        assert!(metrics.contains(line), "no `{line}` in /metrics:\n{metrics}");
    }
    drop(gateway);
}

/// The Sparkplug host application (`peers/sparkplug_host.py`): its decoded
/// messages as they come, and its stdin for commands.
struct HostApp {
    _proc: Proc,
    stdin: std::process::ChildStdin,
    seen: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl HostApp {
    fn start(port: u16) -> HostApp {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/sparkplug_host.py");
        let mut child = Command::new(crate::peers::python())
            .arg(script)
            .args(["--port", &port.to_string(), "--group", "campus", "--node", "gateway-1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the peers venv (README's test command)");
        let (stdin, out) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (sink, (ready_tx, ready_rx)) = (seen.clone(), std::sync::mpsc::channel());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line == "READY" {
                    let _ = ready_tx.send(());
                } else if let Ok(v) = serde_json::from_str(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        ready_rx.recv_timeout(Duration::from_secs(30)).expect("the host application subscribed");
        HostApp { _proc: Proc(child), stdin, seen }
    }

    fn send(&mut self, command: serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin, "{command}").unwrap();
    }

    /// The first message from index `from` on that `ok` accepts, and its index.
    fn wait(&self, from: usize, what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> (usize, serde_json::Value) {
        for _ in 0..600 {
            let seen = self.seen.lock().unwrap();
            if let Some((i, m)) = seen.iter().enumerate().skip(from).find(|(_, m)| ok(m)) {
                return (i, m.clone());
            }
            drop(seen);
            std::thread::sleep(Duration::from_millis(50));
        }
        let seen = self.seen.lock().unwrap();
        panic!(
            "no {what} within 30 s; decoded:\n{}",
            seen.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("\n")
        );
    }
}

fn is(kind: &'static str, device: Option<&'static str>) -> impl Fn(&serde_json::Value) -> bool {
    move |m| m["type"] == kind && m["device"].as_str() == device
}

/// A metric of a birth by name.
fn metric<'a>(birth: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    birth["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {birth}"))
}

/// A DDATA's value for `alias`, if it carries one.
fn data_value(m: &serde_json::Value, alias: &serde_json::Value) -> Option<serde_json::Value> {
    m["metrics"].as_array()?.iter().find(|x| &x["alias"] == alias).map(|x| x["value"].clone())
}

#[test]
fn the_sparkplug_example_is_an_edge_node_a_host_application_understands() {
    let scratch = Scratch::new("mqtt", "sparkplug");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let mut host = HostApp::start(mqtt);
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sparkplug.toml"))
        .unwrap()
        .replace("127.0.0.1:1883", &format!("127.0.0.1:{mqtt}"))
        .replace("port = 47808", &format!("port = {bip}"))
        .replace("priority = 8", &format!("priority = 8\nspool_dir = \"{}\"", scratch.path("spool").display()));
    let config = scratch.path("sparkplug.toml");
    std::fs::write(&config, text).unwrap();
    let args = ["run", "--config", config.to_str().unwrap()];
    let gateway = crate::gateway::Gateway::start(&args, &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    assert!(gateway.log().contains("Sparkplug B edge node campus/gateway-1"), "{}", gateway.log());

    // gateway ─NBIRTH seq 0 (bdSeq, Node Control/Rebirth)─▶ host; DBIRTH per device.
    let (first, nbirth) = host.wait(0, "NBIRTH", is("NBIRTH", None));
    assert_eq!(nbirth["seq"], 0, "{nbirth}");
    let bd_seq = metric(&nbirth, "bdSeq")["value"].clone();
    assert_eq!(metric(&nbirth, "bdSeq")["datatype"], 8, "bdSeq is UInt64");
    assert_eq!(metric(&nbirth, "Node Control/Rebirth")["value"], false);
    let (_, birth_1001) = host.wait(first, "DBIRTH of 1001", is("DBIRTH", Some("1001")));
    let (_, birth_1002) = host.wait(first, "DBIRTH of 1002", is("DBIRTH", Some("1002")));
    let setpoint = metric(&birth_1001, "analog-value,1/present-value");
    assert_eq!(setpoint["datatype"], 9, "analog: Float");
    assert_eq!(setpoint["properties"]["engUnit"], "degrees-celsius");
    assert_eq!(setpoint["properties"]["objectName"], "Zone Setpoint");
    assert_eq!(metric(&birth_1001, "binary-value,1/present-value")["datatype"], 11, "binary: Boolean");
    assert_eq!(metric(&birth_1001, "multi-state-value,1/present-value")["datatype"], 7, "multi-state: UInt32");
    let alias_1001 = setpoint["alias"].clone();
    let alias_1002 = metric(&birth_1002, "analog-value,1/present-value")["alias"].clone();
    assert_ne!(alias_1001, alias_1002, "aliases are unique in the node");

    // A write over BACnet (through the router to device 1001) ─COV─▶ DDATA by alias.
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--port", "0"]).args(args).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{args:?}: {said}");
        said
    };
    let (d1001, d1002) = (format!("127.0.0.1:{bip}@1001:0003e9"), format!("127.0.0.1:{bip}@1001:0003ea"));
    cli(&["write", &d1001, "analog-value,1", "present-value", "23.5", "--priority", "8"]);
    host.wait(first, "DDATA 23.5 of 1001", |m| {
        is("DDATA", Some("1001"))(m) && data_value(m, &alias_1001) == Some(serde_json::json!(23.5))
    });

    // host ─DCMD by alias─▶ WriteProperty on 1002 ─COV─▶ DDATA; read back over BACnet.
    host.send(serde_json::json!({"cmd": "dcmd", "device": "1002", "alias": alias_1002, "datatype": 9, "value": 19.25}));
    host.wait(first, "DDATA 19.25 of 1002", |m| {
        is("DDATA", Some("1002"))(m) && data_value(m, &alias_1002) == Some(serde_json::json!(19.25))
    });
    assert!(cli(&["read", &d1002, "analog-value,1", "present-value"]).contains("19.25"));
    // … and by name, a binary point.
    let override_alias = metric(&birth_1001, "binary-value,1/present-value")["alias"].clone();
    host.send(serde_json::json!({"cmd": "dcmd", "device": "1001", "name": "binary-value,1/present-value", "datatype": 11, "value": true}));
    host.wait(first, "DDATA override of 1001", |m| {
        is("DDATA", Some("1001"))(m) && data_value(m, &override_alias) == Some(serde_json::json!(true))
    });

    // 400 KB on DCMD and NCMD ─▶ refused, counted, logged; the connection stays (the rebirth below
    // keeps its bdSeq and the sequence runs on), and the DCMD sent right after takes effect.
    let big = scratch.path("big.bin");
    std::fs::write(&big, vec![b'#'; 400_000]).unwrap();
    publish_file(mqtt, "spBv1.0/campus/DCMD/gateway-1/1002", 1, &big);
    publish_file(mqtt, "spBv1.0/campus/NCMD/gateway-1", 1, &big);
    host.send(serde_json::json!({"cmd": "dcmd", "device": "1002", "alias": alias_1002, "datatype": 9, "value": 20.75}));
    host.wait(first, "DDATA 20.75 of 1002 after the oversized commands", |m| {
        is("DDATA", Some("1002"))(m) && data_value(m, &alias_1002) == Some(serde_json::json!(20.75))
    });
    let log = gateway.log();
    assert!(
        log.contains("a message over the size limit was discarded") && log.contains("DCMD/gateway-1/1002"),
        "{log}"
    );

    // host ─NCMD Node Control/Rebirth─▶ NBIRTH seq 0 with the same bdSeq (no new connection), DBIRTHs with today's values.
    host.send(serde_json::json!({"cmd": "rebirth"}));
    let (again, rebirth) = host.wait(first + 1, "NBIRTH after the rebirth command", is("NBIRTH", None));
    assert_eq!((rebirth["seq"].clone(), metric(&rebirth, "bdSeq")["value"].clone()), (0.into(), bd_seq.clone()));
    let (_, reborn) = host.wait(again, "DBIRTH of 1001 again", is("DBIRTH", Some("1001")));
    assert_eq!(metric(&reborn, "analog-value,1/present-value")["value"], 23.5);

    // Every message between births counts up by one (mod 256), as the host application checks.
    let seen = host.seen.lock().unwrap().clone();
    let mut expected = None;
    for m in &seen[first..] {
        if m.get("error").is_some() {
            panic!("the host application could not decode: {m}");
        }
        let Some(seq) = m["seq"].as_u64() else { continue };
        if m["type"] == "NBIRTH" {
            assert_eq!(seq, 0);
        } else {
            assert_eq!(Some(seq), expected, "sequence broken at {m}");
        }
        expected = Some((seq + 1) % 256);
    }

    // The gateway dies ─▶ the broker publishes its will: NDEATH with the connection's bdSeq.
    drop(gateway);
    let (_, death) = host.wait(again, "NDEATH", is("NDEATH", None));
    assert_eq!(metric(&death, "bdSeq")["value"], bd_seq, "NDEATH names the connection NBIRTH named");

    // Restarted, it counts on: the next connection's bdSeq is one more.
    let gateway = crate::gateway::Gateway::start(&args, &scratch.0).unwrap();
    let (_, next) = host.wait(again + 1, "NBIRTH after the restart", |m| {
        is("NBIRTH", None)(m) && metric(m, "bdSeq")["value"] != bd_seq
    });
    assert_eq!(metric(&next, "bdSeq")["value"], (bd_seq.as_u64().unwrap() + 1) % 256);
    drop(gateway);
}

#[test]
fn a_device_whose_plugin_keeps_failing_gets_a_ddeath() {
    let scratch = Scratch::new("mqtt", "ddeath");
    let (mqtt, bip, failing) = (crate::peers::free_port(), crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let mut host = HostApp::start(mqtt);
    // A misbehave device whose every tick traps: it restarts with back-off until it is disabled.
    let data = scratch.0.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("misbehave.toml"), "on_tick = \"trap\"\n").unwrap();
    std::fs::copy(trellis::plugin::builtin::MISBEHAVE_PATH, scratch.path("misbehave.wasm")).unwrap();
    let config = format!(
        "[policy]\nallow_unsigned = true\n\n\
         [[device]]\ninstance = 1001\nplugin = \"builtin:demo-building\"\npassword = \"x\"\nport = {bip}\n\n\
         [[device]]\nplugin = \"{}\"\ndata_dir = \"{}\"\nport = {failing}\n\n\
         [mqtt]\nbroker = \"127.0.0.1:{mqtt}\"\nclient_id = \"gateway-1\"\nspool_dir = \"{}\"\n\
         sparkplug = {{ group_id = \"campus\", edge_node_id = \"gateway-1\" }}\n",
        scratch.path("misbehave.wasm").display(),
        data.display(),
        scratch.path("spool").display()
    );
    let path = scratch.path("ddeath.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    let (first, _) = host.wait(0, "NBIRTH", is("NBIRTH", None));
    host.wait(first, "DBIRTH of 1001", is("DBIRTH", Some("1001")));
    // The failing device is disabled after its consecutive failures.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !gateway.log().contains("consecutive failures") {
        assert!(std::time::Instant::now() < deadline, "the misbehave plugin was not disabled:\n{}", gateway.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Born before it failed, it died with a DDEATH (empty); failing before the births, it was never born.
    let about = |seen: &[serde_json::Value]| -> Vec<serde_json::Value> {
        seen.iter().filter(|m| m["device"] == "389666").cloned().collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let of_it = about(&host.seen.lock().unwrap());
        match of_it.last() {
            None => break,
            Some(m) if m["type"] == "DDEATH" => {
                assert!(m["metrics"].as_array().unwrap().is_empty(), "{m}");
                break;
            }
            Some(m) => assert!(std::time::Instant::now() < deadline, "born, never died: {m}\n{}", gateway.log()),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // A rebirth now births the healthy device only.
    let before = host.seen.lock().unwrap().len();
    host.send(serde_json::json!({"cmd": "rebirth"}));
    let (again, _) = host.wait(before, "NBIRTH after the rebirth", is("NBIRTH", None));
    host.wait(again, "DBIRTH of 1001 again", is("DBIRTH", Some("1001")));
    std::thread::sleep(Duration::from_millis(500));
    let seen = host.seen.lock().unwrap().clone();
    assert!(!seen[again..].iter().any(|m| is("DBIRTH", Some("389666"))(m)), "a disabled device is not born: {seen:?}");
    assert!(
        !seen.iter().any(|m| is("DDEATH", Some("1001"))(m)),
        "the healthy device lives on: {seen:?}\n{}",
        gateway.log()
    );
    drop(gateway);
}
