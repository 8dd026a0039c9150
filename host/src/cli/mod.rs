//! The `trellis` command line: argument definitions and dispatch. Each
//! subcommand lives in its own module; printing and value parsing are shared
//! in [`mod@format`] and [`parse`].

mod cov;
mod datetime;
mod dcc;
pub mod discover;
mod events;
mod file;
pub mod format;
mod lifecycle;
mod opcua;
pub mod parse;
pub mod plugin;
mod read;
mod readrange;
mod reinit;
mod run;
/// `trellis run` as a library: start a gateway from a configuration and stop it (the Python package serves with it).
pub use run::{StartOptions, Started, single_device, start};
mod sc;
mod scaffold;
mod simline;
mod timesync;
mod whois;
mod write;

use crate::client::{Client, ClientConfig, ClientError, DeviceAddress};
use bacnet::ObjectIdentifier;
use clap::{Args, Parser, Subcommand};
use std::net::Ipv4Addr;
use std::time::Duration;

/// The default `--bind`.
const DEFAULT_BIND: &str = "127.0.0.1";

/// Trellis: a BACnet/IP client and gateway runtime.
#[derive(Debug, Parser)]
#[command(name = "trellis", version, about, long_about = None)]
#[allow(missing_docs)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do; without one, `run` (the gateway on its embedded default).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: `TIME LEVEL target: message fields`.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`), for the journal and log shippers.
    Json,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Log lines on stderr as `text` or `json` (filter: TRELLIS_LOG, e.g. info or trellis=debug).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Local IPv4 address to bind, optionally with its prefix length
    /// (IP/PREFIX, e.g. 192.168.1.10/24, gives the subnet broadcast address).
    /// Use your BACnet interface's address on a real network.
    #[arg(long, global = true, default_value = DEFAULT_BIND)]
    pub bind: String,
    /// Local UDP port [default: 47808, or a free one if 47808 is taken].
    #[arg(long, global = true)]
    pub port: Option<u16>,
    /// Broadcast address (default: 127.255.255.255 on loopback, else 255.255.255.255).
    #[arg(long, global = true)]
    pub broadcast: Option<Ipv4Addr>,
    /// UDP port broadcasts (Who-Is, Who-Has, …) go to: the BACnet/IP
    /// network's port, whatever the local --port [default: 47808].
    #[arg(long, global = true, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub broadcast_port: Option<u16>,
    /// APDU timeout in milliseconds (1..=600000).
    #[arg(long, global = true, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub timeout_ms: u64,
    /// Retries after the first attempt.
    #[arg(long, global = true, default_value_t = 3)]
    pub retries: u8,
    /// Talk BACnet MS/TP on this serial port (e.g. /dev/ttyUSB0) instead of
    /// BACnet/IP; devices are then addressed as mstp:MAC.
    #[arg(long, global = true, value_name = "PORT")]
    pub mstp: Option<String>,
    /// Our own MS/TP station address on --mstp (a master, 0..=127).
    #[arg(long, global = true, default_value_t = 127, value_parser = clap::value_parser!(u8).range(0..=127))]
    pub mac: u8,
    /// Baud rate of --mstp (9600, 19200, 38400, 57600, 76800, 115200).
    #[arg(long, global = true, default_value_t = 38_400)]
    pub baud: u32,
    /// Max_Master of our station on --mstp: the highest master address polled.
    #[arg(long, global = true, default_value_t = 127, value_parser = clap::value_parser!(u8).range(0..=127))]
    pub max_master: u8,
    /// Register as a foreign device with this BBMD (IP:PORT) and send
    /// broadcasts through it, to reach devices on its network from here.
    #[arg(long, global = true, value_name = "IP:PORT")]
    pub bbmd: Option<std::net::SocketAddrV4>,
    /// Talk BACnet/IPv6 (Annex U) from this IPv6 address (e.g. ::1) instead
    /// of BACnet/IP; devices are then addressed as bip6:VMAC.
    #[arg(long, global = true, value_name = "IPV6")]
    pub ipv6: Option<std::net::Ipv6Addr>,
    /// On --ipv6: resolve the VMAC of the station at `[IP]:PORT` first
    /// (Virtual-Address-Resolution; printed), for links without multicast
    /// such as loopback. Repeatable.
    #[arg(long, global = true, value_name = "[IP]:PORT")]
    pub ipv6_peer: Vec<std::net::SocketAddrV6>,
    /// On --ipv6: register as a foreign device with this BACnet/IPv6 BBMD
    /// (`[IP]:PORT`) and send broadcasts through it (--ttl applies).
    #[arg(long, global = true, value_name = "[IP]:PORT")]
    pub bbmd6: Option<std::net::SocketAddrV6>,
    /// Our VMAC on --ipv6, as a device instance (default: a random VMAC,
    /// replaced if another station turns out to use it).
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(0..=4_194_303))]
    pub vmac_instance: Option<u32>,
    /// On --ipv6: broadcast to (and listen on) the site-local group
    /// FF05::BAC0 instead of the link-local FF02::BAC0 (Annex U.3).
    #[arg(long, global = true)]
    pub ipv6_site_group: bool,
    /// Talk BACnet Ethernet (Clause 7) on this network interface instead of
    /// BACnet/IP (a raw socket: needs CAP_NET_RAW); devices are then
    /// addressed as eth:MAC.
    #[arg(long, global = true, value_name = "INTERFACE")]
    pub ethernet: Option<String>,
    /// Talk BACnet/SC (Annex AB) through this hub (`wss://HOST:PORT/`)
    /// instead of BACnet/IP; needs --cert, --key and --ca. Devices are then
    /// addressed as sc:VMAC.
    #[arg(long, global = true, value_name = "WSS-URI")]
    pub sc_hub: Option<String>,
    /// On --sc-hub: the failover hub.
    #[arg(long, global = true, value_name = "WSS-URI")]
    pub sc_failover: Option<String>,
    /// On --sc-hub: our operational certificate (PEM).
    #[arg(long, global = true, value_name = "FILE")]
    pub cert: Option<std::path::PathBuf>,
    /// On --sc-hub: its private key (PEM).
    #[arg(long, global = true, value_name = "FILE")]
    pub key: Option<std::path::PathBuf>,
    /// On --sc-hub: the issuer (CA) certificates the hub must chain to (PEM).
    #[arg(long, global = true, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// On --sc-hub: open direct connections to the nodes we send to (after
    /// the first request through the hub), where they accept them.
    #[arg(long, global = true)]
    pub sc_direct: bool,
    /// On --sc-hub (and `sc hub`): certificate revocation lists (PEM) the
    /// peer's certificate is checked against.
    #[arg(long, global = true, value_name = "FILE")]
    pub crl: Option<std::path::PathBuf>,
    /// Time-to-live of the --bbmd registration, in seconds (renewed at half).
    #[arg(long, global = true, default_value_t = 300, value_parser = clap::value_parser!(u16).range(2..))]
    pub ttl: u16,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find devices: send Who-Is and print each I-Am.
    Whois(whois::WhoisArgs),
    /// Read one property (ReadProperty).
    Read(read::ReadArgs),
    /// Read several properties of one object (ReadPropertyMultiple).
    Readm(read::ReadmArgs),
    /// Write one property (WriteProperty).
    Write(write::WriteArgs),
    /// Create an object (CreateObject), by type or by identifier, with initial values.
    ///
    /// Prints the new object's identifier. A refused initial value is the device's Error with the
    /// value's position (exit status 4).
    ///
    /// Example: trellis create 192.168.1.20 calendar object-name=holidays
    Create(lifecycle::CreateArgs),
    /// Delete an object (DeleteObject). Prints nothing on success.
    ///
    /// Example: trellis delete 192.168.1.20 calendar,7
    Delete(lifecycle::DeleteArgs),
    /// Who-Is, then each device's object list and object names.
    Discover(discover::DiscoverArgs),
    /// Subscribe to an object's changes and print each notification (SubscribeCOV).
    ///
    /// Prints one line per notification: the object, each reported property and value, and the
    /// subscription's time remaining. Renews the subscription at three quarters of --lifetime, and
    /// cancels it on exit (Ctrl-C, --count or --duration). With --property, SubscribeCOVProperty
    /// monitors that one property (optionally with its own --increment).
    ///
    /// Example: trellis cov 192.168.1.20 analog-input,1 --confirmed --lifetime 600
    Cov(cov::CovArgs),
    /// Read a range of a list property, such as a Trend Log's Log_Buffer (ReadRange).
    ///
    /// Without --position, --sequence or --time the whole list is read (as much of it as fits one
    /// answer). With one of them, --count items are read forward from that reference, or backward with a
    /// negative count. Prints the result flags (first-item, last-item, more-items), the item count, the
    /// first sequence number when the device gives one (reads by sequence number or by time), then one
    /// item per line after its sequence number or its position in the list. Log_Buffer records print as
    /// timestamp, logged value and status flags.
    ///
    /// Example: trellis readrange 192.168.1.20 trend-log,1 log-buffer --sequence 100 --count 10
    Readrange(readrange::ReadRangeArgs),
    /// Read or write a File object's contents (AtomicReadFile, AtomicWriteFile).
    ///
    /// A stream file travels in 4 KiB chunks, a record file 32 records at a time (one per line).
    ///
    /// Examples: trellis file read 192.168.1.20 file,3 --output manifest.txt;
    /// trellis file write 192.168.1.20 file,1 notes.txt
    File(file::FileArgs),
    /// List a device's alarms and events (GetEventInformation, every page).
    ///
    /// One line per object in an offnormal or fault state or with a transition not acknowledged: the
    /// object, its Event_State and Notify_Type, then per transition (to-offnormal, to-fault, to-normal)
    /// its time stamp, whether it is acknowledged and its priority.
    ///
    /// Example: trellis events 192.168.1.20
    Events(events::EventsArgs),
    /// Acknowledge an alarm (AcknowledgeAlarm).
    ///
    /// Reads the object's time stamps with GetEventInformation and acknowledges every transition not
    /// acknowledged yet, or only the one into --state. A wrong time stamp is the device's Error
    /// services: invalid-time-stamp (exit status 4).
    ///
    /// Example: trellis ack 192.168.1.20 analog-input,7 --source "Operator 1"
    Ack(events::AckArgs),
    /// Print the event and COV notifications this CLI receives as a recipient.
    ///
    /// Bind where the recipient is (--port), e.g. trellis --port 47809 listen: a Notification
    /// Class's recipient, or a device's restart notification's. One line per event notification:
    /// time stamp, object, notify type, transition, event type, class, priority, confirmed or not (a
    /// confirmed one is acknowledged), the device and process, the message text. One line per COV
    /// notification: the time received, object, `cov`, each value by name, the device and process.
    ///
    /// Example: trellis --port 47809 listen --count 10
    Listen(events::ListenArgs),
    /// Stop or resume a device's communication (DeviceCommunicationControl).
    ///
    /// disable-initiation stops the device initiating requests (I-Am, notifications) while it goes on
    /// answering; disable stops it answering anything but DeviceCommunicationControl and
    /// ReinitializeDevice (deprecated in later revisions of the standard: many devices refuse it);
    /// enable ends either. With --duration the device returns to normal by itself after that many minutes.
    /// Prints nothing on success; a wrong or missing password is the device's Error
    /// security: password-failure (exit status 4).
    ///
    /// Example: trellis dcc 192.168.1.20 disable-initiation --duration 30 --password secret
    Dcc(dcc::DccArgs),
    /// Restart a device, or drive its backup and restore (ReinitializeDevice).
    ///
    /// STATE is a BACnetReinitializedStateOfDevice: coldstart, warmstart, start-backup, end-backup,
    /// start-restore, end-restore, abort-restore or activate-changes. The device acknowledges before it
    /// acts, so success means the request was accepted; a restarting device may not answer for a while.
    /// Prints nothing on success.
    ///
    /// Example: trellis reinit 192.168.1.20 warmstart --password secret
    Reinit(reinit::ReinitArgs),
    /// Set devices' clocks (TimeSynchronization, or UTCTimeSynchronization with --utc).
    ///
    /// Sends to one device, or broadcasts without an address (--global: to every network). The
    /// request is unconfirmed: no device answers, so success means sent. Prints the service, the
    /// date and time sent and where to.
    ///
    /// Examples: trellis timesync 192.168.1.20 (this machine's local time, now);
    /// trellis timesync --utc --time 2025-06-01T12:00:00Z (broadcast)
    Timesync(timesync::TimesyncArgs),
    /// Run the gateway (the default): serve BACnet devices from plugins until Ctrl-C.
    Run(run::RunArgs),
    /// Plugin files: make signing keys, sign, verify.
    Plugin(plugin::PluginArgs),
    /// Run a simulated RS-485 line whose stations are pseudo-terminals: MS/TP between programs
    /// without hardware.
    ///
    /// Prints `station N: PATH` for each station, then relays until Ctrl-C: what a program writes
    /// to its PATH goes on the line, and every octet reaches the other stations when a UART at
    /// --baud would deliver it (10 bits per octet). Open PATH as the serial port of an MS/TP
    /// station: `trellis --mstp PATH --mac N …`, or `mstp = { device = "PATH", … }` in a gateway's
    /// configuration. With --capture the frames go to a pcap file (linktype 165).
    ///
    /// Example: trellis sim-line --baud 38400 --stations 3 --capture line.pcap
    SimLine(simline::SimLineArgs),
    /// BACnet/SC tools: `trellis sc certs` writes a test PKI (CA, hub, nodes).
    Sc(sc::ScArgs),
    /// OPC UA tools: `trellis opcua certs` makes the server's certificate store.
    Opcua(opcua::OpcUaArgs),
}

/// Exit statuses, documented in `--help` of the binary and the README.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Anything else (I/O, internal).
    pub const OTHER: u8 = 1;
    /// Bad arguments (clap's own code).
    pub const USAGE: u8 = 2;
    /// No answer in time.
    pub const TIMEOUT: u8 = 3;
    /// The device answered with an Error, Reject or Abort.
    pub const BACNET: u8 = 4;
}

/// An error that ends the command, with its exit status.
#[derive(Debug)]
pub struct Failure {
    /// Exit status.
    pub code: u8,
    /// One line for stderr.
    pub message: String,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Failure { code: exit::USAGE, message: message.into() }
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        let code = match e {
            ClientError::Timeout { .. } => exit::TIMEOUT,
            ClientError::Bacnet { .. }
            | ClientError::WriteFailed { .. }
            | ClientError::CreateFailed { .. }
            | ClientError::Reject(_)
            | ClientError::NetworkRejected { .. }
            | ClientError::Abort { .. } => exit::BACNET,
            _ => exit::OTHER,
        };
        Failure { code, message: e.to_string() }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure { code: exit::OTHER, message: format!("{e:#}") }
    }
}

/// A client on a BACnet/SC node connected to `hub` (or its failover),
/// once it is connected: what is sent before that would be lost.
async fn sc_client(g: &GlobalArgs, hub: &str, tsm: bacnet::tsm::TsmConfig) -> Result<Client, Failure> {
    let (Some(cert), Some(key), Some(ca)) = (&g.cert, &g.key, &g.ca) else {
        return Err(Failure::usage("--sc-hub needs --cert, --key and --ca (the node's certificate, key and issuers)"));
    };
    let mut section = crate::sc_port::ScSection::for_cli(
        hub.to_string(),
        g.sc_failover.clone(),
        cert.clone(),
        key.clone(),
        ca.clone(),
    );
    section.revocation_lists = g.crl.clone();
    if g.sc_direct {
        section.direct_connect = Some(crate::sc_port::DirectSection { initiate: true, accept: None, uris: Vec::new() });
    }
    section.validate().map_err(|e| Failure::usage(format!("{e:#}")))?;
    // The CLI is a node of its own: a derived UUID per certificate.
    let started = crate::sc_port::start(&section, 0x3F_FFFF, std::path::Path::new("."))
        .map_err(|e| Failure { code: exit::OTHER, message: format!("--sc-hub {hub}: {e:#}") })?;
    let node = started.port.node.clone();
    let within = Duration::from_millis(g.timeout_ms.max(1000) * 2);
    let connected = tokio::time::timeout(within, async {
        while node.status().hub == bacnet::bvlc_sc::HubConnectionStatus::NO_HUB_CONNECTION {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    if connected.is_err() {
        return Err(Failure {
            code: exit::TIMEOUT,
            message: format!("--sc-hub {hub}: not connected within {} ms (the log above says why)", within.as_millis()),
        });
    }
    Ok(Client::on_sc(started.port.node, started.port.up, tsm))
}

/// Run a parsed command line.
pub async fn run(cli: Cli) -> Result<(), Failure> {
    let g = &cli.global;
    let port_given = g.port.is_some();
    let config = ClientConfig {
        bip: trellis_bip::BipConfig {
            broadcast: g.broadcast,
            // A client joins the network on 47808 (or --broadcast-port) from
            // whatever local port it has: its broadcasts go to the network's
            // port, never to its own (issue 44).
            broadcast_port: Some(g.broadcast_port.unwrap_or(trellis_bip::DEFAULT_PORT)),
            ..trellis_bip::BipConfig::from_cidr(&g.bind, g.port.unwrap_or(trellis_bip::DEFAULT_PORT))
                .map_err(|e| Failure::usage(format!("--bind: {e}")))?
        },
        tsm: bacnet::tsm::TsmConfig {
            apdu_timeout: Duration::from_millis(g.timeout_ms),
            retries: g.retries,
            ..Default::default()
        },
        foreign_device: g.bbmd.map(|bbmd| crate::client::ForeignDevice { bbmd, ttl: g.ttl }),
    };
    let command = cli.command.unwrap_or(Command::Run(run::RunArgs::default()));
    if let Command::Run(a) = command {
        if g.broadcast_port.is_some() {
            return Err(Failure::usage(
                "--broadcast-port is for the client commands: a gateway's BACnet/IP port broadcasts to its own \
                 UDP port (the network's port, `port` in the configuration)",
            ));
        }
        let bind = (g.bind != DEFAULT_BIND).then(|| g.bind.clone());
        let port = g.port;
        return run::run(bind, port, a).await;
    }
    if let Command::Plugin(a) = command {
        return plugin::run_admin(a.command).await;
    }
    if let Command::SimLine(a) = command {
        return simline::run(a).await;
    }
    if let Command::Sc(a) = command {
        return sc::run(a, g).await;
    }
    if let Command::Opcua(a) = command {
        return opcua::run(a).await;
    }
    if g.bbmd6.is_some() && g.ipv6.is_none() {
        return Err(Failure::usage("--bbmd6 needs --ipv6 (the address to talk BACnet/IPv6 from)"));
    }
    let client = if let Some(hub) = &g.sc_hub {
        sc_client(g, hub, config.tsm).await?
    } else if let Some(ip) = g.ipv6 {
        let mut port = match g.vmac_instance {
            Some(instance) => trellis_bip6::Bip6Config::new(ip, g.port.unwrap_or(0), instance),
            None => trellis_bip6::Bip6Config::random(ip, g.port.unwrap_or(0)),
        };
        port.site_group = g.ipv6_site_group;
        let client = Client::bind_bip6(port, config.tsm)
            .await
            .map_err(|e| Failure { code: exit::OTHER, message: format!("--ipv6 {ip}: {e}") })?;
        for peer in &g.ipv6_peer {
            let d = client
                .resolve_bip6(*peer, Duration::from_millis(g.timeout_ms))
                .await
                .map_err(|e| Failure { code: exit::TIMEOUT, message: format!("--ipv6-peer {peer}: {e}") })?;
            eprintln!("trellis: {peer} is {d}");
        }
        if let Some(bbmd) = g.bbmd6 {
            client
                .register_bip6_foreign_device(bbmd, g.ttl)
                .await
                .map_err(|e| Failure { code: exit::OTHER, message: format!("--bbmd6 {bbmd}: {e}") })?;
        }
        client
    } else if let Some(interface) = &g.ethernet {
        Client::bind_ethernet(trellis_ethernet::EthernetConfig::new(interface), config.tsm)
            .await
            .map_err(|e| Failure { code: exit::OTHER, message: format!("--ethernet {interface}: {e}") })?
    } else if let Some(path) = &g.mstp {
        let mut port = trellis_mstp::MstpConfig::serial(path.clone(), g.mac, g.baud);
        port.node.max_master = g.max_master;
        Client::bind_mstp(port, config.tsm).await.map_err(|e| Failure {
            code: exit::OTHER,
            message: format!("--mstp {path}: {:#}", anyhow::Error::from(e)),
        })?
    } else {
        match Client::bind(config).await {
            Ok(c) => c,
            // The default port is taken (a gateway runs here): use a free one,
            // still broadcasting to the network's port. Devices answer us directly.
            Err(e) if e.source.kind() == std::io::ErrorKind::AddrInUse && !port_given => {
                let mut fallback = config;
                fallback.bip.bind.set_port(0);
                Client::bind(fallback).await.map_err(|e| Failure { code: exit::OTHER, message: e.to_string() })?
            }
            Err(e) => return Err(Failure { code: exit::OTHER, message: e.to_string() }),
        }
    };
    match command {
        Command::Whois(a) => whois::run(&client, a).await,
        Command::Read(a) => read::run_read(&client, a).await,
        Command::Readm(a) => read::run_readm(&client, a).await,
        Command::Write(a) => write::run(&client, a).await,
        Command::Create(a) => lifecycle::run_create(&client, a).await,
        Command::Delete(a) => lifecycle::run_delete(&client, a).await,
        Command::Discover(a) => discover::run(&client, a).await,
        Command::Readrange(a) => readrange::run(&client, a).await,
        Command::File(a) => file::run(&client, a).await,
        Command::Events(a) => events::run_events(&client, a).await,
        Command::Ack(a) => events::run_ack(&client, a).await,
        Command::Listen(a) => events::run_listen(&client, a).await,
        Command::Dcc(a) => dcc::run(&client, a).await,
        Command::Cov(a) => cov::run(&client, a).await,
        Command::Reinit(a) => reinit::run(&client, a).await,
        Command::Timesync(a) => timesync::run(&client, a).await,
        Command::Run(_) | Command::Plugin(_) | Command::SimLine(_) | Command::Sc(_) | Command::Opcua(_) => {
            unreachable!("handled above")
        }
    }
}

/// Parse a device address argument.
pub(crate) fn device(s: &str) -> Result<DeviceAddress, Failure> {
    s.parse().map_err(|e: crate::client::ParseAddressError| Failure::usage(e.to_string()))
}

/// Parse an object argument such as `analog-value,1`.
pub(crate) fn object(s: &str) -> Result<ObjectIdentifier, Failure> {
    s.parse().map_err(|e: bacnet::codec::ParseObjectIdError| Failure::usage(format!("invalid object `{s}`: {e}")))
}

/// Parse a property name such as `present-value` (or a number).
pub(crate) fn property(s: &str) -> Result<bacnet::PropertyIdentifier, Failure> {
    bacnet::PropertyIdentifier::from_name(s).ok_or_else(|| {
        Failure::usage(format!("unknown property `{s}` (use the standard name, e.g. present-value, or a number)"))
    })
}

/// A clap parser for an enumeration's standard names (listed in `--help`).
pub(crate) fn named<T>(known: &'static [(T, &'static str)]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(known.iter().map(|(_, name)| *name))
        .map(move |s| known.iter().find(|(_, name)| *name == s).map(|(v, _)| *v).expect("a listed name"))
}

/// A clap parser for the password of DeviceCommunicationControl and
/// ReinitializeDevice: 1 to 20 characters.
pub(crate) fn password(s: &str) -> Result<String, String> {
    if bacnet::services::password_in_range(&bacnet::CharacterString::utf8(s)) {
        Ok(s.to_string())
    } else {
        Err(format!("a password has 1 to {} characters", bacnet::services::PASSWORD_MAX_CHARACTERS))
    }
}
