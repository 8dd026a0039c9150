//! NPDUs (Clause 6.2) and network-layer messages (Clause 6.4): the golden
//! quartet, malformed headers, and round trips.
//!
//! Vector provenance is given with each vector: frames bacnet-stack 1.6 sent
//! on BACnet Ethernet and MS/TP (`shared/vectors/*.pcap*`, dissected by tshark
//! 4.0.17), and NPDUs derived by hand from the octet layout of Clause 6.2 and
//! the message formats of Clause 6.4 (the standard gives no hex examples for
//! the network layer). Whole captured BACnet/IP datagrams are covered in
//! `bvll.rs`.

use crate::strategies::*;
use bacnet::npdu::{NetAddress, NetworkList, NetworkMessage as M, Npdu, NpduPayload, RoutingTable, RoutingTablePort};
use bacnet::{DecodeError, EncodeError, NetworkMessageType, NetworkPriority, RejectMessageReason};
use proptest::prelude::*;

pub(crate) fn encode(n: &Npdu<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    n.encode(&mut out).unwrap();
    out
}

fn local(payload: NpduPayload<'static>) -> Npdu<'static> {
    Npdu {
        destination: None,
        source: None,
        hop_count: 0,
        expecting_reply: false,
        priority: NetworkPriority::NORMAL,
        payload,
    }
}

fn message(m: M<'static>) -> Npdu<'static> {
    local(NpduPayload::Message(m))
}

fn list(b: &'static [u8]) -> NetworkList<'static> {
    NetworkList::from_bytes(b).unwrap()
}

fn table(b: &'static [u8]) -> RoutingTable<'static> {
    RoutingTable::from_encoded(b).unwrap()
}

const WHO_IS: &[u8] = &[0x10, 0x08];
const I_AM_8001: &[u8] = &[0x10, 0x00, 0xC4, 0x02, 0x00, 0x1F, 0x41, 0x22, 0x05, 0xC4, 0x91, 0x03, 0x22, 0x01, 0x04];
const RP_AV1_PV: &[u8] = &[0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
const MAC_192_168_1_2: &[u8] = &[0xC0, 0xA8, 0x01, 0x02, 0xBA, 0xC0];

struct Golden {
    source: &'static str,
    bytes: &'static [u8],
    npdu: Npdu<'static>,
}

fn golden() -> Vec<Golden> {
    vec![
        Golden {
            source: "bacnet-stack 1.6 over BACnet Ethernet, ethernet-bacnet-stack-whois-iam.pcapng frame 1: global broadcast Who-Is",
            bytes: &[0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08],
            npdu: Npdu {
                destination: Some(NetAddress { net: 0xFFFF, mac: &[] }),
                hop_count: 255,
                ..local(NpduPayload::Apdu(WHO_IS))
            },
        },
        Golden {
            source: "bacnet-stack 1.6 over BACnet Ethernet, ethernet-bacnet-stack-whois-iam.pcapng frame 2: local I-Am device,8001",
            bytes: &[
                0x01, 0x00, 0x10, 0x00, 0xC4, 0x02, 0x00, 0x1F, 0x41, 0x22, 0x05, 0xC4, 0x91, 0x03, 0x22, 0x01, 0x04,
            ],
            npdu: local(NpduPayload::Apdu(I_AM_8001)),
        },
        Golden {
            source: "bacnet-stack 1.6 over MS/TP, mstp-bacnet-stack-rp-short.pcap frame 4: ReadProperty, data expecting reply",
            bytes: &[0x01, 0x04, 0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55],
            npdu: Npdu { expecting_reply: true, ..local(NpduPayload::Apdu(RP_AV1_PV)) },
        },
        Golden {
            source: "Clause 6.2.2: routed request, DNET 5 DADR 0x0A, SNET 7 SADR 192.168.1.2:47808, hop count 254, life-safety priority",
            bytes: &[
                0x01, 0x2F, 0x00, 0x05, 0x01, 0x0A, 0x00, 0x07, 0x06, 0xC0, 0xA8, 0x01, 0x02, 0xBA, 0xC0, 0xFE, 0x10,
                0x08,
            ],
            npdu: Npdu {
                destination: Some(NetAddress { net: 5, mac: &[0x0A] }),
                source: Some(NetAddress { net: 7, mac: MAC_192_168_1_2 }),
                hop_count: 254,
                expecting_reply: true,
                priority: NetworkPriority::LIFE_SAFETY,
                payload: NpduPayload::Apdu(WHO_IS),
            },
        },
        Golden {
            source: "Clause 6.2.2: from a remote network through a router (SNET 7 SADR 0x0A, no DNET, urgent)",
            bytes: &[0x01, 0x09, 0x00, 0x07, 0x01, 0x0A, 0x10, 0x08],
            npdu: Npdu {
                source: Some(NetAddress { net: 7, mac: &[0x0A] }),
                priority: NetworkPriority::URGENT,
                ..local(NpduPayload::Apdu(WHO_IS))
            },
        },
        Golden {
            source: "Clause 6.2.2: remote broadcast on DNET 5 (DLEN 0), critical-equipment priority, empty APDU",
            bytes: &[0x01, 0x22, 0x00, 0x05, 0x00, 0x10],
            npdu: Npdu {
                destination: Some(NetAddress { net: 5, mac: &[] }),
                hop_count: 16,
                priority: NetworkPriority::CRITICAL_EQUIPMENT,
                ..local(NpduPayload::Apdu(&[]))
            },
        },
        Golden {
            source: "Clause 6.4.1: Who-Is-Router-To-Network without DNET",
            bytes: &[0x01, 0x80, 0x00],
            npdu: message(M::WhoIsRouterToNetwork(None)),
        },
        Golden {
            source: "Clause 6.4.1: Who-Is-Router-To-Network for DNET 5",
            bytes: &[0x01, 0x80, 0x00, 0x00, 0x05],
            npdu: message(M::WhoIsRouterToNetwork(Some(5))),
        },
        Golden {
            source: "Clause 6.4.1: Who-Is-Router-To-Network as a global broadcast (DNET 0xFFFF, hop count 255)",
            bytes: &[0x01, 0xA0, 0xFF, 0xFF, 0x00, 0xFF, 0x00],
            npdu: Npdu {
                destination: Some(NetAddress { net: 0xFFFF, mac: &[] }),
                hop_count: 255,
                ..message(M::WhoIsRouterToNetwork(None))
            },
        },
        Golden {
            source: "Clause 6.4.2: I-Am-Router-To-Network for networks 5 and 6",
            bytes: &[0x01, 0x80, 0x01, 0x00, 0x05, 0x00, 0x06],
            npdu: message(M::IAmRouterToNetwork(list(&[0x00, 0x05, 0x00, 0x06]))),
        },
        Golden {
            source: "Clause 6.4.3: I-Could-Be-Router-To-Network, DNET 5, performance index 10",
            bytes: &[0x01, 0x80, 0x02, 0x00, 0x05, 0x0A],
            npdu: message(M::ICouldBeRouterToNetwork { net: 5, performance_index: 10 }),
        },
        Golden {
            source: "Clause 6.4.4: Reject-Message-To-Network, not-directly-connected, DNET 9",
            bytes: &[0x01, 0x80, 0x03, 0x01, 0x00, 0x09],
            npdu: message(M::RejectMessageToNetwork { reason: RejectMessageReason::NOT_DIRECTLY_CONNECTED, net: 9 }),
        },
        Golden {
            source: "Clause 6.4.5: Router-Busy-To-Network for network 5",
            bytes: &[0x01, 0x80, 0x04, 0x00, 0x05],
            npdu: message(M::RouterBusyToNetwork(list(&[0x00, 0x05]))),
        },
        Golden {
            source: "Clause 6.4.5: Router-Busy-To-Network for every network (empty list)",
            bytes: &[0x01, 0x80, 0x04],
            npdu: message(M::RouterBusyToNetwork(list(&[]))),
        },
        Golden {
            source: "Clause 6.4.6: Router-Available-To-Network for networks 5 and 0xFFFE",
            bytes: &[0x01, 0x80, 0x05, 0x00, 0x05, 0xFF, 0xFE],
            npdu: message(M::RouterAvailableToNetwork(list(&[0x00, 0x05, 0xFF, 0xFE]))),
        },
        Golden {
            source: "Clause 6.4.7: Initialize-Routing-Table with two ports (port info of 0 and 2 octets), expecting reply",
            bytes: &[0x01, 0x84, 0x06, 0x02, 0x00, 0x05, 0x01, 0x00, 0x00, 0x06, 0x02, 0x02, 0xAB, 0xCD],
            npdu: Npdu {
                expecting_reply: true,
                ..message(M::InitializeRoutingTable(table(&[
                    0x02, 0x00, 0x05, 0x01, 0x00, 0x00, 0x06, 0x02, 0x02, 0xAB, 0xCD,
                ])))
            },
        },
        Golden {
            source: "Clause 6.4.7: Initialize-Routing-Table with no ports (a query for the complete table)",
            bytes: &[0x01, 0x80, 0x06, 0x00],
            npdu: message(M::InitializeRoutingTable(table(&[0x00]))),
        },
        Golden {
            source: "Clause 6.4.8: Initialize-Routing-Table-Ack with one port",
            bytes: &[0x01, 0x80, 0x07, 0x01, 0x00, 0x05, 0x01, 0x00],
            npdu: message(M::InitializeRoutingTableAck(table(&[0x01, 0x00, 0x05, 0x01, 0x00]))),
        },
        Golden {
            source: "Clause 6.4.9: Establish-Connection-To-Network, DNET 5, 60 s",
            bytes: &[0x01, 0x80, 0x08, 0x00, 0x05, 0x3C],
            npdu: message(M::EstablishConnectionToNetwork { net: 5, termination_time: 60 }),
        },
        Golden {
            source: "Clause 6.4.10: Disconnect-Connection-To-Network, DNET 5",
            bytes: &[0x01, 0x80, 0x09, 0x00, 0x05],
            npdu: message(M::DisconnectConnectionToNetwork(5)),
        },
        Golden {
            source: "Clause 6.4.19: What-Is-Network-Number",
            bytes: &[0x01, 0x80, 0x12],
            npdu: message(M::WhatIsNetworkNumber),
        },
        Golden {
            source: "Clause 6.4.20: Network-Number-Is 5, configured",
            bytes: &[0x01, 0x80, 0x13, 0x00, 0x05, 0x01],
            npdu: message(M::NetworkNumberIs { net: 5, configured: true }),
        },
        Golden {
            source: "Clause 6.4.20: Network-Number-Is 0x1234, learned",
            bytes: &[0x01, 0x80, 0x13, 0x12, 0x34, 0x00],
            npdu: message(M::NetworkNumberIs { net: 0x1234, configured: false }),
        },
        Golden {
            source: "Clause 6.2.4: proprietary message type 0x80 from vendor 260 with two octets of data",
            bytes: &[0x01, 0x80, 0x80, 0x01, 0x04, 0xDE, 0xAD],
            npdu: message(M::Other {
                message_type: NetworkMessageType(0x80),
                vendor_id: Some(260),
                data: &[0xDE, 0xAD],
            }),
        },
        Golden {
            source: "Clause 6.2.4: proprietary message type 0xFF, vendor 0, no data",
            bytes: &[0x01, 0x80, 0xFF, 0x00, 0x00],
            npdu: message(M::Other { message_type: NetworkMessageType(0xFF), vendor_id: Some(0), data: &[] }),
        },
        Golden {
            source: "Clause 6.2.4: Security-Payload (0x0B), kept as received",
            bytes: &[0x01, 0x80, 0x0B, 0x01, 0x02],
            npdu: message(M::Other {
                message_type: NetworkMessageType::SECURITY_PAYLOAD,
                vendor_id: None,
                data: &[1, 2],
            }),
        },
        Golden {
            source: "Clause 6.2.4: reserved message type 0x14, kept as received",
            bytes: &[0x01, 0x80, 0x14],
            npdu: message(M::Other { message_type: NetworkMessageType(0x14), vendor_id: None, data: &[] }),
        },
    ]
}

#[test]
fn golden_bytes_decode_to_their_fields() {
    for g in golden() {
        assert_eq!(Npdu::decode(g.bytes), Ok(g.npdu), "{}", g.source);
    }
}

#[test]
fn golden_fields_encode_to_their_bytes() {
    for g in golden() {
        assert_eq!(encode(&g.npdu), g.bytes, "{}", g.source);
    }
}

#[test]
fn golden_vectors_cover_every_network_layer_message_this_crate_interprets() {
    let types: std::collections::BTreeSet<u8> = golden()
        .iter()
        .filter_map(|g| match g.npdu.payload {
            NpduPayload::Message(m) => Some(m.message_type().0),
            NpduPayload::Apdu(_) => None,
        })
        .collect();
    for t in (0x00..=0x09).chain([0x12, 0x13, 0x80]) {
        assert!(types.contains(&t), "no vector for message type {t:#04x}");
    }
}

#[test]
fn routing_table_ports_read_back_as_encoded() {
    let ports = [
        RoutingTablePort { net: 5, port_id: 1, port_info: &[] },
        RoutingTablePort { net: 6, port_id: 2, port_info: &[0xAB, 0xCD] },
    ];
    let mut encoded = Vec::new();
    RoutingTable::encode_ports(&ports, &mut encoded).unwrap();
    assert_eq!(encoded, [0x02, 0x00, 0x05, 0x01, 0x00, 0x00, 0x06, 0x02, 0x02, 0xAB, 0xCD]);
    let t = RoutingTable::from_encoded(&encoded).unwrap();
    assert_eq!((t.len(), t.is_empty()), (2, false));
    assert_eq!(t.ports().collect::<Vec<_>>(), ports);
    let too_long_info = [RoutingTablePort { net: 1, port_id: 1, port_info: &[0; 256] }];
    assert_eq!(RoutingTable::encode_ports(&too_long_info, &mut Vec::new()), Err(EncodeError::TooLong("port info")));
}

#[test]
fn network_lists_read_back_as_network_numbers() {
    let l = list(&[0x00, 0x05, 0xFF, 0xFE]);
    assert_eq!(l.iter().collect::<Vec<_>>(), [5, 0xFFFE]);
    assert_eq!((l.len(), l.is_empty()), (2, false));
    assert!(NetworkList::from_bytes(&[0x00, 0x05, 0x00]).is_err());
}

#[test]
fn local_apdu_builds_an_npdu_without_routing_information() {
    let n = Npdu::local_apdu(RP_AV1_PV, true);
    assert_eq!(encode(&n), [&[0x01, 0x04][..], RP_AV1_PV].concat());
}

#[test]
fn malformed_npdus_are_refused_with_the_offending_octet() {
    let cases: &[(&str, &[u8], DecodeError)] = &[
        ("empty", &[], DecodeError::Truncated { at: 0, what: "the NPDU version" }),
        (
            "version 2",
            &[0x02, 0x00, 0x10, 0x08],
            DecodeError::OutOfRange { at: 0, what: "the NPDU protocol version (1)" },
        ),
        (
            "version 0 (an ASHRAE 135-1995 draft)",
            &[0x00, 0x00, 0x10, 0x08],
            DecodeError::OutOfRange { at: 0, what: "the NPDU protocol version (1)" },
        ),
        (
            "reserved control bit 6",
            &[0x01, 0x40, 0x10, 0x08],
            DecodeError::InvalidTag { at: 1, what: "an NPDU control octet with reserved bits 6 and 4 clear" },
        ),
        (
            "reserved control bit 4",
            &[0x01, 0x10, 0x10, 0x08],
            DecodeError::InvalidTag { at: 1, what: "an NPDU control octet with reserved bits 6 and 4 clear" },
        ),
        (
            "SNET 0xFFFF",
            &[0x01, 0x08, 0xFF, 0xFF, 0x01, 0x0A, 0x10, 0x08],
            DecodeError::OutOfRange { at: 2, what: "SNET (not 0xFFFF) with SLEN above 0" },
        ),
        (
            "SLEN 0",
            &[0x01, 0x08, 0x00, 0x07, 0x00, 0x10, 0x08],
            DecodeError::OutOfRange { at: 2, what: "SNET (not 0xFFFF) with SLEN above 0" },
        ),
        (
            "SNET 0xFFFF after a DNET",
            &[0x01, 0x28, 0x00, 0x05, 0x00, 0xFF, 0xFF, 0x01, 0x0A, 0xFF],
            DecodeError::OutOfRange { at: 5, what: "SNET (not 0xFFFF) with SLEN above 0" },
        ),
        (
            "DLEN beyond the data",
            &[0x01, 0x20, 0x00, 0x05, 0x06, 0xC0, 0xA8],
            DecodeError::Truncated { at: 7, what: "DADR" },
        ),
        (
            "no hop count",
            &[0x01, 0x20, 0x00, 0x05, 0x01, 0x0A],
            DecodeError::Truncated { at: 6, what: "the hop count" },
        ),
        ("no message type", &[0x01, 0x80], DecodeError::Truncated { at: 2, what: "the network message type" }),
        (
            "Who-Is-Router-To-Network with half a DNET",
            &[0x01, 0x80, 0x00, 0x00],
            DecodeError::Truncated { at: 4, what: "DNET" },
        ),
        (
            "Who-Is-Router-To-Network with two DNETs",
            &[0x01, 0x80, 0x00, 0x00, 0x05, 0x00, 0x06],
            DecodeError::TrailingData { at: 5 },
        ),
        (
            "I-Am-Router-To-Network with no network",
            &[0x01, 0x80, 0x01],
            DecodeError::Truncated { at: 3, what: "at least one DNET" },
        ),
        // The offset of an odd list is its dangling octet.
        (
            "I-Am-Router-To-Network with an odd list",
            &[0x01, 0x80, 0x01, 0x00, 0x05, 0x00],
            DecodeError::InvalidTag { at: 5, what: "a list of 2-octet network numbers" },
        ),
        (
            "Router-Busy-To-Network with an odd list",
            &[0x01, 0x80, 0x04, 0x00],
            DecodeError::InvalidTag { at: 3, what: "a list of 2-octet network numbers" },
        ),
        (
            "I-Could-Be-Router-To-Network without performance index",
            &[0x01, 0x80, 0x02, 0x00, 0x05],
            DecodeError::Truncated { at: 5, what: "the performance index" },
        ),
        (
            "Reject-Message-To-Network without DNET",
            &[0x01, 0x80, 0x03, 0x01],
            DecodeError::Truncated { at: 4, what: "DNET" },
        ),
        (
            "Initialize-Routing-Table promising two ports, carrying one",
            &[0x01, 0x80, 0x06, 0x02, 0x00, 0x05, 0x01, 0x00],
            DecodeError::Truncated { at: 8, what: "a routing table entry" },
        ),
        (
            "Initialize-Routing-Table port info beyond the data",
            &[0x01, 0x80, 0x06, 0x01, 0x00, 0x05, 0x01, 0x03, 0xAB],
            DecodeError::Truncated { at: 9, what: "port info" },
        ),
        (
            "Initialize-Routing-Table-Ack with octets after its ports",
            &[0x01, 0x80, 0x07, 0x00, 0x00],
            DecodeError::TrailingData { at: 4 },
        ),
        (
            "Establish-Connection-To-Network without termination time",
            &[0x01, 0x80, 0x08, 0x00, 0x05],
            DecodeError::Truncated { at: 5, what: "the termination time" },
        ),
        (
            "Disconnect-Connection-To-Network with an extra octet",
            &[0x01, 0x80, 0x09, 0x00, 0x05, 0x00],
            DecodeError::TrailingData { at: 5 },
        ),
        ("What-Is-Network-Number with data", &[0x01, 0x80, 0x12, 0x00], DecodeError::TrailingData { at: 3 }),
        (
            "Network-Number-Is with flag 2",
            &[0x01, 0x80, 0x13, 0x00, 0x05, 0x02],
            DecodeError::OutOfRange { at: 5, what: "the learned/configured flag" },
        ),
        (
            "proprietary message without its vendor ID",
            &[0x01, 0x80, 0x80, 0x01],
            DecodeError::Truncated { at: 4, what: "the vendor ID" },
        ),
    ];
    for (what, bytes, expected) in cases {
        assert_eq!(Npdu::decode(bytes), Err(*expected), "{what}");
    }
}

#[test]
fn unencodable_addresses_are_refused_and_leave_the_buffer_as_it_was() {
    let mac = [0u8; 256];
    let cases: &[(Npdu<'_>, EncodeError)] = &[
        (
            Npdu { source: Some(NetAddress { net: 0xFFFF, mac: &[1] }), ..local(NpduPayload::Apdu(WHO_IS)) },
            EncodeError::OutOfRange("SNET/SADR"),
        ),
        (
            Npdu {
                destination: Some(NetAddress { net: 5, mac: &[] }),
                source: Some(NetAddress { net: 7, mac: &[] }),
                ..local(NpduPayload::Apdu(WHO_IS))
            },
            EncodeError::OutOfRange("SNET/SADR"),
        ),
        (
            Npdu { destination: Some(NetAddress { net: 5, mac: &mac }), ..local(NpduPayload::Apdu(WHO_IS)) },
            EncodeError::TooLong("DADR"),
        ),
        (
            Npdu { source: Some(NetAddress { net: 5, mac: &mac }), ..local(NpduPayload::Apdu(WHO_IS)) },
            EncodeError::TooLong("SADR"),
        ),
    ];
    for (npdu, expected) in cases {
        let mut out = vec![0xAA];
        assert_eq!(npdu.encode(&mut out), Err(*expected), "{npdu:?}");
        assert_eq!(out, [0xAA], "{npdu:?}");
    }
}

/// Every octet of an NPDU is kept by decoding (reserved bits are refused,
/// not dropped), so whatever decodes re-encodes to the same octets.
#[test]
fn every_prefix_of_a_golden_vector_is_refused_or_re_encodes_to_itself() {
    for g in golden() {
        for n in 0..g.bytes.len() {
            let prefix = &g.bytes[..n];
            if let Ok(npdu) = Npdu::decode(prefix) {
                assert_eq!(encode(&npdu), prefix, "{}: prefix of {n}", g.source);
            }
        }
        // The header (up to the APDU, or through the message type) never
        // decodes short.
        let header = 2 + header_octets(&g.npdu) + matches!(g.npdu.payload, NpduPayload::Message(_)) as usize;
        for n in 0..header {
            assert!(
                matches!(Npdu::decode(&g.bytes[..n]), Err(DecodeError::Truncated { .. })),
                "{}: prefix of {n}",
                g.source
            );
        }
    }
}

/// Octets of DNET/DLEN/DADR, SNET/SLEN/SADR and hop count.
fn header_octets(n: &Npdu<'_>) -> usize {
    n.destination.map_or(0, |d| 4 + d.mac.len()) + n.source.map_or(0, |s| 3 + s.mac.len())
}

proptest! {
    #[test]
    fn every_npdu_round_trips(parts in npdu_parts()) {
        let npdu = parts.view();
        let mut bytes = Vec::new();
        npdu.encode(&mut bytes).unwrap();
        prop_assert_eq!(Npdu::decode(&bytes), Ok(npdu));
    }

    #[test]
    fn whatever_decodes_re_encodes_to_the_same_octets(
        data in proptest::collection::vec(any::<u8>(), 0..24)
    ) {
        if let Ok(npdu) = Npdu::decode(&data) {
            prop_assert_eq!(encode(&npdu), data);
        }
    }

    #[test]
    fn valid_headers_with_arbitrary_messages_never_panic(
        control in prop_oneof![Just(0x80u8), Just(0x84u8)],
        message in proptest::collection::vec(any::<u8>(), 0..24)
    ) {
        let data = [&[0x01, control][..], &message].concat();
        if let Ok(npdu) = Npdu::decode(&data) {
            prop_assert_eq!(encode(&npdu), data);
        }
    }
}

#[test]
fn messages_that_would_not_decode_back_are_refused_by_the_encoder() {
    use bacnet::enums::NetworkMessageType;
    use bacnet::npdu::{NetworkList, NetworkMessage, Npdu, NpduPayload};
    let refuse = |m: NetworkMessage<'_>| {
        let mut n = Npdu::local_apdu(&[], false);
        n.payload = NpduPayload::Message(m);
        let mut out = vec![0xAA];
        assert!(n.encode(&mut out).is_err(), "{m:?}");
        assert_eq!(out, [0xAA], "nothing half-written");
    };
    refuse(NetworkMessage::IAmRouterToNetwork(NetworkList::from_bytes(&[]).unwrap()));
    refuse(NetworkMessage::Other {
        message_type: NetworkMessageType::WHO_IS_ROUTER_TO_NETWORK,
        vendor_id: None,
        data: &[],
    });
    refuse(NetworkMessage::Other { message_type: NetworkMessageType(0x80), vendor_id: None, data: &[] });
    refuse(NetworkMessage::Other { message_type: NetworkMessageType(0x14), vendor_id: Some(7), data: &[] });
}
