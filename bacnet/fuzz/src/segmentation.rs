//! The `segmentation` target: a [`ClientTsm`] and a [`ServerTsm`] joined by a
//! simulated link, driven by a sequence of operations decoded from the input.
//!
//! ```text
//!  ClientTsm<u8> ──▶ link[0] (client→server) ──▶ ServerTsm<u8> ──▶ pending indications
//!        ▲                                             │                 │ Respond
//!        └──────── link[1] (server→client) ◀───────────┴─────────────────┘
//! ```
//!
//! The input is a [`Scenario`]: client and server settings, then operations:
//! start a request (body length, the peer's limits), deliver / drop /
//! duplicate / swap the next APDU on either link, advance the clock and fire
//! both timers, answer a pending indication, cancel a transaction, inject
//! arbitrary APDU octets into either machine from any peer. Then the world
//! settles: the clock jumps far ahead again and again, every APDU is
//! delivered, until both machines are idle.
//!
//! Invariants (a panic is a finding):
//! - nothing panics, and nothing either machine sends fails to decode;
//! - every request APDU belongs to a started, unfinished transaction, keeps
//!   one invoke ID and the client's header fields, is no longer than the
//!   smaller of the peer's Max-APDU and our own, and is segmented only for a
//!   peer that receives segments, within its Max-Segments;
//! - a ComplexACK (whole or segment) is no longer than the server's Max-APDU
//!   and the requester's, and is segmented only for a requester that accepts
//!   segments, within its Max-Segments; an answer within
//!   `Indication::answer_capacity` is never refused as too long;
//! - an indication from the client carries exactly the body and service the
//!   client started its transaction with, and the client's header fields;
//! - a transaction ends once (event or `cancel`, and `cancel` is true
//!   exactly while it is pending), with an outcome the server actually sent:
//!   a ComplexACK carries exactly the body the server answered that invoke
//!   ID with;
//! - the server never hands the application a request twice: while an
//!   indication is outstanding (not answered, aborted by the client, or timed
//!   out with an Abort) no other comes for its (peer, invoke ID), and
//!   `respond` to it succeeds;
//! - the server never holds more than `max_transactions`;
//! - after `handle_timeout(now)` neither machine has a deadline at or before
//!   `now` (when every timer is non-zero), so a driver never spins;
//! - once settled, neither machine holds a transaction and every transaction
//!   ended.
//!
//! Bodies are self-describing: a request body is a pattern seeded by the
//! start's index and its length, an answer body one seeded by the server's
//! `TransactionKey::serial` and its length, so the checks recompute what the
//! bytes must be.
//!
//! What the model allows because the protocol does:
//! - an injected APDU with invoke ID X between the client and the server
//!   *taints* X: it may legitimately change what either side does for X, so
//!   content checks for X stop;
//! - a request the server answered and forgot may come again (a delayed
//!   retransmission) and be executed again. When X was answered with more
//!   than one ComplexACK, a segmented answer may be spliced from them (a
//!   segment 0 of the second answer is NAKed at the segment the client holds,
//!   and its sender continues from there), so the check weakens to "every
//!   octet comes from one of X's answers, and the length is one of theirs";
//! - a segmented request of more than 256 segments that the server forgot
//!   (aborted, say, for exceeding `max_request_segments`) while a window was
//!   still in flight: segment 256 carries sequence number 0 again, the server
//!   in IDLE takes it for the first segment of a new request, and indicates
//!   the request's tail. The check accepts exactly that: a suffix starting at
//!   a multiple of 256 segments. (A finding of this target, left unfixed:
//!   IDLE starts a transaction on any segment numbered 0, as Clause 5.4.5
//!   has it; remembering aborted transactions for T_wait_for_seg would close
//!   it.);
//! - sequence numbers are 8 bits, so a segment delayed past 255 newer ones is
//!   indistinguishable from a new one: the link drops an APDU once more than
//!   [`MAX_AGE`] later APDUs went the same way (a datagram lifetime);
//! - at most [`MAX_STARTS`] requests start, so invoke IDs never wrap and an
//!   invoke ID names one client transaction.

use bacnet::apdu::{Apdu, MaxApdu, MaxSegments};
use bacnet::enums::{AbortReason, ConfirmedServiceChoice, RejectReason};
use bacnet::tsm::{
    ClientTsm, Completed, Indication, Outcome, PeerLimits, Response, ServerTsm, ServerTsmConfig, StartError,
    TransactionId, TsmConfig,
};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// The server, as the client addresses it.
pub const SERVER: u8 = 0;
/// The client, as the server sees it.
pub const CLIENT: u8 = 1;
/// A peer the client may address that never answers.
pub const NOWHERE: u8 = 2;

/// Longest request or answer body.
pub const MAX_BODY: usize = 20_000;
/// Requests started per input (fewer than 256: invoke IDs never wrap).
pub const MAX_STARTS: usize = 64;
/// Operations run per input.
pub const MAX_OPS: usize = 512;
/// An APDU is dropped once more than this many later APDUs entered its link.
pub const MAX_AGE: u64 = 200;
/// Indications held for `Respond` (older ones are forgotten by the harness;
/// the server times them out).
const MAX_PENDING: usize = 64;
/// Settling: rounds of "deliver everything, then jump the clock".
const SETTLE_ROUNDS: usize = 4096;
/// Settling: the clock jump, longer than every timer the knobs can set.
const SETTLE_STEP: Duration = Duration::from_secs(3600);
/// Deliveries in one `deliver_all` before it is declared a livelock.
const MAX_DELIVERIES: usize = 1_000_000;

/// Max-APDU values a peer may declare (Clause 20.1.2.5).
pub const STANDARD_MAX_APDU: [usize; 6] = [50, 128, 206, 480, 1024, 1476];

/// Raw client settings; [`ClientKnobs::config`] maps them into range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientKnobs {
    /// APDU_Timeout in ms.
    pub apdu_timeout_ms: u16,
    /// T_seg in ms.
    pub segment_timeout_ms: u16,
    /// Retries, modulo 5.
    pub retries: u8,
    /// Requests in flight per peer, modulo 20 (0 acts as 1).
    pub max_in_flight: u8,
    /// Requests queued per peer, modulo 20.
    pub max_queued: u8,
    /// Max-APDU code announced (4 bits; reserved codes read as 1476).
    pub max_apdu_code: u8,
    /// Window, modulo 131 (0 and 128..=130 are out of range on purpose).
    pub window: u8,
    /// Max-Segments code announced (3 bits).
    pub max_segments_code: u8,
    /// Accept segmented answers.
    pub segmented_response_accepted: bool,
    /// Most octets of a segmented answer, in units of 4.
    pub max_response_octets_4: u16,
}

impl ClientKnobs {
    /// The settings these knobs give.
    pub fn config(&self) -> TsmConfig {
        TsmConfig {
            apdu_timeout: ms(self.apdu_timeout_ms),
            retries: self.retries % 5,
            max_in_flight_per_peer: self.max_in_flight as usize % 20,
            max_queued_per_peer: self.max_queued as usize % 20,
            max_apdu_accepted: MaxApdu::from_code(self.max_apdu_code),
            segmented_response_accepted: self.segmented_response_accepted,
            max_segments_accepted: MaxSegments::from_code(self.max_segments_code),
            max_response_octets: self.max_response_octets_4 as usize * 4,
            segment_timeout: ms(self.segment_timeout_ms),
            window_size: self.window % 131,
        }
    }
}

impl Default for ClientKnobs {
    fn default() -> Self {
        ClientKnobs {
            apdu_timeout_ms: 3000,
            segment_timeout_ms: 500,
            retries: 3,
            max_in_flight: 16,
            max_queued: 16,
            max_apdu_code: MaxApdu::UP_TO_1476.code(),
            window: 16,
            max_segments_code: MaxSegments::at_least(64).code(),
            segmented_response_accepted: true,
            max_response_octets_4: 16_384,
        }
    }
}

/// Raw server settings; [`ServerKnobs::config`] maps them into range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerKnobs {
    /// Transactions per peer, modulo 20.
    pub max_in_flight: u8,
    /// Transactions over all peers, modulo 40.
    pub max_transactions: u8,
    /// Index into [`STANDARD_MAX_APDU`], modulo 6.
    pub max_apdu_index: u8,
    /// Segments both ways.
    pub segmentation: bool,
    /// Window, modulo 131.
    pub window: u8,
    /// T_seg in ms.
    pub segment_timeout_ms: u16,
    /// Retries, modulo 5.
    pub retries: u8,
    /// Max segments of a request, modulo 600.
    pub max_request_segments: u16,
    /// Most octets of a segmented request, in units of 4.
    pub max_request_octets_4: u16,
    /// Most octets of an answer, in units of 4.
    pub max_response_octets_4: u16,
    /// How long the application may take, in ms.
    pub application_timeout_ms: u16,
}

impl ServerKnobs {
    /// The settings these knobs give.
    pub fn config(&self) -> ServerTsmConfig {
        ServerTsmConfig {
            max_in_flight_per_peer: self.max_in_flight as usize % 20,
            max_transactions: self.max_transactions as usize % 40,
            max_apdu: STANDARD_MAX_APDU[self.max_apdu_index as usize % 6],
            segmentation: self.segmentation,
            window_size: self.window % 131,
            segment_timeout: ms(self.segment_timeout_ms),
            retries: self.retries % 5,
            max_request_segments: self.max_request_segments as usize % 600,
            max_request_octets: self.max_request_octets_4 as usize * 4,
            max_response_octets: self.max_response_octets_4 as usize * 4,
            application_timeout: ms(self.application_timeout_ms),
            // Unbounded: the model's invariants count every answer owed;
            // the budget is proved by the `amplification` tests.
            answer_budget: None,
        }
    }
}

impl Default for ServerKnobs {
    fn default() -> Self {
        ServerKnobs {
            max_in_flight: 16,
            max_transactions: 39,
            max_apdu_index: 5,
            segmentation: true,
            window: 16,
            segment_timeout_ms: 500,
            retries: 3,
            max_request_segments: 599,
            max_request_octets_4: 16_384,
            max_response_octets_4: 16_384,
            application_timeout_ms: 60_000,
        }
    }
}

/// What a `Respond` operation answers with (the selector modulo 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// SimpleACK.
    Simple = 0,
    /// ComplexACK of the operation's length.
    Complex = 1,
    /// Error.
    Error = 2,
    /// Reject, the reason from the length.
    Reject = 3,
    /// Abort, the reason from the length.
    Abort = 4,
    /// ComplexACK of `answer_capacity` − 2 + (length mod 5) octets: either
    /// side of the boundary.
    AtCapacity = 5,
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Start a confirmed request. `to` modulo 8 is 7: to [`NOWHERE`], else to
    /// [`SERVER`]; `len` modulo [`MAX_BODY`] + 1; `max_apdu` indexes
    /// [`STANDARD_MAX_APDU`]; `max_segments` 0 is unknown.
    Start { to: u8, service: u8, len: u16, max_apdu: u8, segmented_receive: bool, max_segments: u8 },
    /// Deliver the next APDU on a link (false: client→server).
    Deliver { to_client: bool },
    /// Lose the next APDU on a link.
    Drop { to_client: bool },
    /// Deliver a copy of the next APDU and leave it queued.
    Duplicate { to_client: bool },
    /// Swap the next APDU with the one `with` (modulo the queue) behind it.
    Swap { to_client: bool, with: u8 },
    /// Deliver everything both ways until the link is quiet.
    DeliverAll,
    /// Advance the clock and fire both timers.
    Advance { ms: u16 },
    /// Advance the clock to the earliest deadline and fire both timers.
    AdvanceToNext,
    /// Answer pending indication `which` (modulo their number).
    Respond { which: u8, answer: u8, len: u16 },
    /// Cancel started transaction `which` (modulo their number).
    Cancel { which: u8 },
    /// Hand the octets, when they decode, to the server (or the client) as
    /// received from `peer`.
    Inject { into_server: bool, peer: u8, apdu: Vec<u8> },
}

const OPS: u8 = 11;

/// A whole input.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scenario {
    /// Client settings.
    pub client: ClientKnobs,
    /// Server settings.
    pub server: ServerKnobs,
    /// What happens.
    pub ops: Vec<Op>,
}

/// Reads fields from the input; zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }
    fn take(&mut self, n: usize) -> Vec<u8> {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head.to_vec()
    }
}

impl Scenario {
    /// Decode an input: 13 octets of client knobs, 16 of server knobs, then
    /// operations, each an opcode octet (modulo 11) and its fields (at most
    /// [`MAX_OPS`]).
    pub fn decode(data: &[u8]) -> Scenario {
        let mut b = Bytes(data);
        let client = ClientKnobs {
            apdu_timeout_ms: b.u16(),
            segment_timeout_ms: b.u16(),
            retries: b.u8(),
            max_in_flight: b.u8(),
            max_queued: b.u8(),
            max_apdu_code: b.u8(),
            window: b.u8(),
            max_segments_code: b.u8(),
            segmented_response_accepted: b.bool(),
            max_response_octets_4: b.u16(),
        };
        let server = ServerKnobs {
            max_in_flight: b.u8(),
            max_transactions: b.u8(),
            max_apdu_index: b.u8(),
            segmentation: b.bool(),
            window: b.u8(),
            segment_timeout_ms: b.u16(),
            retries: b.u8(),
            max_request_segments: b.u16(),
            max_request_octets_4: b.u16(),
            max_response_octets_4: b.u16(),
            application_timeout_ms: b.u16(),
        };
        let mut ops = Vec::new();
        while !b.0.is_empty() && ops.len() < MAX_OPS {
            let op = match b.u8() % OPS {
                0 => Op::Start {
                    to: b.u8(),
                    service: b.u8(),
                    len: b.u16(),
                    max_apdu: b.u8(),
                    segmented_receive: b.bool(),
                    max_segments: b.u8(),
                },
                1 => Op::Deliver { to_client: b.bool() },
                2 => Op::Drop { to_client: b.bool() },
                3 => Op::Duplicate { to_client: b.bool() },
                4 => Op::Swap { to_client: b.bool(), with: b.u8() },
                5 => Op::DeliverAll,
                6 => Op::Advance { ms: b.u16() },
                7 => Op::AdvanceToNext,
                8 => Op::Respond { which: b.u8(), answer: b.u8(), len: b.u16() },
                9 => Op::Cancel { which: b.u8() },
                _ => {
                    let into_server = b.bool();
                    let peer = b.u8();
                    let len = b.u8() as usize;
                    Op::Inject { into_server, peer, apdu: b.take(len) }
                }
            };
            ops.push(op);
        }
        Scenario { client, server, ops }
    }

    /// The input that decodes as this scenario (for seeds).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let c = &self.client;
        out.extend(c.apdu_timeout_ms.to_le_bytes());
        out.extend(c.segment_timeout_ms.to_le_bytes());
        out.extend([
            c.retries,
            c.max_in_flight,
            c.max_queued,
            c.max_apdu_code,
            c.window,
            c.max_segments_code,
            c.segmented_response_accepted as u8,
        ]);
        out.extend(c.max_response_octets_4.to_le_bytes());
        let s = &self.server;
        out.extend([s.max_in_flight, s.max_transactions, s.max_apdu_index, s.segmentation as u8, s.window]);
        out.extend(s.segment_timeout_ms.to_le_bytes());
        out.push(s.retries);
        for v in [s.max_request_segments, s.max_request_octets_4, s.max_response_octets_4, s.application_timeout_ms] {
            out.extend(v.to_le_bytes());
        }
        for op in &self.ops {
            match op {
                Op::Start { to, service, len, max_apdu, segmented_receive, max_segments } => {
                    out.extend([0, *to, *service]);
                    out.extend(len.to_le_bytes());
                    out.extend([*max_apdu, *segmented_receive as u8, *max_segments]);
                }
                Op::Deliver { to_client } => out.extend([1, *to_client as u8]),
                Op::Drop { to_client } => out.extend([2, *to_client as u8]),
                Op::Duplicate { to_client } => out.extend([3, *to_client as u8]),
                Op::Swap { to_client, with } => out.extend([4, *to_client as u8, *with]),
                Op::DeliverAll => out.push(5),
                Op::Advance { ms } => {
                    out.push(6);
                    out.extend(ms.to_le_bytes());
                }
                Op::AdvanceToNext => out.push(7),
                Op::Respond { which, answer, len } => {
                    out.extend([8, *which, *answer]);
                    out.extend(len.to_le_bytes());
                }
                Op::Cancel { which } => out.extend([9, *which]),
                Op::Inject { into_server, peer, apdu } => {
                    let len = apdu.len().min(255);
                    out.extend([10, *into_server as u8, *peer, len as u8]);
                    out.extend(&apdu[..len]);
                }
            }
        }
        out
    }
}

fn ms(n: u16) -> Duration {
    Duration::from_millis(n as u64)
}

/// Octet `i` of the body seeded by (`tag`, `seed`, `len`).
fn pattern_octet(tag: u64, seed: u64, len: usize, i: usize) -> u8 {
    // splitmix64's finaliser over the four inputs.
    let mut z = tag
        ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (len as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ (i as u64).wrapping_mul(0x8CB9_2BA7_2F3D_8DD7);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u8
}

const REQUEST_TAG: u64 = 0x5245_5155_4553_5400;
const ANSWER_TAG: u64 = 0x414E_5357_4552_0000;

/// The body of the `seed`th request started, `len` octets.
pub fn request_body(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern_octet(REQUEST_TAG, seed, len, i)).collect()
}

/// The ComplexACK body answering the server transaction of `serial`.
pub fn answer_body(serial: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern_octet(ANSWER_TAG, serial, len, i)).collect()
}

fn is_answer_body(serial: u64, len: usize, body: &[u8]) -> bool {
    body.len() == len && body.iter().enumerate().all(|(i, b)| *b == pattern_octet(ANSWER_TAG, serial, len, i))
}

/// What a run did, for judging what a corpus reaches
/// (`replay_segmentation --stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests started.
    pub started: u64,
    /// Segments of requests sent by the client.
    pub request_segments: u64,
    /// Segments of answers sent by the server.
    pub answer_segments: u64,
    /// Indications from the client whose body was checked.
    pub indications_checked: u64,
    /// ... that were the tail of a request past a 256-segment wrap.
    pub indications_wrapped: u64,
    /// Client transactions that ended with each outcome (unchecked or
    /// checked): SimpleACK, ComplexACK, Error, Reject, Abort from the
    /// server, Abort by the client, Timeout.
    pub outcomes: [u64; 7],
    /// ComplexACK outcomes whose body was checked.
    pub answers_checked: u64,
    /// ... checked as a splice of several answers.
    pub answers_spliced: u64,
    /// Segmented ComplexACK outcomes checked (more than one APDU's worth).
    pub segmented_answers_checked: u64,
    /// `cancel` calls that found the transaction pending.
    pub cancelled: u64,
    /// Injected APDUs that decoded.
    pub injected: u64,
    /// Inputs that reached the end with work left to settle.
    pub settled_busy: u64,
}

impl core::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.started += o.started;
        self.request_segments += o.request_segments;
        self.answer_segments += o.answer_segments;
        self.indications_checked += o.indications_checked;
        self.indications_wrapped += o.indications_wrapped;
        for (a, b) in self.outcomes.iter_mut().zip(o.outcomes) {
            *a += b;
        }
        self.answers_checked += o.answers_checked;
        self.answers_spliced += o.answers_spliced;
        self.segmented_answers_checked += o.segmented_answers_checked;
        self.cancelled += o.cancelled;
        self.injected += o.injected;
        self.settled_busy += o.settled_busy;
    }
}

/// A final answer the server sent the client.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sent {
    Simple,
    Error(Vec<u8>),
    Reject(RejectReason),
    Abort(AbortReason),
}

#[derive(Debug, Clone)]
struct Started {
    to: u8,
    service: ConfirmedServiceChoice,
    seed: u64,
    len: usize,
    limits: PeerLimits,
}

#[derive(Debug, Clone)]
struct Packet {
    apdu: Vec<u8>,
    born: u64,
}

#[derive(Debug, Default)]
struct Link {
    queue: VecDeque<Packet>,
    entered: u64,
}

impl Link {
    fn push(&mut self, apdu: Vec<u8>) {
        self.entered += 1;
        let entered = self.entered;
        self.queue.retain(|p| entered - p.born <= MAX_AGE);
        self.queue.push_back(Packet { apdu, born: entered });
    }
}

/// The simulated world and the model the checks compare it with.
struct World {
    client: ClientTsm<u8>,
    server: ServerTsm<u8>,
    ccfg: TsmConfig,
    scfg: ServerTsmConfig,
    /// Every timer is non-zero, so `handle_timeout(now)` must leave no
    /// deadline at or before `now`.
    timers_nonzero: bool,
    now: Duration,
    /// [client→server, server→client].
    links: [Link; 2],
    starts: u64,
    started: BTreeMap<TransactionId, Started>,
    /// Started ids in order, for `Cancel`.
    order: Vec<TransactionId>,
    /// Started and not yet ended.
    open: BTreeSet<TransactionId>,
    invoke_of: BTreeMap<TransactionId, u8>,
    /// (peer, invoke ID) → the transaction that used it.
    by_invoke: BTreeMap<(u8, u8), TransactionId>,
    /// (client's peer, invoke ID) an injected APDU touched.
    tainted: BTreeSet<(u8, u8)>,
    /// Final answers the server sent the client, by invoke ID.
    sent: BTreeMap<u8, Vec<Sent>>,
    /// ComplexACK answers (serial, length) the server accepted, by invoke ID.
    answers: BTreeMap<u8, Vec<(u64, usize)>>,
    serials: BTreeSet<u64>,
    /// Indications outstanding: (peer, invoke ID) → serial.
    awaiting: BTreeMap<(u8, u8), u64>,
    pending: Vec<Indication<u8>>,
    /// Print every APDU and event to stderr (`replay_segmentation`).
    trace: bool,
    stats: Stats,
}

impl World {
    fn new(client: &ClientKnobs, server: &ServerKnobs) -> World {
        let (ccfg, scfg) = (client.config(), server.config());
        let timers_nonzero = [ccfg.apdu_timeout, ccfg.segment_timeout, scfg.segment_timeout, scfg.application_timeout]
            .iter()
            .all(|d| !d.is_zero());
        World {
            client: ClientTsm::new(ccfg),
            server: ServerTsm::new(scfg),
            ccfg,
            scfg,
            timers_nonzero,
            now: Duration::ZERO,
            links: [Link::default(), Link::default()],
            starts: 0,
            started: BTreeMap::new(),
            order: Vec::new(),
            open: BTreeSet::new(),
            invoke_of: BTreeMap::new(),
            by_invoke: BTreeMap::new(),
            tainted: BTreeSet::new(),
            sent: BTreeMap::new(),
            answers: BTreeMap::new(),
            serials: BTreeSet::new(),
            awaiting: BTreeMap::new(),
            pending: Vec::new(),
            trace: false,
            stats: Stats::default(),
        }
    }

    fn tainted(&self, peer: u8, invoke_id: u8) -> bool {
        self.tainted.contains(&(peer, invoke_id))
    }

    /// Take everything the client produced, checking each APDU and event.
    fn drain_client(&mut self) {
        while let Some(t) = self.client.poll_transmit() {
            let apdu = Apdu::decode(&t.apdu)
                .unwrap_or_else(|e| panic!("the client sent {:02x?}, which does not decode: {e:?}", t.apdu));
            match t.transaction {
                Some(id) => self.check_request(id, t.peer, t.expecting_reply, &apdu, t.apdu.len()),
                None => {
                    assert!(!t.expecting_reply, "{apdu:?} expects a reply");
                    assert!(
                        matches!(apdu, Apdu::SegmentAck { server: false, .. } | Apdu::Abort { server: false, .. }),
                        "the client sent {apdu:?} outside a transaction"
                    );
                }
            }
            if self.trace {
                eprintln!("  client → {} {:?}: {}", t.peer, t.transaction, show(&apdu));
            }
            if t.peer == SERVER {
                self.links[0].push(t.apdu);
            }
        }
        while let Some(Completed { id, outcome }) = self.client.poll_event() {
            if self.trace {
                eprintln!("  client: {id:?} ended {}", show_outcome(&outcome));
            }
            self.check_completed(id, outcome);
        }
    }

    fn check_request(&mut self, id: TransactionId, peer: u8, expecting_reply: bool, apdu: &Apdu<'_>, len: usize) {
        assert!(self.open.contains(&id), "a transmit for {id:?}, which is not pending: {apdu:?}");
        let s = &self.started[&id];
        assert!(expecting_reply, "a request that expects no reply: {apdu:?}");
        assert_eq!(peer, s.to, "{id:?} sent to the wrong peer");
        let Apdu::ConfirmedRequest(r) = apdu else { panic!("{id:?} sent {apdu:?}, not a request") };
        assert_eq!(r.service, s.service, "{id:?}: service");
        assert_eq!(r.max_apdu, self.ccfg.max_apdu_accepted, "{id:?}: Max-APDU announced");
        assert_eq!(r.max_segments, self.ccfg.max_segments_accepted, "{id:?}: Max-Segments announced");
        assert_eq!(r.segmented_response_accepted, self.ccfg.segmented_response_accepted, "{id:?}: SA bit");
        let limit = s.limits.max_apdu.min(self.ccfg.max_apdu_accepted.octets() as usize);
        assert!(len <= limit, "{id:?}: a request APDU of {len} octets, over {limit} ({:?})", s.limits);
        if let Some(seg) = r.segment {
            self.stats.request_segments += 1;
            assert!(
                s.limits.segmented_receive,
                "{id:?}: segmented for a peer that does not receive segments: {:?} body {} octets, own Max-APDU {}",
                s.limits,
                s.len,
                self.ccfg.max_apdu_accepted.octets()
            );
            if let Some(m) = s.limits.max_segments.filter(|m| *m <= 256) {
                assert!(
                    (seg.sequence_number as usize) < m,
                    "{id:?}: segment {} for a peer accepting {m} ({:?}, body {} octets, own Max-APDU {})",
                    seg.sequence_number,
                    s.limits,
                    s.len,
                    self.ccfg.max_apdu_accepted.octets()
                );
            }
            assert!((1..=127).contains(&seg.proposed_window_size), "{id:?}: proposed window {seg:?}");
        }
        let (to, invoke_id) = (s.to, r.invoke_id);
        match self.invoke_of.get(&id) {
            Some(known) => assert_eq!(*known, invoke_id, "{id:?} changed its invoke ID"),
            None => {
                if let Some(other) = self.by_invoke.insert((to, invoke_id), id) {
                    panic!("invoke ID {invoke_id} to peer {to} reused by {id:?} after {other:?}");
                }
                self.invoke_of.insert(id, invoke_id);
            }
        }
    }

    fn check_completed(&mut self, id: TransactionId, outcome: Outcome) {
        assert!(self.open.remove(&id), "{id:?} ended twice, or was never started: {outcome:?}");
        self.stats.outcomes[match outcome {
            Outcome::SimpleAck => 0,
            Outcome::ComplexAck(_) => 1,
            Outcome::Error(_) => 2,
            Outcome::Reject(_) => 3,
            Outcome::Abort { from_server: true, .. } => 4,
            Outcome::Abort { from_server: false, .. } => 5,
            Outcome::Timeout => 6,
        }] += 1;
        let s = self.started[&id].clone();
        let Some(&x) = self.invoke_of.get(&id) else {
            assert_eq!(outcome, Outcome::Timeout, "{id:?} was never sent, yet ended");
            return;
        };
        if self.tainted(s.to, x) {
            return;
        }
        if s.to != SERVER {
            assert_eq!(outcome, Outcome::Timeout, "{id:?} to a peer that never answers");
            return;
        }
        let sent = self.sent.get(&x).map(Vec::as_slice).unwrap_or_default();
        let sent_it = |a: Sent| sent.contains(&a);
        match outcome {
            Outcome::SimpleAck => assert!(sent_it(Sent::Simple), "{id:?} (invoke {x}): SimpleACK never sent"),
            Outcome::Error(body) => {
                assert!(sent_it(Sent::Error(body.clone())), "{id:?} (invoke {x}): Error {body:02x?} never sent")
            }
            Outcome::Reject(r) => assert!(sent_it(Sent::Reject(r)), "{id:?} (invoke {x}): Reject {r:?} never sent"),
            Outcome::Abort { reason, from_server: true } => {
                assert!(sent_it(Sent::Abort(reason)), "{id:?} (invoke {x}): Abort {reason:?} never sent")
            }
            Outcome::Abort { from_server: false, .. } | Outcome::Timeout => {}
            Outcome::ComplexAck(body) => self.check_answer(id, x, &body),
        }
    }

    fn check_answer(&mut self, id: TransactionId, x: u8, body: &[u8]) {
        self.stats.answers_checked += 1;
        if body.len() + 3 > self.ccfg.max_apdu_accepted.octets() as usize {
            self.stats.segmented_answers_checked += 1;
        }
        let answers = self.answers.get(&x).map(Vec::as_slice).unwrap_or_default();
        assert!(!answers.is_empty(), "{id:?} (invoke {x}): a ComplexACK of {} octets nobody answered", body.len());
        if answers.iter().any(|&(serial, len)| is_answer_body(serial, len, body)) {
            return;
        }
        self.stats.answers_spliced += 1;
        assert!(
            answers.len() >= 2,
            "{id:?} (invoke {x}): the ComplexACK of {} octets is not the answer {answers:?} (serial, length)",
            body.len()
        );
        // Executed more than once: a splice of its answers.
        assert!(
            answers.iter().any(|&(_, len)| len == body.len()),
            "{id:?} (invoke {x}): {} octets, none of the answers {answers:?}",
            body.len()
        );
        for (i, b) in body.iter().enumerate() {
            assert!(
                answers.iter().any(|&(serial, len)| i < len && *b == pattern_octet(ANSWER_TAG, serial, len, i)),
                "{id:?} (invoke {x}): octet {i} of the ComplexACK comes from none of the answers {answers:?}"
            );
        }
    }

    /// Take everything the server produced, checking each APDU; returns the
    /// Aborts it sent as (peer, invoke ID, reason).
    fn drain_server(&mut self) -> Vec<(u8, u8, AbortReason)> {
        let mut aborts = Vec::new();
        while let Some((peer, bytes)) = self.server.poll_transmit() {
            let apdu = Apdu::decode(&bytes)
                .unwrap_or_else(|e| panic!("the server sent {bytes:02x?}, which does not decode: {e:?}"));
            if self.trace {
                eprintln!("  server → {peer}: {}", show(&apdu));
            }
            let real = peer == CLIENT && apdu.invoke_id().is_some_and(|x| !self.tainted(SERVER, x));
            match apdu {
                Apdu::ComplexAck(c) => {
                    let len = bytes.len();
                    assert!(len <= self.scfg.max_apdu, "a ComplexACK of {len} octets over our Max-APDU");
                    if real {
                        let limit = self.ccfg.max_apdu_accepted.octets() as usize;
                        assert!(len <= limit, "a ComplexACK of {len} octets to a client accepting {limit}");
                        if let Some(seg) = c.segment {
                            self.stats.answer_segments += 1;
                            assert!(self.ccfg.segmented_response_accepted, "segments to a client refusing them");
                            if let Some(m) = self.ccfg.max_segments_accepted.count() {
                                assert!((seg.sequence_number as u32) < m, "segment {seg:?} to a client accepting {m}");
                            }
                            assert!((1..=127).contains(&seg.proposed_window_size), "proposed window {seg:?}");
                        }
                    }
                }
                Apdu::SimpleAck { .. } | Apdu::Error { .. } | Apdu::Reject { .. } => {}
                Apdu::SegmentAck { server: true, actual_window_size, .. } => {
                    assert!((1..=127).contains(&actual_window_size), "the server sent {apdu:?}")
                }
                Apdu::Abort { server: true, invoke_id, reason } => {
                    self.awaiting.remove(&(peer, invoke_id));
                    aborts.push((peer, invoke_id, reason))
                }
                _ => panic!("the server sent {apdu:?}"),
            }
            if peer == CLIENT {
                if real {
                    let x = apdu.invoke_id().unwrap_or_default();
                    let entry = self.sent.entry(x).or_default();
                    match apdu {
                        Apdu::SimpleAck { .. } => entry.push(Sent::Simple),
                        Apdu::Error { body, .. } => entry.push(Sent::Error(body.to_vec())),
                        Apdu::Reject { reason, .. } => entry.push(Sent::Reject(reason)),
                        Apdu::Abort { reason, .. } => entry.push(Sent::Abort(reason)),
                        _ => {}
                    }
                }
                self.links[1].push(bytes);
            }
        }
        assert!(
            self.server.transactions() <= self.scfg.max_transactions,
            "{} server transactions, over the limit {}",
            self.server.transactions(),
            self.scfg.max_transactions
        );
        aborts
    }

    fn on_indication(&mut self, ind: Indication<u8>) {
        if self.trace {
            eprintln!("  server: indication {:?}, {} octets", ind.key, ind.body.len());
        }
        assert!(self.serials.insert(ind.key.serial), "serial {} indicated twice", ind.key.serial);
        let x = ind.key.invoke_id;
        if let Some(first) = self.awaiting.insert((ind.key.peer, x), ind.key.serial) {
            panic!("{:?} indicated while serial {first} for the same invoke ID is outstanding", ind.key);
        }
        assert!(
            ind.body.len() <= self.scfg.max_request_octets.max(1476),
            "an indication of {} octets over the server's limit",
            ind.body.len()
        );
        if ind.key.peer == CLIENT && !self.tainted(SERVER, x) {
            self.stats.indications_checked += 1;
            let id = *self
                .by_invoke
                .get(&(SERVER, x))
                .unwrap_or_else(|| panic!("an indication for invoke {x}, which the client never sent: {ind:?}"));
            let s = &self.started[&id];
            assert_eq!(ind.service, s.service, "{id:?}: the indication's service");
            assert_eq!(ind.max_apdu, self.ccfg.max_apdu_accepted, "{id:?}: the indication's Max-APDU");
            assert_eq!(ind.max_segments, self.ccfg.max_segments_accepted, "{id:?}: the indication's Max-Segments");
            assert_eq!(ind.segmented_response_accepted, self.ccfg.segmented_response_accepted, "{id:?}: SA");
            let full = request_body(s.seed, s.len);
            if ind.body != full {
                // Segment 256 carries sequence number 0: after the server
                // forgot the request (it aborted it, or answered it), the
                // rest of a window in flight starts a new one there.
                let max_apdu = s.limits.max_apdu.min(self.ccfg.max_apdu_accepted.octets() as usize);
                let stride = 256 * max_apdu.saturating_sub(6).max(1);
                let offset = s.len.wrapping_sub(ind.body.len());
                assert!(
                    ind.body.len() < s.len && offset.is_multiple_of(stride) && full[offset..] == ind.body[..],
                    "{id:?} (invoke {x}): the server indicated {} octets, not the {} started",
                    ind.body.len(),
                    s.len
                );
                self.stats.indications_wrapped += 1;
            }
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.remove(0);
        }
        self.pending.push(ind);
    }

    /// Deliver (or duplicate) the next APDU on a link.
    fn deliver(&mut self, to_client: bool, duplicate: bool) {
        let link = &mut self.links[to_client as usize];
        let packet = if duplicate { link.queue.front().cloned() } else { link.queue.pop_front() };
        let Some(packet) = packet else { return };
        if link.entered - packet.born > MAX_AGE {
            return; // past its lifetime
        }
        let apdu = Apdu::decode(&packet.apdu).expect("checked when sent");
        if self.trace {
            let arrow = if to_client { "server ⇒ client" } else { "client ⇒ server" };
            eprintln!("  {arrow}{}: {}", if duplicate { " (copy)" } else { "" }, show(&apdu));
        }
        if to_client {
            self.client.handle_apdu(self.now, &SERVER, &apdu);
            self.drain_client();
        } else {
            self.server_receives(CLIENT, &apdu);
        }
    }

    fn server_receives(&mut self, peer: u8, apdu: &Apdu<'_>) {
        if let Apdu::Abort { server: false, invoke_id, .. } = apdu {
            self.awaiting.remove(&(peer, *invoke_id));
        }
        if let Some(ind) = self.server.handle_apdu(self.now, &peer, apdu) {
            self.on_indication(ind);
        }
        self.drain_server();
    }

    fn deliver_all(&mut self) {
        let mut deliveries = 0;
        while !(self.links[0].queue.is_empty() && self.links[1].queue.is_empty()) {
            for to_client in [false, true] {
                while !self.links[to_client as usize].queue.is_empty() {
                    self.deliver(to_client, false);
                    deliveries += 1;
                    assert!(deliveries < MAX_DELIVERIES, "livelock: {MAX_DELIVERIES} APDUs without the clock moving");
                }
            }
        }
    }

    fn fire_timers(&mut self) {
        self.client.handle_timeout(self.now);
        self.drain_client();
        self.server.handle_timeout(self.now);
        self.drain_server();
        if self.timers_nonzero {
            // Nothing is delivered between the two calls, so each machine's
            // deadlines are as its own handle_timeout left them.
            for (who, next) in [("client", self.client.poll_timeout()), ("server", self.server.poll_timeout())] {
                assert!(
                    next.is_none_or(|t| t > self.now),
                    "after handle_timeout({:?}) the {who} still has a deadline at {next:?}",
                    self.now
                );
            }
        }
    }

    fn run(&mut self, op: &Op) {
        match *op {
            Op::Start { to, service, len, max_apdu, segmented_receive, max_segments } => {
                if self.starts as usize >= MAX_STARTS {
                    return;
                }
                let seed = self.starts;
                self.starts += 1;
                let to = if to % 8 == 7 { NOWHERE } else { SERVER };
                let len = len as usize % (MAX_BODY + 1);
                let limits = PeerLimits {
                    max_apdu: STANDARD_MAX_APDU[max_apdu as usize % 6],
                    segmented_receive,
                    max_segments: (max_segments != 0).then_some(max_segments as usize),
                };
                let service = ConfirmedServiceChoice(service);
                let body = request_body(seed, len);
                match self.client.start_with(self.now, to, service, body, limits) {
                    Ok(id) => {
                        self.stats.started += 1;
                        assert!(!self.started.contains_key(&id), "{id:?} returned twice");
                        self.started.insert(id, Started { to, service, seed, len, limits });
                        self.order.push(id);
                        self.open.insert(id);
                    }
                    Err(StartError::SegmentationNotSupported) => {
                        assert!(!limits.segmented_receive, "SegmentationNotSupported for {limits:?}")
                    }
                    Err(StartError::TooLong) => assert!(limits.max_segments.is_some(), "TooLong for {limits:?}"),
                    Err(StartError::QueueFull) => {}
                }
                self.drain_client();
            }
            Op::Deliver { to_client } => self.deliver(to_client, false),
            Op::Drop { to_client } => {
                self.links[to_client as usize].queue.pop_front();
            }
            Op::Duplicate { to_client } => self.deliver(to_client, true),
            Op::Swap { to_client, with } => {
                let q = &mut self.links[to_client as usize].queue;
                if !q.is_empty() {
                    let with = with as usize % q.len();
                    q.swap(0, with);
                }
            }
            Op::DeliverAll => self.deliver_all(),
            Op::Advance { ms: step } => {
                self.now += ms(step);
                self.fire_timers();
            }
            Op::AdvanceToNext => {
                let next = [self.client.poll_timeout(), self.server.poll_timeout()].into_iter().flatten().min();
                if let Some(at) = next {
                    self.now = self.now.max(at);
                }
                self.fire_timers();
            }
            Op::Respond { which, answer, len } => self.respond(which, answer, len),
            Op::Cancel { which } => {
                if self.order.is_empty() {
                    return;
                }
                let id = self.order[which as usize % self.order.len()];
                let pending = self.open.remove(&id);
                self.stats.cancelled += pending as u64;
                assert_eq!(self.client.cancel(self.now, id), pending, "cancel({id:?}) with it pending: {pending}");
                self.drain_client();
            }
            Op::Inject { into_server, peer, ref apdu } => {
                let Ok(decoded) = Apdu::decode(apdu) else { return };
                self.stats.injected += 1;
                if let Some(x) = decoded.invoke_id() {
                    match (into_server, peer) {
                        (true, CLIENT) => {
                            self.tainted.insert((SERVER, x));
                        }
                        (true, _) => {}
                        (false, peer) => {
                            self.tainted.insert((peer, x));
                        }
                    }
                }
                if into_server {
                    self.server_receives(peer, &decoded);
                } else {
                    self.client.handle_apdu(self.now, &peer, &decoded);
                    self.drain_client();
                }
            }
        }
    }

    fn respond(&mut self, which: u8, answer: u8, len: u16) {
        if self.pending.is_empty() {
            return;
        }
        let ind = self.pending.remove(which as usize % self.pending.len());
        let capacity = ind.answer_capacity(self.server.config());
        let complex_len = match answer % 6 {
            1 => Some(len as usize % (MAX_BODY + 1)),
            5 => Some((capacity.min(MAX_BODY) + (len % 5) as usize).saturating_sub(2)),
            _ => None,
        };
        let response = match (answer % 6, complex_len) {
            (_, Some(n)) => Response::ComplexAck(answer_body(ind.key.serial, n)),
            (0, _) => Response::SimpleAck,
            (2, _) => Response::Error(vec![0x91, 0x02, 0x91, len as u8 & 0x7F]),
            (3, _) => Response::Reject(RejectReason(len as u8)),
            _ => Response::Abort(AbortReason(len as u8)),
        };
        let answered = self.server.respond(self.now, &ind.key, response);
        let key = (ind.key.peer, ind.key.invoke_id);
        let outstanding = self.awaiting.get(&key) == Some(&ind.key.serial);
        assert_eq!(answered, outstanding, "respond({:?}) with the indication outstanding: {outstanding}", ind.key);
        if answered {
            self.awaiting.remove(&key);
        }
        if let (true, Some(n)) = (answered, complex_len)
            && ind.key.peer == CLIENT
        {
            self.answers.entry(ind.key.invoke_id).or_default().push((ind.key.serial, n));
        }
        let aborts = self.drain_server();
        if let (true, Some(n)) = (answered, complex_len)
            && n <= capacity
        {
            for (peer, invoke_id, reason) in aborts {
                assert!(
                    (peer, invoke_id) != (ind.key.peer, ind.key.invoke_id),
                    "an answer of {n} octets within answer_capacity {capacity} was aborted: {reason:?}"
                );
            }
        }
    }

    /// Jump the clock until both machines are idle, delivering everything.
    fn settle(&mut self) {
        self.stats.settled_busy +=
            (self.client.in_flight() + self.client.queued() + self.server.transactions() > 0) as u64;
        for _ in 0..SETTLE_ROUNDS {
            self.deliver_all();
            if self.client.in_flight() + self.client.queued() == 0 && self.server.transactions() == 0 {
                break;
            }
            self.now += SETTLE_STEP;
            self.fire_timers();
        }
        self.deliver_all();
        assert_eq!(
            (self.client.in_flight(), self.client.queued(), self.server.transactions()),
            (0, 0, 0),
            "transactions left after settling (client in flight, client queued, server)"
        );
        assert!(self.open.is_empty(), "transactions that never ended: {:?}", self.open);
    }
}

/// The `segmentation` target.
pub fn check_segmentation(data: &[u8]) {
    run_scenario(&Scenario::decode(data), false);
}

/// Run a scenario and settle; panics on any broken invariant. With `trace`,
/// every operation, APDU and event goes to stderr.
pub fn run_scenario(scenario: &Scenario, trace: bool) -> Stats {
    let mut world = World::new(&scenario.client, &scenario.server);
    world.trace = trace;
    if trace {
        eprintln!("client {:?}\nserver {:?}", world.ccfg, world.scfg);
    }
    for op in &scenario.ops {
        if trace {
            eprintln!("{:>9?} {op:?}", world.now);
        }
        world.run(op);
    }
    if trace {
        eprintln!("{:>9?} settle", world.now);
    }
    world.settle();
    world.stats
}

/// One line for an APDU in a trace.
fn show(apdu: &Apdu<'_>) -> String {
    match apdu {
        Apdu::ConfirmedRequest(r) => {
            format!("Request invoke {} {:?} service {} {} octets", r.invoke_id, r.segment, r.service.0, r.body.len())
        }
        Apdu::ComplexAck(c) => {
            format!("ComplexACK invoke {} {:?} service {} {} octets", c.invoke_id, c.segment, c.service.0, c.body.len())
        }
        Apdu::Error { invoke_id, body, .. } => format!("Error invoke {invoke_id} {body:02x?}"),
        other => format!("{other:?}"),
    }
}

fn show_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::ComplexAck(body) => format!("ComplexAck({} octets)", body.len()),
        other => format!("{other:?}"),
    }
}

/// Named scenarios for the seed corpus: each drives one of Clause 5.4's
/// sequences.
pub fn seed_scenarios() -> Vec<(&'static str, Scenario)> {
    use Op::*;
    let start = |len: u16, max_apdu: u8| Start {
        to: 0,
        service: ConfirmedServiceChoice::READ_PROPERTY_MULTIPLE.0,
        len,
        max_apdu,
        segmented_receive: true,
        max_segments: 0,
    };
    let respond = |answer: Answer, len: u16| Respond { which: 0, answer: answer as u8, len };
    let small = ClientKnobs::default();
    let c480 = ClientKnobs { max_apdu_code: MaxApdu::UP_TO_480.code(), window: 4, ..small };
    let server = ServerKnobs::default();
    let s = |client: ClientKnobs, server: ServerKnobs, ops: Vec<Op>| Scenario { client, server, ops };
    let hop = |n: usize, to_client: bool| vec![Deliver { to_client }; n];
    vec![
        ("simple-ack", s(small, server, vec![start(20, 5), DeliverAll, respond(Answer::Simple, 0), DeliverAll])),
        (
            "complex-ack-unsegmented",
            s(small, server, vec![start(7, 5), DeliverAll, respond(Answer::Complex, 300), DeliverAll]),
        ),
        (
            "segmented-request-480",
            s(small, server, vec![start(6000, 3), DeliverAll, respond(Answer::Complex, 100), DeliverAll]),
        ),
        (
            "segmented-answer-window-4",
            s(c480, server, vec![start(5, 5), DeliverAll, respond(Answer::Complex, 10_000), DeliverAll]),
        ),
        (
            "segmented-answer-lost-segment-nak",
            s(
                c480,
                server,
                [
                    vec![start(5, 5), DeliverAll, respond(Answer::Complex, 5000)],
                    hop(1, true),
                    hop(1, false),
                    hop(1, true),
                    vec![Drop { to_client: true }, DeliverAll],
                ]
                .concat(),
            ),
        ),
        (
            "segmented-answer-duplicated-and-swapped",
            s(
                c480,
                server,
                [
                    vec![start(5, 5), DeliverAll, respond(Answer::Complex, 4000)],
                    hop(1, true),
                    hop(1, false),
                    vec![Duplicate { to_client: true }, Swap { to_client: true, with: 2 }, DeliverAll],
                ]
                .concat(),
            ),
        ),
        (
            "segmented-answer-lost-ack-timer",
            s(
                c480,
                server,
                [
                    vec![start(5, 5), DeliverAll, respond(Answer::Complex, 5000)],
                    hop(1, true),
                    vec![Drop { to_client: false }, AdvanceToNext, DeliverAll],
                ]
                .concat(),
            ),
        ),
        (
            "segmented-request-lost-segment",
            s(
                ClientKnobs { window: 4, ..small },
                server,
                [
                    vec![start(2000, 2)],
                    hop(1, false),
                    hop(1, true),
                    hop(2, false),
                    vec![Drop { to_client: false }, DeliverAll, respond(Answer::Simple, 0), DeliverAll],
                ]
                .concat(),
            ),
        ),
        (
            "more-than-256-segments",
            s(
                ClientKnobs {
                    max_apdu_code: MaxApdu::UP_TO_50.code(),
                    window: 127,
                    max_segments_code: MaxSegments::MORE_THAN_64.code(),
                    ..small
                },
                ServerKnobs { window: 127, ..server },
                vec![start(1, 5), DeliverAll, respond(Answer::Complex, 45 * 300), DeliverAll],
            ),
        ),
        (
            "answer-too-long-for-max-segments",
            s(
                ClientKnobs { max_segments_code: MaxSegments::at_least(4).code(), ..c480 },
                server,
                vec![start(5, 5), DeliverAll, respond(Answer::AtCapacity, 3), DeliverAll],
            ),
        ),
        (
            "answer-at-capacity",
            s(c480, server, vec![start(5, 5), DeliverAll, respond(Answer::AtCapacity, 2), DeliverAll]),
        ),
        (
            "client-refuses-segments",
            s(
                ClientKnobs { segmented_response_accepted: false, ..c480 },
                server,
                vec![start(5, 5), DeliverAll, respond(Answer::Complex, 1000), DeliverAll],
            ),
        ),
        (
            "request-over-max-request-segments",
            s(small, ServerKnobs { max_request_segments: 4, ..server }, vec![start(4000, 3), DeliverAll]),
        ),
        (
            "vanishing-client-mid-request",
            s(
                ClientKnobs { window: 4, ..small },
                server,
                vec![
                    start(3000, 3),
                    Deliver { to_client: false },
                    Drop { to_client: true },
                    AdvanceToNext,
                    AdvanceToNext,
                ],
            ),
        ),
        (
            "cancel-then-segmented-answer",
            s(
                ClientKnobs { window: 2, ..c480 },
                server,
                vec![start(1, 5), DeliverAll, Cancel { which: 0 }, respond(Answer::Complex, 3000), DeliverAll],
            ),
        ),
        (
            "admission-refuses-second",
            s(
                small,
                ServerKnobs { max_in_flight: 1, ..server },
                vec![start(10, 5), start(10, 5), DeliverAll, respond(Answer::Error, 31), DeliverAll],
            ),
        ),
        (
            "queued-behind-one-in-flight",
            s(
                ClientKnobs { max_in_flight: 1, ..small },
                server,
                vec![
                    start(10, 5),
                    start(10, 5),
                    start(10, 5),
                    DeliverAll,
                    respond(Answer::Reject, 4),
                    DeliverAll,
                    respond(Answer::Abort, 4),
                    DeliverAll,
                ],
            ),
        ),
        (
            "retries-then-timeout",
            s(
                small,
                server,
                vec![
                    start(10, 5),
                    Drop { to_client: false },
                    Advance { ms: 3000 },
                    Drop { to_client: false },
                    AdvanceToNext,
                    DeliverAll,
                    respond(Answer::Simple, 0),
                    DeliverAll,
                ],
            ),
        ),
        (
            "peer-that-never-answers",
            s(
                small,
                server,
                vec![
                    Start { to: 7, service: 15, len: 3000, max_apdu: 3, segmented_receive: true, max_segments: 0 },
                    AdvanceToNext,
                    AdvanceToNext,
                ],
            ),
        ),
        (
            "inject-abort-and-segment-ack",
            s(
                c480,
                server,
                vec![
                    start(5, 5),
                    DeliverAll,
                    respond(Answer::Complex, 3000),
                    Inject { into_server: true, peer: CLIENT, apdu: vec![0x42, 0x00, 0x00, 0x04] },
                    Inject { into_server: false, peer: SERVER, apdu: vec![0x71, 0x00, 0x04] },
                    DeliverAll,
                ],
            ),
        ),
        (
            "inject-segmented-request-from-stranger",
            s(
                small,
                server,
                vec![
                    Inject { into_server: true, peer: 9, apdu: vec![0x0E, 0x75, 0x05, 0x00, 0x04, 0x0C, 0x0C, 0x00] },
                    Inject { into_server: true, peer: 9, apdu: vec![0x0A, 0x75, 0x05, 0x01, 0x04, 0x0C, 0x01] },
                    respond(Answer::Complex, 4000),
                    AdvanceToNext,
                ],
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_round_trip_through_their_encoding() {
        for (name, scenario) in seed_scenarios() {
            assert_eq!(Scenario::decode(&scenario.encode()), scenario, "{name}");
        }
    }

    #[test]
    fn the_seed_scenarios_segment_both_ways() {
        let run = |name: &str| {
            let (_, scenario) = seed_scenarios().into_iter().find(|(n, _)| *n == name).unwrap();
            let mut world = World::new(&scenario.client, &scenario.server);
            for op in &scenario.ops {
                world.run(op);
            }
            world.settle();
            world.server.counters()
        };
        assert_eq!(run("segmented-request-480").segmented_requests, 1);
        assert_eq!(run("segmented-answer-window-4").segmented_responses, 1);
        assert_eq!(run("more-than-256-segments").segmented_responses, 1);
    }

    #[test]
    fn short_and_empty_inputs_run() {
        check_segmentation(&[]);
        check_segmentation(&[0xFF; 40]);
    }
}
