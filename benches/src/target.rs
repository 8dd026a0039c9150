//! The servers under test, each a child process on its own loopback port.
//!
//! Every target runs as a separate process, Trellis included: the Python
//! peers can only run that way, so Trellis is measured the same way (the
//! shipped `trellis run` binary, its embedded default configuration, the
//! demo-building object model inside its WASM plugin), with its own CPU time
//! and peak resident memory read from `/proc/PID`, and no load generator
//! threads competing inside its runtime.
//!
//! Children are registered process-wide so that a signal handler can kill
//! them ([`reap_all`]); a [`Server`] kills its child by PID when dropped
//! (also when a panic unwinds).

use crate::procfs;
use crate::request::{Answer, ReadPropertyTemplate, classify, decode_ack};
use bacnet::{ObjectIdentifier, ObjectType};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// `trellis run`: the demo-building plugin (object model in WASM).
    Trellis,
    /// The rusty-bacnet 0.14 wheel's `BACnetServer` (`host/tests/peers/rusty_server.py`).
    Rusty,
    /// bacpypes3 0.0.110 (`host/tests/peers/bacpypes3_server.py`).
    Bacpypes3,
    /// The bare UDP echo ([`crate::echo`]), as `stress-test serve-echo`.
    Echo,
}

impl TargetKind {
    /// Every target, in the order `--target all` starts from.
    pub const ALL: [TargetKind; 4] = [TargetKind::Trellis, TargetKind::Rusty, TargetKind::Bacpypes3, TargetKind::Echo];

    /// The name used on the command line and in the JSON lines.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Trellis => "trellis",
            TargetKind::Rusty => "rusty",
            TargetKind::Bacpypes3 => "bacpypes3",
            TargetKind::Echo => "echo",
        }
    }
}

/// What a server serves, beyond each one's fixed default objects (which all
/// include `analog-input,1`, the readiness probe's object).
///
/// The default is each server as shipped: Trellis's embedded configuration
/// (the demo-building plugin). Anything else gives Trellis a generated
/// configuration file with the bulk-objects plugin, and the peers their
/// `--objects` / `--segmentation` options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Setup {
    /// Objects to read: `objects` analog objects, named by [`Setup::object`].
    pub objects: u32,
    /// Commandable analog values to write and subscribe to, named by
    /// [`Setup::value`] (on the peers these are the same objects as
    /// `objects`: whichever count is larger is created).
    pub values: u32,
    /// Answers that need segmentation are expected: rusty-bacnet is started
    /// with `--segmentation` (its default is no-segmentation), Trellis with
    /// the ReadPropertyMultiple bounds raised to 10,000 results / 1 MiB.
    pub segmentation: bool,
    /// Trellis loads unsigned plugin files, so that `trellis plugin swap`
    /// can swap in the demo-building component written to a file (the
    /// `swap` scenario). No effect on the peers.
    pub swappable: bool,
    /// Trellis bounds no requester's segmented answers
    /// (`answer_octets_per_second = 0`): every simulated client of a
    /// scenario shares 127.0.0.1, so the default per-address budget (meant
    /// for one requester) would refuse their sum. No effect on the peers,
    /// which have no such bound.
    pub unbudgeted: bool,
    /// Trellis serves this many devices (0 and 1: one), each the demo
    /// building on a port of its own, spread over its threads (the
    /// `devices` scenario). No effect on the peers.
    pub devices: u32,
    /// Trellis serves this many devices (the demo building) on virtual
    /// network [`ROUTED_NETWORK`] behind its router port, and is probed
    /// through the router (the `router` scenario). No effect on the peers.
    pub routed: u32,
    /// With [`Setup::routed`]: the router asks the built-in `firewall`
    /// routing policy, with `examples/router-policy.toml`'s rules, about
    /// every NPDU it routes.
    pub firewall: bool,
    /// Trellis serves Notification Class 1 with this UDP port of 127.0.0.1
    /// as its one recipient (the demo building's zone temperature reports
    /// to it); rusty-bacnet (`--alarm-recipient`) the same for its
    /// analog-value,1 with limits 16 and 28 (the `alarms` scenario).
    pub alarm_recipient: Option<u16>,
    /// Trellis keeps what clients write on disk (`[device.persistence]`
    /// with this `durability`: `"power-loss"` flushes to the disk before
    /// the acknowledgment, `"process"` only writes). No effect on the peers.
    pub journal: Option<&'static str>,
}

/// The firewall rules of `examples/router-policy.toml`, for
/// [`Setup::firewall`] (deny by default): a routed ReadProperty is forwarded
/// by the fourth rule, its answer by the second.
pub const FIREWALL_POLICY: &str = r#"
[[router.policy]]
plugin = "builtin:firewall"

[router.policy.settings]
default = "reject"
default_reject_reason = "security-error"
[[router.policy.settings.rule]]
name = "no-device-control"
action = "drop"
services = ["device-communication-control", "reinitialize-device"]
[[router.policy.settings.rule]]
name = "answers"
action = "forward"
kinds = ["simple-ack", "complex-ack", "segment-ack", "error", "reject", "abort"]
[[router.policy.settings.rule]]
name = "bms-setpoints"
action = "forward"
arrival_networks = [1]
departure_networks = [1001]
sources = ["1:7f000001bac1"]
services = ["write-property"]
objects = ["analog-value,1"]
[[router.policy.settings.rule]]
name = "reads-cov-discovery"
action = "forward"
services = ["read-property", "read-property-multiple", "read-range", "subscribe-cov", "subscribe-cov-property",
            "confirmed-cov-notification", "unconfirmed-cov-notification", "who-is", "i-am", "who-has", "i-have"]
[[router.policy.settings.rule]]
name = "network-layer"
action = "forward"
kinds = ["network-message"]
"#;

/// The virtual network of [`Setup::routed`] devices; device `i` (0-based)
/// is instance `ROUTED_FIRST + i`, its MAC that instance in three octets.
pub const ROUTED_NETWORK: u16 = 1001;
/// See [`ROUTED_NETWORK`].
pub const ROUTED_FIRST: u32 = 1001;

impl Setup {
    /// The `i`-th readable object (0-based) on `kind`: Trellis's bulk
    /// `analog-input,i+1`, the peers' `analog-value,i+2` (their extra objects
    /// start after `analog-value,1`).
    pub fn object(kind: TargetKind, i: u32) -> ObjectIdentifier {
        match kind {
            TargetKind::Trellis => ObjectIdentifier::new(ObjectType::ANALOG_INPUT, i + 1),
            _ => ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i + 2),
        }
        .expect("instances below 4,194,302")
    }

    /// The `i`-th commandable analog value (0-based) on `kind`: Trellis's
    /// bulk `analog-value,i+1`, the peers' `analog-value,i+2`.
    pub fn value(kind: TargetKind, i: u32) -> ObjectIdentifier {
        let instance = if kind == TargetKind::Trellis { i + 1 } else { i + 2 };
        ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).expect("instances below 4,194,302")
    }

    fn is_default(&self) -> bool {
        *self == Setup::default()
    }
}

/// The `trellis run` configuration for a [`Setup`] other than the default;
/// `ports` has one port per device (the first is the one probed).
fn trellis_config(setup: &Setup, ports: &[u16], data_dir: &std::path::Path) -> String {
    if setup.routed > 0 {
        let mut c = format!(
            "# Generated by stress-test: demo buildings behind the router.\n\n\
             [[router.port]]\nport = {}\nnetwork = 1\n",
            ports[0]
        );
        for i in 0..setup.routed {
            c.push_str(&format!(
                "\n[[device]]\nvirtual_network = {ROUTED_NETWORK}\ninstance = {}\nplugin = \"builtin:demo-building\"\n",
                ROUTED_FIRST + i
            ));
        }
        if setup.firewall {
            c.push_str(FIREWALL_POLICY);
        }
        return c;
    }
    if ports.len() > 1 {
        let mut c = String::from("# Generated by stress-test: one demo building per port.\n");
        for (i, port) in ports.iter().enumerate() {
            c.push_str(&format!(
                "\n[[device]]\nport = {port}\ninstance = {}\nplugin = \"builtin:demo-building\"\n",
                389_001 + i
            ));
        }
        return c;
    }
    let port = ports[0];
    // The bulk-objects plugin reads its counts from DATA_DIR/bulk.toml; the
    // demo building keeps its embedded object list.
    let plugin = if setup.objects > 0 || setup.values > 0 {
        format!("plugin = \"builtin:bulk-objects\"\ndata_dir = \"{}\"", data_dir.display())
    } else {
        "plugin = \"builtin:demo-building\"".into()
    };
    let mut limits = String::new();
    if setup.segmentation {
        limits.push_str("max_rpm_results = 10000\nmax_rpm_octets = 1048576\n");
    }
    if setup.unbudgeted {
        limits.push_str("answer_octets_per_second = 0\n");
    }
    // The Device object counts too: 10,000 bulk objects are 10,001 served.
    let served = setup.objects + setup.values + 1;
    if served > 10_000 {
        limits.push_str(&format!("max_objects = {served}\n"));
    }
    let policy = if setup.swappable { "[policy]\nallow_unsigned = true\n" } else { "" };
    let classes = match setup.alarm_recipient {
        Some(p) => format!(
            "\n[[device.notification_class]]\ninstance = 1\nname = \"alarms\"\n\
             [[device.notification_class.recipient]]\naddress = \"127.0.0.1:{p}\"\nprocess = 1\n"
        ),
        None => String::new(),
    };
    let journal = match setup.journal {
        Some(durability) => format!(
            "\n[device.persistence]\ndir = \"{}\"\ndurability = \"{durability}\"\n",
            data_dir.join("state").display()
        ),
        None => String::new(),
    };
    format!(
        "# Generated by stress-test.\n{policy}\n[[device]]\nport = {port}\n{plugin}\n\n[device.limits]\n{limits}{classes}{journal}"
    )
}

/// Where the programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The `trellis` binary.
    pub trellis: PathBuf,
    /// The peers venv's python (`.venv-peers/bin/python`).
    pub python: PathBuf,
    /// `host/tests/peers/`, with `rusty_server.py` and `bacpypes3_server.py`.
    pub peers_dir: PathBuf,
    /// The `stress-test` binary itself (for `serve-echo`).
    pub stress_test: PathBuf,
    /// A private directory for Trellis's admin socket.
    pub work_dir: PathBuf,
    /// Where each server's stderr goes (`NAME-PORT.log`): kept off the
    /// terminal, so a server that logs per request pays for writing a file,
    /// not for a terminal.
    pub log_dir: PathBuf,
}

/// A running server; its process is killed when this is dropped.
#[derive(Debug)]
pub struct Server {
    /// Which one.
    pub kind: TargetKind,
    /// Its name in the JSON lines: the kind's, or a variant's
    /// (`trellis-journal`, `trellis-journal-process`: Trellis with [`Setup::journal`]).
    pub label: &'static str,
    /// Where it answers (its first device, for Trellis with several).
    pub addr: SocketAddrV4,
    /// Every device's address, `addr` first.
    pub addrs: Vec<SocketAddrV4>,
    /// Its process ID.
    pub pid: u32,
    /// What it answered to the readiness probe (the value of the object read).
    pub probe: String,
    /// Its stderr.
    pub log: PathBuf,
    /// Trellis's admin socket (`trellis plugin swap --socket`).
    pub admin_socket: Option<PathBuf>,
    /// From the start of the process to its first answer.
    pub ready: Duration,
}

static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

fn children() -> std::sync::MutexGuard<'static, Vec<Child>> {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

fn reap(pid: u32) {
    let child = {
        let mut c = children();
        c.iter().position(|c| c.id() == pid).map(|i| c.swap_remove(i))
    };
    if let Some(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Kill every server this process started (for signal handlers).
pub fn reap_all() {
    let all = std::mem::take(&mut *children());
    for mut child in all {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A UDP port free on 127.0.0.1 and on the loopback broadcast address
/// (Trellis and bacpypes3 bind both).
pub fn free_port() -> io::Result<u16> {
    for _ in 0..100 {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = s.local_addr()?.port();
        if UdpSocket::bind((Ipv4Addr::new(127, 255, 255, 255), port)).is_ok() {
            return Ok(port);
        }
    }
    Err(io::Error::new(io::ErrorKind::AddrInUse, "no free loopback UDP port"))
}

impl Server {
    /// Start a server on a free port, pinned to `cpu` (a `taskset -c` list)
    /// when given, and wait until it answers `request` (at most `ready_within`).
    pub fn start(
        kind: TargetKind,
        programs: &Programs,
        setup: &Setup,
        cpu: Option<&str>,
        request: &ReadPropertyTemplate,
        ready_within: Duration,
    ) -> io::Result<Server> {
        let port = free_port()?;
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
        let mut ports = vec![port];
        while ports.len() < setup.devices.max(1) as usize && kind == TargetKind::Trellis {
            let p = free_port()?;
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        let addrs: Vec<SocketAddrV4> = ports.iter().map(|&p| SocketAddrV4::new(Ipv4Addr::LOCALHOST, p)).collect();
        let mut admin_socket = None;
        let (program, args): (&PathBuf, Vec<String>) = match kind {
            TargetKind::Trellis => {
                // In a directory of its own, which trellis creates private (mode
                // 0700): it refuses a socket directory others may enter.
                let admin = programs.work_dir.join(format!("trellis-{port}-admin")).join("admin.sock");
                let mut args: Vec<String> =
                    ["run", "--admin-socket", &admin.display().to_string()].map(String::from).to_vec();
                if setup.is_default() {
                    args.extend(["--port".into(), port.to_string()]);
                } else {
                    let data_dir = programs.work_dir.join(format!("trellis-{port}"));
                    std::fs::create_dir_all(&data_dir)?;
                    // At least analog-input,1: the readiness probe reads it.
                    let count = setup.objects.max(1);
                    let bulk = format!("count = {count}\nvalues = {}\nchanges_per_tick = 0\n", setup.values);
                    std::fs::write(data_dir.join("bulk.toml"), bulk)?;
                    let config = programs.work_dir.join(format!("trellis-{port}.toml"));
                    std::fs::write(&config, trellis_config(setup, &ports, &data_dir))?;
                    args.extend(["--config".into(), config.display().to_string()]);
                }
                admin_socket = Some(admin);
                (&programs.trellis, args)
            }
            TargetKind::Rusty | TargetKind::Bacpypes3 => {
                let script = if kind == TargetKind::Rusty { "rusty_server.py" } else { "bacpypes3_server.py" };
                let script = programs.peers_dir.join(script).display().to_string();
                let mut args = vec![script, "--port".into(), port.to_string()];
                let extra = setup.objects.max(setup.values);
                if extra > 0 {
                    args.extend(["--objects".into(), extra.to_string()]);
                }
                if setup.segmentation && kind == TargetKind::Rusty {
                    args.push("--segmentation".into());
                }
                if let (Some(p), TargetKind::Rusty) = (setup.alarm_recipient, kind) {
                    args.extend(["--alarm-recipient".into(), p.to_string()]);
                }
                // rusty-bacnet's extra values always are.
                if setup.values > 0 && kind == TargetKind::Bacpypes3 {
                    args.push("--commandable".into());
                }
                (&programs.python, args)
            }
            TargetKind::Echo => (&programs.stress_test, vec!["serve-echo".into(), "--port".into(), port.to_string()]),
        };
        if !program.exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: {} is missing", kind.name(), program.display()),
            ));
        }
        let mut command = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpu]).arg(program);
                c
            }
            None => Command::new(program),
        };
        // Children write nothing on stdout that we need (the peers' READY is
        // replaced by the probe below), and our stdout is for JSON lines only.
        let log = programs.log_dir.join(format!("{}-{port}.log", kind.name()));
        let stderr = std::fs::File::create(&log)?;
        command.args(&args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        let started = Instant::now();
        let child = command.spawn().map_err(|e| io::Error::new(e.kind(), format!("start {}: {e}", kind.name())))?;
        let pid = child.id();
        children().push(child);
        let mut server = Server {
            kind,
            label: kind.name(),
            addr,
            addrs,
            pid,
            probe: String::new(),
            log,
            admin_socket,
            ready: Duration::ZERO,
        };
        // On failure, `server` is dropped here and kills the child.
        server.probe = server.wait_ready(request, ready_within)?;
        server.ready = started.elapsed();
        Ok(server)
    }

    /// Send the request until it is answered; returns what was answered.
    fn wait_ready(&self, request: &ReadPropertyTemplate, within: Duration) -> io::Result<String> {
        let deadline = Instant::now() + within;
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        socket.connect(self.addr)?;
        socket.set_read_timeout(Some(Duration::from_millis(200)))?;
        let mut request = request.clone();
        let mut buf = [0u8; 2048];
        let echo = self.kind == TargetKind::Echo;
        for invoke_id in (0..=255u8).cycle() {
            if let Some(status) = self.exited() {
                return Err(io::Error::other(format!("{} exited before answering: {status}", self.kind.name())));
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{} did not answer within {within:?}", self.kind.name()),
                ));
            }
            // Not listening yet: the send or the receive is refused; try again.
            let _ = socket.send(request.with_invoke_id(invoke_id));
            let until = Instant::now() + Duration::from_millis(200);
            while Instant::now() < until {
                let Ok(n) = socket.recv(&mut buf) else {
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                };
                match classify(&buf[..n], echo) {
                    Some((id, Answer::Ack)) if id == invoke_id => {
                        return Ok(match decode_ack(&buf[..n]) {
                            Some(ack) => ack.value.to_string(),
                            None => "the request, echoed".into(),
                        });
                    }
                    Some((id, answer)) if id == invoke_id => {
                        return Err(io::Error::other(format!("{} answered {answer:?}", self.kind.name())));
                    }
                    _ => {}
                }
            }
        }
        unreachable!("the invoke IDs cycle forever")
    }

    /// The exit status, once the process has ended.
    pub fn exited(&self) -> Option<std::process::ExitStatus> {
        let mut c = children();
        let child = c.iter_mut().find(|c| c.id() == self.pid)?;
        child.try_wait().ok().flatten()
    }

    /// How many lines the server wrote on stderr, and the last one.
    pub fn log_summary(&self) -> (usize, Option<String>) {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        (text.lines().count(), text.lines().last().map(str::to_owned))
    }

    /// Peak resident memory so far (`VmHWM`), KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        procfs::status_kib(self.pid, "VmHWM")
    }

    /// Resident memory now (`VmRSS`), KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        procfs::status_kib(self.pid, "VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        reap(self.pid);
    }
}

/// A helper process of a scenario (a BACnet/SC hub, an SC device: what is
/// not probed over B/IP), killed by PID when dropped.
#[derive(Debug)]
pub struct Spawned {
    /// What it is, for messages.
    pub name: String,
    /// Its process ID.
    pub pid: u32,
    /// Its stderr.
    pub log: PathBuf,
}

impl Spawned {
    /// Start `program ARGS`, pinned to `cpu` when given, stderr to a log
    /// file under `programs.log_dir`.
    pub fn start(
        name: &str,
        program: &Path,
        args: &[String],
        programs: &Programs,
        cpu: Option<&str>,
    ) -> io::Result<Spawned> {
        let mut command = match cpu {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpu]).arg(program);
                c
            }
            None => Command::new(program),
        };
        let log = programs.log_dir.join(format!("{name}.log"));
        command.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&log)?);
        let child = command.spawn().map_err(|e| io::Error::new(e.kind(), format!("start {name}: {e}")))?;
        let pid = child.id();
        children().push(child);
        Ok(Spawned { name: name.to_string(), pid, log })
    }

    /// The exit status, once the process has ended.
    pub fn exited(&self) -> Option<std::process::ExitStatus> {
        let mut c = children();
        let child = c.iter_mut().find(|c| c.id() == self.pid)?;
        child.try_wait().ok().flatten()
    }

    /// Resident memory now (`VmRSS`), KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        procfs::status_kib(self.pid, "VmRSS")
    }

    /// The last lines of its stderr, for an error message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        reap(self.pid);
    }
}

/// The CPUs this process may run on (`Cpus_allowed_list` of
/// `/proc/self/status`, e.g. `0-1,4`), in order.
pub fn allowed_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(parse_cpu_list).unwrap_or_default()
}

fn parse_cpu_list(list: &str) -> Vec<u32> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.trim().parse::<u32>()),
        }
    }
    cpus
}

/// Pin every thread of this process to `cpu` (`taskset -a -p -c`); threads
/// started later inherit it.
pub fn pin_self(cpu: &str) -> io::Result<()> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpu, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()?;
    if status.success() { Ok(()) } else { Err(io::Error::other(format!("taskset -a -p -c {cpu}: {status}"))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_expand_ranges() {
        assert_eq!(parse_cpu_list("0-1\n"), [0, 1]);
        assert_eq!(parse_cpu_list("0,2-4,7"), [0, 2, 3, 4, 7]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    }

    #[test]
    fn a_firewalled_router_configuration_parses_with_its_policy() {
        let setup = Setup { routed: 2, firewall: true, ..Setup::default() };
        let text = trellis_config(&setup, &[47_900], std::path::Path::new("/tmp/x"));
        let config = trellis::config::Config::parse(&text).unwrap();
        let router = config.router.expect("a router");
        assert_eq!(router.policies.len(), 1);
        assert_eq!(router.policies[0].plugin, "builtin:firewall");
        assert!(router.policies[0].settings_text().contains("reads-cov-discovery"));
        assert_eq!(config.devices.len(), 2);
    }

    #[test]
    fn a_free_port_is_free_on_both_loopback_addresses() {
        let p = free_port().unwrap();
        assert!(UdpSocket::bind((Ipv4Addr::LOCALHOST, p)).is_ok());
    }

    #[test]
    fn a_generated_trellis_configuration_parses_and_serves_the_bulk_objects() {
        let setup = Setup {
            objects: 20_000,
            values: 64,
            segmentation: true,
            swappable: true,
            unbudgeted: true,
            devices: 1,
            routed: 0,
            firewall: false,
            alarm_recipient: Some(47_901),
            journal: Some("process"),
        };
        let text = trellis_config(&setup, &[47_900], std::path::Path::new("/tmp/x"));
        let config = trellis::config::Config::parse(&text).unwrap();
        let device = &config.devices[0];
        assert_eq!((device.port, device.plugin.as_str()), (47_900, "builtin:bulk-objects"));
        assert!(config.policy.allow_unsigned);
        assert_eq!(device.notification_classes.len(), 1, "the alarm recipient's class");
        assert_eq!(device.limits.max_rpm_results, Some(10_000));
        assert_eq!(device.limits.answer_octets_per_second, Some(0));
        assert!(device.limits.max_objects >= Some(20_064));
        let kept = device.persistence.as_ref().expect("the journal's section");
        assert_eq!(kept.dir, std::path::Path::new("/tmp/x/state"));
        assert_eq!(kept.durability, trellis::persistence_config::DurabilitySetting::Process);
        let exactly = Setup { objects: 10_000, ..Setup::default() };
        let config = trellis::config::Config::parse(&trellis_config(&exactly, &[1], "/d".as_ref())).unwrap();
        assert_eq!(config.devices[0].limits.max_objects, Some(10_001), "the Device object counts too");
        let plain = trellis::config::Config::parse(&trellis_config(&Setup::default(), &[1], "/d".as_ref())).unwrap();
        assert_eq!(plain.devices[0].plugin, "builtin:demo-building");
        assert!(!plain.policy.allow_unsigned);
        let three = Setup { devices: 3, ..Setup::default() };
        let config = trellis::config::Config::parse(&trellis_config(&three, &[5, 6, 7], "/d".as_ref())).unwrap();
        let served: Vec<_> = config.devices.iter().map(|d| (d.port, d.instance)).collect();
        assert_eq!(served, [(5, Some(389_001)), (6, Some(389_002)), (7, Some(389_003))]);
    }

    #[test]
    fn the_same_index_names_comparable_objects_on_every_target() {
        assert_eq!(Setup::object(TargetKind::Trellis, 0).to_string(), "analog-input,1");
        assert_eq!(Setup::object(TargetKind::Rusty, 0).to_string(), "analog-value,2");
        assert_eq!(Setup::value(TargetKind::Trellis, 63).to_string(), "analog-value,64");
        assert_eq!(Setup::value(TargetKind::Bacpypes3, 0).to_string(), "analog-value,2");
    }

    #[test]
    fn target_names_are_the_command_line_names() {
        let names: Vec<_> = TargetKind::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["trellis", "rusty", "bacpypes3", "echo"]);
    }
}
