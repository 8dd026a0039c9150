//! One BACnet/SC connection's state machine (Annex AB.6), sans-IO: the
//! initiating peer's (a node connecting to a hub, or a direct connection)
//! and the accepting peer's (a hub, or a node's direct-connect listener),
//! over a WebSocket the host has already opened.
//!
//! ```text
//! initiating: ──Connect-Request──▶ AwaitingAccept ──Connect-Accept──▶ Connected ──Disconnect-Request──▶ Disconnecting ──ACK──▶ Closed
//! accepting:  AwaitingRequest ──Connect-Request (admitted)──▶ Connect-Accept, Connected
//!                             ──Connect-Request (VMAC taken)──▶ NAK node-duplicate-vmac, Closed
//! ```
//!
//! Time comes in as `now`; the deadlines leave through
//! [`Connection::poll_timeout`]:
//! - *connect wait*: no Connect-Accept (initiating) or Connect-Request
//!   (accepting) in time → Closed;
//! - *heartbeat*: on a connected link, the initiating peer sends a
//!   Heartbeat-Request after a heartbeat period without receiving anything,
//!   and either peer closes after two periods of silence (our reading of
//!   AB.6.3: the accepting peer waits twice the initiating peer's period);
//! - *disconnect wait*: no Disconnect-ACK in time → Closed anyway.
//!
//! Every message that arrives is decoded by `bvlc_sc`; one that does not
//! decode gets the NAK it is owed. Heartbeats, connects and disconnects
//! are answered here; everything else comes up as an [`Event`] for the hub
//! function or the node. Frames to write are taken with
//! [`Connection::poll_transmit`], one WebSocket binary message each.
//!
//! Must never: send anything but a Connect-Request (initiating) before the
//! link is connected, answer a result or an ACK, or keep more than
//! [`MAX_QUEUED`] frames waiting (the oldest-but-first are not dropped:
//! the newest is refused and counted).

use crate::bvlc_sc::{BvlcSc, ConnectInfo, Options, Payload, ScNak, function};
use crate::enums::{ErrorClass, ErrorCode};
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;

/// Frames waiting to be written, at most.
pub const MAX_QUEUED: usize = 256;

/// How a connection runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// Our VMAC, UUID and sizes, as a Connect-Request or -Accept says them.
    pub local: ConnectInfo,
    /// How long a connection may take to be established (default 10 s).
    pub connect_wait: Duration,
    /// How long a Disconnect-ACK may take (default 10 s).
    pub disconnect_wait: Duration,
    /// The heartbeat period (default 300 s).
    pub heartbeat: Duration,
}

impl ConnectionConfig {
    /// The defaults for `local`.
    pub fn new(local: ConnectInfo) -> Self {
        ConnectionConfig {
            local,
            connect_wait: Duration::from_secs(10),
            disconnect_wait: Duration::from_secs(10),
            heartbeat: Duration::from_secs(300),
        }
    }
}

/// Which end of the connection we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// We sent the Connect-Request.
    Initiating,
    /// We answer it.
    Accepting,
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Initiating: Connect-Request sent.
    AwaitingAccept,
    /// Accepting: waiting for the Connect-Request.
    AwaitingRequest,
    /// Both sides connected.
    Connected,
    /// Disconnect-Request sent.
    Disconnecting,
    /// Over; the host closes the WebSocket.
    Closed(CloseReason),
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// A Disconnect-Request, ours or the peer's, was acknowledged (or its wait ran out).
    Disconnected,
    /// The connection was not established within the connect wait.
    ConnectTimeout,
    /// Nothing received for two heartbeat periods.
    HeartbeatTimeout,
    /// The peer refused our Connect-Request: our VMAC is in use (pick another).
    DuplicateVmac,
    /// The peer refused our Connect-Request for another reason (the NAK's code).
    Refused(u16),
    /// We refused the peer's Connect-Request (the NAK's code).
    RefusedPeer(u16),
    /// The peer broke the protocol (a message before the connection, or a
    /// Connect-Request twice).
    ProtocolError,
}

/// The peer, as its Connect-Request or Connect-Accept described it.
pub type PeerInfo = ConnectInfo;

/// Whether an accepting peer takes a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Take it.
    Accept,
    /// Its VMAC is another device's (a different UUID): NAK node-duplicate-vmac.
    DuplicateVmac,
    /// Refuse it with this error code (e.g. out of resources at the bound).
    Refuse(ErrorCode),
}

/// What the connection tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Connected to this peer.
    Connected(PeerInfo),
    /// A message for the owner (an Encapsulated-NPDU, Address-Resolution,
    /// Advertisement, a result of ours, a proprietary message…), as received.
    Message(Vec<u8>),
    /// The connection ended.
    Closed(CloseReason),
}

/// What was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionCounters {
    /// Messages that did not decode.
    pub malformed: u64,
    /// NAKs sent for them.
    pub naks_sent: u64,
    /// Heartbeat-Requests sent.
    pub heartbeats_sent: u64,
    /// Frames refused because the queue was full.
    pub queue_full: u64,
}

/// One connection.
#[derive(Debug, Clone)]
pub struct Connection {
    role: Role,
    state: State,
    config: ConnectionConfig,
    peer: Option<PeerInfo>,
    /// When the current wait (connect, disconnect) ends.
    deadline: Option<Duration>,
    last_received: Duration,
    heartbeat_pending: bool,
    next_message_id: u16,
    out: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    counters: ConnectionCounters,
}

impl Connection {
    /// We opened the WebSocket: send the Connect-Request.
    pub fn initiate(now: Duration, config: ConnectionConfig) -> Connection {
        let mut c = Connection::new(now, Role::Initiating, State::AwaitingAccept, config);
        let id = c.message_id();
        c.queue(&BvlcSc { message_id: id, ..bare(Payload::ConnectRequest(config.local)) });
        c
    }

    /// A peer opened a WebSocket to us: wait for its Connect-Request.
    pub fn accept(now: Duration, config: ConnectionConfig) -> Connection {
        Connection::new(now, Role::Accepting, State::AwaitingRequest, config)
    }

    fn new(now: Duration, role: Role, state: State, config: ConnectionConfig) -> Connection {
        Connection {
            role,
            state,
            config,
            peer: None,
            deadline: Some(now + config.connect_wait),
            last_received: now,
            heartbeat_pending: false,
            next_message_id: 1,
            out: VecDeque::new(),
            events: VecDeque::new(),
            counters: ConnectionCounters::default(),
        }
    }

    /// Where it is.
    pub fn state(&self) -> State {
        self.state
    }

    /// Which end we are.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The peer, once connected.
    pub fn peer(&self) -> Option<PeerInfo> {
        self.peer
    }

    /// What was counted.
    pub fn counters(&self) -> ConnectionCounters {
        self.counters
    }

    /// The next frame to write.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        match self.state {
            State::Closed(_) => None,
            State::Connected => {
                let silence = self.last_received + self.config.heartbeat;
                let give_up = self.last_received + self.config.heartbeat * 2;
                Some(if self.role == Role::Initiating && !self.heartbeat_pending { silence } else { give_up })
            }
            _ => self.deadline,
        }
    }

    /// Let time pass.
    pub fn handle_timeout(&mut self, now: Duration) {
        match self.state {
            State::AwaitingAccept | State::AwaitingRequest if self.deadline.is_some_and(|d| now >= d) => {
                self.close(CloseReason::ConnectTimeout)
            }
            State::Disconnecting if self.deadline.is_some_and(|d| now >= d) => self.close(CloseReason::Disconnected),
            State::Connected => {
                let silent = now.saturating_sub(self.last_received);
                if silent >= self.config.heartbeat * 2 {
                    self.close(CloseReason::HeartbeatTimeout);
                } else if self.role == Role::Initiating && silent >= self.config.heartbeat && !self.heartbeat_pending {
                    let id = self.message_id();
                    self.queue(&BvlcSc { message_id: id, ..bare(Payload::HeartbeatRequest) });
                    self.heartbeat_pending = true;
                    self.counters.heartbeats_sent += 1;
                }
            }
            _ => {}
        }
    }

    /// Send an already-encoded message (an Encapsulated-NPDU, an
    /// Address-Resolution…) on a connected link. Refused (false, counted)
    /// when not connected or when the queue is full.
    pub fn send(&mut self, frame: Vec<u8>) -> bool {
        if self.state != State::Connected {
            return false;
        }
        self.push(frame)
    }

    /// A fresh message ID for a message of ours.
    pub fn message_id(&mut self) -> u16 {
        let id = self.next_message_id;
        self.next_message_id = self.next_message_id.wrapping_add(1);
        id
    }

    /// End the connection: Disconnect-Request, then Closed at its ACK (or
    /// after the disconnect wait).
    pub fn disconnect(&mut self, now: Duration) {
        match self.state {
            State::Connected => {
                let id = self.message_id();
                self.queue(&BvlcSc { message_id: id, ..bare(Payload::DisconnectRequest) });
                self.state = State::Disconnecting;
                self.deadline = Some(now + self.config.disconnect_wait);
            }
            State::AwaitingAccept | State::AwaitingRequest => self.close(CloseReason::Disconnected),
            _ => {}
        }
    }

    /// A frame received. On the accepting side, `admit` decides whether a
    /// Connect-Request is taken (the hub's VMAC and UUID table).
    pub fn handle_frame(&mut self, now: Duration, frame: &[u8], admit: &mut dyn FnMut(&PeerInfo) -> Admission) {
        if matches!(self.state, State::Closed(_)) {
            return;
        }
        self.last_received = now;
        let m = match BvlcSc::decode(frame) {
            Ok(m) => m,
            Err(e) => {
                self.counters.malformed += 1;
                if let Some(nak) = BvlcSc::nak(&e, e.what) {
                    self.counters.naks_sent += 1;
                    self.queue(&nak);
                }
                return;
            }
        };
        match (self.state, m.payload) {
            (State::AwaitingRequest, Payload::ConnectRequest(peer)) => match admit(&peer) {
                Admission::Accept => {
                    let accept = BvlcSc { message_id: m.message_id, ..bare(Payload::ConnectAccept(self.config.local)) };
                    self.queue(&accept);
                    self.connected(peer);
                }
                refusal => {
                    let code = match refusal {
                        Admission::DuplicateVmac => ErrorCode::NODE_DUPLICATE_VMAC,
                        Admission::Refuse(code) => code,
                        Admission::Accept => unreachable!("handled above"),
                    };
                    self.queue(&nak_for(function::CONNECT_REQUEST, m.message_id, code));
                    self.close(CloseReason::RefusedPeer(code.0 as u16));
                }
            },
            (State::AwaitingAccept, Payload::ConnectAccept(peer)) => self.connected(peer),
            (State::AwaitingAccept, Payload::Result { function: function::CONNECT_REQUEST, nak: Some(n) }) => {
                let reason = if u32::from(n.code) == ErrorCode::NODE_DUPLICATE_VMAC.0 {
                    CloseReason::DuplicateVmac
                } else {
                    CloseReason::Refused(n.code)
                };
                self.close(reason)
            }
            (State::AwaitingAccept | State::AwaitingRequest, _) => self.close(CloseReason::ProtocolError),
            (_, Payload::ConnectRequest(_) | Payload::ConnectAccept(_)) => self.close(CloseReason::ProtocolError),
            (_, Payload::HeartbeatRequest) => {
                self.queue(&BvlcSc { message_id: m.message_id, ..bare(Payload::HeartbeatAck) });
            }
            (_, Payload::HeartbeatAck) => self.heartbeat_pending = false,
            (_, Payload::DisconnectRequest) => {
                self.queue(&BvlcSc { message_id: m.message_id, ..bare(Payload::DisconnectAck) });
                self.close(CloseReason::Disconnected);
            }
            (State::Disconnecting, Payload::DisconnectAck) => self.close(CloseReason::Disconnected),
            (_, Payload::DisconnectAck) => {}
            (State::Disconnecting, _) => {}
            _ => self.events.push_back(Event::Message(frame.to_vec())),
        }
    }

    fn connected(&mut self, peer: PeerInfo) {
        self.state = State::Connected;
        self.peer = Some(peer);
        self.deadline = None;
        self.events.push_back(Event::Connected(peer));
    }

    fn close(&mut self, reason: CloseReason) {
        if !matches!(self.state, State::Closed(_)) {
            self.state = State::Closed(reason);
            self.deadline = None;
            self.events.push_back(Event::Closed(reason));
        }
    }

    fn queue(&mut self, m: &BvlcSc<'_>) {
        let mut frame = Vec::new();
        if m.encode(&mut frame).is_ok() {
            self.push(frame);
        }
    }

    fn push(&mut self, frame: Vec<u8>) -> bool {
        if self.out.len() >= MAX_QUEUED {
            self.counters.queue_full += 1;
            return false;
        }
        self.out.push_back(frame);
        true
    }
}

/// A message with no VMACs and no options.
pub(super) fn bare(payload: Payload<'_>) -> BvlcSc<'_> {
    BvlcSc {
        message_id: 0,
        origin: None,
        destination: None,
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload,
    }
}

/// A BVLC-Result NAK for `function`'s message `message_id`.
pub fn nak_for(function: u8, message_id: u16, code: ErrorCode) -> BvlcSc<'static> {
    BvlcSc {
        message_id,
        ..bare(Payload::Result {
            function,
            nak: Some(ScNak {
                header_marker: 0,
                class: ErrorClass::COMMUNICATION.0 as u16,
                code: code.0 as u16,
                details: "",
            }),
        })
    }
}

#[cfg(test)]
mod tests;
