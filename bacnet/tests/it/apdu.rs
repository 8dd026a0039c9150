//! APDU headers (Clause 20.1): the golden quartet for all eight PDU types,
//! the segmentation fields, malformed headers, and round trips.
//!
//! Vector provenance is given with each vector: ASHRAE 135 Annex F
//! ("Examples of APDU Encoding"), frames bacnet-stack 1.6 sent on MS/TP and
//! BACnet Ethernet (`shared/vectors/*.pcap*`, dissected by tshark 4.0.17), and
//! headers derived by hand from the field layout of Clause 20.1.2–20.1.9
//! where neither has an example (segmented PDUs, SegmentACK, Reject, Abort).
//! Whole captured BACnet/IP datagrams are covered in `bvll.rs`.

use crate::strategies::*;
use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest, MaxApdu, MaxSegments, SegmentInfo};
use bacnet::{AbortReason, ConfirmedServiceChoice as C, DecodeError, RejectReason, UnconfirmedServiceChoice as U};
use proptest::prelude::*;

pub(crate) fn encode(a: &Apdu<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    a.encode(&mut out);
    out
}

/// The body an APDU carries, for the PDU types that carry one.
pub(crate) fn body<'a>(a: &Apdu<'a>) -> Option<&'a [u8]> {
    match a {
        Apdu::ConfirmedRequest(c) => Some(c.body),
        Apdu::UnconfirmedRequest { body, .. } | Apdu::Error { body, .. } => Some(body),
        Apdu::ComplexAck(c) => Some(c.body),
        _ => None,
    }
}

struct Golden {
    source: &'static str,
    bytes: &'static [u8],
    apdu: Apdu<'static>,
}

const fn unsegmented(max_apdu: MaxApdu, invoke_id: u8, service: C, body: &'static [u8]) -> Apdu<'static> {
    Apdu::ConfirmedRequest(ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu,
        invoke_id,
        service,
        body,
    })
}

const fn complex_ack(invoke_id: u8, service: C, body: &'static [u8]) -> Apdu<'static> {
    Apdu::ComplexAck(ComplexAck { segment: None, invoke_id, service, body })
}

const RP_AI5_PV: &[u8] = &[0x0C, 0x00, 0x00, 0x00, 0x05, 0x19, 0x55];
const RP_AI5_PV_ACK: &[u8] = &[0x0C, 0x00, 0x00, 0x00, 0x05, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x90, 0x99, 0x9A, 0x3F];
const WP_AV1_PV_180: &[u8] = &[0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x43, 0x34, 0x00, 0x00, 0x3F];
const RP_AV1_PV: &[u8] = &[0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
const RP_AV1_PV_ACK_42: &[u8] = &[0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x28, 0x00, 0x00, 0x3F];
const I_AM_8001: &[u8] = &[0xC4, 0x02, 0x00, 0x1F, 0x41, 0x22, 0x05, 0xC4, 0x91, 0x03, 0x22, 0x01, 0x04];
const RPM_AI16_PV_RELIABILITY: &[u8] = &[0x0C, 0x00, 0x00, 0x00, 0x10, 0x1E, 0x09, 0x55, 0x09, 0x67, 0x1F];

fn golden() -> Vec<Golden> {
    let seg = |sequence_number, proposed_window_size, more_follows| {
        Some(SegmentInfo { sequence_number, proposed_window_size, more_follows })
    };
    vec![
        Golden {
            source: "ASHRAE 135 Annex F.3.5, ReadProperty request",
            bytes: &[0x00, 0x00, 0x01, 0x0C, 0x0C, 0x00, 0x00, 0x00, 0x05, 0x19, 0x55],
            apdu: unsegmented(MaxApdu::UP_TO_50, 1, C::READ_PROPERTY, RP_AI5_PV),
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.5, ReadProperty-ACK",
            bytes: &[
                0x30, 0x01, 0x0C, 0x0C, 0x00, 0x00, 0x00, 0x05, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x90, 0x99, 0x9A, 0x3F,
            ],
            apdu: complex_ack(1, C::READ_PROPERTY, RP_AI5_PV_ACK),
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.7, ReadPropertyMultiple request",
            bytes: &[0x00, 0x04, 0xF1, 0x0E, 0x0C, 0x00, 0x00, 0x00, 0x10, 0x1E, 0x09, 0x55, 0x09, 0x67, 0x1F],
            apdu: unsegmented(MaxApdu::UP_TO_1024, 241, C::READ_PROPERTY_MULTIPLE, RPM_AI16_PV_RELIABILITY),
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.8, ReadRange request header (segmented-response-accepted), body cut after the property identifier",
            bytes: &[0x02, 0x02, 0x01, 0x1A, 0x0C, 0x05, 0x00, 0x00, 0x01, 0x19, 0x83],
            apdu: Apdu::ConfirmedRequest(ConfirmedRequest {
                segment: None,
                segmented_response_accepted: true,
                max_segments: MaxSegments::UNSPECIFIED,
                max_apdu: MaxApdu::UP_TO_206,
                invoke_id: 1,
                service: C::READ_RANGE,
                body: &[0x0C, 0x05, 0x00, 0x00, 0x01, 0x19, 0x83],
            }),
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.9, WriteProperty request",
            bytes: &[
                0x00, 0x04, 0x59, 0x0F, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x43, 0x34, 0x00, 0x00,
                0x3F,
            ],
            apdu: unsegmented(MaxApdu::UP_TO_1024, 89, C::WRITE_PROPERTY, WP_AV1_PV_180),
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.9, WriteProperty SimpleACK",
            bytes: &[0x20, 0x59, 0x0F],
            apdu: Apdu::SimpleAck { invoke_id: 89, service: C::WRITE_PROPERTY },
        },
        Golden {
            source: "ASHRAE 135 Annex F.3.3, CreateObject-ACK",
            bytes: &[0x30, 0x56, 0x0A, 0xC4, 0x02, 0x80, 0x00, 0x0D],
            apdu: complex_ack(86, C::CREATE_OBJECT, &[0xC4, 0x02, 0x80, 0x00, 0x0D]),
        },
        Golden {
            source: "bacnet-stack 1.6 over MS/TP, mstp-bacnet-stack-rp-short.pcap frame 4 (tshark: Confirmed-REQ readProperty[1] analog-value,1 present-value)",
            bytes: &[0x00, 0x03, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55],
            apdu: unsegmented(MaxApdu::UP_TO_480, 1, C::READ_PROPERTY, RP_AV1_PV),
        },
        Golden {
            source: "bacnet-stack 1.6 over MS/TP, mstp-bacnet-stack-rp-short.pcap frame 5 (tshark: Complex-ACK readProperty[1])",
            bytes: &[
                0x30, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3E, 0x44, 0x42, 0x28, 0x00, 0x00, 0x3F,
            ],
            apdu: complex_ack(1, C::READ_PROPERTY, RP_AV1_PV_ACK_42),
        },
        Golden {
            source: "bacnet-stack 1.6 over BACnet Ethernet, ethernet-bacnet-stack-whois-iam.pcapng frame 1 (tshark: Unconfirmed-REQ who-Is)",
            bytes: &[0x10, 0x08],
            apdu: Apdu::UnconfirmedRequest { service: U::WHO_IS, body: &[] },
        },
        Golden {
            source: "bacnet-stack 1.6 over BACnet Ethernet, ethernet-bacnet-stack-whois-iam.pcapng frame 2 (tshark: Unconfirmed-REQ i-Am device,8001)",
            bytes: &[0x10, 0x00, 0xC4, 0x02, 0x00, 0x1F, 0x41, 0x22, 0x05, 0xC4, 0x91, 0x03, 0x22, 0x01, 0x04],
            apdu: Apdu::UnconfirmedRequest { service: U::I_AM, body: I_AM_8001 },
        },
        Golden {
            source: "Clause 20.1.2: first segment of a segmented ReadProperty request (SEG MOR SA, >64 segments, 1476 octets, seq 0, window 4)",
            bytes: &[0x0E, 0x75, 0x05, 0x00, 0x04, 0x0C, 0x0C, 0x00],
            apdu: Apdu::ConfirmedRequest(ConfirmedRequest {
                segment: seg(0, 4, true),
                segmented_response_accepted: true,
                max_segments: MaxSegments::MORE_THAN_64,
                max_apdu: MaxApdu::UP_TO_1476,
                invoke_id: 5,
                service: C::READ_PROPERTY,
                body: &[0x0C, 0x00],
            }),
        },
        Golden {
            source: "Clause 20.1.2: last segment of a segmented WritePropertyMultiple request (SEG, 4 segments, 480 octets, seq 3, window 1)",
            bytes: &[0x08, 0x23, 0x06, 0x03, 0x01, 0x10, 0x1F],
            apdu: Apdu::ConfirmedRequest(ConfirmedRequest {
                segment: seg(3, 1, false),
                segmented_response_accepted: false,
                max_segments: MaxSegments::from_code(2),
                max_apdu: MaxApdu::UP_TO_480,
                invoke_id: 6,
                service: C::WRITE_PROPERTY_MULTIPLE,
                body: &[0x1F],
            }),
        },
        Golden {
            source: "Clause 20.1.5: first segment of a segmented ReadPropertyMultiple-ACK (SEG MOR, seq 0, window 16)",
            bytes: &[0x3C, 0x07, 0x00, 0x10, 0x0E, 0x0C, 0x00, 0x00, 0x00, 0x10],
            apdu: Apdu::ComplexAck(ComplexAck {
                segment: seg(0, 16, true),
                invoke_id: 7,
                service: C::READ_PROPERTY_MULTIPLE,
                body: &[0x0C, 0x00, 0x00, 0x00, 0x10],
            }),
        },
        Golden {
            source: "Clause 20.1.5: last segment of a segmented ReadRange-ACK (SEG, seq 255, window 127)",
            bytes: &[0x38, 0x08, 0xFF, 0x7F, 0x1A, 0x3F],
            apdu: Apdu::ComplexAck(ComplexAck {
                segment: seg(255, 127, false),
                invoke_id: 8,
                service: C::READ_RANGE,
                body: &[0x3F],
            }),
        },
        Golden {
            source: "Clause 20.1.6: SegmentACK from a client (NAK=0 SRV=0)",
            bytes: &[0x40, 0x07, 0x02, 0x10],
            apdu: Apdu::SegmentAck {
                negative: false,
                server: false,
                invoke_id: 7,
                sequence_number: 2,
                actual_window_size: 16,
            },
        },
        Golden {
            source: "Clause 20.1.6: negative SegmentACK from a server (NAK=1 SRV=1)",
            bytes: &[0x43, 0x05, 0x00, 0x04],
            apdu: Apdu::SegmentAck {
                negative: true,
                server: true,
                invoke_id: 5,
                sequence_number: 0,
                actual_window_size: 4,
            },
        },
        Golden {
            source: "Clause 20.1.6: SegmentACK from a server (NAK=0 SRV=1)",
            bytes: &[0x41, 0x05, 0x01, 0x04],
            apdu: Apdu::SegmentAck {
                negative: false,
                server: true,
                invoke_id: 5,
                sequence_number: 1,
                actual_window_size: 4,
            },
        },
        Golden {
            source: "Clause 20.1.6: negative SegmentACK from a client (NAK=1 SRV=0)",
            bytes: &[0x42, 0x07, 0x01, 0x10],
            apdu: Apdu::SegmentAck {
                negative: true,
                server: false,
                invoke_id: 7,
                sequence_number: 1,
                actual_window_size: 16,
            },
        },
        Golden {
            source: "Clause 20.1.7: Error for ReadProperty, object/unknown-object (Clause 18)",
            bytes: &[0x50, 0x01, 0x0C, 0x91, 0x01, 0x91, 0x1F],
            apdu: Apdu::Error { invoke_id: 1, service: C::READ_PROPERTY, body: &[0x91, 0x01, 0x91, 0x1F] },
        },
        Golden {
            source: "Clause 20.1.8: Reject, invalid-tag",
            bytes: &[0x60, 0x05, 0x04],
            apdu: Apdu::Reject { invoke_id: 5, reason: RejectReason::INVALID_TAG },
        },
        Golden {
            source: "Clause 20.1.8: Reject with a proprietary reason (64..=255)",
            bytes: &[0x60, 0xFF, 0x40],
            apdu: Apdu::Reject { invoke_id: 255, reason: RejectReason(64) },
        },
        Golden {
            source: "Clause 20.1.9: Abort from a server, segmentation-not-supported",
            bytes: &[0x71, 0x05, 0x04],
            apdu: Apdu::Abort { server: true, invoke_id: 5, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED },
        },
        Golden {
            source: "Clause 20.1.9: Abort from a client, tsm-timeout",
            bytes: &[0x70, 0x00, 0x0A],
            apdu: Apdu::Abort { server: false, invoke_id: 0, reason: AbortReason::TSM_TIMEOUT },
        },
    ]
}

#[test]
fn golden_bytes_decode_to_their_fields() {
    for g in golden() {
        assert_eq!(Apdu::decode(g.bytes), Ok(g.apdu), "{}", g.source);
    }
}

#[test]
fn golden_fields_encode_to_their_bytes() {
    for g in golden() {
        assert_eq!(encode(&g.apdu), g.bytes, "{}", g.source);
    }
}

#[test]
fn golden_vectors_cover_all_eight_pdu_types_and_both_segmentation_forms() {
    let golden = golden();
    let types: std::collections::BTreeSet<u8> = golden.iter().map(|g| g.bytes[0] >> 4).collect();
    assert_eq!(types.into_iter().collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    let segmented = |a: &Apdu<'_>| match a {
        Apdu::ConfirmedRequest(c) => c.segment.map(|s| (0, s.more_follows)),
        Apdu::ComplexAck(c) => c.segment.map(|s| (3, s.more_follows)),
        _ => None,
    };
    let forms: std::collections::BTreeSet<_> = golden.iter().filter_map(|g| segmented(&g.apdu)).collect();
    assert_eq!(forms.len(), 4, "first and last segments of requests and acks: {forms:?}");
}

/// APDUs of real BACnet/IP frames in `vectors/captured.txt` (bacpypes3
/// 0.0.110 and rusty-bacnet 0.14.0 on loopback, dissected by tshark 4.0.17),
/// read field by field: the segmented exchange and the refusals.
#[test]
fn captured_segmentation_and_refusals_decode_to_their_fields() {
    let frames = crate::vectors::captured();
    let seg = |sequence_number, proposed_window_size, more_follows| {
        Some(SegmentInfo { sequence_number, proposed_window_size, more_follows })
    };
    let cases: &[(&str, Apdu<'static>)] = &[
        (
            "raw-client-segmented-request-to-rusty",
            Apdu::ConfirmedRequest(ConfirmedRequest {
                segment: seg(0, 1, true),
                segmented_response_accepted: false,
                max_segments: MaxSegments::UNSPECIFIED,
                max_apdu: MaxApdu::UP_TO_1476,
                invoke_id: 4,
                service: C::READ_PROPERTY,
                body: RP_AV1_PV,
            }),
        ),
        (
            "bacpypes3-server-segmented-request-segmentack",
            Apdu::SegmentAck { negative: false, server: true, invoke_id: 4, sequence_number: 0, actual_window_size: 1 },
        ),
        (
            "rusty-server-segmented-request-abort",
            Apdu::Abort { server: true, invoke_id: 4, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED },
        ),
        (
            "bacpypes3-client-readpropertymultiple-device-all-max-apdu-206-segmentack-to-bacpypes3-2",
            Apdu::SegmentAck {
                negative: false,
                server: false,
                invoke_id: 0x18,
                sequence_number: 1,
                actual_window_size: 2,
            },
        ),
        (
            "rusty-server-unknown-confirmed-service-reject",
            Apdu::Reject { invoke_id: 3, reason: RejectReason::UNRECOGNIZED_SERVICE },
        ),
    ];
    for (name, expected) in cases {
        let frame = frames.iter().find(|f| f.name == *name).unwrap_or_else(|| panic!("no captured frame {name}"));
        // BVLL header (4) and a local NPDU header (2).
        let apdu = &frame.bytes[6..];
        assert_eq!(Apdu::decode(apdu), Ok(*expected), "{name} ({})", frame.tshark);
        assert_eq!(encode(expected), apdu, "{name}");
    }
    for name in [
        "bacpypes3-server-readpropertymultiple-device-all-max-apdu-206-ack",
        "bacpypes3-server-readpropertymultiple-device-all-max-apdu-206-ack-2",
    ] {
        let frame = frames.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no captured frame {name}"));
        let last = name.ends_with("-2");
        let Ok(Apdu::ComplexAck(ack)) = Apdu::decode(&frame.bytes[6..]) else { panic!("{name}") };
        assert_eq!(ack.segment, seg(last as u8, 2, !last), "{name}");
        assert_eq!((ack.invoke_id, ack.service), (0x18, C::READ_PROPERTY_MULTIPLE), "{name}");
    }
}

/// The ASHRAE 135 examples of `vectors/standard.txt` at the APDU layer.
#[test]
fn every_standard_example_apdu_decodes_and_re_encodes_identically() {
    let examples: Vec<_> = crate::vectors::standard().into_iter().filter(|f| f.layer == "apdu").collect();
    assert!(examples.len() >= 10, "only {} APDU examples", examples.len());
    for f in examples {
        let apdu = Apdu::decode(&f.bytes).unwrap_or_else(|e| panic!("{} ({}): {e}", f.name, f.source));
        assert_eq!(encode(&apdu), f.bytes, "{} ({})", f.name, f.tshark);
    }
}

#[test]
fn fields_read_back_from_a_segmented_request_header() {
    let Ok(Apdu::ConfirmedRequest(c)) = Apdu::decode(&[0x0E, 0x75, 0x05, 0x00, 0x04, 0x0C]) else { panic!() };
    assert!(c.segmented_response_accepted);
    assert_eq!(c.segment, Some(SegmentInfo { sequence_number: 0, proposed_window_size: 4, more_follows: true }));
    assert_eq!((c.max_segments.code(), c.max_segments.count()), (7, None));
    assert_eq!((c.max_apdu.code(), c.max_apdu.octets()), (5, 1476));
    assert_eq!(Apdu::ConfirmedRequest(c).invoke_id(), Some(5));
}

#[test]
fn every_pdu_type_but_unconfirmed_request_has_an_invoke_id() {
    for g in golden() {
        let expected = match g.apdu {
            Apdu::UnconfirmedRequest { .. } => None,
            Apdu::ConfirmedRequest(_) => Some(g.bytes[2]),
            _ => Some(g.bytes[1]),
        };
        assert_eq!(g.apdu.invoke_id(), expected, "{}", g.source);
    }
}

/// Clause 20.1.2.4: B'000' unspecified, B'001' 2 segments … B'110' 64,
/// B'111' more than 64.
#[test]
fn max_segments_codes_follow_clause_20_1_2_4() {
    let counts: Vec<Option<u32>> = (0..8).map(|c| MaxSegments::from_code(c).count()).collect();
    assert_eq!(counts, [None, Some(2), Some(4), Some(8), Some(16), Some(32), Some(64), None]);
    assert_eq!(MaxSegments::from_code(0x0F).code(), 7, "only three bits are kept");
    for n in [0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, u32::MAX] {
        let code = MaxSegments::at_least(n);
        match code.count() {
            Some(count) => assert!(count >= n && (code.code() == 1 || count / 2 < n), "{n} -> {code:?}"),
            None => assert!(n == 0 || n > 64, "{n} -> {code:?}"),
        }
    }
}

/// Clause 20.1.2.5: B'0000' 50 … B'0101' 1476; the reserved codes are read as
/// 1476.
#[test]
fn max_apdu_codes_follow_clause_20_1_2_5() {
    let octets: Vec<u32> = (0..16).map(|c| MaxApdu::from_code(c).octets()).collect();
    assert_eq!(octets[..6], [50, 128, 206, 480, 1024, 1476]);
    assert!(octets[6..].iter().all(|&o| o == 1476));
    for n in [0, 49, 50, 127, 128, 205, 206, 479, 480, 1023, 1024, 1475, 1476, 9000] {
        let code = MaxApdu::at_most(n);
        assert!(code.octets() <= n.max(50), "{n} -> {code:?}");
        assert!(code.code() == 5 || MaxApdu::from_code(code.code() + 1).octets() > n, "{n} -> {code:?}");
    }
}

#[test]
fn reserved_header_bits_are_ignored_on_receipt_and_sent_as_zero() {
    let cases: &[(&[u8], &[u8])] = &[
        // Confirmed-Request bit 0, and bit 7 of the max-segments octet.
        (&[0x01, 0x85, 0x01, 0x0C], &[0x00, 0x05, 0x01, 0x0C]),
        // MOR without SEG means nothing (Clause 20.1.2.2).
        (&[0x04, 0x05, 0x01, 0x0C], &[0x00, 0x05, 0x01, 0x0C]),
        // Unconfirmed-Request low nibble.
        (&[0x1F, 0x08], &[0x10, 0x08]),
        // SimpleACK low nibble.
        (&[0x2F, 0x01, 0x0F], &[0x20, 0x01, 0x0F]),
        // ComplexACK bits 1 and 0, and MOR without SEG.
        (&[0x37, 0x01, 0x0C], &[0x30, 0x01, 0x0C]),
        // SegmentACK bits 3 and 2.
        (&[0x4C, 0x01, 0x00, 0x01], &[0x40, 0x01, 0x00, 0x01]),
        // Error, Reject low nibbles; Abort bits 3..1.
        (&[0x5F, 0x01, 0x0C], &[0x50, 0x01, 0x0C]),
        (&[0x6F, 0x01, 0x04], &[0x60, 0x01, 0x04]),
        (&[0x7E, 0x01, 0x04], &[0x70, 0x01, 0x04]),
    ];
    for (received, canonical) in cases {
        let a = Apdu::decode(received).unwrap();
        assert_eq!(a, Apdu::decode(canonical).unwrap(), "{received:02x?}");
        assert_eq!(encode(&a), *canonical, "{received:02x?}");
    }
}

#[test]
fn pdu_types_8_to_15_are_refused_as_invalid_tags() {
    for t in 8u8..16 {
        let e = Apdu::decode(&[t << 4, 0x00, 0x00, 0x00]).unwrap_err();
        assert_eq!(e, DecodeError::InvalidTag { at: 0, what: "a PDU type 0..=7" });
    }
}

#[test]
fn octets_after_a_fixed_size_pdu_are_trailing_data() {
    for bytes in [
        &[0x20, 0x01, 0x0F, 0x00][..],
        &[0x40, 0x07, 0x02, 0x10, 0x00],
        &[0x60, 0x05, 0x04, 0x00],
        &[0x71, 0x05, 0x04, 0x00],
    ] {
        assert_eq!(Apdu::decode(bytes), Err(DecodeError::TrailingData { at: bytes.len() - 1 }), "{bytes:02x?}");
    }
}

#[test]
fn every_prefix_of_a_golden_vector_is_refused_or_is_itself_a_shorter_body() {
    for g in golden() {
        let header = g.bytes.len() - body(&g.apdu).map_or(0, <[u8]>::len);
        for n in 0..g.bytes.len() {
            let prefix = &g.bytes[..n];
            match Apdu::decode(prefix) {
                Err(DecodeError::Truncated { at, .. }) => {
                    assert!(n < header, "{}: prefix of {n} refused", g.source);
                    assert_eq!(at, n, "{}", g.source);
                }
                Err(e) => panic!("{}: prefix of {n}: {e:?}", g.source),
                Ok(a) => {
                    assert!(n >= header, "{}: header prefix of {n} accepted", g.source);
                    assert_eq!(encode(&a), prefix, "{}", g.source);
                }
            }
        }
    }
}

#[test]
fn an_empty_buffer_is_truncated_at_the_pdu_type() {
    assert_eq!(Apdu::decode(&[]), Err(DecodeError::Truncated { at: 0, what: "the PDU type" }));
}

proptest! {
    #[test]
    fn every_apdu_round_trips(parts in apdu_parts()) {
        let apdu = parts.view();
        let bytes = encode(&apdu);
        prop_assert_eq!(Apdu::decode(&bytes), Ok(apdu));
    }

    /// The bound sizes an encoding buffer once: it is never short.
    #[test]
    fn the_length_bound_is_never_below_the_encoded_length(parts in apdu_parts()) {
        let apdu = parts.view();
        prop_assert!(encode(&apdu).len() <= apdu.encoded_len_bound());
    }

    /// Decoding drops only reserved bits, so a decoded APDU re-encodes to a
    /// canonical form that decodes to the same fields and encodes to itself.
    #[test]
    fn decoding_arbitrary_octets_never_panics_and_re_encodes_stably(
        data in proptest::collection::vec(any::<u8>(), 0..24)
    ) {
        if let Ok(a) = Apdu::decode(&data) {
            let again = encode(&a);
            prop_assert_eq!(again.len(), data.len());
            let b = Apdu::decode(&again).unwrap();
            prop_assert_eq!(b, a);
            prop_assert_eq!(encode(&b), again);
        }
    }
}
