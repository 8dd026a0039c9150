//! Receiving side of a BACnet Ethernet port: reads frames, keeps BACnet's,
//! hands their NPDUs up with the sender's MAC.

use crate::Mac;
use crate::os::{Delivery, PacketSocket};
use bacnet::ethernet::Frame;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;

/// The receive buffer: the longest 8802-3 frame without its FCS is 1514
/// octets; anything longer is malformed (and counted).
const BUFFER: usize = 2048;

/// What the port saw and did.
#[derive(Debug, Default)]
pub struct EthernetStats {
    /// NPDUs handed up.
    pub npdus: AtomicU64,
    /// Frames dropped as malformed (bad length field, wrong LLC control, too long).
    pub malformed: AtomicU64,
    /// Frames for other protocols skipped (EtherType frames, other LLC SAPs).
    pub not_bacnet: AtomicU64,
    /// Frames sent.
    pub sent: AtomicU64,
    /// Frames the kernel refused to send.
    pub send_errors: AtomicU64,
}

/// One NPDU handed up, borrowed from the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbound<'a> {
    /// The sender's MAC.
    pub source: Mac,
    /// The NPDU (without LLC header or padding).
    pub npdu: &'a [u8],
    /// It was sent to the broadcast address.
    pub broadcast: bool,
}

/// Receives on the port's socket.
#[derive(Debug)]
pub struct EthernetDriver {
    socket: Arc<AsyncFd<PacketSocket>>,
    mac: Mac,
    stats: Arc<EthernetStats>,
    buf: Box<[u8]>,
}

impl EthernetDriver {
    pub(crate) fn new(socket: Arc<AsyncFd<PacketSocket>>, mac: Mac, stats: Arc<EthernetStats>) -> Self {
        EthernetDriver { socket, mac, stats, buf: vec![0; BUFFER].into_boxed_slice() }
    }

    /// The port's counters.
    pub fn stats(&self) -> Arc<EthernetStats> {
        self.stats.clone()
    }

    /// Wait until a frame may be waiting.
    pub async fn readable(&self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| self.poll_readable(cx)).await
    }

    /// [`readable`](Self::readable) as a poll, for a task that waits on
    /// several ports at once (a router). Readiness stays until
    /// [`drain`](Self::drain) finds the socket empty.
    pub fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.socket.poll_read_ready(cx).map_ok(|_guard| ())
    }

    /// Take up to `max` frames waiting now, without waiting; each BACnet
    /// NPDU goes to `each`. Returns how many frames were read.
    pub fn drain(&mut self, max: usize, mut each: impl FnMut(Inbound<'_>)) -> usize {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut read = 0;
        while read < max {
            // The readiness guard first, then the read: a frame arriving
            // between an empty read and clearing readiness is not lost.
            let Poll::Ready(Ok(mut guard)) = self.socket.poll_read_ready(&mut cx) else { break };
            let received = match guard.try_io(|s| s.get_ref().recv(&mut self.buf)) {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "BACnet Ethernet: receive failed");
                    break;
                }
                // Empty: readiness cleared, the next frame wakes us.
                Err(_would_block) => break,
            };
            read += 1;
            let (length, delivery) = received;
            if matches!(delivery, Delivery::Outgoing | Delivery::Other) {
                continue;
            }
            if length > self.buf.len() {
                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(length, "BACnet Ethernet: a frame longer than 8802-3 allows dropped");
                continue;
            }
            match Frame::decode(&self.buf[..length]) {
                Ok(Frame::Bacnet { destination, source, npdu }) => {
                    if source == self.mac {
                        continue;
                    }
                    if source[0] & 1 != 0 {
                        // A group address (broadcast, multicast) names no
                        // station: nothing could answer it.
                        self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let broadcast = destination == crate::BROADCAST;
                    if !broadcast && destination != self.mac {
                        // A multicast group: BACnet Ethernet has none.
                        self.stats.not_bacnet.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    self.stats.npdus.fetch_add(1, Ordering::Relaxed);
                    each(Inbound { source, npdu, broadcast });
                }
                Ok(Frame::NotBacnet) => {
                    self.stats.not_bacnet.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %e, length, "BACnet Ethernet: malformed frame dropped");
                }
            }
        }
        read
    }
}
