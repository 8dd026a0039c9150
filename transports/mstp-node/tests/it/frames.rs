//! The Receive Frame state machine's refusals, seen from outside: what is
//! not a valid frame for the node gets no answer, and what is not a frame
//! at all does not disturb the ring.

use crate::line::{device, points};
use crate::robustness::Script;
use bacnet::mstp::{Frame, FrameType, T_USAGE_TIMEOUT};
use trellis_mstp_node::{LineError, MasterState, Node, NodeConfig};

const TS: u8 = 5;

/// ReadProperty analog-value,1 present-value (invoke ID 1).
const RP: [u8; 13] = [0x01, 0x04, 0x00, 0x05, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];

fn request() -> Vec<u8> {
    Frame { frame_type: FrameType::BACNET_DATA_EXPECTING_REPLY, destination: TS, source: 0, data: &RP }
        .to_vec()
        .expect("a frame")
}

/// Feed `octets` one per 260 µs (38,400 baud), with `error_at` replaced by a
/// UART error and a 30 ms gap before `gap_before`; then 5 ms of polling.
/// What the node wrote.
fn feed(octets: &[u8], error_at: Option<usize>, gap_before: Option<usize>) -> Vec<Vec<u8>> {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut node = Node::new(NodeConfig::new(TS, 38_400), 0).expect("a valid node");
    let mut uart = Script::default();
    let mut now = 0u32;
    for (i, &b) in octets.iter().enumerate() {
        now += if gap_before == Some(i) { 30_000 } else { 260 };
        uart.input.push_back(if error_at == Some(i) { Err(LineError) } else { Ok(b) });
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    for _ in 0..50 {
        now += 100;
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    uart.sent
}

#[test]
fn a_request_is_answered_only_when_its_frame_arrives_whole_and_intact() {
    let good = request();
    assert_eq!(feed(&good, None, None).len(), 1, "the intact request is answered");

    let mut bad_header = good.clone();
    bad_header[7] ^= 0x01;
    assert!(feed(&bad_header, None, None).is_empty(), "a bad HeaderCRC");
    let mut bad_data = good.clone();
    *bad_data.last_mut().unwrap() ^= 0x80;
    assert!(feed(&bad_data, None, None).is_empty(), "a bad DataCRC");
    assert!(feed(&good, None, Some(12)).is_empty(), "a gap past Tframe_abort inside the data");
    assert!(feed(&good, Some(10), None).is_empty(), "a UART error inside the data");
}

#[test]
fn a_frame_inside_another_station_s_data_is_not_taken_for_one() {
    // A Token to this node, carried as the data of a frame to station 9.
    let token = Frame::token(TS, 0).to_vec().expect("a frame");
    let carrier =
        Frame { frame_type: FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, destination: 9, source: 0, data: &token }
            .to_vec()
            .expect("a frame");
    assert!(feed(&carrier, None, None).is_empty(), "the node took a token out of another station's data");
    let sent = feed(&token, None, None);
    let first = Frame::decode(&sent[0], &mut []).expect("a valid frame").0;
    assert_eq!(
        (first.frame_type, first.destination),
        (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, 255),
        "a real token is used (the start-up I-Am)"
    );
}

#[test]
fn a_lone_preamble_octet_does_not_end_a_poll_for_master() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut node = Node::new(NodeConfig::new(TS, 38_400), 0).expect("a valid node");
    let mut uart = Script::default();
    let mut now = 0u32;
    // Alone, the node generates the token and polls station 6.
    while uart.sent.is_empty() {
        now += 100;
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    assert_eq!(node.ring().state(), MasterState::PollForMaster);
    let poll_end = uart.sent_at[0] + 8 * 10 * 1_000_000 / 38_400;
    // One stray 0x55 on the line 1 ms after the poll, then silence.
    while now < poll_end + 1_000 {
        now += 100;
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    uart.input.push_back(Ok(0x55));
    while uart.sent.len() < 2 {
        now += 100;
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    let next_poll = uart.sent_at[1];
    assert!(
        next_poll - poll_end >= T_USAGE_TIMEOUT as u32,
        "the next poll {} µs after the first: the stray octet ended the wait",
        next_poll - poll_end
    );
}

#[test]
fn a_test_request_is_echoed_and_a_request_without_an_answer_is_postponed() {
    let sent = |frame: Frame<'_>| {
        let octets = frame.to_vec().expect("a frame");
        let sent = feed(&octets, None, None);
        assert_eq!(sent.len(), 1, "one frame back");
        sent[0].clone()
    };
    let test = Frame { frame_type: FrameType::TEST_REQUEST, destination: TS, source: 0, data: b"ping 42" };
    let back = sent(test);
    let (frame, _) = Frame::decode(&back, &mut []).expect("a valid frame");
    assert_eq!((frame.frame_type, frame.destination, frame.data), (FrameType::TEST_RESPONSE, 0, &b"ping 42"[..]));
    // A network-layer message (Who-Is-Router-To-Network) expecting a reply:
    // this device is no router, so it postpones and never answers.
    let message = [0x01, 0x84, 0x00];
    let der = Frame { frame_type: FrameType::BACNET_DATA_EXPECTING_REPLY, destination: TS, source: 0, data: &message };
    let back = sent(der);
    let (frame, _) = Frame::decode(&back, &mut []).expect("a valid frame");
    assert_eq!((frame.frame_type, frame.destination), (FrameType::REPLY_POSTPONED, 0));
}
