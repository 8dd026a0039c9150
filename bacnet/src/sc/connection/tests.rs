//! A node connecting to a hub, as the Annex's sequence diagrams draw it.

use super::*;
use crate::bvlc_sc::function;

const NODE: ConnectInfo =
    ConnectInfo { vmac: [2, 0, 0, 0, 0, 1], uuid: [1; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
const HUB: ConnectInfo =
    ConnectInfo { vmac: [2, 0, 0, 0, 0, 9], uuid: [9; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
const S: Duration = Duration::from_secs(1);

fn frames(c: &mut Connection) -> Vec<Vec<u8>> {
    core::iter::from_fn(|| c.poll_transmit()).collect()
}

fn events(c: &mut Connection) -> Vec<Event> {
    core::iter::from_fn(|| c.poll_event()).collect()
}

fn payload(frame: &[u8]) -> Payload<'_> {
    BvlcSc::decode(frame).unwrap().payload
}

fn admit_all(_: &PeerInfo) -> Admission {
    Admission::Accept
}

/// Run both ends until neither has anything to send.
fn exchange(a: &mut Connection, b: &mut Connection, now: Duration) {
    loop {
        let (fa, fb) = (frames(a), frames(b));
        if fa.is_empty() && fb.is_empty() {
            return;
        }
        for f in fa {
            b.handle_frame(now, &f, &mut admit_all);
        }
        for f in fb {
            a.handle_frame(now, &f, &mut admit_all);
        }
    }
}

fn connected_pair() -> (Connection, Connection) {
    let mut node = Connection::initiate(S, ConnectionConfig::new(NODE));
    let mut hub = Connection::accept(S, ConnectionConfig::new(HUB));
    exchange(&mut node, &mut hub, S);
    assert_eq!((node.state(), hub.state()), (State::Connected, State::Connected));
    (node, hub)
}

#[test]
fn connect_request_then_accept_and_both_know_the_other() {
    let (mut node, mut hub) = connected_pair();
    assert_eq!(events(&mut node), [Event::Connected(HUB)]);
    assert_eq!(events(&mut hub), [Event::Connected(NODE)]);
}

#[test]
fn a_hub_refusing_a_duplicate_vmac_tells_the_node_to_pick_another() {
    let mut node = Connection::initiate(S, ConnectionConfig::new(NODE));
    let mut hub = Connection::accept(S, ConnectionConfig::new(HUB));
    let request = frames(&mut node).remove(0);
    hub.handle_frame(S, &request, &mut |_| Admission::DuplicateVmac);
    let nak = frames(&mut hub).remove(0);
    let Payload::Result { function: function::CONNECT_REQUEST, nak: Some(n) } = payload(&nak) else { panic!() };
    assert_eq!(u32::from(n.code), ErrorCode::NODE_DUPLICATE_VMAC.0);
    node.handle_frame(S, &nak, &mut admit_all);
    assert_eq!(node.state(), State::Closed(CloseReason::DuplicateVmac));
    assert_eq!(hub.state(), State::Closed(CloseReason::RefusedPeer(151)));
}

#[test]
fn an_unanswered_connect_request_times_out() {
    let mut node = Connection::initiate(S, ConnectionConfig::new(NODE));
    assert_eq!(node.poll_timeout(), Some(S * 11));
    node.handle_timeout(S * 10);
    assert_eq!(node.state(), State::AwaitingAccept);
    node.handle_timeout(S * 11);
    assert_eq!(node.state(), State::Closed(CloseReason::ConnectTimeout));
}

#[test]
fn the_initiating_peer_sends_heartbeats_and_both_give_up_after_two_silent_periods() {
    let (mut node, mut hub) = connected_pair();
    let beat = S + Duration::from_secs(300);
    assert_eq!(node.poll_timeout(), Some(beat));
    node.handle_timeout(beat);
    let sent = frames(&mut node);
    assert_eq!(payload(&sent[0]), Payload::HeartbeatRequest);
    hub.handle_frame(beat, &sent[0], &mut admit_all);
    let ack = frames(&mut hub);
    assert_eq!(payload(&ack[0]), Payload::HeartbeatAck);
    node.handle_frame(beat, &ack[0], &mut admit_all);
    assert_eq!(node.counters().heartbeats_sent, 1);
    // Then the hub goes silent: the node gives up after two periods.
    let gone = beat + Duration::from_secs(600);
    node.handle_timeout(beat + Duration::from_secs(300));
    let _ = frames(&mut node);
    node.handle_timeout(gone);
    assert_eq!(node.state(), State::Closed(CloseReason::HeartbeatTimeout));
    // The hub never hears from the node again either.
    hub.handle_timeout(gone);
    assert_eq!(hub.state(), State::Closed(CloseReason::HeartbeatTimeout));
}

#[test]
fn disconnect_request_and_ack_close_both_ends() {
    let (mut node, mut hub) = connected_pair();
    node.disconnect(S * 2);
    assert_eq!(node.state(), State::Disconnecting);
    exchange(&mut node, &mut hub, S * 2);
    assert_eq!(node.state(), State::Closed(CloseReason::Disconnected));
    assert_eq!(hub.state(), State::Closed(CloseReason::Disconnected));
}

#[test]
fn messages_go_up_only_once_connected_and_garbage_gets_its_nak() {
    let (mut node, mut hub) = connected_pair();
    let _ = (events(&mut node), events(&mut hub));
    let adv = [0x04, 0, 0, 7, 1, 0, 0x06, 0x40, 0x05, 0xd9].to_vec();
    hub.handle_frame(S, &adv, &mut admit_all);
    assert_eq!(events(&mut hub), [Event::Message(adv.clone())]);
    // An Encapsulated-NPDU without an NPDU: NAK payload-expected.
    hub.handle_frame(S, &[0x01, 0, 0, 8], &mut admit_all);
    let nak = frames(&mut hub);
    let Payload::Result { function: 1, nak: Some(n) } = payload(&nak[0]) else { panic!("{nak:02x?}") };
    assert_eq!(u32::from(n.code), ErrorCode::PAYLOAD_EXPECTED.0);
    // A message before the connect is a protocol error.
    let mut early = Connection::accept(S, ConnectionConfig::new(HUB));
    early.handle_frame(S, &adv, &mut admit_all);
    assert_eq!(early.state(), State::Closed(CloseReason::ProtocolError));
}

#[test]
fn nothing_is_sent_before_the_link_is_connected_and_the_queue_is_bounded() {
    let mut node = Connection::initiate(S, ConnectionConfig::new(NODE));
    assert!(!node.send(alloc::vec![1, 0, 0, 1, 0x01]));
    let (mut node, _) = connected_pair();
    let sent = (0..MAX_QUEUED + 5).filter(|_| node.send(alloc::vec![1, 0, 0, 1, 0x01])).count();
    assert_eq!(sent, MAX_QUEUED);
    assert_eq!(node.counters().queue_full, 5);
}
