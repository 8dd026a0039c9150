//! A node's hub connector (Annex AB.5.2), sans-IO: one connection to the
//! primary hub, or to the failover hub while the primary cannot be
//! reached, and back to the primary as soon as it can.
//!
//! ```text
//! start ──open primary──▶ connected to primary
//!   primary refused/closed ──open failover──▶ connected to failover
//!     every reconnect interval: ──open primary──▶ (on success) disconnect failover
//!   both down: wait the reconnect interval (doubling up to its maximum), try the primary again
//! ```
//!
//! The host owns the WebSockets. The connector says which hub to open
//! ([`Action::Open`]) or close ([`Action::Close`]) and which frames to write
//! to which ([`Action::Send`]); the host reports [`HubConnector::opened`],
//! [`HubConnector::open_failed`], [`HubConnector::closed`] and every frame
//! ([`HubConnector::handle_frame`]). NPDUs go out through
//! [`HubConnector::send_npdu`] on the hub in use and come up as
//! [`Up`]s. A hub that refuses our VMAC as a duplicate makes the connector
//! stop and ask for a new one ([`HubConnector::duplicate_vmac`]): the
//! host picks a random VMAC (Clause H.7.3) and calls
//! [`HubConnector::set_vmac`].
//!
//! Must never: hold connections to both hubs except while the primary's
//! connection is being established beside the failover's, or retry
//! faster than the reconnect interval.

use super::connection::{Admission, CloseReason, Connection, ConnectionConfig, Event, State};
use crate::bvlc_sc::{BvlcSc, HubConnectionStatus, Options, Payload, ScVmac};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;

/// Which hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HubChoice {
    /// The primary hub.
    Primary,
    /// The failover hub.
    Failover,
}

/// What the host is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Open a WebSocket to this hub's URI.
    Open(HubChoice),
    /// Close the WebSocket to this hub.
    Close(HubChoice),
    /// Write this frame to this hub's WebSocket.
    Send(HubChoice, Vec<u8>),
}

/// An NPDU from the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Up {
    /// The sender's VMAC.
    pub origin: Option<ScVmac>,
    /// It was a broadcast.
    pub broadcast: bool,
    /// The NPDU.
    pub npdu: Vec<u8>,
}

/// How the connector runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectorConfig {
    /// Each connection's settings (our VMAC and UUID among them).
    pub connection: ConnectionConfig,
    /// Whether a failover hub is configured.
    pub has_failover: bool,
    /// The first wait after both hubs failed, and how often the primary is
    /// tried while on the failover (default 10 s).
    pub reconnect: Duration,
    /// The longest wait between attempts when both keep failing (default 120 s).
    pub max_reconnect: Duration,
    /// Hand Address-Resolution messages (requests, ACKs, NAKs of ours) to
    /// the host's node switch ([`HubConnector::poll_message`]) rather than
    /// answer a request with the NAK of a node without one (default false).
    pub node_switch: bool,
}

impl ConnectorConfig {
    /// The defaults around `connection`.
    pub fn new(connection: ConnectionConfig, has_failover: bool) -> Self {
        ConnectorConfig {
            connection,
            has_failover,
            reconnect: Duration::from_secs(10),
            max_reconnect: Duration::from_secs(120),
            node_switch: false,
        }
    }
}

/// One hub's link.
#[derive(Debug, Clone)]
struct Link {
    hub: HubChoice,
    /// `None` while the WebSocket is being opened.
    connection: Option<Connection>,
}

/// The hub connector.
#[derive(Debug, Clone)]
pub struct HubConnector {
    config: ConnectorConfig,
    links: Vec<Link>,
    /// When both are down: the next attempt, and the current back-off.
    retry_at: Option<Duration>,
    backoff: Duration,
    /// While on the failover: the next try of the primary.
    primary_at: Option<Duration>,
    /// Waiting for a new VMAC.
    needs_vmac: bool,
    /// Messages for the host's node switch.
    messages: VecDeque<Vec<u8>>,
    /// Duplicate-VMAC refusals since the last connection, and when the
    /// last came: from the second on, the next attempt waits its back-off.
    duplicates: u32,
    duplicate_at: Duration,
    actions: VecDeque<Action>,
    up: VecDeque<Up>,
    /// Connections made, failovers, refusals: for the Network Port object.
    counters: ConnectorCounters,
}

/// What the connector counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectorCounters {
    /// Connections established (either hub).
    pub connects: u64,
    /// Times the failover hub took over.
    pub failovers: u64,
    /// Attempts that failed (WebSocket, TLS or BACnet/SC refusal).
    pub failed_attempts: u64,
    /// NPDUs not sent: no hub connected, or its queue full.
    pub unsent: u64,
}

impl HubConnector {
    /// A connector that starts by opening the primary hub.
    pub fn new(config: ConnectorConfig) -> HubConnector {
        let mut c = HubConnector {
            config,
            links: Vec::new(),
            retry_at: None,
            backoff: config.reconnect,
            primary_at: None,
            needs_vmac: false,
            messages: VecDeque::new(),
            duplicates: 0,
            duplicate_at: Duration::ZERO,
            actions: VecDeque::new(),
            up: VecDeque::new(),
            counters: ConnectorCounters::default(),
        };
        c.open(HubChoice::Primary);
        c
    }

    /// AB's Hub_Connector_State: which hub carries our traffic.
    pub fn status(&self) -> HubConnectionStatus {
        match self.active() {
            Some(HubChoice::Primary) => HubConnectionStatus::CONNECTED_TO_PRIMARY,
            Some(HubChoice::Failover) => HubConnectionStatus::CONNECTED_TO_FAILOVER,
            None => HubConnectionStatus::NO_HUB_CONNECTION,
        }
    }

    /// What it counted.
    pub fn counters(&self) -> ConnectorCounters {
        self.counters
    }

    /// Whether a hub refused our VMAC and the connector waits for
    /// [`set_vmac`](Self::set_vmac).
    pub fn duplicate_vmac(&self) -> bool {
        self.needs_vmac
    }

    /// Use `vmac` from now on (after a duplicate), and start again: at
    /// once after a first refusal, after the back-off from the second in a
    /// row (a hub that refuses every VMAC is not hammered).
    pub fn set_vmac(&mut self, vmac: ScVmac) {
        self.config.connection.local.vmac = vmac;
        if self.needs_vmac {
            self.needs_vmac = false;
            if self.duplicates > 1 {
                self.retry_at = Some(self.duplicate_at + self.backoff);
                self.backoff = (self.backoff * 2).min(self.config.max_reconnect);
            } else {
                self.open(HubChoice::Primary);
            }
        }
    }

    /// The next thing for the host to do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.collect();
        self.actions.pop_front()
    }

    /// The next NPDU received.
    pub fn poll_up(&mut self) -> Option<Up> {
        self.collect();
        self.up.pop_front()
    }

    /// The hub that carries our traffic: a connected link, the primary
    /// preferred.
    fn active(&self) -> Option<HubChoice> {
        let connected = |h| {
            self.links
                .iter()
                .any(|l| l.hub == h && l.connection.as_ref().is_some_and(|c| c.state() == State::Connected))
        };
        [HubChoice::Primary, HubChoice::Failover].into_iter().find(|h| connected(*h))
    }

    /// Send an NPDU to `destination` (a VMAC, or [`crate::bvlc_sc::BROADCAST_VMAC`])
    /// through the hub in use; false (counted) when there is none.
    pub fn send_npdu(&mut self, destination: ScVmac, npdu: &[u8]) -> bool {
        let Some(hub) = self.active() else {
            self.counters.unsent += 1;
            return false;
        };
        let Some(link) = self.links.iter_mut().find(|l| l.hub == hub) else { return false };
        let Some(c) = link.connection.as_mut() else { return false };
        let m = BvlcSc {
            message_id: c.message_id(),
            origin: None,
            destination: Some(destination),
            destination_options: Options::NONE,
            data_options: Options::NONE,
            payload: Payload::EncapsulatedNpdu(npdu),
        };
        let mut frame = Vec::new();
        if m.encode(&mut frame).is_err() || !c.send(frame) {
            self.counters.unsent += 1;
            return false;
        }
        true
    }

    /// Send a BVLC-SC message of the host's (a node switch's) through the
    /// hub in use; false if none is connected.
    pub fn send_frame(&mut self, frame: Vec<u8>) -> bool {
        let Some(hub) = self.active() else { return false };
        let Some(c) = self.links.iter_mut().find(|l| l.hub == hub).and_then(|l| l.connection.as_mut()) else {
            return false;
        };
        c.send(frame)
    }

    /// The next message for the host's node switch (with
    /// [`ConnectorConfig::node_switch`]).
    pub fn poll_message(&mut self) -> Option<Vec<u8>> {
        self.messages.pop_front()
    }

    /// The WebSocket to `hub` is open (TLS and subprotocol agreed).
    pub fn opened(&mut self, now: Duration, hub: HubChoice) {
        if let Some(link) = self.links.iter_mut().find(|l| l.hub == hub && l.connection.is_none()) {
            link.connection = Some(Connection::initiate(now, self.config.connection));
        }
    }

    /// The WebSocket to `hub` could not be opened.
    pub fn open_failed(&mut self, now: Duration, hub: HubChoice) {
        self.counters.failed_attempts += 1;
        self.links.retain(|l| l.hub != hub);
        self.after_loss(now, hub);
    }

    /// The WebSocket to `hub` closed underneath.
    pub fn closed(&mut self, now: Duration, hub: HubChoice) {
        if self.links.iter().any(|l| l.hub == hub) {
            self.links.retain(|l| l.hub != hub);
            self.after_loss(now, hub);
        }
    }

    /// A frame from `hub`.
    pub fn handle_frame(&mut self, now: Duration, hub: HubChoice, frame: &[u8]) {
        if let Some(c) = self.links.iter_mut().find(|l| l.hub == hub).and_then(|l| l.connection.as_mut()) {
            c.handle_frame(now, frame, &mut |_| Admission::Accept);
        }
        self.settle(now);
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let links = self.links.iter().filter_map(|l| l.connection.as_ref()?.poll_timeout());
        links.chain(self.retry_at).chain(self.primary_at).min()
    }

    /// Let time pass.
    pub fn handle_timeout(&mut self, now: Duration) {
        for l in &mut self.links {
            if let Some(c) = l.connection.as_mut() {
                c.handle_timeout(now);
            }
        }
        if self.retry_at.is_some_and(|t| now >= t) && self.links.is_empty() && !self.needs_vmac {
            self.retry_at = None;
            self.open(HubChoice::Primary);
        }
        if self.primary_at.is_some_and(|t| now >= t) {
            self.primary_at = None;
            if self.active() == Some(HubChoice::Failover) && !self.links.iter().any(|l| l.hub == HubChoice::Primary) {
                self.open(HubChoice::Primary);
            }
        }
        self.settle(now);
    }

    fn open(&mut self, hub: HubChoice) {
        self.links.push(Link { hub, connection: None });
        self.actions.push_back(Action::Open(hub));
    }

    /// Look at every link's events: connections made and lost.
    fn settle(&mut self, now: Duration) {
        let mut lost = Vec::new();
        let mut connected = Vec::new();
        for l in &mut self.links {
            let Some(c) = l.connection.as_mut() else { continue };
            while let Some(e) = c.poll_event() {
                match e {
                    Event::Connected(_) => connected.push(l.hub),
                    Event::Closed(reason) => lost.push((l.hub, reason)),
                    Event::Message(frame) => match BvlcSc::decode(&frame) {
                        Ok(BvlcSc { payload: Payload::EncapsulatedNpdu(npdu), origin, destination, .. }) => {
                            let broadcast = destination == Some(crate::bvlc_sc::BROADCAST_VMAC);
                            self.up.push_back(Up { origin, broadcast, npdu: npdu.to_vec() });
                        }
                        // For the host's node switch.
                        Ok(BvlcSc {
                            payload:
                                Payload::AddressResolution
                                | Payload::AddressResolutionAck(_)
                                | Payload::Result { function: crate::bvlc_sc::function::ADDRESS_RESOLUTION, .. },
                            origin: Some(_),
                            ..
                        }) if self.config.node_switch => self.messages.push_back(frame),
                        // No node switch here (AB.4): an Address-Resolution
                        // from another node gets the NAK that says so, back
                        // through the hub to its origin.
                        Ok(BvlcSc {
                            payload: Payload::AddressResolution, origin: Some(origin), message_id, ..
                        }) => {
                            let nak = BvlcSc {
                                destination: Some(origin),
                                ..super::connection::nak_for(
                                    crate::bvlc_sc::function::ADDRESS_RESOLUTION,
                                    message_id,
                                    crate::enums::ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED,
                                )
                            };
                            let mut out = Vec::new();
                            if nak.encode(&mut out).is_ok() {
                                c.send(out);
                            }
                        }
                        _ => {}
                    },
                }
            }
        }
        for hub in connected {
            self.counters.connects += 1;
            self.duplicates = 0;
            self.backoff = self.config.reconnect;
            self.retry_at = None;
            match hub {
                HubChoice::Primary => {
                    // Back on the primary: the failover goes.
                    if let Some(f) = self.links.iter_mut().find(|l| l.hub == HubChoice::Failover) {
                        match f.connection.as_mut() {
                            Some(c) if c.state() == State::Connected => c.disconnect(now),
                            _ => {
                                self.links.retain(|l| l.hub != HubChoice::Failover);
                                self.actions.push_back(Action::Close(HubChoice::Failover));
                            }
                        }
                    }
                    self.primary_at = None;
                }
                HubChoice::Failover => {
                    self.counters.failovers += 1;
                    self.primary_at = Some(now + self.config.reconnect);
                }
            }
        }
        for (hub, reason) in lost {
            // What the connection still had to say (a Disconnect-ACK) goes
            // out before the close.
            if let Some(c) = self.links.iter_mut().find(|l| l.hub == hub).and_then(|l| l.connection.as_mut()) {
                while let Some(frame) = c.poll_transmit() {
                    self.actions.push_back(Action::Send(hub, frame));
                }
            }
            self.links.retain(|l| l.hub != hub);
            self.actions.push_back(Action::Close(hub));
            if !matches!(reason, CloseReason::Disconnected) {
                self.counters.failed_attempts += 1;
            }
            if reason == CloseReason::DuplicateVmac {
                self.needs_vmac = true;
                self.duplicates += 1;
                self.duplicate_at = now;
                for l in core::mem::take(&mut self.links) {
                    self.actions.push_back(Action::Close(l.hub));
                }
                continue;
            }
            self.after_loss(now, hub);
        }
    }

    /// `hub` is gone: try the other, or wait and start again.
    fn after_loss(&mut self, now: Duration, hub: HubChoice) {
        if self.needs_vmac {
            return;
        }
        match hub {
            HubChoice::Primary
                if self.config.has_failover && !self.links.iter().any(|l| l.hub == HubChoice::Failover) =>
            {
                self.open(HubChoice::Failover)
            }
            HubChoice::Primary if self.active() == Some(HubChoice::Failover) => {
                self.primary_at = Some(now + self.config.reconnect);
            }
            _ => {}
        }
        if self.links.is_empty() {
            self.retry_at = Some(now + self.backoff);
            self.backoff = (self.backoff * 2).min(self.config.max_reconnect);
        }
    }

    /// Move what the connections queued into actions.
    fn collect(&mut self) {
        for l in &mut self.links {
            if let Some(c) = l.connection.as_mut() {
                while let Some(frame) = c.poll_transmit() {
                    self.actions.push_back(Action::Send(l.hub, frame));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
