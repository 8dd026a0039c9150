//! Real BACnet peers (bacpypes3 and the rusty-bacnet wheel) started as child
//! processes on loopback, each on its own free port, stopped by PID when the
//! test ends (also when it fails).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use trellis::client::DeviceAddress;

/// Which peer implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bacpypes3,
    RustyBacnet,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Bacpypes3, Kind::RustyBacnet];

    fn script(self) -> &'static str {
        match self {
            Kind::Bacpypes3 => "bacpypes3_server.py",
            Kind::RustyBacnet => "rusty_server.py",
        }
    }

    /// Present_Value the peer's analog-input,1 starts with.
    pub fn ai1_value(self) -> f32 {
        match self {
            Kind::Bacpypes3 => 21.5,
            Kind::RustyBacnet => 72.5,
        }
    }
}

/// A running peer device; killed on drop.
pub struct Peer {
    pub address: DeviceAddress,
    child: Child,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The peers venv's python (installed by the README's test command).
pub fn python() -> PathBuf {
    let p = repo_root().join(".venv-peers/bin/python");
    assert!(
        p.exists(),
        "{} is missing: the peers venv is installed by the README's test command (.ci/test)",
        p.display()
    );
    p
}

/// A UDP port free on 127.0.0.1 and on the loopback broadcast address.
pub fn free_port() -> u16 {
    loop {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = s.local_addr().unwrap().port();
        if UdpSocket::bind(("127.255.255.255", port)).is_ok() {
            return port;
        }
    }
}

impl Peer {
    /// Start a peer device and wait until it says READY.
    pub fn start(kind: Kind, device_id: u32) -> Peer {
        Self::start_with(kind, device_id, &[])
    }

    /// Start a peer device with extra arguments for its script.
    pub fn start_with(kind: Kind, device_id: u32, extra: &[&str]) -> Peer {
        let port = free_port();
        let mut child = Command::new(python())
            .arg(repo_root().join("host/tests/peers").join(kind.script()))
            .args(["--port", &port.to_string(), "--device-id", &device_id.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the peer");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.trim() == "READY" {
                    let _ = tx.send(());
                }
            }
        });
        let peer = Peer { address: DeviceAddress::direct(SocketAddrV4::new([127, 0, 0, 1].into(), port)), child };
        rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{kind:?} did not become READY in 60 s"));
        peer
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Load tests that saturate both cores take this exclusively; tests whose
/// peers must answer in time take it shared, so they never run beside one.
static LOAD: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Run alone: no timing-sensitive peer test beside this one.
pub async fn exclusive() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    LOAD.write().await
}

/// Never beside a load test.
pub async fn shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    LOAD.read().await
}

/// [`shared`] for a test without a runtime.
pub fn shared_blocking() -> tokio::sync::RwLockReadGuard<'static, ()> {
    LOAD.blocking_read()
}
