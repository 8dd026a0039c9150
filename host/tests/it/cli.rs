//! The `trellis` binary as a user runs it: output and exit statuses.

use crate::peers::{Kind, Peer, free_port};
use std::process::{Command, Output};

fn trellis(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", "0", "--timeout-ms", "500", "--retries", "1"])
        .args(args)
        .output()
        .expect("run trellis")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn whois_read_write_and_discover_work_against_both_peers() {
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3201);
        let addr = peer.address.to_string();

        let o = trellis(&["whois", "--target", &addr, "--wait", "2"]);
        assert!(o.status.success(), "{kind:?} whois: {}", stderr(&o));
        assert!(stdout(&o).contains("3201"), "{kind:?}: {}", stdout(&o));

        let o = trellis(&["read", &addr, "analog-value,1", "present-value"]);
        assert_eq!(stdout(&o).trim(), "42 degrees-celsius", "{kind:?}: {}", stderr(&o));

        let o = trellis(&["write", &addr, "analog-value:1", "present-value", "19.5", "--priority", "8"]);
        assert!(o.status.success(), "{kind:?} write: {}", stderr(&o));
        let o = trellis(&["read", &addr, "analog-value:1", "present-value"]);
        assert_eq!(stdout(&o).trim(), "19.5 degrees-celsius", "{kind:?}");

        let o = trellis(&["readm", &addr, "analog-value,1", "object-name", "units"]);
        assert!(
            stdout(&o).contains("object-name: av1") && stdout(&o).contains("units: degrees-celsius"),
            "{kind:?}: {}",
            stdout(&o)
        );

        let o = trellis(&["read", &addr, "binary-value,1", "present-value"]);
        let pv = stdout(&o);
        assert!(pv.trim() == "active" || pv.trim() == "inactive", "{kind:?}: binary PV by name, got {pv}");

        let o = trellis(&["discover", "--target", &addr, "--wait", "2", "--json"]);
        assert!(o.status.success(), "{kind:?} discover: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let objects = report[0]["objects"].as_array().unwrap();
        assert!(objects.iter().any(|x| x["object"] == "analog-value,1" && x["name"] == "av1"), "{kind:?}: {report}");
    }
}

#[test]
fn bacnet_errors_exit_4_with_one_line_naming_the_error() {
    let peer = Peer::start(Kind::Bacpypes3, 3202);
    let o = trellis(&["read", &peer.address.to_string(), "analog-value,99", "present-value"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error object: unknown-object");
}

#[test]
fn no_answer_exits_3() {
    let port = free_port();
    let _silent = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let o = trellis(&["read", &format!("127.0.0.1:{port}"), "analog-value,1", "present-value"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("no answer after 2 attempts"), "{}", stderr(&o));
}

#[test]
fn bad_arguments_exit_2_and_say_what_was_wrong() {
    let o = trellis(&["read", "127.0.0.1", "analog-value", "present-value"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid object `analog-value`"), "{}", stderr(&o));
    let o = trellis(&["read", "127.0.0.1", "analog-value,1", "present-valu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown property `present-valu`"), "{}", stderr(&o));
    let o = trellis(&["write", "127.0.0.1", "analog-value,1", "present-value", "warm"]);
    assert_eq!(o.status.code(), Some(2));
    let o = trellis(&["write", "127.0.0.1", "analog-value,1", "present-value", "1", "--priority", "17"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_port_in_use_is_reported_clearly() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o =
        Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--port", &port, "whois", "--wait", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already in use"), "{}", stderr(&o));
}

#[test]
fn dcc_reinit_and_timesync_against_rusty_bacnet_print_and_exit_as_documented() {
    let peer = Peer::start(Kind::RustyBacnet, 3211);
    let addr = peer.address.to_string();

    let o = trellis(&["dcc", &addr, "disable-initiation", "--duration", "5", "--password", "trellis"]);
    assert_eq!((o.status.code(), stdout(&o).as_str()), (Some(0), ""), "{}", stderr(&o));
    let o = trellis(&["dcc", &addr, "enable", "--password", "wrong"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error security: password-failure");
    let o = trellis(&["dcc", &addr, "disable", "--password", "trellis"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error services: service-request-denied");
    let o = trellis(&["dcc", &addr, "enable", "--password", "trellis"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = trellis(&["reinit", &addr, "warmstart", "--password", "trellis"]);
    assert_eq!((o.status.code(), stdout(&o).as_str()), (Some(0), ""), "{}", stderr(&o));
    let o = trellis(&["reinit", &addr, "coldstart"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error security: password-failure");

    // Without an offset the time goes out as written; the peer's clock
    // follows, and its UTC offset is 0.
    let o = trellis(&["timesync", &addr, "--time", "2001-02-03T04:05:06"]);
    assert_eq!(
        stdout(&o).trim(),
        format!("timeSynchronization 2001-02-03 Sat 04:05:06.00 (local time) sent to {addr}")
    );
    assert_eq!(read_until(&addr, "device,3211", "local-date", "2001-02-03 Sat"), "2001-02-03 Sat");
    let o = trellis(&["timesync", &addr, "--utc", "--time", "2002-03-04T05:06:07.5+01:00"]);
    assert_eq!(stdout(&o).trim(), format!("utcTimeSynchronization 2002-03-04 Mon 04:06:07.50 (UTC) sent to {addr}"));
    assert_eq!(read_until(&addr, "device,3211", "local-date", "2002-03-04 Mon"), "2002-03-04 Mon");
    let o = trellis(&["read", &addr, "device,3211", "local-time"]);
    assert!(stdout(&o).starts_with("04:06:"), "{}", stdout(&o));
}

#[test]
fn dcc_reinit_and_timesync_against_bacpypes3_print_and_exit_as_documented() {
    let peer = Peer::start(Kind::Bacpypes3, 3212);
    let addr = peer.address.to_string();

    // bacpypes3 honours `disable`: reads go unanswered (exit 3) until `enable`.
    let o = trellis(&["dcc", &addr, "disable", "--password", "trellis"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = trellis(&["read", &addr, "analog-value,1", "present-value"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = trellis(&["dcc", &addr, "enable", "--password", "trellis"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = trellis(&["read", &addr, "analog-value,1", "present-value"]);
    assert_eq!(stdout(&o).trim(), "42 degrees-celsius");

    let o = trellis(&["reinit", &addr, "warmstart", "--password", "trellis"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: request rejected: unrecognized-service");

    // bacpypes3_server.py records what bacpypes3 decoded in characterstring-value,2.
    let o = trellis(&["timesync", &addr, "--utc", "--time", "2025-06-01T14:30:05.678+02:00"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = "utcTimeSynchronization 2025-06-01 7 12:30:05.67";
    assert_eq!(read_until(&addr, "characterstring-value,2", "present-value", want), want);
    // Default: now, in local time.
    let o = trellis(&["timesync", &addr]);
    let sent = stdout(&o);
    let (date, time) = sent
        .strip_prefix("timeSynchronization ")
        .and_then(|rest| rest.split_once(" (local time) sent to "))
        .map(|(dt, _)| dt.rsplit_once(' ').unwrap())
        .unwrap_or_else(|| panic!("{sent}"));
    let (day, _weekday) = date.split_once(' ').unwrap();
    let recorded = read_until(&addr, "characterstring-value,2", "present-value", "timeSynchronization");
    assert!(
        recorded.starts_with(&format!("timeSynchronization {day} ")) && recorded.ends_with(time),
        "{sent} vs {recorded}"
    );
}

#[test]
fn readrange_prints_flags_count_sequence_and_records() {
    let peer = Peer::start(Kind::RustyBacnet, 3213);
    let addr = peer.address.to_string();
    // tl1 logs Zone Temp (72.5) once a second: wait for four records, so
    // that the reads below of records 1 to 3 never reach the last one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let all = loop {
        let o = trellis(&["readrange", &addr, "trend-log,1", "log-buffer"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        if text.lines().filter(|l| l.contains("72.5")).count() >= 4 || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    };
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines[0], "result-flags: {first-item, last-item}", "{all}");
    assert_eq!(lines[1], format!("item-count: {}", lines.len() - 2), "{all}");
    assert!(lines[2].starts_with("1: ") && lines[2].ends_with("  72.5"), "position, timestamp, value: {all}");

    let o = trellis(&["readrange", &addr, "trend-log,1", "log-buffer", "--sequence", "2", "--count", "2"]);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..3], ["result-flags: {}", "item-count: 2", "first-sequence-number: 2"], "{text}");
    assert!(lines[3].starts_with("2: ") && lines[4].starts_with("3: ") && lines.len() == 5, "{text}");

    let o = trellis(&["readrange", &addr, "trend-log,1", "log-buffer", "--position", "2", "--count", "-2"]);
    let text = stdout(&o);
    assert!(text.starts_with("result-flags: {first-item}\nitem-count: 2\n1: "), "{text}");
    assert!(!text.contains("first-sequence-number"), "{text}");

    let o =
        trellis(&["readrange", &addr, "trend-log,1", "log-buffer", "--time", "2000-01-01T00:00:00Z", "--count", "1"]);
    assert!(
        stdout(&o).starts_with("result-flags: {first-item}\nitem-count: 1\nfirst-sequence-number: 1\n1: "),
        "{}",
        stdout(&o)
    );

    let o = trellis(&["readrange", &addr, "analog-input,1", "present-value"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error services: property-is-not-a-list");

    let bacpypes3 = Peer::start(Kind::Bacpypes3, 3214);
    let o = trellis(&["readrange", &bacpypes3.address.to_string(), "device,3214", "object-list"]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(stderr(&o).trim(), "trellis: BACnet error device: operational-problem");
}

#[test]
fn management_commands_refuse_bad_arguments_with_exit_2() {
    let cases: [&[&str]; 9] = [
        &["dcc", "127.0.0.1", "pause"],
        &["dcc", "127.0.0.1", "enable", "--password", "123456789012345678901"],
        &["dcc", "127.0.0.1", "enable", "--duration", "65536"],
        &["reinit", "127.0.0.1", "reboot"],
        &["timesync", "127.0.0.1", "--time", "yesterday"],
        &["timesync", "127.0.0.1", "--global"],
        &["readrange", "127.0.0.1", "trend-log,1", "log-buffer", "--position", "1"],
        &["readrange", "127.0.0.1", "trend-log,1", "log-buffer", "--sequence", "1", "--count", "0"],
        &[
            "readrange",
            "127.0.0.1",
            "trend-log,1",
            "log-buffer",
            "--position",
            "1",
            "--time",
            "2025-01-01T00:00:00",
            "--count",
            "1",
        ],
    ];
    for args in cases {
        let o = trellis(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    let o = trellis(&["reinit", "127.0.0.1", "reboot"]);
    assert!(stderr(&o).contains("coldstart, warmstart, start-backup"), "the states by name: {}", stderr(&o));
    let o = trellis(&["timesync", "127.0.0.1", "--time", "1899-12-31T00:00:00"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("1900 to 2154"), "{}", stderr(&o));
}

/// `trellis read` until it prints something starting with `want` (an
/// unconfirmed request takes effect a little after it is sent); the last
/// output after 3 s.
fn read_until(addr: &str, object: &str, property: &str, want: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let o = trellis(&["read", addr, object, property]);
        let text = stdout(&o).trim().to_string();
        if text.starts_with(want) || std::time::Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Issue 44: a client on any local port broadcasts its Who-Is to the
/// network's port, 47808, not to its own. In a namespace of its own the
/// gateway's embedded default serves on 127.0.0.1:47808, as on a user's
/// machine; `--port 0` and `--port 47811` find it with and without
/// `--global`.
#[test]
fn whois_from_any_local_port_broadcasts_to_47808() {
    let _timing = crate::peers::shared_blocking();
    let ns = crate::netns::Namespaces::create("cli", &["bcast"]);
    let scratch = crate::scratch::Scratch::new("cli", "bcast");
    let _gateway = crate::gateway::Gateway::start_in(ns.name("bcast"), &["run"], &scratch.0)
        .unwrap_or_else(|log| panic!("the default gateway exited:\n{log}"));
    for args in [
        &["--port", "0", "whois"][..],
        &["--port", "0", "whois", "--global"],
        &["--port", "47811", "whois"],
        &["--port", "47811", "whois", "--global"],
        &["whois"],
    ] {
        let (ok, out) = ns.trellis("bcast", &[args, &["--wait", "2"]].concat());
        assert!(ok && out.contains("389001"), "trellis {args:?} found no device 389001:\n{out}");
    }
}

/// `--broadcast-port` names the network's port when it is not 47808; the
/// gateway's own ports broadcast to their own port, so `run` refuses it.
#[test]
fn broadcast_port_reaches_a_network_on_another_port() {
    let _timing = crate::peers::shared_blocking();
    let scratch = crate::scratch::Scratch::new("cli", "bcast-port");
    let port = free_port().to_string();
    let _gateway = crate::gateway::Gateway::start(&["--port", &port, "run"], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited:\n{log}"));
    for local in ["0", &free_port().to_string()] {
        let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(["--port", local, "--broadcast-port", &port, "whois", "--wait", "2"])
            .output()
            .unwrap();
        assert!(stdout(&o).contains("389001"), "--port {local} --broadcast-port {port}: {}{}", stdout(&o), stderr(&o));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["--broadcast-port", "47809", "run"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--broadcast-port"), "{}", stderr(&o));
}
