//! Three nodes on a hub, as the Annex's relay rules say.

use super::*;
use crate::bvlc_sc::ConnectInfo;
use crate::sc::connection::{CloseReason, PeerInfo};
use alloc::vec;

const S: Duration = Duration::from_secs(1);
const HUB: ConnectInfo =
    ConnectInfo { vmac: [2, 0, 0, 0, 0, 9], uuid: [9; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };

fn node(n: u8) -> ConnectInfo {
    ConnectInfo { vmac: [2, 0, 0, 0, 0, n], uuid: [n; 16], max_bvlc_len: 1600, max_npdu_len: 1497 }
}

/// A node on the hub: its connection, and the hub's handle for it.
struct Node {
    id: ConnId,
    link: Connection,
}

fn hub() -> Hub {
    Hub::new(HubConfig::new(ConnectionConfig::new(HUB)))
}

/// Carry frames both ways until nothing moves.
fn pump(hub: &mut Hub, nodes: &mut [&mut Node]) {
    loop {
        let mut moved = false;
        for n in nodes.iter_mut() {
            while let Some(f) = n.link.poll_transmit() {
                hub.handle_frame(S, n.id, &f);
                moved = true;
            }
        }
        while let Some((id, f)) = hub.poll_transmit() {
            if let Some(n) = nodes.iter_mut().find(|n| n.id == id) {
                n.link.handle_frame(S, &f, &mut |_: &PeerInfo| Admission::Accept);
            }
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

fn connect(hub: &mut Hub, info: ConnectInfo) -> Node {
    let id = hub.open(S).unwrap();
    let mut n = Node { id, link: Connection::initiate(S, ConnectionConfig::new(info)) };
    pump(hub, &mut [&mut n]);
    n
}

fn npdu_to(destination: ScVmac, npdu: &[u8]) -> Vec<u8> {
    encode(&BvlcSc {
        message_id: 7,
        origin: None,
        destination: Some(destination),
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload: Payload::EncapsulatedNpdu(npdu),
    })
    .unwrap()
}

/// What a node received: (origin, destination, NPDU) of each Encapsulated-NPDU.
fn received(n: &mut Node) -> Vec<(Option<ScVmac>, Option<ScVmac>, Vec<u8>)> {
    core::iter::from_fn(|| n.link.poll_event())
        .filter_map(|e| match e {
            Event::Message(f) => match BvlcSc::decode(&f).unwrap() {
                BvlcSc { origin, destination, payload: Payload::EncapsulatedNpdu(n), .. } => {
                    Some((origin, destination, n.to_vec()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_unicast_reaches_its_node_from_the_senders_vmac() {
    let mut hub = hub();
    let (mut a, mut b, mut c) = (connect(&mut hub, node(1)), connect(&mut hub, node(2)), connect(&mut hub, node(3)));
    let _ = (received(&mut a), received(&mut b), received(&mut c));
    assert!(a.link.send(npdu_to(node(2).vmac, &[1, 0, 0x10, 8])));
    pump(&mut hub, &mut [&mut a, &mut b, &mut c]);
    assert_eq!(received(&mut b), [(Some(node(1).vmac), None, vec![1, 0, 0x10, 8])]);
    assert!(received(&mut c).is_empty() && received(&mut a).is_empty());
    assert_eq!(hub.counters().unicasts, 1);
}

#[test]
fn a_broadcast_reaches_every_other_node_never_its_sender() {
    let mut hub = hub();
    let (mut a, mut b, mut c) = (connect(&mut hub, node(1)), connect(&mut hub, node(2)), connect(&mut hub, node(3)));
    let _ = (received(&mut a), received(&mut b), received(&mut c));
    assert!(a.link.send(npdu_to(BROADCAST_VMAC, &[1, 0x20, 0xff, 0xff, 0, 0xff, 0x10, 8])));
    pump(&mut hub, &mut [&mut a, &mut b, &mut c]);
    for n in [&mut b, &mut c] {
        let got = received(n);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].0, got[0].1), (Some(node(1).vmac), Some(BROADCAST_VMAC)));
    }
    assert!(received(&mut a).is_empty(), "not back to its sender");
    assert_eq!((hub.counters().broadcasts, hub.counters().broadcast_copies), (1, 2));
}

#[test]
fn a_second_device_with_a_taken_vmac_is_refused_and_the_same_device_replaces_itself() {
    let mut hub = hub();
    let mut a = connect(&mut hub, node(1));
    let impostor = ConnectInfo { uuid: [0xEE; 16], ..node(1) };
    let b = connect(&mut hub, impostor);
    assert_eq!(b.link.state(), State::Closed(CloseReason::DuplicateVmac));
    assert_eq!(hub.poll_closed(), Some(b.id));
    assert_eq!(hub.counters().refused_duplicate, 1);
    // The first device reconnects on a new WebSocket: it takes over.
    let again = connect(&mut hub, node(1));
    assert_eq!(again.link.state(), State::Connected);
    assert_eq!(hub.poll_closed(), Some(a.id), "the older connection goes");
    assert_eq!(hub.counters().replaced, 1);
    assert_eq!(hub.nodes().collect::<Vec<_>>(), [(node(1).vmac, node(1).uuid)]);
    let _ = received(&mut a);
}

#[test]
fn unknown_destinations_are_dropped_and_the_hub_answers_for_itself() {
    let mut hub = hub();
    let mut a = connect(&mut hub, node(1));
    let _ = received(&mut a);
    assert!(a.link.send(npdu_to([2, 9, 9, 9, 9, 9], &[1, 0])));
    pump(&mut hub, &mut [&mut a]);
    assert_eq!(hub.counters().unknown_destination, 1);
    // Advertisement-Solicitation to the hub: its Advertisement.
    let solicit = encode(&BvlcSc {
        message_id: 3,
        origin: None,
        destination: None,
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload: Payload::AdvertisementSolicitation,
    })
    .unwrap();
    assert!(a.link.send(solicit));
    pump(&mut hub, &mut [&mut a]);
    let adv = core::iter::from_fn(|| a.link.poll_event()).find_map(|e| match e {
        Event::Message(f) => Some(f),
        _ => None,
    });
    let adv = adv.expect("an answer");
    assert!(matches!(BvlcSc::decode(&adv).unwrap().payload, Payload::Advertisement { max_npdu_len: 1497, .. }));
}

#[test]
fn the_hub_takes_no_more_websockets_than_its_bound() {
    let mut hub = Hub::new(HubConfig { max_connections: 2, ..HubConfig::new(ConnectionConfig::new(HUB)) });
    assert!(hub.open(S).is_some() && hub.open(S).is_some());
    assert_eq!(hub.open(S), None);
    assert_eq!(hub.counters().refused_full, 1);
}

#[test]
fn a_node_that_never_connects_or_goes_silent_is_closed() {
    let mut hub = hub();
    let idle = hub.open(S).unwrap();
    let mut a = connect(&mut hub, node(1));
    let _ = received(&mut a);
    hub.handle_timeout(S * 12);
    assert_eq!(hub.poll_closed(), Some(idle), "no Connect-Request within the connect wait");
    hub.handle_timeout(S + Duration::from_secs(601));
    assert_eq!(hub.poll_closed(), Some(a.id), "silent for two heartbeat periods");
    assert_eq!(hub.nodes().count(), 0);
}
