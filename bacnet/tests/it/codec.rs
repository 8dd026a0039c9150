//! Tag and primitive encoding: golden vectors from Clause 20.2 and property
//! round trips.

use crate::strategies::*;
use bacnet::codec::{Reader, tag};
use bacnet::value::{AnyValue, Value};
use bacnet::{DecodeError, RejectReason};
use proptest::prelude::*;

fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out);
    out
}

fn decode(b: &[u8]) -> Result<Value, DecodeError> {
    let mut r = Reader::new(b);
    let v = Value::decode(&mut r)?;
    r.expect_end()?;
    Ok(v)
}

/// Examples from ASHRAE 135 Clause 20.2 (the encoding examples given with each datatype).
#[test]
fn clause_20_2_examples_encode_and_decode() {
    let cases: &[(Value, &[u8])] = &[
        (Value::Null, &[0x00]),
        (Value::Boolean(false), &[0x10]),
        (Value::Boolean(true), &[0x11]),
        (Value::Unsigned(72), &[0x21, 0x48]),
        (Value::Signed(72), &[0x31, 0x48]),
        (Value::Real(72.0), &[0x44, 0x42, 0x90, 0x00, 0x00]),
        (Value::Double(72.0), &[0x55, 0x08, 0x40, 0x52, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
        (Value::OctetString(vec![0x12, 0x34, 0xFF]), &[0x63, 0x12, 0x34, 0xFF]),
        (
            Value::CharacterString(bacnet::CharacterString::utf8("This is a BACnet string!")),
            b"\x75\x19\x00This is a BACnet string!",
        ),
        (Value::BitString(bacnet::BitString::from_bits(&[true, false, true, false, true])), &[0x82, 0x03, 0xA8]),
        (Value::Enumerated(0), &[0x91, 0x00]),
        (Value::Date(bacnet::Date { year: 91, month: 1, day: 24, weekday: 4 }), &[0xA4, 0x5B, 0x01, 0x18, 0x04]),
        (
            Value::Time(bacnet::Time { hour: 17, minute: 35, second: 45, hundredths: 17 }),
            &[0xB4, 0x11, 0x23, 0x2D, 0x11],
        ),
        (
            Value::ObjectIdentifier(bacnet::ObjectIdentifier::new(bacnet::ObjectType(2), 15).unwrap()),
            &[0xC4, 0x00, 0x80, 0x00, 0x0F],
        ),
    ];
    for (value, bytes) in cases {
        assert_eq!(&encode(value)[..], *bytes, "encode {value:?}");
        assert_eq!(&decode(bytes).unwrap(), value, "decode {bytes:02x?}");
    }
}

#[test]
fn negative_signed_uses_shortest_twos_complement() {
    assert_eq!(encode(&Value::Signed(-1)), [0x31, 0xFF]);
    assert_eq!(encode(&Value::Signed(-129)), [0x32, 0xFF, 0x7F]);
    assert_eq!(encode(&Value::Signed(128)), [0x32, 0x00, 0x80]);
    assert_eq!(encode(&Value::Signed(i64::MIN)), [0x35, 0x08, 0x80, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn extended_tag_numbers_and_lengths_round_trip() {
    for (number, len) in [(14u8, 4usize), (15, 5), (200, 253), (254, 254), (3, 65535), (3, 65536)] {
        let mut out = Vec::new();
        tag::write_tag(&mut out, number, tag::TagClass::Context, len);
        assert_eq!(out.len(), tag::tag_header_len(number, len));
        let t = tag::read_tag(&mut Reader::new(&out)).unwrap();
        assert_eq!((t.number, t.kind), (number, tag::TagKind::Primitive(len as u32)));
    }
}

#[test]
fn truncated_tags_are_refused_with_the_right_reason() {
    // A Real whose header promises 4 octets but carries 2.
    let e = decode(&[0x44, 0x42, 0x90]).unwrap_err();
    assert_eq!(e.reject_reason(), RejectReason::MISSING_REQUIRED_PARAMETER);
    // A Real with the wrong length is a malformed tag.
    assert_eq!(decode(&[0x43, 0x42, 0x90, 0x00]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    // Reserved application tag 13.
    assert_eq!(decode(&[0xD1, 0x00]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    // An application opening tag is reserved.
    assert_eq!(decode(&[0x0E]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    // Extended tag number 255 is reserved.
    assert_eq!(decode(&[0xF9, 0xFF, 0x00]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    // A Boolean whose LVT is neither 0 nor 1.
    assert_eq!(decode(&[0x12]).unwrap_err().reject_reason(), RejectReason::PARAMETER_OUT_OF_RANGE);
    // An Unsigned wider than 64 bits.
    assert_eq!(
        decode(&[0x25, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap_err().reject_reason(),
        RejectReason::PARAMETER_OUT_OF_RANGE
    );
}

#[test]
fn absurd_nesting_is_bounded_not_a_stack_overflow() {
    let mut data = vec![0x0E; 10_000];
    data.extend(std::iter::repeat_n(0x0F, 10_000));
    let e = AnyValue::from_bytes(&data).unwrap_err();
    assert_eq!(e.reject_reason(), RejectReason::BUFFER_OVERFLOW);
    // 32 levels are fine.
    let mut ok = vec![0x0E; 32];
    ok.extend(std::iter::repeat_n(0x0F, 32));
    assert!(AnyValue::from_bytes(&ok).is_ok());
}

#[test]
fn a_huge_declared_length_is_an_error_not_an_allocation() {
    // Octet string claiming 4 GiB.
    let e = decode(&[0x65, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).unwrap_err();
    assert_eq!(e.reject_reason(), RejectReason::MISSING_REQUIRED_PARAMETER);
}

#[test]
fn unmatched_closing_tag_in_constructed_data_is_invalid_tag() {
    assert_eq!(AnyValue::from_bytes(&[0x2E, 0x21, 0x01, 0x3F]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    assert_eq!(AnyValue::from_bytes(&[0x2E, 0x21, 0x01]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
}

#[test]
fn character_sets_convert_both_ways() {
    use bacnet::{CharacterSet, CharacterString};
    for (cs, cp) in [
        (CharacterSet::UTF_8, 0),
        (CharacterSet::ISO_10646_UCS_2, 0),
        (CharacterSet::ISO_10646_UCS_4, 0),
        (CharacterSet::ISO_8859_1, 0),
    ] {
        let s = CharacterString::encode(cs, cp, "Zone Température").unwrap();
        assert_eq!(s.to_text().unwrap(), "Zone Température", "{cs}");
    }
    let jp = "温度";
    for (cs, cp) in [(CharacterSet::IBM_MICROSOFT_DBCS, 932), (CharacterSet::JIS_X_0208, 0)] {
        let s = CharacterString::encode(cs, cp, jp).unwrap();
        assert_eq!(s.to_text().unwrap(), jp, "{cs}");
    }
    let unknown = CharacterString { charset: CharacterSet(9), code_page: 0, bytes: b"x".to_vec() };
    assert_eq!(unknown.to_text().unwrap_err().to_string(), "unsupported character set 9");
    let bad_cp = CharacterString { charset: CharacterSet::IBM_MICROSOFT_DBCS, code_page: 437, bytes: vec![] };
    assert!(bad_cp.to_text().unwrap_err().to_string().contains("code page 437"));
}

#[test]
fn object_identifiers_parse_the_ways_integrators_write_them() {
    let want = bacnet::ObjectIdentifier::new(bacnet::ObjectType::ANALOG_VALUE, 1).unwrap();
    for s in ["analog-value,1", "analog-value:1", "analogValue 1", "2,1", "ANALOG_VALUE:1"] {
        assert_eq!(s.parse::<bacnet::ObjectIdentifier>().unwrap(), want, "{s}");
    }
    assert!("analog-value,4194304".parse::<bacnet::ObjectIdentifier>().is_err());
    assert!("no-such-type,1".parse::<bacnet::ObjectIdentifier>().is_err());
}

proptest! {
    #[test]
    fn every_primitive_round_trips(v in value()) {
        let bytes = encode(&v);
        prop_assert_eq!(decode(&bytes).unwrap(), v);
    }

    #[test]
    fn constructed_values_round_trip(v in any_value()) {
        let mut bytes = Vec::new();
        v.encode(&mut bytes);
        prop_assert_eq!(AnyValue::from_bytes(&bytes).unwrap(), v);
    }

    #[test]
    fn decoding_random_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(v) = AnyValue::from_bytes(&data) {
            let mut again = Vec::new();
            v.encode(&mut again);
            let v2 = AnyValue::from_bytes(&again).unwrap();
            let mut third = Vec::new();
            v2.encode(&mut third);
            prop_assert_eq!(again, third);
        }
    }
}

#[test]
fn constructed_data_must_close_what_it_opened() {
    use bacnet::codec::read_constructed;
    // [3 [1 ]2 ]3: the inner closing tag does not match its opening tag.
    let mut r = Reader::new(&[0x3E, 0x1E, 0x2F, 0x3F]);
    assert_eq!(read_constructed(&mut r, 3, "x").unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
    let mut r = Reader::new(&[0x3E, 0x1E, 0x21, 0x05, 0x1F, 0x3F]);
    assert_eq!(read_constructed(&mut r, 3, "x").unwrap(), &[0x1E, 0x21, 0x05, 0x1F]);
}

#[test]
fn an_application_boolean_with_an_extended_length_is_an_invalid_tag() {
    assert_eq!(decode(&[0x15, 0x01]).unwrap_err().reject_reason(), RejectReason::INVALID_TAG);
}
