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

mod device;
mod ports;
mod router;

pub use device::*;
pub use ports::*;
pub use router::*;
// Defaults more than one section takes.
use device::{default_bind, default_port};
use ports::default_true;

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
