//! The port sections of a `[[device]]` or `[[router.port]]`: a BBMD on a
//! B/IP port, BACnet/IPv6, Ethernet, MS/TP and its RS-485 settings.
//!
//! Must never: accept a setting the port cannot honour (each `validate`
//! names the field and why).

use super::*;
use serde::Deserialize;

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

pub(super) fn default_true() -> bool {
    true
}
