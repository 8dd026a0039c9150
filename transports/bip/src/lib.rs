//! BACnet/IP datalink (ASHRAE 135 Annex J) over tokio UDP.
//!
//! [`bind`] returns a [`BipHandle`] for sending and a [`BipDriver`] the host
//! spawns to receive. The transport knows BVLL framing and nothing above it:
//! it hands NPDUs up with their B/IP source (the original source for a
//! Forwarded-NPDU) and sends NPDUs as Original-Unicast-NPDU or
//! Original-Broadcast-NPDU. It never decodes an NPDU and never routes.
//!
//! Broadcast on Linux needs a socket bound to the broadcast address: a socket
//! bound to 127.0.0.1:47808 does not see datagrams sent to
//! 127.255.255.255:47808. Like bacpypes3 with `--address 127.0.0.1/8`, we bind
//! a second, receive-only socket on the broadcast address and port when the
//! unicast bind address is a specific one. Datagrams from our own unicast
//! address (our broadcasts coming back) are dropped.
//!
//! As a plain B/IP node (not a BBMD) the driver answers the BBMD functions
//! with the NAK result Annex J.2 prescribes and drops malformed datagrams with
//! a `debug` log line naming the fault.

mod bbmd;
mod config;
mod driver;
mod handle;

pub use bacnet::bbmd::{BbmdConfig, BbmdCounters};
pub use bbmd::PortBbmd;
pub use config::{BindError, BipConfig, DEFAULT_PORT};
pub use driver::{BipDriver, DriverStats, Inbound, Received};
pub use handle::{BipHandle, HEADROOM, write_header};

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;
use tokio::net::UdpSocket;

/// Make the port a BBMD (Annex J): from now on its receiving side hands
/// every BVLL message to the BBMD, which forwards broadcasts to its peers
/// and foreign devices and answers the BBMD functions instead of the plain
/// node's NAKs, and its sending side has the BBMD forward the node's own
/// broadcasts. Returns the BBMD, for its tables and counters.
pub fn enable_bbmd(handle: &mut BipHandle, driver: &mut BipDriver, config: BbmdConfig) -> Arc<PortBbmd> {
    let bbmd = Arc::new(PortBbmd::new(config));
    handle.bbmd = Some(bbmd.clone());
    driver.bbmd = Some(bbmd.clone());
    bbmd
}

/// Open the sockets for `config`.
pub fn bind(config: &BipConfig) -> Result<(BipHandle, BipDriver), BindError> {
    let unicast = open_socket(config.bind, false).map_err(|source| BindError::new(config.bind, source))?;
    let local = match unicast.local_addr().map_err(|source| BindError::new(config.bind, source))? {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!("bound an IPv4 socket"),
    };
    let broadcast_port = config.broadcast_port.unwrap_or(local.port());
    let broadcast_target = SocketAddrV4::new(config.broadcast_ip(), broadcast_port);
    if *broadcast_target.ip() == std::net::Ipv4Addr::BROADCAST && !local.ip().is_unspecified() {
        tracing::warn!(
            bind = %local,
            "no network prefix given: broadcasting to 255.255.255.255, and subnet-directed broadcasts \
             (e.g. Who-Is from other tools) will not be received; bind as IP/PREFIX, e.g. 192.168.1.10/24"
        );
    }
    let broadcast_rx =
        if !local.ip().is_unspecified() && *broadcast_target.ip() != *local.ip() && broadcast_port == local.port() {
            Some(open_socket(broadcast_target, true).map_err(|source| BindError::new(broadcast_target, source))?)
        } else {
            None
        };
    let unicast = Arc::new(unicast);
    let driver = BipDriver::new(unicast.clone(), broadcast_rx, local);
    let handle = BipHandle::new(unicast, local, broadcast_target, driver.stats());
    Ok((handle, driver))
}

fn open_socket(addr: SocketAddrV4, reuse: bool) -> std::io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_broadcast(true)?;
    if reuse {
        s.set_reuse_address(true)?;
    }
    s.set_nonblocking(true)?;
    // Room for bursts of requests while the application is busy.
    let _ = s.set_recv_buffer_size(1 << 20);
    s.bind(&SocketAddr::V4(addr).into())?;
    UdpSocket::from_std(s.into())
}
