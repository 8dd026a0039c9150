//! The server transaction state machine (Clause 5.4.5, responding BACnet
//! user): admission of confirmed requests, reassembly of segmented requests,
//! and segmented ComplexACKs.
//!
//! Sans-IO in quinn-proto's shape. The driver calls
//! - [`ServerTsm::handle_apdu`] for every Confirmed-Request, Segment-ACK and
//!   Abort received; it returns an [`Indication`] when a whole request is
//!   ready for the application;
//! - [`ServerTsm::respond`] with the application's [`Response`];
//! - [`ServerTsm::handle_timeout`] when [`ServerTsm::poll_timeout`] has
//!   passed;
//!
//! and after each call sends what [`ServerTsm::poll_transmit`] yields.
//!
//! States per (peer, invoke ID), as Clause 5.4.5 names them:
//! SEGMENTED_REQUEST (reassembling), AWAIT_RESPONSE (the application has the
//! request), SEGMENTED_RESPONSE (sending a ComplexACK a window at a time).
//! IDLE is the absence of an entry.
//!
//! Admission: at most `max_in_flight_per_peer` transactions per peer and
//! `max_transactions` in all; a request beyond either is refused at once
//! with Abort out-of-resources and counted, so memory never grows with the
//! offered load.
//!
//! Amplification: segmented answers spend from a per-origin
//! [`AnswerBudget`] (see [`super::budget`]); the [`Segmenter`] clamps the
//! requester's window and sends no segment more than `1 + retries` times.
//! What one request can draw is therefore bounded by the standard's
//! retries, and what one origin can draw per second by the budget, however
//! the peer acknowledges.
//!
//! Must never: hand the application a request twice (a retransmitted
//! request in AWAIT_RESPONSE is a duplicate and is dropped), answer a
//! transaction the client aborted, or keep a transaction past its timers.

use super::budget::{AnswerBudget, Budgets};
use super::segment::{
    AckOutcome, Reassembly, ReassemblyLimits, SegmentAck, SegmentOutcome, SegmentedKind, Segmenter, segments_needed,
};
use crate::apdu::{Apdu, COMPLEX_ACK_HEADER, ConfirmedRequest, MaxApdu, MaxSegments, complex_ack_header};
use crate::enums::{AbortReason, ConfirmedServiceChoice, RejectReason};
use alloc::collections::{BTreeMap, BinaryHeap, VecDeque};
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::time::Duration;

/// The most segments a request may have, whatever the configuration says:
/// see `reassembly_limits`.
pub const MAX_REQUEST_SEGMENTS: usize = 128;

/// Settings of the server state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTsmConfig {
    /// Transactions per peer (requests being received, executed or
    /// answered); more are refused with Abort out-of-resources.
    pub max_in_flight_per_peer: usize,
    /// Transactions over all peers.
    pub max_transactions: usize,
    /// This device's Max_APDU_Length_Accepted.
    pub max_apdu: usize,
    /// This device segments (Segmentation_Supported segmented-both). When
    /// false, segmented requests and answers longer than one APDU are
    /// refused with Abort segmentation-not-supported.
    pub segmentation: bool,
    /// The window we propose for answers and accept for requests.
    pub window_size: u8,
    /// T_seg; the wait for the next segment of a request is four times it.
    pub segment_timeout: Duration,
    /// Times a window of an answer is resent before giving up.
    pub retries: u8,
    /// Max_Segments_Accepted for requests (at most [`MAX_REQUEST_SEGMENTS`]).
    pub max_request_segments: usize,
    /// Most service-data octets accepted in a segmented request.
    pub max_request_octets: usize,
    /// Most service-data octets in one answer, however segmented.
    pub max_response_octets: usize,
    /// How long the application may hold a request before the transaction
    /// is forgotten (and aborted application-exceeded-reply-time).
    pub application_timeout: Duration,
    /// Octets of segmented answers one origin may draw; `None`: unbounded.
    pub answer_budget: Option<AnswerBudget>,
}

impl Default for ServerTsmConfig {
    fn default() -> Self {
        ServerTsmConfig {
            max_in_flight_per_peer: 16,
            max_transactions: 4096,
            max_apdu: 1476,
            segmentation: true,
            window_size: 16,
            segment_timeout: Duration::from_secs(2),
            retries: 3,
            max_request_segments: 64,
            max_request_octets: 64 * 1024,
            max_response_octets: 256 * 1024,
            application_timeout: Duration::from_secs(60),
            answer_budget: Some(AnswerBudget::default()),
        }
    }
}

/// Names one server transaction; [`ServerTsm::respond`] takes it back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransactionKey<A> {
    /// The requester.
    pub peer: A,
    /// The requester's invoke ID.
    pub invoke_id: u8,
    /// Unique for the machine's life, so a late response never answers a
    /// later request that reused the invoke ID.
    pub serial: u64,
}

/// A whole confirmed request, ready for the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indication<A> {
    /// The transaction to respond to.
    pub key: TransactionKey<A>,
    /// The service.
    pub service: ConfirmedServiceChoice,
    /// The service request (reassembled when it came in segments).
    pub body: Vec<u8>,
    /// The requester accepts a segmented answer.
    pub segmented_response_accepted: bool,
    /// Segments the requester accepts in the answer.
    pub max_segments: MaxSegments,
    /// Max-APDU the requester accepts.
    pub max_apdu: MaxApdu,
}

impl<A> Indication<A> {
    /// The most service-data octets an answer to this request can carry,
    /// segmented if the requester and `config` allow it — what a service
    /// checks before building a large answer.
    pub fn answer_capacity(&self, config: &ServerTsmConfig) -> usize {
        let max_apdu = (self.max_apdu.octets() as usize).min(config.max_apdu);
        let single = max_apdu.saturating_sub(3);
        if !(self.segmented_response_accepted && config.segmentation) {
            return single;
        }
        let per_segment = super::segment::segment_payload(&SegmentedKind::ComplexAck, max_apdu);
        let segments = self.max_segments.count().map_or(usize::MAX, |n| n as usize);
        per_segment.saturating_mul(segments).min(config.max_response_octets).max(single)
    }
}

/// The application's answer to an [`Indication`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// SimpleACK.
    SimpleAck,
    /// ComplexACK with this service ack body; segmented when it needs to be.
    ComplexAck(Vec<u8>),
    /// Error PDU with this error body.
    Error(Vec<u8>),
    /// Reject PDU.
    Reject(RejectReason),
    /// Abort PDU.
    Abort(AbortReason),
}

/// Recycled buffers kept at most (see [`ServerTsm::recycle`]).
pub const SPARE_BUFFERS: usize = 64;
/// The largest recycled buffer kept: a standard frame's APDU and some.
pub const SPARE_BUFFER_OCTETS: usize = 2048;
/// A new buffer's room, and the least a recycled one keeps: room for a
/// typical body or answer and an APDU header in front, so neither grows.
pub const SPARE_BUFFER_MIN_OCTETS: usize = 256;

/// What the machine refused or gave up on, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerTsmCounters {
    /// Requests refused by admission control (Abort out-of-resources).
    pub refused: u64,
    /// Retransmitted requests dropped while the first was in progress.
    pub duplicates: u64,
    /// Segmented requests reassembled.
    pub segmented_requests: u64,
    /// Answers sent in segments.
    pub segmented_responses: u64,
    /// Transactions aborted by this side (bad segments, answers too long).
    pub aborted: u64,
    /// Transactions the client aborted.
    pub aborted_by_client: u64,
    /// Transactions ended by a timer (segments or acks that never came,
    /// an application that never answered).
    pub timed_out: u64,
    /// Segmented answers refused or ended because their origin's
    /// [`AnswerBudget`] was spent (Abort out-of-resources).
    pub budget_refused: u64,
}

#[derive(Debug)]
enum State {
    /// SEGMENTED_REQUEST.
    SegmentedRequest { reassembly: Reassembly, header: Header },
    /// AWAIT_RESPONSE.
    AwaitResponse { header: Header },
    /// SEGMENTED_RESPONSE.
    SegmentedResponse(Segmenter),
}

/// The request header fields the answer depends on.
#[derive(Debug, Clone, Copy)]
struct Header {
    service: ConfirmedServiceChoice,
    segmented_response_accepted: bool,
    max_segments: MaxSegments,
    max_apdu: MaxApdu,
}

/// A window to resend after T_seg: the transaction's key, its segments.
type Resend<A> = ((A, u8), Vec<Vec<u8>>);

/// A deadline as the heap keeps it: when, the transaction's serial, its key.
type Deadline<A> = (Duration, u64, (A, u8));

#[derive(Debug)]
struct Transaction {
    serial: u64,
    state: State,
    deadline: Duration,
}

/// The server side of confirmed services for any number of peers, keyed by
/// an address type `A` the driver chooses.
#[derive(Debug)]
pub struct ServerTsm<A> {
    config: ServerTsmConfig,
    transactions: BTreeMap<(A, u8), Transaction>,
    /// Every deadline set, earliest first: (deadline, serial, key). An
    /// entry whose transaction has gone or moved its deadline is stale and
    /// dropped when it reaches the top, so `poll_timeout` costs O(1) however
    /// many transactions are in progress (it was a scan of all of them).
    deadlines: BinaryHeap<Reverse<Deadline<A>>>,
    next_serial: u64,
    transmits: VecDeque<(A, Vec<u8>)>,
    /// Buffers handed back ([`ServerTsm::recycle`]) for the next request
    /// bodies and answers: no allocation per request in the steady state.
    spare: Vec<Vec<u8>>,
    counters: ServerTsmCounters,
    /// Segmented-answer octets per origin.
    budgets: Budgets<A>,
    /// Maps a peer to the origin its answers are charged to.
    origin: fn(&A) -> A,
}

impl<A: Ord + Clone> ServerTsm<A> {
    /// A state machine with `config`; each peer address is its own origin
    /// for the answer budget.
    pub fn new(config: ServerTsmConfig) -> Self {
        Self::with_origin(config, A::clone)
    }

    /// A state machine with `config` whose answer budget charges each peer
    /// to `origin(peer)`: for B/IP the peer's IP address without its port,
    /// so a spoofed victim cannot be hit from many source ports at once.
    pub fn with_origin(config: ServerTsmConfig, origin: fn(&A) -> A) -> Self {
        ServerTsm {
            config,
            transactions: BTreeMap::new(),
            deadlines: BinaryHeap::new(),
            next_serial: 0,
            transmits: VecDeque::new(),
            spare: Vec::new(),
            counters: ServerTsmCounters::default(),
            budgets: Budgets::new(config.answer_budget, config.max_transactions),
            origin,
        }
    }

    /// Spend `octets` of `peer`'s origin's answer budget; false (counted)
    /// when it is spent.
    fn spend_budget(&mut self, now: Duration, peer: &A, octets: usize) -> bool {
        if octets == 0 {
            return true; // nothing to send (every segment sent its most)
        }
        let origin = (self.origin)(peer);
        if self.budgets.try_spend(now, &origin, octets) {
            return true;
        }
        self.counters.budget_refused += 1;
        false
    }

    /// The settings in force.
    pub fn config(&self) -> &ServerTsmConfig {
        &self.config
    }

    /// What was refused or given up so far.
    pub fn counters(&self) -> ServerTsmCounters {
        self.counters
    }

    /// Transactions in progress, over all peers.
    pub fn transactions(&self) -> usize {
        self.transactions.len()
    }

    fn peer_transactions(&self, peer: &A) -> usize {
        self.transactions.range((peer.clone(), 0)..=(peer.clone(), u8::MAX)).count()
    }

    fn send(&mut self, peer: &A, apdu: Apdu<'_>) {
        let mut out = Vec::with_capacity(apdu.encoded_len_bound());
        apdu.encode(&mut out);
        self.transmits.push_back((peer.clone(), out));
    }

    fn send_abort(&mut self, peer: &A, invoke_id: u8, reason: AbortReason) {
        self.counters.aborted += 1;
        self.send(peer, Apdu::Abort { server: true, invoke_id, reason });
    }

    fn send_ack(&mut self, peer: &A, invoke_id: u8, ack: SegmentAck) {
        self.transmits.push_back((peer.clone(), ack.encode(true, invoke_id)));
    }

    fn reassembly_limits(&self) -> ReassemblyLimits {
        ReassemblyLimits {
            window: self.config.window_size,
            // Sequence numbers are 8 bits: a request of more than 256
            // segments could, after an abort, have its segment 256 taken for
            // the start of a new request. With at most 128 segments plus a
            // window of at most 127 in flight, no stray segment can carry
            // sequence number 0 again (found by the stateful fuzz target).
            max_segments: self.config.max_request_segments.min(MAX_REQUEST_SEGMENTS),
            max_octets: self.config.max_request_octets,
        }
    }

    /// Feed an APDU received from `peer`. Returns the request when one is
    /// whole and admitted; anything to send is queued for `poll_transmit`.
    pub fn handle_apdu(&mut self, now: Duration, peer: &A, apdu: &Apdu<'_>) -> Option<Indication<A>> {
        let indication = self.handle_apdu_inner(now, peer, apdu);
        self.prune_deadlines();
        indication
    }

    fn handle_apdu_inner(&mut self, now: Duration, peer: &A, apdu: &Apdu<'_>) -> Option<Indication<A>> {
        match apdu {
            Apdu::ConfirmedRequest(c) => self.on_request(now, peer, c),
            Apdu::SegmentAck { server: false, negative, invoke_id, sequence_number, actual_window_size } => {
                self.on_segment_ack(now, peer, *invoke_id, *negative, *sequence_number, *actual_window_size);
                None
            }
            Apdu::Abort { server: false, invoke_id, .. } => {
                if self.transactions.remove(&(peer.clone(), *invoke_id)).is_some() {
                    self.counters.aborted_by_client += 1;
                }
                None
            }
            _ => None,
        }
    }

    fn on_request(&mut self, now: Duration, peer: &A, c: &ConfirmedRequest<'_>) -> Option<Indication<A>> {
        let key = (peer.clone(), c.invoke_id);
        let header = Header {
            service: c.service,
            segmented_response_accepted: c.segmented_response_accepted,
            max_segments: c.max_segments,
            max_apdu: c.max_apdu,
        };
        if let Some(tx) = self.transactions.get_mut(&key) {
            let State::SegmentedRequest { reassembly, .. } = &mut tx.state else {
                // The client retransmitted a request we are still handling.
                self.counters.duplicates += 1;
                return None;
            };
            let Some(segment) = c.segment else {
                self.counters.duplicates += 1;
                return None;
            };
            let step = reassembly.on_segment(segment, c.body);
            return self.segment_step(now, peer, c.invoke_id, step);
        }
        if self.peer_transactions(peer) >= self.config.max_in_flight_per_peer
            || self.transactions.len() >= self.config.max_transactions
        {
            self.counters.refused += 1;
            self.send(
                peer,
                Apdu::Abort { server: true, invoke_id: c.invoke_id, reason: AbortReason::OUT_OF_RESOURCES },
            );
            return None;
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        let Some(segment) = c.segment else {
            let deadline = now.saturating_add(self.config.application_timeout);
            self.deadlines.push(Reverse((deadline, serial, key.clone())));
            self.transactions.insert(key, Transaction { serial, state: State::AwaitResponse { header }, deadline });
            let mut body = self.take_buffer();
            body.extend_from_slice(c.body);
            return Some(self.indication(peer, c.invoke_id, serial, header, body));
        };
        if !self.config.segmentation {
            self.send_abort(peer, c.invoke_id, AbortReason::SEGMENTATION_NOT_SUPPORTED);
            return None;
        }
        match Reassembly::begin(segment, c.body, self.reassembly_limits()) {
            Err(reason) => {
                self.send_abort(peer, c.invoke_id, reason);
                None
            }
            Ok((reassembly, step)) => {
                let deadline = now.saturating_add(self.config.segment_timeout.saturating_mul(4));
                self.deadlines.push(Reverse((deadline, serial, key.clone())));
                self.transactions.insert(
                    key,
                    Transaction { serial, state: State::SegmentedRequest { reassembly, header }, deadline },
                );
                self.segment_step(now, peer, c.invoke_id, step)
            }
        }
    }

    fn indication(&self, peer: &A, invoke_id: u8, serial: u64, h: Header, body: Vec<u8>) -> Indication<A> {
        Indication {
            key: TransactionKey { peer: peer.clone(), invoke_id, serial },
            service: h.service,
            body,
            segmented_response_accepted: h.segmented_response_accepted,
            max_segments: h.max_segments,
            max_apdu: h.max_apdu,
        }
    }

    /// Act on a segment of a request: acknowledge, wait, hand over or abort.
    fn segment_step(&mut self, now: Duration, peer: &A, invoke_id: u8, step: SegmentOutcome) -> Option<Indication<A>> {
        let key = (peer.clone(), invoke_id);
        let wait = now.saturating_add(self.config.segment_timeout.saturating_mul(4));
        match step {
            SegmentOutcome::Wait => {
                if let Some(tx) = self.transactions.get_mut(&key) {
                    tx.deadline = wait;
                    self.deadlines.push(Reverse((wait, tx.serial, key.clone())));
                }
                None
            }
            SegmentOutcome::Ack(ack) => {
                if let Some(tx) = self.transactions.get_mut(&key) {
                    tx.deadline = wait;
                    self.deadlines.push(Reverse((wait, tx.serial, key.clone())));
                }
                self.send_ack(peer, invoke_id, ack);
                None
            }
            SegmentOutcome::Abort(reason) => {
                self.transactions.remove(&key);
                self.send_abort(peer, invoke_id, reason);
                None
            }
            SegmentOutcome::Complete(ack, body) => {
                self.send_ack(peer, invoke_id, ack);
                let tx = self.transactions.get_mut(&key)?;
                let State::SegmentedRequest { header, .. } = tx.state else { return None };
                tx.state = State::AwaitResponse { header };
                tx.deadline = now.saturating_add(self.config.application_timeout);
                let serial = tx.serial;
                self.deadlines.push(Reverse((tx.deadline, serial, key.clone())));
                self.counters.segmented_requests += 1;
                Some(self.indication(peer, invoke_id, serial, header, body))
            }
        }
    }

    fn on_segment_ack(&mut self, now: Duration, peer: &A, invoke_id: u8, negative: bool, seq: u8, window: u8) {
        let key = (peer.clone(), invoke_id);
        let Some(tx) = self.transactions.get_mut(&key) else { return };
        let State::SegmentedResponse(segmenter) = &mut tx.state else { return };
        match segmenter.on_ack(negative, seq, window) {
            AckOutcome::Complete => {
                self.transactions.remove(&key);
            }
            AckOutcome::Send(segments) => {
                tx.deadline = now.saturating_add(self.config.segment_timeout);
                let deadline = (tx.deadline, tx.serial, key.clone());
                let octets = segments.iter().map(Vec::len).sum();
                if !self.spend_budget(now, peer, octets) {
                    self.transactions.remove(&key);
                    self.send_abort(peer, invoke_id, AbortReason::OUT_OF_RESOURCES);
                    return;
                }
                self.deadlines.push(Reverse(deadline));
                self.transmits.extend(segments.into_iter().map(|s| (peer.clone(), s)));
            }
            AckOutcome::Duplicate => {}
            AckOutcome::Abort(reason) => {
                self.transactions.remove(&key);
                self.send_abort(peer, invoke_id, reason);
            }
        }
    }

    /// Answer a request. Returns false when the transaction is gone (the
    /// client aborted it, or it timed out): nothing is sent then.
    pub fn respond(&mut self, now: Duration, key: &TransactionKey<A>, response: Response) -> bool {
        let sent = self.respond_inner(now, key, response);
        self.prune_deadlines();
        sent
    }

    fn respond_inner(&mut self, now: Duration, key: &TransactionKey<A>, response: Response) -> bool {
        let map_key = (key.peer.clone(), key.invoke_id);
        let header = match self.transactions.get(&map_key) {
            Some(Transaction { serial, state: State::AwaitResponse { header }, .. }) if *serial == key.serial => {
                *header
            }
            _ => return false,
        };
        let (peer, invoke_id, service) = (&key.peer, key.invoke_id, header.service);
        let body = match response {
            Response::ComplexAck(body) => body,
            other => {
                self.transactions.remove(&map_key);
                match other {
                    Response::SimpleAck => self.send(peer, Apdu::SimpleAck { invoke_id, service }),
                    Response::Error(body) => self.send(peer, Apdu::Error { invoke_id, service, body: &body }),
                    Response::Reject(reason) => self.send(peer, Apdu::Reject { invoke_id, reason }),
                    Response::Abort(reason) => self.send_abort(peer, invoke_id, reason),
                    Response::ComplexAck(_) => {}
                }
                return true;
            }
        };
        let max_apdu = (header.max_apdu.octets() as usize).min(self.config.max_apdu);
        if body.len() + COMPLEX_ACK_HEADER <= max_apdu {
            self.transactions.remove(&map_key);
            // The body becomes the APDU: its header goes in front, in place
            // when the body was encoded with room for it (ServiceCodec::to_vec).
            let mut apdu = body;
            apdu.splice(0..0, complex_ack_header(invoke_id, service));
            self.transmits.push_back((peer.clone(), apdu));
            return true;
        }
        // Clause 5.4.5.3, CannotSendSegmentedComplexACK: the requester or
        // this device does not segment → segmentation-not-supported; more
        // segments than the requester accepts, or more than this device
        // will send → apdu-too-long (135-2016 and later).
        if !(header.segmented_response_accepted && self.config.segmentation) {
            self.transactions.remove(&map_key);
            self.send_abort(peer, invoke_id, AbortReason::SEGMENTATION_NOT_SUPPORTED);
            return true;
        }
        let needed = segments_needed(&SegmentedKind::ComplexAck, body.len(), max_apdu);
        let accepted = header.max_segments.count().map_or(usize::MAX, |n| n as usize);
        if needed > accepted || body.len() > self.config.max_response_octets {
            self.transactions.remove(&map_key);
            self.send_abort(peer, invoke_id, AbortReason::APDU_TOO_LONG);
            return true;
        }
        let mut segmenter = Segmenter::new(
            SegmentedKind::ComplexAck,
            invoke_id,
            service,
            body,
            max_apdu,
            self.config.window_size,
            self.config.retries,
        );
        let first = segmenter.first();
        if !self.spend_budget(now, peer, first.len()) {
            self.transactions.remove(&map_key);
            self.send_abort(peer, invoke_id, AbortReason::OUT_OF_RESOURCES);
            return true;
        }
        self.transmits.push_back((peer.clone(), first));
        self.counters.segmented_responses += 1;
        if let Some(tx) = self.transactions.get_mut(&map_key) {
            tx.state = State::SegmentedResponse(segmenter);
            tx.deadline = now.saturating_add(self.config.segment_timeout);
            self.deadlines.push(Reverse((tx.deadline, tx.serial, map_key.clone())));
        }
        true
    }

    /// Resend windows and end transactions whose timers have expired.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.handle_timeout_inner(now);
        self.prune_deadlines();
    }

    fn handle_timeout_inner(&mut self, now: Duration) {
        let mut ended: Vec<((A, u8), Option<AbortReason>)> = Vec::new();
        let mut resend: Vec<Resend<A>> = Vec::new();
        for (key, tx) in self.transactions.iter_mut() {
            if tx.deadline > now {
                continue;
            }
            match &mut tx.state {
                // T_wait_for_seg: the client stopped sending; IDLE silently.
                State::SegmentedRequest { .. } => ended.push((key.clone(), None)),
                State::AwaitResponse { .. } => {
                    ended.push((key.clone(), Some(AbortReason::APPLICATION_EXCEEDED_REPLY_TIME)))
                }
                State::SegmentedResponse(segmenter) => match segmenter.on_timeout() {
                    Some(window) => {
                        tx.deadline = now.saturating_add(self.config.segment_timeout);
                        self.deadlines.push(Reverse((tx.deadline, tx.serial, key.clone())));
                        resend.push((key.clone(), window));
                    }
                    // FinalTimeout: the client is gone; IDLE silently.
                    None => ended.push((key.clone(), None)),
                },
            }
        }
        for (key, window) in resend {
            let octets = window.iter().map(Vec::len).sum();
            if self.spend_budget(now, &key.0, octets) {
                self.transmits.extend(window.into_iter().map(|s| (key.0.clone(), s)));
            } else {
                self.transactions.remove(&key);
                self.send_abort(&key.0, key.1, AbortReason::OUT_OF_RESOURCES);
            }
        }
        for (key, abort) in ended {
            self.transactions.remove(&key);
            self.counters.timed_out += 1;
            if let Some(reason) = abort {
                self.send_abort(&key.0, key.1, reason);
            }
        }
    }

    /// The earliest timer.
    pub fn poll_timeout(&self) -> Option<Duration> {
        // The top is live after every public `&mut` call (prune_deadlines).
        self.deadlines.peek().map(|Reverse((deadline, _, _))| *deadline)
    }

    /// Drop stale entries from the top of `deadlines` (their transaction
    /// ended, or its deadline moved), so its top is the earliest live one.
    fn prune_deadlines(&mut self) {
        // Stale entries behind a long-lived transaction stay until it ends:
        // rebuild from the live ones when they outnumber them, which keeps
        // the heap within twice the transactions, at O(1) amortised.
        if self.deadlines.len() > 2 * self.transactions.len() + 64 {
            self.deadlines =
                self.transactions.iter().map(|(key, t)| Reverse((t.deadline, t.serial, key.clone()))).collect();
            return;
        }
        while let Some(Reverse((deadline, serial, key))) = self.deadlines.peek() {
            let live = self.transactions.get(key).is_some_and(|t| t.serial == *serial && t.deadline == *deadline);
            if live {
                return;
            }
            self.deadlines.pop();
        }
    }

    /// The next APDU to send, with its destination.
    pub fn poll_transmit(&mut self) -> Option<(A, Vec<u8>)> {
        self.transmits.pop_front()
    }

    /// Hand back a buffer this machine gave out (an indication's body, a
    /// transmitted APDU) once it is used, for the next one. Bounded: at
    /// most [`SPARE_BUFFERS`] are kept, each with room for
    /// [`SPARE_BUFFER_MIN_OCTETS`] to [`SPARE_BUFFER_OCTETS`].
    pub fn recycle(&mut self, mut buffer: Vec<u8>) {
        let fits = (SPARE_BUFFER_MIN_OCTETS..=SPARE_BUFFER_OCTETS).contains(&buffer.capacity());
        if self.spare.len() < SPARE_BUFFERS && fits {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// An empty buffer, recycled when one is spare (for an answer's body:
    /// it becomes the APDU in place, see [`Response::ComplexAck`]).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_else(|| Vec::with_capacity(SPARE_BUFFER_MIN_OCTETS))
    }
}
