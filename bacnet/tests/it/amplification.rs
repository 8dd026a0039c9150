//! Reflection and amplification: what a peer that acknowledges blind — or
//! never — can make the server state machine send.
//!
//! A ReadProperty is 17 octets on B/IP (BVLL 4, NPDU 2, APDU header 4,
//! service 7); a Segment-ACK is 10. Its answer here is a property of 132,000
//! octets (an Active_COV_Subscriptions list that size was the attack's
//! lever): 90 segments of 1,476-octet APDUs. Each test is one attack, counts
//! UDP payload octets both ways and asserts the ratio stays under the bound
//! the design states:
//!
//! - no acknowledgement at all: segment 0 and its `retries` resends;
//! - one blind Segment-ACK naming window 127: the proposed window (16), not
//!   127, and each of its segments at most `1 + retries` times;
//! - every segment acknowledged blind: each segment once; negative
//!   acknowledgements spend the retries;
//! - a flood of such requests from many ports of one address: the origin's
//!   answer budget (burst + rate × time + one window).

use bacnet::apdu::{Apdu, ConfirmedRequest, MaxApdu, MaxSegments};
use bacnet::enums::{AbortReason, ConfirmedServiceChoice as S};
use bacnet::tsm::{AnswerBudget, Response, ServerTsm, ServerTsmConfig};
use std::collections::BTreeMap;
use std::time::Duration;

/// BVLL (4) and NPDU (2) octets around every APDU on B/IP.
const OVERHEAD: usize = 6;
/// The large property's encoded size.
const ANSWER: usize = 132_000;
/// A requester: (IP address, UDP port).
type Peer = (u8, u16);

const VICTIM: Peer = (9, 47808);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn read_property(invoke_id: u8) -> ConfirmedRequest<'static> {
    ConfirmedRequest {
        segment: None,
        segmented_response_accepted: true,
        max_segments: MaxSegments::MORE_THAN_64,
        max_apdu: MaxApdu::UP_TO_1476,
        invoke_id,
        service: S::READ_PROPERTY,
        body: &[0x0C, 0x02, 0x00, 0x00, 0x01, 0x19, 0x98],
    }
}

/// The attacker's side of the wire: what went in, what came out.
struct Attack {
    server: ServerTsm<Peer>,
    now: Duration,
    octets_in: usize,
    octets_out: usize,
    /// Times each (peer, invoke ID, sequence number) segment went out.
    segments: BTreeMap<(Peer, u8, u8), usize>,
    aborts: Vec<AbortReason>,
}

impl Attack {
    fn new(config: ServerTsmConfig) -> Self {
        Attack {
            // Answers are charged to the requester's IP address, whatever
            // its port, as the host's stations do.
            server: ServerTsm::with_origin(config, |p| (p.0, 0)),
            now: Duration::ZERO,
            octets_in: 0,
            octets_out: 0,
            segments: BTreeMap::new(),
            aborts: Vec::new(),
        }
    }

    fn config() -> ServerTsmConfig {
        ServerTsmConfig { max_response_octets: ANSWER, ..ServerTsmConfig::default() }
    }

    fn receive(&mut self, peer: Peer, apdu: Apdu<'_>) -> Option<bacnet::tsm::Indication<Peer>> {
        let mut wire = Vec::new();
        apdu.encode(&mut wire);
        self.octets_in += wire.len() + OVERHEAD;
        let indication = self.server.handle_apdu(self.now, &peer, &apdu);
        self.drain();
        indication
    }

    /// A ReadProperty of the large property, answered at once.
    fn request(&mut self, peer: Peer, invoke_id: u8) {
        if let Some(ind) = self.receive(peer, Apdu::ConfirmedRequest(read_property(invoke_id))) {
            self.server.respond(self.now, &ind.key, Response::ComplexAck(vec![0x5A; ANSWER]));
            self.drain();
        }
    }

    fn segment_ack(&mut self, peer: Peer, invoke_id: u8, negative: bool, sequence_number: u8, window: u8) {
        let ack = Apdu::SegmentAck { negative, server: false, invoke_id, sequence_number, actual_window_size: window };
        self.receive(peer, ack);
    }

    /// Segments sent since the last call.
    fn drain(&mut self) -> usize {
        let mut sent = 0;
        while let Some((peer, apdu)) = self.server.poll_transmit() {
            self.octets_out += apdu.len() + OVERHEAD;
            match Apdu::decode(&apdu).expect("the server sends valid APDUs") {
                Apdu::ComplexAck(c) => {
                    let seq = c.segment.expect("the answer is segmented").sequence_number;
                    *self.segments.entry((peer, c.invoke_id, seq)).or_default() += 1;
                    sent += 1;
                }
                Apdu::Abort { reason, .. } => self.aborts.push(reason),
                other => panic!("unexpected {other:?}"),
            }
        }
        sent
    }

    /// Let every timer run out, up to `until`.
    fn wait_until(&mut self, until: Duration) {
        while let Some(deadline) = self.server.poll_timeout() {
            if deadline > until {
                break;
            }
            self.now = self.now.max(deadline);
            self.server.handle_timeout(self.now);
            self.drain();
        }
        self.now = self.now.max(until);
    }

    fn ratio(&self) -> f64 {
        self.octets_out as f64 / self.octets_in as f64
    }

    fn most_sends_of_one_segment(&self) -> usize {
        self.segments.values().copied().max().unwrap_or(0)
    }

    fn report(&self, attack: &str) {
        println!(
            "{attack}: {} octets in, {} out ({} segments, at most {} of one), ratio {:.0}",
            self.octets_in,
            self.octets_out,
            self.segments.values().sum::<usize>(),
            self.most_sends_of_one_segment(),
            self.ratio()
        );
    }
}

/// The largest segment datagram.
const SEGMENT_DATAGRAM: usize = 1476 + OVERHEAD;

#[test]
fn an_unacknowledged_answer_sends_segment_zero_and_the_standards_retries_only() {
    let mut a = Attack::new(Attack::config());
    a.request(VICTIM, 1);
    a.wait_until(ms(60_000));
    a.report("no acknowledgement");
    // Clause 5.4.5: segment 0, resent Number_Of_APDU_Retries (3) times.
    assert_eq!(a.segments.values().sum::<usize>(), 4);
    let bound = (4 * SEGMENT_DATAGRAM) as f64 / 17.0;
    assert!(a.ratio() <= bound, "ratio {:.0} over the stated bound {bound:.0}", a.ratio());
    assert_eq!(a.server.transactions(), 0);
}

#[test]
fn one_blind_segment_ack_naming_window_127_draws_the_proposed_window_only() {
    let mut a = Attack::new(Attack::config());
    a.request(VICTIM, 1);
    a.segment_ack(VICTIM, 1, false, 0, 127);
    let first_window = a.segments.len() - 1;
    a.wait_until(ms(60_000));
    a.report("one blind Segment-ACK, window 127");
    assert_eq!(first_window, 16, "the window is clamped to the 16 proposed (Clause 5.3), not 127");
    // Segment 0 once, then the window of 16 sent and resent 3 times.
    assert_eq!(a.segments.values().sum::<usize>(), 1 + 16 * 4);
    assert!(a.most_sends_of_one_segment() <= 4);
    // 65 segment datagrams for 27 octets: the standard's retries of one
    // window. The per-origin budget bounds what repeating it buys (the
    // flood test below). Unclamped this was 89 segments at once, ~19,400×.
    let bound = (65 * SEGMENT_DATAGRAM) as f64 / 27.0;
    assert!(a.ratio() <= bound, "ratio {:.0} over the stated bound {bound:.0}", a.ratio());
}

#[test]
fn acknowledging_every_segment_blind_sends_each_segment_once() {
    let mut a = Attack::new(Attack::config());
    a.request(VICTIM, 1);
    // Sequence numbers are predictable: acknowledge 0, 1, 2, … as fast as
    // possible, each twice, all claiming window 127.
    for seq in 0..=89u8 {
        a.segment_ack(VICTIM, 1, false, seq, 127);
        a.segment_ack(VICTIM, 1, false, seq, 127);
    }
    a.wait_until(ms(60_000));
    a.report("every segment acknowledged blind");
    assert_eq!(a.segments.len(), 90, "the whole answer went out");
    assert_eq!(
        a.most_sends_of_one_segment(),
        1,
        "no segment twice: a positive ACK inside the window sends only fresh ones"
    );
    // The answer itself, once, for 1.8 KB of acknowledgements.
    let bound = (90 * SEGMENT_DATAGRAM) as f64 / (17 + 2 * 90 * 10) as f64;
    assert!(a.ratio() <= bound, "ratio {:.0} over the stated bound {bound:.0}", a.ratio());
}

#[test]
fn blind_negative_acks_spend_the_retries() {
    let mut a = Attack::new(Attack::config());
    a.request(VICTIM, 1);
    a.segment_ack(VICTIM, 1, false, 0, 16);
    // Claim a loss again and again, each NAK naming the first segment of
    // the window in flight (the only one always inside it).
    for seq in 1..=100u8 {
        a.segment_ack(VICTIM, 1, true, seq, 16);
    }
    a.report("100 blind NAKs");
    assert_eq!(a.most_sends_of_one_segment(), 4, "sent once and resent for the 3 retries, not 100 times");
    a.wait_until(ms(60_000));
    assert_eq!(a.most_sends_of_one_segment(), 4, "the timer has no retry left either");
}

#[test]
fn a_legitimate_receiver_still_gets_the_whole_answer_over_a_lossy_link() {
    // The receiver acknowledges at each window's end and NAKs a gap, as
    // Clause 5.4 has it; segment 20 is lost once.
    let mut a = Attack::new(Attack::config());
    a.request(VICTIM, 1);
    a.segment_ack(VICTIM, 1, false, 0, 16);
    a.segment_ack(VICTIM, 1, false, 16, 16);
    a.segment_ack(VICTIM, 1, true, 19, 16);
    let mut held = 19u32;
    while held < 89 {
        held = (held + 16).min(89);
        a.segment_ack(VICTIM, 1, false, held as u8, 16);
    }
    assert_eq!(a.server.transactions(), 0, "the final Segment-ACK completes the answer");
    assert_eq!(a.segments.len(), 90);
    assert!(a.aborts.is_empty());
}

#[test]
fn a_flood_from_many_ports_of_one_address_is_held_to_its_answer_budget() {
    let budget = AnswerBudget::default();
    let config = ServerTsmConfig { max_transactions: 128, ..Attack::config() };
    let mut a = Attack::new(config);
    // 2,000 attacks of the second kind, one every 5 ms for 10 s, from 500
    // source ports of the victim's address.
    for i in 0..2000u32 {
        a.wait_until(ms(5 * u64::from(i)));
        let peer = (VICTIM.0, 40_000 + (i % 500) as u16);
        let invoke = (i / 500) as u8;
        a.request(peer, invoke);
        a.segment_ack(peer, invoke, false, 0, 127);
    }
    a.wait_until(ms(120_000));
    a.report("flood from 500 ports");
    // Within the budget: burst + rate × the time the flood and its
    // retries lasted, plus one window of overdraft, plus the Aborts.
    let seconds = 10.0 + 4.0 * 2.0;
    let segment_octets = f64::from(budget.burst_octets) + f64::from(budget.octets_per_second) * seconds;
    let aborts = a.aborts.len() as f64 * (4.0 + OVERHEAD as f64);
    let window = 16.0 * SEGMENT_DATAGRAM as f64;
    let bound = segment_octets * SEGMENT_DATAGRAM as f64 / 1476.0 + window + aborts;
    assert!(a.octets_out as f64 <= bound, "{} octets out, over the budget's {bound:.0}", a.octets_out);
    assert!(a.server.counters().budget_refused > 0, "refusals are counted");
    assert!(a.aborts.contains(&AbortReason::OUT_OF_RESOURCES));
    assert!(a.ratio() < 100.0, "ratio {:.0}", a.ratio());
}
