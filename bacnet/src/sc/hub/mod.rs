//! The hub function (Annex AB.5.3), sans-IO: the connections of the nodes
//! connected to a hub, each a [`Connection`] accepting its Connect-Request,
//! and the relay between them.
//!
//! - A node's unicast (its Destination VMAC another node's) goes to that
//!   node with the sender's VMAC as the Originating VMAC and no
//!   Destination VMAC; a broadcast (Destination VMAC all ones) goes to
//!   every other connected node with the sender's VMAC as the Originating
//!   VMAC. Options travel with the message.
//! - A message to an unknown VMAC is dropped and counted; so is one with no
//!   Destination VMAC (it is for the hub, which has no network layer),
//!   except Advertisement-Solicitation, answered with the hub's
//!   Advertisement, and Address-Resolution, answered with a NAK
//!   optional-functionality-not-supported (the hub has no direct-connect
//!   function).
//! - A Connect-Request whose VMAC another device (another UUID) holds is
//!   refused with NAK node-duplicate-vmac; one from the same UUID replaces
//!   that device's older connection (it reconnected before the hub noticed
//!   the first was gone).
//! - At most [`HubConfig::max_connections`] WebSockets are taken at once
//!   ([`Hub::open`] refuses more); each connection's queue is bounded
//!   ([`super::connection::MAX_QUEUED`]); every refusal is counted.
//!
//! The host runs the WebSockets: [`Hub::open`] for a new one, then every
//! frame into [`Hub::handle_frame`], what [`Hub::poll_transmit`] gives out
//! to its connection, and the connections [`Hub::poll_closed`] names
//! closed.
//!
//! Must never: relay anything from a connection before its Connect-Accept,
//! send a node's message back to it, or keep more connections than
//! configured.

use super::connection::{Admission, Connection, ConnectionConfig, Event, State, nak_for};
use crate::bvlc_sc::{BROADCAST_VMAC, BvlcSc, HubConnectionStatus, Options, Payload, ScVmac, function};
use crate::enums::ErrorCode;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::time::Duration;

/// A connection's handle, the host's to map to its WebSocket.
pub type ConnId = u32;

/// How the hub runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubConfig {
    /// The hub's own connection settings (its VMAC and UUID in Connect-Accept).
    pub connection: ConnectionConfig,
    /// WebSockets taken at once, at most (default 1,024).
    pub max_connections: usize,
}

impl HubConfig {
    /// The defaults around `connection`.
    pub fn new(connection: ConnectionConfig) -> Self {
        HubConfig { connection, max_connections: 1024 }
    }
}

/// What the hub did, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubCounters {
    /// Unicasts relayed.
    pub unicasts: u64,
    /// Broadcasts relayed (each counted once, however many copies).
    pub broadcasts: u64,
    /// Copies sent for them.
    pub broadcast_copies: u64,
    /// Messages to a VMAC no connected node has.
    pub unknown_destination: u64,
    /// Messages for the hub itself that it does not take.
    pub not_for_a_node: u64,
    /// WebSockets refused at the connection bound.
    pub refused_full: u64,
    /// Connect-Requests refused: the VMAC is another device's.
    pub refused_duplicate: u64,
    /// Older connections replaced by a reconnecting device.
    pub replaced: u64,
    /// Frames not queued: the destination's queue was full.
    pub queue_full: u64,
}

/// The hub function.
#[derive(Debug, Clone)]
pub struct Hub {
    config: HubConfig,
    connections: BTreeMap<ConnId, Connection>,
    by_vmac: BTreeMap<ScVmac, ConnId>,
    next_id: ConnId,
    closed: VecDeque<ConnId>,
    /// Connections that may have frames to write (so that
    /// [`Hub::poll_transmit`] never scans them all).
    ready: VecDeque<ConnId>,
    counters: HubCounters,
}

impl Hub {
    /// A hub with `config`.
    pub fn new(config: HubConfig) -> Hub {
        Hub {
            config,
            connections: BTreeMap::new(),
            by_vmac: BTreeMap::new(),
            next_id: 1,
            closed: VecDeque::new(),
            ready: VecDeque::new(),
            counters: HubCounters::default(),
        }
    }

    /// What the hub did.
    pub fn counters(&self) -> HubCounters {
        let queued: u64 = self.connections.values().map(|c| c.counters().queue_full).sum();
        HubCounters { queue_full: self.counters.queue_full + queued, ..self.counters }
    }

    /// Connections open (connected or connecting).
    pub fn connections(&self) -> usize {
        self.connections.len()
    }

    /// How many nodes are connected (cheap: for every frame).
    pub fn node_count(&self) -> usize {
        self.by_vmac.len()
    }

    /// The connected nodes' VMACs and UUIDs.
    pub fn nodes(&self) -> impl Iterator<Item = (ScVmac, [u8; 16])> + '_ {
        self.by_vmac.values().filter_map(|id| self.connections.get(id)?.peer()).map(|p| (p.vmac, p.uuid))
    }

    /// A WebSocket was accepted: its handle, or `None` at the bound (the
    /// host closes it at once).
    pub fn open(&mut self, now: Duration) -> Option<ConnId> {
        if self.connections.len() >= self.config.max_connections {
            self.counters.refused_full += 1;
            return None;
        }
        // After a wrap, never hand out a handle still in use.
        while self.connections.contains_key(&self.next_id) {
            self.next_id = self.next_id.wrapping_add(1).max(1);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.connections.insert(id, Connection::accept(now, self.config.connection));
        Some(id)
    }

    /// The WebSocket under `id` closed.
    pub fn close(&mut self, id: ConnId) {
        if let Some(c) = self.remove(id)
            && let Some(peer) = c.peer()
            && self.by_vmac.get(&peer.vmac) == Some(&id)
        {
            self.by_vmac.remove(&peer.vmac);
        }
    }

    /// Take a connection out for good, keeping what it counted.
    fn remove(&mut self, id: ConnId) -> Option<Connection> {
        let c = self.connections.remove(&id)?;
        self.counters.queue_full += c.counters().queue_full;
        Some(c)
    }

    /// A frame from connection `id`.
    pub fn handle_frame(&mut self, now: Duration, id: ConnId, frame: &[u8]) {
        // Out of the map while it runs, so the admission can read the others.
        let Some(mut c) = self.connections.remove(&id) else { return };
        let mut replaces = None;
        c.handle_frame(now, frame, &mut |peer| {
            let holder = self.by_vmac.get(&peer.vmac).copied().filter(|other| *other != id);
            match holder.and_then(|other| Some((other, self.connections.get(&other)?.peer()?))) {
                Some((other, held)) if held.uuid == peer.uuid => {
                    replaces = Some(other);
                    Admission::Accept
                }
                Some(_) => Admission::DuplicateVmac,
                None => Admission::Accept,
            }
        });
        self.connections.insert(id, c);
        self.ready.push_back(id);
        if let Some(other) = replaces {
            // The same device reconnected before the hub saw its first
            // connection go: the new one takes over.
            self.counters.replaced += 1;
            self.remove(other);
            self.closed.push_back(other);
        }
        self.drain_events(id);
    }

    fn drain_events(&mut self, id: ConnId) {
        while let Some(event) = self.connections.get_mut(&id).and_then(Connection::poll_event) {
            match event {
                Event::Connected(peer) => {
                    self.by_vmac.insert(peer.vmac, id);
                }
                Event::Closed(reason) => {
                    if reason == super::connection::CloseReason::RefusedPeer(ErrorCode::NODE_DUPLICATE_VMAC.0 as u16) {
                        self.counters.refused_duplicate += 1;
                    }
                    if let Some(peer) = self.connections.get(&id).and_then(Connection::peer)
                        && self.by_vmac.get(&peer.vmac) == Some(&id)
                    {
                        self.by_vmac.remove(&peer.vmac);
                    }
                    self.closed.push_back(id);
                }
                Event::Message(frame) => self.relay(id, &frame),
            }
        }
    }

    /// Relay a connected node's message.
    fn relay(&mut self, from: ConnId, frame: &[u8]) {
        let Some(sender) = self.connections.get(&from).and_then(Connection::peer) else { return };
        let Ok(m) = BvlcSc::decode(frame) else { return };
        match m.destination {
            Some(BROADCAST_VMAC) => {
                let Some(out) = encode(&BvlcSc { origin: Some(sender.vmac), ..m }) else { return };
                self.counters.broadcasts += 1;
                let targets: Vec<ConnId> = self.by_vmac.values().copied().filter(|id| *id != from).collect();
                for id in targets {
                    self.counters.broadcast_copies += 1;
                    if let Some(c) = self.connections.get_mut(&id) {
                        c.send(out.clone());
                        self.ready.push_back(id);
                    }
                }
            }
            Some(vmac) => match self.by_vmac.get(&vmac).copied().filter(|id| *id != from) {
                Some(id) => {
                    let Some(out) = encode(&BvlcSc { origin: Some(sender.vmac), destination: None, ..m }) else {
                        return;
                    };
                    self.counters.unicasts += 1;
                    if let Some(c) = self.connections.get_mut(&id) {
                        c.send(out);
                        self.ready.push_back(id);
                    }
                }
                None => self.counters.unknown_destination += 1,
            },
            None => self.for_the_hub(from, &m),
        }
    }

    /// A message with no Destination VMAC: for the hub itself.
    fn for_the_hub(&mut self, from: ConnId, m: &BvlcSc<'_>) {
        let local = self.config.connection.local;
        let answer = match m.payload {
            Payload::AdvertisementSolicitation => Some(BvlcSc {
                message_id: m.message_id,
                origin: None,
                destination: None,
                destination_options: Options::NONE,
                data_options: Options::NONE,
                payload: Payload::Advertisement {
                    hub_status: HubConnectionStatus::NO_HUB_CONNECTION,
                    accepts_direct_connections: false,
                    max_bvlc_len: local.max_bvlc_len,
                    max_npdu_len: local.max_npdu_len,
                },
            }),
            Payload::AddressResolution => Some(nak_for(
                function::ADDRESS_RESOLUTION,
                m.message_id,
                ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED,
            )),
            _ => {
                self.counters.not_for_a_node += 1;
                None
            }
        };
        if let (Some(a), Some(c)) = (answer.and_then(|a| encode(&a)), self.connections.get_mut(&from)) {
            c.send(a);
        }
    }

    /// The next frame to write, and to which connection.
    pub fn poll_transmit(&mut self) -> Option<(ConnId, Vec<u8>)> {
        while let Some(&id) = self.ready.front() {
            if let Some(frame) = self.connections.get_mut(&id).and_then(Connection::poll_transmit) {
                return Some((id, frame));
            }
            self.ready.pop_front();
        }
        None
    }

    /// A connection to close (after writing what it still has).
    pub fn poll_closed(&mut self) -> Option<ConnId> {
        self.closed.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.connections.values().filter_map(Connection::poll_timeout).min()
    }

    /// Let time pass: connect waits and heartbeat timeouts.
    pub fn handle_timeout(&mut self, now: Duration) {
        let ids: Vec<ConnId> = self.connections.keys().copied().collect();
        for id in ids {
            if let Some(c) = self.connections.get_mut(&id) {
                c.handle_timeout(now);
                self.ready.push_back(id);
                if matches!(c.state(), State::Closed(_)) {
                    self.drain_events(id);
                }
            }
        }
    }
}

fn encode(m: &BvlcSc<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    m.encode(&mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests;
