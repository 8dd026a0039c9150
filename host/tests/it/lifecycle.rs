//! `trellis run` from start to stop as an operator meets it (issue #5
//! item 5): the warning about devices open to management without a
//! password.

use crate::gateway::Gateway;
use crate::peers::free_port;
use std::path::{Path, PathBuf};

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("trellis-lifecycle-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn config(&self, text: &str) -> PathBuf {
        let path = self.0.join("gateway.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn password_warnings(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("WARN") && l.contains("password")).collect()
}

#[test]
fn a_device_on_a_network_address_without_a_password_is_warned_about_once() {
    let scratch = Scratch::new("password");
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
