//! Schedules and calendars end to end (`examples/schedules.toml`), as an
//! operator and a front end meet them: the device clock moved by a time
//! synchronization, the occupancy schedule writes the zone setpoint at
//! priority 12 at its times, a holiday from the Calendar overrides the
//! week, a front end rewrites the schedule and the next evaluation uses
//! it, and a second schedule writes to another device found by a Who-Is.
//!
//! ```text
//! operator ──UTCTimeSynchronization (Mon 06:59:59)──▶ gateway   setpoint[12] = 18 (Schedule_Default)
//! operator ──UTCTimeSynchronization (Mon 07:00:00)──▶ gateway ──▶ setpoint[12] = 21
//! operator ──UTCTimeSynchronization (Fri 25 Dec)────▶ gateway ──▶ setpoint[12] = 18 (holiday, priority 10)
//! operator ──UTCTimeSynchronization (Sat 08:00)─────▶ gateway ──Who-Is 389010──▶ ◀──I-Am── 389010
//!                                                     gateway ──WriteProperty binary-value,1 active @14──▶ 389010
//! ```

use crate::examples::on_a_free_port;
use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use std::time::{Duration, Instant};

fn cli(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "trellis {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// Read `object property` until it reads `expected` (evaluation runs once
/// a second), or fail after 10 s with what it last read.
fn read_until(address: &str, object: &str, property: &str, expected: &str, gateway: &Gateway) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = cli(&["read", address, object, property]);
        if got.trim() == expected {
            return;
        }
        assert!(Instant::now() < deadline, "{object} {property}: {got:?}, not {expected:?}\n{}", gateway.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_example_schedule_follows_its_week_its_holidays_a_rewrite_and_writes_to_another_device() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("schedules", "example");
    let (path, port) = on_a_free_port(&scratch, "schedules.toml");
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let address = format!("127.0.0.1:{port}");
    let other = format!("127.0.0.2:{port}");
    let at = |time: &str| {
        cli(&["timesync", "--utc", "--time", time, &address]);
    };

    at("2026-11-30T06:59:58Z");
    read_until(&address, "analog-value,1", "present-value", "18 degrees-celsius", &gateway);
    let priorities = cli(&["read", &address, "analog-value,1", "priority-array"]);
    assert!(priorities.contains("null, 18, null"), "written at priority 12: {priorities}");
    at("2026-11-30T07:00:00Z");
    read_until(&address, "analog-value,1", "present-value", "21 degrees-celsius", &gateway);
    read_until(&address, "schedule,1", "present-value", "21", &gateway);

    // Christmas is a Friday: the holiday exception (priority 10) wins over the week.
    at("2026-12-25T09:00:00Z");
    read_until(&address, "calendar,1", "present-value", "true", &gateway);
    read_until(&address, "analog-value,1", "present-value", "18 degrees-celsius", &gateway);

    // A front end moves the default; at 20:00 on a Monday nothing else applies.
    cli(&["write", &address, "schedule,1", "schedule-default", "real:17.0"]);
    at("2026-11-30T20:00:00Z");
    read_until(&address, "analog-value,1", "present-value", "17 degrees-celsius", &gateway);

    // Saturday 08:00: the second schedule finds device 389010 and writes to it.
    at("2026-12-05T08:00:00Z");
    read_until(&other, "binary-value,1", "present-value", "active", &gateway);
    let priorities = cli(&["read", &other, "binary-value,1", "priority-array"]);
    assert!(priorities.contains("null, active, null, null]"), "written at priority 14: {priorities}");
    let binding = cli(&["read", &address, "device,389009", "device-address-binding"]);
    assert!(binding.contains("389010"), "the other device's address is bound: {binding}");
    at("2026-12-05T12:00:00Z");
    read_until(&other, "binary-value,1", "present-value", "inactive", &gateway);

    // Out of range values are refused with the standard's errors.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["write", &address, "schedule,1", "priority-for-writing", "unsigned:17"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("value-out-of-range"), "{refused:?}");
    drop(gateway);
}

/// Runs `host/tests/peers/schedule_client.py` as `stack`; returns its JSON line.
fn third_party(stack: &str, port: u16, extra: &[&str], gateway: &Gateway) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/schedule_client.py");
    let out = std::process::Command::new(crate::peers::python())
        .arg(&script)
        .args(["--stack", stack, "--target", &format!("127.0.0.1:{port}"), "--port", &free_port().to_string()])
        .args(extra)
        .output()
        .expect("run schedule_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stack}: {stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gateway.log()
    );
    stdout.lines().last().unwrap_or_default().to_owned()
}

/// bacpypes3 reads the schedule and the calendar with its own Schedule and
/// Calendar classes and rewrites the week; rusty-bacnet moves the clock
/// with a UTCTimeSynchronization and sees the rewritten week's write
/// happen. tshark dissects the conversation.
#[test]
fn bacpypes3_rewrites_a_schedule_rusty_bacnet_moves_the_clock_and_tshark_dissects_them() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("schedules", "peers");
    let (path, port) = on_a_free_port(&scratch, "schedules.toml");
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let pcap = scratch.path("schedules.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);

    let line = third_party("bacpypes3", port, &[], &gateway);
    for expected in [
        r#""weekly": [[["07:00:00.00", "21.0"], ["19:00:00.00", "()"]]"#,
        r#""exceptions": [{"period": "calendar,1", "priority": 10, "values": [["00:00:00.00", "18.0"]]}]"#,
        r#""default": "18.0""#,
        r#""references": ["analog-value,1 present-value"]"#,
        r#""priority_for_writing": 12"#,
        r#""date_list": ["date *-12-25 *", "date *-1-1 *", "range 2026-12-28 *..2026-12-31 *", "weekNDay 050601"]"#,
        r#""weekly_after": [[["06:30:00.00", "22.0"], ["18:00:00.00", "()"]]"#,
        r#""default_after": "17.0""#,
    ] {
        assert!(line.contains(expected), "bacpypes3 missing {expected}: {line}");
    }
    let line = third_party("rusty", port, &["--time", "06:45", "--expect", "22.0"], &gateway);
    assert!(line.contains(r#""setpoint": 22.0"#) && line.contains(r#""schedule_present_value": 22.0"#), "{line}");
    let line = third_party("rusty", port, &["--time", "18:30", "--expect", "17.0"], &gateway);
    assert!(line.contains(r#""setpoint": 17.0"#), "{line}");
    drop(gateway);
    capture.finish(&[port], &["writeProperty", "readProperty", "utcTimeSynchronization", "weekly-schedule"]);
}

/// A front end creates and deletes Schedule and Calendar objects (the
/// example allows both): our CLI by type with a name, then rusty-bacnet by
/// type and by identifier; Object_List and Database_Revision follow;
/// configured objects and the model's are not deleted; tshark dissects
/// the conversation.
#[test]
fn our_cli_and_rusty_bacnet_create_and_delete_calendars_and_schedules() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("schedules", "lifecycle");
    let (path, port) = on_a_free_port(&scratch, "schedules.toml");
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let pcap = scratch.path("lifecycle.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let address = format!("127.0.0.1:{port}");

    let revision = cli(&["read", &address, "device,389009", "database-revision"]);
    let created = cli(&["create", &address, "calendar", "object-name=bank-holidays"]);
    assert_eq!(created.trim(), "calendar,2", "the lowest free instance");
    let list = cli(&["read", &address, "device,389009", "object-list"]);
    assert!(list.contains("calendar,2"), "{list}");
    assert_ne!(cli(&["read", &address, "device,389009", "database-revision"]), revision);
    assert_eq!(cli(&["read", &address, "calendar,2", "object-name"]).trim(), "bank-holidays");
    cli(&["delete", &address, "calendar,2"]);
    let list = cli(&["read", &address, "device,389009", "object-list"]);
    assert!(!list.contains("calendar,2"), "{list}");
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["delete", &address, "calendar,1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&refused.stderr).contains("object-deletion-not-permitted"), "{refused:?}");

    let line = third_party("rusty-lifecycle", port, &[], &gateway);
    // Error codes as rusty-bacnet prints them: 24 object-identifier-already-exists,
    // 31 unknown-object, 23 object-deletion-not-permitted (class 1: object).
    for expected in [
        r#""acks": ["6,2", "17,50"]"#,
        r#""name": "rusty-holidays""#,
        r#""duplicate": "BACnet error: class=1 code=24"#,
        r#""after_delete": "BACnet error: class=1 code=31"#,
        r#""delete_model_object": "BACnet error: class=1 code=23"#,
    ] {
        assert!(line.contains(expected), "rusty-bacnet missing {expected}: {line}");
    }
    drop(gateway);
    capture.finish(&[port], &["createObject", "deleteObject"]);
}
