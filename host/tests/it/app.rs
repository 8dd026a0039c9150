//! Application plugins in the gateway, against a served device and a real
//! mosquitto (`examples/alarm-threshold.toml`):
//!
//! ```text
//! CLI ──WriteProperty AV2 = 30──▶ device ──COV──▶ alarm-threshold (1 s delay)
//!     alarm-threshold ──publish (retained)──▶ building/alarms/cooling-setpoint {"state": "high", …}
//!     alarm-threshold ──WriteProperty BV1 = active @8──▶ device
//! gateway restarted in alarm (the device back to 24) ──▶ {"state": "normal"} (the alarm state was persisted)
//! CLI ──AV2 = 30, then 27.8 (inside the deadband), then 24──▶ high, nothing, normal; BV1 = inactive
//! ```

use crate::mqtt::{broker, wait_for, watch};
use crate::scratch::Scratch;
use std::path::Path;
use std::process::Command;

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--port", "0"]).args(args).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{args:?}: {said}");
    said
}

/// `examples/NAME` moved to free ports (the broker at `mqtt`, device 1001's
/// B/IP port at `bip`), `edit` applied, written into `scratch` and run:
/// the gateway and its configuration file.
fn run_example(
    scratch: &Scratch,
    name: &str,
    mqtt: u16,
    bip: u16,
    edit: impl Fn(String) -> String,
) -> (crate::gateway::Gateway, std::path::PathBuf) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name))
        .unwrap()
        .replace("127.0.0.1:1883", &format!("127.0.0.1:{mqtt}"))
        .replace("password = \"change-me\"", &format!("password = \"change-me\"\nport = {bip}"));
    let config = scratch.path(name);
    std::fs::write(&config, edit(text)).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    (gateway, config)
}

#[test]
fn the_alarm_threshold_example_raises_and_clears_an_alarm_over_mqtt_and_bacnet() {
    let scratch = Scratch::new("app", "alarm-threshold");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (gateway, config) = run_example(&scratch, "alarm-threshold.toml", mqtt, bip, |t| t);
    assert!(gateway.log().contains("trellis: app alarm-threshold: alarm-threshold"), "{}", gateway.log());

    let device = format!("127.0.0.1:{bip}");
    let alarm = "building/alarms/cooling-setpoint ";
    cli(&["write", &device, "analog-value,2", "present-value", "30", "--priority", "8"]);
    let raised = wait_for(&lines, "the alarm", |l| l.starts_with(alarm) && l.contains("\"state\": \"high\""));
    assert!(raised.contains("\"value\": 30") && raised.contains("\"limit\": 28"), "{raised}");
    let override_now = || cli(&["read", &device, "binary-value,1", "present-value"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !override_now().contains("active") || override_now().contains("inactive") {
        assert!(std::time::Instant::now() < deadline, "BV1 was not set: {}", override_now());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // Restarted, the demo device is back to its 24 °C default; the application remembers it
    // was in alarm (its persisted state) and reports the return to normal — were the state
    // lost, it would start normal and say nothing.
    drop(gateway);
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0).unwrap();
    wait_for(&lines, "normal after the restart", |l| l.starts_with(alarm) && l.contains("\"normal\""));
    cli(&["write", &device, "analog-value,2", "present-value", "30", "--priority", "8"]);
    wait_for(&lines, "the second alarm", |l| {
        l.starts_with(alarm) && l.contains("\"high\"") && !l.contains(&raised[alarm.len()..])
    });

    // Inside the deadband nothing happens; below it, normal again.
    cli(&["write", &device, "analog-value,2", "present-value", "27.8", "--priority", "8"]);
    cli(&["write", &device, "analog-value,2", "present-value", "24", "--priority", "8"]);
    let alarms = || lines.lock().unwrap().iter().filter(|l| l.starts_with(alarm)).cloned().collect::<Vec<_>>();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while alarms().len() < 4 {
        assert!(std::time::Instant::now() < deadline, "no second return to normal: {:?}", alarms());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let states: Vec<bool> = alarms().iter().map(|l| l.contains("\"high\"")).collect();
    assert_eq!(states, [true, false, true, false], "alarm, normal, alarm, normal: {:?}", alarms());
    assert!(alarms()[3].contains("\"value\": 24"), "{:?}", alarms());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !override_now().contains("inactive") {
        assert!(std::time::Instant::now() < deadline, "BV1 was not cleared");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(gateway);
}

/// A gateway serving device 1001 with `misbehave-app` (a plugin file) as
/// an application failing as `failure` says.
fn misbehaving(scratch: &Scratch, bip: u16, failure: &str) -> crate::gateway::Gateway {
    let plugin = trellis::plugin::builtin::MISBEHAVE_APP_PATH;
    let config = format!(
        "[policy]\nallow_unsigned = true\n\n\
         [[device]]\ninstance = 1001\nplugin = \"builtin:demo-building\"\npassword = \"x\"\nport = {bip}\n\n\
         [[app]]\nplugin = \"{plugin}\"\ndeadline_ms = 300\nmemory_mb = 8\nread = [\"1001/analog-value,1\"]\n\
         settings = {{ point = \"1001/analog-value,1\", failure = \"{failure}\", \
         try_write = \"1001/analog-value,2\", try_publish = \"elsewhere/topic\" }}\n"
    );
    let path = scratch.path(&format!("{failure}.toml"));
    std::fs::write(&path, config).unwrap();
    crate::gateway::Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"))
}

fn wait_log(gateway: &crate::gateway::Gateway, what: &str, count: usize) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let log = gateway.log();
        if log.matches(what).count() >= count {
            return log;
        }
        assert!(std::time::Instant::now() < deadline, "`{what}` ×{count} not logged within 30 s:\n{log}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn an_application_that_traps_loops_or_hoards_is_stopped_restarted_and_the_device_keeps_serving() {
    let scratch = Scratch::new("app", "misbehave");
    for (failure, said) in [
        ("trap", "misbehave-app: trapping on request"),
        ("loop", "exceeded its time limit of 300 ms"),
        ("memory", "exceeded its memory limit of 8388608 bytes"),
    ] {
        let bip = crate::peers::free_port();
        let gateway = misbehaving(&scratch, bip, failure);
        // What it was not granted, it was refused — as errors it could log, not traps.
        let log = wait_log(&gateway, "misbehave-app: started", 1);
        assert!(log.contains("writing 1001/analog-value,2: not permitted"), "{log}");
        assert!(log.contains("publishing on elsewhere/topic: no broker") || log.contains("is not granted"), "{log}");

        // A change makes on-change fail; the host says what happened and restarts it.
        let device = format!("127.0.0.1:{bip}");
        cli(&["write", &device, "analog-value,1", "present-value", "22.5", "--priority", "8"]);
        let log = wait_log(&gateway, "application failed", 1);
        assert!(log.contains(said), "{failure}: {log}");
        wait_log(&gateway, "misbehave-app: started", 2);
        // The device never stopped serving.
        assert!(cli(&["read", &device, "analog-value,1", "present-value"]).contains("22.5"), "{failure}");
        drop(gateway);
    }
}

#[test]
fn the_schedule_example_writes_setpoints_at_priority_16_as_the_devices_clock_moves() {
    let scratch = Scratch::new("app", "schedule");
    let bip = crate::peers::free_port();
    let (gateway, _) =
        run_example(&scratch, "schedule.toml", 0, bip, |t| t.replace("check_every_s = 60", "check_every_s = 1"));
    let device = format!("127.0.0.1:{bip}");
    let setpoint_becomes = |value: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let said = cli(&["read", &device, "analog-value,1", "priority-array"]);
            // Priority 16 is the last slot of the priority array.
            if said.trim_end().trim_end_matches(['}', ']', ')']).trim_end().ends_with(value) {
                return said;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "priority 16 of AV1 never became {value}: {said}\n{}",
                gateway.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    // Monday 10:00 UTC: occupied.
    cli(&["timesync", "--utc", "--time", "2026-11-30T10:00:00Z", &device]);
    setpoint_becomes("21");
    // Monday 20:00: unoccupied; Christmas Day at noon (a Friday): a holiday.
    cli(&["timesync", "--utc", "--time", "2026-11-30T20:00:00Z", &device]);
    setpoint_becomes("17");
    cli(&["timesync", "--utc", "--time", "2026-12-04T12:00:00Z", &device]);
    setpoint_becomes("21");
    cli(&["timesync", "--utc", "--time", "2026-12-25T12:00:00Z", &device]);
    setpoint_becomes("17");
    drop(gateway);
}

#[test]
fn the_point_mapping_application_publishes_under_its_scheme_and_takes_writes() {
    let scratch = Scratch::new("app", "point-mapping");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = crate::mqtt::watch_on(mqtt, "site/#");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (gateway, _) = run_example(&scratch, "mqtt-mapping.toml", mqtt, bip, |t| t);

    // Every object under its Object_Name; the bridge's own scheme is off.
    let first = wait_for(&lines, "the zone setpoint", |l| l.starts_with("site/1001/Zone-Setpoint {"));
    assert!(first.contains("\"name\": \"Zone Setpoint\"") && first.contains("\"value\": 21"), "{first}");
    wait_for(&lines, "the operating mode", |l| l.starts_with("site/1001/Operating-Mode {"));
    assert!(!lines.lock().unwrap().iter().any(|l| l.starts_with("site/1001/analog-value")), "no fixed-scheme topics");

    // A write over MQTT through the application, its result, and the value back over BACnet and MQTT.
    let publish = |topic: &str, payload: &str| {
        let status = Command::new("mosquitto_pub")
            .args(["-h", "127.0.0.1", "-p", &mqtt.to_string(), "-q", "1", "-t", topic, "-m", payload])
            .status()
            .unwrap();
        assert!(status.success());
    };
    publish("site/1001/Zone-Setpoint/set", r#"{"value": 22.5, "priority": 8}"#);
    wait_for(&lines, "the write's result", |l| l == r#"site/1001/Zone-Setpoint/set/result {"ok": true}"#);
    assert!(cli(&["read", &format!("127.0.0.1:{bip}"), "analog-value,1", "present-value"]).contains("22.5"));
    wait_for(&lines, "22.5 published", |l| l.starts_with("site/1001/Zone-Setpoint {") && l.contains("22.5"));
    publish("site/1001/Zone-Setpoint/set", r#""hot""#);
    wait_for(&lines, "a refusal", |l| l.starts_with("site/1001/Zone-Setpoint/set/result {\"ok\": false"));
    drop(gateway);
}

fn trellis_cli(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn an_application_is_hot_swapped_with_its_state_and_status_shows_it() {
    let scratch = Scratch::new("app", "swap");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (gateway, _) =
        run_example(&scratch, "alarm-threshold.toml", mqtt, bip, |t| format!("[policy]\nallow_unsigned = true\n\n{t}"));
    let device = format!("127.0.0.1:{bip}");
    let alarm = "building/alarms/cooling-setpoint ";
    cli(&["write", &device, "analog-value,2", "present-value", "30", "--priority", "8"]);
    wait_for(&lines, "the alarm", |l| l.starts_with(alarm) && l.contains("\"high\""));

    // A new build of the application (here: the same one, as a file) replaces the running one.
    let file = scratch.path("alarm-threshold.wasm");
    std::fs::write(&file, trellis::plugin::builtin::ALARM_THRESHOLD).unwrap();
    let socket = gateway.socket().to_str().unwrap().to_owned();
    let (ok, said) =
        trellis_cli(&["plugin", "swap-app", "alarm-threshold", file.to_str().unwrap(), "--socket", &socket]);
    assert!(ok && said.contains("application alarm-threshold: now alarm-threshold"), "{said}");
    let (ok, said) = trellis_cli(&["plugin", "swap-app", "nothing", file.to_str().unwrap(), "--socket", &socket]);
    assert!(!ok && said.contains("no application nothing here (running: alarm-threshold)"), "{said}");

    // The successor took over the alarm state: it raises nothing again, and reports the return to normal.
    cli(&["write", &device, "analog-value,2", "present-value", "24", "--priority", "8"]);
    wait_for(&lines, "normal after the swap", |l| l.starts_with(alarm) && l.contains("\"normal\""));
    let raised = lines.lock().unwrap().iter().filter(|l| l.starts_with(alarm) && l.contains("\"high\"")).count();
    assert_eq!(raised, 1, "{:?}", lines.lock().unwrap());
    let (ok, status) = trellis_cli(&["plugin", "status", "--socket", &socket]);
    assert!(ok && status.contains("application alarm-threshold: alarm-threshold"), "{status}");
    assert!(status.contains("running; 0 restarts, 0 failures"), "{status}");
    drop(gateway);
}

#[test]
fn a_plugin_files_manifest_narrows_what_the_operator_granted() {
    let scratch = Scratch::new("app", "manifest");
    let bip = crate::peers::free_port();
    // The file and a manifest beside it that asks to read one point, write none, publish nothing.
    let file = scratch.path("misbehave_app.wasm");
    std::fs::copy(trellis::plugin::builtin::MISBEHAVE_APP_PATH, &file).unwrap();
    std::fs::write(
        scratch.path("misbehave_app.manifest.toml"),
        "name = \"misbehave-app\"\nversion = \"0.1.0\"\nmax_objects = 0\nmemory_mb = 16\n\n\
         [app]\nread = [\"1001/analog-value,1\"]\n",
    )
    .unwrap();
    let config = format!(
        "[policy]\nallow_unsigned = true\n\n\
         [[device]]\ninstance = 1001\nplugin = \"builtin:demo-building\"\npassword = \"x\"\nport = {bip}\n\n\
         [[app]]\nplugin = \"{}\"\nread = [\"1001\"]\nwrite = [\"1001\"]\npublish = [\"#\"]\n\
         settings = {{ point = \"1001/analog-value,1\", try_write = \"1001/analog-value,2\" }}\n",
        file.display()
    );
    let path = scratch.path("manifest.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    let log = wait_log(&gateway, "misbehave-app: started", 1);
    assert!(
        log.contains("writing 1001/analog-value,2: not permitted"),
        "the operator grants it, the manifest does not ask:\n{log}"
    );
    drop(gateway);
}

#[test]
fn applications_reach_a_remote_rusty_bacnet_device_bound_by_address() {
    let _peers = crate::peers::shared_blocking();
    let remote = crate::peers::Peer::start(crate::peers::Kind::RustyBacnet, 4001);
    let remote_addr = remote.address.to_string();
    let scratch = Scratch::new("app", "remote");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (gateway, _) = run_example(&scratch, "remote-points.toml", mqtt, bip, |t| {
        t.replace("address = \"127.0.0.1:47900\"", &format!("address = \"{remote_addr}\""))
    });

    // The schedule's write reached the remote device…
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let said = cli(&["read", &remote_addr, "analog-value,1", "present-value"]);
        if said.contains("23.5") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "AV1 of 4001 is not 23.5: {said}\n{}", gateway.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // …and the alarm application, polling the same remote point, saw it.
    let alarm = wait_for(&lines, "the remote alarm", |l| l.starts_with("building/alarms/remote-setpoint "));
    assert!(alarm.contains("\"state\": \"high\"") && alarm.contains("\"value\": 23.5"), "{alarm}");
    drop(gateway);
}
