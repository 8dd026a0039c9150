//! The client transaction state machine (Clause 5.4.4, requesting BACnet
//! user): invoke IDs, the APDU timeout, retries, a bound on requests in
//! flight per peer, and segmentation both ways.
//!
//! Sans-IO in quinn-proto's shape. The driver calls, in any order:
//! - [`ClientTsm::start`] (or [`ClientTsm::start_with`]) to begin a
//!   confirmed request;
//! - [`ClientTsm::handle_apdu`] for every APDU received from a peer;
//! - [`ClientTsm::handle_timeout`] when the instant from
//!   [`ClientTsm::poll_timeout`] has passed;
//!
//! and after each call drains [`ClientTsm::poll_transmit`] (APDUs to send) and
//! [`ClientTsm::poll_event`] (finished transactions). Time is a
//! `core::time::Duration` since any epoch the driver chooses; this module
//! never reads a clock.
//!
//! States per transaction, as Clause 5.4.4 names them: SEGMENTED_REQUEST
//! (sending a request too long for one APDU, a window at a time),
//! AWAIT_CONFIRMATION, SEGMENTED_CONFIRMATION (reassembling a segmented
//! ComplexACK). A request waiting for a free slot is queued and times out
//! like a sent one.

use super::segment::{
    AckOutcome, Reassembly, ReassemblyLimits, SegmentOutcome, SegmentedKind, Segmenter, segments_needed,
};
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
    /// Accept segmented answers (the SA bit of our requests).
    pub segmented_response_accepted: bool,
    /// Max-segments we announce, and enforce, for segmented answers.
    pub max_segments_accepted: MaxSegments,
    /// Most service-data octets accepted in a segmented answer.
    pub max_response_octets: usize,
    /// T_seg: how long to wait for a Segment-ACK before resending a window;
    /// four times this (T_wait_for_seg) for the next segment of an answer.
    pub segment_timeout: Duration,
    /// The window we propose when segmenting and accept when receiving.
    pub window_size: u8,
}

impl Default for TsmConfig {
    fn default() -> Self {
        TsmConfig {
            apdu_timeout: Duration::from_secs(3),
            retries: 3,
            max_in_flight_per_peer: 16,
            max_queued_per_peer: 1024,
            max_apdu_accepted: MaxApdu::UP_TO_1476,
            segmented_response_accepted: true,
            max_segments_accepted: MaxSegments::at_least(64),
            max_response_octets: 1 << 20,
            segment_timeout: Duration::from_secs(2),
            window_size: 16,
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

/// What the client knows of a peer's capacity (from its I-Am or Device
/// object), used to decide whether and how to segment a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerLimits {
    /// Max_APDU_Length_Accepted.
    pub max_apdu: usize,
    /// The peer receives segmented requests (Segmentation_Supported is
    /// segmented-both or segmented-receive).
    pub segmented_receive: bool,
    /// Max_Segments_Accepted, `None` when unknown or unlimited.
    pub max_segments: Option<usize>,
}

impl Default for PeerLimits {
    /// A B/IP peer we know nothing of: 1476 octets, and we try segmenting.
    fn default() -> Self {
        PeerLimits { max_apdu: 1476, segmented_receive: true, max_segments: None }
    }
}

/// Why `start` refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartError {
    /// The peer's queue is full.
    QueueFull,
    /// The request needs segmenting and the peer does not receive segments.
    SegmentationNotSupported,
    /// The request needs more segments than the peer accepts.
    TooLong,
}

impl core::fmt::Display for StartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StartError::QueueFull => f.write_str("too many requests queued for this peer"),
            StartError::SegmentationNotSupported => {
                f.write_str("the request is longer than the peer's Max-APDU and the peer does not accept segments")
            }
            StartError::TooLong => f.write_str("the request needs more segments than the peer accepts"),
        }
    }
}

impl core::error::Error for StartError {}

/// The longest APDU we send a peer of `limits`: the smaller of its Max-APDU
/// and our own. `start_with` refuses and `admit` segments by this one limit.
fn request_max_apdu(config: &TsmConfig, limits: &PeerLimits) -> usize {
    limits.max_apdu.min(config.max_apdu_accepted.octets() as usize)
}

#[derive(Debug)]
struct Pending {
    id: TransactionId,
    service: ConfirmedServiceChoice,
    body: Vec<u8>,
    limits: PeerLimits,
    /// A queued request fails with `Timeout` if it has not been answered by
    /// the time a sent one would have exhausted its retries.
    deadline: Duration,
}

#[derive(Debug)]
struct Active {
    id: TransactionId,
    service: ConfirmedServiceChoice,
    /// The request as sent, when it fits one APDU.
    apdu: Vec<u8>,
    /// The request's segments, when it does not.
    segmenter: Option<Segmenter>,
    phase: Phase,
    deadline: Duration,
    retries_left: u8,
}

/// Where a transaction is in Clause 5.4.4's client state machine.
#[derive(Debug)]
enum Phase {
    /// SEGMENTED_REQUEST: sending the request a window at a time.
    SegmentedRequest,
    /// AWAIT_CONFIRMATION.
    AwaitConfirmation,
    /// SEGMENTED_CONFIRMATION: reassembling a segmented ComplexACK.
    SegmentedConfirmation(Reassembly),
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

    /// Begin a confirmed request of `service` with the encoded `body` to a
    /// peer of default [`PeerLimits`]. It is sent at once if the peer has a
    /// free slot, or queued.
    pub fn start(
        &mut self,
        now: Duration,
        peer: A,
        service: ConfirmedServiceChoice,
        body: Vec<u8>,
    ) -> Result<TransactionId, StartError> {
        self.start_with(now, peer, service, body, PeerLimits::default())
    }

    /// Begin a confirmed request to a peer of known `limits`: a request
    /// longer than its Max-APDU is segmented if it accepts segments.
    pub fn start_with(
        &mut self,
        now: Duration,
        peer: A,
        service: ConfirmedServiceChoice,
        body: Vec<u8>,
        limits: PeerLimits,
    ) -> Result<TransactionId, StartError> {
        // The same test `admit` segments by.
        let max_apdu = request_max_apdu(&self.config, &limits);
        if body.len() + 4 > max_apdu {
            let needed = segments_needed(&self.request_kind(), body.len(), max_apdu);
            if !limits.segmented_receive {
                return Err(StartError::SegmentationNotSupported);
            }
            if limits.max_segments.is_some_and(|m| needed > m) || needed > 256 * 255 {
                return Err(StartError::TooLong);
            }
        }
        let max_queued = self.config.max_queued_per_peer;
        let state = self.peers.entry(peer.clone()).or_insert_with(PeerState::new);
        if state.queue.len() >= max_queued {
            return Err(StartError::QueueFull);
        }
        let id = TransactionId(self.next_id);
        self.next_id += 1;
        let deadline = now.saturating_add(self.config.apdu_timeout.saturating_mul(self.config.retries as u32 + 1));
        state.queue.push_back(Pending { id, service, body, limits, deadline });
        self.admit(now, &peer);
        Ok(id)
    }

    /// The header fields our segmented requests repeat.
    fn request_kind(&self) -> SegmentedKind {
        SegmentedKind::Request {
            segmented_response_accepted: self.config.segmented_response_accepted,
            max_segments: self.config.max_segments_accepted,
            max_apdu: self.config.max_apdu_accepted,
        }
    }

    /// Move queued requests into free slots for `peer`.
    fn admit(&mut self, now: Duration, peer: &A) {
        let cfg = self.config;
        let kind = self.request_kind();
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
            let max_apdu = request_max_apdu(&cfg, &p.limits);
            let (apdu, segmenter, phase, deadline) = if p.body.len() + 4 <= max_apdu {
                let mut apdu = Vec::with_capacity(4 + p.body.len());
                Apdu::ConfirmedRequest(ConfirmedRequest {
                    segment: None,
                    segmented_response_accepted: cfg.segmented_response_accepted,
                    max_segments: cfg.max_segments_accepted,
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
                (apdu, None, Phase::AwaitConfirmation, now.saturating_add(cfg.apdu_timeout))
            } else {
                let mut s = Segmenter::new(kind, invoke_id, p.service, p.body, max_apdu, cfg.window_size, cfg.retries);
                self.transmits.push_back(Transmit {
                    peer: peer.clone(),
                    apdu: s.first(),
                    expecting_reply: true,
                    transaction: Some(p.id),
                });
                (Vec::new(), Some(s), Phase::SegmentedRequest, now.saturating_add(cfg.segment_timeout))
            };
            state.active.insert(
                invoke_id,
                Active { id: p.id, service: p.service, apdu, segmenter, phase, deadline, retries_left: cfg.retries },
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
        let Some(invoke_id) = apdu.invoke_id() else { return false };
        let Some(active) = self.peers.get_mut(peer).and_then(|s| s.active.get_mut(&invoke_id)) else {
            return false;
        };
        if answered_service.is_some_and(|s| s != active.service) {
            return false;
        }
        // The answer may overtake the final Segment-ACK once every segment
        // is out (bacpypes3 accepts it too): the request is then as good as
        // delivered. Before that an answer is out of place.
        if matches!(active.phase, Phase::SegmentedRequest)
            && matches!(apdu, Apdu::SimpleAck { .. } | Apdu::ComplexAck(_))
            && active.segmenter.as_ref().is_some_and(Segmenter::sent_all)
        {
            active.phase = Phase::AwaitConfirmation;
        }
        let sent_all = !matches!(active.phase, Phase::SegmentedRequest);
        let outcome = match (apdu, &mut active.phase) {
            // Failures end the transaction in any state.
            (Apdu::Error { body, .. }, _) => Outcome::Error(body.to_vec()),
            (Apdu::Reject { reason, .. }, _) => Outcome::Reject(*reason),
            (Apdu::Abort { server: true, reason, .. }, _) => Outcome::Abort { reason: *reason, from_server: true },
            (Apdu::Abort { server: false, .. }, _) => return false,
            // SEGMENTED_REQUEST: the server acknowledges our segments.
            (Apdu::SegmentAck { server: true, negative, sequence_number, actual_window_size, .. }, _) if !sent_all => {
                let Some(segmenter) = active.segmenter.as_mut() else { return false };
                match segmenter.on_ack(*negative, *sequence_number, *actual_window_size) {
                    AckOutcome::Complete => {
                        active.phase = Phase::AwaitConfirmation;
                        active.deadline = now.saturating_add(self.config.apdu_timeout);
                        return true;
                    }
                    AckOutcome::Send(segments) => {
                        active.deadline = now.saturating_add(self.config.segment_timeout);
                        let id = active.id;
                        for apdu in segments {
                            self.transmits.push_back(Transmit {
                                peer: peer.clone(),
                                apdu,
                                expecting_reply: true,
                                transaction: Some(id),
                            });
                        }
                        return true;
                    }
                    AckOutcome::Duplicate => return true,
                    AckOutcome::Abort(reason) => self.abort(peer, invoke_id, reason),
                }
            }
            (Apdu::SegmentAck { .. }, _) => return false,
            // An answer before every segment was acknowledged.
            (Apdu::SimpleAck { .. } | Apdu::ComplexAck(_), _) if !sent_all => {
                self.abort(peer, invoke_id, AbortReason::INVALID_APDU_IN_THIS_STATE)
            }
            (Apdu::SimpleAck { .. }, Phase::AwaitConfirmation) => Outcome::SimpleAck,
            (Apdu::ComplexAck(c), Phase::AwaitConfirmation) => match c.segment {
                None => Outcome::ComplexAck(c.body.to_vec()),
                Some(_) if !self.config.segmented_response_accepted => {
                    self.abort(peer, invoke_id, AbortReason::SEGMENTATION_NOT_SUPPORTED)
                }
                Some(segment) => match Reassembly::begin(segment, c.body, self.reassembly_limits()) {
                    Err(reason) => self.abort(peer, invoke_id, reason),
                    Ok((reassembly, step)) => {
                        let Some(active) = self.active_mut(peer, invoke_id) else { return false };
                        active.phase = Phase::SegmentedConfirmation(reassembly);
                        match self.segment_step(now, peer, invoke_id, step) {
                            Some(outcome) => outcome,
                            None => return true,
                        }
                    }
                },
            },
            (Apdu::ComplexAck(c), Phase::SegmentedConfirmation(reassembly)) => match c.segment {
                None => self.abort(peer, invoke_id, AbortReason::INVALID_APDU_IN_THIS_STATE),
                Some(segment) => {
                    let step = reassembly.on_segment(segment, c.body);
                    match self.segment_step(now, peer, invoke_id, step) {
                        Some(outcome) => outcome,
                        None => return true,
                    }
                }
            },
            (Apdu::SimpleAck { .. }, _) => self.abort(peer, invoke_id, AbortReason::INVALID_APDU_IN_THIS_STATE),
            _ => return false,
        };
        self.finish(now, peer, invoke_id, outcome)
    }

    fn reassembly_limits(&self) -> ReassemblyLimits {
        ReassemblyLimits {
            window: self.config.window_size,
            max_segments: self.config.max_segments_accepted.count().map_or(usize::MAX, |n| n as usize),
            max_octets: self.config.max_response_octets,
        }
    }

    fn active_mut(&mut self, peer: &A, invoke_id: u8) -> Option<&mut Active> {
        self.peers.get_mut(peer).and_then(|s| s.active.get_mut(&invoke_id))
    }

    /// Act on a received segment of an answer: acknowledge, wait, deliver or
    /// abort. `Some` ends the transaction with that outcome.
    fn segment_step(&mut self, now: Duration, peer: &A, invoke_id: u8, step: SegmentOutcome) -> Option<Outcome> {
        let wait = self.config.segment_timeout.saturating_mul(4);
        let ack = |ack: super::segment::SegmentAck| Transmit {
            peer: peer.clone(),
            apdu: ack.encode(false, invoke_id),
            expecting_reply: false,
            transaction: None,
        };
        match step {
            SegmentOutcome::Wait => {
                self.active_mut(peer, invoke_id)?.deadline = now.saturating_add(wait);
                None
            }
            SegmentOutcome::Ack(a) => {
                self.transmits.push_back(ack(a));
                self.active_mut(peer, invoke_id)?.deadline = now.saturating_add(wait);
                None
            }
            SegmentOutcome::Complete(a, body) => {
                self.transmits.push_back(ack(a));
                Some(Outcome::ComplexAck(body))
            }
            SegmentOutcome::Abort(reason) => Some(self.abort(peer, invoke_id, reason)),
        }
    }

    /// Send an Abort for a transaction and give the outcome it ends with.
    fn abort(&mut self, peer: &A, invoke_id: u8, reason: AbortReason) -> Outcome {
        let mut abort = Vec::with_capacity(3);
        Apdu::Abort { server: false, invoke_id, reason }.encode(&mut abort);
        self.transmits.push_back(Transmit {
            peer: peer.clone(),
            apdu: abort,
            expecting_reply: false,
            transaction: None,
        });
        Outcome::Abort { reason, from_server: false }
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
        let cfg = self.config;
        let mut expired: Vec<(A, u8)> = Vec::new();
        for (peer, state) in self.peers.iter_mut() {
            for (invoke_id, a) in state.active.iter_mut() {
                if a.deadline > now {
                    continue;
                }
                let resend: Option<Vec<Vec<u8>>> = match &mut a.phase {
                    // T_seg: resend the window, within the segment retries.
                    Phase::SegmentedRequest => {
                        a.deadline = now.saturating_add(cfg.segment_timeout);
                        a.segmenter.as_mut().and_then(|s| s.on_timeout())
                    }
                    // T_wait_for_seg: the server stopped sending segments.
                    Phase::SegmentedConfirmation(_) => None,
                    Phase::AwaitConfirmation if a.retries_left > 0 => {
                        a.retries_left -= 1;
                        match a.segmenter.as_mut() {
                            // Start the segmented request over.
                            Some(s) => {
                                a.phase = Phase::SegmentedRequest;
                                a.deadline = now.saturating_add(cfg.segment_timeout);
                                Some(alloc::vec![s.first()])
                            }
                            None => {
                                a.deadline = now.saturating_add(cfg.apdu_timeout);
                                Some(alloc::vec![a.apdu.clone()])
                            }
                        }
                    }
                    Phase::AwaitConfirmation => None,
                };
                match resend {
                    Some(apdus) => self.transmits.extend(apdus.into_iter().map(|apdu| Transmit {
                        peer: peer.clone(),
                        apdu,
                        expecting_reply: true,
                        transaction: Some(a.id),
                    })),
                    None => expired.push((peer.clone(), *invoke_id)),
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

    /// The transactions to peers that `to` selects, sent or queued: what a
    /// router's Reject-Message-To-Network for their network ends.
    pub fn transactions_to(&self, mut to: impl FnMut(&A) -> bool) -> Vec<TransactionId> {
        let mut ids = Vec::new();
        for (_, state) in self.peers.iter().filter(|(peer, _)| to(peer)) {
            ids.extend(state.active.values().map(|a| a.id));
            ids.extend(state.queue.iter().map(|p| p.id));
        }
        ids
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
