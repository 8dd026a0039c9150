//! Receiving side of a BACnet/IP port: reads datagrams, checks BVLL framing,
//! answers what a non-BBMD node must answer, and hands NPDUs up.

use bacnet::bvll::Bvll;
use bacnet::enums::BvlcResultCode;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// An NPDU received on the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The B/IP address of the originating station (for a Forwarded-NPDU,
    /// the original source it carries).
    pub source: SocketAddrV4,
    /// The NPDU octets.
    pub npdu: Vec<u8>,
    /// Sent as a broadcast (Original-Broadcast, Forwarded or Distribute).
    pub broadcast: bool,
}

/// Counters of what the driver saw; shared with whoever holds a clone.
#[derive(Debug, Default)]
pub struct DriverStats {
    /// Datagrams carrying an NPDU handed up.
    pub npdus: AtomicU64,
    /// Datagrams dropped as malformed BVLL.
    pub malformed: AtomicU64,
    /// BBMD requests answered with a NAK.
    pub naks_sent: AtomicU64,
}

/// Receives on a port's sockets. Spawn [`BipDriver::run`] on the runtime.
#[derive(Debug)]
pub struct BipDriver {
    unicast: Arc<UdpSocket>,
    broadcast_rx: Option<UdpSocket>,
    local: SocketAddrV4,
    stats: Arc<DriverStats>,
}

impl BipDriver {
    pub(crate) fn new(unicast: Arc<UdpSocket>, broadcast_rx: Option<UdpSocket>, local: SocketAddrV4) -> Self {
        BipDriver { unicast, broadcast_rx, local, stats: Arc::new(DriverStats::default()) }
    }

    /// The driver's counters.
    pub fn stats(&self) -> Arc<DriverStats> {
        self.stats.clone()
    }

    /// Receive until `up` is closed. NPDUs wait for room in `up` (so a slow
    /// consumer backs up into the socket buffer rather than growing memory).
    pub async fn run(self, up: mpsc::Sender<Received>) {
        let mut ubuf = vec![0u8; 65536];
        let mut bbuf = vec![0u8; 65536];
        loop {
            let (n, from, on_broadcast_socket) = tokio::select! {
                r = self.unicast.recv_from(&mut ubuf) => match r {
                    Ok((n, from)) => (n, from, false),
                    Err(e) => { tracing::debug!(error = %e, "B/IP receive error"); continue; }
                },
                r = recv_opt(self.broadcast_rx.as_ref(), &mut bbuf) => match r {
                    Ok((n, from)) => (n, from, true),
                    Err(e) => { tracing::debug!(error = %e, "B/IP broadcast receive error"); continue; }
                },
                _ = up.closed() => return,
            };
            let SocketAddr::V4(from) = from else { continue };
            if from == self.local {
                continue; // our own broadcast, looped back
            }
            let data = if on_broadcast_socket { &bbuf[..n] } else { &ubuf[..n] };
            if let Some(r) = self.classify(from, data, on_broadcast_socket).await
                && up.send(r).await.is_err()
            {
                return;
            }
        }
    }

    async fn classify(&self, from: SocketAddrV4, data: &[u8], on_broadcast_socket: bool) -> Option<Received> {
        let msg = match Bvll::decode(data) {
            Ok(m) => m,
            Err(e) => {
                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%from, error = %e, "dropped malformed BVLL datagram");
                return None;
            }
        };
        let (source, npdu, broadcast) = match msg {
            Bvll::OriginalUnicastNpdu(n) => (from, n, false),
            Bvll::OriginalBroadcastNpdu(n) => (from, n, true),
            Bvll::ForwardedNpdu { original_source, npdu } => {
                // A node that is neither a BBMD nor a registered foreign
                // device only receives Forwarded-NPDUs as local broadcasts
                // from its BBMD. A unicast one would let any host put words
                // in another station's mouth; our own, forwarded back, is an
                // echo.
                let can_tell = self.broadcast_rx.is_some();
                if (can_tell && !on_broadcast_socket) || original_source == self.local {
                    tracing::debug!(%from, %original_source, "dropped Forwarded-NPDU not received as a local broadcast");
                    return None;
                }
                (original_source, npdu, true)
            }
            other => {
                self.answer_bbmd_request(from, &other).await;
                return None;
            }
        };
        self.stats.npdus.fetch_add(1, Ordering::Relaxed);
        Some(Received { source, npdu: npdu.to_vec(), broadcast })
    }

    /// A node that is not a BBMD answers BBMD functions with their NAK
    /// (Annex J.2.x); results and unknown functions are dropped.
    async fn answer_bbmd_request(&self, from: SocketAddrV4, msg: &Bvll<'_>) {
        let nak = match msg {
            Bvll::WriteBroadcastDistributionTable(_) => BvlcResultCode::WRITE_BROADCAST_DISTRIBUTION_TABLE_NAK,
            Bvll::ReadBroadcastDistributionTable => BvlcResultCode::READ_BROADCAST_DISTRIBUTION_TABLE_NAK,
            Bvll::RegisterForeignDevice { .. } => BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK,
            Bvll::ReadForeignDeviceTable => BvlcResultCode::READ_FOREIGN_DEVICE_TABLE_NAK,
            Bvll::DeleteForeignDeviceTableEntry(_) => BvlcResultCode::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK,
            Bvll::DistributeBroadcastToNetwork(_) => BvlcResultCode::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK,
            _ => {
                tracing::debug!(%from, function = %msg.function(), "ignored BVLL function");
                return;
            }
        };
        let mut buf = Vec::with_capacity(6);
        if Bvll::Result(nak).encode(&mut buf).is_ok() && self.unicast.send_to(&buf, from).await.is_ok() {
            self.stats.naks_sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn recv_opt(s: Option<&UdpSocket>, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
    match s {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}
