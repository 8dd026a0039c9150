//! Sending side of a BACnet/IP port.

use bacnet::bvll::Bvll;
use std::net::SocketAddrV4;
use std::sync::Arc;
use tokio::net::UdpSocket;

/// Sends NPDUs; cheap to clone, shareable across tasks.
#[derive(Debug, Clone)]
pub struct BipHandle {
    socket: Arc<UdpSocket>,
    local: SocketAddrV4,
    broadcast: SocketAddrV4,
}

impl BipHandle {
    pub(crate) fn new(socket: Arc<UdpSocket>, local: SocketAddrV4, broadcast: SocketAddrV4) -> Self {
        BipHandle { socket, local, broadcast }
    }

    /// Our unicast B/IP address.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The local broadcast address and port.
    pub fn broadcast_addr(&self) -> SocketAddrV4 {
        self.broadcast
    }

    /// Send an NPDU to one station as an Original-Unicast-NPDU.
    pub async fn send_unicast(&self, to: SocketAddrV4, npdu: &[u8]) -> std::io::Result<()> {
        self.send(to, Bvll::OriginalUnicastNpdu(npdu)).await
    }

    /// Send an NPDU to the local broadcast address as an
    /// Original-Broadcast-NPDU.
    pub async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        self.send(self.broadcast, Bvll::OriginalBroadcastNpdu(npdu)).await
    }

    /// Send an NPDU as an Original-Broadcast-NPDU to a specific address
    /// (a directed broadcast, or a single station for testing).
    pub async fn send_broadcast_to(&self, to: SocketAddrV4, npdu: &[u8]) -> std::io::Result<()> {
        self.send(to, Bvll::OriginalBroadcastNpdu(npdu)).await
    }

    /// Send any BVLL message.
    pub async fn send(&self, to: SocketAddrV4, msg: Bvll<'_>) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(4 + msg.npdu().map_or(16, |n| n.len()));
        msg.encode(&mut buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.socket.send_to(&buf, to).await?;
        Ok(())
    }
}
