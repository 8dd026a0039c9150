//! A node's switch (Annex AB.4), sans-IO: direct connections to other
//! nodes, beside the hub connector.
//!
//! ```text
//! A: send_npdu(B) ── no direct connection ─▶ false (the host sends it through the hub)
//!                    and Address-Resolution to B through the hub
//! B: Address-Resolution ─▶ Address-Resolution-ACK "wss://b:4443/" (or a NAK: it accepts none)
//! A: the ACK ─▶ Open(id, URIs) ─▶ WebSocket dc.bsc.bacnet.org ─▶ Connect-Request / Accept
//! A: send_npdu(B) ─▶ true: on the direct connection, no VMACs (the connection names the peer)
//! ```
//!
//! The host owns the WebSockets: it opens what [`SwitchAction::Open`]
//! names (trying its URIs in order), writes [`SwitchAction::Send`] frames,
//! sends [`SwitchAction::ViaHub`] frames through the hub connector, and
//! reports [`NodeSwitch::opened`], [`NodeSwitch::open_failed`],
//! [`NodeSwitch::accepted`] (a peer's WebSocket to our accept URI),
//! [`NodeSwitch::closed`] and every frame. A peer that answered no URIs, or
//! whose URIs failed, is not asked again for [`SwitchConfig::retry_after`].
//!
//! Must never: send an NPDU on a connection that is not connected, hold
//! more connections than [`SwitchConfig::max_connections`], or ask a peer
//! for its URIs more than once per resolution wait.

use super::connection::{Admission, Connection, ConnectionConfig, Event, State, bare};
use super::connector::Up;
use crate::bvlc_sc::{BROADCAST_VMAC, BvlcSc, Payload, ScVmac, function};
use crate::enums::ErrorCode;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

/// A direct connection's handle.
pub type DirectId = u32;

/// How the switch works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchConfig {
    /// Our VMAC, UUID, sizes and timers (as the hub connector's).
    pub connection: ConnectionConfig,
    /// The URIs peers may connect to us at (what our Address-Resolution-ACK
    /// says); empty: we accept no direct connection.
    pub accept_uris: Vec<String>,
    /// Whether we open direct connections to the peers we send to.
    pub initiate: bool,
    /// Direct connections at most (both ways).
    pub max_connections: usize,
    /// How long an Address-Resolution may go unanswered.
    pub resolution_wait: Duration,
    /// How long a peer without usable URIs is not asked again.
    pub retry_after: Duration,
}

impl SwitchConfig {
    /// The defaults around `connection`: 16 connections, 5 s to resolve,
    /// 60 s before asking a peer again.
    pub fn new(connection: ConnectionConfig, accept_uris: Vec<String>, initiate: bool) -> Self {
        SwitchConfig {
            connection,
            accept_uris,
            initiate,
            max_connections: 16,
            resolution_wait: Duration::from_secs(5),
            retry_after: Duration::from_secs(60),
        }
    }
}

/// What the host is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchAction {
    /// Open a direct WebSocket for `id` to the first of these URIs that
    /// answers.
    Open(DirectId, Vec<String>),
    /// Close the direct WebSocket `id`.
    Close(DirectId),
    /// Write this frame on direct connection `id`.
    Send(DirectId, Vec<u8>),
    /// Send this BVLC-SC message through the hub.
    ViaHub(Vec<u8>),
}

/// What the switch counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    /// Address-Resolutions we sent.
    pub resolutions: u64,
    /// Direct connections established (either way).
    pub connects: u64,
    /// Direct connections we could not open or that refused us.
    pub failed: u64,
    /// NPDUs sent on direct connections.
    pub direct_npdus: u64,
    /// Accepted WebSockets refused at the bound.
    pub refused_full: u64,
}

#[derive(Debug)]
struct Direct {
    /// `None` while the host opens the WebSocket we asked for.
    connection: Option<Connection>,
    /// The peer we opened it to (ours), or `None` (a peer's).
    target: Option<ScVmac>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    /// Asked; the answer is due by then.
    Pending(Duration),
    /// Connecting or connected.
    Connecting,
    /// No direct connection to it before then.
    Failed(Duration),
}

/// A node's direct connections.
#[derive(Debug)]
pub struct NodeSwitch {
    config: SwitchConfig,
    directs: BTreeMap<DirectId, Direct>,
    by_vmac: BTreeMap<ScVmac, DirectId>,
    resolving: BTreeMap<ScVmac, Resolution>,
    next_id: DirectId,
    next_message_id: u16,
    actions: VecDeque<SwitchAction>,
    up: VecDeque<Up>,
    counters: SwitchCounters,
}

impl NodeSwitch {
    /// A switch with no connections yet.
    pub fn new(config: SwitchConfig) -> NodeSwitch {
        NodeSwitch {
            config,
            directs: BTreeMap::new(),
            by_vmac: BTreeMap::new(),
            resolving: BTreeMap::new(),
            next_id: 1,
            next_message_id: 1,
            actions: VecDeque::new(),
            up: VecDeque::new(),
            counters: SwitchCounters::default(),
        }
    }

    /// What it counted.
    pub fn counters(&self) -> SwitchCounters {
        self.counters
    }

    /// The peers it is directly connected to now.
    pub fn connected(&self) -> impl Iterator<Item = ScVmac> + '_ {
        self.by_vmac.keys().copied()
    }

    /// Our VMAC changed (a hub refused the old one).
    pub fn set_vmac(&mut self, vmac: ScVmac) {
        self.config.connection.local.vmac = vmac;
    }

    /// Send `npdu` to `destination` on a direct connection: true if it
    /// went (the host sends it through the hub otherwise). Without one,
    /// and when we initiate, the peer is asked for its URIs (once per
    /// resolution wait; not again for a while after a failure).
    pub fn send_npdu(&mut self, now: Duration, destination: ScVmac, npdu: &[u8]) -> bool {
        if destination == BROADCAST_VMAC {
            return false;
        }
        if let Some(c) = self.by_vmac.get(&destination).and_then(|id| self.directs.get_mut(id)?.connection.as_mut())
            && c.state() == State::Connected
        {
            let m = BvlcSc { message_id: c.message_id(), ..bare(Payload::EncapsulatedNpdu(npdu)) };
            let mut frame = Vec::new();
            if m.encode(&mut frame).is_ok() && c.send(frame) {
                self.counters.direct_npdus += 1;
                return true;
            }
            return false;
        }
        if self.config.initiate && !self.resolving.contains_key(&destination) {
            self.resolving.insert(destination, Resolution::Pending(now + self.config.resolution_wait));
            self.counters.resolutions += 1;
            let m = BvlcSc {
                message_id: self.message_id(),
                destination: Some(destination),
                ..bare(Payload::AddressResolution)
            };
            self.via_hub(&m);
        }
        false
    }

    /// A message that came through the hub for the switch:
    /// Address-Resolution (answered), its ACK or NAK (for ours).
    pub fn handle_hub_message(&mut self, now: Duration, frame: &[u8]) {
        let Ok(m) = BvlcSc::decode(frame) else { return };
        let Some(origin) = m.origin else { return };
        match m.payload {
            Payload::AddressResolution => {
                let answer = if self.config.accept_uris.is_empty() {
                    BvlcSc {
                        destination: Some(origin),
                        ..super::connection::nak_for(
                            function::ADDRESS_RESOLUTION,
                            m.message_id,
                            ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED,
                        )
                    }
                } else {
                    let uris = self.config.accept_uris.join(" ");
                    let mut out = Vec::new();
                    let ack = BvlcSc {
                        message_id: m.message_id,
                        destination: Some(origin),
                        ..bare(Payload::AddressResolutionAck(&uris))
                    };
                    if ack.encode(&mut out).is_ok() {
                        self.actions.push_back(SwitchAction::ViaHub(out));
                    }
                    return;
                };
                self.via_hub(&answer);
            }
            Payload::AddressResolutionAck(uris) => {
                if !matches!(self.resolving.get(&origin), Some(Resolution::Pending(_))) {
                    return;
                }
                let uris: Vec<String> = uris.split_ascii_whitespace().map(String::from).collect();
                if uris.is_empty() || self.directs.len() >= self.config.max_connections {
                    self.resolving.insert(origin, Resolution::Failed(now + self.config.retry_after));
                    return;
                }
                let id = self.next_id();
                self.directs.insert(id, Direct { connection: None, target: Some(origin) });
                self.resolving.insert(origin, Resolution::Connecting);
                self.actions.push_back(SwitchAction::Open(id, uris));
            }
            Payload::Result { function: function::ADDRESS_RESOLUTION, nak: Some(_) } => {
                if matches!(self.resolving.get(&origin), Some(Resolution::Pending(_))) {
                    self.resolving.insert(origin, Resolution::Failed(now + self.config.retry_after));
                }
            }
            _ => {}
        }
    }

    /// The WebSocket we were asked to open for `id` is open: our
    /// Connect-Request goes.
    pub fn opened(&mut self, now: Duration, id: DirectId) {
        if let Some(d) = self.directs.get_mut(&id)
            && d.connection.is_none()
        {
            d.connection = Some(Connection::initiate(now, self.config.connection));
        }
    }

    /// None of `id`'s URIs could be opened.
    pub fn open_failed(&mut self, now: Duration, id: DirectId) {
        self.drop_direct(now, id, true);
    }

    /// A peer opened a WebSocket to our accept URI: its handle, or `None`
    /// at the bound (the host closes it).
    pub fn accepted(&mut self, now: Duration) -> Option<DirectId> {
        if self.directs.len() >= self.config.max_connections {
            self.counters.refused_full += 1;
            return None;
        }
        let id = self.next_id();
        self.directs
            .insert(id, Direct { connection: Some(Connection::accept(now, self.config.connection)), target: None });
        Some(id)
    }

    /// The WebSocket `id` closed.
    pub fn closed(&mut self, now: Duration, id: DirectId) {
        let connected = self.directs.get(&id).and_then(|d| d.connection.as_ref()).is_some_and(|c| c.peer().is_some());
        self.drop_direct(now, id, !connected);
    }

    /// A frame on direct connection `id`.
    pub fn handle_frame(&mut self, now: Duration, id: DirectId, frame: &[u8]) {
        let own = self.config.connection.local.vmac;
        let Some(c) = self.directs.get_mut(&id).and_then(|d| d.connection.as_mut()) else { return };
        c.handle_frame(now, frame, &mut |peer| {
            if peer.vmac == own { Admission::DuplicateVmac } else { Admission::Accept }
        });
        self.drain(now, id);
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let connections = self.directs.values().filter_map(|d| d.connection.as_ref()?.poll_timeout());
        let resolutions = self.resolving.values().filter_map(|r| match r {
            Resolution::Pending(t) | Resolution::Failed(t) => Some(*t),
            Resolution::Connecting => None,
        });
        connections.chain(resolutions).min()
    }

    /// Let time pass: connect waits, heartbeats, unanswered resolutions.
    pub fn handle_timeout(&mut self, now: Duration) {
        let ids: Vec<DirectId> = self.directs.keys().copied().collect();
        for id in ids {
            if let Some(c) = self.directs.get_mut(&id).and_then(|d| d.connection.as_mut()) {
                c.handle_timeout(now);
                self.drain(now, id);
            }
        }
        let retry_after = self.config.retry_after;
        self.resolving.retain(|_, r| match *r {
            Resolution::Failed(until) => now < until,
            _ => true,
        });
        for r in self.resolving.values_mut() {
            if let Resolution::Pending(until) = *r
                && now >= until
            {
                *r = Resolution::Failed(now + retry_after);
            }
        }
    }

    /// The next thing for the host to do.
    pub fn poll_action(&mut self) -> Option<SwitchAction> {
        for (id, d) in &mut self.directs {
            if let Some(c) = d.connection.as_mut() {
                while let Some(frame) = c.poll_transmit() {
                    self.actions.push_back(SwitchAction::Send(*id, frame));
                }
            }
        }
        self.actions.pop_front()
    }

    /// The next NPDU received on a direct connection.
    pub fn poll_up(&mut self) -> Option<Up> {
        self.up.pop_front()
    }

    fn drain(&mut self, now: Duration, id: DirectId) {
        while let Some(event) = self.directs.get_mut(&id).and_then(|d| d.connection.as_mut()?.poll_event()) {
            match event {
                Event::Connected(peer) => {
                    self.counters.connects += 1;
                    if let Some(old) = self.by_vmac.insert(peer.vmac, id)
                        && old != id
                    {
                        // Both sides connected at once: the newer carries on.
                        self.drop_direct(now, old, false);
                        self.actions.push_back(SwitchAction::Close(old));
                    }
                }
                Event::Closed(_) => {
                    // What it still had to say goes before the close.
                    if let Some(c) = self.directs.get_mut(&id).and_then(|d| d.connection.as_mut()) {
                        while let Some(frame) = c.poll_transmit() {
                            self.actions.push_back(SwitchAction::Send(id, frame));
                        }
                    }
                    let connected =
                        self.directs.get(&id).and_then(|d| d.connection.as_ref()).is_some_and(|c| c.peer().is_some());
                    self.drop_direct(now, id, !connected);
                    self.actions.push_back(SwitchAction::Close(id));
                    return;
                }
                Event::Message(frame) => {
                    let peer = self.directs.get(&id).and_then(|d| d.connection.as_ref()?.peer()).map(|p| p.vmac);
                    if let (Ok(BvlcSc { payload: Payload::EncapsulatedNpdu(npdu), .. }), Some(peer)) =
                        (BvlcSc::decode(&frame), peer)
                    {
                        self.up.push_back(Up { origin: Some(peer), broadcast: false, npdu: npdu.to_vec() });
                    }
                }
            }
        }
    }

    /// Forget `id`; a connection of ours that never connected makes its
    /// peer a failure for a while.
    fn drop_direct(&mut self, now: Duration, id: DirectId, failed: bool) {
        let Some(d) = self.directs.remove(&id) else { return };
        self.by_vmac.retain(|_, v| *v != id);
        if let Some(target) = d.target {
            if failed {
                self.counters.failed += 1;
                self.resolving.insert(target, Resolution::Failed(now + self.config.retry_after));
            } else {
                // Lost after working: ask again at the next send.
                self.resolving.remove(&target);
            }
        }
    }

    fn via_hub(&mut self, m: &BvlcSc<'_>) {
        let mut out = Vec::new();
        if m.encode(&mut out).is_ok() {
            self.actions.push_back(SwitchAction::ViaHub(out));
        }
    }

    fn next_id(&mut self) -> DirectId {
        while self.directs.contains_key(&self.next_id) {
            self.next_id = self.next_id.wrapping_add(1).max(1);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    fn message_id(&mut self) -> u16 {
        let id = self.next_message_id;
        self.next_message_id = self.next_message_id.wrapping_add(1);
        id
    }
}

#[cfg(test)]
mod tests;
