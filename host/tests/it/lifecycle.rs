//! `trellis run` from start to stop as an operator meets it (issue #5
//! items 5 and 6): the warning about devices open to management without a
//! password, a bind failure that is not preceded by "serving", a plugin
//! that traps while starting reported with its trap, and SIGTERM handled
//! like Ctrl-C.

use crate::child::run_within;
use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use trellis::plugin::builtin;

const LIMIT: Duration = Duration::from_secs(120);

impl Scratch {
    fn config(&self, text: &str) -> PathBuf {
        let path = self.0.join("gateway.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `trellis ARGS` with its cache and admin socket under `scratch`, to its end.
fn trellis_run_to_end(args: &[&str], scratch: &Path) -> crate::child::Finished {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trellis"));
    c.args(args)
        .env("XDG_CACHE_HOME", scratch)
        .env("TRELLIS_ADMIN_SOCKET", Gateway::socket_in(scratch))
        .env_remove("TRELLIS_LOG");
    run_within(&mut c, LIMIT).unwrap_or_else(|e| panic!("trellis {args:?}: {e}"))
}

fn password_warnings(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("WARN") && l.contains("password")).collect()
}

#[test]
fn a_device_on_a_network_address_without_a_password_is_warned_about_once() {
    let scratch = Scratch::new("lifecycle", "password");
    // Every interface, on a port the system picks: reachable from the network.
    let config = scratch.config("[[device]]\nbind = \"0.0.0.0\"\nport = 0\ninstance = 389101\n");
    let gateway = Gateway::start(&["run", "--config", s(&config)], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    let log = gateway.log();
    let warnings = password_warnings(&log);
    assert_eq!(warnings.len(), 1, "{log}");
    let w = warnings[0];
    for part in ["device 389101", "0.0.0.0:", "`password`", "DeviceCommunicationControl", "ReinitializeDevice"] {
        assert!(w.contains(part), "{part:?} missing from: {w}");
    }
    drop(gateway);

    // On loopback only this host can reach it: no warning.
    let config = scratch.config(&format!("[[device]]\nbind = \"127.0.0.1\"\nport = {}\n", free_port()));
    let gateway = Gateway::start(&["run", "--config", s(&config)], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    assert_eq!(password_warnings(&gateway.log()), Vec::<&str>::new(), "{}", gateway.log());
}

#[test]
fn a_port_already_taken_fails_before_serving_is_announced() {
    let scratch = Scratch::new("lifecycle", "taken");
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = trellis_run_to_end(&["run", "--port", &port], &scratch.0);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let last = o.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("trellis: ") && last.contains(&port) && last.contains("already in use"), "{o:?}");
    assert!(!o.stderr.contains("serving"), "announced serving before failing:\n{}", o.stderr);
    assert!(!Gateway::socket_in(&scratch.0).exists(), "admin socket left behind:\n{}", o.stderr);
}

#[test]
fn a_plugin_that_traps_while_starting_is_reported_with_its_trap_not_as_busy() {
    let scratch = Scratch::new("lifecycle", "constructor-trap");
    let data = scratch.0.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("misbehave.toml"), "on_start = \"trap\"\n").unwrap();
    std::fs::copy(builtin::MISBEHAVE_PATH, scratch.0.join("misbehave.wasm")).unwrap();
    let config = scratch.config(&format!(
        "[policy]\nallow_unsigned = true\n\n[[device]]\nport = {}\nplugin = \"misbehave.wasm\"\ndata_dir = \"{}\"\n",
        free_port(),
        s(&data)
    ));
    let o = trellis_run_to_end(&["run", "--config", s(&config)], &scratch.0);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let last = o.stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("trellis: "), "{o:?}");
    assert!(last.contains("misbehave.wasm trapped: misbehave: trap on start"), "the trap and its message: {last}");
    assert!(!last.contains("busy"), "{last}");
    assert!(!o.stderr.contains("serving"), "{}", o.stderr);
}

#[test]
fn sigterm_stops_the_gateway_cleanly_and_removes_its_admin_socket() {
    let scratch = Scratch::new("lifecycle", "sigterm");
    let port = free_port().to_string();
    let mut gateway =
        Gateway::start(&["run", "--port", &port], &scratch.0).unwrap_or_else(|log| panic!("exited:\n{log}"));
    let socket = gateway.socket().to_path_buf();
    assert!(socket.exists(), "{}", gateway.log());
    gateway.terminate();
    let status = gateway.wait_exit(LIMIT).unwrap_or_else(|| panic!("still running after SIGTERM:\n{}", gateway.log()));
    assert_eq!(status.code(), Some(0), "{status:?}\n{}", gateway.log());
    assert!(!socket.exists(), "admin socket left behind:\n{}", gateway.log());
    assert!(gateway.log().contains("trellis: stopped"), "{}", gateway.log());
}
