//! A node's hub connector against two simulated hubs (the core's own hub
//! function), through failures, failover and back.

use super::*;
use crate::bvlc_sc::{BROADCAST_VMAC, ConnectInfo};
use crate::sc::hub::{ConnId, Hub, HubConfig};
use alloc::vec;

const S: Duration = Duration::from_secs(1);
const ME: ConnectInfo = ConnectInfo { vmac: [2, 0, 0, 0, 0, 1], uuid: [1; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };

fn hub_info(n: u8) -> ConnectInfo {
    ConnectInfo { vmac: [2, 0, 0, 0, 0xF0, n], uuid: [0xF0 + n; 16], max_bvlc_len: 1600, max_npdu_len: 1497 }
}

/// The world: two hubs that may be up or down, and the node's WebSocket to each.
struct World {
    hubs: [Hub; 2],
    up: [bool; 2],
    sockets: [Option<ConnId>; 2],
    node: HubConnector,
}

fn index(h: HubChoice) -> usize {
    match h {
        HubChoice::Primary => 0,
        HubChoice::Failover => 1,
    }
}

impl World {
    fn new(has_failover: bool) -> World {
        let hub = |n| Hub::new(HubConfig::new(ConnectionConfig::new(hub_info(n))));
        World {
            hubs: [hub(1), hub(2)],
            up: [true, true],
            sockets: [None, None],
            node: HubConnector::new(ConnectorConfig::new(ConnectionConfig::new(ME), has_failover)),
        }
    }

    /// Carry out the node's actions and the hubs' answers until quiet.
    fn run(&mut self, now: Duration) {
        loop {
            let mut moved = false;
            while let Some(a) = self.node.poll_action() {
                moved = true;
                match a {
                    Action::Open(h) => {
                        let i = index(h);
                        if self.up[i] {
                            self.sockets[i] = self.hubs[i].open(now);
                            self.node.opened(now, h);
                        } else {
                            self.node.open_failed(now, h);
                        }
                    }
                    Action::Close(h) => {
                        if let Some(id) = self.sockets[index(h)].take() {
                            self.hubs[index(h)].close(id);
                        }
                    }
                    Action::Send(h, frame) => {
                        if let Some(id) = self.sockets[index(h)] {
                            self.hubs[index(h)].handle_frame(now, id, &frame);
                        }
                    }
                }
            }
            for (i, h) in [HubChoice::Primary, HubChoice::Failover].into_iter().enumerate() {
                while let Some((id, frame)) = self.hubs[i].poll_transmit() {
                    moved = true;
                    if Some(id) == self.sockets[i] {
                        self.node.handle_frame(now, h, &frame);
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Hub `i` goes down: its WebSocket to the node closes.
    fn crash(&mut self, now: Duration, h: HubChoice) {
        let i = index(h);
        self.up[i] = false;
        if let Some(id) = self.sockets[i].take() {
            self.hubs[i].close(id);
            self.node.closed(now, h);
        }
        self.run(now);
    }
}

#[test]
fn it_connects_to_the_primary_first() {
    let mut w = World::new(true);
    w.run(S);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_PRIMARY);
    assert_eq!(w.hubs[0].nodes().collect::<Vec<_>>(), [(ME.vmac, ME.uuid)]);
    assert_eq!(w.sockets[1], None, "the failover is not opened while the primary serves");
}

#[test]
fn it_fails_over_and_comes_back_to_the_primary() {
    let mut w = World::new(true);
    w.run(S);
    w.crash(S * 2, HubChoice::Primary);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_FAILOVER);
    assert_eq!(w.node.counters().failovers, 1);
    // The primary is tried again at the reconnect interval, in vain while it is down.
    let retry = w.node.poll_timeout().unwrap();
    assert!(retry <= S * 12, "{retry:?}");
    w.node.handle_timeout(S * 12);
    w.run(S * 12);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_FAILOVER);
    // The primary returns: the next try takes it, and the failover is let go.
    w.up[0] = true;
    w.node.handle_timeout(S * 23);
    w.run(S * 23);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_PRIMARY);
    assert_eq!(w.hubs[1].nodes().count(), 0, "the failover connection was disconnected");
}

#[test]
fn with_both_hubs_down_it_backs_off_doubling() {
    let mut w = World::new(true);
    w.up = [false, false];
    w.run(S);
    assert_eq!(w.node.status(), HubConnectionStatus::NO_HUB_CONNECTION);
    assert_eq!(w.node.poll_timeout(), Some(S * 11));
    w.node.handle_timeout(S * 11);
    w.run(S * 11);
    assert_eq!(w.node.poll_timeout(), Some(S * 31), "then 20 s");
    w.up = [true, true];
    w.node.handle_timeout(S * 31);
    w.run(S * 31);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_PRIMARY);
    assert_eq!(w.node.counters().failed_attempts, 4);
}

#[test]
fn a_duplicate_vmac_stops_it_until_the_host_picks_another() {
    let mut w = World::new(false);
    // Another device already holds our VMAC on the primary.
    let other = w.hubs[0].open(S).unwrap();
    let mut impostor = Connection::initiate(S, ConnectionConfig::new(ConnectInfo { uuid: [7; 16], ..ME }));
    while let Some(f) = impostor.poll_transmit() {
        w.hubs[0].handle_frame(S, other, &f);
    }
    while w.hubs[0].poll_transmit().is_some() {}
    w.run(S);
    assert!(w.node.duplicate_vmac());
    assert_eq!(w.node.status(), HubConnectionStatus::NO_HUB_CONNECTION);
    w.node.set_vmac([2, 0, 0, 0, 0, 0x42]);
    w.run(S * 2);
    assert_eq!(w.node.status(), HubConnectionStatus::CONNECTED_TO_PRIMARY);
    assert!(w.hubs[0].nodes().any(|(v, _)| v == [2, 0, 0, 0, 0, 0x42]));
}

#[test]
fn npdus_travel_through_the_hub_in_use() {
    let mut w = World::new(true);
    w.run(S);
    // Another node on the primary.
    let peer_id = w.hubs[0].open(S).unwrap();
    let peer_info = ConnectInfo { vmac: [2, 0, 0, 0, 0, 2], uuid: [2; 16], ..ME };
    let mut peer = Connection::initiate(S, ConnectionConfig::new(peer_info));
    let pump = |w: &mut World, peer: &mut Connection| loop {
        let mut moved = false;
        while let Some(f) = peer.poll_transmit() {
            w.hubs[0].handle_frame(S, peer_id, &f);
            moved = true;
        }
        while let Some((id, f)) = w.hubs[0].poll_transmit() {
            moved = true;
            if id == peer_id {
                peer.handle_frame(S, &f, &mut |_| Admission::Accept);
            } else if Some(id) == w.sockets[0] {
                w.node.handle_frame(S, HubChoice::Primary, &f);
            }
        }
        while let Some(a) = w.node.poll_action() {
            moved = true;
            if let (Action::Send(HubChoice::Primary, f), Some(id)) = (a, w.sockets[0]) {
                w.hubs[0].handle_frame(S, id, &f);
            }
        }
        if !moved {
            return;
        }
    };
    pump(&mut w, &mut peer);
    assert!(w.node.send_npdu(BROADCAST_VMAC, &[1, 0x20, 0xff, 0xff, 0, 0xff, 0x10, 8]));
    assert!(w.node.send_npdu(peer_info.vmac, &[1, 0, 0x10, 8]));
    pump(&mut w, &mut peer);
    let got: Vec<Event> =
        core::iter::from_fn(|| peer.poll_event()).filter(|e| matches!(e, Event::Message(_))).collect();
    assert_eq!(got.len(), 2, "the broadcast and the unicast");
    // And back: the peer's unicast comes up from its VMAC.
    let back = BvlcSc {
        message_id: 9,
        origin: None,
        destination: Some(ME.vmac),
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload: Payload::EncapsulatedNpdu(&[1, 0, 0x10, 0]),
    };
    let mut frame = Vec::new();
    back.encode(&mut frame).unwrap();
    assert!(peer.send(frame));
    pump(&mut w, &mut peer);
    assert_eq!(
        w.node.poll_up(),
        Some(Up { origin: Some(peer_info.vmac), broadcast: false, npdu: vec![1, 0, 0x10, 0] })
    );
    // With no hub, an NPDU is refused and counted.
    w.crash(S * 3, HubChoice::Primary);
    w.crash(S * 3, HubChoice::Failover);
    assert!(!w.node.send_npdu(peer_info.vmac, &[1, 0]));
    assert_eq!(w.node.counters().unsent, 1);
}

/// Another node asks ours for its direct-connect URIs: without a node
/// switch, the answer is a NAK (optional functionality not supported),
/// addressed back to the asker through the hub.
#[test]
fn an_address_resolution_gets_the_nak_for_a_node_without_a_node_switch() {
    let mut w = World::new(false);
    w.run(S);
    let asker = [2, 0xAA, 0, 0, 0, 7];
    let mut frame = Vec::new();
    BvlcSc {
        message_id: 0x4242,
        origin: Some(asker),
        destination: None,
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload: Payload::AddressResolution,
    }
    .encode(&mut frame)
    .unwrap();
    w.node.handle_frame(S * 2, HubChoice::Primary, &frame);
    let sent: Vec<Vec<u8>> = core::iter::from_fn(|| w.node.poll_action())
        .filter_map(|a| if let Action::Send(HubChoice::Primary, f) = a { Some(f) } else { None })
        .collect();
    assert_eq!(sent.len(), 1, "one answer");
    let answer = BvlcSc::decode(&sent[0]).unwrap();
    assert_eq!((answer.message_id, answer.destination, answer.origin), (0x4242, Some(asker), None));
    let Payload::Result { function, nak: Some(nak) } = answer.payload else { panic!("a NAK: {answer:?}") };
    assert_eq!(function, crate::bvlc_sc::function::ADDRESS_RESOLUTION);
    assert_eq!(nak.code, crate::enums::ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED.0 as u16);
}

/// The hub says goodbye: the node's Disconnect-ACK is written before its
/// WebSocket is closed.
#[test]
fn a_disconnect_request_from_the_hub_is_acknowledged_before_the_close() {
    let mut w = World::new(false);
    w.run(S);
    let mut frame = Vec::new();
    BvlcSc {
        message_id: 0x0D0D,
        origin: None,
        destination: None,
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload: Payload::DisconnectRequest,
    }
    .encode(&mut frame)
    .unwrap();
    w.node.handle_frame(S * 2, HubChoice::Primary, &frame);
    let actions: Vec<Action> = core::iter::from_fn(|| w.node.poll_action()).collect();
    let ack = actions.iter().position(|a| {
        matches!(a, Action::Send(HubChoice::Primary, f)
            if BvlcSc::decode(f).is_ok_and(|m| m.payload == Payload::DisconnectAck && m.message_id == 0x0D0D))
    });
    let close = actions.iter().position(|a| *a == Action::Close(HubChoice::Primary));
    assert!(matches!((ack, close), (Some(a), Some(c)) if a < c), "{actions:?}");
}
