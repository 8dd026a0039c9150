//! `opcua`: OPC UA Read throughput of Trellis's server beside the other
//! stacks, in the same run, with the same native client (the shape of the
//! o6 benchmark: 100 variables, one value per Read, 1/3/10 client processes
//! × 32 Reads in flight each), then Trellis alone: BACnet COV → OPC UA
//! DataChange latency at a fixed write rate, and memory per session and
//! per monitored item.
//!
//! Servers (`--servers`, each started as its own process, measured, killed):
//! - `trellis`: the shipped `trellis run` with `[opcua]`, serving a
//!   bulk-objects device of 100 Analog Values (WebAssembly behind every value);
//! - `async-opcua`, `async-opcua-points`, `open62541`, `open62541-points`:
//!   this binary's `opcua-serve` ([`serve`]; the open62541 ones with
//!   `--features open62541`);
//! - `o6`, `asyncua`: Python servers (`benches/peers/opcua_bench_server.py`,
//!   100 Int32 variables held by the stack).
//!
//! The client ([`load`]) is async-opcua's, one session per process.
//!
//! Every process is killed by PID when the scenario ends.

pub mod load;
pub mod serve;

use crate::json_line::JsonLine;
use anyhow::Context;
use serde_json::json;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What `stress-test opcua` runs.
#[derive(Debug, Clone)]
pub struct OpcUaOptions {
    /// Seconds of reading per step.
    pub seconds: f64,
    /// Client process counts.
    pub clients: Vec<usize>,
    /// Reads in flight per client process.
    pub outstanding: usize,
    /// Servers, by name.
    pub servers: Vec<String>,
    /// The `trellis` binary.
    pub trellis: PathBuf,
    /// The Python of the peers' venv (o6, asyncua).
    pub python: PathBuf,
    /// BACnet writes per second in the latency step (0: no latency step).
    pub rate: u32,
    /// Seconds of writing in the latency step.
    pub latency_secs: u64,
}

/// A child process killed by PID when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).stderr(Stdio::null()).status();
            for _ in 0..50 {
                if !matches!(self.0.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

pub(crate) fn free_tcp_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Read the child's stdout until its `{"ready": true, …}` line.
fn wait_ready(child: &mut Child, what: &str) -> anyhow::Result<(String, Vec<String>)> {
    let out = child.stdout.take().context("the server's stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && v["ready"] == true
            {
                let _ = tx.send(v);
            }
        }
    });
    let v = rx.recv_timeout(Duration::from_secs(180)).with_context(|| format!("{what} did not say it was ready"))?;
    let url = v["url"].as_str().context("url")?.to_owned();
    let nodes = v["nodes"].as_array().context("nodes")?.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect();
    Ok((url, nodes))
}

/// `trellis run` serving 100 Analog Values over OPC UA; its node ids come
/// from the NodeId table it writes.
fn start_trellis(o: &OpcUaOptions, work: &Path, bip: u16) -> anyhow::Result<(Proc, String, Vec<String>)> {
    let port = free_tcp_port()?;
    let dir = work.join("trellis");
    std::fs::create_dir_all(dir.join("bulk"))?;
    std::fs::write(
        dir.join("bulk/bulk.toml"),
        format!("count = 0\nvalues = {}\ndevice_instance = 389002\n", serve::COUNT),
    )?;
    let node_ids = dir.join("node-ids");
    let _ = std::fs::remove_file(&node_ids);
    let config = format!(
        "[[device]]\ninstance = 389002\nplugin = \"builtin:bulk-objects\"\nport = {bip}\ndata_dir = \"bulk\"\n\n\
         [opcua]\nbind = \"127.0.0.1:{port}\"\nhost_name = \"127.0.0.1\"\nsecurity = [\"none\"]\nmax_sessions = 100\n\
         pki_dir = \"pki\"\nnode_ids = \"node-ids\"\n"
    );
    std::fs::write(dir.join("gateway.toml"), config)?;
    let child = Command::new(&o.trellis)
        .args(["run", "--config"])
        .arg(dir.join("gateway.toml"))
        .env("XDG_CACHE_HOME", &dir)
        .env("TRELLIS_ADMIN_SOCKET", dir.join("admin.sock"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("start {}", o.trellis.display()))?;
    let mut p = Proc(child);
    let err = p.0.stderr.take().context("stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if line.contains("trellis: serving") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(180)).context("trellis run did not start serving")?;
    let table = std::fs::read_to_string(&node_ids)?;
    let mut nodes = Vec::new();
    for i in 1..=serve::COUNT {
        let key = format!("389002/analog-value,{i}/Present_Value");
        let id = table
            .lines()
            .find_map(|l| l.split_once(' ').filter(|(_, k)| *k == key).map(|(n, _)| n.to_owned()))
            .with_context(|| format!("{key} in the NodeId table"))?;
        nodes.push(format!("ns=2;i={id}"));
    }
    Ok((p, format!("opc.tcp://127.0.0.1:{port}/"), nodes))
}

fn start(o: &OpcUaOptions, server: &str, work: &Path) -> anyhow::Result<(Proc, String, Vec<String>)> {
    match server {
        "trellis" => start_trellis(o, work, crate::target::free_port()?),
        "o6" | "asyncua" => {
            let port = free_tcp_port()?;
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/opcua_bench_server.py");
            let mut child = Command::new(&o.python)
                .arg(script)
                .args(["--stack", server, "--port", &port.to_string(), "--count", &serve::COUNT.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("start the {server} server with {}", o.python.display()))?;
            let (url, nodes) = wait_ready(&mut child, server)?;
            Ok((Proc(child), url, nodes))
        }
        stack => {
            let port = free_tcp_port()?;
            let dir = work.join(stack);
            std::fs::create_dir_all(&dir)?;
            let mut child = Command::new(std::env::current_exe()?)
                .args(["opcua-serve", "--stack", stack, "--port", &port.to_string(), "--work-dir"])
                .arg(&dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?;
            let (url, nodes) = wait_ready(&mut child, stack)?;
            Ok((Proc(child), url, nodes))
        }
    }
}

/// `clients` load processes against `url` at once; total good reads per second.
fn load_step(o: &OpcUaOptions, url: &str, nodes: &[String], clients: usize) -> anyhow::Result<(f64, u64)> {
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for _ in 0..clients {
        children.push(Proc(
            Command::new(&exe)
                .args(["opcua-read", "--url", url, "--nodes", &nodes.join(",")])
                .args(["--seconds", &o.seconds.to_string(), "--outstanding", &o.outstanding.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()?,
        ));
    }
    let (mut per_s, mut errors) = (0.0, 0);
    for mut c in children {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut c.0.stdout.take().context("stdout")?, &mut out)?;
        let v: serde_json::Value =
            serde_json::from_str(out.trim()).with_context(|| format!("a load process said {out:?}"))?;
        per_s += v["reads"].as_f64().unwrap_or(0.0) / v["seconds"].as_f64().unwrap_or(1.0);
        errors += v["errors"].as_u64().unwrap_or(0);
    }
    Ok((per_s, errors))
}

/// Run the scenario: one JSON line per server and client count, then the
/// latency and memory steps on `trellis`.
pub fn run(o: &OpcUaOptions, work: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(work)?;
    let mut table: Vec<(String, usize, f64)> = Vec::new();
    for server in &o.servers {
        let (proc, url, nodes) = match start(o, server, work) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stress-test opcua: {server}: {e:#} (skipped)");
                continue;
            }
        };
        let pid = proc.0.id();
        for &clients in &o.clients {
            let cpu_before = crate::procfs::cpu_time(pid, crate::procfs::clock_ticks_per_sec());
            let started = Instant::now();
            let (per_s, errors) = load_step(o, &url, &nodes, clients)?;
            let wall = started.elapsed().as_secs_f64();
            let cpu = crate::procfs::cpu_time(pid, crate::procfs::clock_ticks_per_sec())
                .zip(cpu_before)
                .map(|(a, b)| (a - b).as_secs_f64() / wall);
            println!(
                "{}",
                JsonLine::new()
                    .put("scenario", json!("opcua"))
                    .put("step", json!("reads"))
                    .put("server", json!(server))
                    .put("clients", json!(clients))
                    .put("outstanding", json!(o.outstanding))
                    .put("reads_per_s", json!(per_s.round()))
                    .put("errors", json!(errors))
                    .put("server_cpu", json!(cpu.map(|c| (c * 100.0).round() / 100.0)))
                    .finish()
            );
            table.push((server.clone(), clients, per_s));
        }
        drop(proc);
    }
    summary(&table);
    if o.rate > 0 && o.servers.iter().any(|s| s == "trellis") {
        latency::run(o, work)?;
    }
    Ok(())
}

/// Ratios of every server to open62541's own, per client count.
fn summary(table: &[(String, usize, f64)]) {
    for (server, clients, per_s) in table {
        let base = table.iter().find(|(s, c, _)| s == "open62541" && c == clients).map(|(_, _, r)| *r);
        eprintln!(
            "opcua: {server:<20} {clients:>2} clients: {per_s:>9.0} reads/s{}",
            base.map(|b| format!("  ({:.2}× open62541)", per_s / b)).unwrap_or_default()
        );
    }
}

pub mod latency;
