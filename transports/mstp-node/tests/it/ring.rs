//! Token passing, Poll For Master and lost-token recovery between the node
//! and the gateway's MS/TP driver, and the node's timing read off the line.

use crate::line::{BAUD, DEVICE_INSTANCE, GATEWAY_MAC, NODE_MAC, Segment, apdu_of, device, points};
use bacnet::apdu::Apdu;
use bacnet::mstp::{FrameType, T_NO_TOKEN, T_REPLY_DELAY, T_SLOT, T_USAGE_DELAY, T_USAGE_TIMEOUT, bit_times};
use bacnet::services::{IAm, ServiceCodec};
use bacnet::{ConfirmedServiceChoice, ObjectType, UnconfirmedServiceChoice};
use trellis_mstp::sim::timing::{Percentiles, Timings};
use trellis_mstp::sim::{LineConfig, LineFrame};

fn kind(f: &LineFrame) -> (FrameType, u8, u8) {
    let h = f.header().expect("a frame with a valid header");
    (h.frame_type, h.source, h.destination)
}

fn count(frames: &[LineFrame], want: (FrameType, u8, u8)) -> usize {
    frames.iter().filter(|f| f.header().is_some() && kind(f) == want).count()
}

#[test]
fn the_node_answers_the_gateway_s_poll_takes_the_token_announces_itself_and_passes_it_back() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = Segment::new(true, LineConfig::new(BAUD));
    // The gateway polls 1, 2 … and the node answers its poll; at its first
    // token the node has no successor yet (DoneInitializing left NS = TS),
    // so it polls 6 … 127, 0 and finds the gateway: about 3.3 s at 38,400
    // baud with Max_Master 127.
    seg.run_for(&mut dev, 6_000_000);

    let frames = seg.frames();
    assert_eq!(
        count(&frames, (FrameType::REPLY_TO_POLL_FOR_MASTER, NODE_MAC, GATEWAY_MAC)),
        1,
        "one reply to the poll"
    );
    let tokens_to_node = count(&frames, (FrameType::TOKEN, GATEWAY_MAC, NODE_MAC));
    let tokens_back = count(&frames, (FrameType::TOKEN, NODE_MAC, GATEWAY_MAC));
    assert!(tokens_to_node >= 100, "the token comes round ({tokens_to_node} times in 6 s)");
    assert!(tokens_back + 1 >= tokens_to_node, "and goes back each time ({tokens_back} of {tokens_to_node})");
    assert!(frames.iter().all(LineFrame::is_clean), "no collision, no damaged frame");

    // Its first token carried the start-up I-Am, a global broadcast.
    let received = seg.gateway_received();
    let i_am = received.iter().find(|r| r.source_mac == NODE_MAC).expect("the node's I-Am reached the gateway");
    assert!(i_am.broadcast);
    let Apdu::UnconfirmedRequest { service, body } = apdu_of(&i_am.npdu) else { panic!("not an I-Am") };
    assert_eq!(service, UnconfirmedServiceChoice::I_AM);
    let i_am = IAm::decode(body).expect("an I-Am");
    assert_eq!(i_am.device.instance, DEVICE_INSTANCE);
    assert_eq!(i_am.device.object_type, ObjectType::DEVICE);
    assert_eq!(i_am.max_apdu_length_accepted, 480);
    assert_eq!(seg.node.ring().next_station(), GATEWAY_MAC);
    assert!(!seg.node.ring().sole_master());

    // Timing: never before Tturnaround (40 bit times) after the last octet
    // it heard; the token and the poll used well inside Tusage_delay.
    let turnaround = bit_times(40, BAUD);
    let node_station = 1;
    for pair in frames.windows(2) {
        if pair[1].station == node_station && pair[0].station != node_station {
            let gap = pair[1].start - pair[0].end;
            assert!(gap >= turnaround, "the node sent {gap} µs after the last octet, less than Tturnaround");
        }
    }
    let usage: Vec<u64> = node_usage_delays(&frames);
    let p = Percentiles::of(&usage).expect("the node used tokens");
    println!("node's usage delay after Token / Poll For Master at {BAUD} baud: {p:?}");
    assert!(p.max < T_USAGE_DELAY, "usage delay {p:?} above Tusage_delay");
}

/// End of a Token or Poll For Master to the node, to its first octet.
fn node_usage_delays(frames: &[LineFrame]) -> Vec<u64> {
    frames
        .windows(2)
        .filter(|p| {
            let (t, _, to) = kind(&p[0]);
            (t == FrameType::TOKEN || t == FrameType::POLL_FOR_MASTER) && to == NODE_MAC && kind(&p[1]).1 == NODE_MAC
        })
        .map(|p| p[1].start - p[0].end)
        .collect()
}

#[test]
fn the_node_answers_every_request_within_treply_delay() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = Segment::new(true, LineConfig::new(BAUD));
    seg.run_for(&mut dev, 4_000_000);
    for _ in 0..40 {
        let answer = seg.read(
            &mut dev,
            crate::line::oid(ObjectType::ANALOG_VALUE, 1),
            bacnet::PropertyIdentifier::PRESENT_VALUE,
            None,
        );
        assert_eq!(answer, crate::line::Answer::Value(bacnet::AnyValue::primitive(bacnet::Value::Real(21.0))));
    }
    let frames = seg.frames();
    let delays = Timings::from_frames(&frames).reply_delay;
    let p = Percentiles::of(&delays).expect("replies on the line");
    println!("node's reply delay at {BAUD} baud, polled every 50 µs: {p:?}");
    assert_eq!(p.count, 40, "each request answered directly, none postponed");
    assert!(p.max < T_REPLY_DELAY, "a reply later than Treply_delay: {p:?}");
    assert_eq!(count(&frames, (FrameType::REPLY_POSTPONED, NODE_MAC, GATEWAY_MAC)), 0);
    let _ = ConfirmedServiceChoice::READ_PROPERTY;
}

#[test]
fn alone_on_the_line_the_node_generates_the_token_polls_every_address_and_becomes_sole_master() {
    alone_on_the_line(BAUD);
}

#[test]
fn alone_on_the_line_at_9600_baud_too() {
    alone_on_the_line(9_600);
}

fn alone_on_the_line(baud: u32) {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = Segment::new(false, LineConfig::new(baud));
    seg.run_for(&mut dev, 8_000_000);

    let frames = seg.frames();
    // GenerateToken in its slot: Tno_token + TS × Tslot of silence.
    let first = &frames[0];
    assert_eq!(kind(first), (FrameType::POLL_FOR_MASTER, NODE_MAC, NODE_MAC + 1));
    let slot = T_NO_TOKEN + T_SLOT * u64::from(NODE_MAC);
    assert!(first.start >= slot && first.start < slot + T_SLOT, "first poll at {} µs, slot at {slot}", first.start);
    // SendNextPFM to every other address, one Tusage_timeout apart.
    let polled: Vec<u8> = frames.iter().take(127).map(|f| kind(f).2).collect();
    let expected: Vec<u8> = (NODE_MAC + 1..=127).chain(0..NODE_MAC).collect();
    assert_eq!(polled, expected, "every other address polled once, in order");
    for pair in frames[..127].windows(2) {
        let gap = pair[1].start - pair[0].end;
        assert!((T_USAGE_TIMEOUT..T_USAGE_TIMEOUT + 200).contains(&gap), "polls {gap} µs apart");
    }
    // DeclareSoleMaster: it uses the token itself (its I-Am goes out).
    assert!(seg.node.ring().sole_master());
    let i_am = frames.iter().position(|f| kind(f) == (FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, NODE_MAC, 255));
    assert_eq!(i_am, Some(127), "the I-Am right after the last poll");
    assert!(!seg.node.i_am_due());
    // As sole master it keeps the token and polls again every Npoll uses;
    // each poll gets its Tusage_timeout from its own end, whatever went
    // before it (the I-Am right before a poll must not shorten the wait).
    let polls_after = frames[128..].iter().filter(|f| kind(f).0 == FrameType::POLL_FOR_MASTER).count();
    assert!(polls_after >= 10, "maintenance polls as sole master: {polls_after}");
    for pair in frames.windows(2) {
        if kind(&pair[0]).0 == FrameType::POLL_FOR_MASTER {
            let gap = pair[1].start - pair[0].end;
            assert!(gap >= T_USAGE_TIMEOUT, "{:?} {gap} µs after a poll at {baud} baud", kind(&pair[1]));
        }
    }
    assert!(frames.iter().all(LineFrame::is_clean));
}

#[test]
fn a_token_the_gateway_does_not_use_is_sent_again_once_then_the_node_finds_a_new_successor() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = Segment::new(true, LineConfig::new(BAUD));
    seg.run_for(&mut dev, 4_000_000);
    // Remove the gateway while it holds nothing: right after it passed the
    // token to the node, so the node's next pass goes nowhere.
    while seg.frames().last().map(kind) != Some((FrameType::TOKEN, GATEWAY_MAC, NODE_MAC)) {
        seg.run_for(&mut dev, 50);
    }
    seg.sim.remove_station(0);
    let before = seg.frames().len();
    seg.run_for(&mut dev, 300_000);
    let after = &seg.frames()[before..];
    // The node may first send a maintenance Poll For Master; then it passes
    // the token to the gateway, which is gone.
    let pass = after.iter().position(|f| kind(f) == (FrameType::TOKEN, NODE_MAC, GATEWAY_MAC)).expect("a token pass");
    let gap = after[pass + 1].start - after[pass].end;
    assert!((T_USAGE_TIMEOUT..T_USAGE_TIMEOUT + 200).contains(&gap), "retried after {gap} µs");
    let after: Vec<(FrameType, u8, u8)> = after[pass..].iter().map(kind).collect();
    assert_eq!(
        &after[..3],
        &[
            (FrameType::TOKEN, NODE_MAC, GATEWAY_MAC),
            // RetrySendToken after Tusage_timeout.
            (FrameType::TOKEN, NODE_MAC, GATEWAY_MAC),
            // FindNewSuccessor: poll from NS + 1.
            (FrameType::POLL_FOR_MASTER, NODE_MAC, GATEWAY_MAC + 1),
        ],
        "token, retry, then a poll for a new successor"
    );
}

#[test]
fn the_node_s_state_fits_a_small_controller_s_ram() {
    // Its receive and transmit buffers (a standard frame each) and the two
    // state machines; no heap. The firmware image keeps it on the stack of
    // its 8 KiB of RAM (transports/mstp-node/firmware/memory.x).
    let size = std::mem::size_of::<trellis_mstp_node::Node>();
    println!("Node: {size} octets");
    assert!(size <= 1152, "Node grew to {size} octets (its two frame buffers are 1,014)");
}
