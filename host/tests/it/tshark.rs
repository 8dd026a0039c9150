//! Wire truth for the tests: capture with tshark while a conversation
//! runs, then have tshark dissect the capture and fail on any malformed
//! packet or dissector error.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A tshark capture in progress, stopped (by PID) on [`Capture::finish`] or drop.
pub struct Capture {
    child: Child,
    pcap: PathBuf,
    /// Stopped and reaped by [`Capture::finish`]: nothing left for drop.
    finished: bool,
}

impl Capture {
    /// Capture on `interface` what `filter` (a capture filter) lets through, into `pcap`.
    pub fn on(interface: &str, filter: &str, pcap: &Path) -> Capture {
        Self::with(Command::new("tshark"), interface, filter, pcap)
    }

    /// [`Capture::on`] with tshark started by `command` (e.g. `ip netns exec NS tshark`).
    pub fn with(mut command: Command, interface: &str, filter: &str, pcap: &Path) -> Capture {
        let _ = std::fs::remove_file(pcap);
        let mut child = command
            .args(["-i", interface, "-f", filter, "-w"])
            .arg(pcap)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tshark is installed by the README's test command");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Capturing on") {
                    let _ = tx.send(());
                }
            }
        });
        let capture = Capture { child, pcap: pcap.to_path_buf(), finished: false };
        rx.recv_timeout(Duration::from_secs(30)).expect("tshark started capturing");
        // tshark says "Capturing on" before its dumpcap has opened the
        // interface; dumpcap writes the file's header only after, so the
        // header is the sign that packets from now on are captured.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::metadata(pcap).map_or(true, |m| m.len() == 0) {
            assert!(Instant::now() < deadline, "tshark wrote no header to {} in 30 s", pcap.display());
            std::thread::sleep(Duration::from_millis(5));
        }
        capture
    }

    /// Stop capturing and dissect (`-V`), BACnet decoded on the UDP
    /// `ports` beside the standard one: every `expected` text is in the
    /// dissection, nothing is malformed, no dissector error. Returns the
    /// dissection.
    pub fn finish(mut self, ports: &[u16], expected: &[&str]) -> String {
        std::thread::sleep(Duration::from_millis(500));
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
        self.finished = true;
        let mut read = Command::new("tshark");
        read.arg("-r").arg(&self.pcap).arg("-V");
        for port in ports {
            read.args(["-d", &format!("udp.port=={port},bvlc")]);
        }
        let out = read.output().expect("run tshark -r");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let pcap = self.pcap.display();
        assert!(out.status.success(), "tshark -r {pcap} failed: {}", String::from_utf8_lossy(&out.stderr));
        for what in expected {
            if !text.contains(what) {
                let mut summary = Command::new("tshark");
                summary.arg("-r").arg(&self.pcap);
                let listing = summary.output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
                panic!("tshark saw no {what} in {pcap}; it saw:\n{}", listing.unwrap_or_default());
            }
        }
        assert!(!text.contains("Malformed"), "malformed packet in {pcap}:\n{text}");
        assert!(!text.contains("Expert Info (Error"), "dissector error in {pcap}:\n{text}");
        text
    }
}

impl Drop for Capture {
    /// A capture not finished (the test failed first): SIGINT, so tshark
    /// stops its dumpcap child too, then SIGKILL if it is still there.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let _ = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
