//! The gateway's TOML configuration: which devices to serve, on which ports,
//! with which plugins and limits. Without a file, [`Config::embedded`] serves
//! the built-in `demo-building` plugin on 127.0.0.1:47808.
//!
//! ```toml
//! [engine]
//! cache_dir = "/var/cache/trellis"      # compiled plugins; optional
//!
//! [[device]]
//! bind = "192.168.1.10/24"              # IP[/PREFIX]
//! port = 47808
//! instance = 389001                     # optional: override the model's Device instance
//! vendor_id = 999
//! plugin = "builtin:demo-building"      # or a path to a .wasm component
//! data_dir = "/var/lib/trellis/demo"    # optional, the plugin's /data
//! tick_ms = 1000
//! watch = false                         # hot-swap when the plugin file changes
//! password = "change-me"                # required by DeviceCommunicationControl and ReinitializeDevice; without it
//!                                       # any is accepted, and `trellis run` warns if the device is reachable
//!                                       # beyond this host (bound to a non-loopback address, or on MS/TP)
//! accept_time_sync = true               # Time/UTCTimeSynchronization set the clock plugins see
//! memory_mb = 64
//! deadline_ms = 100
//!
//! # mstp = { device = "/dev/ttyUSB0", baud = 38400, mac = 5, max_master = 127, max_info_frames = 1 }
//! #                                     # optional: serve on this MS/TP port instead of B/IP;
//! #                                     # add `slave = true` for a slave node (mac 0..=254, answers only)
//!
//! [device.limits]                       # optional; admission control and answer bounds
//! max_requests_per_peer = 16            # confirmed requests in progress per peer; more → Abort out-of-resources
//! max_requests = 1024                   # over all peers
//! max_rpm_results = 256                 # results in one ReadPropertyMultiple answer; more → Abort
//! max_rpm_octets = 16384                # octets in one answer, however segmented; more → Abort
//! max_objects = 10000                   # objects one device may serve
//! max_cov_per_subscriber = 64           # COV subscriptions per subscriber; more → resources/no-space-to-add-list-element
//! max_cov_subscriptions = 4096          # over all subscribers
//! max_cov_per_address = 1024            # over all ports of one IP address (one host cannot fill the table)
//! reserved_cov_subscriptions = 256      # the table's last places: only for addresses holding < max_cov_per_subscriber
//! # max_cov_lifetime = 86400            # seconds; longer lifetimes → services/parameter-out-of-range (default: none)
//! allow_indefinite_cov = true           # lifetime 0 = indefinite, as front ends use it; false refuses it
//! answer_octets_per_second = 262144     # segmented-answer octets one IP address may draw per second; 0 = no bound
//! answer_burst_octets = 524288          #   and at once after a quiet spell (more → Abort out-of-resources, counted)
//!
//! [[router.port]]                       # optional: a BACnet router (Clause 6) in the gateway,
//! bind = "192.168.1.10/24"              #   with a B/IP port on network 1; a [[device]] bound to
//! port = 47808                          #   the same address and port is served directly on it
//! network = 1
//!
//! [[router.policy]]                     # optional: routing-policy plugins, asked in order about
//! plugin = "builtin:firewall"           #   every NPDU the router sends on (builtin:broadcast-guard,
//! on_failure = "closed"                 #   or a vetted file); a failing one drops ("open": forwards)
//! settings = { default = "forward" }    #   its own settings (see plugins/firewall)
//!
//! [[device]]
//! virtual_network = 1001                # a device on virtual network 1001 behind the router:
//! instance = 1001                       #   any number share the router's port (bind/port unused);
//! plugin = "builtin:demo-building"      #   its MAC there is its instance in three octets
//!
//! [policy]                              # which plugin FILES may load (built-ins always may)
//! trusted_keys = ["d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"]
//! allow_unsigned = false                # true: load unsigned plugins too (development only!)
//! max_memory_mb = 256                   # ceilings on what a plugin's manifest may ask for
//! allow_data_write = false
//! max_objects = 10000
//! ```
//!
//! `[policy]` is optional; without it no plugin file loads unless it is
//! signed by a trusted key, which none is. Signatures, manifests and the
//! rules are described in [`crate::plugin::policy`].
//!
//! One device per B/IP port, except behind the router: its B/IP ports may
//! each have one device of their own, and any number of devices live on
//! its virtual networks. The router runs on one thread with all of them.

/// `[policy]` is the plugin runtime's: its rules live beside the check that
/// enforces them.
pub use crate::plugin::policy::PolicySection;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Engine settings.
    #[serde(default)]
    pub engine: EngineSection,
    /// Devices to serve (none only when a `[router]` is all there is).
    #[serde(rename = "device", default)]
    pub devices: Vec<DeviceSection>,
    /// Which plugin files may load, and the most they may ask for.
    #[serde(default)]
    pub policy: PolicySection,
    /// `[router]`: a BACnet router joining its B/IP ports and the
    /// virtual networks of the devices behind it.
    pub router: Option<RouterSection>,
    /// `[mqtt]`: the served devices' points to an MQTT broker, writes in.
    pub mqtt: Option<crate::mqtt_bridge::MqttSection>,
    /// `[opcua]`: the served devices' points as an OPC UA server.
    pub opcua: Option<crate::opcua_bridge::OpcUaSection>,
    /// `[[opcua_client]]`: OPC UA servers whose points feed served devices' objects.
    #[serde(rename = "opcua_client", default)]
    pub opcua_clients: Vec<crate::opcua_bridge::pull::OpcUaClientSection>,
    /// `[[app]]`: application-logic plugins next to the points.
    #[serde(rename = "app", default)]
    pub apps: Vec<crate::app::AppSection>,
    /// `[[remote]]`: devices not served here that applications may reach.
    #[serde(rename = "remote", default)]
    pub remotes: Vec<crate::app::RemoteSection>,
    /// `[client]`: the gateway's own BACnet client (for `[[remote]]`).
    #[serde(default)]
    pub client: crate::app::ClientSection,
    /// `[http]`: the console, the REST API and `/metrics` (on by default, on loopback).
    pub http: Option<crate::http::HttpSection>,
}

/// `bbmd = { … }` on a B/IP `[[device]]` or `[[router.port]]`: the port is
/// a BBMD (Annex J), hardened: no foreign device registers unless its
/// network is listed, the BDT is not writable over the network, and every
/// management request is rate-limited per source.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct BbmdSection {
    /// The peer BBMDs: `IP:PORT` (broadcasts are sent to it, which
    /// rebroadcasts them) or `IP:PORT/PREFIX` (sent to that subnet's
    /// directed broadcast address). This port's own entry is added.
    #[serde(default)]
    pub peers: Vec<String>,
    /// Networks (`IP/PREFIX`) whose hosts may register as foreign devices;
    /// none by default.
    #[serde(default)]
    pub foreign_devices: Vec<String>,
    /// Foreign devices registered at once (default 128).
    pub max_foreign_devices: Option<usize>,
    /// The longest time-to-live granted, in seconds (default 3600).
    pub max_ttl: Option<u16>,
    /// Let Write-Broadcast-Distribution-Table replace the table (default false).
    #[serde(default)]
    pub accept_write_bdt: bool,
    /// Management requests per second one source IP may make (default 10).
    pub requests_per_second: Option<u32>,
    /// And at once (default 20).
    pub request_burst: Option<u32>,
}

impl BbmdSection {
    /// The BBMD's settings for a port at `local` broadcasting to `broadcast`.
    pub fn resolve(
        &self,
        local: std::net::SocketAddrV4,
        broadcast: std::net::SocketAddrV4,
    ) -> anyhow::Result<trellis_bip::BbmdConfig> {
        use std::net::{Ipv4Addr, SocketAddrV4};
        let mask =
            |prefix: u8| Ipv4Addr::from(if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) });
        let mut bdt = vec![bacnet::bvll::BdtEntry { address: local, mask: Ipv4Addr::BROADCAST }];
        for p in &self.peers {
            let (addr, prefix) = match p.split_once('/') {
                Some((a, n)) => (
                    a,
                    n.parse::<u8>()
                        .ok()
                        .filter(|n| *n <= 32)
                        .ok_or_else(|| anyhow::anyhow!("bbmd.peers: bad prefix in `{p}`"))?,
                ),
                None => (p.as_str(), 32),
            };
            let address: SocketAddrV4 =
                addr.parse().map_err(|_| anyhow::anyhow!("bbmd.peers: `{p}` is not IP:PORT[/PREFIX]"))?;
            if address != local {
                bdt.push(bacnet::bvll::BdtEntry { address, mask: mask(prefix) });
            }
        }
        let mut foreign_devices = Vec::new();
        for n in &self.foreign_devices {
            let (ip, prefix) =
                n.split_once('/').ok_or_else(|| anyhow::anyhow!("bbmd.foreign_devices: `{n}` is not IP/PREFIX"))?;
            let ip: Ipv4Addr =
                ip.parse().map_err(|_| anyhow::anyhow!("bbmd.foreign_devices: `{n}` is not IP/PREFIX"))?;
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= 32)
                .ok_or_else(|| anyhow::anyhow!("bbmd.foreign_devices: bad prefix in `{n}`"))?;
            foreign_devices.push((ip, prefix));
        }
        let mut c = trellis_bip::BbmdConfig::new(local, broadcast, bdt);
        c.foreign_devices = foreign_devices;
        c.accept_write_bdt = self.accept_write_bdt;
        c.max_foreign_devices = self.max_foreign_devices.unwrap_or(c.max_foreign_devices);
        c.max_ttl = self.max_ttl.unwrap_or(c.max_ttl);
        c.requests_per_second = self.requests_per_second.unwrap_or(c.requests_per_second);
        c.request_burst = self.request_burst.unwrap_or(c.request_burst);
        anyhow::ensure!(c.request_burst >= 1, "bbmd.request_burst must be at least 1");
        Ok(c)
    }
}

/// `[router]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RouterSection {
    /// `[[router.port]]`: its B/IP ports.
    #[serde(rename = "port")]
    pub ports: Vec<RouterPortSection>,
    /// `[[router.policy]]`: routing-policy plugins, asked in order about
    /// every NPDU the router would send on; the first that does not say
    /// "forward" decides.
    #[serde(rename = "policy", default)]
    pub policies: Vec<RoutingPolicySection>,
}

/// One `[[router.policy]]`: a routing-policy plugin and its settings.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoutingPolicySection {
    /// `builtin:firewall`, `builtin:broadcast-guard`, or a component file
    /// (vetted by `[policy]` like any plugin file).
    pub plugin: String,
    /// What routed NPDUs get while the plugin cannot answer: `closed`
    /// (dropped, the default) or `open` (forwarded unchecked).
    #[serde(default = "default_on_failure")]
    pub on_failure: String,
    /// Wall-clock limit of one call, in ms (the router waits for it).
    #[serde(default = "default_policy_deadline_ms")]
    pub deadline_ms: u64,
    /// Memory limit, in MiB.
    #[serde(default = "default_policy_memory_mb")]
    pub memory_mb: u64,
    /// The plugin's own settings, handed to it as TOML.
    #[serde(default)]
    pub settings: toml::Table,
}

fn default_on_failure() -> String {
    "closed".into()
}

fn default_policy_deadline_ms() -> u64 {
    10
}

fn default_policy_memory_mb() -> u64 {
    16
}

impl RoutingPolicySection {
    /// Whether it fails open (`on_failure = "open"`).
    pub fn fails_open(&self) -> anyhow::Result<bool> {
        match self.on_failure.as_str() {
            "closed" => Ok(false),
            "open" => Ok(true),
            other => anyhow::bail!("on_failure must be \"closed\" or \"open\", not {other:?}"),
        }
    }

    /// The settings as the TOML text the plugin parses.
    pub fn settings_text(&self) -> String {
        toml::to_string(&self.settings).unwrap_or_default()
    }

    /// Resolve `plugin` (relative paths against `base`).
    pub fn plugin_ref(&self, base: &Path) -> anyhow::Result<PluginRef> {
        match self.plugin.strip_prefix("builtin:") {
            Some("firewall") => Ok(PluginRef::Builtin("firewall")),
            Some("broadcast-guard") => Ok(PluginRef::Builtin("broadcast-guard")),
            Some(other) => {
                anyhow::bail!("unknown built-in routing policy `{other}` (built in: firewall, broadcast-guard)")
            }
            None => Ok(PluginRef::File(base.join(&self.plugin))),
        }
    }
}

/// One `[[router.port]]`: a B/IP port of the router, or with `mstp`, an
/// MS/TP port (a trunk: the router routes to it; no device of the
/// gateway's own is on it).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouterPortSection {
    /// `IP` or `IP/PREFIX` to bind.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// UDP port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The network number of the network on this port (1..=65534).
    pub network: u16,
    /// An MS/TP port instead of B/IP (`bind` and `port` are then unused).
    pub mstp: Option<MstpSection>,
    /// Make this B/IP port a BBMD.
    pub bbmd: Option<BbmdSection>,
    /// A BACnet/IPv6 port instead of B/IP (`bind` and `port` are then
    /// unused); its VMAC is `vmac_instance` in three octets, by default
    /// 0x3F0000 plus the network number.
    pub bip6: Option<Bip6Section>,
    /// A BACnet/SC port instead of B/IP (`bind` and `port` are then
    /// unused): a node on its hubs, optionally running the hub function.
    pub sc: Option<crate::sc_port::ScSection>,
    /// A BACnet Ethernet port instead of B/IP (`bind` and `port` are then
    /// unused).
    pub ethernet: Option<EthernetSection>,
}

impl RouterSection {
    /// The router port a device bound to `bind`:`port` is served on, if any.
    pub fn port_of(&self, d: &DeviceSection) -> Option<usize> {
        if d.virtual_network.is_some() || d.mstp.is_some() || d.sc.is_some() || d.ethernet.is_some() {
            return None;
        }
        self.ports.iter().position(|p| {
            p.mstp.is_none()
                && p.bip6.is_none()
                && p.sc.is_none()
                && p.ethernet.is_none()
                && p.bind == d.bind
                && p.port == d.port
        })
    }
}

/// `[engine]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    /// Directory for compiled plugins (`.cwasm`); default: the user cache dir.
    pub cache_dir: Option<PathBuf>,
    /// Threads the devices run on (shards, `crate::shard`): each device's
    /// port, requests and plugin on one of them, round robin. Default: one
    /// per core, never more than there are devices.
    pub threads: Option<std::num::NonZeroUsize>,
}

/// One `[[device]]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    /// `IP` or `IP/PREFIX` to bind.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// UDP port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Device instance presented on the network; default: the model's.
    pub instance: Option<u32>,
    /// Vendor_Identifier.
    #[serde(default = "default_vendor")]
    pub vendor_id: u16,
    /// `builtin:demo-building`, `builtin:bulk-objects`, or a `.wasm` path
    /// (relative paths are relative to the config file).
    #[serde(default = "default_plugin")]
    pub plugin: String,
    /// Host directory the plugin sees as `/data`.
    pub data_dir: Option<PathBuf>,
    /// Milliseconds between `tick` calls.
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    /// Plugin memory limit in MiB.
    #[serde(default = "default_memory")]
    pub memory_mb: u64,
    /// Per-call time limit in milliseconds.
    #[serde(default = "default_deadline")]
    pub deadline_ms: u64,
    /// Hot-swap the plugin when its file changes (file plugins only; the new
    /// file goes through the same signature and capability policy).
    #[serde(default)]
    pub watch: bool,
    /// `[device.limits]`: admission control and answer bounds.
    #[serde(default)]
    pub limits: LimitsSection,
    /// Password DeviceCommunicationControl and ReinitializeDevice must
    /// carry (1 to 20 characters); without one, any is accepted.
    pub password: Option<String>,
    /// Let Time/UTCTimeSynchronization set the clock the plugin sees.
    #[serde(default = "default_true")]
    pub accept_time_sync: bool,
    /// Serve on this MS/TP port instead of B/IP (`bind` and `port` are
    /// then unused).
    pub mstp: Option<MstpSection>,
    /// Live on this virtual network behind the gateway's router (`[router]`)
    /// instead of on a port of its own (`bind` and `port` are then unused).
    pub virtual_network: Option<u16>,
    /// Make this device's B/IP port a BBMD.
    pub bbmd: Option<BbmdSection>,
    /// Serve on a BACnet/IPv6 port instead of B/IP (`bind` and `port` are
    /// then unused); the device's VMAC is its `instance`.
    pub bip6: Option<Bip6Section>,
    /// Serve on a BACnet/SC port instead of B/IP (`bind` and `port` are
    /// then unused), optionally running the hub function too.
    pub sc: Option<crate::sc_port::ScSection>,
    /// Serve on a BACnet Ethernet port instead of B/IP (`bind` and `port`
    /// are then unused).
    pub ethernet: Option<EthernetSection>,
    /// `[[device.file]]`: File objects over files in `data_dir`.
    #[serde(default, rename = "file", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSection>,
    /// `[[device.notification_class]]`: Notification Class objects.
    #[serde(default, rename = "notification_class", skip_serializing_if = "Vec::is_empty")]
    pub notification_classes: Vec<crate::notification_config::NotificationClassSection>,
    /// `[[device.schedule]]`: Schedule objects.
    #[serde(default, rename = "schedule", skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<crate::schedule_config::ScheduleSection>,
    /// `[[device.calendar]]`: Calendar objects.
    #[serde(default, rename = "calendar", skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<crate::schedule_config::CalendarSection>,
    /// Restart_Notification_Recipients: `"IP:PORT"`, `"device:N"` or
    /// `"broadcast"` (the local network); they are told when the device
    /// starts and after a ReinitializeDevice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_notification_recipients: Vec<String>,
    /// Object types a front end may create with CreateObject (and delete
    /// once created): `"schedule"` and `"calendar"` (the host's), and the
    /// model's types (`"analog-value"`, …) for a plugin that creates them
    /// (its manifest asks for `create_objects`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub create_objects: Vec<String>,
    /// `[device.persistence]`: keep what clients wrote across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<crate::persistence_config::PersistenceSection>,
}

/// One `[[device.file]]`: a File object (Clause 12.13) the host serves from
/// a file in the device's `data_dir`, read and written with
/// AtomicReadFile/AtomicWriteFile.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FileSection {
    /// The File object's instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The file, relative to `data_dir` (no `..`; links never lead out).
    pub path: PathBuf,
    /// `stream` (octets at positions) or `record` (a record is a line).
    #[serde(default = "default_file_access")]
    pub access: String,
    /// File_Type.
    #[serde(default = "default_file_type")]
    pub file_type: String,
    /// Let AtomicWriteFile change it (a plugin file's manifest must also
    /// ask for `data_dir = "write"`, granted by `[policy] allow_data_write`).
    #[serde(default)]
    pub writable: bool,
    /// The most octets it may hold (default 16 MiB).
    #[serde(default = "default_file_max_size")]
    pub max_size: u64,
}

fn default_file_access() -> String {
    "stream".into()
}
fn default_file_type() -> String {
    "application/octet-stream".into()
}
fn default_file_max_size() -> u64 {
    16 << 20
}

impl FileSection {
    /// The server's File object configuration; `may_write` is whether the
    /// device's plugin was granted a writable data directory.
    pub fn resolve(&self, may_write: bool) -> anyhow::Result<trellis_server::file_object::FileConfig> {
        use trellis_server::file_object::{AccessMethod, FileConfig, check_relative};
        let what = || format!("[[device.file]] instance {}", self.instance);
        anyhow::ensure!(self.instance < (1 << 22), "{}: instance out of range (0..4194303)", what());
        check_relative(&self.path).map_err(|e| anyhow::anyhow!("{}: path {e}", what()))?;
        let access = match self.access.as_str() {
            "stream" => AccessMethod::Stream,
            "record" => AccessMethod::Record,
            other => anyhow::bail!("{}: access = {other:?}: expected \"stream\" or \"record\"", what()),
        };
        if self.writable && !may_write {
            tracing::warn!(
                file = self.instance,
                "[[device.file]] is writable, but the plugin's data directory is not granted for writing: read-only"
            );
        }
        Ok(FileConfig {
            instance: self.instance,
            name: self.name.clone(),
            description: self.description.clone(),
            path: self.path.clone(),
            file_type: self.file_type.clone(),
            access,
            writable: self.writable && may_write,
            max_size: self.max_size,
        })
    }
}

/// `ethernet = { … }` in a `[[device]]` or `[[router.port]]`: a BACnet
/// Ethernet port (Clause 7) on a network interface, through a raw socket
/// (CAP_NET_RAW).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EthernetSection {
    /// The network interface, e.g. `eth1`.
    pub interface: String,
}

impl EthernetSection {
    /// The interface name is one Linux could have (1 to 15 octets, no `/`,
    /// whitespace or NUL).
    pub fn validate(&self) -> anyhow::Result<()> {
        let name = &self.interface;
        anyhow::ensure!(
            (1..=15).contains(&name.len())
                && !name.contains(['/', '\0'])
                && !name.chars().any(char::is_whitespace)
                && name != "."
                && name != "..",
            "ethernet.interface {name:?} is not a network interface name (1 to 15 characters, no '/' or spaces)"
        );
        Ok(())
    }
}

/// `bip6 = { … }` in a `[[device]]`: a BACnet/IPv6 port (Annex U).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Bip6Section {
    /// The IPv6 address to bind (default `::1`).
    #[serde(default = "default_bind6")]
    pub bind: std::net::Ipv6Addr,
    /// UDP port (default 47808).
    #[serde(default = "default_port")]
    pub port: u16,
    /// The interface index multicasts use (default 0: the system's choice).
    #[serde(default)]
    pub interface: u32,
    /// The VMAC, as a device instance (a router port's; a device's is its instance).
    pub vmac_instance: Option<u32>,
    /// Broadcast to (and join) the site-local group FF05::BAC0 instead of
    /// the link-local FF02::BAC0 (Annex U.3).
    #[serde(default)]
    pub site_group: bool,
    /// Make the port a BACnet/IPv6 BBMD (Annex U.4).
    pub bbmd: Option<Bbmd6Section>,
}

/// `bbmd = { … }` in a `bip6 = { … }`: the port is a BACnet/IPv6 BBMD,
/// hardened as the IPv4 one (there is no BDT to write over IPv6).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Bbmd6Section {
    /// The peer BBMDs: `[IPV6]:PORT`.
    #[serde(default)]
    pub peers: Vec<String>,
    /// Networks (`IPV6/PREFIX`) whose hosts may register as foreign
    /// devices; none by default.
    #[serde(default)]
    pub foreign_devices: Vec<String>,
    /// Foreign devices registered at once (default 128).
    pub max_foreign_devices: Option<usize>,
    /// The longest time-to-live granted, in seconds (default 3600).
    pub max_ttl: Option<u16>,
    /// Management requests per second one source address may make (default 10).
    pub requests_per_second: Option<u32>,
    /// And at once (default 20).
    pub request_burst: Option<u32>,
}

impl Bbmd6Section {
    /// The peers, parsed.
    pub fn peers(&self) -> anyhow::Result<Vec<std::net::SocketAddrV6>> {
        self.peers
            .iter()
            .map(|p| p.parse().map_err(|_| anyhow::anyhow!("bbmd.peers: {p:?} is not [IPV6]:PORT")))
            .collect()
    }

    /// Apply the rest to a BBMD's settings.
    pub fn apply(&self, c: &mut bacnet::bbmd6::Bbmd6Config) -> anyhow::Result<()> {
        for net in &self.foreign_devices {
            let (ip, prefix) = net.split_once('/').unwrap_or((net, "128"));
            let ip: std::net::Ipv6Addr =
                ip.parse().map_err(|_| anyhow::anyhow!("bbmd.foreign_devices: {net:?} is not IPV6/PREFIX"))?;
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= 128)
                .ok_or_else(|| anyhow::anyhow!("bbmd.foreign_devices: {net:?}: the prefix must be 0..=128"))?;
            c.foreign_devices.push((ip, prefix));
        }
        c.max_foreign_devices = self.max_foreign_devices.unwrap_or(c.max_foreign_devices);
        c.max_ttl = self.max_ttl.unwrap_or(c.max_ttl);
        c.requests_per_second = self.requests_per_second.unwrap_or(c.requests_per_second);
        c.request_burst = self.request_burst.unwrap_or(c.request_burst);
        anyhow::ensure!(c.request_burst >= 1, "bbmd.request_burst must be at least 1");
        Ok(())
    }
}

impl Bip6Section {
    /// Its `bbmd`, if any, parses.
    pub fn check_bbmd(&self) -> anyhow::Result<()> {
        let Some(b) = &self.bbmd else { return Ok(()) };
        let here = std::net::SocketAddrV6::new(self.bind, self.port, 0, 0);
        let mut c = bacnet::bbmd6::Bbmd6Config::new(here, [0; 3], here, b.peers()?);
        b.apply(&mut c)
    }
}

fn default_bind6() -> std::net::Ipv6Addr {
    std::net::Ipv6Addr::LOCALHOST
}

/// `mstp = { … }` in a `[[device]]`: an MS/TP port on a serial device.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MstpSection {
    /// The serial device, e.g. `/dev/ttyUSB0` (8N1).
    pub device: String,
    /// Baud rate (default 38,400).
    #[serde(default = "default_baud")]
    pub baud: u32,
    /// This station's MAC address: 0..=Max_Master for a master, 0..=254
    /// for a slave.
    pub mac: u8,
    /// A slave node (Clause 9.5.7): answers confirmed requests addressed
    /// to it and never takes the token, so it sends no I-Am, I-Have or COV
    /// notification (default false: a master).
    #[serde(default)]
    pub slave: bool,
    /// Max_Master (default 127).
    #[serde(default = "default_max_master")]
    pub max_master: u8,
    /// Max_Info_Frames (default 1).
    #[serde(default = "default_max_info_frames")]
    pub max_info_frames: u8,
    /// RS-485 direction control (default: the adapter switches itself).
    pub rs485: Option<Rs485Section>,
}

/// `rs485 = { mode = … }` in an `mstp = { … }`: who switches the
/// transceiver's driver (`docs/rs485.md`).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(tag = "mode", rename_all = "lowercase", deny_unknown_fields)]
pub enum Rs485Section {
    /// The adapter switches by itself (USB RS-485 adapters).
    Adapter,
    /// The UART driver's RS-485 mode (TIOCSRS485): RTS drives DE.
    Kernel {
        /// RTS high while sending (default true; false: low while sending).
        #[serde(default = "default_true")]
        rts_on_send: bool,
        /// Milliseconds DE is up before the first bit (default 0).
        #[serde(default)]
        delay_before_send_ms: u32,
        /// Milliseconds DE stays up after the last bit (default 0): must
        /// end before the other stations answer (40 bit times).
        #[serde(default)]
        delay_after_send_ms: u32,
    },
    /// A GPIO line drives DE (character-device GPIO interface, v2).
    Gpio {
        /// The chip's device, e.g. `/dev/gpiochip0`.
        chip: PathBuf,
        /// The line's offset on the chip.
        line: u32,
        /// DE is asserted low (default false).
        #[serde(default)]
        active_low: bool,
    },
}

/// The most a driver may be enabled before the first bit: with Tturnaround,
/// under the 15 ms a station has to use the token (Tusage_delay), so the
/// station before it never takes it for dead.
const MAX_RS485_DELAY_BEFORE_MS: u32 = 10;

impl Rs485Section {
    /// The settings fit MS/TP's timing at `baud`.
    pub fn validate(&self, baud: u32) -> anyhow::Result<()> {
        let Rs485Section::Kernel { delay_before_send_ms, delay_after_send_ms, .. } = self else {
            if let Rs485Section::Gpio { chip, .. } = self {
                anyhow::ensure!(chip.is_absolute(), "mstp.rs485.chip must be a device path such as /dev/gpiochip0");
            }
            return Ok(());
        };
        anyhow::ensure!(
            *delay_before_send_ms <= MAX_RS485_DELAY_BEFORE_MS,
            "mstp.rs485.delay_before_send_ms = {delay_before_send_ms} delays every frame, the token's use included: \
             at most {MAX_RS485_DELAY_BEFORE_MS} ms keeps it inside Tusage_delay (15 ms)"
        );
        // Another station may start 40 bit times after our last stop bit.
        let turnaround_us = 40_000_000 / u64::from(baud.max(1));
        anyhow::ensure!(
            u64::from(*delay_after_send_ms) * 1000 < turnaround_us,
            "mstp.rs485.delay_after_send_ms = {delay_after_send_ms} holds the bus after each frame longer than the \
             {turnaround_us} µs (40 bit times at {baud} baud) after which other stations may answer: their answers \
             would collide with our driver; use 0 (the driver drops RTS once the last bit has left)"
        );
        Ok(())
    }

    /// As the MS/TP crate takes it.
    pub fn direction(&self) -> trellis_mstp::DirectionControl {
        match self {
            Rs485Section::Adapter => trellis_mstp::DirectionControl::Adapter,
            Rs485Section::Kernel { rts_on_send, delay_before_send_ms, delay_after_send_ms } => {
                trellis_mstp::DirectionControl::Kernel(trellis_mstp::KernelRs485 {
                    rts_on_send: *rts_on_send,
                    delay_before_send_ms: *delay_before_send_ms,
                    delay_after_send_ms: *delay_after_send_ms,
                })
            }
            Rs485Section::Gpio { chip, line, active_low } => {
                trellis_mstp::DirectionControl::Gpio(trellis_mstp::GpioDriverEnable {
                    chip: chip.clone(),
                    line: *line,
                    active_low: *active_low,
                })
            }
        }
    }
}

impl MstpSection {
    /// Check the settings against MS/TP's ranges.
    pub fn validate(&self) -> anyhow::Result<()> {
        let m = self;
        anyhow::ensure!(!m.device.is_empty(), "mstp.device must name a serial device");
        anyhow::ensure!(m.max_master <= 127, "mstp.max_master must be at most 127");
        if m.slave {
            anyhow::ensure!(m.mac <= 254, "mstp.mac of a slave must be at most 254 (255 is broadcast)");
        } else {
            anyhow::ensure!(m.mac <= m.max_master, "mstp.mac must be at most mstp.max_master");
        }
        anyhow::ensure!(m.max_info_frames >= 1, "mstp.max_info_frames must be at least 1");
        anyhow::ensure!(
            (9_600..=4_000_000).contains(&m.baud),
            "mstp.baud must be 9600..=4000000 (MS/TP: 9600 to 115200)"
        );
        if let Some(r) = &m.rs485 {
            r.validate(m.baud)?;
        }
        Ok(())
    }

    /// The port's settings: the serial device at `baud`, with the
    /// standard's timers and the driver's defaults.
    pub fn port_config(&self) -> trellis_mstp::MstpConfig {
        let mut c = trellis_mstp::MstpConfig::serial(&self.device, self.mac, self.baud);
        c.node.max_master = self.max_master;
        c.node.max_info_frames = self.max_info_frames;
        c.node.slave = self.slave;
        if let (Some(r), trellis_mstp::PortConfig::Serial { direction, .. }) = (&self.rs485, &mut c.port) {
            *direction = r.direction();
        }
        c
    }
}

fn default_baud() -> u32 {
    38_400
}
fn default_max_master() -> u8 {
    127
}
fn default_max_info_frames() -> u8 {
    1
}

fn default_true() -> bool {
    true
}

/// `[device.limits]`; every field optional, defaults in
/// [`crate::server::Limits`].
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// Confirmed requests in progress per peer (default 16); more are
    /// refused with Abort out-of-resources.
    pub max_requests_per_peer: Option<usize>,
    /// Confirmed requests in progress over all peers (default 1024).
    pub max_requests: Option<usize>,
    /// Results in one ReadPropertyMultiple answer (default 256).
    pub max_rpm_results: Option<usize>,
    /// Octets in one ReadPropertyMultiple answer, segmented or not
    /// (default 16384).
    pub max_rpm_octets: Option<usize>,
    /// Objects one device may serve (default 10000).
    pub max_objects: Option<usize>,
    /// COV subscriptions one subscriber may hold (default 64).
    pub max_cov_per_subscriber: Option<usize>,
    /// COV subscriptions over all subscribers (default 4096).
    pub max_cov_subscriptions: Option<usize>,
    /// COV subscriptions over all ports of one IP address (default 1024).
    pub max_cov_per_address: Option<usize>,
    /// The COV table's last places, kept for addresses holding fewer than
    /// `max_cov_per_subscriber` (default 256).
    pub reserved_cov_subscriptions: Option<usize>,
    /// The longest finite COV lifetime accepted, in seconds (default: no
    /// maximum).
    pub max_cov_lifetime: Option<u32>,
    /// Accept indefinite (lifetime 0) COV subscriptions (default true).
    pub allow_indefinite_cov: Option<bool>,
    /// Octets of segmented answers one requester IP address may draw per
    /// second (default 262144; 0: no bound). The bound that keeps a spoofed
    /// request from turning the device into a reflection amplifier.
    pub answer_octets_per_second: Option<u32>,
    /// What one requester IP address may draw at once (default 524288).
    pub answer_burst_octets: Option<u32>,
}

impl LimitsSection {
    /// The limits in force: these settings over the defaults.
    pub fn resolve(&self) -> anyhow::Result<crate::server::Limits> {
        let d = crate::server::Limits::default();
        let l = crate::server::Limits {
            max_requests_per_peer: self.max_requests_per_peer.unwrap_or(d.max_requests_per_peer),
            max_requests: self.max_requests.unwrap_or(d.max_requests),
            max_rpm_results: self.max_rpm_results.unwrap_or(d.max_rpm_results),
            max_rpm_octets: self.max_rpm_octets.unwrap_or(d.max_rpm_octets),
            max_objects: self.max_objects.unwrap_or(d.max_objects),
            max_cov_per_subscriber: self.max_cov_per_subscriber.unwrap_or(d.max_cov_per_subscriber),
            max_cov_subscriptions: self.max_cov_subscriptions.unwrap_or(d.max_cov_subscriptions),
            max_cov_per_address: self.max_cov_per_address.unwrap_or(d.max_cov_per_address),
            reserved_cov_subscriptions: self.reserved_cov_subscriptions.unwrap_or(d.reserved_cov_subscriptions),
            max_cov_lifetime: self.max_cov_lifetime.or(d.max_cov_lifetime),
            allow_indefinite_cov: self.allow_indefinite_cov.unwrap_or(d.allow_indefinite_cov),
            answer_octets_per_second: self.answer_octets_per_second.unwrap_or(d.answer_octets_per_second),
            answer_burst_octets: self.answer_burst_octets.unwrap_or(d.answer_burst_octets),
        };
        anyhow::ensure!(
            (1..=255).contains(&l.max_requests_per_peer),
            "limits.max_requests_per_peer must be 1..=255 (one per invoke ID)"
        );
        anyhow::ensure!(
            l.max_requests >= l.max_requests_per_peer,
            "limits.max_requests must be ≥ max_requests_per_peer"
        );
        anyhow::ensure!(l.max_rpm_results >= 1, "limits.max_rpm_results must be ≥ 1");
        anyhow::ensure!(l.max_rpm_octets >= 1, "limits.max_rpm_octets must be ≥ 1");
        anyhow::ensure!(l.max_objects >= 1, "limits.max_objects must be ≥ 1");
        anyhow::ensure!(l.max_cov_per_address >= 1, "limits.max_cov_per_address must be ≥ 1");
        anyhow::ensure!(
            l.reserved_cov_subscriptions < l.max_cov_subscriptions.max(1),
            "limits.reserved_cov_subscriptions must be below max_cov_subscriptions"
        );
        anyhow::ensure!(
            l.max_cov_lifetime.is_none_or(|s| s >= 1),
            "limits.max_cov_lifetime must be ≥ 1 second (leave it out for no maximum)"
        );
        anyhow::ensure!(
            l.answer_octets_per_second == 0 || l.answer_burst_octets >= 1476,
            "limits.answer_burst_octets must be ≥ 1476 (one segment) while answers are budgeted"
        );
        Ok(l)
    }
}

fn default_bind() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    trellis_bip::DEFAULT_PORT
}
fn default_vendor() -> u16 {
    999
}
fn default_plugin() -> String {
    "builtin:demo-building".into()
}
fn default_tick() -> u64 {
    1000
}
fn default_memory() -> u64 {
    64
}
fn default_deadline() -> u64 {
    100
}

impl Default for DeviceSection {
    fn default() -> Self {
        DeviceSection {
            bind: default_bind(),
            port: default_port(),
            instance: None,
            vendor_id: default_vendor(),
            plugin: default_plugin(),
            data_dir: None,
            tick_ms: default_tick(),
            memory_mb: default_memory(),
            deadline_ms: default_deadline(),
            watch: false,
            limits: LimitsSection::default(),
            password: None,
            accept_time_sync: true,
            mstp: None,
            virtual_network: None,
            bbmd: None,
            bip6: None,
            sc: None,
            ethernet: None,
            files: Vec::new(),
            notification_classes: Vec::new(),
            schedules: Vec::new(),
            calendars: Vec::new(),
            restart_notification_recipients: Vec::new(),
            create_objects: Vec::new(),
            persistence: None,
        }
    }
}

/// Where a device's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginRef {
    /// Compiled into the binary.
    Builtin(&'static str),
    /// A component file.
    File(PathBuf),
}

impl DeviceSection {
    /// Resolve `plugin` (relative paths against `base`).
    pub fn plugin_ref(&self, base: &Path) -> anyhow::Result<PluginRef> {
        match self.plugin.strip_prefix("builtin:") {
            Some("demo-building") => Ok(PluginRef::Builtin("demo-building")),
            Some("bulk-objects") => Ok(PluginRef::Builtin("bulk-objects")),
            Some(other) => anyhow::bail!("unknown built-in plugin `{other}` (built in: demo-building, bulk-objects)"),
            None => Ok(PluginRef::File(base.join(&self.plugin))),
        }
    }

    /// Whether DeviceCommunicationControl and ReinitializeDevice are open to
    /// anyone who can reach this device: it has no `password` (the standard
    /// then accepts any), and it is reachable from beyond this host — bound
    /// to an address other than loopback, or on an MS/TP line. `trellis run`
    /// warns about each such device once, at start-up.
    pub fn management_open_to_the_network(&self) -> bool {
        if self.password.is_some() {
            return false;
        }
        if self.mstp.is_some() {
            return true;
        }
        let ip = self.bind.split('/').next().unwrap_or_default();
        !ip.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl Config {
    /// One device: the built-in demo building on 127.0.0.1:47808.
    pub fn embedded() -> Self {
        Config {
            engine: EngineSection::default(),
            devices: vec![DeviceSection::default()],
            policy: PolicySection::default(),
            router: None,
            mqtt: None,
            opcua: None,
            opcua_clients: Vec::new(),
            apps: Vec::new(),
            remotes: Vec::new(),
            client: crate::app::ClientSection::default(),
            http: None,
        }
    }

    /// Parse a configuration; errors name the line and the key.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let c: Config = toml::from_str(text)?;
        c.validate()?;
        Ok(c)
    }

    /// Read and parse a configuration file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(!self.devices.is_empty() || self.router.is_some(), "no [[device]] to serve (and no [router])");
        if let Some(h) = &self.http {
            h.check()?;
        }
        if let Some(m) = &self.mqtt {
            m.validate()?;
        }
        for (i, c) in self.opcua_clients.iter().enumerate() {
            c.validate().map_err(|e| anyhow::anyhow!("[[opcua_client]] {}: {e}", i + 1))?;
        }
        if let Some(o) = &self.opcua {
            o.settings(Path::new("."), Path::new(".")).map_err(|e| anyhow::anyhow!("[opcua] {e}"))?;
        }
        self.policy.validate().map_err(anyhow::Error::msg)?;
        let mut ports = std::collections::HashSet::new();
        let mut serial = std::collections::HashSet::new();
        let mut virtual_macs = std::collections::HashSet::new();
        let mut ports6 = std::collections::HashSet::new();
        let mut hub_functions = std::collections::HashSet::new();
        let mut interfaces = std::collections::HashSet::new();
        if let Some(router) = &self.router {
            anyhow::ensure!(!router.ports.is_empty(), "[router] needs at least one [[router.port]]");
            let mut networks = std::collections::HashSet::new();
            let mut addresses = std::collections::HashSet::new();
            for (i, p) in router.ports.iter().enumerate() {
                let n = i + 1;
                anyhow::ensure!(
                    (1..=65534).contains(&p.network) && networks.insert(p.network),
                    "router port {n}: network must be 1..=65534 and differ from the other ports'"
                );
                if let Some(sc) = &p.sc {
                    anyhow::ensure!(
                        p.mstp.is_none() && p.bbmd.is_none() && p.bip6.is_none() && p.ethernet.is_none(),
                        "router port {n}: a BACnet/SC port has no mstp, bip6, ethernet or bbmd"
                    );
                    sc.validate().map_err(|e| anyhow::anyhow!("router port {n}: {e}"))?;
                    if let Some(h) = &sc.hub_function {
                        anyhow::ensure!(hub_functions.insert(h.clone()), "router port {n}: hub_function {h} is taken");
                    }
                    continue;
                }
                if let Some(e) = &p.ethernet {
                    anyhow::ensure!(
                        p.mstp.is_none() && p.bbmd.is_none() && p.bip6.is_none(),
                        "router port {n}: a BACnet Ethernet port has no mstp, bip6, sc or bbmd"
                    );
                    e.validate().map_err(|e| anyhow::anyhow!("router port {n}: {e}"))?;
                    anyhow::ensure!(
                        interfaces.insert(e.interface.clone()),
                        "router port {n}: interface {} is already used by another Ethernet port",
                        e.interface
                    );
                    continue;
                }
                if let Some(b) = &p.bip6 {
                    anyhow::ensure!(
                        p.mstp.is_none() && p.bbmd.is_none(),
                        "router port {n}: a BACnet/IPv6 port has no mstp or (IPv4) bbmd"
                    );
                    anyhow::ensure!(
                        ports6.insert((b.bind, b.port)) && b.port != 0,
                        "router port {n}: [{}]:{} is 0 or used by another port",
                        b.bind,
                        b.port
                    );
                    b.check_bbmd().map_err(|e| anyhow::anyhow!("router port {n}: {e}"))?;
                    continue;
                }
                if let Some(m) = &p.mstp {
                    anyhow::ensure!(p.bbmd.is_none(), "router port {n}: a BBMD is a B/IP port's, not an MS/TP port's");
                    m.validate().map_err(|e| anyhow::anyhow!("router port {n}: {e}"))?;
                    anyhow::ensure!(!m.slave, "router port {n}: a router's MS/TP port is a master (slave = false)");
                    anyhow::ensure!(
                        serial.insert(m.device.clone()),
                        "router port {n}: {} is already used by another port",
                        m.device
                    );
                    continue;
                }
                let bip = trellis_bip::BipConfig::from_cidr(&p.bind, p.port)
                    .map_err(|e| anyhow::anyhow!("router port {n}: bind: {e}"))?;
                if let Some(b) = &p.bbmd {
                    b.resolve(bip.bind, std::net::SocketAddrV4::new(bip.broadcast_ip(), p.port))
                        .map_err(|e| anyhow::anyhow!("router port {n}: {e}"))?;
                }
                anyhow::ensure!(
                    p.port != 0 && addresses.insert((p.bind.clone(), p.port)),
                    "router port {n}: {}:{} is 0 or used by another router port",
                    p.bind,
                    p.port
                );
            }
            for (i, p) in router.policies.iter().enumerate() {
                let n = i + 1;
                p.fails_open().map_err(|e| anyhow::anyhow!("router policy {n}: {e}"))?;
                p.plugin_ref(Path::new(".")).map_err(|e| anyhow::anyhow!("router policy {n}: {e}"))?;
                anyhow::ensure!(
                    (1..=1000).contains(&p.deadline_ms),
                    "router policy {n}: deadline_ms must be 1..=1000 (the router waits for every call)"
                );
                anyhow::ensure!((1..=4096).contains(&p.memory_mb), "router policy {n}: memory_mb must be 1..=4096");
            }
            let routed_networks = router.ports.len()
                + self.devices.iter().filter_map(|d| d.virtual_network).collect::<std::collections::HashSet<_>>().len();
            anyhow::ensure!(
                routed_networks >= 2,
                "[router] joins networks: give it two [[router.port]]s, or devices with a virtual_network"
            );
        }
        for (i, d) in self.devices.iter().enumerate() {
            let n = i + 1;
            anyhow::ensure!(
                d.instance.is_none_or(|i| i < bacnet::ObjectIdentifier::MAX_INSTANCE),
                "device {n}: instance must be 0..=4194302"
            );
            anyhow::ensure!(d.tick_ms >= 10, "device {n}: tick_ms must be at least 10");
            d.limits.resolve().map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
            anyhow::ensure!(
                d.password.as_ref().is_none_or(|p| (1..=20).contains(&p.chars().count())),
                "device {n}: password must be 1 to 20 characters (what DeviceCommunicationControl can carry)"
            );
            anyhow::ensure!((1..=4096).contains(&d.memory_mb), "device {n}: memory_mb must be 1..=4096");
            anyhow::ensure!((1..=60_000).contains(&d.deadline_ms), "device {n}: deadline_ms must be 1..=60000");
            if let Some(net) = d.virtual_network {
                let Some(router) = &self.router else {
                    anyhow::bail!(
                        "device {n}: virtual_network {net} needs a [router] with at least one [[router.port]]"
                    );
                };
                anyhow::ensure!(
                    d.mstp.is_none() && d.sc.is_none() && d.ethernet.is_none(),
                    "device {n}: a device is on MS/TP, on BACnet/SC, on Ethernet or on a virtual network, not two of them"
                );
                anyhow::ensure!(
                    (1..=65534).contains(&net) && router.ports.iter().all(|p| p.network != net),
                    "device {n}: virtual_network {net} must be 1..=65534 and not a router port's network"
                );
                anyhow::ensure!(
                    d.instance.is_some(),
                    "device {n}: a device on a virtual network needs its `instance` (its MAC there)"
                );
                let instance = d.instance.unwrap_or_default();
                anyhow::ensure!(
                    virtual_macs.insert((net, instance)),
                    "device {n}: instance {instance} is already on virtual network {net}"
                );
                continue;
            }
            if let Some(sc) = &d.sc {
                sc.validate().map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
                anyhow::ensure!(
                    d.mstp.is_none() && d.bip6.is_none() && d.bbmd.is_none() && d.ethernet.is_none(),
                    "device {n}: a BACnet/SC device has no mstp, bip6, ethernet or bbmd"
                );
                if let Some(h) = &sc.hub_function {
                    anyhow::ensure!(
                        hub_functions.insert(h.clone()),
                        "device {n}: hub_function {h} is already another device's"
                    );
                }
                continue;
            }
            if let Some(e) = &d.ethernet {
                e.validate().map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
                anyhow::ensure!(
                    d.mstp.is_none() && d.bip6.is_none() && d.bbmd.is_none(),
                    "device {n}: a BACnet Ethernet device has no mstp, bip6 or bbmd"
                );
                anyhow::ensure!(
                    interfaces.insert(e.interface.clone()),
                    "device {n}: interface {} is already used by another Ethernet port (one device per port)",
                    e.interface
                );
                continue;
            }
            if let Some(b) = &d.bip6 {
                b.check_bbmd().map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
                anyhow::ensure!(
                    d.mstp.is_none() && d.virtual_network.is_none() && d.bbmd.is_none(),
                    "device {n}: a BACnet/IPv6 device has no mstp, virtual_network or (IPv4) bbmd"
                );
                anyhow::ensure!(
                    d.instance.is_some(),
                    "device {n}: a BACnet/IPv6 device needs its `instance` (its VMAC)"
                );
                anyhow::ensure!(
                    b.port == 0 || ports6.insert((b.bind, b.port)),
                    "device {n}: [{}]:{} is already used by another device (one device per port)",
                    b.bind,
                    b.port
                );
                continue;
            }
            if let Some(m) = &d.mstp {
                m.validate().map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
                anyhow::ensure!(
                    serial.insert(m.device.clone()),
                    "device {n}: {} is already used by another device (one device per port)",
                    m.device
                );
                continue;
            }
            let bip = trellis_bip::BipConfig::from_cidr(&d.bind, d.port)
                .map_err(|e| anyhow::anyhow!("device {n}: bind: {e}"))?;
            if let Some(b) = &d.bbmd {
                anyhow::ensure!(
                    self.router.as_ref().is_none_or(|r| r.port_of(d).is_none()),
                    "device {n}: on a router port, the BBMD is the router port's (`bbmd` in its [[router.port]])"
                );
                b.resolve(bip.bind, std::net::SocketAddrV4::new(bip.broadcast_ip(), d.port))
                    .map_err(|e| anyhow::anyhow!("device {n}: {e}"))?;
            }
            anyhow::ensure!(
                d.port == 0 || ports.insert((d.bind.clone(), d.port)),
                "device {n}: {}:{} is already used by another device (one device per port)",
                d.bind,
                d.port
            );
        }
        Ok(())
    }
}

/// A `create_objects` entry: an object type by its standard name. The
/// host's own objects other than Schedule and Calendar (Device, Network
/// Port, Notification Class, File) are never created by a client.
pub fn creatable_type(name: &str) -> anyhow::Result<bacnet::ObjectType> {
    use anyhow::Context;
    use bacnet::ObjectType as T;
    let t = T::from_name(name)
        .filter(|t| t.is_known())
        .with_context(|| format!("{name:?} is not an object type (e.g. \"analog-value\", \"schedule\")"))?;
    anyhow::ensure!(
        ![T::DEVICE, T::NETWORK_PORT, T::NOTIFICATION_CLASS, T::FILE].contains(&t),
        "{t} objects are the host's: a client cannot create them"
    );
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_file_takes_the_defaults() {
        let c = Config::parse("[[device]]\nport = 47900\n").unwrap();
        assert_eq!(c.devices[0].plugin, "builtin:demo-building");
        assert_eq!(c.devices[0].port, 47900);
    }

    #[test]
    fn mistakes_are_named() {
        let e = Config::parse("[[device]]\nprot = 1\n").unwrap_err().to_string();
        assert!(e.contains("prot"), "{e}");
        let e = Config::parse("[[device]]\nport = 47900\n[[device]]\nport = 47900\n").unwrap_err().to_string();
        assert!(e.contains("one device per port"), "{e}");
        let mstp = "[[device]]\nmstp = { device = \"/dev/ttyUSB0\", baud = 38400, mac = 5, max_master = 127, max_info_frames = 1 }\n";
        let c = Config::parse(mstp).unwrap();
        let m = c.devices[0].mstp.as_ref().unwrap();
        assert_eq!(
            (m.device.as_str(), m.baud, m.mac, m.max_master, m.max_info_frames),
            ("/dev/ttyUSB0", 38400, 5, 127, 1)
        );
        let port = m.port_config();
        assert_eq!((port.node.this_station, port.node.baud, port.node.max_master), (5, 38400, 127));
        let c = Config::parse("[[device]]\nmstp = { device = \"/dev/ttyS1\", mac = 3 }\n").unwrap();
        assert_eq!(c.devices[0].mstp.as_ref().unwrap().baud, 38400);
        let e = Config::parse("[[device]]\nmstp = { device = \"/dev/ttyS1\", mac = 9, max_master = 8 }\n").unwrap_err();
        assert!(e.to_string().contains("mstp.mac"), "{e}");
        let slave = Config::parse("[[device]]\nmstp = { device = \"/dev/ttyS1\", mac = 200, slave = true }\n").unwrap();
        assert!(slave.devices[0].mstp.as_ref().unwrap().port_config().node.slave);
        let e = Config::parse("[[device]]\nmstp = { device = \"/dev/ttyS1\", mac = 255, slave = true }\n").unwrap_err();
        assert!(e.to_string().contains("slave"), "{e}");
        let twice = format!("{mstp}{mstp}");
        let e = Config::parse(&twice).unwrap_err().to_string();
        assert!(e.contains("one device per port"), "{e}");
        let e = Config::parse("[[device]]\ninstance = 4194303\n").unwrap_err().to_string();
        assert!(e.contains("instance"), "{e}");
        assert!(Config::parse("device = []\n").is_err());
    }

    #[test]
    fn rs485_direction_control_parses_and_its_timing_is_checked_against_the_baud() {
        let port = |rs485: &str, baud: u32| {
            let text =
                format!("[[device]]\nmstp = {{ device = \"/dev/ttyS1\", mac = 3, baud = {baud}, rs485 = {rs485} }}\n");
            Config::parse(&text).map(|c| c.devices[0].mstp.as_ref().unwrap().port_config().port)
        };
        let direction = |p: trellis_mstp::PortConfig| match p {
            trellis_mstp::PortConfig::Serial { direction, .. } => direction,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            direction(port("{ mode = \"kernel\", delay_before_send_ms = 1 }", 38400).unwrap()),
            trellis_mstp::DirectionControl::Kernel(trellis_mstp::KernelRs485 {
                rts_on_send: true,
                delay_before_send_ms: 1,
                delay_after_send_ms: 0
            })
        );
        assert_eq!(
            direction(
                port("{ mode = \"gpio\", chip = \"/dev/gpiochip0\", line = 17, active_low = true }", 38400).unwrap()
            ),
            trellis_mstp::DirectionControl::Gpio(trellis_mstp::GpioDriverEnable {
                chip: "/dev/gpiochip0".into(),
                line: 17,
                active_low: true
            })
        );
        assert_eq!(direction(port("{ mode = \"adapter\" }", 38400).unwrap()), trellis_mstp::DirectionControl::Adapter);
        // 1 ms after the last bit is inside 40 bit times at 38,400 baud (1,041 µs), not at 57,600 (694 µs).
        assert!(port("{ mode = \"kernel\", delay_after_send_ms = 1 }", 38400).is_ok());
        let e = port("{ mode = \"kernel\", delay_after_send_ms = 1 }", 57600).unwrap_err().to_string();
        assert!(e.contains("694 µs") && e.contains("collide"), "{e}");
        let e = port("{ mode = \"kernel\", delay_before_send_ms = 11 }", 38400).unwrap_err().to_string();
        assert!(e.contains("delay_before_send_ms = 11"), "{e}");
        let e = port("{ mode = \"gpio\", chip = \"gpiochip0\", line = 1 }", 38400).unwrap_err().to_string();
        assert!(e.contains("/dev/gpiochip0"), "{e}");
        let e = port("{ mode = \"magic\" }", 38400).unwrap_err().to_string();
        assert!(e.contains("magic"), "{e}");
        let e = port("{ mode = \"kernel\", line = 3 }", 38400).unwrap_err().to_string();
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn management_without_a_password_is_open_only_beyond_loopback() {
        let device = |text: &str| Config::parse(&format!("[[device]]\n{text}")).unwrap().devices.remove(0);
        assert!(!device("").management_open_to_the_network(), "the default binds 127.0.0.1");
        assert!(!device("bind = \"127.0.0.2/8\"\n").management_open_to_the_network());
        assert!(device("bind = \"0.0.0.0\"\n").management_open_to_the_network());
        assert!(device("bind = \"192.168.1.10/24\"\n").management_open_to_the_network());
        assert!(!device("bind = \"192.168.1.10/24\"\npassword = \"s3cret\"\n").management_open_to_the_network());
        assert!(device("mstp = { device = \"/dev/ttyS1\", mac = 3 }\n").management_open_to_the_network());
        let guarded = "mstp = { device = \"/dev/ttyS1\", mac = 3 }\npassword = \"s3cret\"\n";
        assert!(!device(guarded).management_open_to_the_network());
    }

    #[test]
    fn policy_defaults_and_key_checks() {
        let c = Config::parse("[[device]]\n").unwrap();
        assert_eq!(c.policy, PolicySection::default());
        assert!(!c.policy.allow_unsigned && c.policy.trusted_keys.is_empty());
        let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
        let c =
            Config::parse(&format!("[[device]]\n[policy]\ntrusted_keys = [\"{key}\"]\nmax_memory_mb = 128\n")).unwrap();
        assert_eq!((c.policy.trusted_keys.len(), c.policy.max_memory_mb), (1, 128));
        let e = Config::parse("[[device]]\n[policy]\ntrusted_keys = [\"abc\"]\n").unwrap_err().to_string();
        assert!(e.contains("trusted_keys[0]"), "{e}");
        let e = Config::parse("[[device]]\n[policy]\nallow_unsgned = true\n").unwrap_err().to_string();
        assert!(e.contains("allow_unsgned"), "{e}");
    }
}
