//! BVLC-SC messages as the Annex lays them out, octet by octet, and what a
//! node answers to the ones that do not decode.

use super::*;
use alloc::vec;

const NODE: ScVmac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
const PEER: ScVmac = [0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE];
const UUID: [u8; 16] = [0x7e, 0x57, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits.chunks(2).map(|p| u8::from_str_radix(core::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
}

fn round_trip(octets: &[u8]) -> BvlcSc<'_> {
    let m = BvlcSc::decode(octets).unwrap_or_else(|e| panic!("{octets:02x?}: {e}"));
    let mut again = Vec::new();
    m.encode(&mut again).unwrap();
    assert_eq!(again, octets, "{m:?} encodes back the same");
    m
}

fn message(payload: Payload<'_>) -> BvlcSc<'_> {
    BvlcSc {
        message_id: 0x1234,
        origin: None,
        destination: None,
        destination_options: Options::NONE,
        data_options: Options::NONE,
        payload,
    }
}

#[test]
fn a_connect_request_carries_vmac_uuid_and_sizes_and_no_vmacs_in_the_header() {
    let octets = hex("06 00 1234  021122334455  7e570001020304050607 08090a0b0c0d  0640 05d9");
    let m = round_trip(&octets);
    let info = ConnectInfo { vmac: NODE, uuid: UUID, max_bvlc_len: 1600, max_npdu_len: 1497 };
    assert_eq!(m, message(Payload::ConnectRequest(info)));
    // A VMAC in the header of a connect message is refused.
    let bad = hex("06 08 1234 021122334455 021122334455 7e570001020304050607 08090a0b0c0d 0640 05d9");
    let e = BvlcSc::decode(&bad).unwrap_err();
    assert_eq!((e.code, e.nak_for()), (ErrorCode::HEADER_ENCODING_ERROR, Some((0x06, 0x1234))));
}

#[test]
fn an_encapsulated_npdu_from_the_hub_names_its_origin_and_may_carry_secure_path() {
    // The hub forwards a node's Who-Is: origin VMAC, data option Secure Path.
    let octets = hex("01 09 0007 02aabbccddee 41 01200ffff0ff 1008");
    let m = round_trip(&octets);
    assert_eq!(m.origin, Some(PEER));
    assert_eq!(m.data_options.iter().collect::<Vec<_>>(), [HeaderOption::SECURE_PATH]);
    assert_eq!(m.payload, Payload::EncapsulatedNpdu(&hex("01200ffff0ff1008")));
    let mut opts = Vec::new();
    Options::encode(&[HeaderOption::SECURE_PATH], &mut opts).unwrap();
    assert_eq!(opts, [0x41]);
}

#[test]
fn a_result_is_an_ack_or_a_nak_with_its_error_and_details() {
    let octets = hex("00 00 0042 06 00");
    let ack = round_trip(&octets);
    assert_eq!(ack.payload, Payload::Result { function: 0x06, nak: None });
    // The Annex's example NAK: class communication (7), code 0x0111, details.
    let octets = [hex("00 00 0042 06 01 00 0007 0097"), b"duplicate VMAC".to_vec()].concat();
    let nak = round_trip(&octets);
    let Payload::Result { function: 0x06, nak: Some(n) } = nak.payload else { panic!("{nak:?}") };
    assert_eq!((n.class, n.code, n.details), (7, 151, "duplicate VMAC"));
    assert_eq!(BvlcSc::decode(&hex("00 00 0042 06 00 ff")).unwrap_err().code, ErrorCode::UNEXPECTED_DATA);
    assert_eq!(BvlcSc::decode(&hex("00 00 0042 06 01 00 00")).unwrap_err().code, ErrorCode::MESSAGE_INCOMPLETE);
}

#[test]
fn advertisements_address_resolution_and_the_empty_messages() {
    let octets = hex("04 00 0001 01 01 0640 05d9");
    let adv = round_trip(&octets);
    assert_eq!(
        adv.payload,
        Payload::Advertisement {
            hub_status: HubConnectionStatus::CONNECTED_TO_PRIMARY,
            accepts_direct_connections: true,
            max_bvlc_len: 1600,
            max_npdu_len: 1497
        }
    );
    let uris = b"wss://10.0.0.5:4443 wss://[fd00::5]:4443";
    let octets = [hex("03 04 0002 021122334455"), uris.to_vec()].concat();
    let ack = round_trip(&octets);
    assert_eq!(ack.payload, Payload::AddressResolutionAck("wss://10.0.0.5:4443 wss://[fd00::5]:4443"));
    for (f, p) in [
        (0x02, Payload::AddressResolution),
        (0x05, Payload::AdvertisementSolicitation),
        (0x08, Payload::DisconnectRequest),
        (0x09, Payload::DisconnectAck),
        (0x0A, Payload::HeartbeatRequest),
        (0x0B, Payload::HeartbeatAck),
    ] {
        assert_eq!(round_trip(&[f, 0, 0x12, 0x34]).payload, p);
        assert_eq!(BvlcSc::decode(&[f, 0, 0x12, 0x34, 0]).unwrap_err().code, ErrorCode::UNEXPECTED_DATA);
    }
}

#[test]
fn proprietary_messages_and_options_carry_the_vendor() {
    let octets = hex("0c 02 0003 7f0005 0400 01 02 03 0555 07 aabb");
    let m = round_trip(&octets);
    let opts: Vec<_> = m.destination_options.iter().collect();
    assert_eq!(opts.len(), 1);
    assert_eq!(opts[0].proprietary(), Some((0x0400, 0x01, &[0x02, 0x03][..])));
    assert!(opts[0].must_understand, "0x7f: more clear, must-understand, data, type 31");
    assert_eq!(m.payload, Payload::Proprietary { vendor_id: 0x0555, function: 7, data: &[0xaa, 0xbb] });
}

#[test]
fn an_option_that_must_be_understood_and_is_not_gets_its_marker_back() {
    // Destination option type 9, must-understand, no data.
    let e = BvlcSc::decode(&hex("01 06 0009 021122334455 49 1008")).unwrap_err();
    assert_eq!((e.code, e.header_marker, e.nak_for()), (ErrorCode::HEADER_NOT_UNDERSTOOD, 0x49, Some((1, 9))));
    let nak = BvlcSc::nak(&e, "").unwrap();
    let mut out = Vec::new();
    nak.encode(&mut out).unwrap();
    assert_eq!(out, hex("00 00 0009 01 01 49 0007 0092"));
    // The same option, free to ignore: accepted and kept.
    let octets = hex("01 06 0009 021122334455 09 1008");
    let m = round_trip(&octets);
    assert_eq!(m.destination_options.iter().next().map(|o| o.option_type), Some(9));
}

#[test]
fn broadcasts_results_and_acks_are_never_answered() {
    // A broadcast with an unknown function.
    let e = BvlcSc::decode(&hex("0d 04 0001 ffffffffffff")).unwrap_err();
    assert_eq!((e.code, e.nak_for()), (ErrorCode::BVLC_FUNCTION_UNKNOWN, None));
    // The same, unicast: answered.
    let e = BvlcSc::decode(&hex("0d 04 0001 021122334455")).unwrap_err();
    assert_eq!(e.nak_for(), Some((0x0d, 1)));
    // A malformed heartbeat ACK: never answered.
    assert_eq!(BvlcSc::decode(&hex("0b 00 0001 00")).unwrap_err().nak_for(), None);
    // Shorter than the fixed header: not even read.
    assert_eq!(BvlcSc::decode(&[1, 0, 0]).unwrap_err().answer, None);
}

#[test]
fn malformed_headers_say_what_is_wrong() {
    let code = |s: &str| BvlcSc::decode(&hex(s)).unwrap_err().code;
    assert_eq!(code("01 10 0001 1008"), ErrorCode::HEADER_ENCODING_ERROR, "a reserved control bit");
    assert_eq!(code("01 08 0001 0211"), ErrorCode::MESSAGE_INCOMPLETE, "a cut VMAC");
    assert_eq!(code("01 02 0001 a1"), ErrorCode::MESSAGE_INCOMPLETE, "options that never end");
    assert_eq!(code("01 02 0001 21 0005 00"), ErrorCode::MESSAGE_INCOMPLETE, "option data cut short");
    assert_eq!(code("01 02 0001 41 1008"), ErrorCode::HEADER_ENCODING_ERROR, "Secure Path as a destination option");
    assert_eq!(code("02 01 0001 41"), ErrorCode::INCONSISTENT_PARAMETERS, "data options off an NPDU");
    assert_eq!(code("01 02 0001 3f 0002 0000 1008"), ErrorCode::HEADER_ENCODING_ERROR, "proprietary under 3");
    assert_eq!(code("01 00 0001"), ErrorCode::PAYLOAD_EXPECTED);
    assert_eq!(code("04 00 0001 03 00 0640 05d9"), ErrorCode::PARAMETER_OUT_OF_RANGE);
    assert_eq!(
        code("06 00 0001 ffffffffffff 7e570001020304050607 08090a0b0c0d 0640 05d9"),
        ErrorCode::PARAMETER_OUT_OF_RANGE
    );
}

#[test]
fn options_encode_with_their_more_bits_and_data() {
    let mut out = Vec::new();
    let data = [0x04, 0x00, 0x01];
    let options = [
        HeaderOption { must_understand: false, option_type: 31, data: Some(&data) },
        HeaderOption { must_understand: false, option_type: 9, data: Some(&[]) },
    ];
    Options::encode(&options, &mut out).unwrap();
    assert_eq!(out, hex("bf 0003 040001 29 0000"), "More on all but the last; empty data is length 0");
    let parsed = Options::from_encoded(&out).unwrap();
    assert_eq!(parsed.iter().collect::<Vec<_>>(), options);
    assert!(
        Options::encode(&[HeaderOption { must_understand: false, option_type: 0, data: None }], &mut vec![]).is_err()
    );
}
