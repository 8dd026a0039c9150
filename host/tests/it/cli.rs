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
