//! The client transaction state machine (Clause 5.4.4, requesting BACnet
//! user): invoke IDs per peer, the APDU timeout, retries, and a bound on
//! requests in flight per peer.
//!
//! Sans-IO in quinn-proto's shape. The driver calls, in any order:
//! - [`ClientTsm::start`] to begin a confirmed request;
//! - [`ClientTsm::handle_apdu`] for every APDU received from a peer;
//! - [`ClientTsm::handle_timeout`] when the instant from
//!   [`ClientTsm::poll_timeout`] has passed;
//!
//! and after each call drains [`ClientTsm::poll_transmit`] (APDUs to send) and
//! [`ClientTsm::poll_event`] (finished transactions). Time is a
//! `core::time::Duration` since any epoch the driver chooses; this module
//! never reads a clock.
//!
//! Segmented responses are not accepted yet (the request says so in its SA
//! bit); a peer that segments anyway gets an Abort segmentation-not-supported
//! and the transaction ends with that reason.

use crate::apdu::{Apdu, ConfirmedRequest, MaxApdu, MaxSegments};
use crate::enums::{AbortReason, ConfirmedServiceChoice, RejectReason};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::time::Duration;

/// Settings of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsmConfig {
    /// APDU_Timeout: how long to wait for an answer before retrying.
    pub apdu_timeout: Duration,
    /// Number_Of_APDU_Retries: retransmissions after the first attempt.
    pub retries: u8,
    /// Confirmed requests outstanding per peer; more wait in a queue.
    pub max_in_flight_per_peer: usize,
    /// Requests that may wait per peer before `start` refuses.
    pub max_queued_per_peer: usize,
    /// Max-APDU we announce in our requests.
    pub max_apdu_accepted: MaxApdu,
}

impl Default for TsmConfig {
    fn default() -> Self {
        TsmConfig {
            apdu_timeout: Duration::from_secs(3),
            retries: 3,
            max_in_flight_per_peer: 16,
            max_queued_per_peer: 1024,
            max_apdu_accepted: MaxApdu::UP_TO_1476,
        }
    }
}

/// Identifies one transaction to the driver, unique for the machine's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransactionId(pub u64);

/// How a transaction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// SimpleACK.
    SimpleAck,
    /// ComplexACK with the service ack body.
    ComplexAck(Vec<u8>),
    /// Error PDU with its error body (decode with `services::error`).
    Error(Vec<u8>),
    /// Reject PDU.
    Reject(RejectReason),
    /// Abort PDU (`server` false when we aborted it ourselves).
    Abort {
        /// Why.
        reason: AbortReason,
        /// The peer sent it (true) or this machine did (false).
        from_server: bool,
    },
    /// No answer after every retry.
    Timeout,
}

/// A finished transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    /// Which transaction.
    pub id: TransactionId,
    /// How it ended.
    pub outcome: Outcome,
}

/// An APDU to send to a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<A> {
    /// Destination.
    pub peer: A,
    /// The encoded APDU.
    pub apdu: Vec<u8>,
    /// True for confirmed requests (NPDU data-expecting-reply bit).
    pub expecting_reply: bool,
    /// The transaction this transmission belongs to (none for an Abort we
    /// send), so a driver that cannot send can [`ClientTsm::cancel`] it.
    pub transaction: Option<TransactionId>,
}

/// Why `start` refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartError {
    /// The peer's queue is full.
    QueueFull,
}

impl core::fmt::Display for StartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StartError::QueueFull => f.write_str("too many requests queued for this peer"),
        }
    }
}

impl core::error::Error for StartError {}

#[derive(Debug)]
struct Pending {
    id: TransactionId,
    service: ConfirmedServiceChoice,
    body: Vec<u8>,
    /// A queued request fails with `Timeout` if it has not been answered by
    /// the time a sent one would have exhausted its retries.
    deadline: Duration,
}

#[derive(Debug)]
struct Active {
    id: TransactionId,
    service: ConfirmedServiceChoice,
    apdu: Vec<u8>,
    deadline: Duration,
    retries_left: u8,
}

#[derive(Debug)]
struct PeerState {
    active: BTreeMap<u8, Active>,
    queue: VecDeque<Pending>,
}

impl PeerState {
    fn new() -> Self {
        PeerState { active: BTreeMap::new(), queue: VecDeque::new() }
    }
}

/// The client side of confirmed services for any number of peers, keyed by
/// an address type `A` the driver chooses.
#[derive(Debug)]
pub struct ClientTsm<A> {
    config: TsmConfig,
    peers: BTreeMap<A, PeerState>,
    next_id: u64,
    /// One counter for every peer, so a peer that goes idle and comes back
    /// does not see invoke ID 0 again: a late answer to an old request must
    /// not complete a new one.
    next_invoke_id: u8,
    transmits: VecDeque<Transmit<A>>,
    events: VecDeque<Completed>,
}

impl<A: Ord + Clone> ClientTsm<A> {
    /// A state machine with `config`.
    pub fn new(config: TsmConfig) -> Self {
        ClientTsm {
            config,
            peers: BTreeMap::new(),
            next_id: 0,
            next_invoke_id: 0,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &TsmConfig {
        &self.config
    }

    /// Begin a confirmed request of `service` with the encoded `body`. It is
    /// sent at once if the peer has a free slot, or queued.
    pub fn start(
        &mut self,
        now: Duration,
        peer: A,
        service: ConfirmedServiceChoice,
        body: Vec<u8>,
    ) -> Result<TransactionId, StartError> {
        let max_queued = self.config.max_queued_per_peer;
        let state = self.peers.entry(peer.clone()).or_insert_with(PeerState::new);
        if state.queue.len() >= max_queued {
            return Err(StartError::QueueFull);
        }
        let id = TransactionId(self.next_id);
        self.next_id += 1;
        let deadline = now.saturating_add(self.config.apdu_timeout.saturating_mul(self.config.retries as u32 + 1));
        state.queue.push_back(Pending { id, service, body, deadline });
        self.admit(now, &peer);
        Ok(id)
    }

    /// Move queued requests into free slots for `peer`.
    fn admit(&mut self, now: Duration, peer: &A) {
        let cfg = self.config;
        let Some(state) = self.peers.get_mut(peer) else { return };
        while state.active.len() < cfg.max_in_flight_per_peer.clamp(1, 256) {
            let Some(p) = state.queue.pop_front() else { break };
            // The next invoke ID not in use for this peer; one exists because
            // fewer than 256 are active.
            let mut invoke_id = self.next_invoke_id;
            while state.active.contains_key(&invoke_id) {
                invoke_id = invoke_id.wrapping_add(1);
            }
            self.next_invoke_id = invoke_id.wrapping_add(1);
            let mut apdu = Vec::with_capacity(4 + p.body.len());
            Apdu::ConfirmedRequest(ConfirmedRequest {
                segment: None,
                segmented_response_accepted: false,
                max_segments: MaxSegments::UNSPECIFIED,
                max_apdu: cfg.max_apdu_accepted,
                invoke_id,
                service: p.service,
                body: &p.body,
            })
            .encode(&mut apdu);
            self.transmits.push_back(Transmit {
                peer: peer.clone(),
                apdu: apdu.clone(),
                expecting_reply: true,
                transaction: Some(p.id),
            });
            state.active.insert(
                invoke_id,
                Active {
                    id: p.id,
                    service: p.service,
                    apdu,
                    deadline: now.saturating_add(cfg.apdu_timeout),
                    retries_left: cfg.retries,
                },
            );
        }
        if state.active.is_empty() && state.queue.is_empty() {
            self.peers.remove(peer);
        }
    }

    /// Feed an APDU received from `peer`. Returns true when it belonged to
    /// one of our transactions (answers to unknown invoke IDs are ignored,
    /// as the standard requires).
    pub fn handle_apdu(&mut self, now: Duration, peer: &A, apdu: &Apdu<'_>) -> bool {
        // An answer naming another service than the request is not its answer.
        let answered_service = match apdu {
            Apdu::SimpleAck { service, .. } | Apdu::Error { service, .. } => Some(*service),
            Apdu::ComplexAck(c) => Some(c.service),
            _ => None,
        };
        if let (Some(service), Some(invoke_id)) = (answered_service, apdu.invoke_id())
            && self.peers.get(peer).and_then(|s| s.active.get(&invoke_id)).is_some_and(|a| a.service != service)
        {
            return false;
        }
        let (invoke_id, outcome) = match apdu {
            Apdu::SimpleAck { invoke_id, .. } => (*invoke_id, Outcome::SimpleAck),
            Apdu::ComplexAck(c) if c.segment.is_none() => (c.invoke_id, Outcome::ComplexAck(c.body.to_vec())),
            Apdu::ComplexAck(c) => {
                // We did not accept segmentation: tell the server and give up.
                if !self.is_active(peer, c.invoke_id) {
                    return false;
                }
                let mut abort = Vec::with_capacity(3);
                Apdu::Abort { server: false, invoke_id: c.invoke_id, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED }
                    .encode(&mut abort);
                self.transmits.push_back(Transmit {
                    peer: peer.clone(),
                    apdu: abort,
                    expecting_reply: false,
                    transaction: None,
                });
                (c.invoke_id, Outcome::Abort { reason: AbortReason::SEGMENTATION_NOT_SUPPORTED, from_server: false })
            }
            Apdu::Error { invoke_id, body, .. } => (*invoke_id, Outcome::Error(body.to_vec())),
            Apdu::Reject { invoke_id, reason } => (*invoke_id, Outcome::Reject(*reason)),
            Apdu::Abort { server: true, invoke_id, reason } => {
                (*invoke_id, Outcome::Abort { reason: *reason, from_server: true })
            }
            _ => return false,
        };
        self.finish(now, peer, invoke_id, outcome)
    }

    fn is_active(&self, peer: &A, invoke_id: u8) -> bool {
        self.peers.get(peer).is_some_and(|s| s.active.contains_key(&invoke_id))
    }

    fn finish(&mut self, now: Duration, peer: &A, invoke_id: u8, outcome: Outcome) -> bool {
        let Some(state) = self.peers.get_mut(peer) else { return false };
        let Some(active) = state.active.remove(&invoke_id) else { return false };
        self.events.push_back(Completed { id: active.id, outcome });
        self.admit(now, peer);
        true
    }

    /// Stop waiting for a transaction (its answer, if any comes, is
    /// ignored). Returns true if it was known.
    pub fn cancel(&mut self, now: Duration, id: TransactionId) -> bool {
        let mut found = None;
        for (peer, state) in self.peers.iter_mut() {
            if let Some(pos) = state.queue.iter().position(|p| p.id == id) {
                state.queue.remove(pos);
                found = Some(peer.clone());
                break;
            }
            if let Some(invoke) = state.active.iter().find(|(_, a)| a.id == id).map(|(k, _)| *k) {
                state.active.remove(&invoke);
                found = Some(peer.clone());
                break;
            }
        }
        match found {
            Some(peer) => {
                self.admit(now, &peer);
                true
            }
            None => false,
        }
    }

    /// Retransmit or time out every transaction whose deadline has passed.
    pub fn handle_timeout(&mut self, now: Duration) {
        let timeout = self.config.apdu_timeout;
        let mut expired: Vec<(A, u8)> = Vec::new();
        for (peer, state) in self.peers.iter_mut() {
            for (invoke_id, a) in state.active.iter_mut() {
                if a.deadline > now {
                    continue;
                }
                if a.retries_left > 0 {
                    a.retries_left -= 1;
                    a.deadline = now.saturating_add(timeout);
                    self.transmits.push_back(Transmit {
                        peer: peer.clone(),
                        apdu: a.apdu.clone(),
                        expecting_reply: true,
                        transaction: Some(a.id),
                    });
                } else {
                    expired.push((peer.clone(), *invoke_id));
                }
            }
        }
        for (peer, invoke_id) in expired {
            self.finish(now, &peer, invoke_id, Outcome::Timeout);
        }
        // Requests that waited in a queue as long as a sent one may take.
        let mut emptied = Vec::new();
        for (peer, state) in self.peers.iter_mut() {
            while let Some(pos) = state.queue.iter().position(|p| p.deadline <= now) {
                if let Some(p) = state.queue.remove(pos) {
                    self.events.push_back(Completed { id: p.id, outcome: Outcome::Timeout });
                }
            }
            if state.active.is_empty() && state.queue.is_empty() {
                emptied.push(peer.clone());
            }
        }
        for peer in emptied {
            self.peers.remove(&peer);
        }
    }

    /// The earliest deadline of any transaction.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.peers
            .values()
            .flat_map(|s| s.active.values().map(|a| a.deadline).chain(s.queue.iter().map(|p| p.deadline)))
            .min()
    }

    /// The next APDU to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit<A>> {
        self.transmits.pop_front()
    }

    /// The next finished transaction.
    pub fn poll_event(&mut self) -> Option<Completed> {
        self.events.pop_front()
    }

    /// Transactions sent and awaiting an answer, over all peers.
    pub fn in_flight(&self) -> usize {
        self.peers.values().map(|s| s.active.len()).sum()
    }

    /// Transactions waiting for a free slot, over all peers.
    pub fn queued(&self) -> usize {
        self.peers.values().map(|s| s.queue.len()).sum()
    }
}
