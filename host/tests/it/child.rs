//! A `trellis` command run to its end within a time limit: killed by PID
//! when it overruns, so a test that finds it hanging fails instead of
//! hanging too.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a finished command printed, and how it exited.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// A command started in the background (stdin closed, output captured).
pub struct Running {
    child: Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Running {
    /// Start `command`.
    pub fn start(command: &mut Command) -> Running {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the command");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        drain(child.stdout.take().unwrap(), stdout.clone());
        drain(child.stderr.take().unwrap(), stderr.clone());
        Running { child, stdout, stderr }
    }

    /// Wait up to `limit` for it to end; past that, kill it by PID and
    /// return `Err` with what it had printed.
    pub fn finish_within(mut self, limit: Duration) -> Result<Finished, String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the command") {
                // The pipes close at exit; give the readers a moment to take the rest.
                std::thread::sleep(Duration::from_millis(100));
                return Ok(Finished { status, stdout: self.text(&self.stdout), stderr: self.text(&self.stderr) });
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!(
                    "still running after {limit:?}; killed. stdout:\n{}\nstderr:\n{}",
                    self.text(&self.stdout),
                    self.text(&self.stderr)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn text(&self, buf: &Arc<Mutex<Vec<u8>>>) -> String {
        String::from_utf8_lossy(&buf.lock().unwrap()).into_owned()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(mut pipe: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
}

/// Run `command` to its end within `limit` (see [`Running::finish_within`]).
pub fn run_within(command: &mut Command, limit: Duration) -> Result<Finished, String> {
    Running::start(command).finish_within(limit)
}
