//! The client transaction state machine on a simulated clock, written as the
//! standard's sequence diagrams: client → server, server → client.

use bacnet::apdu::Apdu;
use bacnet::enums::{AbortReason, ConfirmedServiceChoice as S, RejectReason};
use bacnet::tsm::{ClientTsm, Outcome, TsmConfig};
use std::time::Duration;

const PEER: &str = "server";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn tsm(in_flight: usize) -> ClientTsm<&'static str> {
    ClientTsm::new(TsmConfig {
        apdu_timeout: secs(3),
        retries: 2,
        max_in_flight_per_peer: in_flight,
        ..TsmConfig::default()
    })
}

/// Client → server: the next confirmed request sent, as (invoke ID, service).
fn sent(t: &mut ClientTsm<&'static str>) -> Option<(u8, S)> {
    let tx = t.poll_transmit()?;
    assert!(tx.expecting_reply);
    match Apdu::decode(&tx.apdu).unwrap() {
        Apdu::ConfirmedRequest(c) => Some((c.invoke_id, c.service)),
        other => panic!("expected a confirmed request, got {other:?}"),
    }
}

/// Server → client.
fn reply(t: &mut ClientTsm<&'static str>, now: Duration, apdu: Apdu<'_>) -> bool {
    t.handle_apdu(now, &PEER, &apdu)
}

#[test]
fn request_then_complex_ack_completes_the_transaction() {
    let mut t = tsm(16);
    let id = t.start(secs(0), PEER, S::READ_PROPERTY, vec![0x0C, 0, 0, 0, 1, 0x19, 0x55]).unwrap();
    let (invoke, service) = sent(&mut t).unwrap();
    assert_eq!(service, S::READ_PROPERTY);
    assert_eq!(t.poll_timeout(), Some(secs(3)));

    let body = [0x0C, 0, 0, 0, 1, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x28, 0, 0, 0x3F];
    let ack = bacnet::apdu::ComplexAck { segment: None, invoke_id: invoke, service, body: &body };
    assert!(reply(&mut t, secs(1), Apdu::ComplexAck(ack)));
    let done = t.poll_event().unwrap();
    assert_eq!(done.id, id);
    assert_eq!(done.outcome, Outcome::ComplexAck(body.to_vec()));
    assert_eq!(t.poll_timeout(), None, "nothing left to time");
}

#[test]
fn no_answer_retransmits_then_times_out() {
    let mut t = tsm(16);
    let id = t.start(secs(0), PEER, S::WRITE_PROPERTY, vec![1]).unwrap();
    let (invoke, _) = sent(&mut t).unwrap();
    for retry in 1..=2 {
        let deadline = t.poll_timeout().unwrap();
        assert_eq!(deadline, secs(3 * retry));
        t.handle_timeout(deadline - Duration::from_millis(1));
        assert!(t.poll_transmit().is_none(), "not before the deadline");
        t.handle_timeout(deadline);
        assert_eq!(sent(&mut t).unwrap().0, invoke, "a retry reuses the invoke ID");
    }
    t.handle_timeout(secs(9));
    assert_eq!(t.poll_event().unwrap().outcome, Outcome::Timeout);
    assert_eq!(t.poll_event(), None);
    let _ = id;
}

#[test]
fn a_late_answer_after_the_timeout_is_ignored() {
    let mut t = ClientTsm::new(TsmConfig { retries: 0, ..TsmConfig::default() });
    t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    let (invoke, service) = sent(&mut t).unwrap();
    t.handle_timeout(secs(3));
    assert_eq!(t.poll_event().unwrap().outcome, Outcome::Timeout);
    assert!(!reply(&mut t, secs(4), Apdu::SimpleAck { invoke_id: invoke, service }));
    assert_eq!(t.poll_event(), None);
}

#[test]
fn error_reject_and_abort_end_the_transaction_with_their_reason() {
    let mut t = tsm(16);
    for _ in 0..3 {
        t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    }
    let a = sent(&mut t).unwrap().0;
    let b = sent(&mut t).unwrap().0;
    let c = sent(&mut t).unwrap().0;
    assert!(a != b && b != c && a != c, "distinct invoke IDs per peer");
    reply(&mut t, secs(1), Apdu::Error { invoke_id: a, service: S::READ_PROPERTY, body: &[0x91, 1, 0x91, 31] });
    reply(&mut t, secs(1), Apdu::Reject { invoke_id: b, reason: RejectReason::UNRECOGNIZED_SERVICE });
    reply(&mut t, secs(1), Apdu::Abort { server: true, invoke_id: c, reason: AbortReason::OUT_OF_RESOURCES });
    assert_eq!(t.poll_event().unwrap().outcome, Outcome::Error(vec![0x91, 1, 0x91, 31]));
    assert_eq!(t.poll_event().unwrap().outcome, Outcome::Reject(RejectReason::UNRECOGNIZED_SERVICE));
    assert_eq!(
        t.poll_event().unwrap().outcome,
        Outcome::Abort { reason: AbortReason::OUT_OF_RESOURCES, from_server: true }
    );
}

#[test]
fn at_most_n_in_flight_per_peer_and_the_rest_wait_their_turn() {
    let mut t = tsm(2);
    for _ in 0..5 {
        t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    }
    t.start(secs(0), "other", S::READ_PROPERTY, vec![]).unwrap();
    let mut to_server = vec![];
    while let Some(tx) = t.poll_transmit() {
        if tx.peer == PEER {
            to_server.push(tx);
        }
    }
    assert_eq!(to_server.len(), 2, "two in flight to the server");
    assert_eq!((t.in_flight(), t.queued()), (3, 3));
    let first = match Apdu::decode(&to_server[0].apdu).unwrap() {
        Apdu::ConfirmedRequest(c) => c.invoke_id,
        _ => unreachable!(),
    };
    reply(&mut t, secs(1), Apdu::SimpleAck { invoke_id: first, service: S::READ_PROPERTY });
    assert!(sent(&mut t).is_some(), "a freed slot admits the next queued request");
    assert_eq!(t.queued(), 2);
}

#[test]
fn invoke_ids_wrap_and_skip_ids_still_in_use() {
    let mut t = tsm(256);
    for _ in 0..256 {
        t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    }
    let ids: std::collections::BTreeSet<u8> = std::iter::from_fn(|| sent(&mut t).map(|s| s.0)).collect();
    assert_eq!(ids.len(), 256, "every invoke ID once");
    t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    assert!(t.poll_transmit().is_none(), "no free invoke ID: the request waits");
    reply(&mut t, secs(1), Apdu::SimpleAck { invoke_id: 77, service: S::READ_PROPERTY });
    assert_eq!(sent(&mut t).unwrap().0, 77, "the freed ID is reused");
}

#[test]
fn a_segmented_ack_we_did_not_ask_for_is_aborted() {
    let mut t = ClientTsm::new(TsmConfig { segmented_response_accepted: false, ..TsmConfig::default() });
    t.start(secs(0), PEER, S::READ_PROPERTY_MULTIPLE, vec![]).unwrap();
    let (invoke, service) = sent(&mut t).unwrap();
    let seg = bacnet::apdu::SegmentInfo { sequence_number: 0, proposed_window_size: 4, more_follows: true };
    let ack = bacnet::apdu::ComplexAck { segment: Some(seg), invoke_id: invoke, service, body: &[1, 2] };
    reply(&mut t, secs(1), Apdu::ComplexAck(ack));
    let abort = t.poll_transmit().unwrap();
    assert_eq!(
        Apdu::decode(&abort.apdu).unwrap(),
        Apdu::Abort { server: false, invoke_id: invoke, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED }
    );
    assert!(matches!(t.poll_event().unwrap().outcome, Outcome::Abort { from_server: false, .. }));
}

#[test]
fn cancel_forgets_the_transaction() {
    let mut t = tsm(16);
    let id = t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    let (invoke, service) = sent(&mut t).unwrap();
    assert!(t.cancel(secs(1), id));
    assert!(!reply(&mut t, secs(1), Apdu::SimpleAck { invoke_id: invoke, service }));
    assert_eq!(t.poll_timeout(), None);
}

#[test]
fn a_peer_that_goes_idle_does_not_get_invoke_id_0_again() {
    let mut t = tsm(16);
    t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    let (first, service) = sent(&mut t).unwrap();
    reply(&mut t, secs(1), Apdu::SimpleAck { invoke_id: first, service });
    t.poll_event().unwrap();
    t.start(secs(2), PEER, S::READ_PROPERTY, vec![]).unwrap();
    let (second, _) = sent(&mut t).unwrap();
    assert_ne!(first, second, "a late duplicate answer to the first must not complete the second");
}

#[test]
fn an_answer_for_another_service_is_not_the_answer() {
    let mut t = tsm(16);
    t.start(secs(0), PEER, S::WRITE_PROPERTY, vec![]).unwrap();
    let (invoke, _) = sent(&mut t).unwrap();
    let ack = bacnet::apdu::ComplexAck { segment: None, invoke_id: invoke, service: S::READ_PROPERTY, body: &[] };
    assert!(!reply(&mut t, secs(1), Apdu::ComplexAck(ack)));
    assert_eq!(t.poll_event(), None);
    assert!(reply(&mut t, secs(1), Apdu::SimpleAck { invoke_id: invoke, service: S::WRITE_PROPERTY }));
}

#[test]
fn a_request_waiting_in_the_queue_times_out_like_a_sent_one() {
    let mut t = tsm(1);
    t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    let queued = t.start(secs(0), PEER, S::READ_PROPERTY, vec![]).unwrap();
    sent(&mut t).unwrap();
    // 3 s timeout, 2 retries: a sent request gives up at 9 s, so does a queued one.
    t.handle_timeout(secs(9));
    let mut timed_out = vec![];
    while let Some(e) = t.poll_event() {
        assert_eq!(e.outcome, Outcome::Timeout);
        timed_out.push(e.id);
    }
    assert!(timed_out.contains(&queued), "{timed_out:?}");
}

#[test]
fn huge_timeouts_saturate_instead_of_overflowing() {
    let mut t = ClientTsm::new(TsmConfig { apdu_timeout: Duration::MAX, retries: 255, ..TsmConfig::default() });
    t.start(Duration::from_secs(5), PEER, S::READ_PROPERTY, vec![]).unwrap();
    assert_eq!(t.poll_timeout(), Some(Duration::MAX));
    t.handle_timeout(Duration::MAX);
}
