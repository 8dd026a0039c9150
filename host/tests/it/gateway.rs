//! A `trellis` gateway process for tests: started with its own cache and
//! admin socket, ready when it says it is serving, killed by PID on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// A running gateway.
pub struct Gateway {
    child: Child,
    stderr: Arc<Mutex<String>>,
    socket: PathBuf,
}

impl Gateway {
    /// Run `trellis ARGS` with `XDG_CACHE_HOME` under `scratch` and the
    /// admin socket at [`Gateway::socket_in`]`(scratch)`; wait for its ready
    /// line. `Err` holds its stderr when it exits first.
    pub fn start(args: &[&str], scratch: &Path) -> Result<Gateway, String> {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_trellis")), args, scratch)
    }

    /// [`Gateway::start`] inside network namespace `netns` (`ip netns exec`
    /// execs the gateway: the PID is still the gateway's).
    pub fn start_in(netns: &str, args: &[&str], scratch: &Path) -> Result<Gateway, String> {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", netns, env!("CARGO_BIN_EXE_trellis")]);
        Self::spawn(command, args, scratch)
    }

    fn spawn(mut command: Command, args: &[&str], scratch: &Path) -> Result<Gateway, String> {
        let socket = Self::socket_in(scratch);
        let mut child = command
            .args(args)
            .env("XDG_CACHE_HOME", scratch)
            .env("TRELLIS_ADMIN_SOCKET", &socket)
            .env_remove("TRELLIS_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the gateway");
        let pipe = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let ready = line.contains("trellis: serving");
                {
                    let mut s = sink.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
                if ready {
                    let _ = tx.send(true);
                }
            }
            let _ = tx.send(false);
        });
        let gateway = Gateway { child, stderr: log, socket };
        match rx.recv_timeout(Duration::from_secs(180)) {
            Ok(true) => Ok(gateway),
            Ok(false) => Err(gateway.log()),
            Err(_) => panic!("the gateway neither served nor exited within 180 s; stderr:\n{}", gateway.log()),
        }
    }

    /// Where a gateway started with `scratch` puts its admin socket: in a
    /// directory of its own, which the gateway creates private (mode 0700).
    pub fn socket_in(scratch: &Path) -> PathBuf {
        scratch.join("admin").join("admin.sock")
    }

    /// This gateway's admin socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What the gateway wrote on stderr so far.
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Send SIGTERM to the gateway's PID (as systemd and `kill` do).
    pub fn terminate(&self) {
        let pid = self.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().expect("run kill");
        assert!(status.success(), "kill -TERM {pid} failed");
    }

    /// Wait up to `limit` for the gateway to exit; `None` if it is still running.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the gateway") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
