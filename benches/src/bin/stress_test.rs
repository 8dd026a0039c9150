//! `stress-test`: named load scenarios against Trellis and its peers, one
//! JSON line per step on stdout (progress and the servers' own output on
//! stderr). See `benches/README.md`.

use anyhow::{Context, bail};
use bacnet::enums::PropertyIdentifier;
use bacnet::{ObjectIdentifier, ObjectType};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::json;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::Duration;
use trellis_benches::json_line::JsonLine as Line;
use trellis_benches::load::{self, LoadConfig, Mark};
use trellis_benches::request::ReadPropertyTemplate;
use trellis_benches::stats::Summary;
use trellis_benches::target::{self, Programs, Server, TargetKind};
use trellis_benches::{mstp, procfs, report};

/// Load scenarios for Trellis and its peers: one JSON line per step on stdout.
///
/// Every server runs as its own process on a free loopback port and is killed
/// when the run ends (also on Ctrl-C). Each request is a confirmed
/// ReadProperty of analog-input,1 present-value.
#[derive(Debug, Parser)]
#[command(name = "stress-test", version)]
struct Cli {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// The load generator against a bare UDP echo server (the physical limit
    /// of a loopback round trip): shows whether the generator can saturate it
    /// before any BACnet figure is trusted. Compare `server_cpu` with
    /// `client_cpu`: the saturated side is at 1.0 (one core).
    Echo(Common),
    /// 1, 5, 10, 25, 50, 100 concurrent clients (one UDP socket each), each
    /// keeping K ReadProperty requests in flight. With `--target all` every
    /// step runs against each target in turn (rotating which goes first), so
    /// ratios come from the same run.
    Clients {
        /// The server(s) under test.
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        #[command(flatten)]
        common: Common,
    },
    /// MS/TP wire limit: two of our stations (a served device whose object
    /// model is the bulk-objects plugin, and our client) on a simulated
    /// RS-485 line paced in real time; the achieved ReadProperty rate
    /// divided by the most the line could carry for the same frames, and the
    /// Tturnaround, reply delay and Tusage_delay achieved. One JSON line per
    /// reply size and baud.
    Mstp(MstpArgs),
    /// Write the benchmark report from a directory of results: every
    /// NAME.jsonl (stress-test output) with NAME.cmd (the command that
    /// produced it) and an optional machine.json. Writes results.json,
    /// README.md and the SVG charts into --out. `benches/report.sh` runs the
    /// whole recipe and then this.
    Report {
        /// The directory of NAME.jsonl and NAME.cmd files.
        #[arg(long)]
        input: PathBuf,
        /// Where the report goes.
        #[arg(long, default_value = "docs/benchmarks")]
        out: PathBuf,
    },
    /// Internal: the bare UDP echo server on 127.0.0.1:PORT (a target).
    #[command(hide = true)]
    ServeEcho {
        #[arg(long)]
        port: u16,
    },
}

#[derive(Debug, Args)]
struct MstpArgs {
    /// Reply sizes: `small` reads a REAL (a 29-octet reply frame), `large` the
    /// Object_List of 91 identifiers (a reply filling a standard frame).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "small,large")]
    reply: Vec<ReplyArg>,
    /// Line speeds, one step each.
    #[arg(long, value_delimiter = ',', default_value = "9600,19200,38400,57600,76800,115200")]
    baud: Vec<u32>,
    /// Max_Info_Frames of both stations (requests per token).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..))]
    max_info_frames: u8,
    /// Requests the client keeps queued [default: Max_Info_Frames + 2].
    #[arg(long)]
    in_flight: Option<usize>,
    /// Each step measures at least this many seconds…
    #[arg(long, default_value_t = 2.0)]
    step_secs: f64,
    /// …and at least this many request/reply exchanges' worth of line time.
    #[arg(long, default_value_t = 40)]
    exchanges: u32,
    /// Ring formation and first requests per step, not measured (milliseconds).
    #[arg(long, default_value_t = 1500)]
    warmup_ms: u64,
    /// Keep each step's line capture (pcap, linktype 165) in DIR.
    #[arg(long)]
    capture_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReplyArg {
    Small,
    Large,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TargetArg {
    Trellis,
    Rusty,
    Bacpypes3,
    Echo,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Pin {
    /// Server on the first allowed CPU, load generator on the second, when
    /// there are two and `taskset` is installed.
    Auto,
    /// No pinning.
    Off,
}

#[derive(Debug, Args)]
struct Common {
    /// Client counts, one step each.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,25,50,100")]
    clients: Vec<usize>,
    /// Requests in flight per client (1..=255); the client steps run once per value.
    #[arg(long, value_delimiter = ',', default_value = "1,16", value_parser = clap::value_parser!(u8).range(1..=255))]
    in_flight: Vec<u8>,
    /// Seconds measured per step (after the warm-up).
    #[arg(long, default_value_t = 3.0)]
    step_secs: f64,
    /// Warm-up per step, not measured (milliseconds).
    #[arg(long, default_value_t = 500)]
    warmup_ms: u64,
    /// A request unanswered this long counts as a timeout (milliseconds).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Repeat the whole sequence of steps this many times (for medians).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Load generator threads (one single-threaded runtime each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    client_threads: u64,
    /// CPU pinning of the servers and the load generator.
    #[arg(long, value_enum, default_value = "auto")]
    pin: Pin,
    /// The trellis binary [default: $TRELLIS_BIN, else `trellis` next to this binary].
    #[arg(long)]
    trellis: Option<PathBuf>,
    /// Python of the peers venv [default: .venv-peers/bin/python in the workspace].
    #[arg(long)]
    python: Option<PathBuf>,
    /// Directory of rusty_server.py and bacpypes3_server.py [default: host/tests/peers in the workspace].
    #[arg(long)]
    peers_dir: Option<PathBuf>,
    /// Keep each server's stderr in DIR/NAME-PORT.log [default: a temporary
    /// directory, summarised at the end and removed].
    #[arg(long)]
    server_logs: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.scenario {
        Scenario::ServeEcho { port } => {
            let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).with_context(|| format!("bind port {port}"))?;
            trellis_benches::echo::serve(&socket)?;
            Ok(())
        }
        Scenario::Mstp(args) => run_mstp(&args),
        Scenario::Report { input, out } => {
            let results = report::data::Results::load(&input)?;
            let written = report::write(&results, &out)?;
            eprintln!("stress-test: wrote {} files into {}", written, out.display());
            Ok(())
        }
        Scenario::Echo(common) => run("echo", &[TargetKind::Echo], &common),
        Scenario::Clients { target, common } => {
            let targets = match target {
                TargetArg::Trellis => vec![TargetKind::Trellis],
                TargetArg::Rusty => vec![TargetKind::Rusty],
                TargetArg::Bacpypes3 => vec![TargetKind::Bacpypes3],
                TargetArg::Echo => vec![TargetKind::Echo],
                TargetArg::All => TargetKind::ALL.to_vec(),
            };
            run("clients", &targets, &common)
        }
    }
}

/// The workspace root, as built.
fn workspace() -> PathBuf {
    let benches = Path::new(env!("CARGO_MANIFEST_DIR"));
    benches.parent().unwrap_or(benches).to_path_buf()
}

fn programs(c: &Common, work_dir: PathBuf) -> anyhow::Result<Programs> {
    let me = std::env::current_exe().context("where is stress-test?")?;
    let beside_me = me.with_file_name("trellis");
    let trellis = c
        .trellis
        .clone()
        .or_else(|| std::env::var_os("TRELLIS_BIN").map(PathBuf::from))
        .unwrap_or(if beside_me.exists() { beside_me } else { workspace().join("target/release/trellis") });
    Ok(Programs {
        trellis,
        python: c.python.clone().unwrap_or_else(|| workspace().join(".venv-peers/bin/python")),
        peers_dir: c.peers_dir.clone().unwrap_or_else(|| workspace().join("host/tests/peers")),
        stress_test: me,
        log_dir: c.server_logs.clone().unwrap_or_else(|| work_dir.clone()),
        work_dir,
    })
}

/// Which CPU the servers and the generator get, if pinned.
struct Pinning {
    server: String,
    client: String,
}

fn pinning(pin: Pin) -> Option<Pinning> {
    if pin == Pin::Off {
        return None;
    }
    let cpus = target::allowed_cpus();
    let taskset = std::process::Command::new("taskset")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if cpus.len() < 2 || !taskset {
        eprintln!(
            "stress-test: not pinned ({} CPUs allowed, taskset {})",
            cpus.len(),
            if taskset { "found" } else { "missing" }
        );
        return None;
    }
    Some(Pinning { server: cpus[0].to_string(), client: cpus[1].to_string() })
}

/// Stop the servers on Ctrl-C or SIGTERM, remove `work_dir`, then exit 130.
fn stop_on_signal(work_dir: PathBuf) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    let mut term = {
        let _in = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?
    };
    let ctrl_c = {
        let _in = runtime.enter();
        tokio::spawn(tokio::signal::ctrl_c())
    };
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        });
        eprintln!("stress-test: interrupted; stopping the servers");
        target::reap_all();
        let _ = std::fs::remove_dir_all(&work_dir);
        std::process::exit(130);
    })?;
    Ok(())
}

fn run(scenario: &str, targets: &[TargetKind], c: &Common) -> anyhow::Result<()> {
    if !(c.step_secs > 0.0 && c.step_secs.is_finite()) {
        bail!("--step-secs must be positive");
    }
    if c.clients.is_empty() || c.clients.contains(&0) {
        bail!("--clients: counts of at least 1");
    }
    let work_dir = std::env::temp_dir().join(format!("trellis-stress-{}", std::process::id()));
    stop_on_signal(work_dir.clone())?;
    let pin = pinning(c.pin);
    if let Some(p) = &pin {
        target::pin_self(&p.client)?;
        eprintln!("stress-test: servers pinned to CPU {}, load generator to CPU {}", p.server, p.client);
    }
    std::fs::create_dir_all(&work_dir)?;
    if let Some(dir) = &c.server_logs {
        std::fs::create_dir_all(dir).with_context(|| format!("--server-logs {}", dir.display()))?;
    }
    let result = run_in(scenario, targets, c, &programs(c, work_dir.clone())?, pin.as_ref());
    let _ = std::fs::remove_dir_all(&work_dir);
    result
}

fn run_in(
    scenario: &str,
    targets: &[TargetKind],
    c: &Common,
    programs: &Programs,
    pin: Option<&Pinning>,
) -> anyhow::Result<()> {
    let object = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).expect("analog-input,1 is a valid identifier");
    let request = ReadPropertyTemplate::new(object, PropertyIdentifier::PRESENT_VALUE)?;
    let mut servers = Vec::new();
    for &kind in targets {
        let s = Server::start(kind, programs, pin.map(|p| p.server.as_str()), &request, Duration::from_secs(60))
            .with_context(|| format!("start {}", kind.name()))?;
        eprintln!(
            "stress-test: {} on {} (pid {}): analog-input,1 present-value = {}",
            kind.name(),
            s.addr,
            s.pid,
            s.probe
        );
        servers.push(s);
    }
    let ticks = procfs::clock_ticks_per_sec();
    let mut step = 0usize;
    for round in 1..=c.rounds {
        for &in_flight in &c.in_flight {
            for &clients in &c.clients {
                // A/B: every target gets this step, a different one first each time.
                for k in 0..servers.len() {
                    let server = &servers[(step + k) % servers.len()];
                    let cfg = LoadConfig {
                        target: server.addr.into(),
                        clients,
                        in_flight: in_flight as usize,
                        warmup: Duration::from_millis(c.warmup_ms),
                        measure: Duration::from_secs_f64(c.step_secs),
                        timeout: Duration::from_millis(c.timeout_ms),
                        threads: c.client_threads as usize,
                        echo: server.kind == TargetKind::Echo,
                        request: request.clone(),
                    };
                    let line = measure(scenario, round, server, &cfg, ticks, pin)?;
                    println!("{line}");
                    if let Some(status) = server.exited() {
                        bail!("{} exited during the step: {status}", server.kind.name());
                    }
                }
                step += 1;
            }
        }
    }
    for s in &servers {
        let (lines, last) = s.log_summary();
        let kept =
            if c.server_logs.is_some() { s.log.display().to_string() } else { "--server-logs DIR keeps it".into() };
        eprintln!(
            "stress-test: {} wrote {lines} lines on stderr ({kept}){}",
            s.kind.name(),
            last.map(|l| format!("; the last: {l}")).unwrap_or_default()
        );
    }
    Ok(())
}

/// Run one step against one server; its JSON line.
fn measure(
    scenario: &str,
    round: u32,
    server: &Server,
    cfg: &LoadConfig,
    ticks: u64,
    pin: Option<&Pinning>,
) -> anyhow::Result<String> {
    let me = std::process::id();
    let mut cpu = [(None, None); 2];
    let mut r = load::run(cfg, |m| {
        let i = (m == Mark::WindowEnd) as usize;
        cpu[i] = (procfs::cpu_time(server.pid, ticks), procfs::cpu_time(me, ticks));
    })?;
    let secs = cfg.measure.as_secs_f64();
    let cores = |a: Option<Duration>, b: Option<Duration>| {
        a.zip(b).map(|(a, b)| round_to(b.saturating_sub(a).as_secs_f64() / secs, 100.0))
    };
    let o = r.outcomes;
    let s = r.latencies.summary();
    let us = |f: fn(&Summary) -> Duration| s.as_ref().map(|s| round_to(f(s).as_secs_f64() * 1e6, 10.0));
    let failures = Line::new()
        .put("admission", json!(o.admission))
        .put("timeout", json!(o.timeout))
        .put("other", json!(o.other()))
        .finish();
    let other_detail = Line::new()
        .put("abort", json!(o.abort))
        .put("reject", json!(o.reject))
        .put("error", json!(o.error))
        .put("unexpected", json!(o.unexpected))
        .finish();
    let line = Line::new()
        .put("scenario", json!(scenario))
        .put("target", json!(server.kind.name()))
        .put("clients", json!(cfg.clients))
        .put("in_flight", json!(cfg.in_flight))
        .put("secs", json!(secs))
        .put("requests", json!(o.requests()))
        .put("throughput", json!(round_to(o.ok as f64 / secs, 10.0)))
        .put("p50_us", json!(us(|s| s.p50)))
        .put("p99_us", json!(us(|s| s.p99)))
        .put("max_us", json!(us(|s| s.max)))
        .put("mean_us", json!(us(|s| s.mean)))
        .raw("failures", &failures)
        .raw("other_detail", &other_detail)
        .put("late", json!(o.late))
        .put("io_errors", json!(o.io_errors))
        .put("peak_rss_kib", json!(server.peak_rss_kib()))
        .put("rss_kib", json!(server.rss_kib()))
        .put("rss_of", json!("server"))
        .put("server_cpu", json!(cores(cpu[0].0, cpu[1].0)))
        .put("client_cpu", json!(cores(cpu[0].1, cpu[1].1)))
        .put("pin", pin.map_or(json!(null), |p| json!(format!("server:{} client:{}", p.server, p.client))))
        .put("round", json!(round))
        .finish();
    eprintln!(
        "stress-test: {scenario} {:>9} clients {:>3} × {:>2}: {:>9.0}/s p50 {:>8} µs p99 {:>8} µs, failures a{}/t{}/o{}",
        server.kind.name(),
        cfg.clients,
        cfg.in_flight,
        o.ok as f64 / secs,
        s.map(|s| format!("{:.1}", s.p50.as_secs_f64() * 1e6)).unwrap_or_else(|| "-".into()),
        s.map(|s| format!("{:.1}", s.p99.as_secs_f64() * 1e6)).unwrap_or_else(|| "-".into()),
        o.admission,
        o.timeout,
        o.other()
    );
    Ok(line)
}

fn run_mstp(a: &MstpArgs) -> anyhow::Result<()> {
    if !(a.step_secs > 0.0 && a.step_secs.is_finite()) {
        bail!("--step-secs must be positive");
    }
    if let Some(bad) = a.baud.iter().find(|&&b| !(1_200..=1_000_000).contains(&b)) {
        bail!("--baud {bad}: MS/TP lines run at 9600 to 115200 baud (and the higher standard rates)");
    }
    let work_dir = std::env::temp_dir().join(format!("trellis-stress-{}", std::process::id()));
    stop_on_signal(work_dir.clone())?;
    std::fs::create_dir_all(&work_dir)?;
    if let Some(dir) = &a.capture_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("--capture-dir {}", dir.display()))?;
    }
    let result = (|| {
        for &reply in &a.reply {
            let reply = match reply {
                ReplyArg::Small => mstp::Reply::Small,
                ReplyArg::Large => mstp::Reply::Large,
            };
            for &baud in &a.baud {
                let exchange = Duration::from_secs_f64(reply.exchange_octets() as f64 * 10.0 / f64::from(baud));
                let step = mstp::MstpStep {
                    baud,
                    reply,
                    max_info_frames: a.max_info_frames,
                    in_flight: a.in_flight.unwrap_or(usize::from(a.max_info_frames) + 2),
                    duration: Duration::from_secs_f64(a.step_secs).max(exchange * a.exchanges),
                    warmup: Duration::from_millis(a.warmup_ms),
                    work_dir: work_dir.clone(),
                    capture: a.capture_dir.as_ref().map(|d| d.join(format!("mstp-{}-{baud}.pcap", reply.name()))),
                };
                let line = mstp::run_step(&step)?;
                eprintln!("stress-test: {line}");
                println!("{line}");
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&work_dir);
    result
}

fn round_to(v: f64, per_unit: f64) -> f64 {
    (v * per_unit).round() / per_unit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
