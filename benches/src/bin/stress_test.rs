//! `stress-test`: named load scenarios against Trellis and its peers, one
//! JSON line per step on stdout (progress and the servers' own output on
//! stderr). See `benches/README.md`.

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::Duration;
use trellis_benches::scenario::mixed::Weights;
use trellis_benches::scenario::{self, Env, StepOptions};
use trellis_benches::target::{self, Programs, TargetKind};
use trellis_benches::{mstp, procfs, report};

/// Every heap allocation of the process is counted (for the `cost` scenario).
#[global_allocator]
static ALLOCATOR: trellis_benches::alloc_count::CountingAlloc = trellis_benches::alloc_count::CountingAlloc;

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
    /// Database size: a fresh server of each target with N objects (Trellis:
    /// N Analog Inputs from the bulk-objects plugin; the peers: N extra Analog
    /// Values), its resident memory once idle, then ReadProperty load spread
    /// over every object. One JSON line per count, target and step.
    Objects {
        /// The server(s) under test.
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// Object counts, one server each.
        #[arg(long, value_delimiter = ',', default_value = "100,1000,10000")]
        objects: Vec<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// ReadPropertyMultiple of Object_Name, Present_Value, Status_Flags and
    /// Units of N objects (the larger answers come in segments), through our
    /// client. One JSON line per size, step and target.
    Segmentation {
        /// The server(s) under test (the echo is left out).
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// Objects per request, one step each.
        #[arg(long, value_delimiter = ',', default_value = "50,90,250")]
        objects: Vec<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Weighted ReadProperty, ReadPropertyMultiple of 10, WriteProperty,
    /// SubscribeCOV and Who-Is through our client, against 100 objects and 64
    /// commandable values. One JSON line per step and target, every kind apart.
    Mixed {
        /// The server(s) under test (the echo is left out).
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// KIND:WEIGHT for read, rpm, write, subscribe, who-is.
        #[arg(long, default_value = "read:60,rpm:15,write:10,subscribe:10,who-is:5")]
        weights: String,
        /// Also Trellis journaling every write to disk before it answers
        /// (`[device.persistence]`): flushed to the disk (`trellis-journal`)
        /// and only written (`trellis-journal-process`).
        #[arg(long)]
        journal: bool,
        #[command(flatten)]
        common: Common,
    },
    /// COV at scale: S subscribers each subscribed to the same V commandable
    /// Analog Values (16 × 64 = 1,024 subscriptions), then a writer changing
    /// them at each rate for --step-secs; every notification owed is counted
    /// and timed from its write. One JSON line per rate and target.
    Cov {
        /// The server(s) under test (the echo is left out).
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// Subscribers (one UDP port each).
        #[arg(long, default_value_t = 16)]
        subscribers: usize,
        /// Values each subscriber subscribes to.
        #[arg(long, default_value_t = 64)]
        values: u32,
        /// Writes per second, one step each.
        #[arg(long, value_delimiter = ',', default_value = "20,100")]
        rates: Vec<u32>,
        /// Ask for confirmed notifications.
        #[arg(long)]
        confirmed: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Alarm notification latency: a writer takes an object with intrinsic
    /// reporting across its High_Limit and back, one transition at a time,
    /// alternating targets; each EventNotification is timed from the write's
    /// send to its arrival at the Notification Class's recipient. One JSON
    /// line per target (Trellis and rusty-bacnet; bacpypes3 has no intrinsic
    /// reporting and is left out).
    Alarms {
        /// The server(s) under test.
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// Transitions timed per target.
        #[arg(long, default_value_t = 1000)]
        transitions: u32,
        #[command(flatten)]
        common: Common,
    },
    /// Reflection and amplification: a 17-octet ReadProperty of a large
    /// Object_List followed by blind Segment-ACKs (none; one claiming window
    /// 127; one per sequence number; a flood from 20 ports), counting UDP
    /// octets out ÷ in. One JSON line per target and attack.
    Amplification {
        /// The server(s) under test (the echo is left out).
        #[arg(long, value_enum, default_value = "all")]
        target: TargetArg,
        /// Extra objects each target serves (its Object_List is read).
        #[arg(long, default_value_t = 5000)]
        objects: u32,
        #[command(flatten)]
        common: Common,
    },
    /// ReadProperty from Python against the same Trellis server: the trellis
    /// wheel, rusty-bacnet's and bacpypes3's clients, and our Rust client
    /// beneath the wheel; plus import times and the wheel's size. Needs the
    /// trellis package installed in the peers' venv (report.sh does it).
    Python {
        /// Concurrent asyncio tasks, one step each.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 32])]
        tasks: Vec<usize>,
        /// The wheel whose size is reported.
        #[arg(long)]
        wheel: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Hot swaps of Trellis's plugin under ReadProperty load: per round a
    /// steady step and a step with --swaps swaps (through the admin socket)
    /// spread over its window. Trellis only.
    Swap {
        /// Swaps during each swapping step.
        #[arg(long, default_value_t = 100)]
        swaps: u32,
        #[command(flatten)]
        common: Common,
    },
    /// `kill -9` of the gateway during acknowledged WriteProperty,
    /// CreateObject, AtomicWriteFile, hot swaps and MQTT spool writes, --rounds times each, and
    /// what it serves after a restart: one JSON line per round, a table on
    /// stderr; fails if anything acknowledged was lost. Trellis only.
    Faults {
        /// Which faults (write, create, file, swap, spool).
        #[arg(long, value_delimiter = ',', default_value = "write,create,file,swap,spool")]
        faults: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// The MQTT broker (mosquitto) stopped and started every --period-secs
    /// while our client writes a value every 20 ms for --secs: every
    /// acknowledged value must reach a durable QoS 1 subscriber. One JSON
    /// line per round (--rounds), a table on stderr. Trellis only.
    Flaps {
        /// How long values are written and the broker flaps.
        #[arg(long, default_value_t = 60.0)]
        secs: f64,
        /// Seconds between two broker restarts.
        #[arg(long, default_value_t = 3.0)]
        period_secs: f64,
        #[command(flatten)]
        common: Common,
    },
    /// The gateway's wall clock stepped forward and back (libfaketime; the
    /// monotonic clock untouched) while it serves an occupancy Schedule, a
    /// COV subscription and 50 reads a second: the schedule must follow,
    /// the subscription keep its monotonic lifetime, no read fail. One JSON
    /// line per clock stop, a table on stderr. Trellis only.
    ClockJumps {
        #[command(flatten)]
        common: Common,
    },
    /// BACnet/SC hub failover under load: the primary `trellis sc hub`
    /// killed while our client node reads (--rate per second over --lanes)
    /// from the demo building through it, then started again; reads
    /// failed and the time of each switch. One JSON line per round
    /// (--rounds), a table on stderr. Trellis only.
    ScFailover {
        /// Reads per second, all lanes together.
        #[arg(long, default_value_t = 200)]
        rate: u32,
        /// Reads in flight at most.
        #[arg(long, default_value_t = 4)]
        lanes: usize,
        /// Seconds of reading before the kill, on the failover and after the return.
        #[arg(long, default_value_t = 3.0)]
        phase_secs: f64,
        #[command(flatten)]
        common: Common,
    },
    /// The disk under the gateway's state (persistence, MQTT spool, a File
    /// object's data; a tmpfs of --tmpfs-kib in a mount namespace of its
    /// own, so root or a user namespace) fills up, the broker stops and
    /// returns, then space returns, while our client writes and appends;
    /// then kill -9 and a restart. One JSON line, a table on stderr; fails
    /// if anything acknowledged was lost. Trellis only.
    DiskFull {
        /// Seconds of each of the four phases.
        #[arg(long, default_value_t = 5.0)]
        phase_secs: f64,
        /// Size of the tmpfs the state is on.
        #[arg(long, default_value_t = 8192)]
        tmpfs_kib: u64,
        #[command(flatten)]
        common: Common,
    },
    /// An hour (--secs) of paced mixed traffic (reads, RPM, writes, COV,
    /// Who-Is) on one gateway that publishes to MQTT (mosquitto) and serves
    /// an OPC UA subscription: one JSON line per --sample-secs window (RSS,
    /// p99, failures), a summary, a table on stderr, charts with
    /// --plot-dir. Fails if a request failed, RSS grew more than 1 MiB after
    /// the warm-up, or MQTT or OPC UA disagree with BACnet. Trellis only.
    Soak {
        /// How long the load runs.
        #[arg(long, default_value_t = 3600.0)]
        secs: f64,
        /// One window per this many seconds.
        #[arg(long, default_value_t = 60.0)]
        sample_secs: f64,
        /// Windows ending within this many seconds are the warm-up (not judged).
        #[arg(long, default_value_t = 300.0)]
        warmup_secs: f64,
        /// Requests per second, all clients together.
        #[arg(long, default_value_t = 1000)]
        rate: u32,
        /// Write soak-rss.svg and soak-p99.svg here.
        #[arg(long)]
        plot_dir: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Scaling with devices and cores: Trellis serving 1 device, then N
    /// (the demo building on a port each, spread over the gateway's
    /// threads), with --clients-per-device ReadProperty clients each. One
    /// JSON line per device count and step; Trellis only.
    Devices {
        /// Device counts, one gateway each.
        #[arg(long, value_delimiter = ',', default_value = "1,8")]
        devices: Vec<u32>,
        /// Clients on each device.
        #[arg(long, default_value_t = 8)]
        clients_per_device: usize,
        #[command(flatten)]
        common: Common,
    },
    /// The operator's HTTP surface: ReadProperty load with and without a
    /// console watching the point table (server-sent events), alternating
    /// order each round, then `/metrics` scrape times of a gateway serving
    /// --devices devices. Trellis only.
    Console {
        /// Devices of the gateway scraped.
        #[arg(long, default_value_t = 100)]
        devices: u32,
        /// Scrapes timed.
        #[arg(long, default_value_t = 200)]
        scrapes: usize,
        #[command(flatten)]
        common: Common,
    },
    /// The router: ReadProperty through Trellis's router (a device on a
    /// virtual network behind its port) beside the same device served
    /// directly and the rusty-bacnet wheel's server (added p50, throughput),
    /// then --scale devices behind one port (resident memory per device, a
    /// Who-Is to all of them). One JSON line per step; Trellis and rusty.
    Router {
        /// Devices behind one port in the scale step.
        #[arg(long, default_value_t = 100)]
        scale: u32,
        #[command(flatten)]
        common: Common,
    },
    /// BACnet/SC side by side with rusty-bacnet: ReadProperty through each
    /// side's hub to its SC device (a hub process and a device process each;
    /// the same client nodes of this process, TLS 1.3), our B/IP beside it;
    /// then a fresh hub of each with --nodes idle nodes: handshakes per
    /// second, resident memory per connection, broadcast fan-out.
    Sc {
        /// Idle nodes connected in the hub step.
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        #[command(flatten)]
        common: Common,
    },
    /// MQTT publishing through the gateway's path (spool + link) beside raw
    /// rumqttc, to the same mosquitto: QoS 0 and 1 messages per second
    /// (best and median rounds), allocations per message, cold start, and
    /// the replay rate after an outage.
    Mqtt {
        /// Messages per trial.
        #[arg(long, default_value_t = 20_000)]
        messages: u64,
        /// Rounds (sides rotate each round).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Payload size in bytes (JSON).
        #[arg(long, default_value_t = 512)]
        payload: usize,
        /// Where the broker and the spool keep their files.
        #[arg(long)]
        work_dir: Option<std::path::PathBuf>,
        /// The `trellis` binary of the latency step (default: beside this one).
        #[arg(long)]
        trellis: Option<std::path::PathBuf>,
        /// BACnet writes per second in the latency step.
        #[arg(long, default_value_t = 1000)]
        rate: u32,
        /// Seconds of writing in the latency step.
        #[arg(long, default_value_t = 5)]
        latency_secs: u64,
        /// Also count instructions per QoS 1 message (two runs of this
        /// binary under valgrind's callgrind).
        #[arg(long)]
        callgrind: bool,
    },
    /// OPC UA Reads (100 variables, one value per Read, client processes ×
    /// Reads in flight) against Trellis's server and the other stacks, with
    /// the same native client; then COV → DataChange latency and memory per
    /// session and monitored item on Trellis.
    Opcua {
        /// Seconds of reading per step.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Client process counts, comma-separated.
        #[arg(long, default_value = "1,3,10", value_delimiter = ',')]
        clients: Vec<usize>,
        /// Reads in flight per client process.
        #[arg(long, default_value_t = 32)]
        outstanding: usize,
        /// Servers, comma-separated: trellis, async-opcua-points, open62541-points, open62541, async-opcua, o6, asyncua
        /// (the open62541 ones need a build with `--features open62541`).
        #[arg(
            long,
            default_value = "trellis,async-opcua-points,open62541-points,open62541,async-opcua,o6,asyncua",
            value_delimiter = ','
        )]
        servers: Vec<String>,
        /// The `trellis` binary (default: beside this one).
        #[arg(long)]
        trellis: Option<std::path::PathBuf>,
        /// The Python with o6 and asyncua (default: the repository's .venv-peers).
        #[arg(long)]
        python: Option<std::path::PathBuf>,
        /// BACnet writes per second in the latency step (0: skip it).
        #[arg(long, default_value_t = 1000)]
        rate: u32,
        /// Seconds of writing in the latency step.
        #[arg(long, default_value_t = 5)]
        latency_secs: u64,
        /// Where the servers keep their files.
        #[arg(long)]
        work_dir: Option<std::path::PathBuf>,
    },
    /// One OPC UA server of `opcua` (run by it).
    #[command(hide = true)]
    OpcuaServe {
        /// async-opcua, async-opcua-points, open62541, open62541-points.
        #[arg(long)]
        stack: String,
        /// The port on 127.0.0.1.
        #[arg(long)]
        port: u16,
        /// Where it keeps its files.
        #[arg(long)]
        work_dir: std::path::PathBuf,
    },
    /// One client process of `opcua` (run by it): prints reads, errors, seconds.
    #[command(hide = true)]
    OpcuaRead {
        /// The server's endpoint URL.
        #[arg(long)]
        url: String,
        /// NodeIds, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Seconds of reading.
        #[arg(long)]
        seconds: f64,
        /// Reads in flight.
        #[arg(long)]
        outstanding: usize,
    },
    /// The trellis side of `mqtt` alone, for callgrind (run by `mqtt --callgrind`).
    #[command(hide = true)]
    MqttPublish {
        /// The broker's port on 127.0.0.1.
        #[arg(long)]
        port: u16,
        /// QoS 1 messages to publish.
        #[arg(long)]
        messages: u64,
        /// Payload size in bytes.
        #[arg(long, default_value_t = 512)]
        payload: usize,
        /// Where the spool lives.
        #[arg(long)]
        work_dir: std::path::PathBuf,
    },
    /// What one served ReadProperty costs in the steady state: heap
    /// allocations and bytes (counted by this binary's allocator), with the
    /// cold start apart; the gateway (demo-building plugin) runs in this
    /// process. Run it under `valgrind --tool=callgrind` with two request
    /// counts for instructions per request (benches/report.sh does).
    Cost {
        /// Requests counted.
        #[arg(long, default_value_t = 20_000)]
        requests: u64,
        /// Requests before counting starts.
        #[arg(long, default_value_t = 2_000)]
        warmup: u64,
        /// The compiled-component cache [default: a directory under the system's temporary directory].
        #[arg(long)]
        cache_dir: Option<PathBuf>,
        /// Also count instructions per request: two more runs of this
        /// binary under `valgrind --tool=callgrind`.
        #[arg(long)]
        callgrind: bool,
        /// Instantiate plugins on demand rather than from the pooling
        /// allocator (whose address-space reservation valgrind cannot map;
        /// the callgrind runs use this).
        #[arg(long)]
        no_pooling: bool,
    },
    /// Memory of one more idle object-model instance of the demo plugin
    /// (the plugin runtime in this process, as `trellis run` loads one per
    /// device), with the pooling allocator and without: resident and
    /// proportional set per extra instance. One JSON line each, a table on
    /// stderr. Reports; does not judge.
    IdleMemory {
        /// Instances loaded after the first.
        #[arg(long, default_value_t = 32)]
        instances: usize,
        /// The compiled-component cache [default: a directory under the system's temporary directory].
        #[arg(long)]
        cache_dir: Option<PathBuf>,
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
    /// Read over B/IP through Trellis's router, whose MS/TP port is the
    /// requesting station on the line (JSON scenario `mstp-routed`).
    #[arg(long)]
    routed: bool,
    /// Bit error rates of the line, one step each (0: a clean line; e.g.
    /// 0,1e-4,1e-3). A noisy line's client times out after 1 s and retries
    /// 3 times; the JSON line counts retransmissions and lost requests.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    bit_error_rate: Vec<f64>,
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

impl TargetArg {
    fn kinds(self) -> Vec<TargetKind> {
        match self {
            TargetArg::Trellis => vec![TargetKind::Trellis],
            TargetArg::Rusty => vec![TargetKind::Rusty],
            TargetArg::Bacpypes3 => vec![TargetKind::Bacpypes3],
            TargetArg::Echo => vec![TargetKind::Echo],
            TargetArg::All => TargetKind::ALL.to_vec(),
        }
    }
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
    /// Client counts, one step each [default: clients and echo
    /// 1,5,10,25,50,100; objects, segmentation, mixed 1,10; swap 10; cov 1;
    /// soak: the first count, 4].
    #[arg(long, value_delimiter = ',')]
    clients: Vec<usize>,
    /// Requests in flight per client (1..=255); the client steps run once per
    /// value [default: clients and echo 1,16; the others 1].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=255))]
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
        Scenario::Echo(common) => {
            let o = steps(&common, &CLIENT_STEPS, &[1, 16])?;
            with_env(&common, |env| scenario::clients::run("echo", env, &[TargetKind::Echo], &o))
        }
        Scenario::Clients { target, common } => {
            let o = steps(&common, &CLIENT_STEPS, &[1, 16])?;
            with_env(&common, |env| scenario::clients::run("clients", env, &target.kinds(), &o))
        }
        Scenario::Objects { target, objects, common } => {
            let o = steps(&common, &[1, 10], &[1])?;
            with_env(&common, |env| scenario::objects::run(env, &target.kinds(), &objects, &o))
        }
        Scenario::Segmentation { target, objects, common } => {
            let o = steps(&common, &[1, 10], &[1])?;
            with_env(&common, |env| scenario::segmentation::run(env, &target.kinds(), &objects, &o))
        }
        Scenario::Mixed { target, weights, journal, common } => {
            let o = steps(&common, &[1, 10], &[1])?;
            let w = parse_weights(&weights)?;
            with_env(&common, |env| scenario::mixed::run(env, &target.kinds(), w, &o, journal))
        }
        Scenario::Cov { target, subscribers, values, rates, confirmed, common } => {
            let o = steps(&common, &[1], &[1])?;
            let cov = scenario::cov::CovOptions {
                subscribers,
                values,
                rates,
                confirmed,
                measure: o.measure,
                timeout: o.timeout,
                rounds: o.rounds,
            };
            with_env(&common, |env| scenario::cov::run(env, &target.kinds(), &cov))
        }
        Scenario::Alarms { target, transitions, common } => {
            with_env(&common, |env| scenario::alarms::run(env, &target.kinds(), transitions))
        }
        Scenario::Devices { devices, clients_per_device, common } => {
            let o = steps(&common, &[1], &[1])?;
            with_env(&common, |env| scenario::devices::run(env, &devices, clients_per_device, &o))
        }
        Scenario::Console { devices, scrapes, common } => {
            let o = steps(&common, &[10], &[1])?;
            with_env(&common, |env| scenario::console::run(env, devices, scrapes, &o))
        }
        Scenario::Router { scale, common } => {
            let o = steps(&common, &[1, 10], &[1])?;
            with_env(&common, |env| scenario::router::run(env, scale, &o))
        }
        Scenario::Sc { nodes, common } => {
            let o = steps(&common, &[1, 10], &[1, 16])?;
            with_env(&common, |env| scenario::sc::run(env, nodes, &o))
        }
        Scenario::Opcua { seconds, clients, outstanding, servers, trellis, python, rate, latency_secs, work_dir } => {
            let work = work_dir
                .unwrap_or_else(|| std::env::temp_dir().join(format!("trellis-opcua-bench-{}", std::process::id())));
            let exe = std::env::current_exe()?;
            let trellis = trellis.unwrap_or_else(|| exe.with_file_name("trellis"));
            let python = python
                .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-peers/bin/python"));
            let o = scenario::opcua::OpcUaOptions {
                seconds,
                clients,
                outstanding,
                servers,
                trellis,
                python,
                rate,
                latency_secs,
            };
            let r = scenario::opcua::run(&o, &work);
            let _ = std::fs::remove_dir_all(&work);
            r
        }
        Scenario::OpcuaServe { stack, port, work_dir } => scenario::opcua::serve::serve(&stack, port, &work_dir),
        Scenario::OpcuaRead { url, nodes, seconds, outstanding } => {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
            let r = runtime.block_on(scenario::opcua::load::run(&url, &nodes, seconds, outstanding))?;
            println!("{}", serde_json::json!({"reads": r.reads, "errors": r.errors, "seconds": r.seconds}));
            Ok(())
        }
        Scenario::MqttPublish { port, messages, payload, work_dir } => {
            scenario::mqtt::publish_only(port, messages, payload, &work_dir)
        }
        Scenario::Mqtt { messages, rounds, payload, work_dir, trellis, rate, latency_secs, callgrind } => {
            let work = work_dir
                .unwrap_or_else(|| std::env::temp_dir().join(format!("trellis-mqtt-bench-{}", std::process::id())));
            let trellis = match trellis {
                Some(t) => t,
                None => std::env::current_exe()?.with_file_name("trellis"),
            };
            let o = scenario::mqtt::MqttOptions { messages, rounds, payload, trellis, rate, latency_secs };
            let r = scenario::mqtt::run(&o, &work)
                .and_then(|()| if callgrind { scenario::mqtt::callgrind(payload, &work) } else { Ok(()) });
            let _ = std::fs::remove_dir_all(&work);
            r
        }
        Scenario::IdleMemory { instances, cache_dir } => {
            let cache = cache_dir.unwrap_or_else(|| std::env::temp_dir().join("trellis-stress-cache"));
            scenario::idle_memory::run(instances, &cache)
        }
        Scenario::Cost { requests, warmup, cache_dir, callgrind, no_pooling } => {
            let cache = cache_dir.unwrap_or_else(|| std::env::temp_dir().join("trellis-stress-cache"));
            scenario::cost::run(requests, warmup, &cache, callgrind, !no_pooling)
        }
        Scenario::Amplification { target, objects, common } => {
            with_env(&common, |env| scenario::amplification::run(env, &target.kinds(), objects))
        }
        Scenario::Python { tasks, wheel, common } => {
            let o = scenario::python::PythonOptions {
                tasks,
                seconds: common.step_secs,
                warmup: common.warmup_ms as f64 / 1e3,
                rounds: common.rounds,
                wheel,
            };
            with_env(&common, |env| scenario::python::run(env, &o))
        }
        Scenario::Faults { faults, common } => {
            let faults =
                faults.iter().map(|f| scenario::faults::Fault::parse(f)).collect::<anyhow::Result<Vec<_>>>()?;
            with_env(&common, |env| scenario::faults::run(env, &faults, common.rounds))
        }
        Scenario::Flaps { secs, period_secs, common } => {
            let seconds = |s: f64, what: &str| {
                Duration::try_from_secs_f64(s)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .with_context(|| format!("{what}: positive seconds"))
            };
            let o = scenario::flaps::FlapOptions {
                rounds: common.rounds,
                duration: seconds(secs, "--secs")?,
                period: seconds(period_secs, "--period-secs")?,
            };
            with_env(&common, |env| scenario::flaps::run(env, &o))
        }
        Scenario::DiskFull { phase_secs, tmpfs_kib, common } => {
            let o = scenario::disk_full::DiskFullOptions {
                phase: Duration::try_from_secs_f64(phase_secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .context("--phase-secs: positive seconds")?,
                tmpfs_kib,
            };
            with_env(&common, |env| scenario::disk_full::run(env, &o))
        }
        Scenario::Soak { secs, sample_secs, warmup_secs, rate, plot_dir, common } => {
            let seconds = |s: f64, what: &str| {
                Duration::try_from_secs_f64(s).ok().with_context(|| format!("{what}: seconds of at least 0"))
            };
            let o = scenario::soak::SoakOptions {
                duration: seconds(secs, "--secs")?,
                sample: seconds(sample_secs, "--sample-secs")?,
                warmup: seconds(warmup_secs, "--warmup-secs")?,
                rate,
                clients: common.clients.first().copied().unwrap_or(4),
                timeout: Duration::from_millis(common.timeout_ms),
                plot_dir,
            };
            with_env(&common, |env| scenario::soak::run(env, &o))
        }
        Scenario::ClockJumps { common } => with_env(&common, scenario::clock_jumps::run),
        Scenario::ScFailover { rate, lanes, phase_secs, common } => {
            let o = scenario::sc_failover::FailoverOptions {
                rounds: common.rounds,
                rate,
                lanes,
                phase: Duration::try_from_secs_f64(phase_secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .context("--phase-secs: positive seconds")?,
            };
            with_env(&common, |env| scenario::sc_failover::run(env, &o))
        }
        Scenario::Swap { swaps, common } => {
            let o = steps(&common, &[10], &[1])?;
            with_env(&common, |env| scenario::swap::run(env, swaps, &o))
        }
    }
}

/// The `clients` scenario's client counts.
const CLIENT_STEPS: [usize; 6] = [1, 5, 10, 25, 50, 100];

/// `read:60,rpm:15,…` → weights (kinds left out weigh 0).
fn parse_weights(text: &str) -> anyhow::Result<Weights> {
    let mut w = Weights { read: 0, rpm: 0, write: 0, subscribe: 0, who_is: 0 };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, n) = part.split_once(':').with_context(|| format!("--weights: `{part}` is not KIND:N"))?;
        let n: u32 = n.trim().parse().with_context(|| format!("--weights: `{part}`: N is a whole number"))?;
        match name.trim() {
            "read" => w.read = n,
            "rpm" => w.rpm = n,
            "write" => w.write = n,
            "subscribe" => w.subscribe = n,
            "who-is" => w.who_is = n,
            other => bail!("--weights: unknown kind `{other}` (read, rpm, write, subscribe, who-is)"),
        }
    }
    Ok(w)
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

/// The environment of a scenario: pinning, the programs, a private work
/// directory (removed at the end, or on Ctrl-C with the servers killed).
fn with_env(c: &Common, body: impl FnOnce(&Env) -> anyhow::Result<()>) -> anyhow::Result<()> {
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
    let env = Env {
        programs: programs(c, work_dir.clone())?,
        server_cpu: pin.as_ref().map(|p| p.server.clone()),
        client_cpu: pin.as_ref().map(|p| p.client.clone()),
        ticks: procfs::clock_ticks_per_sec(),
    };
    let result = body(&env);
    let _ = std::fs::remove_dir_all(&work_dir);
    result
}

/// The step options, with this scenario's defaults where none were given.
fn steps(c: &Common, clients: &[usize], in_flight: &[u8]) -> anyhow::Result<StepOptions> {
    if !(c.step_secs > 0.0 && c.step_secs.is_finite()) {
        bail!("--step-secs must be positive");
    }
    if c.clients.contains(&0) {
        bail!("--clients: counts of at least 1");
    }
    Ok(StepOptions {
        clients: if c.clients.is_empty() { clients.to_vec() } else { c.clients.clone() },
        in_flight: if c.in_flight.is_empty() { in_flight.to_vec() } else { c.in_flight.clone() },
        measure: Duration::from_secs_f64(c.step_secs),
        warmup: Duration::from_millis(c.warmup_ms),
        timeout: Duration::from_millis(c.timeout_ms),
        rounds: c.rounds,
        client_threads: c.client_threads as usize,
    })
}

fn run_mstp(a: &MstpArgs) -> anyhow::Result<()> {
    if !(a.step_secs > 0.0 && a.step_secs.is_finite()) {
        bail!("--step-secs must be positive");
    }
    if let Some(bad) = a.bit_error_rate.iter().find(|e| !(0.0..0.1).contains(*e)) {
        bail!("--bit-error-rate {bad}: from 0 to below 0.1");
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
            for (&baud, &bit_error_rate) in a.baud.iter().flat_map(|b| a.bit_error_rate.iter().map(move |e| (b, e))) {
                let exchange = Duration::from_secs_f64(reply.exchange_octets() as f64 * 10.0 / f64::from(baud));
                let step = mstp::MstpStep {
                    bit_error_rate,
                    baud,
                    reply,
                    max_info_frames: a.max_info_frames,
                    in_flight: a.in_flight.unwrap_or(usize::from(a.max_info_frames) + 2),
                    duration: Duration::from_secs_f64(a.step_secs).max(exchange * a.exchanges),
                    warmup: Duration::from_millis(a.warmup_ms),
                    work_dir: work_dir.clone(),
                    capture: a.capture_dir.as_ref().map(|d| {
                        let routed = if a.routed { "-routed" } else { "" };
                        d.join(format!("mstp{routed}-{}-{baud}-ber{bit_error_rate:e}.pcap", reply.name()))
                    }),
                    routed: a.routed,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn weights_parse_by_name_and_missing_kinds_weigh_nothing() {
        let w = parse_weights("read:3, who-is:1").unwrap();
        assert_eq!((w.read, w.who_is, w.rpm, w.write, w.subscribe), (3, 1, 0, 0, 0));
        assert!(parse_weights("reads:3").is_err());
        assert!(parse_weights("read").is_err());
        assert!(parse_weights("read:x").is_err());
    }
}
