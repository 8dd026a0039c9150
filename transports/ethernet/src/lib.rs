//! BACnet Ethernet (Clause 7) for Trellis: BACnet NPDUs in ISO 8802-2 LLC
//! frames (DSAP and SSAP 0x82, UI) on an ISO 8802-3 link, through a raw
//! `AF_PACKET` socket on one named interface. A station's MAC address is
//! its interface's six-octet hardware address; a broadcast goes to
//! FF:FF:FF:FF:FF:FF.
//!
//! [`bind`] returns an [`EthernetHandle`] (send: to a MAC, or broadcast)
//! and an [`EthernetDriver`] (receive, run to completion on the caller's
//! task: wait for [`EthernetDriver::readable`], take what is there with
//! [`EthernetDriver::drain`]). The frame codec is the core's
//! [`bacnet::ethernet`]; this crate only moves frames.
//!
//! A raw socket needs CAP_NET_RAW: without it [`bind`] fails with
//! `PermissionDenied` and a message saying so. Linux only.
//!
//! Must never: hand up a frame that is not BACnet's (EtherType frames,
//! other LLC service access points are counted and skipped), a frame we
//! sent, a frame from a group address (no station has one), or padding as
//! part of an NPDU; send a frame longer than 8802-3
//! allows (an NPDU over [`MAX_NPDU`] octets is refused).

mod driver;
mod handle;
mod os;

pub use bacnet::ethernet::{BROADCAST, MAX_NPDU};
pub use driver::{EthernetDriver, EthernetStats, Inbound};
pub use handle::EthernetHandle;

use std::sync::Arc;

/// A station's Ethernet MAC address.
pub type Mac = [u8; 6];

/// Where a BACnet Ethernet port is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetConfig {
    /// The network interface, e.g. `eth1`.
    pub interface: String,
}

impl EthernetConfig {
    /// A port on `interface`.
    pub fn new(interface: impl Into<String>) -> Self {
        EthernetConfig { interface: interface.into() }
    }
}

/// Open the port: a raw socket on the configured interface, registered
/// with the current tokio runtime.
pub fn bind(config: &EthernetConfig) -> std::io::Result<(EthernetHandle, EthernetDriver)> {
    let socket = os::PacketSocket::open(&config.interface)
        .map_err(|e| std::io::Error::new(e.kind(), format!("BACnet Ethernet on {:?}: {e}", config.interface)))?;
    let mac = socket.mac;
    let socket = Arc::new(socket.register()?);
    let stats: Arc<EthernetStats> = Arc::default();
    let handle = EthernetHandle::new(socket.clone(), mac, config.interface.clone(), stats.clone());
    let driver = EthernetDriver::new(socket, mac, stats);
    Ok((handle, driver))
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(mac: &Mac) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}
