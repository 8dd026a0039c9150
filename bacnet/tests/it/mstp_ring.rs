//! The MS/TP Master Node state machine on a simulated line: a `Ring` of
//! stations sharing one RS-485 bus on a simulated clock, each octet reaching
//! the other stations when a UART at the baud rate would deliver it.
//!
//! Conversations read like the standard's: ring formation from silence,
//! token passing, replies and Reply Postponed, a station leaving and
//! joining, a lost token, a silent station, 127 masters, noise, a duplicate
//! address; and slave nodes (Clause 9.5.7) beside the masters.

use bacnet::mstp::master::{ConfigError, SendError};
use bacnet::mstp::{
    BROADCAST, Frame, FrameType, Header, MasterConfig, MasterEvent, MasterNode, MasterState, Micros, T_NO_TOKEN,
    T_SLOT, bit_times,
};
use std::collections::BTreeMap;

const BAUD: u32 = 38_400;
const MS: Micros = 1_000;
const S: Micros = 1_000_000;

/// How a station's host answers a BACnet Data Expecting Reply.
#[derive(Debug, Clone, Copy)]
enum Host {
    /// With a reply after this long.
    ReplyAfter(Micros),
}

struct Station {
    node: MasterNode,
    alive: bool,
    host: Host,
    /// What the node handed up, when.
    events: Vec<(Micros, MasterEvent)>,
}

/// A frame on the line: when its first octet went, who sent it, its octets.
#[derive(Debug, Clone)]
struct OnLine {
    at: Micros,
    octets: Vec<u8>,
}

impl OnLine {
    fn header(&self) -> Option<Header> {
        Header::decode(&self.octets).ok()
    }

    /// (Frame Type, source, destination) as sent.
    fn kind(&self) -> (FrameType, u8, u8) {
        let h = self.header().expect("stations send valid headers");
        (h.frame_type, h.source, h.destination)
    }
}

enum Action {
    /// An octet reaches every station but its sender.
    Octet { sender: usize, octet: u8 },
    /// A station's host hands its reply to the node.
    Reply { station: usize, to: u8, npdu: Vec<u8> },
}

struct Ring {
    now: Micros,
    baud: u32,
    stations: Vec<Station>,
    pending: BTreeMap<(Micros, u64), Action>,
    seq: u64,
    line: Vec<OnLine>,
    /// Flip one bit in one octet out of this many (0: never).
    noise_one_in: u64,
    rng: u64,
    /// Octets are lost while this is true (a cut cable).
    cut: bool,
}

fn config(ts: u8, max_master: u8) -> MasterConfig {
    MasterConfig { max_master, ..MasterConfig::new(ts, BAUD) }
}

impl Ring {
    fn new(addresses: &[u8], max_master: u8) -> Ring {
        let mut ring = Ring {
            now: 0,
            baud: BAUD,
            stations: Vec::new(),
            pending: BTreeMap::new(),
            seq: 0,
            line: Vec::new(),
            noise_one_in: 0,
            rng: 0x2545_F491_4F6C_DD1D,
            cut: false,
        };
        for &a in addresses {
            ring.add(config(a, max_master));
        }
        ring
    }

    /// A station powered on now; returns its index.
    fn add(&mut self, config: MasterConfig) -> usize {
        let node = MasterNode::new(config, self.now).unwrap();
        self.stations.push(Station { node, alive: true, host: Host::ReplyAfter(2 * MS), events: Vec::new() });
        self.stations.len() - 1
    }

    /// The station with address `ts` (the first, if two share it).
    fn at(&mut self, ts: u8) -> &mut Station {
        self.stations.iter_mut().find(|s| s.node.config().this_station == ts).unwrap()
    }

    fn schedule(&mut self, at: Micros, action: Action) {
        self.seq += 1;
        self.pending.insert((at, self.seq), action);
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Take what every station has to send or hand up at `now`.
    fn flush(&mut self) {
        for i in 0..self.stations.len() {
            if !self.stations[i].alive {
                continue;
            }
            while let Some(t) = self.stations[i].node.poll_transmit(self.now) {
                let start = self.now;
                for (k, &octet) in t.octets.iter().enumerate() {
                    let at = start + bit_times(10 * (k as u64 + 1), self.baud);
                    self.schedule(at, Action::Octet { sender: i, octet });
                }
                self.line.push(OnLine { at: start, octets: t.octets });
            }
            while let Some(e) = self.stations[i].node.poll_event() {
                if let MasterEvent::Received { source, expecting_reply: true, npdu, .. } = &e
                    && let Host::ReplyAfter(delay) = self.stations[i].host
                {
                    let mut reply = vec![0x01, 0x00, 0x30];
                    reply.extend_from_slice(&npdu[2..]);
                    let (to, at) = (*source, self.now + delay);
                    self.schedule(at, Action::Reply { station: i, to, npdu: reply });
                }
                self.stations[i].events.push((self.now, e));
            }
        }
    }

    fn run_until(&mut self, end: Micros) {
        let mut spins = 0;
        loop {
            self.flush();
            let next_action = self.pending.keys().next().map(|k| k.0);
            let next_timer = self.stations.iter().filter(|s| s.alive).filter_map(|s| s.node.poll_timeout()).min();
            let Some(next) = [next_action, next_timer].into_iter().flatten().min() else {
                self.now = end;
                return;
            };
            if next > end {
                self.now = end;
                return;
            }
            if next <= self.now {
                spins += 1;
                assert!(spins < 10_000, "no progress at {} µs", self.now);
            } else {
                spins = 0;
            }
            self.now = self.now.max(next);
            while let Some(entry) = self.pending.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                match entry.remove() {
                    Action::Octet { sender, mut octet } => {
                        if self.cut {
                            continue;
                        }
                        if self.noise_one_in > 0 && self.random().is_multiple_of(self.noise_one_in) {
                            octet ^= 1 << (self.random() % 8);
                        }
                        let now = self.now;
                        for (i, s) in self.stations.iter_mut().enumerate() {
                            if i != sender && s.alive {
                                s.node.handle_octets(now, &[octet]);
                            }
                        }
                    }
                    Action::Reply { station, to, npdu } => {
                        let now = self.now;
                        let s = &mut self.stations[station];
                        if s.alive
                            && let Err(e) = s.node.reply(now, to, npdu)
                        {
                            // Only a slave refuses: a late reply it can no longer send.
                            assert!(s.node.config().slave && e == SendError::Slave, "{e}");
                        }
                    }
                }
            }
            let now = self.now;
            for s in self.stations.iter_mut().filter(|s| s.alive) {
                if s.node.poll_timeout().is_some_and(|t| t <= now) {
                    s.node.handle_timeout(now);
                }
            }
        }
    }

    /// Frames on the line since `since`, as (type, source, destination).
    fn frames_since(&self, since: Micros) -> Vec<(FrameType, u8, u8)> {
        self.line.iter().filter(|f| f.at >= since).map(OnLine::kind).collect()
    }

    /// Run until a frame of `frame_type` from `ts` is on the line (its
    /// octets in flight reach the others whatever happens to its sender).
    fn run_until_sent_by(&mut self, ts: u8, frame_type: FrameType) {
        let from = self.line.len();
        while !self.line[from..].iter().any(|f| f.kind().0 == frame_type && f.kind().1 == ts) {
            let until = self.now + 100;
            self.run_until(until);
        }
    }

    /// Token passes on the line since `since`, as (source, destination).
    fn tokens_since(&self, since: Micros) -> Vec<(u8, u8)> {
        self.frames_since(since).into_iter().filter(|f| f.0 == FrameType::TOKEN).map(|f| (f.1, f.2)).collect()
    }

    /// Each station's NS.
    fn next_stations(&self) -> Vec<(u8, u8)> {
        self.stations
            .iter()
            .filter(|s| s.alive)
            .map(|s| (s.node.config().this_station, s.node.next_station()))
            .collect()
    }
}

/// The token passes `since` cycle through `order` and nothing else.
fn assert_token_cycles(ring: &Ring, since: Micros, order: &[u8]) {
    let tokens = ring.tokens_since(since);
    assert!(tokens.len() >= 2 * order.len(), "too few tokens: {tokens:?}");
    for (from, to) in &tokens {
        let i = order.iter().position(|a| a == from).unwrap_or_else(|| panic!("token from {from}: {tokens:?}"));
        assert_eq!(*to, order[(i + 1) % order.len()], "token {from}→{to} out of order: {tokens:?}");
    }
}

// ---------------------------------------------------------------- one node

#[test]
fn settings_the_standard_forbids_are_refused() {
    let bad = |c: MasterConfig| MasterNode::new(c, 0).err();
    assert_eq!(bad(MasterConfig { max_master: 128, ..MasterConfig::new(1, BAUD) }), Some(ConfigError::MaxMaster));
    assert_eq!(bad(MasterConfig { max_master: 10, ..MasterConfig::new(11, BAUD) }), Some(ConfigError::ThisStation));
    assert_eq!(
        bad(MasterConfig { max_info_frames: 0, ..MasterConfig::new(1, BAUD) }),
        Some(ConfigError::MaxInfoFrames)
    );
    assert_eq!(bad(MasterConfig::new(1, 0)), Some(ConfigError::Baud));
}

#[test]
fn a_new_node_answers_poll_for_master_after_tturnaround() {
    let mut node = MasterNode::new(MasterConfig::new(7, BAUD), 0).unwrap();
    assert_eq!(node.state(), MasterState::Idle, "INITIALIZE is left at once");
    node.handle_octets(1_000, &Frame::poll_for_master(7, 3).to_vec().unwrap());
    assert_eq!(node.poll_timeout(), Some(1_000 + bit_times(40, BAUD)), "Tturnaround first");
    assert_eq!(node.poll_transmit(1_000), None);
    let t = node.poll_transmit(1_000 + bit_times(40, BAUD)).unwrap();
    assert_eq!(t.octets, Frame::reply_to_poll_for_master(3, 7).to_vec().unwrap());
    assert_eq!(node.state(), MasterState::Idle);
}

#[test]
fn a_test_request_is_answered_with_the_same_data() {
    let mut node = MasterNode::new(MasterConfig::new(7, BAUD), 0).unwrap();
    node.handle_octets(0, &Frame::test_request(7, 3, b"echo me").to_vec().unwrap());
    let t = node.poll_transmit(S).unwrap();
    assert_eq!(t.octets, Frame::test_response(3, 7, b"echo me").to_vec().unwrap());
}

#[test]
fn silence_of_tno_token_then_this_stations_slot_generates_the_token() {
    // LostToken at Tno_token, then GenerateToken at Tno_token + Tslot × TS.
    let mut node = MasterNode::new(MasterConfig::new(4, BAUD), 0).unwrap();
    assert_eq!(node.poll_timeout(), Some(T_NO_TOKEN));
    node.handle_timeout(T_NO_TOKEN);
    assert_eq!(node.state(), MasterState::NoToken);
    assert_eq!(node.poll_timeout(), Some(T_NO_TOKEN + 4 * T_SLOT));
    node.handle_timeout(T_NO_TOKEN + 4 * T_SLOT);
    assert_eq!(node.state(), MasterState::PollForMaster);
    let t = node.poll_transmit(T_NO_TOKEN + 4 * T_SLOT).unwrap();
    assert_eq!(t.octets, Frame::poll_for_master(5, 4).to_vec().unwrap());
    assert_eq!(node.counters().tokens_generated, 1);
}

#[test]
fn a_frame_in_no_token_means_a_lower_station_got_there_first() {
    let mut node = MasterNode::new(MasterConfig::new(4, BAUD), 0).unwrap();
    node.handle_timeout(T_NO_TOKEN);
    // SawFrame: a Poll For Master from station 2 for station 3.
    node.handle_octets(T_NO_TOKEN + 2 * T_SLOT, &Frame::poll_for_master(3, 2).to_vec().unwrap());
    assert_eq!(node.state(), MasterState::Idle);
    assert_eq!(node.counters().tokens_generated, 0);
}

#[test]
fn send_refuses_beyond_its_bound_and_bad_lengths() {
    let mut node = MasterNode::new(MasterConfig { max_queue: 2, ..MasterConfig::new(1, BAUD) }, 0).unwrap();
    assert_eq!(node.send(2, vec![], false), Err(SendError::BadLength));
    assert_eq!(node.send(2, vec![1; 1498], false), Err(SendError::BadLength));
    node.send(2, vec![1, 0], false).unwrap();
    node.send(2, vec![1; 1497], false).unwrap();
    assert_eq!(node.send(2, vec![1, 0], false), Err(SendError::QueueFull));
    assert_eq!(node.counters().send_refused, 3);
    assert_eq!(node.queued(), 2);
}

// ---------------------------------------------------------------- rings

#[test]
fn a_ring_forms_from_silence_in_address_order() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(3 * S);
    // Station 1 has the lowest slot: its Poll For Master is the first frame.
    let first = &ring.line[0];
    assert_eq!(first.at, T_NO_TOKEN + T_SLOT);
    assert_eq!(first.kind(), (FrameType::POLL_FOR_MASTER, 1, 2));
    assert_eq!(ring.next_stations(), [(1, 5), (5, 9), (9, 1)]);
    assert_token_cycles(&ring, S, &[1, 5, 9]);
    for s in &ring.stations {
        assert_eq!(s.node.counters().lost_token, 1, "only the start-up silence");
        assert!(s.node.counters().tokens_received > 50);
    }
    assert_eq!(ring.stations[0].node.counters().tokens_generated, 1);
    assert_eq!(ring.stations[1].node.counters().tokens_generated, 0);
}

#[test]
fn maintenance_polls_visit_the_gaps_every_npoll_tokens() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(10 * S);
    // Station 1 polls 2, 3, 4 in turn; station 5 polls 6, 7, 8; station 9
    // polls 10..=15 and 0.
    let polled: std::collections::BTreeSet<(u8, u8)> =
        ring.frames_since(S).into_iter().filter(|f| f.0 == FrameType::POLL_FOR_MASTER).map(|f| (f.1, f.2)).collect();
    for (from, to) in [(1, 2), (1, 3), (1, 4), (5, 6), (5, 8), (9, 10), (9, 15), (9, 0)] {
        assert!(polled.contains(&(from, to)), "{from} never polled {to}: {polled:?}");
    }
    assert!(polled.iter().all(|&(from, to)| match from {
        1 => (2..5).contains(&to),
        5 => (6..9).contains(&to),
        _ => to > 9 || to == 0,
    }));
}

#[test]
fn data_expecting_reply_is_answered_while_the_requester_holds_the_token() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    let request = vec![0x01, 0x04, 0x00, 0x05, 0x07, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
    ring.at(1).node.send(5, request.clone(), true).unwrap();
    let t0 = ring.now;
    ring.run_until(3 * S);
    let frames = ring.frames_since(t0);
    let i = frames.iter().position(|f| f.0 == FrameType::BACNET_DATA_EXPECTING_REPLY).unwrap();
    assert_eq!(frames[i], (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 5));
    assert_eq!(frames[i + 1], (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 5, 1), "the reply comes at once");
    assert_eq!(frames[i + 2], (FrameType::TOKEN, 1, 5), "then the token moves on");
    let got: Vec<&MasterEvent> = ring.at(1).events.iter().map(|e| &e.1).collect();
    assert_eq!(got.len(), 1);
    let MasterEvent::Received { source: 5, destination: 1, expecting_reply: false, npdu } = got[0] else {
        panic!("{got:?}")
    };
    assert_eq!(npdu[..3], [0x01, 0x00, 0x30]);
    assert_eq!(npdu[3..], request[2..]);
    // Station 5 saw the request, expecting a reply.
    assert!(matches!(ring.at(5).events[..], [(_, MasterEvent::Received { source: 1, expecting_reply: true, .. })]));
}

#[test]
fn a_slow_host_gets_reply_postponed_and_its_answer_goes_at_its_next_token() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    ring.at(5).host = Host::ReplyAfter(300 * MS);
    ring.at(1).node.send(5, vec![0x01, 0x04, 0x00, 0x05, 0x09, 0x0C], true).unwrap();
    let t0 = ring.now;
    ring.run_until(3 * S);
    let line: Vec<&OnLine> = ring.line.iter().filter(|f| f.at >= t0).collect();
    let der = line.iter().position(|f| f.kind().0 == FrameType::BACNET_DATA_EXPECTING_REPLY).unwrap();
    let postponed = &line[der + 1];
    assert_eq!(postponed.kind(), (FrameType::REPLY_POSTPONED, 5, 1));
    // Sent at the local Treply_delay (200 ms) after the request's last octet.
    let der_end = line[der].at + bit_times(10 * line[der].octets.len() as u64, BAUD);
    assert_eq!(postponed.at - der_end, 200 * MS);
    assert_eq!(line[der + 2].kind(), (FrameType::TOKEN, 1, 5), "ReceivedPostpone: the requester passes the token");
    // The answer: a BACnet Data Not Expecting Reply from 5 right after a token to 5.
    let reply = line.iter().position(|f| f.kind() == (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 5, 1)).unwrap();
    assert!(line[reply].at >= line[der].at + 300 * MS);
    assert_eq!(line[reply - 1].kind().0, FrameType::TOKEN);
    assert_eq!(line[reply - 1].kind().2, 5);
    assert_eq!(ring.at(5).node.counters().replies_postponed, 1);
    assert!(ring.at(1).events.iter().any(|e| matches!(e.1, MasterEvent::Received { source: 5, .. })));
}

#[test]
fn a_request_nobody_answers_times_out_after_treply_timeout() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    // Station 3 does not exist: no reply, no Reply Postponed.
    ring.at(1).node.send(3, vec![0x01, 0x04, 0x00, 0x05, 0x09, 0x0C], true).unwrap();
    let t0 = ring.now;
    ring.run_until(3 * S);
    let line: Vec<&OnLine> = ring.line.iter().filter(|f| f.at >= t0).collect();
    let der = line.iter().position(|f| f.kind() == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 3)).unwrap();
    let der_end = line[der].at + bit_times(10 * line[der].octets.len() as u64, BAUD);
    assert_eq!(line[der + 1].kind(), (FrameType::TOKEN, 1, 5));
    assert_eq!(line[der + 1].at - der_end, 255 * MS, "Treply_timeout, then DONE_WITH_TOKEN");
    assert_eq!(ring.at(1).node.counters().reply_timeouts, 1);
    assert!(ring.at(1).events.iter().any(|e| e.1 == MasterEvent::NoReply { destination: 3 }));
}

#[test]
fn a_station_that_leaves_is_dropped_and_the_token_goes_to_the_next() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    ring.at(5).alive = false;
    let t0 = ring.now;
    ring.run_until(4 * S);
    // Station 1 retries once (RetrySendToken), then polls past 5
    // (FindNewSuccessor) and finds 9.
    let one = ring.at(1).node.counters();
    assert_eq!((one.token_retries, one.successor_lost), (1, 1));
    let after: Vec<(FrameType, u8, u8)> = ring.frames_since(t0);
    let lost = after.iter().position(|f| *f == (FrameType::TOKEN, 1, 5)).unwrap();
    assert_eq!(after[lost + 1], (FrameType::TOKEN, 1, 5), "one retry");
    assert_eq!(after[lost + 2], (FrameType::POLL_FOR_MASTER, 1, 6), "PS = NS + 1");
    assert_eq!(ring.next_stations(), [(1, 9), (9, 1)]);
    assert_token_cycles(&ring, 3 * S, &[1, 9]);
}

#[test]
fn a_station_that_joins_is_found_by_a_maintenance_poll() {
    let mut ring = Ring::new(&[1, 9], 15);
    ring.run_until(2 * S);
    assert_eq!(ring.next_stations(), [(1, 9), (9, 1)]);
    ring.add(config(5, 15));
    ring.run_until(6 * S);
    assert_eq!(ring.next_stations(), [(1, 5), (9, 1), (5, 9)]);
    assert_token_cycles(&ring, 5 * S, &[1, 5, 9]);
    assert_eq!(ring.at(5).node.counters().lost_token, 0, "it never saw silence");
}

#[test]
fn a_token_lost_with_its_holder_is_regenerated_by_the_lowest_remaining_station() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    // Station 1 dies holding the token, while sending a frame with it (so
    // its predecessor saw it start and is not watching any more): the line
    // falls silent.
    ring.at(1).node.send(BROADCAST, vec![0x01, 0x00, 0x10, 0x08], false).unwrap();
    ring.run_until_sent_by(1, FrameType::BACNET_DATA_NOT_EXPECTING_REPLY);
    ring.at(1).alive = false;
    let lost = ring.now;
    let last = ring.line.last().unwrap();
    let silent_from = last.at + bit_times(10 * last.octets.len() as u64, BAUD);
    ring.run_until(lost + 2 * S);
    // After Tno_token, station 5's slot comes first: it generates the token
    // (GenerateToken) with a Poll For Master to 6, and polls on to 9.
    let line: Vec<&OnLine> = ring.line.iter().filter(|f| f.at >= lost).collect();
    assert_eq!(line[0].kind(), (FrameType::POLL_FOR_MASTER, 5, 6));
    assert_eq!(line[0].at - silent_from, T_NO_TOKEN + 5 * T_SLOT, "Tno_token + Tslot × 5 after the last octet");
    assert_eq!(ring.at(5).node.counters().tokens_generated, 1);
    assert_eq!(ring.at(9).node.counters().tokens_generated, 0);
    assert_eq!(ring.at(9).node.counters().lost_token, 2, "start-up and now");
    assert_eq!(ring.next_stations(), [(5, 9), (9, 5)]);
    assert_token_cycles(&ring, lost + S, &[5, 9]);
}

#[test]
fn a_cut_line_loses_every_token_and_the_ring_forms_again() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.run_until(2 * S);
    // Every station loses the token: the holder polls everyone and declares
    // itself sole master, the others regenerate the token for themselves.
    ring.cut = true;
    ring.run_until(4 * S);
    assert!(ring.stations.iter().filter(|s| s.node.sole_master()).count() >= 2);
    ring.cut = false;
    let restored = ring.now;
    ring.run_until(12 * S);
    assert_eq!(ring.next_stations(), [(1, 5), (5, 9), (9, 1)]);
    assert!(ring.stations.iter().all(|s| !s.node.sole_master()));
    assert_token_cycles(&ring, 11 * S, &[1, 5, 9]);
    assert!(ring.tokens_since(restored).len() > 100);
}

#[test]
fn a_silent_station_is_polled_but_never_given_the_token() {
    let mut ring = Ring::new(&[1, 3, 5], 7);
    ring.stations[1].alive = false; // station 3 never says anything
    ring.run_until(4 * S);
    assert_eq!(ring.next_stations(), [(1, 5), (5, 1)]);
    assert!(ring.tokens_since(0).iter().all(|&(_, to)| to != 3));
    assert!(ring.frames_since(0).contains(&(FrameType::POLL_FOR_MASTER, 1, 3)));
}

#[test]
fn a_sole_master_sends_its_queue_and_keeps_polling() {
    let mut ring = Ring::new(&[3], 7);
    ring.run_until(2 * S);
    assert!(ring.at(3).node.sole_master());
    ring.at(3).node.send(BROADCAST, vec![0x01, 0x00, 0x10, 0x08], false).unwrap();
    let t0 = ring.now;
    ring.run_until(3 * S);
    let frames = ring.frames_since(t0);
    assert!(frames.contains(&(FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 3, BROADCAST)));
    assert!(frames.iter().filter(|f| f.0 == FrameType::POLL_FOR_MASTER).count() > 10);
    assert!(frames.iter().all(|f| f.0 != FrameType::TOKEN), "no one to pass it to");
    // A master that appears later is found, and the token passes again.
    ring.add(config(6, 7));
    ring.run_until(6 * S);
    assert!(!ring.at(3).node.sole_master());
    assert_token_cycles(&ring, 5 * S, &[3, 6]);
}

#[test]
fn max_info_frames_bounds_the_frames_sent_per_token() {
    let mut ring = Ring::new(&[], 7);
    ring.add(MasterConfig { max_info_frames: 2, ..config(1, 7) });
    ring.add(config(4, 7));
    ring.run_until(2 * S);
    for i in 0..5u8 {
        ring.at(1).node.send(BROADCAST, vec![0x01, 0x00, 0x10, 0x08, i], false).unwrap();
    }
    let t0 = ring.now;
    ring.run_until(3 * S);
    let frames = ring.frames_since(t0);
    let mut run = 0;
    let mut sent = 0;
    for f in &frames {
        if f.1 == 1 && f.0 == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY {
            run += 1;
            sent += 1;
            assert!(run <= 2, "more than Max_Info_Frames in one token: {frames:?}");
        } else if f.0 == FrameType::TOKEN && f.1 == 1 {
            run = 0;
        }
    }
    assert_eq!(sent, 5);
}

#[test]
fn one_hundred_twenty_seven_masters_form_one_ring() {
    let addresses: Vec<u8> = (0..127).collect();
    let mut ring = Ring::new(&addresses, 127);
    ring.baud = 115_200;
    for s in &mut ring.stations {
        let c = MasterConfig { max_master: 127, ..MasterConfig::new(s.node.config().this_station, 115_200) };
        s.node = MasterNode::new(c, 0).unwrap();
    }
    ring.run_until(3 * S);
    let expected: Vec<(u8, u8)> = addresses.iter().map(|&a| (a, (a + 1) % 127)).collect();
    assert_eq!(ring.next_stations(), expected);
    assert_token_cycles(&ring, 2 * S, &addresses);
    assert!(ring.stations.iter().all(|s| s.node.counters().tokens_received >= 2));
}

#[test]
fn noise_on_the_line_costs_frames_but_not_the_ring() {
    let mut ring = Ring::new(&[1, 5, 9], 15);
    ring.noise_one_in = 300;
    ring.run_until(2 * S);
    let mut asked = 0;
    for round in 0..40u8 {
        if ring.at(1).node.send(9, vec![0x01, 0x04, 0x00, 0x05, round, 0x0C], true).is_ok() {
            asked += 1;
        }
        let until = ring.now + 250 * MS;
        ring.run_until(until);
    }
    ring.noise_one_in = 0;
    let quiet = ring.now;
    ring.run_until(quiet + 3 * S);
    assert_eq!(ring.next_stations(), [(1, 5), (5, 9), (9, 1)]);
    assert_token_cycles(&ring, quiet + 2 * S, &[1, 5, 9]);
    let errors: u64 = ring
        .stations
        .iter()
        .map(|s| {
            let c = s.node.receiver().counters();
            c.bad_header_crc + c.bad_data_crc + c.garbage
        })
        .sum();
    assert!(errors > 0, "the noise corrupted nothing");
    let answered = ring.at(1).events.iter().filter(|e| matches!(e.1, MasterEvent::Received { source: 9, .. })).count();
    let unanswered = ring.at(1).events.iter().filter(|e| matches!(e.1, MasterEvent::NoReply { .. })).count();
    assert!(answered > asked / 2, "{answered} of {asked} answered");
    assert!(answered + unanswered <= asked);
}

#[test]
fn two_stations_with_one_address_are_seen_as_duplicates() {
    let mut ring = Ring::new(&[1, 5, 5, 9], 15);
    ring.run_until(5 * S);
    let dup: u64 = ring.stations.iter().map(|s| s.node.counters().duplicate_station).sum();
    assert!(dup > 0, "no station noticed its address in use");
}

// ---------------------------------------------------------------- slave nodes

fn slave(ts: u8) -> MasterConfig {
    MasterConfig { slave: true, ..MasterConfig::new(ts, BAUD) }
}

#[test]
fn a_slaves_address_may_go_up_to_254_but_not_to_broadcast() {
    assert!(MasterNode::new(slave(254), 0).is_ok());
    assert!(MasterNode::new(slave(0), 0).is_ok());
    assert_eq!(MasterNode::new(slave(255), 0).err(), Some(ConfigError::ThisStation));
    assert_eq!(MasterNode::new(MasterConfig::new(200, BAUD), 0).err(), Some(ConfigError::ThisStation));
}

#[test]
fn a_slave_alone_on_the_line_stays_silent_and_cannot_initiate() {
    let mut ring = Ring::new(&[], 127);
    let s = ring.add(slave(3));
    assert_eq!(ring.stations[s].node.send(BROADCAST, vec![0x01, 0x00, 0x10, 0x08], false), Err(SendError::Slave));
    ring.run_until(10 * S);
    assert!(ring.line.is_empty(), "a slave never generates a token: {:?}", ring.frames_since(0));
    assert_eq!(ring.stations[s].node.state(), MasterState::Idle);
    assert_eq!(ring.stations[s].node.counters().send_refused, 1);
}

#[test]
fn a_slave_answers_a_request_at_once_and_takes_no_part_in_the_ring() {
    // Masters 1 and 5 poll every address up to 7, the slave's 3 included.
    let mut ring = Ring::new(&[1, 5], 7);
    ring.add(slave(3));
    ring.run_until(3 * S);
    assert_eq!(ring.next_stations()[..2], [(1, 5), (5, 1)]);
    let polled = ring.frames_since(0).into_iter().filter(|f| *f == (FrameType::POLL_FOR_MASTER, 1, 3)).count();
    assert!(polled >= 1, "the masters poll the slave's address");

    let request = vec![0x01, 0x04, 0x00, 0x05, 0x07, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
    ring.at(1).node.send(3, request.clone(), true).unwrap();
    let t0 = ring.now;
    ring.run_until(4 * S);
    let frames = ring.frames_since(t0);
    let i = frames.iter().position(|f| *f == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 3)).unwrap();
    assert_eq!(frames[i + 1], (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 3, 1), "the slave replies at once");
    assert!(ring.at(1).events.iter().any(|e| matches!(&e.1, MasterEvent::Received { source: 3, npdu, .. }
        if npdu[3..] == request[2..])));
    // The only frames the slave ever sent: that reply.
    let from_slave: Vec<_> = ring.frames_since(0).into_iter().filter(|f| f.1 == 3).collect();
    assert_eq!(from_slave, [(FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 3, 1)]);
    let c = *ring.at(3).node.counters();
    assert_eq!((c.tokens_received, c.tokens_sent, c.polls_sent, c.tokens_generated), (0, 0, 0, 0));
    assert_token_cycles(&ring, t0, &[1, 5]);
}

#[test]
fn a_slave_answers_test_request_with_the_same_data_and_ignores_the_token() {
    let mut node = MasterNode::new(slave(200), 0).unwrap();
    node.handle_octets(0, &Frame::test_request(200, 3, b"echo me").to_vec().unwrap());
    let t = node.poll_transmit(S).unwrap();
    assert_eq!(t.octets, Frame::test_response(3, 200, b"echo me").to_vec().unwrap());
    node.handle_octets(S, &Frame::token(200, 3).to_vec().unwrap());
    node.handle_octets(S, &Frame::poll_for_master(200, 3).to_vec().unwrap());
    assert_eq!(node.poll_transmit(2 * S), None, "no Reply To Poll For Master, no use of the token");
    assert_eq!(node.state(), MasterState::Idle);
    assert_eq!(node.poll_timeout(), None, "no Tno_token for a slave");
}

#[test]
fn a_slow_slave_sends_nothing_and_the_requester_times_out() {
    let mut ring = Ring::new(&[1, 5], 7);
    let s = ring.add(slave(3));
    ring.stations[s].host = Host::ReplyAfter(300 * MS);
    ring.run_until(2 * S);
    ring.at(1).node.send(3, vec![0x01, 0x04, 0x00, 0x05, 0x09, 0x0C], true).unwrap();
    let t0 = ring.now;
    ring.run_until(3 * S);
    let line: Vec<&OnLine> = ring.line.iter().filter(|f| f.at >= t0).collect();
    let der = line.iter().position(|f| f.kind() == (FrameType::BACNET_DATA_EXPECTING_REPLY, 1, 3)).unwrap();
    let der_end = line[der].at + bit_times(10 * line[der].octets.len() as u64, BAUD);
    // CannotReply: no Reply Postponed (a slave could never send the answer later).
    assert_eq!(line[der + 1].kind(), (FrameType::TOKEN, 1, 5));
    assert_eq!(line[der + 1].at - der_end, 255 * MS, "the requester waits out Treply_timeout");
    assert!(line.iter().all(|f| f.kind().1 != 3), "the slave sent nothing");
    let c = *ring.at(3).node.counters();
    assert_eq!((c.replies_abandoned, c.replies_postponed, c.send_refused), (1, 0, 1));
    assert!(ring.at(1).events.iter().any(|e| e.1 == MasterEvent::NoReply { destination: 3 }));
}
