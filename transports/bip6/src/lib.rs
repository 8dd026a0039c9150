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
//! sender's VMAC, notices another station using ours (counted and logged,
//! as Annex U.5 asks of a duplicate), and hands NPDUs up with the sender's
//! VMAC.
//!
//! Broadcasts go to the link-local group FF02::BAC0 on the configured
//! interface (Annex U.3), or the site-local FF05::BAC0
//! ([`Bip6Config::site_group`]); on `lo`, which has no multicast route,
//! joining fails and is logged: unicast still works, so do directed Who-Is
//! and Virtual-Address-Resolution.
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
    /// system's choice).
    pub interface: u32,
}

impl Bip6Config {
    /// `ip`:`port` with the VMAC of device `instance`.
    pub fn new(ip: Ipv6Addr, port: u16, instance: u32) -> Self {
        Bip6Config {
            bind: SocketAddrV6::new(ip, port, 0, 0),
            vmac: bacnet::bvll6::vmac_of_instance(instance),
            site_group: false,
            interface: 0,
        }
    }
}

/// The VMAC table a port's two halves share.
pub(crate) type VmacTable = Arc<Mutex<HashMap<Vmac, SocketAddrV6>>>;

/// Make the port a BBMD (Annex U.4): from now on its receiving side hands
/// every BVLL message to the BBMD, which forwards broadcasts to its peers
/// and foreign devices and answers registrations instead of the plain
/// node's NAKs, and its sending side has the BBMD forward the node's own
/// broadcasts. The configuration's `local`, `vmac` and `group` are the
/// port's. Returns the BBMD, for its table and counters.
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
    if let Err(e) = s.join_multicast_v6(&group_ip, config.interface) {
        tracing::warn!(
            bind = %config.bind, error = %e,
            "cannot join the BACnet/IPv6 multicast group {group_ip}: broadcasts will not be heard (unicast works)"
        );
    }
    let _ = s.set_multicast_if_v6(config.interface);
    let socket = Arc::new(UdpSocket::from_std(s.into())?);
    let local = match socket.local_addr()? {
        SocketAddr::V6(a) => a,
        SocketAddr::V4(_) => unreachable!("bound an IPv6 socket"),
    };
    let table: VmacTable = Arc::default();
    let group = SocketAddrV6::new(group_ip, local.port(), 0, config.interface);
    let stats: Arc<Bip6Stats> = Arc::default();
    let handle = Bip6Handle::new(socket.clone(), local, config.vmac, group, table.clone(), stats.clone());
    let driver = Bip6Driver::new(socket, local, config.vmac, table, stats);
    Ok((handle, driver))
}
