//! The router's behaviour as sequence diagrams: a B/IP network 10 on port
//! 1, an MS/TP network 20 on port 2, a B/IP network 30 on port 3.

use super::*;
use crate::npdu::RoutingTable as WireTable;
use alloc::vec;

const IP: PortId = PortId(1);
const MSTP: PortId = PortId(2);
const IP2: PortId = PortId(3);
const CLIENT: [u8; 6] = [127, 0, 0, 1, 0xBA, 0xC0];
const OTHER_ROUTER: [u8; 6] = [127, 0, 0, 9, 0xBA, 0xC0];
const SECOND: Duration = Duration::from_secs(1);

fn router() -> Router {
    Router::new(RouterConfig::new(vec![
        PortConfig { id: IP, network: 10, max_npdu: 1497, mac_len: Some(6), broadcast_mac: None },
        PortConfig { id: MSTP, network: 20, max_npdu: 501, mac_len: Some(1), broadcast_mac: Mac::new(&[0xFF]) },
        PortConfig { id: IP2, network: 30, max_npdu: 1497, mac_len: Some(6), broadcast_mac: None },
    ]))
    .unwrap()
}

fn npdu(destination: Option<NetAddress<'_>>, source: Option<NetAddress<'_>>, hop_count: u8, apdu: &[u8]) -> Vec<u8> {
    let n = Npdu {
        destination,
        source,
        hop_count,
        expecting_reply: true,
        priority: NetworkPriority::URGENT,
        payload: NpduPayload::Apdu(apdu),
    };
    let mut out = Vec::new();
    n.encode(&mut out).unwrap();
    out
}

fn message(destination: Option<NetAddress<'_>>, m: NetworkMessage<'_>) -> Vec<u8> {
    let n = Npdu {
        destination,
        source: None,
        hop_count: 255,
        expecting_reply: false,
        priority: NetworkPriority::NORMAL,
        payload: NpduPayload::Message(m),
    };
    let mut out = Vec::new();
    n.encode(&mut out).unwrap();
    out
}

fn to(net: u16, mac: &[u8]) -> Option<NetAddress<'_>> {
    Some(NetAddress { net, mac })
}

fn sent(r: &mut Router) -> Vec<Transmit> {
    core::iter::from_fn(|| r.poll_transmit()).collect()
}

fn decoded(t: &Transmit) -> Npdu<'_> {
    Npdu::decode(&t.npdu).unwrap()
}

fn list(nets: &[u16]) -> Vec<u8> {
    nets.iter().flat_map(|n| n.to_be_bytes()).collect()
}

fn networks_of(t: &Transmit) -> Vec<u16> {
    match decoded(t).payload {
        NpduPayload::Message(NetworkMessage::IAmRouterToNetwork(l)) => l.iter().collect(),
        other => panic!("not an I-Am-Router-To-Network: {other:?}"),
    }
}

fn rejection(t: &Transmit) -> (RejectMessageReason, u16) {
    match decoded(t).payload {
        NpduPayload::Message(NetworkMessage::RejectMessageToNetwork { reason, net }) => (reason, net),
        other => panic!("not a Reject-Message-To-Network: {other:?}"),
    }
}

fn mac(octets: &[u8]) -> Mac {
    Mac::new(octets).unwrap()
}

/// client (net 10) → router → MS/TP station 5 (net 20): DNET/DADR go, SNET/SADR
/// come, the APDU and its priority pass unchanged.
#[test]
fn a_request_to_a_directly_connected_network_arrives_there_with_its_source() {
    let mut r = router();
    let data = npdu(to(20, &[5]), None, 255, &[0x00, 0x05, 0x01, 0x0C]);
    assert_eq!(r.handle_npdu(Duration::ZERO, IP, &CLIENT, &data), Arrival::Handled);
    let out = sent(&mut r);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, out[0].to), (MSTP, LinkTarget::Unicast(mac(&[5]))));
    let n = decoded(&out[0]);
    assert_eq!(n.destination, None);
    assert_eq!(n.source, to(10, &CLIENT));
    assert_eq!((n.priority, n.expecting_reply), (NetworkPriority::URGENT, true));
    assert_eq!(n.payload, NpduPayload::Apdu(&[0x00, 0x05, 0x01, 0x0C]));
    assert_eq!(r.counters().forwarded, 1);
}

/// MS/TP station 5 answers the client: the answer goes back the same way.
#[test]
fn the_answer_goes_back_to_the_client_on_its_own_network() {
    let mut r = router();
    let data = npdu(to(10, &CLIENT), None, 255, &[0x30, 0x01, 0x0C]);
    r.handle_npdu(Duration::ZERO, MSTP, &[5], &data);
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (IP, LinkTarget::Unicast(mac(&CLIENT))));
    assert_eq!(decoded(&out[0]).source, to(20, &[5]));
}

#[test]
fn a_remote_broadcast_becomes_a_local_broadcast_on_its_network() {
    let mut r = router();
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(20, &[]), None, 255, &[0x10, 0x08]));
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (MSTP, LinkTarget::Broadcast));
    assert_eq!(decoded(&out[0]).destination, None);
}

/// A global Who-Is: every other port gets it (hop count down by one, the
/// source added), and the application entity here answers it too.
#[test]
fn a_global_broadcast_goes_to_every_other_port_and_to_the_local_entity() {
    let mut r = router();
    let data = npdu(to(GLOBAL_NETWORK, &[]), None, 255, &[0x10, 0x08]);
    let arrival = r.handle_npdu(Duration::ZERO, IP, &CLIENT, &data);
    assert!(matches!(arrival, Arrival::Local(n) if n.payload == NpduPayload::Apdu(&[0x10, 0x08])));
    let out = sent(&mut r);
    assert_eq!(
        out.iter().map(|t| (t.port, t.to)).collect::<Vec<_>>(),
        [(MSTP, LinkTarget::Broadcast), (IP2, LinkTarget::Broadcast)]
    );
    let n = decoded(&out[0]);
    assert_eq!((n.destination, n.hop_count, n.source), (to(GLOBAL_NETWORK, &[]), 254, to(10, &CLIENT)));
}

#[test]
fn local_traffic_is_left_to_the_application_entity_and_not_routed() {
    let mut r = router();
    let data = npdu(None, None, 0, &[0x00, 0x05, 0x01, 0x0C]);
    assert!(matches!(r.handle_npdu(Duration::ZERO, IP, &CLIENT, &data), Arrival::Local(_)));
    let explicit = npdu(to(10, &[]), None, 255, &[0x10, 0x08]);
    assert!(matches!(r.handle_npdu(Duration::ZERO, IP, &CLIENT, &explicit), Arrival::Local(_)));
    assert!(sent(&mut r).is_empty());
}

/// client → DNET 99 (unknown): Reject-Message-To-Network not-directly-connected
/// back to the client, and the other ports asked who routes to 99 — once
/// per discovery interval, however often the client asks.
#[test]
fn an_unknown_network_is_rejected_and_looked_for_once_per_interval() {
    let mut r = router();
    let data = npdu(to(99, &[1]), None, 255, &[0x00]);
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &data);
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (IP, LinkTarget::Unicast(mac(&CLIENT))));
    assert_eq!(rejection(&out[0]), (RejectMessageReason::NOT_DIRECTLY_CONNECTED, 99));
    let asked: Vec<_> = out[1..].iter().map(|t| (t.port, decoded(t).payload)).collect();
    let who_is = NpduPayload::Message(NetworkMessage::WhoIsRouterToNetwork(Some(99)));
    assert_eq!(asked, [(MSTP, who_is), (IP2, who_is)]);

    for _ in 0..100 {
        r.handle_npdu(SECOND, IP, &CLIENT, &data);
    }
    assert_eq!(sent(&mut r).len(), 100, "one Reject each, no more discoveries");
    assert_eq!(r.counters().discoveries, 1);
    r.handle_npdu(11 * SECOND, IP, &CLIENT, &data);
    assert_eq!(sent(&mut r).len(), 3, "the interval is over: asked again");
}

#[test]
fn who_is_router_is_answered_with_the_networks_behind_the_other_ports() {
    let mut r = router();
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::WhoIsRouterToNetwork(None)));
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (IP, LinkTarget::Broadcast));
    assert_eq!(networks_of(&out[0]), [20, 30]);

    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::WhoIsRouterToNetwork(Some(30))));
    assert_eq!(networks_of(&sent(&mut r)[0]), [30]);
    // Its own network is behind the asking port: someone else's to answer.
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::WhoIsRouterToNetwork(Some(10))));
    assert!(sent(&mut r).is_empty());
}

/// Another router on net 30 says it reaches 40: learned, announced on the
/// other ports, and NPDUs for 40 go to it with DNET kept.
#[test]
fn a_learned_route_carries_npdus_through_the_next_router() {
    let mut r = router();
    let claim = list(&[40, 10]);
    let i_am = NetworkMessage::IAmRouterToNetwork(NetworkList::from_bytes(&claim).unwrap());
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, i_am));
    let announced = sent(&mut r);
    assert_eq!(
        announced.iter().map(|t| (t.port, networks_of(t))).collect::<Vec<_>>(),
        [(IP, vec![40]), (MSTP, vec![40])]
    );
    assert_eq!(r.counters().route_conflicts, 1, "network 10 is ours: not learned");
    assert_eq!(r.table().get(10).unwrap().next_hop, None);

    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(40, &[7]), None, 1, &[0x00]));
    assert!(sent(&mut r).is_empty(), "hop count 1: it would reach the next router at zero");
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(40, &[7]), None, 9, &[0x00]));
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (IP2, LinkTarget::Unicast(mac(&OTHER_ROUTER))));
    let n = decoded(&out[0]);
    assert_eq!((n.destination, n.source, n.hop_count), (to(40, &[7]), to(10, &CLIENT), 8));

    // The same claim again changes nothing and is not announced again.
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, i_am));
    assert!(sent(&mut r).is_empty());
}

#[test]
fn learned_routes_are_bounded() {
    let mut config = router_config();
    config.max_learned_routes = 3;
    let mut r = Router::new(config).unwrap();
    let claim = list(&(100..200).collect::<Vec<_>>());
    let i_am = NetworkMessage::IAmRouterToNetwork(NetworkList::from_bytes(&claim).unwrap());
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, i_am));
    assert_eq!(r.table().learned(), 3);
    assert_eq!(r.counters().table_full, 97);
}

fn router_config() -> RouterConfig {
    RouterConfig::new(router().ports().to_vec())
}

/// Router-Busy-To-Network from the router to 40: NPDUs for 40 are refused
/// with router-busy until Router-Available, or 30 s.
#[test]
fn a_busy_network_is_refused_until_available_or_thirty_seconds() {
    let mut r = router();
    let forty = list(&[40]);
    let forty = NetworkList::from_bytes(&forty).unwrap();
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, NetworkMessage::IAmRouterToNetwork(forty)));
    sent(&mut r);
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, NetworkMessage::RouterBusyToNetwork(forty)));
    assert_eq!(sent(&mut r).len(), 2, "the busy network is passed on to the other ports");
    let data = npdu(to(40, &[7]), None, 255, &[0x00]);
    r.handle_npdu(SECOND, IP, &CLIENT, &data);
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::ROUTER_BUSY, 40));
    assert_eq!(r.poll_timeout(SECOND), Some(BUSY_TIME));

    r.handle_timeout(BUSY_TIME);
    r.handle_npdu(BUSY_TIME, IP, &CLIENT, &data);
    assert_eq!(sent(&mut r)[0].port, IP2, "30 s later: routed again");

    let all = NetworkMessage::RouterBusyToNetwork(NetworkList::default());
    r.handle_npdu(BUSY_TIME, IP2, &OTHER_ROUTER, &message(None, all));
    sent(&mut r);
    let available = NetworkMessage::RouterAvailableToNetwork(NetworkList::default());
    r.handle_npdu(BUSY_TIME + SECOND, IP2, &OTHER_ROUTER, &message(None, available));
    sent(&mut r);
    r.handle_npdu(BUSY_TIME + SECOND, IP, &CLIENT, &data);
    assert_eq!(sent(&mut r)[0].port, IP2, "available again at once");
}

#[test]
fn the_routing_table_is_readable_but_not_writable_over_the_network() {
    let mut r = router();
    let query = WireTable::from_encoded(&[0]).unwrap();
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::InitializeRoutingTable(query)));
    let out = sent(&mut r);
    assert_eq!(out[0].to, LinkTarget::Unicast(mac(&CLIENT)));
    let NpduPayload::Message(NetworkMessage::InitializeRoutingTableAck(table)) = decoded(&out[0]).payload else {
        panic!("not an Ack")
    };
    let entries: Vec<_> = table.ports().map(|p| (p.net, p.port_id)).collect();
    assert_eq!(entries, [(10, 1), (20, 2), (30, 3)]);

    let mut update = Vec::new();
    WireTable::encode_ports(&[RoutingTablePort { net: 50, port_id: 1, port_info: &[] }], &mut update).unwrap();
    let update = WireTable::from_encoded(&update).unwrap();
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::InitializeRoutingTable(update)));
    assert_eq!(rejection(&sent(&mut r)[0]).0, RejectMessageReason::OTHER);
    assert!(r.table().get(50).is_none());
}

#[test]
fn point_to_point_connections_are_refused() {
    let mut r = router();
    let establish = NetworkMessage::EstablishConnectionToNetwork { net: 60, termination_time: 0 };
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, establish));
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::OTHER, 60));
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, NetworkMessage::DisconnectConnectionToNetwork(60)));
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::OTHER, 60));
}

#[test]
fn what_is_network_number_is_answered_on_the_local_network_only() {
    let mut r = router();
    r.handle_npdu(Duration::ZERO, MSTP, &[3], &message(None, NetworkMessage::WhatIsNetworkNumber));
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (MSTP, LinkTarget::Broadcast));
    let is = NpduPayload::Message(NetworkMessage::NetworkNumberIs { net: 20, configured: true });
    assert_eq!(decoded(&out[0]).payload, is);

    let routed = message(to(20, &[]), NetworkMessage::WhatIsNetworkNumber);
    r.handle_npdu(Duration::ZERO, MSTP, &[3], &routed);
    assert!(sent(&mut r).is_empty());
    let wrong = NetworkMessage::NetworkNumberIs { net: 21, configured: true };
    r.handle_npdu(Duration::ZERO, MSTP, &[3], &message(None, wrong));
    assert_eq!(r.counters().network_number_conflicts, 1);
}

#[test]
fn an_unknown_message_type_is_rejected_and_a_reject_never_answered() {
    let mut r = router();
    let security = NetworkMessage::Other {
        message_type: crate::enums::NetworkMessageType::CHALLENGE_REQUEST,
        vendor_id: None,
        data: &[1, 2],
    };
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(None, security));
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::UNKNOWN_MESSAGE_TYPE, 10));

    let reject = NetworkMessage::RejectMessageToNetwork { reason: RejectMessageReason::OTHER, net: 99 };
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &message(to(99, &[1]), reject));
    let out = sent(&mut r);
    assert!(
        out.iter().all(|t| !matches!(
            decoded(t).payload,
            NpduPayload::Message(NetworkMessage::RejectMessageToNetwork { .. })
        ))
    );
}

/// A Reject for a client behind another router goes back through it, to
/// the client's SNET/SADR.
#[test]
fn a_reject_for_a_remote_client_is_addressed_to_it() {
    let mut r = router();
    let data = npdu(to(99, &[1]), Some(NetAddress { net: 40, mac: &[7] }), 255, &[0x00]);
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &data);
    let out = sent(&mut r);
    assert_eq!((out[0].port, out[0].to), (IP2, LinkTarget::Unicast(mac(&OTHER_ROUTER))));
    assert_eq!(decoded(&out[0]).destination, to(40, &[7]));
}

#[test]
fn what_cannot_be_delivered_is_rejected_with_the_reason_or_dropped() {
    let mut r = router();
    // A six-octet DADR on MS/TP.
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(20, &CLIENT), None, 255, &[0x00]));
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::ADDRESSING_ERROR, 20));
    // Longer than MS/TP's 501 octets.
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(20, &[5]), None, 255, &[0; 600]));
    assert_eq!(rejection(&sent(&mut r)[0]), (RejectMessageReason::MESSAGE_TOO_LONG, 20));
    // Hop count spent; back out of the port it came in on; not an NPDU.
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &npdu(to(20, &[5]), None, 0, &[0x00]));
    let forty = list(&[40]);
    let i_am = NetworkMessage::IAmRouterToNetwork(NetworkList::from_bytes(&forty).unwrap());
    r.handle_npdu(Duration::ZERO, IP2, &OTHER_ROUTER, &message(None, i_am));
    sent(&mut r);
    r.handle_npdu(Duration::ZERO, IP2, &CLIENT, &npdu(to(40, &[5]), None, 255, &[0x00]));
    r.handle_npdu(Duration::ZERO, IP, &CLIENT, &[0x02, 0x00]);
    r.handle_npdu(Duration::ZERO, PortId(9), &CLIENT, &npdu(None, None, 0, &[0x00]));
    assert!(sent(&mut r).is_empty());
    let c = r.counters();
    assert_eq!((c.hop_count_exhausted, c.looped, c.malformed), (1, 1, 2));
}

#[test]
fn at_start_up_each_port_hears_of_the_networks_behind_the_others() {
    let mut r = router();
    r.announce();
    let out = sent(&mut r);
    assert_eq!(
        out.iter().map(|t| (t.port, networks_of(t))).collect::<Vec<_>>(),
        [(IP, vec![20, 30]), (MSTP, vec![10, 30]), (IP2, vec![10, 20])]
    );
}

#[test]
fn configurations_that_cannot_route_are_refused() {
    let port = |id, network| PortConfig { id: PortId(id), network, max_npdu: 1497, mac_len: None, broadcast_mac: None };
    assert_eq!(Router::new(RouterConfig::new(vec![port(1, 1)])).unwrap_err(), ConfigError::TooFewPorts);
    assert_eq!(
        Router::new(RouterConfig::new(vec![port(1, 1), port(1, 2)])).unwrap_err(),
        ConfigError::BadPortId(PortId(1))
    );
    assert_eq!(Router::new(RouterConfig::new(vec![port(1, 1), port(2, 1)])).unwrap_err(), ConfigError::BadNetwork(1));
    assert_eq!(
        Router::new(RouterConfig::new(vec![port(1, 1), port(2, GLOBAL_NETWORK)])).unwrap_err(),
        ConfigError::BadNetwork(GLOBAL_NETWORK)
    );
    let mut config = RouterConfig::new(vec![port(1, 1), port(2, 2)]);
    config.static_routes.push(StaticRoute { net: 2, port: PortId(1), router: mac(&OTHER_ROUTER) });
    assert_eq!(Router::new(config).unwrap_err(), ConfigError::BadRoute(2));
}

/// The router's own device on port 1 answers a client behind another
/// router on its own network 1: the answer goes to that router as sent,
/// not dropped as a loop; a destination nobody knows is looked for on
/// every port, the device's own included.
#[test]
fn the_routers_own_device_reaches_a_router_on_its_own_network() {
    let mut r = router();
    let fifty = list(&[50]);
    let i_am = NetworkMessage::IAmRouterToNetwork(NetworkList::from_bytes(&fifty).unwrap());
    r.handle_npdu(Duration::ZERO, IP, &OTHER_ROUTER, &message(None, i_am));
    sent(&mut r);
    let own_mac = [127, 0, 0, 1, 0xBA, 0xC0];
    let answer = npdu(to(50, &[3]), None, 255, &[0x30, 0x01, 0x0C]);
    r.handle_own_npdu(Duration::ZERO, IP, &own_mac, &answer);
    let out = sent(&mut r);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, out[0].to), (IP, LinkTarget::Unicast(mac(&OTHER_ROUTER))));
    assert_eq!(out[0].npdu, answer, "as the device sent it");
    r.handle_own_npdu(Duration::ZERO, IP, &own_mac, &npdu(to(77, &[3]), None, 255, &[0x10, 0x08]));
    let asked: Vec<_> = sent(&mut r).into_iter().map(|t| t.port).collect();
    assert_eq!(asked, [IP, MSTP, IP2]);
}

/// A policy that writes down what it was asked and answers from a script.
struct Scripted {
    asked: Vec<(PortId, PortId, u16, Content)>,
    answer: fn(&RoutedNpdu<'_>) -> Verdict,
}

impl RoutingPolicy for Scripted {
    fn decide(&mut self, _now: Duration, n: &RoutedNpdu<'_>) -> Verdict {
        self.asked.push((n.arrival_port, n.departure_port, n.source.net, n.content));
        (self.answer)(n)
    }
}

fn scripted(answer: fn(&RoutedNpdu<'_>) -> Verdict) -> Scripted {
    Scripted { asked: Vec::new(), answer }
}

/// A WriteProperty of analog-value,1's Present_Value (invoke ID 5).
const WRITE_AV1: [u8; 13] = [0x00, 0x05, 5, 15, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 85, 0x3E, 0x3F];

#[test]
fn the_policy_sees_the_routed_npdu_and_its_apdu() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Forward);
    let data = npdu(to(20, &[7]), None, 255, &WRITE_AV1);
    assert_eq!(r.handle_npdu_with(SECOND, IP, &CLIENT, &data, &mut p), Arrival::Handled);
    let [(arrival, departure, source_net, Content::Apdu(a))] = p.asked[..] else { panic!("{:?}", p.asked) };
    assert_eq!((arrival, departure, source_net), (IP, MSTP, 10));
    assert_eq!((a.pdu_type, a.service, a.invoke_id), (0, Some(15), Some(5)));
    assert_eq!(a.object, Some(crate::ObjectIdentifier { object_type: crate::ObjectType::ANALOG_VALUE, instance: 1 }));
    assert_eq!(sent(&mut r).len(), 1, "forwarded");
}

#[test]
fn a_dropped_npdu_goes_nowhere_and_is_counted() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Drop(3));
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(20, &[7]), None, 255, &WRITE_AV1), &mut p);
    assert!(sent(&mut r).is_empty());
    assert_eq!((r.counters().policy_dropped, r.counters().forwarded), (1, 0));
}

#[test]
fn a_rejected_npdu_is_answered_with_the_policys_reason() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Reject(RejectMessageReason::SECURITY_ERROR));
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(20, &[7]), None, 255, &WRITE_AV1), &mut p);
    let out = sent(&mut r);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].port, out[0].to), (IP, LinkTarget::Unicast(Mac::new(&CLIENT).unwrap())));
    assert_eq!(rejection(&out[0]), (RejectMessageReason::SECURITY_ERROR, 20));
    assert_eq!(r.counters().policy_rejected, 1);
}

#[test]
fn a_new_priority_is_what_leaves() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::SetPriority(NetworkPriority::LIFE_SAFETY));
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(20, &[7]), None, 255, &WRITE_AV1), &mut p);
    let out = sent(&mut r);
    assert_eq!(decoded(&out[0]).priority, NetworkPriority::LIFE_SAFETY);
    assert_eq!(r.counters().policy_reprioritized, 1);
}

#[test]
fn a_global_broadcast_is_asked_about_once_per_port_and_kept_from_some() {
    let mut r = router();
    // Who-Is: kept off the MS/TP trunk, let through to the other IP network.
    let mut p = scripted(|n| if n.departure_network == 20 { Verdict::Drop(1) } else { Verdict::Forward });
    let who_is = npdu(to(GLOBAL_NETWORK, &[]), None, 255, &[0x10, 0x08]);
    assert!(matches!(r.handle_npdu_with(SECOND, IP, &CLIENT, &who_is, &mut p), Arrival::Local(_)));
    assert_eq!(p.asked.len(), 2);
    let out = sent(&mut r);
    assert_eq!(out.iter().map(|t| t.port).collect::<Vec<_>>(), [IP2]);
    assert_eq!(r.counters().policy_dropped, 1);
}

#[test]
fn what_the_router_answers_itself_never_reaches_the_policy() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Drop(0));
    // For the arrival network, a question for the router, an unknown network.
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(None, None, 255, &WRITE_AV1), &mut p);
    r.handle_npdu_with(SECOND, IP, &CLIENT, &message(None, NetworkMessage::WhoIsRouterToNetwork(None)), &mut p);
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(99, &[1]), None, 255, &WRITE_AV1), &mut p);
    assert!(p.asked.is_empty(), "{:?}", p.asked);
}

#[test]
fn a_source_claiming_one_of_our_own_networks_is_forged_and_dropped() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Forward);
    // A laptop on network 10 pretending, through SNET 10, to be another station of it.
    let forged = npdu(to(20, &[7]), to(10, &[127, 0, 0, 1, 0xBA, 0xC1]), 255, &WRITE_AV1);
    assert_eq!(r.handle_npdu_with(SECOND, IP, &CLIENT, &forged, &mut p), Arrival::Handled);
    // Or of the network it is sending to.
    let forged = npdu(to(20, &[7]), to(20, &[9]), 255, &WRITE_AV1);
    r.handle_npdu_with(SECOND, IP, &CLIENT, &forged, &mut p);
    assert!(sent(&mut r).is_empty() && p.asked.is_empty());
    assert_eq!(r.counters().forged_sources, 2);
    // A source on a network beyond another router is passed on.
    let routed = npdu(to(20, &[7]), to(99, &[9]), 255, &WRITE_AV1);
    r.handle_npdu_with(SECOND, IP, &OTHER_ROUTER, &routed, &mut p);
    assert_eq!(sent(&mut r).len(), 1);
}

#[test]
fn a_dadr_that_is_the_trunks_broadcast_address_is_a_broadcast_to_the_policy_and_the_wire() {
    let mut r = router();
    let mut p = Scripted {
        asked: Vec::new(),
        answer: |n| match n.destination {
            Destination::RemoteBroadcast(20) => Verdict::Drop(0),
            _ => Verdict::Forward,
        },
    };
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(20, &[0xFF]), None, 255, &[0x10, 0x08]), &mut p);
    assert!(sent(&mut r).is_empty(), "seen as the broadcast it is, and dropped");
    let mut forward = scripted(|_| Verdict::Forward);
    r.handle_npdu_with(SECOND, IP, &CLIENT, &npdu(to(20, &[0xFF]), None, 255, &[0x10, 0x08]), &mut forward);
    assert_eq!(sent(&mut r)[0].to, LinkTarget::Broadcast);
}

#[test]
fn a_rejected_global_broadcast_is_dropped_without_a_reject_per_port() {
    let mut r = router();
    let mut p = scripted(|_| Verdict::Reject(RejectMessageReason::SECURITY_ERROR));
    let who_is = npdu(to(GLOBAL_NETWORK, &[]), None, 255, &[0x10, 0x08]);
    r.handle_npdu_with(SECOND, IP, &CLIENT, &who_is, &mut p);
    assert!(sent(&mut r).is_empty());
    assert_eq!((r.counters().policy_dropped, r.counters().rejects_sent, r.counters().broadcasts_forwarded), (2, 0, 0));
}
