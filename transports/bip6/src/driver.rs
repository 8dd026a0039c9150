//! Receiving side of a BACnet/IPv6 port: reads datagrams, checks the
//! framing, answers resolution requests, learns VMACs, hands NPDUs up.

use crate::{MAX_VMACS, OurVmac, VmacTable};
use bacnet::bvll6::{Bvll6, Vmac};
use std::net::{SocketAddr, SocketAddrV6};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use tokio::net::UdpSocket;

/// What the driver saw.
#[derive(Debug, Default)]
pub struct Bip6Stats {
    /// NPDUs handed up.
    pub npdus: AtomicU64,
    /// Datagrams dropped as malformed.
    pub malformed: AtomicU64,
    /// Resolution requests answered.
    pub resolutions: AtomicU64,
    /// Messages from another station using our VMAC.
    pub duplicate_vmac: AtomicU64,
    /// BVLC-Results received.
    pub results: AtomicU64,
    /// The last BVLC-Result's code plus one (0: none yet).
    pub last_result: AtomicU64,
    last_result_from: std::sync::Mutex<Option<SocketAddrV6>>,
}

impl Bip6Stats {
    /// Who sent the last BVLC-Result.
    pub fn last_result_from(&self) -> Option<SocketAddrV6> {
        *self.last_result_from.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One NPDU handed up, borrowed from the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbound<'a> {
    /// The sender's VMAC (the originator's, for a Forwarded-NPDU).
    pub source: Vmac,
    /// The NPDU.
    pub npdu: &'a [u8],
    /// It came as a broadcast.
    pub broadcast: bool,
}

/// Receives on the port's socket.
#[derive(Debug)]
pub struct Bip6Driver {
    socket: Arc<UdpSocket>,
    /// A receive-only socket bound to the multicast group, when the port is
    /// bound to a unicast address (which Linux does not deliver the group's
    /// datagrams to).
    group_rx: Option<UdpSocket>,
    local: SocketAddrV6,
    vmac: Arc<OurVmac>,
    table: VmacTable,
    stats: Arc<Bip6Stats>,
    buf: Box<[u8]>,
    /// The port's BBMD, when it is one (see [`crate::enable_bbmd`]).
    pub(crate) bbmd: Option<Arc<crate::PortBbmd6>>,
}

impl Bip6Driver {
    pub(crate) fn new(
        socket: Arc<UdpSocket>,
        group_rx: Option<UdpSocket>,
        local: SocketAddrV6,
        vmac: Arc<OurVmac>,
        table: VmacTable,
        stats: Arc<Bip6Stats>,
    ) -> Self {
        let buf = vec![0; 65536].into_boxed_slice();
        Bip6Driver { socket, group_rx, local, vmac, table, stats, buf, bbmd: None }
    }

    /// The driver's counters.
    pub fn stats(&self) -> Arc<Bip6Stats> {
        self.stats.clone()
    }

    /// Wait until a datagram may be waiting.
    pub async fn readable(&self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| self.poll_readable(cx)).await
    }

    /// [`readable`](Self::readable) as a poll, for a task that waits on
    /// several ports at once (a router).
    pub fn poll_readable(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        if let Some(group) = &self.group_rx
            && group.poll_recv_ready(cx).is_ready()
        {
            return std::task::Poll::Ready(Ok(()));
        }
        self.socket.poll_recv_ready(cx)
    }

    /// Take up to `max` datagrams waiting now, without waiting; each NPDU
    /// goes to `each`. Returns how many datagrams were read.
    pub fn drain(&mut self, max: usize, mut each: impl FnMut(Inbound<'_>)) -> usize {
        if self.group_rx.is_none() {
            return self.drain_from(false, max, &mut each);
        }
        // The group's share first, so a stream of unicasts cannot starve
        // broadcasts; then the port's socket; then the group again.
        let mut read = self.drain_from(true, max.div_ceil(2), &mut each);
        read += self.drain_from(false, max - read, &mut each);
        if read < max {
            read += self.drain_from(true, max - read, &mut each);
        }
        read
    }

    /// [`drain`](Self::drain) from the port's socket or its group socket
    /// (answers go from the port's socket either way).
    fn drain_from(&mut self, group: bool, max: usize, each: &mut impl FnMut(Inbound<'_>)) -> usize {
        let mut read = 0;
        let from_socket = match (&self.group_rx, group) {
            (Some(g), true) => g,
            _ => &*self.socket,
        };
        while read < max {
            let (n, from) = match from_socket.try_recv_from(&mut self.buf) {
                Ok((n, SocketAddr::V6(from))) => (n, from),
                Ok(_) => {
                    read += 1;
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::debug!(error = %e, "B/IPv6 receive error");
                    read += 1;
                    continue;
                }
            };
            read += 1;
            if from == self.local {
                continue; // our own multicast, looped back
            }
            let Ok(msg) = Bvll6::decode(&self.buf[..n]) else {
                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let up = match &self.bbmd {
                Some(bbmd) => {
                    with_bbmd(bbmd, &self.socket, self.local, &self.vmac, &self.table, &self.stats, from, msg)
                }
                None => classify(&self.socket, self.local, &self.vmac, &self.table, &self.stats, from, msg),
            };
            if let Some(up) = up {
                self.stats.npdus.fetch_add(1, Ordering::Relaxed);
                each(up);
            }
        }
        read
    }
}

/// On a BBMD: the BBMD sees every message; a broadcast from our link is
/// forwarded and goes up, a peer's Forwarded-NPDU and a foreign device's
/// Distribute-Broadcast-To-Network go up when the BBMD accepts them, and
/// registrations are the BBMD's to answer. Everything else is as on any
/// port.
#[allow(clippy::too_many_arguments)]
fn with_bbmd<'a>(
    bbmd: &crate::PortBbmd6,
    socket: &UdpSocket,
    local: SocketAddrV6,
    vmac: &OurVmac,
    table: &VmacTable,
    stats: &Bip6Stats,
    from: SocketAddrV6,
    msg: Bvll6<'a>,
) -> Option<Inbound<'a>> {
    let ours = vmac.get();
    match msg {
        Bvll6::ForwardedNpdu { .. }
        | Bvll6::DistributeBroadcastToNetwork { .. }
        | Bvll6::RegisterForeignDevice { .. }
        | Bvll6::DeleteForeignDeviceTableEntry { .. } => {
            if msg.source() == Some(ours) {
                return None;
            }
            // One socket hears unicasts and the group alike: a Forwarded-NPDU
            // from a non-peer counts as our link's rebroadcast only when it
            // comes from our own /64.
            let over_group = same_prefix(from, local);
            let up = bbmd.with(socket, |b, now| b.handle_bvll(now, from, &msg, over_group));
            if let (Some(source), Bvll6::ForwardedNpdu { original_source, .. }) = (msg.source(), msg) {
                learn(table, source, original_source);
            } else if let Some(source) = msg.source() {
                learn(table, source, from);
            }
            up.map(|u| Inbound { source: u.source, npdu: u.npdu, broadcast: true })
        }
        Bvll6::OriginalBroadcastNpdu { .. } => {
            let up = classify(socket, local, vmac, table, stats, from, msg);
            if up.is_some() {
                bbmd.with(socket, |b, now| b.handle_bvll(now, from, &msg, true));
            }
            up
        }
        _ => classify(socket, local, vmac, table, stats, from, msg),
    }
}

/// Whether a datagram from `from` is our own: sent from our address, or,
/// on a socket bound to `::`, from our port on an address of this host.
fn is_us(local: SocketAddrV6, from: SocketAddrV6) -> bool {
    from == local
        || (local.ip().is_unspecified() && from.port() == local.port() && crate::interface_of(from.ip()).is_some())
}

/// Whether `a` and `b` share their first 64 bits.
fn same_prefix(a: SocketAddrV6, b: SocketAddrV6) -> bool {
    u128::from(*a.ip()) >> 64 == u128::from(*b.ip()) >> 64
}

/// Learn, answer, and say what goes up.
fn classify<'a>(
    socket: &UdpSocket,
    local: SocketAddrV6,
    vmac: &OurVmac,
    table: &VmacTable,
    stats: &Bip6Stats,
    from: SocketAddrV6,
    msg: Bvll6<'a>,
) -> Option<Inbound<'a>> {
    let ours = vmac.get();
    if let Some(source) = msg.source() {
        if source == ours {
            // Our own multicast looped back to a socket bound to `::`, or our
            // own broadcast re-multicast by a BBMD on our link (a foreign
            // device's Distribute-Broadcast-To-Network comes back so).
            let origin = match msg {
                Bvll6::ForwardedNpdu { original_source, .. } => original_source,
                _ => from,
            };
            if is_us(local, from) || is_us(local, origin) {
                return None;
            }
            // A station probing whether our VMAC is free learns that it is not.
            if let Bvll6::AddressResolution { target, .. } = msg
                && target == ours
            {
                let mut buf = Vec::with_capacity(10);
                let ack = Bvll6::AddressResolutionAck { source: ours, destination: ours };
                if ack.encode(&mut buf).is_ok() {
                    let _ = socket.try_send_to(&buf, SocketAddr::V6(from));
                }
            }
            // Logged at the 1st, 2nd, 4th, 8th… duplicate: a station
            // spoofing our VMAC does not become a stream of log lines.
            let seen = stats.duplicate_vmac.fetch_add(1, Ordering::Relaxed) + 1;
            let log = seen.is_power_of_two();
            let [a, b, c] = ours;
            match vmac.on_duplicate() {
                Some([x, y, z]) if log => tracing::warn!(
                    %from, duplicates = seen,
                    "another station uses our VMAC {a:02x}{b:02x}{c:02x} (Annex U.5): ours is now {x:02x}{y:02x}{z:02x}"
                ),
                Some(_) => {}
                None if log => tracing::warn!(
                    duplicates = seen,
                    %from,
                    "another station uses our VMAC {a:02x}{b:02x}{c:02x} (Annex U.5): its traffic is ignored"
                ),
                None => {}
            }
            return None;
        }
        // A Forwarded-NPDU's source lives at its original address.
        let at = match msg {
            Bvll6::ForwardedNpdu { original_source, .. } => original_source,
            _ => from,
        };
        learn(table, source, at);
    }
    let answer = |m: Bvll6<'_>| {
        let mut buf = Vec::with_capacity(10);
        if m.encode(&mut buf).is_ok() && socket.try_send_to(&buf, SocketAddr::V6(from)).is_ok() {
            stats.resolutions.fetch_add(1, Ordering::Relaxed);
        }
    };
    match msg {
        Bvll6::OriginalUnicastNpdu { source, destination, npdu } if destination == ours => {
            Some(Inbound { source, npdu, broadcast: false })
        }
        Bvll6::OriginalUnicastNpdu { .. } => None,
        Bvll6::OriginalBroadcastNpdu { source, npdu } => Some(Inbound { source, npdu, broadcast: true }),
        Bvll6::ForwardedNpdu { source, npdu, .. } => Some(Inbound { source, npdu, broadcast: true }),
        Bvll6::AddressResolution { source, target } if target == ours => {
            answer(Bvll6::AddressResolutionAck { source: ours, destination: source });
            None
        }
        Bvll6::VirtualAddressResolution { source } => {
            answer(Bvll6::VirtualAddressResolutionAck { source: ours, destination: source });
            None
        }
        Bvll6::RegisterForeignDevice { .. } => {
            answer(Bvll6::Result { source: ours, code: bacnet::bvll6::result::REGISTER_FOREIGN_DEVICE_NAK });
            None
        }
        Bvll6::DeleteForeignDeviceTableEntry { .. } => {
            answer(Bvll6::Result { source: ours, code: bacnet::bvll6::result::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK });
            None
        }
        Bvll6::DistributeBroadcastToNetwork { .. } => {
            answer(Bvll6::Result { source: ours, code: bacnet::bvll6::result::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK });
            None
        }
        Bvll6::Result { code, .. } => {
            stats.last_result.store(u64::from(code) + 1, Ordering::Relaxed);
            *stats.last_result_from.lock().unwrap_or_else(PoisonError::into_inner) = Some(from);
            stats.results.fetch_add(1, Ordering::Relaxed);
            None
        }
        _ => None,
    }
}

fn learn(table: &VmacTable, vmac: Vmac, at: SocketAddrV6) {
    let mut t = table.lock().unwrap_or_else(PoisonError::into_inner);
    if t.len() >= MAX_VMACS && !t.contains_key(&vmac) {
        // Bounded: forget an arbitrary entry (it is learned again when it talks).
        if let Some(k) = t.keys().next().copied() {
            t.remove(&k);
        }
    }
    t.insert(vmac, at);
}
