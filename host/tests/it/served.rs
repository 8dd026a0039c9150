//! The gateway as third parties see it: `trellis --port PORT` serving the
//! built-in demo-building plugin, driven by bacpypes3 and rusty-bacnet as
//! CLIENTS (`host/tests/peers/probe_client.py`), and by our own client and
//! CLI. Every process runs on loopback on its own free port and is stopped
//! by PID when the test ends, also when it fails.

use crate::peers::{free_port, python};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::{ObjectIdentifier, ObjectType, Value};
use serde_json::Value as Json;
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, DeviceAddress};
use trellis_bip::BipConfig;

/// Device instance of the demo-building plugin.
const DEVICE: u32 = 389001;

/// The objects the demo-building plugin serves, as "type,instance".
const OBJECTS: [&str; 14] = [
    "device,389001",
    "analog-input,1",
    "analog-input,2",
    "analog-input,3",
    "analog-output,1",
    "analog-value,1",
    "analog-value,2",
    "binary-input,1",
    "binary-output,1",
    "binary-value,1",
    "multi-state-input,1",
    "multi-state-value,1",
    "trend-log,1",
    // The host's, not the plugin's: the B/IP port (Clause 12.56).
    "network-port,1",
];

/// The gateway on its embedded default, on a free port, with its own cache
/// directory (removed on drop).
struct Gateway {
    port: u16,
    cache: PathBuf,
    process: crate::gateway::Gateway,
}

impl Gateway {
    /// Start `trellis --port <free port>` and wait for its ready line.
    fn start() -> Gateway {
        let port = free_port();
        let cache = std::env::temp_dir().join(format!("trellis-served-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&cache).unwrap();
        let process = crate::gateway::Gateway::start(&["--port", &port.to_string()], &cache)
            .unwrap_or_else(|log| panic!("the gateway exited before serving; stderr:\n{log}"));
        Gateway { port, cache, process }
    }

    /// "127.0.0.1:PORT".
    fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What the gateway wrote on stderr so far.
    fn log(&self) -> String {
        self.process.log()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

/// Run probe_client.py with one stack against the gateway: its JSON lines
/// by step name ("rpm-all" lines by object), and the whole output.
struct Probe {
    lines: Vec<Json>,
    output: Output,
}

impl Probe {
    fn run(stack: &str, gateway: &Gateway) -> Probe {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/probe_client.py");
        let child = Command::new(python())
            .arg(script)
            .args(["--stack", stack, "--target", &gateway.target(), "--device", &DEVICE.to_string()])
            .args(["--port", &free_port().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start probe_client.py");
        // The probe's own step timeouts end it; this only guards a hang.
        let pid = child.id();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(Duration::from_secs(600)).is_err() {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        });
        let output = child.wait_with_output().expect("wait for probe_client.py");
        let _ = done_tx.send(());
        let _ = watchdog.join();
        let lines = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{stack}: not a JSON line ({e}): {l}")))
            .collect();
        Probe { lines, output }
    }

    fn dump(&self) -> String {
        format!(
            "status {:?}\nstdout:\n{}\nstderr:\n{}",
            self.output.status,
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }

    fn step(&self, name: &str) -> &Json {
        self.lines.iter().find(|l| l["step"] == name).unwrap_or_else(|| panic!("no `{name}` line:\n{}", self.dump()))
    }

    fn rpm_all(&self, object: &str) -> &Json {
        self.lines
            .iter()
            .find(|l| l["step"] == "rpm-all" && l["object"] == object)
            .unwrap_or_else(|| panic!("no rpm-all line for {object}:\n{}", self.dump()))
    }
}

fn f64_of(v: &Json) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("expected a number, got {v}"))
}

fn names(line: &Json) -> Vec<&str> {
    line["properties"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect()
}

/// Everything probe_client.py checks, asserted on its JSON lines.
fn check_probe(stack: &str) {
    let gateway = Gateway::start();
    let probe = Probe::run(stack, &gateway);
    let ctx = || format!("{stack}:\n{}\ngateway stderr:\n{}", probe.dump(), gateway.log());
    assert!(probe.output.status.success(), "{}", ctx());
    assert_eq!(probe.step("summary")["ok"], true, "{}", ctx());

    // Who-Is sent to the gateway's address: an I-Am from 389001.
    let whois = probe.step("whois");
    let found = whois["found"].as_array().unwrap();
    let me = found.iter().find(|f| f["device"] == DEVICE).unwrap_or_else(|| panic!("{}", ctx()));
    assert_eq!(me["max_apdu"], 1476, "{}", ctx());
    assert_eq!(me["vendor_id"], 999, "{}", ctx());

    // Reads, a write at priority 8 read back, then relinquished.
    let ai1 = f64_of(&probe.step("read-ai1-pv")["value"]);
    assert!((-50.0..100.0).contains(&ai1), "analog-input,1 {ai1}: {}", ctx());
    assert_eq!(probe.step("write-av1-pv-p8")["ack"], "simple-ack", "{}", ctx());
    assert_eq!(f64_of(&probe.step("read-av1-pv-after-write")["value"]), 23.5, "{}", ctx());
    let pa = probe.step("read-av1-priority-array")["value"].as_array().unwrap().clone();
    assert_eq!(pa.len(), 16, "{}", ctx());
    for (i, slot) in pa.iter().enumerate() {
        if i == 7 {
            assert_eq!(f64_of(slot), 23.5, "priority-array[8]: {}", ctx());
        } else {
            assert!(slot.is_null(), "priority-array[{}] = {slot}: {}", i + 1, ctx());
        }
    }
    assert_eq!(f64_of(&probe.step("read-av1-priority-array-8")["value"]), 23.5, "{}", ctx());
    assert_eq!(probe.step("relinquish-av1-p8")["ack"], "simple-ack", "{}", ctx());
    assert!(probe.step("read-av1-priority-array-8-after-relinquish")["value"].is_null(), "{}", ctx());
    let av1_all = probe.rpm_all("analog-value,1");
    let relinquish_default = f64_of(&av1_all["values"]["relinquish-default"]);
    assert_eq!(
        f64_of(&probe.step("read-av1-pv-after-relinquish")["value"]),
        relinquish_default,
        "relinquished: back to Relinquish_Default: {}",
        ctx()
    );

    // The object list, then ReadPropertyMultiple `all` of each object.
    let list: Vec<&str> =
        probe.step("read-object-list")["objects"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    assert_eq!(list, OBJECTS, "{}", ctx());
    for object in OBJECTS {
        let line = probe.rpm_all(object);
        assert_eq!(line["ok"], true, "rpm all {object}: {}", ctx());
        assert!(line["errors"].as_array().unwrap().is_empty(), "rpm all {object}: {line}");
        let props = names(line);
        for p in ["object-identifier", "object-name", "object-type"] {
            assert!(props.contains(&p), "rpm all {object}: no {p} in {props:?}");
        }
        assert_eq!(line["values"]["object-identifier"], object, "{line}");
        assert_eq!(line["count"].as_u64().unwrap() as usize, props.len(), "{line}");
        if object == "trend-log,1" {
            // rusty-bacnet names Enable (133) by its 135-2004 name, log-enable.
            assert!(props.contains(&"enable") || props.contains(&"log-enable"), "rpm all {object}: {props:?}");
            for p in [
                "log-device-object-property",
                "log-interval",
                "stop-when-full",
                "buffer-size",
                "log-buffer",
                "record-count",
                "total-record-count",
                "logging-type",
                "status-flags",
                "event-state",
            ] {
                assert!(props.contains(&p), "rpm all {object}: no {p} in {props:?}");
            }
            assert_eq!(line["values"]["status-flags"], serde_json::json!([0, 0, 0, 0]), "{object}: {line}");
            assert_eq!(f64_of(&line["values"]["buffer-size"]), 1000.0, "{line}");
        } else if object == "network-port,1" {
            for p in ["network-type", "network-number", "network-number-quality", "mac-address", "bacnet-ip-udp-port"] {
                assert!(props.contains(&p), "rpm all {object}: no {p} in {props:?}");
            }
            assert_eq!(line["values"]["status-flags"], serde_json::json!([0, 0, 0, 0]), "{object}: {line}");
        } else if object != "device,389001" {
            for p in ["present-value", "status-flags", "event-state", "out-of-service"] {
                assert!(props.contains(&p), "rpm all {object}: no {p} in {props:?}");
            }
            assert_eq!(line["values"]["status-flags"], serde_json::json!([0, 0, 0, 0]), "{object}: {line}");
        }
    }
    let props = names(av1_all);
    for p in
        ["present-value", "status-flags", "units", "priority-array", "relinquish-default", "current-command-priority"]
    {
        assert!(props.contains(&p), "analog-value,1 all: no {p} in {props:?}");
    }
    assert_eq!(av1_all["values"]["priority-array"].as_array().unwrap().len(), 16, "{av1_all}");
    let device = names(probe.rpm_all("device,389001"));
    for p in [
        "object-list",
        "vendor-identifier",
        "protocol-version",
        "protocol-revision",
        "protocol-services-supported",
        "protocol-object-types-supported",
        "max-apdu-length-accepted",
        "segmentation-supported",
        "database-revision",
    ] {
        assert!(device.contains(&p), "device all: no {p} in {device:?}");
    }
    let ai1_all = probe.rpm_all("analog-input,1");
    assert!(!names(ai1_all).contains(&"priority-array"), "analog-input,1 is not commandable: {ai1_all}");

    // WritePropertyMultiple of two objects at priority 9, then relinquished.
    let wpm = probe.step("wpm");
    assert_eq!(wpm["ack"], "simple-ack", "{}", ctx());
    assert_eq!(f64_of(&wpm["av1"]), 24.5, "{}", ctx());
    let bv1_active = if stack == "rusty" { serde_json::json!(1) } else { serde_json::json!("active") };
    assert_eq!(wpm["bv1"], bv1_active, "{}", ctx());
    let relinquished = probe.step("wpm-relinquish");
    assert!(relinquished["av1_slot9"].is_null() && relinquished["bv1_slot9"].is_null(), "{}", ctx());

    // An unknown object is Error object/unknown-object.
    assert_eq!(
        probe.step("read-unknown-object")["error"],
        serde_json::json!({"kind": "error", "class": "object", "code": "unknown-object"}),
        "{}",
        ctx()
    );
}

#[test]
fn bacpypes3_as_a_client_reads_writes_and_commands_the_served_device() {
    let _timing = crate::peers::shared_blocking();
    check_probe("bacpypes3");
}

#[test]
fn rusty_bacnet_as_a_client_reads_writes_and_commands_the_served_device() {
    let _timing = crate::peers::shared_blocking();
    check_probe("rusty");
}

/// Run the `trellis` CLI as a client (its own free port).
fn trellis(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", "0", "--timeout-ms", "3000", "--retries", "2"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run trellis")
}

fn out(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_and_cli_work_against_the_served_device() {
    let _timing = crate::peers::shared().await;
    let gateway = Gateway::start();
    let target = gateway.target();

    // discover: Who-Is to the address, then the object list and names.
    let o = trellis(&["discover", "--target", &target, "--wait", "2", "--json"]);
    assert!(o.status.success(), "discover: {}", out(&o));
    let report: Json = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(&o)));
    let me = report.as_array().unwrap().iter().find(|d| d["device"] == DEVICE).unwrap_or_else(|| panic!("{report}"));
    assert_eq!(me["address"], target.as_str(), "{report}");
    let objects = me["objects"].as_array().unwrap();
    assert_eq!(objects.len(), OBJECTS.len(), "{report}");
    for object in OBJECTS {
        let found = objects.iter().find(|x| x["object"] == object).unwrap_or_else(|| panic!("no {object}: {report}"));
        assert!(found["name"].as_str().is_some_and(|n| !n.is_empty()), "{object} has no name: {report}");
    }
    assert!(objects.iter().any(|x| x["object"] == "analog-value,1" && x["name"] == "Zone Setpoint"), "{report}");

    // read: a number with its units.
    let o = trellis(&["read", &target, "analog-input:1", "present-value"]);
    assert!(o.status.success(), "read: {}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let (value, units) = text.split_once(' ').unwrap_or_else(|| panic!("read: {}", out(&o)));
    assert!(value.parse::<f32>().is_ok() && units == "degrees-celsius", "read: {}", out(&o));

    // write at priority 8, read back, relinquish.
    let o = trellis(&["write", &target, "analog-value,1", "present-value", "22.5", "--priority", "8"]);
    assert!(o.status.success(), "write: {}", out(&o));
    let o = trellis(&["read", &target, "analog-value,1", "present-value"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "22.5 degrees-celsius", "{}", out(&o));
    let o = trellis(&["write", &target, "analog-value,1", "present-value", "null", "--priority", "8"]);
    assert!(o.status.success(), "relinquish: {}", out(&o));
    let o = trellis(&["read", &target, "analog-value,1", "priority-array", "--index", "8"]);
    assert!(o.status.success(), "read priority-array[8]: {}", out(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "null", "{}", out(&o));

    // An unknown object: exit 4 and the error named.
    let o = trellis(&["read", &target, "analog-value,99", "present-value"]);
    assert_eq!(o.status.code(), Some(4), "{}", out(&o));
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "trellis: BACnet error object: unknown-object");

    // The client library: the same device through trellis::client.
    let mut config = ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() };
    config.tsm.apdu_timeout = Duration::from_secs(3);
    let c = Client::bind(config).await.unwrap();
    let address = DeviceAddress::direct(SocketAddrV4::new([127, 0, 0, 1].into(), gateway.port));
    let device = ObjectIdentifier::new(ObjectType::DEVICE, DEVICE).unwrap();
    let count = c.read_property(&address, device, P::OBJECT_LIST, Some(0)).await.unwrap();
    assert_eq!(count.as_primitive(), Some(&Value::Unsigned(OBJECTS.len() as u64)), "{count:?}");
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    c.write_property(&address, av1, P::PRESENT_VALUE, None, Value::Real(23.25).into(), Some(8)).await.unwrap();
    let slot8 = c.read_property(&address, av1, P::PRIORITY_ARRAY, Some(8)).await.unwrap();
    assert_eq!(slot8.as_primitive(), Some(&Value::Real(23.25)), "{slot8:?}");
    c.write_property(&address, av1, P::PRESENT_VALUE, None, Value::Null.into(), Some(8)).await.unwrap();
    let slot8 = c.read_property(&address, av1, P::PRIORITY_ARRAY, Some(8)).await.unwrap();
    assert_eq!(slot8.as_primitive(), Some(&Value::Null), "{slot8:?}");
}

#[test]
fn readm_all_lists_the_commandable_properties() {
    let _timing = crate::peers::shared_blocking();
    let gateway = Gateway::start();
    let o = trellis(&["readm", &gateway.target(), "analog-value,1", "all"]);
    assert!(o.status.success(), "readm: {}", out(&o));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let has = |p: &str| text.lines().any(|l| l.starts_with(&format!("analog-value,1  {p}: ")));
    for p in [
        "object-identifier",
        "object-name",
        "object-type",
        "present-value",
        "status-flags",
        "units",
        "priority-array",
        "relinquish-default",
        "current-command-priority",
    ] {
        assert!(has(p), "no {p} in:\n{text}");
    }
    assert!(text.contains("analog-value,1  object-name: Zone Setpoint"), "{text}");
    assert!(text.contains("analog-value,1  units: degrees-celsius"), "{text}");
    let pa = text.lines().find(|l| l.contains("  priority-array: ")).unwrap();
    assert_eq!(pa.matches("null").count(), 16, "{pa}");
}
