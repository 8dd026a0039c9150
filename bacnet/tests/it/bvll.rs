//! BACnet/IP BVLL (Annex J.2): the golden quartet for every BVLC function,
//! malformed datagrams, round trips, and every captured frame decoded
//! BVLL → NPDU → APDU and re-encoded to identical octets.
//!
//! Vector provenance is given with each vector: the message formats of
//! Annex J.2.1–J.2.14 (hand-derived, with NPDUs bacnet-stack 1.6 sent in
//! `shared/vectors/*.pcap*`), and the BACnet/IP frames bacpypes3 and
//! rusty-bacnet exchanged on loopback (`vectors/captured.txt`, see
//! `vectors.rs`).

use crate::strategies::*;
use crate::vectors::{self, Frame};
use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest};
use bacnet::bvll::{self, BdtEntry, Bvll, FdtEntry, Table};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::{BvlcFunction, BvlcResultCode, DecodeError, EncodeError};
use core::net::{Ipv4Addr, SocketAddrV4};
use proptest::prelude::*;

fn encode(b: &Bvll<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    b.encode(&mut out).unwrap();
    out
}

fn table(b: &'static [u8]) -> Table<'static, 10> {
    Table::from_bytes(b, 4).unwrap()
}

const fn bip(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), port)
}

/// Who-Is as a global broadcast, as bacnet-stack 1.6 sent it on BACnet
/// Ethernet (ethernet-bacnet-stack-whois-iam.pcapng frame 1).
const NPDU_WHO_IS_GLOBAL: &[u8] = &[0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08];
/// ReadProperty analog-value,1 present-value as bacnet-stack 1.6 sent it on
/// MS/TP (mstp-bacnet-stack-rp-short.pcap frame 4).
const NPDU_RP_AV1_PV: &[u8] = &[0x01, 0x04, 0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
/// Two BDT entries: 192.168.1.1:47808 and 192.168.2.1:47808, both with an
/// all-ones mask (Annex J.4.3.2: two-hop distribution).
const BDT_TWO: &[u8] = &[
    0xC0, 0xA8, 0x01, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF, //
    0xC0, 0xA8, 0x02, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF,
];
/// One FDT entry: 10.0.0.7:47809, TTL 60 s, 90 s remaining (TTL plus the
/// 30 s grace period of Annex J.5.2.3).
const FDT_ONE: &[u8] = &[0x0A, 0x00, 0x00, 0x07, 0xBA, 0xC1, 0x00, 0x3C, 0x00, 0x5A];

struct Golden {
    source: &'static str,
    bytes: &'static [u8],
    bvll: Bvll<'static>,
}

fn golden() -> Vec<Golden> {
    vec![
        Golden {
            source: "Annex J.2.1: BVLC-Result, Successful-Completion",
            bytes: &[0x81, 0x00, 0x00, 0x06, 0x00, 0x00],
            bvll: Bvll::Result(BvlcResultCode::SUCCESSFUL_COMPLETION),
        },
        Golden {
            source: "Annex J.2.1: BVLC-Result, Register-Foreign-Device-NAK",
            bytes: &[0x81, 0x00, 0x00, 0x06, 0x00, 0x30],
            bvll: Bvll::Result(BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK),
        },
        Golden {
            source: "Annex J.2.2: Write-Broadcast-Distribution-Table with two entries",
            bytes: &[
                0x81, 0x01, 0x00, 0x18, //
                0xC0, 0xA8, 0x01, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF, //
                0xC0, 0xA8, 0x02, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF,
            ],
            bvll: Bvll::WriteBroadcastDistributionTable(table(BDT_TWO)),
        },
        Golden {
            source: "Annex J.2.3: Read-Broadcast-Distribution-Table",
            bytes: &[0x81, 0x02, 0x00, 0x04],
            bvll: Bvll::ReadBroadcastDistributionTable,
        },
        Golden {
            source: "Annex J.2.4: Read-Broadcast-Distribution-Table-Ack with two entries",
            bytes: &[
                0x81, 0x03, 0x00, 0x18, //
                0xC0, 0xA8, 0x01, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF, //
                0xC0, 0xA8, 0x02, 0x01, 0xBA, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF,
            ],
            bvll: Bvll::ReadBroadcastDistributionTableAck(table(BDT_TWO)),
        },
        Golden {
            source: "Annex J.2.4: Read-Broadcast-Distribution-Table-Ack with an empty table",
            bytes: &[0x81, 0x03, 0x00, 0x04],
            bvll: Bvll::ReadBroadcastDistributionTableAck(table(&[])),
        },
        Golden {
            source: "Annex J.2.5: Forwarded-NPDU from 192.168.1.10:47808 carrying bacnet-stack's global Who-Is",
            bytes: &[
                0x81, 0x04, 0x00, 0x12, 0xC0, 0xA8, 0x01, 0x0A, 0xBA, 0xC0, //
                0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08,
            ],
            bvll: Bvll::ForwardedNpdu { original_source: bip(192, 168, 1, 10, 47808), npdu: NPDU_WHO_IS_GLOBAL },
        },
        Golden {
            source: "Annex J.2.6: Register-Foreign-Device, TTL 60 s",
            bytes: &[0x81, 0x05, 0x00, 0x06, 0x00, 0x3C],
            bvll: Bvll::RegisterForeignDevice { ttl: 60 },
        },
        Golden {
            source: "Annex J.2.7: Read-Foreign-Device-Table",
            bytes: &[0x81, 0x06, 0x00, 0x04],
            bvll: Bvll::ReadForeignDeviceTable,
        },
        Golden {
            source: "Annex J.2.8: Read-Foreign-Device-Table-Ack with one entry",
            bytes: &[0x81, 0x07, 0x00, 0x0E, 0x0A, 0x00, 0x00, 0x07, 0xBA, 0xC1, 0x00, 0x3C, 0x00, 0x5A],
            bvll: Bvll::ReadForeignDeviceTableAck(table(FDT_ONE)),
        },
        Golden {
            source: "Annex J.2.9: Delete-Foreign-Device-Table-Entry for 10.0.0.7:47809",
            bytes: &[0x81, 0x08, 0x00, 0x0A, 0x0A, 0x00, 0x00, 0x07, 0xBA, 0xC1],
            bvll: Bvll::DeleteForeignDeviceTableEntry(bip(10, 0, 0, 7, 47809)),
        },
        Golden {
            source: "Annex J.2.10: Distribute-Broadcast-To-Network carrying bacnet-stack's global Who-Is",
            bytes: &[0x81, 0x09, 0x00, 0x0C, 0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08],
            bvll: Bvll::DistributeBroadcastToNetwork(NPDU_WHO_IS_GLOBAL),
        },
        Golden {
            source: "Annex J.2.11: Original-Unicast-NPDU carrying bacnet-stack's MS/TP ReadProperty NPDU",
            bytes: &[
                0x81, 0x0A, 0x00, 0x11, //
                0x01, 0x04, 0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55,
            ],
            bvll: Bvll::OriginalUnicastNpdu(NPDU_RP_AV1_PV),
        },
        Golden {
            source: "Annex J.2.12: Original-Broadcast-NPDU carrying bacnet-stack's global Who-Is",
            bytes: &[0x81, 0x0B, 0x00, 0x0C, 0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08],
            bvll: Bvll::OriginalBroadcastNpdu(NPDU_WHO_IS_GLOBAL),
        },
        Golden {
            source: "Annex J.2.13: Secure-BVLL, payload kept as received",
            bytes: &[0x81, 0x0C, 0x00, 0x08, 0xDE, 0xAD, 0xBE, 0xEF],
            bvll: Bvll::SecureBvll(&[0xDE, 0xAD, 0xBE, 0xEF]),
        },
    ]
}

#[test]
fn golden_bytes_decode_to_their_fields() {
    for g in golden() {
        assert_eq!(Bvll::decode(g.bytes), Ok(g.bvll), "{}", g.source);
    }
}

#[test]
fn golden_fields_encode_to_their_bytes() {
    for g in golden() {
        assert_eq!(encode(&g.bvll), g.bytes, "{}", g.source);
        assert_eq!(g.bvll.function().0, g.bytes[1], "{}", g.source);
    }
}

#[test]
fn golden_vectors_cover_every_bvlc_function() {
    let functions: std::collections::BTreeSet<u8> = golden().iter().map(|g| g.bytes[1]).collect();
    let known: std::collections::BTreeSet<u8> = BvlcFunction::KNOWN.iter().map(|(f, _)| f.0).collect();
    assert_eq!(functions, known);
}

#[test]
fn table_entries_read_back_as_bdt_and_fdt_entries() {
    let bdt = [
        BdtEntry { address: bip(192, 168, 1, 1, 47808), mask: Ipv4Addr::BROADCAST },
        BdtEntry { address: bip(192, 168, 2, 1, 47808), mask: Ipv4Addr::BROADCAST },
    ];
    assert_eq!(table(BDT_TWO).bdt_entries().collect::<Vec<_>>(), bdt);
    let mut encoded = Vec::new();
    bvll::encode_bdt(&bdt, &mut encoded);
    assert_eq!(encoded, BDT_TWO);

    let fdt = [FdtEntry { address: bip(10, 0, 0, 7, 47809), ttl: 60, remaining: 90 }];
    assert_eq!(table(FDT_ONE).fdt_entries().collect::<Vec<_>>(), fdt);
    let mut encoded = Vec::new();
    bvll::encode_fdt(&fdt, &mut encoded);
    assert_eq!(encoded, FDT_ONE);
    assert_eq!((table(FDT_ONE).len(), table(FDT_ONE).is_empty(), table(&[]).is_empty()), (1, false, true));
}

#[test]
fn the_npdu_is_offered_by_exactly_the_functions_that_carry_one() {
    for g in golden() {
        let carries = matches!(g.bytes[1], 0x04 | 0x09 | 0x0A | 0x0B);
        assert_eq!(g.bvll.npdu().is_some(), carries, "{}", g.source);
    }
}

#[test]
fn malformed_datagrams_are_refused_with_the_offending_octet() {
    let length_mismatch = DecodeError::Inconsistent { at: 2, what: "the BVLC length differs from the datagram size" };
    let odd_table = DecodeError::InvalidTag { at: 4, what: "a table of whole entries" };
    let cases: &[(&str, &[u8], DecodeError)] = &[
        ("length field one more than the datagram", &[0x81, 0x0A, 0x00, 0x07, 0x01, 0x00], length_mismatch),
        ("length field one less than the datagram", &[0x81, 0x0A, 0x00, 0x05, 0x01, 0x00], length_mismatch),
        ("length field below the header size", &[0x81, 0x0A, 0x00, 0x02], length_mismatch),
        ("length field zero", &[0x81, 0x0B, 0x00, 0x00, 0x01, 0x00, 0x10, 0x08], length_mismatch),
        (
            "BVLC type 0x82 (BACnet/IPv6, Annex U)",
            &[0x82, 0x0A, 0x00, 0x06, 0x01, 0x00],
            DecodeError::InvalidTag { at: 0, what: "BVLC type 0x81 (BACnet/IP)" },
        ),
        (
            "BVLC type 0x00",
            &[0x00, 0x0A, 0x00, 0x06, 0x01, 0x00],
            DecodeError::InvalidTag { at: 0, what: "BVLC type 0x81 (BACnet/IP)" },
        ),
        (
            "unassigned function 0x0D",
            &[0x81, 0x0D, 0x00, 0x04],
            DecodeError::InvalidTag { at: 1, what: "a BVLC function 0x00..=0x0C" },
        ),
        ("Write-BDT with 9 octets of entries", &[0x81, 0x01, 0x00, 0x0D, 0, 0, 0, 0, 0, 0, 0, 0, 0], odd_table),
        ("Write-BDT with 11 octets of entries", &[0x81, 0x01, 0x00, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], odd_table),
        ("Read-BDT-Ack with 1 octet", &[0x81, 0x03, 0x00, 0x05, 0x00], odd_table),
        (
            "Read-FDT-Ack with 15 octets",
            &[0x81, 0x07, 0x00, 0x13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            odd_table,
        ),
        (
            "BVLC-Result without its code",
            &[0x81, 0x00, 0x00, 0x04],
            DecodeError::Truncated { at: 4, what: "the result code" },
        ),
        (
            "BVLC-Result with half a code",
            &[0x81, 0x00, 0x00, 0x05, 0x00],
            DecodeError::Truncated { at: 5, what: "the result code" },
        ),
        (
            "BVLC-Result with an extra octet",
            &[0x81, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00],
            DecodeError::TrailingData { at: 6 },
        ),
        ("Read-BDT with data", &[0x81, 0x02, 0x00, 0x05, 0x00], DecodeError::TrailingData { at: 4 }),
        ("Read-FDT with data", &[0x81, 0x06, 0x00, 0x05, 0x00], DecodeError::TrailingData { at: 4 }),
        (
            "Register-Foreign-Device with half a TTL",
            &[0x81, 0x05, 0x00, 0x05, 0x00],
            DecodeError::Truncated { at: 5, what: "the time-to-live" },
        ),
        (
            "Register-Foreign-Device with an extra octet",
            &[0x81, 0x05, 0x00, 0x07, 0x00, 0x3C, 0x00],
            DecodeError::TrailingData { at: 6 },
        ),
        (
            "Forwarded-NPDU with a 5-octet source",
            &[0x81, 0x04, 0x00, 0x09, 0xC0, 0xA8, 0x01, 0x0A, 0xBA],
            DecodeError::Truncated { at: 9, what: "the original source B/IP address" },
        ),
        (
            "Delete-FDT-Entry with a 4-octet address",
            &[0x81, 0x08, 0x00, 0x08, 0x0A, 0x00, 0x00, 0x07],
            DecodeError::Truncated { at: 8, what: "the FDT entry's B/IP address" },
        ),
        (
            "Delete-FDT-Entry with an extra octet",
            &[0x81, 0x08, 0x00, 0x0B, 0x0A, 0x00, 0x00, 0x07, 0xBA, 0xC1, 0x00],
            DecodeError::TrailingData { at: 10 },
        ),
    ];
    for (what, bytes, expected) in cases {
        assert_eq!(Bvll::decode(bytes), Err(*expected), "{what}");
    }
}

#[test]
fn every_prefix_of_a_golden_vector_is_refused() {
    for g in golden() {
        for n in 0..g.bytes.len() {
            let e = Bvll::decode(&g.bytes[..n]).unwrap_err();
            if n < bvll::HEADER_LEN {
                assert!(
                    matches!(e, DecodeError::Truncated { at, .. } if at == n),
                    "{}: prefix of {n}: {e:?}",
                    g.source
                );
            } else {
                assert!(matches!(e, DecodeError::Inconsistent { at: 2, .. }), "{}: prefix of {n}: {e:?}", g.source);
            }
        }
    }
}

#[test]
fn a_message_longer_than_the_length_field_allows_is_refused_and_leaves_the_buffer_as_it_was() {
    let npdu = vec![0u8; 65_536 - bvll::HEADER_LEN];
    let mut out = vec![0xAA];
    assert_eq!(Bvll::OriginalUnicastNpdu(&npdu).encode(&mut out), Err(EncodeError::TooLong("BVLL message")));
    assert_eq!(out, [0xAA]);
    let largest = &npdu[1..];
    Bvll::OriginalUnicastNpdu(largest).encode(&mut out).unwrap();
    assert_eq!(out[1..5], [0x81, 0x0A, 0xFF, 0xFF]);
    assert_eq!(Bvll::decode(&out[1..]), Ok(Bvll::OriginalUnicastNpdu(largest)));
}

/// A datagram decoded as far as it goes: the BVLL, and the NPDU and APDU when
/// it carries them.
fn decode_datagram(bytes: &[u8]) -> Result<(Bvll<'_>, Option<Npdu<'_>>, Option<Apdu<'_>>), DecodeError> {
    let bvll = Bvll::decode(bytes)?;
    let Some(npdu_bytes) = bvll.npdu() else { return Ok((bvll, None, None)) };
    let npdu = Npdu::decode(npdu_bytes)?;
    let apdu = match npdu.payload {
        NpduPayload::Apdu(a) => Some(Apdu::decode(a)?),
        NpduPayload::Message(_) => None,
    };
    Ok((bvll, Some(npdu), apdu))
}

/// Re-encode each layer from its decoded fields, innermost first, each outer
/// layer carrying the re-encoded inner one.
fn encode_datagram(bvll: &Bvll<'_>, npdu: Option<&Npdu<'_>>, apdu: Option<&Apdu<'_>>) -> Vec<u8> {
    let apdu_bytes = apdu.map(crate::apdu::encode);
    let npdu_bytes = npdu.map(|n| {
        let n = match &apdu_bytes {
            Some(a) => Npdu { payload: NpduPayload::Apdu(a), ..*n },
            None => *n,
        };
        crate::npdu::encode(&n)
    });
    let bvll = match (&npdu_bytes, *bvll) {
        (Some(n), Bvll::ForwardedNpdu { original_source, .. }) => Bvll::ForwardedNpdu { original_source, npdu: n },
        (Some(n), Bvll::DistributeBroadcastToNetwork(_)) => Bvll::DistributeBroadcastToNetwork(n),
        (Some(n), Bvll::OriginalUnicastNpdu(_)) => Bvll::OriginalUnicastNpdu(n),
        (Some(n), Bvll::OriginalBroadcastNpdu(_)) => Bvll::OriginalBroadcastNpdu(n),
        (_, other) => other,
    };
    encode(&bvll)
}

fn captured_frames(layer: &str) -> Vec<Frame> {
    vectors::captured().into_iter().filter(|f| f.layer == layer).collect()
}

#[test]
fn every_captured_frame_decodes_through_bvll_npdu_apdu_and_re_encodes_identically() {
    let frames = vectors::captured();
    assert!(frames.len() >= 20, "only {} captured frames", frames.len());
    let mut apdu_types = std::collections::BTreeSet::new();
    let mut segmented = 0;
    for f in frames.iter().filter(|f| f.layer == "bvll") {
        let (bvll, npdu, apdu) = decode_datagram(&f.bytes).unwrap_or_else(|e| panic!("{} ({}): {e}", f.name, f.tshark));
        assert!(npdu.is_some(), "{}: a BVLL message without an NPDU", f.name);
        if let Some(a) = &apdu {
            apdu_types.insert(crate::apdu::encode(a)[0] >> 4);
            segmented += matches!(
                a,
                Apdu::ConfirmedRequest(ConfirmedRequest { segment: Some(_), .. })
                    | Apdu::ComplexAck(ComplexAck { segment: Some(_), .. })
            ) as usize;
        }
        assert_eq!(
            encode_datagram(&bvll, npdu.as_ref(), apdu.as_ref()),
            f.bytes,
            "{} ({}) from {}",
            f.name,
            f.tshark,
            f.source
        );
    }
    // All eight PDU types occur in the capture, segmented requests and
    // ComplexACKs among them (bacpypes3 segments ReadPropertyMultiple-ACKs
    // for a 206-octet max-APDU).
    assert_eq!(apdu_types.into_iter().collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    assert!(segmented >= 2, "only {segmented} segmented APDUs captured");
}

#[test]
fn captured_frames_at_the_npdu_layer_round_trip_too() {
    for f in captured_frames("npdu") {
        let npdu = Npdu::decode(&f.bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(crate::npdu::encode(&npdu), f.bytes, "{}", f.name);
    }
    for f in captured_frames("apdu") {
        let apdu = Apdu::decode(&f.bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(crate::apdu::encode(&apdu), f.bytes, "{}", f.name);
    }
}

#[test]
fn a_captured_confirmed_request_reads_back_its_header_fields() {
    let frames = vectors::captured();
    let Some(rp) = frames.iter().find(|f| f.tshark.starts_with("Confirmed-REQ") && f.tshark.contains("readProperty"))
    else {
        panic!("no captured ReadProperty request");
    };
    let (bvll, npdu, apdu) = decode_datagram(&rp.bytes).unwrap();
    assert_eq!(bvll.function(), BvlcFunction::ORIGINAL_UNICAST_NPDU, "{}", rp.name);
    assert!(npdu.unwrap().expecting_reply, "{}", rp.name);
    let Some(Apdu::ConfirmedRequest(ConfirmedRequest { service, segment: None, .. })) = apdu else {
        panic!("{}: {apdu:?}", rp.name)
    };
    assert_eq!(service, bacnet::ConfirmedServiceChoice::READ_PROPERTY);
    let ack = frames.iter().find(|f| f.tshark.starts_with("Complex-ACK") && f.tshark.contains("readProperty"));
    let (_, _, apdu) = decode_datagram(&ack.expect("a captured ReadProperty-ACK").bytes).unwrap();
    assert!(matches!(apdu, Some(Apdu::ComplexAck(ComplexAck { segment: None, .. }))));
}

proptest! {
    #[test]
    fn every_bvll_message_round_trips(parts in bvll_parts()) {
        let b = parts.view();
        let bytes = encode(&b);
        prop_assert_eq!(Bvll::decode(&bytes), Ok(b));
    }

    /// Decoding keeps every octet, so whatever decodes re-encodes to the
    /// same datagram.
    #[test]
    fn whatever_decodes_re_encodes_to_the_same_octets(
        function in 0u8..16,
        body in proptest::collection::vec(any::<u8>(), 0..32),
        length_delta in prop_oneof![4 => Just(0i32), 1 => -2i32..3],
    ) {
        let len = (4 + body.len()) as i32 + length_delta;
        let mut data = vec![0x81, function];
        data.extend_from_slice(&(len.max(0) as u16).to_be_bytes());
        data.extend_from_slice(&body);
        if let Ok(b) = Bvll::decode(&data) {
            prop_assert_eq!(encode(&b), data);
        }
    }

    #[test]
    fn whole_datagrams_round_trip_through_every_layer(
        function in prop_oneof![Just(0x0Au8), Just(0x0B), Just(0x09)],
        npdu in npdu_parts(),
        apdu in apdu_parts(),
    ) {
        let apdu_bytes = crate::apdu::encode(&apdu.view());
        let mut n = npdu.view();
        if let NpduPayload::Apdu(_) = n.payload {
            n.payload = NpduPayload::Apdu(&apdu_bytes);
        }
        let npdu_bytes = crate::npdu::encode(&n);
        let b = match function {
            0x0A => Bvll::OriginalUnicastNpdu(&npdu_bytes),
            0x0B => Bvll::OriginalBroadcastNpdu(&npdu_bytes),
            _ => Bvll::DistributeBroadcastToNetwork(&npdu_bytes),
        };
        let bytes = encode(&b);
        let (b2, n2, a2) = decode_datagram(&bytes).unwrap();
        prop_assert_eq!(b2, b);
        prop_assert_eq!(n2, Some(n));
        prop_assert_eq!(a2, matches!(n.payload, NpduPayload::Apdu(_)).then(|| apdu.view()));
        prop_assert_eq!(encode_datagram(&b2, n2.as_ref(), a2.as_ref()), bytes);
    }
}
