//! Sending side of a BACnet/IPv6 port.

use crate::{Bip6Stats, OurVmac, PortBbmd6, VmacTable};
use bacnet::bvll6::{Bvll6, Vmac, result};
use std::net::SocketAddrV6;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;
use tokio::net::UdpSocket;

/// Sends NPDUs; cheap to clone.
#[derive(Debug, Clone)]
pub struct Bip6Handle {
    socket: Arc<UdpSocket>,
    local: SocketAddrV6,
    vmac: Arc<OurVmac>,
    group: SocketAddrV6,
    table: VmacTable,
    /// The port's BBMD, when it is one (see [`crate::enable_bbmd`]).
    pub(crate) bbmd: Option<Arc<PortBbmd6>>,
    /// The BBMD this port is a foreign device of, once registered.
    foreign: Arc<OnceLock<SocketAddrV6>>,
    stats: Arc<Bip6Stats>,
}

impl Bip6Handle {
    pub(crate) fn new(
        socket: Arc<UdpSocket>,
        local: SocketAddrV6,
        vmac: Arc<OurVmac>,
        group: SocketAddrV6,
        table: VmacTable,
        stats: Arc<Bip6Stats>,
    ) -> Self {
        Bip6Handle { socket, local, vmac, group, table, bbmd: None, foreign: Arc::default(), stats }
    }

    /// The multicast group broadcasts go to.
    pub fn group(&self) -> SocketAddrV6 {
        self.group
    }

    /// Register as a foreign device of the BBMD at `bbmd` for `ttl`
    /// seconds and wait up to `within` for its BVLC-Result (the port's
    /// driver must be draining meanwhile). From the first success on, the
    /// port's broadcasts go to that BBMD as Distribute-Broadcast-To-Network;
    /// renew with the same call before the TTL runs out.
    pub async fn register_foreign_device(&self, bbmd: SocketAddrV6, ttl: u16, within: Duration) -> std::io::Result<()> {
        let before = self.stats.results.load(Ordering::Relaxed);
        self.send_to(bbmd, Bvll6::RegisterForeignDevice { source: self.vmac.get(), ttl }).await?;
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.stats.results.load(Ordering::Relaxed) > before && self.stats.last_result_from() == Some(bbmd) {
                let code = self.stats.last_result.load(Ordering::Relaxed).saturating_sub(1) as u16;
                if code == result::SUCCESSFUL_COMPLETION {
                    let _ = self.foreign.set(bbmd);
                    return Ok(());
                }
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    format!("the BBMD at {bbmd} refused the foreign-device registration (BVLC-Result 0x{code:04x})"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the BBMD at {bbmd} did not answer the foreign-device registration within {} ms",
                within.as_millis()
            ),
        ))
    }

    /// The BBMD this port is registered with, if any.
    pub fn foreign_device_of(&self) -> Option<SocketAddrV6> {
        self.foreign.get().copied()
    }

    /// Our address.
    pub fn local_addr(&self) -> SocketAddrV6 {
        self.local
    }

    /// Our VMAC.
    pub fn vmac(&self) -> Vmac {
        self.vmac.get()
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
            let _ = self.send_to(self.group, Bvll6::AddressResolution { source: self.vmac.get(), target: vmac }).await;
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "no B/IPv6 address known for VMAC {:02x}{:02x}{:02x} (asked the multicast group)",
                    vmac[0], vmac[1], vmac[2]
                ),
            ));
        };
        self.send_to(to, Bvll6::OriginalUnicastNpdu { source: self.vmac.get(), destination: vmac, npdu }).await
    }

    /// Send an NPDU to every station: to the multicast group (and, on a
    /// BBMD, to its peers and foreign devices), or, on a foreign device, to
    /// its BBMD as Distribute-Broadcast-To-Network.
    pub async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        if let Some(bbmd) = self.foreign.get() {
            return self.send_to(*bbmd, Bvll6::DistributeBroadcastToNetwork { source: self.vmac.get(), npdu }).await;
        }
        if let Some(bbmd) = &self.bbmd {
            bbmd.with(&self.socket, |b, now| b.handle_local_broadcast(now, npdu));
        }
        self.send_to(self.group, Bvll6::OriginalBroadcastNpdu { source: self.vmac.get(), npdu }).await
    }

    /// Ask `to` for its VMAC (Virtual-Address-Resolution); its answer fills
    /// the table.
    pub async fn resolve(&self, to: SocketAddrV6) -> std::io::Result<()> {
        self.send_to(to, Bvll6::VirtualAddressResolution { source: self.vmac.get() }).await
    }

    /// Send any message to `to`.
    pub async fn send_to(&self, to: SocketAddrV6, msg: Bvll6<'_>) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(10 + msg.npdu().map_or(0, <[u8]>::len));
        msg.encode(&mut buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.socket.send_to(&buf, to).await?;
        Ok(())
    }
}
