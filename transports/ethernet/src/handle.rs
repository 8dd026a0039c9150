//! Sending side of a BACnet Ethernet port.

use crate::os::PacketSocket;
use crate::{EthernetStats, Mac};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Sends NPDUs; cheap to clone.
#[derive(Debug, Clone)]
pub struct EthernetHandle {
    socket: Arc<AsyncFd<PacketSocket>>,
    mac: Mac,
    interface: Arc<str>,
    stats: Arc<EthernetStats>,
}

impl EthernetHandle {
    pub(crate) fn new(
        socket: Arc<AsyncFd<PacketSocket>>,
        mac: Mac,
        interface: String,
        stats: Arc<EthernetStats>,
    ) -> Self {
        EthernetHandle { socket, mac, interface: interface.into(), stats }
    }

    /// Our MAC address (the interface's).
    pub fn mac(&self) -> Mac {
        self.mac
    }

    /// The interface the port is on.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The port's counters (shared with its driver).
    pub fn stats(&self) -> Arc<EthernetStats> {
        self.stats.clone()
    }

    /// The interface's index.
    pub fn ifindex(&self) -> i32 {
        self.socket.get_ref().ifindex
    }

    /// Send an NPDU to the station with MAC `to`.
    pub async fn send_unicast(&self, to: Mac, npdu: &[u8]) -> std::io::Result<()> {
        self.send(to, npdu).await
    }

    /// Send an NPDU to every station on the link.
    pub async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        self.send(crate::BROADCAST, npdu).await
    }

    async fn send(&self, to: Mac, npdu: &[u8]) -> std::io::Result<()> {
        let mut frame = Vec::with_capacity(17 + npdu.len());
        bacnet::ethernet::encode(to, self.mac, npdu, &mut frame)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let sent = self.socket.async_io(Interest::WRITABLE, |s| s.send(&frame)).await;
        match &sent {
            Ok(()) => self.stats.sent.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.stats.send_errors.fetch_add(1, Ordering::Relaxed),
        };
        sent
    }
}
