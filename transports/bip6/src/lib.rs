//! BACnet/IPv6 (Annex U) for Trellis: one UDP socket over IPv6, the port's
//! virtual MAC address (VMAC, 3 octets: by default the device instance),
//! the table of the VMACs heard and where they live, and the resolution
//! messages that fill it.
//!
//! [`bind`] returns a [`Bip6Handle`] (send: to a VMAC, or to the multicast
//! group for a broadcast) and a [`Bip6Driver`] (receive, run to completion
//! on the caller's task: wait for [`Bip6Driver::readable`], take what is
//! there with [`Bip6Driver::drain`]). The driver answers Address-Resolution
//! for our VMAC and Virtual-Address-Resolution itself, learns every
//! sender's VMAC, notices another station using ours (counted and logged;
//! a random VMAC, [`Bip6Config::random`], is then replaced by another, as
//! Annex U.5 asks; the first one is probed with an Address-Resolution at start),
//! and hands NPDUs up with the sender's VMAC.
//!
//! Broadcasts go to the link-local group FF02::BAC0 on the configured
//! interface (Annex U.3), or the site-local FF05::BAC0
//! ([`Bip6Config::site_group`]). A port bound to a unicast address also
//! listens on a receive-only socket bound to the group (Linux gives a
//! group's datagrams only to sockets bound to it or to `::`). On `lo`,
//! which has no multicast route, joining fails and is logged: unicast
//! still works, so do directed Who-Is and Virtual-Address-Resolution.
//!
//! A port can be a BBMD ([`enable_bbmd`], `bbmd`: the core's
//! [`bacnet::bbmd6::Bbmd6`] behind a lock), and a port can be a foreign
//! device of a BBMD ([`Bip6Handle::register_foreign_device`]: its
//! broadcasts then go to the BBMD as Distribute-Broadcast-To-Network).
//!
//! Must never: block on a send from the receiving side (answers to
//! resolution requests go without waiting, dropped when the buffer is
//! full), or keep more than [`MAX_VMACS`] table entries.

mod bbmd;
mod driver;
mod handle;

pub use bbmd::PortBbmd6;
pub use driver::{Bip6Driver, Bip6Stats, Inbound};
pub use handle::Bip6Handle;

use bacnet::bvll6::Vmac;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::HashMap;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::sync::{Arc, Mutex};
use tokio::net::UdpSocket;

/// The standard BACnet/IPv6 UDP port, 0xBAC0.
pub const DEFAULT_PORT: u16 = 47808;
/// The link-local BACnet multicast group (Annex U.3).
pub const LINK_LOCAL_GROUP: Ipv6Addr = Ipv6Addr::new(0xFF02, 0, 0, 0, 0, 0, 0, 0xBAC0);
/// The site-local BACnet multicast group (Annex U.3).
pub const SITE_LOCAL_GROUP: Ipv6Addr = Ipv6Addr::new(0xFF05, 0, 0, 0, 0, 0, 0, 0xBAC0);
/// VMACs remembered at most; beyond, the oldest-learned is forgotten.
pub const MAX_VMACS: usize = 4096;

/// Where a BACnet/IPv6 port binds and what it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bip6Config {
    /// The address and UDP port to bind (port 0 picks a free one).
    pub bind: SocketAddrV6,
    /// Our VMAC.
    pub vmac: Vmac,
    /// Broadcast to (and join) the site-local group FF05::BAC0 instead of
    /// the link-local FF02::BAC0.
    pub site_group: bool,
    /// The interface index multicasts go out of and are joined on (0: the
    /// interface that has the bound address, else the system's choice).
    pub interface: u32,
    /// Pick a random VMAC (`vmac` is then ignored) and pick another when a
    /// station turns out to use it (Annex U.5). Random VMACs are drawn from
    /// 0x400000–0xFFFFFE, above every device instance's VMAC.
    pub random_vmac: bool,
}

impl Bip6Config {
    /// `ip`:`port` with the VMAC of device `instance`.
    pub fn new(ip: Ipv6Addr, port: u16, instance: u32) -> Self {
        Bip6Config {
            bind: SocketAddrV6::new(ip, port, 0, 0),
            vmac: bacnet::bvll6::vmac_of_instance(instance),
            site_group: false,
            interface: 0,
            random_vmac: false,
        }
    }

    /// `ip`:`port` with a random VMAC, replaced on a duplicate (a client,
    /// or a router port without a device instance of its own).
    pub fn random(ip: Ipv6Addr, port: u16) -> Self {
        Bip6Config { random_vmac: true, ..Self::new(ip, port, 0) }
    }
}

/// The lowest random VMAC: one above the VMAC of the highest device instance.
pub const RANDOM_VMAC_MIN: u32 = 0x40_0000;
/// The highest random VMAC (0xFFFFFF is left alone).
pub const RANDOM_VMAC_MAX: u32 = 0xFF_FFFE;

/// A random VMAC in [`RANDOM_VMAC_MIN`]..=[`RANDOM_VMAC_MAX`], from the
/// process's randomly keyed hasher (each call draws a new key).
pub fn random_vmac() -> Vmac {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let span = u64::from(RANDOM_VMAC_MAX - RANDOM_VMAC_MIN + 1);
    let v = RANDOM_VMAC_MIN + (h.finish() % span) as u32;
    let b = v.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// Our VMAC, which the port's two halves share: a random one is replaced
/// when another station turns out to use it.
#[derive(Debug)]
pub(crate) struct OurVmac {
    value: std::sync::atomic::AtomicU32,
    random: bool,
}

impl OurVmac {
    fn new(vmac: Vmac, random: bool) -> Self {
        OurVmac { value: u32::from_be_bytes([0, vmac[0], vmac[1], vmac[2]]).into(), random }
    }

    pub(crate) fn get(&self) -> Vmac {
        let b = self.value.load(std::sync::atomic::Ordering::Relaxed).to_be_bytes();
        [b[1], b[2], b[3]]
    }

    /// Another station uses our VMAC: a random one is replaced by a new
    /// random one (returned); a configured one stays (`None`).
    pub(crate) fn on_duplicate(&self) -> Option<Vmac> {
        if !self.random {
            return None;
        }
        let new = random_vmac();
        self.value.store(u32::from_be_bytes([0, new[0], new[1], new[2]]), std::sync::atomic::Ordering::Relaxed);
        Some(new)
    }
}

/// The VMAC table a port's two halves share.
pub(crate) type VmacTable = Arc<Mutex<HashMap<Vmac, SocketAddrV6>>>;

/// Make the port a BBMD (Annex U.4): from now on its receiving side hands
/// every BVLL message to the BBMD, which forwards broadcasts to its peers
/// and foreign devices and answers registrations instead of the plain
/// node's NAKs, and its sending side has the BBMD forward the node's own
/// broadcasts. The configuration's `local`, `vmac` and `group` are the
/// port's (a BBMD's port has a configured VMAC: a random one, replaced on a
/// duplicate, would leave the BBMD with the old one). Returns the BBMD, for
/// its table and counters.
pub fn enable_bbmd(
    handle: &mut Bip6Handle,
    driver: &mut Bip6Driver,
    peers: Vec<SocketAddrV6>,
    configure: impl FnOnce(&mut bacnet::bbmd6::Bbmd6Config),
) -> Arc<PortBbmd6> {
    let mut config = bacnet::bbmd6::Bbmd6Config::new(handle.local_addr(), handle.vmac(), handle.group(), peers);
    configure(&mut config);
    let bbmd = Arc::new(PortBbmd6::new(config));
    handle.bbmd = Some(bbmd.clone());
    driver.bbmd = Some(bbmd.clone());
    bbmd
}

/// Open the port.
pub fn bind(config: &Bip6Config) -> std::io::Result<(Bip6Handle, Bip6Driver)> {
    let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_only_v6(true)?;
    s.set_nonblocking(true)?;
    let _ = s.set_recv_buffer_size(1 << 20);
    s.bind(&SocketAddr::V6(config.bind).into())?;
    let group_ip = if config.site_group { SITE_LOCAL_GROUP } else { LINK_LOCAL_GROUP };
    // Multicast needs an interface: the configured one, else the bound
    // address's scope (a link-local address's), else the one that has it.
    let interface = match (config.interface, config.bind.scope_id()) {
        (0, 0) => interface_of(config.bind.ip()).unwrap_or(0),
        (0, scope) => scope,
        (i, _) => i,
    };
    if let Err(e) = s.join_multicast_v6(&group_ip, interface) {
        tracing::warn!(
            bind = %config.bind, error = %e,
            "cannot join the BACnet/IPv6 multicast group {group_ip}: broadcasts will not be heard (unicast works)"
        );
    }
    let _ = s.set_multicast_if_v6(interface);
    let socket = Arc::new(UdpSocket::from_std(s.into())?);
    let local = match socket.local_addr()? {
        SocketAddr::V6(a) => a,
        SocketAddr::V4(_) => unreachable!("bound an IPv6 socket"),
    };
    let group_rx = if local.ip().is_unspecified() || local.ip().is_loopback() {
        None
    } else {
        group_socket(group_ip, local.port(), interface)
    };
    let table: VmacTable = Arc::default();
    let group = SocketAddrV6::new(group_ip, local.port(), 0, interface);
    let stats: Arc<Bip6Stats> = Arc::default();
    let vmac = Arc::new(OurVmac::new(if config.random_vmac { random_vmac() } else { config.vmac }, config.random_vmac));
    if config.random_vmac {
        // Is it taken? A station that has it answers the Address-Resolution
        // (the driver then picks another, as for any duplicate heard later).
        let v = vmac.get();
        let mut probe = Vec::with_capacity(10);
        let ask = bacnet::bvll6::Bvll6::AddressResolution { source: v, target: v };
        if ask.encode(&mut probe).is_ok() {
            let _ = socket.try_send_to(&probe, SocketAddr::V6(group));
        }
    }
    let handle = Bip6Handle::new(socket.clone(), local, vmac.clone(), group, table.clone(), stats.clone());
    let driver = Bip6Driver::new(socket, group_rx, local, vmac, table, stats);
    Ok((handle, driver))
}

/// The index of the interface that has address `ip` (from
/// `/proc/net/if_inet6`: 32 hex digits, the index in hex, …, the name).
fn interface_of(ip: &Ipv6Addr) -> Option<u32> {
    if_inet6(ip).map(|(index, _)| index)
}

/// The prefix length of address `ip` on this host's interface that has it
/// (a Network Port's IPv6_Prefix_Length), if one has it.
pub fn prefix_length_of(ip: &Ipv6Addr) -> Option<u8> {
    if_inet6(ip).map(|(_, prefix)| prefix)
}

/// `/proc/net/if_inet6`'s line for `ip`: the interface index and the prefix length.
fn if_inet6(ip: &Ipv6Addr) -> Option<(u32, u8)> {
    if ip.is_unspecified() {
        return None;
    }
    let want = format!("{:032x}", u128::from(*ip));
    let table = std::fs::read_to_string("/proc/net/if_inet6").ok()?;
    table.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        if fields.next()? != want {
            return None;
        }
        let index = u32::from_str_radix(fields.next()?, 16).ok()?;
        let prefix = u8::from_str_radix(fields.next()?, 16).ok()?;
        Some((index, prefix))
    })
}

/// A receive-only socket on `[group]:port`, joined on `interface`: a socket
/// bound to a unicast address is not given the group's datagrams (Linux
/// delivers a multicast only to sockets bound to the group or to `::`).
/// `None`, logged, when the group cannot be joined there.
fn group_socket(group: Ipv6Addr, port: u16, interface: u32) -> Option<UdpSocket> {
    let open = || -> std::io::Result<UdpSocket> {
        let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_only_v6(true)?;
        s.set_nonblocking(true)?;
        s.set_reuse_address(true)?;
        let _ = s.set_recv_buffer_size(1 << 20);
        s.bind(&SocketAddr::V6(SocketAddrV6::new(group, port, 0, interface)).into())?;
        s.join_multicast_v6(&group, interface)?;
        UdpSocket::from_std(s.into())
    };
    match open() {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(%group, port, interface, error = %e, "cannot listen on the BACnet/IPv6 multicast group: broadcasts will not be heard (unicast works)");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interface_of_an_address_is_found_and_of_none_is_not() {
        // `lo` is interface 1 in every network namespace.
        assert_eq!(interface_of(&Ipv6Addr::LOCALHOST), Some(1));
        assert_eq!(prefix_length_of(&Ipv6Addr::LOCALHOST), Some(128));
        assert_eq!(interface_of(&Ipv6Addr::UNSPECIFIED), None);
        assert_eq!(interface_of(&"2001:db8::77".parse().unwrap()), None);
    }
}
