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

/// A child process killed by PID when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

fn broker(port: u16, dir: &Path) -> Proc {
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

/// `mosquitto_sub -v` on `building/#`: its lines as they come.
fn watch(port: u16) -> (Proc, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new("mosquitto_sub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", "building/#", "-v", "-q", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto_sub (mosquitto-clients)");
    let out = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    (Proc(child), lines)
}

fn wait_for(lines: &Mutex<Vec<String>>, what: &str, ok: impl Fn(&str) -> bool) -> String {
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
