//! Sending side of a BACnet/IPv6 port.

use crate::VmacTable;
use bacnet::bvll6::{Bvll6, Vmac};
use std::net::SocketAddrV6;
use std::sync::{Arc, PoisonError};
use tokio::net::UdpSocket;

/// Sends NPDUs; cheap to clone.
#[derive(Debug, Clone)]
pub struct Bip6Handle {
    socket: Arc<UdpSocket>,
    local: SocketAddrV6,
    vmac: Vmac,
    group: SocketAddrV6,
    table: VmacTable,
}

impl Bip6Handle {
    pub(crate) fn new(
        socket: Arc<UdpSocket>,
        local: SocketAddrV6,
        vmac: Vmac,
        group: SocketAddrV6,
        table: VmacTable,
    ) -> Self {
        Bip6Handle { socket, local, vmac, group, table }
    }

    /// Our address.
    pub fn local_addr(&self) -> SocketAddrV6 {
        self.local
    }

    /// Our VMAC.
    pub fn vmac(&self) -> Vmac {
        self.vmac
    }

    /// Where `vmac` lives, if we have heard from it.
    pub fn address_of(&self, vmac: Vmac) -> Option<SocketAddrV6> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).get(&vmac).copied()
    }

    /// The VMAC of the station at `address`, if we have heard from it.
    pub fn vmac_at(&self, address: SocketAddrV6) -> Option<Vmac> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).iter().find(|(_, a)| **a == address).map(|(v, _)| *v)
    }

    /// Send an NPDU to the station with `vmac`. A VMAC we have not heard
    /// from is looked for (Address-Resolution to the multicast group) and
    /// the NPDU is refused with `NotFound`.
    pub async fn send_unicast(&self, vmac: Vmac, npdu: &[u8]) -> std::io::Result<()> {
        let Some(to) = self.address_of(vmac) else {
            let _ = self.send_to(self.group, Bvll6::AddressResolution { source: self.vmac, target: vmac }).await;
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "no B/IPv6 address known for VMAC {:02x}{:02x}{:02x} (asked the multicast group)",
                    vmac[0], vmac[1], vmac[2]
                ),
            ));
        };
        self.send_to(to, Bvll6::OriginalUnicastNpdu { source: self.vmac, destination: vmac, npdu }).await
    }

    /// Send an NPDU to every station (the multicast group).
    pub async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        self.send_to(self.group, Bvll6::OriginalBroadcastNpdu { source: self.vmac, npdu }).await
    }

    /// Ask `to` for its VMAC (Virtual-Address-Resolution); its answer fills
    /// the table.
    pub async fn resolve(&self, to: SocketAddrV6) -> std::io::Result<()> {
        self.send_to(to, Bvll6::VirtualAddressResolution { source: self.vmac }).await
    }

    /// Send any message to `to`.
    pub async fn send_to(&self, to: SocketAddrV6, msg: Bvll6<'_>) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(10 + msg.npdu().map_or(0, <[u8]>::len));
        msg.encode(&mut buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.socket.send_to(&buf, to).await?;
        Ok(())
    }
}
