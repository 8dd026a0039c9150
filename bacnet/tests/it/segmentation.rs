//! Segmentation and admission between our client and server state machines
//! on a simulated clock and a simulated link that can lose, duplicate and
//! delay APDUs — each test one of Clause 5.4's sequence diagrams.

use bacnet::apdu::{Apdu, MaxApdu, MaxSegments, SegmentInfo};
use bacnet::enums::{AbortReason, ConfirmedServiceChoice as S};
use bacnet::tsm::{
    ClientTsm, Indication, Outcome, PeerLimits, Response, ServerTsm, ServerTsmConfig, TransactionId, TsmConfig,
};
use std::time::Duration;

const CLIENT: u8 = 1;
const SERVER: u8 = 2;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn body(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// What happened to one APDU on the link, decided by the test.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    Duplicate,
}

/// Decides an APDU's fate from (sender, index among that sender's APDUs, APDU).
type FateFn = Box<dyn FnMut(u8, usize, &Apdu<'_>) -> Fate>;

/// A client and a server joined by a link whose losses the test scripts.
struct Link {
    client: ClientTsm<u8>,
    server: ServerTsm<u8>,
    now: Duration,
    /// (direction, APDU) of every APDU offered to the link, in order.
    log: Vec<(u8, Vec<u8>)>,
    fate: FateFn,
    sent_by: [usize; 3],
    indications: Vec<Indication<u8>>,
    events: Vec<(TransactionId, Outcome)>,
}

impl Link {
    fn new(client: TsmConfig, server: ServerTsmConfig) -> Link {
        Link {
            client: ClientTsm::new(client),
            server: ServerTsm::new(server),
            now: Duration::ZERO,
            log: Vec::new(),
            fate: Box::new(|_, _, _| Fate::Deliver),
            sent_by: [0; 3],
            indications: Vec::new(),
            events: Vec::new(),
        }
    }

    fn deliver(&mut self, from: u8, apdu: Vec<u8>) {
        self.log.push((from, apdu.clone()));
        let decoded = Apdu::decode(&apdu).expect("the state machines send only valid APDUs");
        let index = self.sent_by[from as usize];
        self.sent_by[from as usize] += 1;
        let copies = match (self.fate)(from, index, &decoded) {
            Fate::Deliver => 1,
            Fate::Drop => 0,
            Fate::Duplicate => 2,
        };
        for _ in 0..copies {
            if from == CLIENT {
                if let Some(ind) = self.server.handle_apdu(self.now, &CLIENT, &decoded) {
                    self.indications.push(ind);
                }
            } else {
                self.client.handle_apdu(self.now, &SERVER, &decoded);
            }
        }
    }

    /// Move APDUs both ways until the link is quiet.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(t) = self.client.poll_transmit() {
                moved = true;
                self.deliver(CLIENT, t.apdu);
            }
            while let Some((_, apdu)) = self.server.poll_transmit() {
                moved = true;
                self.deliver(SERVER, apdu);
            }
            while let Some(e) = self.client.poll_event() {
                self.events.push((e.id, e.outcome));
            }
            if !moved {
                return;
            }
        }
    }

    /// Advance the clock to the next timer of either side and fire it.
    fn advance(&mut self) -> bool {
        let next = [self.client.poll_timeout(), self.server.poll_timeout()].into_iter().flatten().min();
        let Some(at) = next else { return false };
        self.now = self.now.max(at);
        self.client.handle_timeout(self.now);
        self.server.handle_timeout(self.now);
        self.pump();
        true
    }

    /// Pump, answering every indication with `answer`, and fire timers until
    /// nothing is left to do (or a minute of simulated time has passed).
    fn run(&mut self, mut answer: impl FnMut(&Indication<u8>) -> Response) {
        let deadline = self.now + Duration::from_secs(60);
        loop {
            self.pump();
            let pending: Vec<_> = std::mem::take(&mut self.indications);
            for ind in &pending {
                self.server.respond(self.now, &ind.key, answer(ind));
            }
            self.pump();
            if !self.indications.is_empty() {
                continue;
            }
            if self.now > deadline || !self.advance() {
                return;
            }
        }
    }

    fn outcome(&self, id: TransactionId) -> &Outcome {
        &self.events.iter().find(|(i, _)| *i == id).expect("the transaction ended").1
    }

    /// Segments of a ComplexACK seen on the link, as (sequence number, more follows).
    fn ack_segments(&self) -> Vec<SegmentInfo> {
        self.log
            .iter()
            .filter_map(|(_, a)| match Apdu::decode(a).unwrap() {
                Apdu::ComplexAck(c) => c.segment,
                _ => None,
            })
            .collect()
    }

    fn segment_acks(&self, from: u8) -> Vec<(bool, u8, u8)> {
        self.log
            .iter()
            .filter(|(f, _)| *f == from)
            .filter_map(|(_, a)| match Apdu::decode(a).unwrap() {
                Apdu::SegmentAck { negative, sequence_number, actual_window_size, .. } => {
                    Some((negative, sequence_number, actual_window_size))
                }
                _ => None,
            })
            .collect()
    }
}

fn client_config(max_apdu: MaxApdu, window: u8) -> TsmConfig {
    TsmConfig {
        apdu_timeout: ms(3000),
        segment_timeout: ms(500),
        retries: 3,
        max_apdu_accepted: max_apdu,
        window_size: window,
        ..TsmConfig::default()
    }
}

fn server_config() -> ServerTsmConfig {
    ServerTsmConfig { segment_timeout: ms(500), ..ServerTsmConfig::default() }
}

/// The client asks; the server answers with `answer_len` octets.
fn read_large(link: &mut Link, answer_len: usize) -> TransactionId {
    let id = link.client.start(link.now, SERVER, S::READ_PROPERTY_MULTIPLE, vec![0x0C, 0, 0, 0, 1]).unwrap();
    link.run(|_| Response::ComplexAck(body(answer_len)));
    id
}

#[test]
fn a_long_answer_comes_back_in_segments_with_the_window_the_client_allows() {
    // Client: Max-APDU 480, window 4. Server proposes 16. 10,000 octets of
    // answer → 21 segments of 475 octets.
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 4), server_config());
    let id = read_large(&mut link, 10_000);
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(10_000)));
    let segments = link.ack_segments();
    assert_eq!(segments.len(), 22, "each segment sent once: {segments:?}");
    assert_eq!(segments.iter().filter(|s| !s.more_follows).count(), 1);
    assert!(segments.iter().all(|s| s.proposed_window_size == 16));
    // The client acknowledges segment 0, then the end of every window of 4, then the last.
    let acks = link.segment_acks(CLIENT);
    let seqs: Vec<u8> = acks.iter().map(|a| a.1).collect();
    assert_eq!(seqs, vec![0, 4, 8, 12, 16, 20, 21]);
    assert!(acks.iter().all(|a| !a.0 && a.2 == 4), "positive acks with the actual window 4: {acks:?}");
    assert_eq!(link.server.transactions(), 0, "the final Segment-ACK ends the server's transaction");
    assert!(link.log.iter().all(|(_, a)| a.len() <= 480), "no APDU above the client's Max-APDU");
}

#[test]
fn a_lost_segment_is_negatively_acknowledged_and_the_window_resent() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 4), server_config());
    // Lose the server's 3rd APDU: segment 2 of the first full window.
    link.fate = Box::new(|from, i, _| if from == SERVER && i == 2 { Fate::Drop } else { Fate::Deliver });
    let id = read_large(&mut link, 5_000);
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(5_000)));
    let acks = link.segment_acks(CLIENT);
    assert!(acks.contains(&(true, 1, 4)), "a NAK names segment 1, the last held in order: {acks:?}");
    assert_eq!(link.now, Duration::ZERO, "recovered by the NAK, without waiting for a timer");
}

#[test]
fn duplicated_segments_do_not_corrupt_the_answer() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 3), server_config());
    link.fate = Box::new(|from, i, _| if from == SERVER && i % 2 == 1 { Fate::Duplicate } else { Fate::Deliver });
    let id = read_large(&mut link, 4_000);
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(4_000)));
}

#[test]
fn a_window_of_one_acknowledges_every_segment() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 1), server_config());
    let id = read_large(&mut link, 2_000);
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(2_000)));
    let seqs: Vec<u8> = link.segment_acks(CLIENT).iter().map(|a| a.1).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3, 4], "5 segments, 5 acks");
}

#[test]
fn a_lost_segment_ack_is_recovered_by_the_senders_timer() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 4), server_config());
    // Lose the client's second APDU: the Segment-ACK closing the first window.
    link.fate = Box::new(|from, i, _| if from == CLIENT && i == 2 { Fate::Drop } else { Fate::Deliver });
    let id = read_large(&mut link, 5_000);
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(5_000)));
    assert!(link.now >= ms(500), "the server waited T_seg before resending the window");
}

#[test]
fn an_answer_with_more_segments_than_the_client_accepts_is_aborted_apdu_too_long() {
    let mut config = client_config(MaxApdu::UP_TO_480, 4);
    config.max_segments_accepted = MaxSegments::at_least(4);
    let mut link = Link::new(config, server_config());
    let id = read_large(&mut link, 5_000); // 11 segments > 4
    assert_eq!(link.outcome(id), &Outcome::Abort { reason: AbortReason::APDU_TOO_LONG, from_server: true });
    assert_eq!(link.server.transactions(), 0);
}

#[test]
fn a_client_that_does_not_accept_segments_gets_segmentation_not_supported() {
    let mut config = client_config(MaxApdu::UP_TO_480, 4);
    config.segmented_response_accepted = false;
    let mut link = Link::new(config, server_config());
    let id = read_large(&mut link, 1_000);
    assert_eq!(
        link.outcome(id),
        &Outcome::Abort { reason: AbortReason::SEGMENTATION_NOT_SUPPORTED, from_server: true }
    );
}

#[test]
fn more_than_256_segments_wrap_the_sequence_number() {
    let mut config = client_config(MaxApdu::UP_TO_50, 127);
    config.max_segments_accepted = MaxSegments::MORE_THAN_64;
    let mut link = Link::new(config, ServerTsmConfig { window_size: 127, ..server_config() });
    let id = read_large(&mut link, 45 * 300); // 300 segments of 45 octets
    assert_eq!(link.outcome(id), &Outcome::ComplexAck(body(45 * 300)));
    assert_eq!(link.ack_segments().len(), 300);
}

#[test]
fn a_long_request_goes_in_segments_and_is_reassembled_by_the_server() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_1476, 8), server_config());
    let peer = PeerLimits { max_apdu: 480, segmented_receive: true, max_segments: Some(64) };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(6_000), peer).unwrap();
    let mut received = Vec::new();
    link.run(|ind| {
        received.push(ind.body.clone());
        Response::SimpleAck
    });
    assert_eq!(received, vec![body(6_000)], "the application sees the whole request once");
    assert_eq!(link.outcome(id), &Outcome::SimpleAck);
    assert!(link.log.iter().filter(|(f, _)| *f == CLIENT).all(|(_, a)| a.len() <= 480));
    let acks = link.segment_acks(SERVER);
    assert_eq!(acks.first(), Some(&(false, 0, 8)), "the server answers segment 0 with window min(8, 16)");
    assert_eq!(link.server.counters().segmented_requests, 1);
}

#[test]
fn a_request_segment_lost_then_the_rest_recovered() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_1476, 4), server_config());
    link.fate = Box::new(|from, i, _| if from == CLIENT && i == 3 { Fate::Drop } else { Fate::Deliver });
    let peer = PeerLimits { max_apdu: 206, segmented_receive: true, max_segments: None };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(2_000), peer).unwrap();
    let mut received = Vec::new();
    link.run(|ind| {
        received.push(ind.body.clone());
        Response::SimpleAck
    });
    assert_eq!(received, vec![body(2_000)]);
    assert_eq!(link.outcome(id), &Outcome::SimpleAck);
    assert!(link.segment_acks(SERVER).iter().any(|a| a.0), "the server sent a NAK");
}

#[test]
fn a_request_longer_than_the_server_accepts_is_aborted_buffer_overflow() {
    let server = ServerTsmConfig { max_request_segments: 4, ..server_config() };
    let mut link = Link::new(client_config(MaxApdu::UP_TO_1476, 8), server);
    let peer = PeerLimits { max_apdu: 480, segmented_receive: true, max_segments: None };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(4_000), peer).unwrap();
    link.run(|_| panic!("no indication for a refused request"));
    assert_eq!(link.outcome(id), &Outcome::Abort { reason: AbortReason::BUFFER_OVERFLOW, from_server: true });
    assert_eq!(link.server.transactions(), 0);
}

#[test]
fn a_request_the_peer_cannot_receive_in_segments_is_refused_before_sending() {
    let mut client = ClientTsm::<u8>::new(TsmConfig::default());
    let peer = PeerLimits { max_apdu: 480, segmented_receive: false, max_segments: None };
    let err = client.start_with(ms(0), SERVER, S::WRITE_PROPERTY_MULTIPLE, body(1_000), peer).unwrap_err();
    assert_eq!(err, bacnet::tsm::StartError::SegmentationNotSupported);
    let peer = PeerLimits { max_apdu: 480, segmented_receive: true, max_segments: Some(2) };
    let err = client.start_with(ms(0), SERVER, S::WRITE_PROPERTY_MULTIPLE, body(1_000), peer).unwrap_err();
    assert_eq!(err, bacnet::tsm::StartError::TooLong);
    assert!(client.poll_transmit().is_none());
}

#[test]
fn a_request_that_fits_the_peer_but_not_our_own_max_apdu_is_checked_against_the_smaller() {
    // We send APDUs of at most the smaller of the peer's Max-APDU and our own
    // (480 here), so 776 octets of request go in segments even though the
    // peer accepts 1476. Found by the `segmentation` fuzz target: start
    // checked against the peer's 1476 alone, accepted, and the client then
    // sent segments to a peer that does not receive them.
    //
    // client (own Max-APDU 480)            peer (1476, no segmented receive)
    //   | start_with(776 octets) → Err(SegmentationNotSupported); nothing sent
    //
    // client (own Max-APDU 480)            peer (1476, Max-Segments 2)
    //   | start_with(1000 octets) → Err(TooLong) (3 segments of 474); nothing sent
    //
    // client (own Max-APDU 480)            server (1476, segments)
    //   | segment 0 of 2 (≤ 480 octets) -----------> |
    //   | <----------------------- Segment-ACK 0      |
    //   | segment 1, last --------------------------> |
    //   | <----------------------- Segment-ACK 1      |  → indication, 776 octets
    //   | <----------------------------- SimpleACK    |
    let mut client = ClientTsm::<u8>::new(client_config(MaxApdu::UP_TO_480, 4));
    let peer = PeerLimits { max_apdu: 1476, segmented_receive: false, max_segments: None };
    let err = client.start_with(ms(0), SERVER, S::WRITE_PROPERTY_MULTIPLE, body(776), peer).unwrap_err();
    assert_eq!(err, bacnet::tsm::StartError::SegmentationNotSupported);
    let peer = PeerLimits { max_apdu: 1476, segmented_receive: true, max_segments: Some(2) };
    let err = client.start_with(ms(0), SERVER, S::WRITE_PROPERTY_MULTIPLE, body(1_000), peer).unwrap_err();
    assert_eq!(err, bacnet::tsm::StartError::TooLong);
    assert!(client.poll_transmit().is_none());
    // 476 octets + the 4-octet header fit 480 exactly: one APDU, no segmenting.
    let peer = PeerLimits { max_apdu: 1476, segmented_receive: false, max_segments: None };
    client.start_with(ms(0), SERVER, S::WRITE_PROPERTY_MULTIPLE, body(476), peer).unwrap();
    assert_eq!(client.poll_transmit().unwrap().apdu.len(), 480);

    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 4), server_config());
    let peer = PeerLimits { max_apdu: 1476, segmented_receive: true, max_segments: None };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(776), peer).unwrap();
    let mut received = Vec::new();
    link.run(|ind| {
        received.push(ind.body.clone());
        Response::SimpleAck
    });
    assert_eq!(received, vec![body(776)]);
    assert_eq!(link.outcome(id), &Outcome::SimpleAck);
    assert!(link.log.iter().filter(|(f, _)| *f == CLIENT).all(|(_, a)| a.len() <= 480));
    assert_eq!(link.server.counters().segmented_requests, 1);
}

#[test]
fn a_proposed_window_out_of_range_is_aborted() {
    let mut server = ServerTsm::<u8>::new(server_config());
    for window in [0u8, 128] {
        let seg = SegmentInfo { sequence_number: 0, proposed_window_size: window, more_follows: true };
        let req = bacnet::apdu::ConfirmedRequest {
            segment: Some(seg),
            segmented_response_accepted: true,
            max_segments: MaxSegments::UNSPECIFIED,
            max_apdu: MaxApdu::UP_TO_480,
            invoke_id: 9,
            service: S::WRITE_PROPERTY_MULTIPLE,
            body: &[1, 2, 3],
        };
        assert!(server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(req)).is_none());
        let (_, abort) = server.poll_transmit().unwrap();
        assert_eq!(
            Apdu::decode(&abort).unwrap(),
            Apdu::Abort { server: true, invoke_id: 9, reason: AbortReason::WINDOW_SIZE_OUT_OF_RANGE }
        );
    }
}

#[test]
fn a_client_that_vanishes_mid_request_is_forgotten_after_t_wait_for_seg() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_1476, 4), server_config());
    // Everything after the first segment is lost.
    link.fate = Box::new(|from, i, _| if from == CLIENT && i > 0 { Fate::Drop } else { Fate::Deliver });
    let peer = PeerLimits { max_apdu: 480, segmented_receive: true, max_segments: None };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(3_000), peer).unwrap();
    link.run(|_| panic!("the request is never whole"));
    assert_eq!(link.outcome(id), &Outcome::Timeout);
    assert_eq!(link.server.transactions(), 0);
    assert!(link.server.counters().timed_out >= 1);
}

#[test]
fn a_server_that_stops_sending_segments_times_the_client_out() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 4), server_config());
    link.fate = Box::new(|from, i, _| if from == SERVER && i > 0 { Fate::Drop } else { Fate::Deliver });
    let id = read_large(&mut link, 5_000);
    assert_eq!(link.outcome(id), &Outcome::Timeout);
    assert_eq!(link.server.transactions(), 0, "the server gave up after its retries");
}

#[test]
fn an_abort_from_the_client_ends_the_segmented_answer() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_480, 2), server_config());
    let id = link.client.start(link.now, SERVER, S::READ_PROPERTY_MULTIPLE, vec![1]).unwrap();
    link.pump();
    let ind = link.indications.pop().unwrap();
    link.client.cancel(link.now, id);
    link.server.respond(link.now, &ind.key, Response::ComplexAck(body(3_000)));
    // The client no longer knows the invoke ID: it drops the segment; the
    // server resends until its retries are spent, then forgets.
    link.run(|_| unreachable!());
    assert_eq!(link.server.transactions(), 0);
    let abort = bacnet::apdu::Apdu::Abort { server: false, invoke_id: ind.key.invoke_id, reason: AbortReason::OTHER };
    let mut server = ServerTsm::<u8>::new(server_config());
    let req = bacnet::apdu::ConfirmedRequest {
        segment: None,
        segmented_response_accepted: true,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu: MaxApdu::UP_TO_480,
        invoke_id: ind.key.invoke_id,
        service: S::READ_PROPERTY_MULTIPLE,
        body: &[1],
    };
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(req)).unwrap();
    server.handle_apdu(ms(1), &CLIENT, &abort);
    assert!(!server.respond(ms(2), &ind.key, Response::SimpleAck), "an aborted transaction is not answered");
    assert!(server.poll_transmit().is_none());
    assert_eq!(server.counters().aborted_by_client, 1);
}

fn request(invoke_id: u8) -> bacnet::apdu::ConfirmedRequest<'static> {
    bacnet::apdu::ConfirmedRequest {
        segment: None,
        segmented_response_accepted: true,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu: MaxApdu::UP_TO_1476,
        invoke_id,
        service: S::READ_PROPERTY,
        body: &[0x0C, 0, 0, 0, 1, 0x19, 0x55],
    }
}

#[test]
fn admission_refuses_the_seventeenth_request_from_one_peer_with_out_of_resources() {
    let mut server = ServerTsm::<u8>::new(ServerTsmConfig::default());
    let admitted: Vec<_> =
        (0..16).map(|i| server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(i))).unwrap()).collect();
    assert!(server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(16))).is_none());
    let (to, refusal) = server.poll_transmit().unwrap();
    assert_eq!(to, CLIENT);
    assert_eq!(
        Apdu::decode(&refusal).unwrap(),
        Apdu::Abort { server: true, invoke_id: 16, reason: AbortReason::OUT_OF_RESOURCES }
    );
    // Another peer is not held back by this one.
    assert!(server.handle_apdu(ms(0), &SERVER, &Apdu::ConfirmedRequest(request(16))).is_some());
    // Once one is answered, the peer is admitted again.
    assert!(server.respond(ms(1), &admitted[0].key, Response::SimpleAck));
    assert!(server.handle_apdu(ms(1), &CLIENT, &Apdu::ConfirmedRequest(request(16))).is_some());
    assert_eq!(server.counters().refused, 1);
}

#[test]
fn a_global_limit_bounds_the_transactions_of_all_peers() {
    let mut server = ServerTsm::<u16>::new(ServerTsmConfig { max_transactions: 100, ..ServerTsmConfig::default() });
    let mut admitted = 0;
    for peer in 0..50u16 {
        for invoke in 0..4 {
            admitted += server.handle_apdu(ms(0), &peer, &Apdu::ConfirmedRequest(request(invoke))).is_some() as usize;
        }
    }
    assert_eq!(admitted, 100);
    assert_eq!(server.counters().refused, 100);
    assert_eq!(server.transactions(), 100);
}

#[test]
fn a_retransmitted_request_in_progress_is_a_duplicate() {
    let mut server = ServerTsm::<u8>::new(ServerTsmConfig::default());
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(5))).unwrap();
    assert!(server.handle_apdu(ms(3000), &CLIENT, &Apdu::ConfirmedRequest(request(5))).is_none());
    assert_eq!(server.counters().duplicates, 1);
    assert!(server.poll_transmit().is_none(), "a duplicate is dropped silently");
    assert!(server.respond(ms(3001), &ind.key, Response::SimpleAck));
    // The same invoke ID later is a new transaction, and the old key is stale.
    let again = server.handle_apdu(ms(4000), &CLIENT, &Apdu::ConfirmedRequest(request(5))).unwrap();
    assert_ne!(again.key, ind.key);
    server.poll_transmit();
    assert!(!server.respond(ms(4001), &ind.key, Response::SimpleAck), "a stale key answers nothing");
}

#[test]
fn an_application_that_never_answers_is_aborted_and_forgotten() {
    let config = ServerTsmConfig { application_timeout: Duration::from_secs(10), ..ServerTsmConfig::default() };
    let mut server = ServerTsm::<u8>::new(config);
    server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(1))).unwrap();
    assert_eq!(server.poll_timeout(), Some(Duration::from_secs(10)));
    server.handle_timeout(Duration::from_secs(10));
    let (_, abort) = server.poll_transmit().unwrap();
    assert_eq!(
        Apdu::decode(&abort).unwrap(),
        Apdu::Abort { server: true, invoke_id: 1, reason: AbortReason::APPLICATION_EXCEEDED_REPLY_TIME }
    );
    assert_eq!(server.transactions(), 0);
}

/// The next deadline is the earliest live transaction's, whatever was
/// answered in between (the TSM keeps deadlines in a heap with stale
/// entries dropped lazily, and rebuilds it when stale ones pile up).
#[test]
fn the_next_deadline_is_the_earliest_transaction_still_waiting() {
    let config = ServerTsmConfig { application_timeout: Duration::from_secs(10), ..ServerTsmConfig::default() };
    let mut server = ServerTsm::<u16>::new(config);
    assert_eq!(server.poll_timeout(), None);
    let first = server.handle_apdu(ms(0), &1, &Apdu::ConfirmedRequest(request(1))).unwrap();
    let second = server.handle_apdu(ms(5), &2, &Apdu::ConfirmedRequest(request(1))).unwrap();
    assert_eq!(server.poll_timeout(), Some(ms(10_000)));
    assert!(server.respond(ms(6), &first.key, Response::SimpleAck));
    assert_eq!(server.poll_timeout(), Some(ms(10_005)), "the answered one no longer counts");
    // Thousands answered behind a long-lived one: still exact.
    for i in 0..5_000u32 {
        let peer = 100 + (i % 1000) as u16;
        let ind = server.handle_apdu(ms(10 + u64::from(i)), &peer, &Apdu::ConfirmedRequest(request(7))).unwrap();
        assert!(server.respond(ms(10 + u64::from(i)), &ind.key, Response::SimpleAck));
    }
    assert_eq!(server.poll_timeout(), Some(ms(10_005)));
    assert!(server.respond(ms(6000), &second.key, Response::SimpleAck));
    assert_eq!(server.poll_timeout(), None);
    assert_eq!(server.transactions(), 0);
}

#[test]
fn answer_capacity_follows_the_requesters_limits() {
    let config = ServerTsmConfig::default();
    let mut server = ServerTsm::<u8>::new(config);
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(1))).unwrap();
    assert_eq!(ind.answer_capacity(&config), config.max_response_octets, "unspecified segments: our own cap");
    let mut r = request(2);
    r.segmented_response_accepted = false;
    r.max_apdu = MaxApdu::UP_TO_480;
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(r)).unwrap();
    assert_eq!(ind.answer_capacity(&config), 477);
    let mut r = request(3);
    r.max_segments = MaxSegments::at_least(4);
    r.max_apdu = MaxApdu::UP_TO_480;
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(r)).unwrap();
    assert_eq!(ind.answer_capacity(&config), 4 * 475);
}

#[test]
fn an_answer_that_overtakes_the_final_segment_ack_completes_the_request() {
    let mut link = Link::new(client_config(MaxApdu::UP_TO_1476, 4), server_config());
    // The server's final Segment-ACK is lost; its SimpleACK arrives.
    link.fate = Box::new(|from, _, apdu| match apdu {
        Apdu::SegmentAck { sequence_number, .. } if from == SERVER && *sequence_number == 4 => Fate::Drop,
        _ => Fate::Deliver,
    });
    let peer = PeerLimits { max_apdu: 480, segmented_receive: true, max_segments: None };
    let id = link.client.start_with(link.now, SERVER, S::WRITE_PROPERTY_MULTIPLE, body(2_000), peer).unwrap();
    link.run(|_| Response::SimpleAck);
    assert_eq!(link.outcome(id), &Outcome::SimpleAck, "every segment was out: the answer stands");
    assert_eq!(link.now, Duration::ZERO, "no timer needed");
}

/// Server → client: an unsegmented ComplexACK goes out in the buffer its
/// body was encoded in (header in front, in place), and buffers handed
/// back are reused for the next request — bounded in number and size.
#[test]
fn answers_and_request_bodies_reuse_recycled_buffers_within_bounds() {
    use bacnet::tsm::{Response, SPARE_BUFFER_MIN_OCTETS, SPARE_BUFFER_OCTETS, SPARE_BUFFERS};
    let mut server = ServerTsm::<u8>::new(server_config());
    let request = |invoke_id: u8| bacnet::apdu::ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu: MaxApdu::UP_TO_1476,
        invoke_id,
        service: S::READ_PROPERTY,
        body: &[0x0C, 0x00, 0x00, 0x00, 0x01, 0x19, 0x55],
    };
    let ind = server.handle_apdu(ms(0), &CLIENT, &Apdu::ConfirmedRequest(request(1))).expect("indication");
    assert_eq!(ind.body, [0x0C, 0x00, 0x00, 0x00, 0x01, 0x19, 0x55]);
    let mut answer = server.take_buffer();
    assert!(answer.capacity() >= SPARE_BUFFER_MIN_OCTETS);
    answer.extend_from_slice(&[0x0C, 0x00, 0x00, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x41, 0xA0, 0, 0, 0x3F]);
    let answer_at = answer.as_ptr();
    server.respond(ms(1), &ind.key, Response::ComplexAck(answer));
    let (_, apdu) = server.poll_transmit().expect("the ComplexACK");
    assert_eq!(apdu.as_ptr(), answer_at, "the body's buffer became the APDU");
    assert_eq!(&apdu[..3], &[0x30, 1, S::READ_PROPERTY.0]);
    server.recycle(ind.body);
    server.recycle(apdu);
    // The next request's body comes from a recycled buffer.
    let next = server.handle_apdu(ms(2), &CLIENT, &Apdu::ConfirmedRequest(request(2))).expect("indication");
    assert!(next.body.capacity() >= SPARE_BUFFER_MIN_OCTETS, "a recycled buffer");
    // Bounds: too small or too large buffers are not kept, nor more than SPARE_BUFFERS.
    server.recycle(Vec::with_capacity(8));
    server.recycle(Vec::with_capacity(SPARE_BUFFER_OCTETS + 1));
    // (A new buffer has exactly the minimum room; these are one octet larger.)
    for _ in 0..SPARE_BUFFERS + 10 {
        server.recycle(Vec::with_capacity(SPARE_BUFFER_MIN_OCTETS + 1));
    }
    let mut kept = 0;
    while server.take_buffer().capacity() == SPARE_BUFFER_MIN_OCTETS + 1 && kept <= SPARE_BUFFERS + 20 {
        kept += 1;
    }
    assert!((1..=SPARE_BUFFERS).contains(&kept), "{kept} buffers kept");
}
