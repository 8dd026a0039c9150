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
    /// Datagrams sent through the port's handle.
    pub sent: AtomicU64,
    /// Datagrams dropped as malformed BVLL.
    pub malformed: AtomicU64,
    /// BBMD requests answered with a NAK.
    pub naks_sent: AtomicU64,
    /// BVLC-Results received (a BBMD's answer to our registration).
    pub results: AtomicU64,
    /// The last BVLC-Result code received, plus one (0: none yet).
    pub last_result: std::sync::atomic::AtomicU32,
    /// Who sent it: the IPv4 address in the high 32 of 48 bits, the port
    /// in the low 16 (see [`DriverStats::last_result_from`]).
    pub last_result_source: AtomicU64,
}

impl DriverStats {
    /// The sender of the last BVLC-Result received.
    pub fn last_result_from(&self) -> SocketAddrV4 {
        let v = self.last_result_source.load(Ordering::Relaxed);
        SocketAddrV4::new(std::net::Ipv4Addr::from((v >> 16) as u32), v as u16)
    }
}

/// One NPDU handed up by [`BipDriver::drain`], borrowed from the driver's
/// receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbound<'a> {
    /// The B/IP address of the originating station (for a Forwarded-NPDU,
    /// the original source it carries).
    pub source: SocketAddrV4,
    /// The NPDU octets.
    pub npdu: &'a [u8],
    /// Sent as a broadcast (Original-Broadcast, Forwarded or Distribute).
    pub broadcast: bool,
}

/// Receives on a port's sockets: either spawn [`BipDriver::run`] (NPDUs
/// over a channel) or, run to completion, wait for [`BipDriver::readable`]
/// and take what is there with [`BipDriver::drain`] on the same thread.
#[derive(Debug)]
pub struct BipDriver {
    unicast: Arc<UdpSocket>,
    broadcast_rx: Option<UdpSocket>,
    local: SocketAddrV4,
    stats: Arc<DriverStats>,
    buf: Box<[u8]>,
    /// The port's BBMD, when it is one (see [`crate::enable_bbmd`]).
    pub(crate) bbmd: Option<Arc<crate::PortBbmd>>,
    /// The BBMD we are a foreign device of: its Forwarded-NPDUs come by
    /// unicast and are trusted.
    forwarder: Option<SocketAddrV4>,
}

/// The largest datagram received whole.
const MAX_DATAGRAM: usize = 65536;

impl BipDriver {
    pub(crate) fn new(unicast: Arc<UdpSocket>, broadcast_rx: Option<UdpSocket>, local: SocketAddrV4) -> Self {
        BipDriver {
            unicast,
            broadcast_rx,
            local,
            stats: Arc::new(DriverStats::default()),
            buf: vec![0; MAX_DATAGRAM].into_boxed_slice(),
            bbmd: None,
            forwarder: None,
        }
    }

    /// Trust Forwarded-NPDUs from `bbmd` that arrive by unicast: we are
    /// its foreign device (Annex J.5), and it forwards broadcasts to us so.
    pub fn accept_forwarded_from(&mut self, bbmd: SocketAddrV4) {
        self.forwarder = Some(bbmd);
    }

    /// The driver's counters.
    pub fn stats(&self) -> Arc<DriverStats> {
        self.stats.clone()
    }

    /// Receive until the channel closes, sending each NPDU up.
    pub async fn run<T: From<Received>>(mut self, up: mpsc::Sender<T>) {
        loop {
            tokio::select! {
                r = self.readable() => if let Err(e) = r {
                    tracing::debug!(error = %e, "B/IP receive error");
                    continue;
                },
                _ = up.closed() => return,
            }
            let mut received = Vec::new();
            self.drain(64, |n| {
                received.push(Received { source: n.source, npdu: n.npdu.to_vec(), broadcast: n.broadcast })
            });
            for r in received {
                if up.send(r.into()).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Wait until a datagram is waiting on one of the port's sockets. A
    /// readiness can be spurious: [`drain`](Self::drain) then finds nothing.
    pub async fn readable(&self) -> std::io::Result<()> {
        match &self.broadcast_rx {
            None => self.unicast.readable().await,
            Some(b) => tokio::select! {
                r = self.unicast.readable() => r,
                r = b.readable() => r,
            },
        }
    }

    /// [`readable`](Self::readable) as a poll, for a task that waits on
    /// several ports at once (a router).
    pub fn poll_readable(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        if let Some(b) = &self.broadcast_rx
            && let std::task::Poll::Ready(r) = b.poll_recv_ready(cx)
        {
            return std::task::Poll::Ready(r);
        }
        self.unicast.poll_recv_ready(cx)
    }

    /// Take up to `max` datagrams waiting now, without waiting; each NPDU
    /// goes to `each` (malformed datagrams are dropped and counted, BBMD
    /// requests answered with their NAK). Returns how many datagrams were
    /// read.
    pub fn drain(&mut self, max: usize, mut each: impl FnMut(Inbound<'_>)) -> usize {
        let BipDriver { unicast, broadcast_rx, local, stats, buf, bbmd, forwarder } = self;
        let port = Port {
            unicast,
            can_tell: broadcast_rx.is_some(),
            local: *local,
            stats,
            bbmd: bbmd.as_deref(),
            forwarder: *forwarder,
        };
        let mut read = 0;
        // The broadcast socket first: it is rarely busy, and a flood of
        // unicast requests must not starve a Who-Is.
        let sockets = broadcast_rx.iter().map(|b| (b, true)).chain([(&**unicast, false)]);
        for (socket, on_broadcast_socket) in sockets {
            // The broadcast socket gets half the batch at most: a broadcast
            // storm must not starve unicast requests either.
            let limit = if on_broadcast_socket { max.div_ceil(2) } else { max };
            while read < limit {
                match socket.try_recv_from(buf) {
                    Ok((n, SocketAddr::V4(from))) => {
                        read += 1;
                        if let Some(npdu) = port.classify(from, &buf[..n], on_broadcast_socket) {
                            each(npdu);
                        }
                    }
                    Ok((_, SocketAddr::V6(_))) => read += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        // ICMP errors from earlier sends surface here on Linux.
                        tracing::debug!(error = %e, "B/IP receive error");
                        read += 1;
                    }
                }
            }
        }
        read
    }
}

/// What classifying a datagram needs of the driver.
struct Port<'a> {
    unicast: &'a UdpSocket,
    can_tell: bool,
    local: SocketAddrV4,
    stats: &'a DriverStats,
    bbmd: Option<&'a crate::PortBbmd>,
    forwarder: Option<SocketAddrV4>,
}

impl Port<'_> {
    fn classify<'d>(&self, from: SocketAddrV4, data: &'d [u8], on_broadcast_socket: bool) -> Option<Inbound<'d>> {
        if from == self.local {
            return None; // our own broadcast, looped back
        }
        if from.port() == 0 || from.ip().is_unspecified() {
            // Nobody can be answered there (the kernel refuses port 0).
            self.stats.malformed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%from, "dropped a datagram from an address that cannot be answered");
            return None;
        }
        let msg = match Bvll::decode(data) {
            Ok(m) => m,
            Err(e) => {
                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%from, error = %e, "dropped malformed BVLL datagram");
                return None;
            }
        };
        if let Some(bbmd) = self.bbmd {
            // A BBMD: every message is the BBMD's to handle (Annex J.4).
            let up = bbmd.with(self.unicast, |b, now| b.handle_bvll(now, from, &msg, on_broadcast_socket));
            let up =
                up.filter(|u| u.source != self.local && u.source.port() != 0 && !u.source.ip().is_unspecified())?;
            self.stats.npdus.fetch_add(1, Ordering::Relaxed);
            return Some(Inbound { source: up.source, npdu: up.npdu, broadcast: up.broadcast });
        }
        let (source, npdu, broadcast) = match msg {
            Bvll::OriginalUnicastNpdu(n) => (from, n, false),
            Bvll::OriginalBroadcastNpdu(n) => (from, n, true),
            Bvll::ForwardedNpdu { original_source, npdu } => {
                let unanswerable = original_source.port() == 0 || original_source.ip().is_unspecified();
                let from_our_bbmd = self.forwarder == Some(from);
                if (self.can_tell && !on_broadcast_socket && !from_our_bbmd)
                    || original_source == self.local
                    || unanswerable
                {
                    tracing::debug!(%from, %original_source, "dropped Forwarded-NPDU not received as a local broadcast");
                    return None;
                }
                (original_source, npdu, true)
            }
            Bvll::Result(code) => {
                let source = (u64::from(u32::from(*from.ip())) << 16) | u64::from(from.port());
                self.stats.last_result_source.store(source, Ordering::Relaxed);
                self.stats.last_result.store(u32::from(code.0) + 1, Ordering::Relaxed);
                self.stats.results.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            other => {
                self.answer_bbmd_request(from, &other);
                return None;
            }
        };
        self.stats.npdus.fetch_add(1, Ordering::Relaxed);
        Some(Inbound { source, npdu, broadcast })
    }

    /// The NAK a plain node answers a BBMD function with (Annex J.2),
    /// sent without waiting: dropped when the socket's buffer is full.
    fn answer_bbmd_request(&self, from: SocketAddrV4, msg: &Bvll<'_>) {
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
        if Bvll::Result(nak).encode(&mut buf).is_ok() && self.unicast.try_send_to(&buf, from.into()).is_ok() {
            self.stats.naks_sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}
