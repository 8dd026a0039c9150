//! NPDUs on their way out of a station, encoded one after another into one
//! buffer that lives as long as the station: each with head-room in front
//! for the datalink's header, so a batch of answers leaves in one system
//! call (B/IP: `sendmmsg`) without a buffer per answer.
//!
//! Must never: hold a frame past the [`Link::send_all`](super::station::Link)
//! that sends it (the station clears the outbox after each), or encode an
//! NPDU the datalink cannot carry without saying so.

use super::station::Delivery;
use bacnet::enums::NetworkPriority;
use bacnet::npdu::{DEFAULT_HOP_COUNT, NetAddress, Npdu};
use std::ops::Range;
use trellis_net::DeviceAddress;

/// One frame: where it goes and where it is in the buffer.
#[derive(Debug, Clone)]
pub(super) struct Frame {
    /// The peer (for a broadcast, who it answers).
    pub peer: DeviceAddress,
    /// Head-room and NPDU, in [`Outbox`]'s buffer.
    pub octets: Range<usize>,
    /// How it leaves.
    pub how: Delivery,
}

/// Frames waiting to be sent.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    buf: Vec<u8>,
    frames: Vec<Frame>,
}

impl Outbox {
    /// Encode `apdu` in an NPDU to `peer` (through its router when it has
    /// one), behind `headroom` zero octets.
    pub fn push(
        &mut self,
        headroom: usize,
        peer: &DeviceAddress,
        apdu: &[u8],
        priority: NetworkPriority,
        how: Delivery,
    ) -> std::io::Result<()> {
        let start = self.buf.len();
        self.buf.resize(start + headroom, 0);
        let mut n = Npdu::local_apdu(apdu, how == Delivery::Request);
        n.priority = priority;
        if let Some(r) = peer.remote.as_ref().filter(|_| how != Delivery::Broadcast) {
            n.destination = Some(NetAddress { net: r.net, mac: &r.mac });
            n.hop_count = DEFAULT_HOP_COUNT;
        }
        if let Err(e) = n.encode(&mut self.buf) {
            self.buf.truncate(start);
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e));
        }
        self.frames.push(Frame { peer: peer.clone(), octets: start..self.buf.len(), how });
        Ok(())
    }

    /// The frames, in order.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The octets of frame `i` (head-room and NPDU).
    pub fn octets(&self, i: usize) -> &[u8] {
        &self.buf[self.frames[i].octets.clone()]
    }

    /// The octets of frame `i`, to fill its head-room.
    pub fn octets_mut(&mut self, i: usize) -> &mut [u8] {
        let range = self.frames[i].octets.clone();
        &mut self.buf[range]
    }

    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Forget every frame, keeping the memory.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.frames.clear();
    }
}
