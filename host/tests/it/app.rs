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

#[test]
fn the_alarm_threshold_example_raises_and_clears_an_alarm_over_mqtt_and_bacnet() {
    let scratch = Scratch::new("app", "alarm-threshold");
    let (mqtt, bip) = (crate::peers::free_port(), crate::peers::free_port());
    let _broker = broker(mqtt, &scratch.0);
    let (_sub, lines) = watch(mqtt);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/alarm-threshold.toml"))
        .unwrap()
        .replace("127.0.0.1:1883", &format!("127.0.0.1:{mqtt}"))
        .replace("password = \"change-me\"", &format!("password = \"change-me\"\nport = {bip}"));
    let config = scratch.path("alarm-threshold.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
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
