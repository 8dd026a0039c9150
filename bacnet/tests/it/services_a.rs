//! Service group A: Who-Is, I-Am, Who-Has, I-Have, ReadProperty,
//! ReadPropertyMultiple, WriteProperty, WritePropertyMultiple and the Error
//! bodies.
//!
//! Golden vectors are service bodies (the octets after the service choice).
//! Provenance:
//! - "Annex F.x.y": the encoding examples of ASHRAE 135 Annex F, as
//!   ela-compil/BACnet transcribes them in `Tests/Serialize/AshraeAnnexFTests.cs`
//!   (F.4.8 Who-Has/I-Have, F.4.9 Who-Is/I-Am) and
//!   `Tests/Serialize/AshraeAnnexF3Tests.cs` (F.3.5, F.3.7, F.3.9, F.3.10),
//!   with the APDU header octets (PDU type, max-segs/max-APDU, invoke ID,
//!   service choice) stripped by hand.
//! - The plain Error body `91 01 91 1F` (object, unknown-object): the same
//!   octets appear inside `[5]` in the F.3.7 multiple-object ack, and
//!   ela-compil/BACnet `Tests/Serialize/ErrorPduTests.cs` asserts them for an
//!   Error PDU.
//! - The WritePropertyMultiple-Error body: bacnet-ex/bacstack
//!   `test/protocol/services/error/write_property_multiple_error_test.exs`
//!   gives the decoded fields (property, write-access-denied, schedule 0,
//!   present-value) and the `[1]` payload octets; the tags around them are
//!   encoded by hand from Clause 20.2.
//! - "hand-encoded": built octet by octet from Clause 20.2 for cases Annex F
//!   does not cover (array indexes, priorities).

use crate::strategies::*;
use bacnet::services::common::{PropertyReference, PropertyValue};
use bacnet::services::*;
use bacnet::value::{AnyValue, Element, Value};
use bacnet::{
    CharacterString, DecodeError, ErrorClass, ErrorCode, ObjectIdentifier, ObjectType, PropertyIdentifier,
    RejectReason, Segmentation,
};
use core::fmt::Debug;
use proptest::collection::vec;
use proptest::prelude::*;

const ANALOG_INPUT: ObjectType = ObjectType::ANALOG_INPUT;
const ANALOG_VALUE: ObjectType = ObjectType::ANALOG_VALUE;
const BINARY_VALUE: ObjectType = ObjectType::BINARY_VALUE;
const DEVICE: ObjectType = ObjectType::DEVICE;
const SCHEDULE: ObjectType = ObjectType::SCHEDULE;
const PRESENT_VALUE: PropertyIdentifier = PropertyIdentifier::PRESENT_VALUE;
const RELIABILITY: PropertyIdentifier = PropertyIdentifier::RELIABILITY;
const UNKNOWN_OBJECT: ErrorCode = ErrorCode::UNKNOWN_OBJECT;
const WRITE_ACCESS_DENIED: ErrorCode = ErrorCode::WRITE_ACCESS_DENIED;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()).collect()
}

fn oid(object_type: ObjectType, instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(object_type, instance).unwrap()
}

fn real(v: f32) -> AnyValue {
    AnyValue::primitive(Value::Real(v))
}

/// Bytes → struct and struct → bytes.
fn golden<T: ServiceCodec + PartialEq + Debug>(bytes: &str, want: &T) {
    let bytes = hex(bytes);
    assert_eq!(&T::decode(&bytes).unwrap(), want, "decode {bytes:02X?}");
    assert_eq!(want.to_vec(), bytes, "encode {want:?}");
}

fn decode_err<T: ServiceCodec + Debug>(bytes: &str) -> DecodeError {
    T::decode(&hex(bytes)).unwrap_err()
}

fn reason<T: ServiceCodec + Debug>(bytes: &str) -> RejectReason {
    decode_err::<T>(bytes).reject_reason()
}

/// Every prefix of a valid body either fails to decode or is itself a whole
/// body (a shorter list, or a ReadAccessResult without its OPTIONAL
/// list-of-results) whose re-encoding decodes to the same value. Never a panic.
fn prefixes_fail_or_are_bodies<T: ServiceCodec + PartialEq + Debug>(bytes: &[u8]) {
    for n in 0..bytes.len() {
        if let Ok(v) = T::decode(&bytes[..n]) {
            assert_eq!(T::decode(&v.to_vec()).as_ref(), Ok(&v), "prefix {n} of {bytes:02X?}");
        }
    }
}

/// Every proper prefix of a body with required parameters is an error.
fn prefixes_fail<T: ServiceCodec + Debug>(bytes: &str) {
    let bytes = hex(bytes);
    for n in 0..bytes.len() {
        assert!(T::decode(&bytes[..n]).is_err(), "prefix {n} of {bytes:02X?} decoded");
    }
}

// ---------------------------------------------------------------------------
// Golden vectors
// ---------------------------------------------------------------------------

const WHO_IS_ALL: &str = ""; // Annex F.4.9
const WHO_IS_3: &str = "09 03 19 03"; // Annex F.4.9

#[test]
fn who_is_matches_annex_f_4_9() {
    golden(WHO_IS_ALL, &WhoIs::ALL);
    golden(WHO_IS_3, &WhoIs { range: Some((3, 3)) });
    assert_eq!(WhoIs::between(3, 3).unwrap(), WhoIs { range: Some((3, 3)) });
    assert!(WhoIs { range: Some((3, 3)) }.matches(3));
    assert!(!WhoIs { range: Some((3, 3)) }.matches(4));
    assert!(WhoIs::ALL.matches(ObjectIdentifier::MAX_INSTANCE));
}

#[test]
fn who_is_between_refuses_limits_the_wire_cannot_carry() {
    assert!(WhoIs::between(0, 4_194_304).is_err());
    assert!(WhoIs::between(4_194_304, 4_194_304).is_err());
    assert!(WhoIs::between(5, 4).is_err());
    assert!(WhoIs::between(0, ObjectIdentifier::MAX_INSTANCE).is_ok());
}

/// Annex F.4.9 I-Am answers (device, max-APDU, segmentation, vendor).
const I_AM: [(&str, u32, u32, Segmentation, u16); 4] = [
    ("C4 02 00 00 01 22 01 E0 91 01 21 63", 1, 480, Segmentation::SEGMENTED_TRANSMIT, 99),
    ("C4 02 00 00 02 21 CE 91 02 21 21", 2, 206, Segmentation::SEGMENTED_RECEIVE, 33),
    ("C4 02 00 00 03 22 04 00 91 03 21 63", 3, 1024, Segmentation::NO_SEGMENTATION, 99),
    ("C4 02 00 00 04 21 80 91 00 21 42", 4, 128, Segmentation::SEGMENTED_BOTH, 66),
];

#[test]
fn i_am_matches_annex_f_4_9() {
    for (bytes, instance, max_apdu, segmentation, vendor_id) in I_AM {
        golden(
            bytes,
            &IAm {
                device: oid(DEVICE, instance),
                max_apdu_length_accepted: max_apdu,
                segmentation_supported: segmentation,
                vendor_id,
            },
        );
    }
}

const WHO_HAS_BY_NAME: &str = "3D 07 00 4F 41 54 65 6D 70"; // Annex F.4.8
const WHO_HAS_BY_ID: &str = "2C 00 00 00 03"; // Annex F.4.8
const I_HAVE: &str = "C4 02 00 00 08 C4 00 00 00 03 75 07 00 4F 41 54 65 6D 70"; // Annex F.4.8

#[test]
fn who_has_and_i_have_match_annex_f_4_8() {
    golden(WHO_HAS_BY_NAME, &WhoHas { range: None, object: WhoHasObject::Name(CharacterString::utf8("OATemp")) });
    golden(WHO_HAS_BY_ID, &WhoHas { range: None, object: WhoHasObject::Identifier(oid(ANALOG_INPUT, 3)) });
    golden(
        I_HAVE,
        &IHave {
            device: oid(DEVICE, 8),
            object_id: oid(ANALOG_INPUT, 3),
            object_name: CharacterString::utf8("OATemp"),
        },
    );
}

#[test]
fn who_has_with_limits_puts_them_first() {
    // hand-encoded: limits 1..=100, object analog-input 3.
    golden(
        "09 01 19 64 2C 00 00 00 03",
        &WhoHas { range: Some((1, 100)), object: WhoHasObject::Identifier(oid(ANALOG_INPUT, 3)) },
    );
}

const RP_REQUEST: &str = "0C 00 00 00 05 19 55"; // Annex F.3.5
const RP_ACK: &str = "0C 00 00 00 05 19 55 3E 44 42 90 99 9A 3F"; // Annex F.3.5

#[test]
fn read_property_matches_annex_f_3_5() {
    golden(
        RP_REQUEST,
        &ReadPropertyRequest { object: oid(ANALOG_INPUT, 5), property: PRESENT_VALUE, array_index: None },
    );
    golden(
        RP_ACK,
        &ReadPropertyAck {
            object: oid(ANALOG_INPUT, 5),
            property: PRESENT_VALUE,
            array_index: None,
            value: real(72.3),
        },
    );
}

#[test]
fn read_property_with_an_array_index() {
    // hand-encoded: device 8, object-list (76), index 0 → ack with Unsigned 3.
    golden(
        "0C 02 00 00 08 19 4C 29 00",
        &ReadPropertyRequest {
            object: oid(DEVICE, 8),
            property: PropertyIdentifier::OBJECT_LIST,
            array_index: Some(0),
        },
    );
    golden(
        "0C 02 00 00 08 19 4C 29 00 3E 21 03 3F",
        &ReadPropertyAck {
            object: oid(DEVICE, 8),
            property: PropertyIdentifier::OBJECT_LIST,
            array_index: Some(0),
            value: AnyValue::primitive(Value::Unsigned(3)),
        },
    );
}

const RPM_REQUEST: &str = "0C 00 00 00 10 1E 09 55 09 67 1F"; // Annex F.3.7
const RPM_ACK: &str = "0C 00 00 00 10 1E 29 55 4E 44 42 90 99 9A 4F 29 67 4E 91 00 4F 1F"; // Annex F.3.7
// Annex F.3.7, the second example: three objects, one of them unknown.
const RPM_REQUEST_3: &str = "0C 00 00 00 21 1E 09 55 1F 0C 00 00 00 32 1E 09 55 1F 0C 00 00 00 23 1E 09 55 1F";
const RPM_ACK_3: &str = "0C 00 00 00 21 1E 29 55 4E 44 42 29 33 33 4F 1F \
                         0C 00 00 00 32 1E 29 55 5E 91 01 91 1F 5F 1F \
                         0C 00 00 00 23 1E 29 55 4E 44 43 D9 D9 9A 4F 1F";

#[test]
fn read_property_multiple_matches_annex_f_3_7() {
    golden(
        RPM_REQUEST,
        &ReadPropertyMultipleRequest(vec![ReadAccessSpecification {
            object: oid(ANALOG_INPUT, 16),
            properties: vec![PropertyReference::new(PRESENT_VALUE), PropertyReference::new(RELIABILITY)],
        }]),
    );
    golden(
        RPM_ACK,
        &ReadPropertyMultipleAck(vec![ReadAccessResult {
            object: oid(ANALOG_INPUT, 16),
            results: vec![
                ReadResult { property: PRESENT_VALUE, array_index: None, outcome: Ok(real(72.3)) },
                ReadResult {
                    property: RELIABILITY,
                    array_index: None,
                    outcome: Ok(AnyValue::primitive(Value::Enumerated(0))),
                },
            ],
        }]),
    );
}

#[test]
fn read_property_multiple_of_three_objects_matches_annex_f_3_7() {
    let pv = |i| ReadAccessSpecification {
        object: oid(ANALOG_INPUT, i),
        properties: vec![PropertyReference::new(PRESENT_VALUE)],
    };
    golden(RPM_REQUEST_3, &ReadPropertyMultipleRequest(vec![pv(33), pv(50), pv(35)]));
    let result = |i, outcome| ReadAccessResult {
        object: oid(ANALOG_INPUT, i),
        results: vec![ReadResult { property: PRESENT_VALUE, array_index: None, outcome }],
    };
    golden(
        RPM_ACK_3,
        &ReadPropertyMultipleAck(vec![
            result(33, Ok(real(42.3))),
            result(50, Err(BacnetError::new(ErrorClass::OBJECT, UNKNOWN_OBJECT))),
            result(35, Ok(real(435.7))),
        ]),
    );
}

#[test]
fn read_access_result_without_a_list_of_results_decodes_as_empty() {
    // hand-encoded: list-of-results is OPTIONAL in ReadAccessResult.
    let ack = ReadPropertyMultipleAck::decode(&hex("0C 00 00 00 10")).unwrap();
    assert_eq!(ack, ReadPropertyMultipleAck(vec![ReadAccessResult { object: oid(ANALOG_INPUT, 16), results: vec![] }]));
    // The encoder writes the list, empty.
    assert_eq!(ack.to_vec(), hex("0C 00 00 00 10 1E 1F"));
}

const WP_REQUEST: &str = "0C 00 80 00 01 19 55 3E 44 43 34 00 00 3F"; // Annex F.3.9

#[test]
fn write_property_matches_annex_f_3_9() {
    golden(
        WP_REQUEST,
        &WritePropertyRequest {
            object: oid(ANALOG_VALUE, 1),
            property: PRESENT_VALUE,
            array_index: None,
            value: real(180.0),
            priority: None,
        },
    );
}

#[test]
fn write_property_with_index_and_priority() {
    // hand-encoded: analog-value 1, priority-array (87) index 8 ← Null at priority 8.
    golden(
        "0C 00 80 00 01 19 57 29 08 3E 00 3F 49 08",
        &WritePropertyRequest {
            object: oid(ANALOG_VALUE, 1),
            property: PropertyIdentifier::PRIORITY_ARRAY,
            array_index: Some(8),
            value: AnyValue::primitive(Value::Null),
            priority: Some(8),
        },
    );
}

// Annex F.3.10.
const WPM_REQUEST: &str = "0C 00 80 00 05 1E 09 55 2E 44 42 86 00 00 2F 1F \
                           0C 00 80 00 06 1E 09 55 2E 44 42 86 00 00 2F 1F \
                           0C 00 80 00 07 1E 09 55 2E 44 42 90 00 00 2F 1F";

#[test]
fn write_property_multiple_matches_annex_f_3_10() {
    let spec = |i, v| WriteAccessSpecification {
        object: oid(ANALOG_VALUE, i),
        values: vec![PropertyValue { property: PRESENT_VALUE, array_index: None, value: real(v), priority: None }],
    };
    golden(WPM_REQUEST, &WritePropertyMultipleRequest(vec![spec(5, 67.0), spec(6, 67.0), spec(7, 72.0)]));
}

const ERROR_BODY: &str = "91 01 91 1F"; // ErrorPduTests.cs; also inside [5] in Annex F.3.7
const WPM_ERROR: &str = "0E 91 02 91 28 0F 1E 0C 04 40 00 00 19 55 1F"; // bacstack test, tags by hand

#[test]
fn error_bodies_match_their_vectors() {
    golden(ERROR_BODY, &BacnetError::new(ErrorClass::OBJECT, UNKNOWN_OBJECT));
    golden(
        WPM_ERROR,
        &WritePropertyMultipleError {
            error: BacnetError::new(ErrorClass::PROPERTY, WRITE_ACCESS_DENIED),
            first_failed: ObjectPropertyReference {
                object: oid(SCHEDULE, 0),
                property: PRESENT_VALUE,
                array_index: None,
            },
        },
    );
}

#[test]
fn errors_print_as_class_and_code() {
    assert_eq!(BacnetError::new(ErrorClass::OBJECT, UNKNOWN_OBJECT).to_string(), "object: unknown-object");
    assert_eq!(BacnetError::new(ErrorClass(64), ErrorCode(300)).to_string(), "64: 300");
}

// ---------------------------------------------------------------------------
// Malformed input
// ---------------------------------------------------------------------------

#[test]
fn every_truncation_of_every_vector_fails_or_is_a_shorter_body() {
    fn all<T: ServiceCodec + PartialEq + Debug>(vectors: &[&str]) {
        for v in vectors {
            prefixes_fail_or_are_bodies::<T>(&hex(v));
        }
    }
    all::<WhoIs>(&[WHO_IS_3]);
    all::<IAm>(&I_AM.map(|v| v.0));
    all::<WhoHas>(&[WHO_HAS_BY_NAME, WHO_HAS_BY_ID]);
    all::<IHave>(&[I_HAVE]);
    all::<ReadPropertyRequest>(&[RP_REQUEST]);
    all::<ReadPropertyAck>(&[RP_ACK]);
    all::<ReadPropertyMultipleRequest>(&[RPM_REQUEST, RPM_REQUEST_3]);
    all::<ReadPropertyMultipleAck>(&[RPM_ACK, RPM_ACK_3]);
    all::<WritePropertyRequest>(&[WP_REQUEST]);
    all::<WritePropertyMultipleRequest>(&[WPM_REQUEST]);
    all::<BacnetError>(&[ERROR_BODY]);
    all::<WritePropertyMultipleError>(&[WPM_ERROR]);
}

#[test]
fn bodies_with_required_parameters_refuse_every_truncation() {
    for v in I_AM {
        prefixes_fail::<IAm>(v.0);
    }
    prefixes_fail::<WhoHas>(WHO_HAS_BY_NAME);
    prefixes_fail::<IHave>(I_HAVE);
    prefixes_fail::<ReadPropertyRequest>(RP_REQUEST);
    prefixes_fail::<ReadPropertyAck>(RP_ACK);
    prefixes_fail::<ReadPropertyMultipleRequest>(RPM_REQUEST);
    prefixes_fail::<WritePropertyRequest>(WP_REQUEST);
    prefixes_fail::<BacnetError>(ERROR_BODY);
    prefixes_fail::<WritePropertyMultipleError>(WPM_ERROR);
    // Who-Is: everything but the empty body and the whole body.
    assert_eq!(reason::<WhoIs>("09"), RejectReason::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<WhoIs>("09 03"), RejectReason::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<WhoIs>("09 03 19"), RejectReason::MISSING_REQUIRED_PARAMETER);
}

#[test]
fn a_missing_object_identifier_is_missing_required_parameter() {
    use RejectReason as R;
    assert_eq!(reason::<ReadPropertyRequest>(""), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyRequest>("19 55"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyRequest>("19 55 29 01"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyAck>("19 55 3E 44 42 90 99 9A 3F"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<WritePropertyRequest>("19 55 3E 44 43 34 00 00 3F"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyMultipleRequest>("1E 09 55 1F"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(
        reason::<WritePropertyMultipleRequest>("1E 09 55 2E 44 42 86 00 00 2F 1F"),
        R::MISSING_REQUIRED_PARAMETER
    );
    assert_eq!(reason::<WritePropertyMultipleError>("0E 91 02 91 28 0F 1E 19 55 1F"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<IAm>(""), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<IHave>(""), R::MISSING_REQUIRED_PARAMETER);
    // The error names the field and its offset.
    assert_eq!(decode_err::<ReadPropertyRequest>("19 55"), DecodeError::Truncated { at: 0, what: "object-identifier" });
}

#[test]
fn other_missing_parameters_are_missing_required_parameter() {
    use RejectReason as R;
    // ReadProperty without its property identifier.
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05 29 01"), R::MISSING_REQUIRED_PARAMETER);
    // WriteProperty without its value (a priority where the value belongs).
    assert_eq!(reason::<WritePropertyRequest>("0C 00 80 00 01 19 55 49 08"), R::MISSING_REQUIRED_PARAMETER);
    // ReadPropertyMultiple: no specification, an empty property list.
    assert_eq!(reason::<ReadPropertyMultipleRequest>(""), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<ReadPropertyMultipleRequest>("0C 00 00 00 10 1E 1F"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(
        decode_err::<ReadPropertyMultipleRequest>("0C 00 00 00 10 1E 1F"),
        DecodeError::Truncated { at: 6, what: "a property reference" }
    );
    // WritePropertyMultiple: no specification, an empty value list.
    assert_eq!(reason::<WritePropertyMultipleRequest>(""), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<WritePropertyMultipleRequest>("0C 00 80 00 05 1E 1F"), R::MISSING_REQUIRED_PARAMETER);
    // A ReadPropertyMultiple result with neither a value nor an error.
    assert_eq!(reason::<ReadPropertyMultipleAck>("0C 00 00 00 10 1E 29 55 1F"), R::MISSING_REQUIRED_PARAMETER);
    // Who-Has without an object.
    assert_eq!(reason::<WhoHas>(""), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(reason::<WhoHas>("09 01 19 64"), R::MISSING_REQUIRED_PARAMETER);
    // An unterminated value.
    assert_eq!(reason::<ReadPropertyAck>("0C 00 00 00 05 19 55 3E 44 42 90 99 9A"), R::MISSING_REQUIRED_PARAMETER);
}

#[test]
fn a_context_tag_out_of_order_is_invalid_tag() {
    use RejectReason as R;
    // Property identifier before the object identifier.
    assert_eq!(reason::<ReadPropertyRequest>("19 55 0C 00 00 00 05"), R::INVALID_TAG);
    // Array index before the property identifier.
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05 29 01 19 55"), R::INVALID_TAG);
    // Priority before the value.
    assert_eq!(reason::<WritePropertyRequest>("0C 00 80 00 01 19 55 49 08 3E 44 43 34 00 00 3F"), R::INVALID_TAG);
    // An application tag where a context tag belongs.
    assert_eq!(reason::<ReadPropertyRequest>("C4 00 00 00 05 19 55"), R::INVALID_TAG);
    // A repeated field.
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05 0C 00 00 00 05 19 55"), R::INVALID_TAG);
    // A value closed with the wrong tag number.
    assert_eq!(reason::<ReadPropertyAck>("0C 00 00 00 05 19 55 3E 44 42 90 99 9A 4F"), R::INVALID_TAG);
    // A Who-Has object that is neither [2] nor [3].
    assert_eq!(reason::<WhoHas>("4C 00 00 00 03"), R::INVALID_TAG);
    // Who-Is: a low limit repeated where the high limit belongs.
    assert_eq!(reason::<WhoIs>("09 03 09 03"), R::INVALID_TAG);
    // ReadPropertyMultiple result with a tag where the value or error belongs.
    assert_eq!(reason::<ReadPropertyMultipleAck>("0C 00 00 00 10 1E 29 55 6E 6F 1F"), R::INVALID_TAG);
}

#[test]
fn extra_octets_are_too_many_arguments() {
    use RejectReason as R;
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05 19 55 39 00"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(reason::<ReadPropertyRequest>("0C 00 00 00 05 19 55 29 01 00"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(
        reason::<WritePropertyRequest>("0C 00 80 00 01 19 55 3E 44 43 34 00 00 3F 49 08 49 08"),
        R::TOO_MANY_ARGUMENTS
    );
    assert_eq!(reason::<WhoIs>("09 03 19 03 29 00"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(reason::<WhoIs>("C4 02 00 00 01"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(reason::<IAm>("C4 02 00 00 01 22 01 E0 91 01 21 63 21 00"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(reason::<BacnetError>("91 01 91 1F 91 00"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(reason::<WhoHas>("2C 00 00 00 03 3D 07 00 4F 41 54 65 6D 70"), R::TOO_MANY_ARGUMENTS);
    assert_eq!(decode_err::<ReadPropertyRequest>("0C 00 00 00 05 19 55 39 00"), DecodeError::TrailingData { at: 7 });
}

#[test]
fn a_priority_of_0_or_17_is_parameter_out_of_range() {
    use RejectReason as R;
    let wp = |priority: &str| format!("0C 00 80 00 01 19 55 3E 44 43 34 00 00 3F {priority}");
    assert_eq!(reason::<WritePropertyRequest>(&wp("49 00")), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(reason::<WritePropertyRequest>(&wp("49 11")), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(reason::<WritePropertyRequest>(&wp("4A 01 00")), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(
        decode_err::<WritePropertyRequest>(&wp("49 11")),
        DecodeError::OutOfRange { at: 14, what: "priority (1..16)" }
    );
    assert!(WritePropertyRequest::decode(&hex(&wp("49 01"))).is_ok());
    assert!(WritePropertyRequest::decode(&hex(&wp("49 10"))).is_ok());
    let wpm = |priority: &str| format!("0C 00 80 00 05 1E 09 55 2E 44 42 86 00 00 2F {priority} 1F");
    assert_eq!(reason::<WritePropertyMultipleRequest>(&wpm("39 00")), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(reason::<WritePropertyMultipleRequest>(&wpm("39 11")), R::PARAMETER_OUT_OF_RANGE);
    assert!(WritePropertyMultipleRequest::decode(&hex(&wpm("39 10"))).is_ok());
}

#[test]
fn who_is_limits_come_in_pairs_within_the_instance_range() {
    use RejectReason as R;
    // Only a low limit: the high limit is missing.
    assert_eq!(reason::<WhoIs>("09 03"), R::MISSING_REQUIRED_PARAMETER);
    assert_eq!(
        decode_err::<WhoIs>("09 03"),
        DecodeError::Truncated { at: 2, what: "device-instance-range-high-limit" }
    );
    // Who-Has: a low limit, then the object where the high limit belongs.
    assert_eq!(reason::<WhoHas>("09 01 2C 00 00 00 03"), R::MISSING_REQUIRED_PARAMETER);
    // Only a high limit: present without its partner.
    assert_eq!(reason::<WhoIs>("19 03"), R::INCONSISTENT_PARAMETERS);
    assert_eq!(reason::<WhoHas>("19 03 2C 00 00 00 03"), R::INCONSISTENT_PARAMETERS);
    // 4,194,304 does not name a device.
    assert_eq!(reason::<WhoIs>("0B 40 00 00 1B 40 00 00"), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(reason::<WhoIs>("09 00 1B 40 00 00"), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(reason::<WhoHas>("09 00 1B 40 00 00 2C 00 00 00 03"), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(WhoIs::decode(&hex("0B 3F FF FF 1B 3F FF FF")).unwrap(), WhoIs { range: Some((4_194_303, 4_194_303)) });
    // A low limit above the high limit decodes and matches nothing.
    let inverted = WhoIs::decode(&hex("09 05 19 04")).unwrap();
    assert!(!(0..10).any(|i| inverted.matches(i)));
}

#[test]
fn i_am_and_i_have_must_name_a_device() {
    use RejectReason as R;
    // analog-input 1 as the I-Am device.
    assert_eq!(reason::<IAm>("C4 00 00 00 01 22 01 E0 91 01 21 63"), R::PARAMETER_OUT_OF_RANGE);
    assert_eq!(
        decode_err::<IAm>("C4 00 00 00 01 22 01 E0 91 01 21 63"),
        DecodeError::OutOfRange { at: 0, what: "iAm-device-identifier" }
    );
    assert_eq!(reason::<IHave>("C4 00 00 00 08 C4 00 00 00 03 75 07 00 4F 41 54 65 6D 70"), R::PARAMETER_OUT_OF_RANGE);
}

#[test]
fn i_am_fields_are_checked_for_datatype_and_width() {
    use RejectReason as R;
    // max-apdu-length-accepted as an Enumerated.
    assert_eq!(reason::<IAm>("C4 02 00 00 01 92 01 E0 91 01 21 63"), R::INVALID_PARAMETER_DATA_TYPE);
    assert_eq!(
        decode_err::<IAm>("C4 02 00 00 01 92 01 E0 91 01 21 63"),
        DecodeError::WrongDataType { at: 5, what: "max-apdu-length-accepted" }
    );
    // vendor-id 65,536 does not fit Unsigned16.
    assert_eq!(
        decode_err::<IAm>("C4 02 00 00 01 22 01 E0 91 01 23 01 00 00"),
        DecodeError::OutOfRange { at: 11, what: "vendor-id" }
    );
    // segmentation-supported as a context tag.
    assert_eq!(reason::<IAm>("C4 02 00 00 01 22 01 E0 99 01 21 63"), R::INVALID_TAG);
    // An unnamed segmentation value is kept, not refused.
    let iam = IAm::decode(&hex("C4 02 00 00 01 22 01 E0 91 07 21 63")).unwrap();
    assert_eq!(iam.segmentation_supported, Segmentation(7));
}

#[test]
fn error_bodies_refuse_the_wrong_datatype() {
    use RejectReason as R;
    assert_eq!(reason::<BacnetError>("21 01 91 1F"), R::INVALID_PARAMETER_DATA_TYPE);
    assert_eq!(decode_err::<BacnetError>("91 01"), DecodeError::Truncated { at: 2, what: "error-code" });
    // An Error wrapped in context tags (a legacy encoding) is not the plain body.
    assert_eq!(reason::<BacnetError>("0E 91 01 91 1F 0F"), R::INVALID_TAG);
}

#[test]
fn a_huge_declared_value_length_is_an_error_not_an_allocation() {
    // WriteProperty whose value is an OctetString claiming 4 GiB.
    let e = decode_err::<WritePropertyRequest>("0C 00 80 00 01 19 55 3E 65 FF FF FF FF FF 00 3F");
    assert_eq!(e.reject_reason(), RejectReason::MISSING_REQUIRED_PARAMETER);
}

#[test]
fn deep_nesting_in_a_value_is_bounded() {
    let mut body = hex("0C 00 80 00 01 19 55 3E");
    body.extend(std::iter::repeat_n(0x0E, 5_000));
    body.extend(std::iter::repeat_n(0x0F, 5_000));
    body.push(0x3F);
    let e = WritePropertyRequest::decode(&body).unwrap_err();
    assert_eq!(e.reject_reason(), RejectReason::BUFFER_OVERFLOW);
}

// ---------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------

fn who_is() -> impl Strategy<Value = WhoIs> {
    proptest::option::of((0..=ObjectIdentifier::MAX_INSTANCE, 0..=ObjectIdentifier::MAX_INSTANCE))
        .prop_map(|range| WhoIs { range })
}

fn device_id() -> impl Strategy<Value = ObjectIdentifier> {
    (0..=ObjectIdentifier::MAX_INSTANCE).prop_map(|i| oid(DEVICE, i))
}

fn i_am() -> impl Strategy<Value = IAm> {
    (device_id(), any::<u32>(), any::<u32>(), any::<u16>()).prop_map(|(device, max_apdu, seg, vendor_id)| IAm {
        device,
        max_apdu_length_accepted: max_apdu,
        segmentation_supported: Segmentation(seg),
        vendor_id,
    })
}

fn who_has() -> impl Strategy<Value = WhoHas> {
    let object =
        prop_oneof![object_id().prop_map(WhoHasObject::Identifier), character_string().prop_map(WhoHasObject::Name),];
    (who_is(), object).prop_map(|(w, object)| WhoHas { range: w.range, object })
}

fn i_have() -> impl Strategy<Value = IHave> {
    (device_id(), object_id(), character_string()).prop_map(|(device, object_id, object_name)| IHave {
        device,
        object_id,
        object_name,
    })
}

fn rp_request() -> impl Strategy<Value = ReadPropertyRequest> {
    (object_id(), property_id(), array_index()).prop_map(|(object, property, array_index)| ReadPropertyRequest {
        object,
        property,
        array_index,
    })
}

fn rp_ack() -> impl Strategy<Value = ReadPropertyAck> {
    (object_id(), property_id(), array_index(), any_value())
        .prop_map(|(object, property, array_index, value)| ReadPropertyAck { object, property, array_index, value })
}

fn rpm_request() -> impl Strategy<Value = ReadPropertyMultipleRequest> {
    let spec = (object_id(), vec(property_reference(), 1..5))
        .prop_map(|(object, properties)| ReadAccessSpecification { object, properties });
    vec(spec, 1..4).prop_map(ReadPropertyMultipleRequest)
}

fn rpm_ack() -> impl Strategy<Value = ReadPropertyMultipleAck> {
    let outcome = prop_oneof![any_value().prop_map(Ok), bacnet_error().prop_map(Err)];
    let result = (property_id(), array_index(), outcome).prop_map(|(property, array_index, outcome)| ReadResult {
        property,
        array_index,
        outcome,
    });
    let access = (object_id(), vec(result, 0..4)).prop_map(|(object, results)| ReadAccessResult { object, results });
    vec(access, 0..4).prop_map(ReadPropertyMultipleAck)
}

fn wp_request() -> impl Strategy<Value = WritePropertyRequest> {
    (object_id(), property_id(), array_index(), any_value(), priority()).prop_map(
        |(object, property, array_index, value, priority)| WritePropertyRequest {
            object,
            property,
            array_index,
            value,
            priority,
        },
    )
}

fn wpm_request() -> impl Strategy<Value = WritePropertyMultipleRequest> {
    let spec = (object_id(), vec(property_value(), 1..4))
        .prop_map(|(object, values)| WriteAccessSpecification { object, values });
    vec(spec, 1..4).prop_map(WritePropertyMultipleRequest)
}

fn wpm_error() -> impl Strategy<Value = WritePropertyMultipleError> {
    (bacnet_error(), object_property_reference())
        .prop_map(|(error, first_failed)| WritePropertyMultipleError { error, first_failed })
}

fn round_trip<T: ServiceCodec + PartialEq + Debug>(v: &T) -> Result<(), TestCaseError> {
    let bytes = v.to_vec();
    prop_assert_eq!(&T::decode(&bytes).unwrap(), v);
    // And every truncation fails or is a shorter body, without panicking.
    prefixes_fail_or_are_bodies::<T>(&bytes);
    Ok(())
}

/// Decoding arbitrary octets never panics; whatever decodes re-encodes to
/// octets that decode to the same encoding (compared as octets, so NaN
/// values compare equal).
fn decode_any<T: ServiceCodec + Debug>(data: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = T::decode(data) {
        let once = v.to_vec();
        let again =
            T::decode(&once).map_err(|e| TestCaseError::fail(format!("{v:?} re-encoded to {once:02X?}: {e}")))?;
        prop_assert_eq!(again.to_vec(), once);
    }
    Ok(())
}

proptest! {
    #[test]
    fn who_is_round_trips(v in who_is()) { round_trip(&v)?; }

    #[test]
    fn i_am_round_trips(v in i_am()) { round_trip(&v)?; }

    #[test]
    fn who_has_round_trips(v in who_has()) { round_trip(&v)?; }

    #[test]
    fn i_have_round_trips(v in i_have()) { round_trip(&v)?; }

    #[test]
    fn read_property_request_round_trips(v in rp_request()) { round_trip(&v)?; }

    #[test]
    fn read_property_ack_round_trips(v in rp_ack()) { round_trip(&v)?; }

    #[test]
    fn read_property_multiple_request_round_trips(v in rpm_request()) { round_trip(&v)?; }

    #[test]
    fn read_property_multiple_ack_round_trips(v in rpm_ack()) { round_trip(&v)?; }

    #[test]
    fn write_property_request_round_trips(v in wp_request()) { round_trip(&v)?; }

    #[test]
    fn write_property_multiple_request_round_trips(v in wpm_request()) { round_trip(&v)?; }

    #[test]
    fn error_round_trips(v in bacnet_error()) { round_trip(&v)?; }

    #[test]
    fn write_property_multiple_error_round_trips(v in wpm_error()) { round_trip(&v)?; }

    #[test]
    fn object_property_reference_round_trips(v in object_property_reference()) { round_trip(&v)?; }

    #[test]
    fn decoding_arbitrary_octets_never_panics(data in vec(any::<u8>(), 0..48)) {
        decode_any::<WhoIs>(&data)?;
        decode_any::<IAm>(&data)?;
        decode_any::<WhoHas>(&data)?;
        decode_any::<IHave>(&data)?;
        decode_any::<ReadPropertyRequest>(&data)?;
        decode_any::<ReadPropertyAck>(&data)?;
        decode_any::<ReadPropertyMultipleRequest>(&data)?;
        decode_any::<ReadPropertyMultipleAck>(&data)?;
        decode_any::<WritePropertyRequest>(&data)?;
        decode_any::<WritePropertyMultipleRequest>(&data)?;
        decode_any::<BacnetError>(&data)?;
        decode_any::<WritePropertyMultipleError>(&data)?;
    }

    /// Corrupting one octet of a valid body never panics.
    #[test]
    fn corrupting_a_valid_body_never_panics(
        v in prop_oneof![
            rpm_ack().prop_map(|v| v.to_vec()),
            wpm_request().prop_map(|v| v.to_vec()),
            wp_request().prop_map(|v| v.to_vec()),
        ],
        at in any::<proptest::sample::Index>(),
        octet in any::<u8>(),
    ) {
        let mut data = v;
        if !data.is_empty() {
            let i = at.index(data.len());
            data[i] = octet;
        }
        decode_any::<ReadPropertyMultipleAck>(&data)?;
        decode_any::<WritePropertyMultipleRequest>(&data)?;
        decode_any::<WritePropertyRequest>(&data)?;
        decode_any::<ReadPropertyAck>(&data)?;
    }
}

// The values in the vectors are what the property model expects.
#[test]
fn annex_f_values_read_back_as_numbers() {
    let ack = ReadPropertyAck::decode(&hex(RP_ACK)).unwrap();
    assert_eq!(ack.value.as_primitive(), Some(&Value::Real(72.3)));
    let wp = WritePropertyRequest::decode(&hex(WP_REQUEST)).unwrap();
    assert_eq!(wp.value.0, vec![Element::Application(Value::Real(180.0))]);
}

// ---------------------------------------------------------------------------
// Captures of real peers: tests/it/vectors/captured.txt (bacpypes3 0.0.110
// and rusty-bacnet 0.14.0 on loopback, dissected by tshark 4.0.17). Each
// block is a full BACnet/IP frame; `service_body` strips the BVLL, NPDU and
// APDU headers here in the test, independently of the crate's own PDU layers.
// ---------------------------------------------------------------------------

const CAPTURED: &str = include_str!("vectors/captured.txt");

/// (block name, frame octets) for every block of the capture file.
fn captured_frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut name = None;
    for line in CAPTURED.lines() {
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(n.trim());
        } else if let Some(h) = line.strip_prefix("hex:") {
            let h = h.trim();
            let octets = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect();
            frames.push((name.take().expect("a hex: line after its name: line"), octets));
        }
    }
    frames
}

fn captured(name: &str) -> Vec<u8> {
    captured_frames().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no block {name}")).1
}

/// The service part of an APDU.
struct ServicePart<'a> {
    pdu_type: u8,
    /// One segment of a segmented message.
    segmented: bool,
    choice: u8,
    body: &'a [u8],
}

/// The service choice and body of a BACnet/IP frame carrying an APDU (None
/// for network-layer messages and PDUs without a service body).
fn service_body(frame: &[u8]) -> Option<ServicePart<'_>> {
    // BVLL: type 0x81, function, length (2). Forwarded-NPDU adds 6 octets of B/IP address.
    let mut i = if frame[1] == 0x04 { 10 } else { 4 };
    // NPDU: version, control, optional DNET/DLEN/DADR, SNET/SLEN/SADR, hop count.
    let control = frame[i + 1];
    i += 2;
    if control & 0x80 != 0 {
        return None; // a network-layer message
    }
    if control & 0x20 != 0 {
        i += 3 + frame[i + 2] as usize;
    }
    if control & 0x08 != 0 {
        i += 3 + frame[i + 2] as usize;
    }
    if control & 0x20 != 0 {
        i += 1;
    }
    let apdu = &frame[i..];
    let pdu_type = apdu[0] >> 4;
    let segmented = apdu[0] & 0x08 != 0;
    let (choice_at, body_at) = match pdu_type {
        0 if segmented => (5, 6),
        0 => (3, 4),
        1 => (1, 2),
        3 if segmented => (4, 5),
        3 | 5 => (2, 3),
        _ => return None, // simple ack, segment ack, reject, abort
    };
    Some(ServicePart { pdu_type, segmented, choice: apdu[choice_at], body: &apdu[body_at..] })
}

fn body_of(name: &str) -> Vec<u8> {
    service_body(&captured(name)).unwrap().body.to_vec()
}

fn captured_golden<T: ServiceCodec + PartialEq + Debug>(name: &str, want: &T) {
    let body = body_of(name);
    assert_eq!(&T::decode(&body).unwrap(), want, "{name}");
    assert_eq!(want.to_vec(), body, "{name}");
}

/// Decode a captured body and re-encode it: the octets must come back as the
/// peer sent them.
fn re_encodes<T: ServiceCodec + Debug>(name: &str, body: &[u8]) -> usize {
    let v = T::decode(body).unwrap_or_else(|e| panic!("{name}: {e} in {body:02X?}"));
    assert_eq!(v.to_vec(), body, "{name} re-encoded from {v:?}");
    1
}

#[test]
fn every_captured_group_a_body_decodes_and_re_encodes_octet_for_octet() {
    let mut decoded = 0;
    for (name, frame) in captured_frames() {
        // The raw-client blocks are malformed on purpose; see the next test.
        if name.starts_with("raw-client-") {
            continue;
        }
        let Some(ServicePart { pdu_type, segmented, choice, body }) = service_body(&frame) else { continue };
        if segmented {
            continue; // reassembled in their own test
        }
        decoded += match (pdu_type, choice) {
            (1, 0) => re_encodes::<IAm>(name, body),
            (1, 1) => re_encodes::<IHave>(name, body),
            (1, 7) => re_encodes::<WhoHas>(name, body),
            (1, 8) => re_encodes::<WhoIs>(name, body),
            (0, 12) => re_encodes::<ReadPropertyRequest>(name, body),
            (0, 14) => re_encodes::<ReadPropertyMultipleRequest>(name, body),
            (0, 15) => re_encodes::<WritePropertyRequest>(name, body),
            (0, 16) => re_encodes::<WritePropertyMultipleRequest>(name, body),
            (3, 12) => re_encodes::<ReadPropertyAck>(name, body),
            (3, 14) => re_encodes::<ReadPropertyMultipleAck>(name, body),
            (5, 16) => re_encodes::<WritePropertyMultipleError>(name, body),
            (5, 12 | 14 | 15) => re_encodes::<BacnetError>(name, body),
            _ => 0,
        };
    }
    assert!(decoded > 100, "only {decoded} group A bodies in the capture file");
}

#[test]
fn a_captured_segmented_ack_decodes_once_reassembled() {
    let name = "bacpypes3-server-readpropertymultiple-device-all-max-apdu-206-ack";
    let mut body = Vec::new();
    for segment in [name.to_string(), format!("{name}-2")] {
        let frame = captured(&segment);
        let part = service_body(&frame).unwrap();
        assert!(part.segmented && part.pdu_type == 3 && part.choice == 14, "{segment}");
        body.extend_from_slice(part.body);
    }
    let ack = ReadPropertyMultipleAck::decode(&body).unwrap();
    assert_eq!(ack.to_vec(), body);
    assert_eq!(ack.0.len(), 1);
    assert_eq!(ack.0[0].object, oid(DEVICE, 3001));
    // The first segment alone ends inside a result.
    let first = body_of(name);
    assert_eq!(
        ReadPropertyMultipleAck::decode(&first).unwrap_err().reject_reason(),
        RejectReason::MISSING_REQUIRED_PARAMETER
    );
}

#[test]
fn captured_discovery_bodies_carry_the_expected_fields() {
    captured_golden(
        "rusty-server-whois-global-i-am",
        &IAm {
            device: oid(DEVICE, 4001),
            max_apdu_length_accepted: 1476,
            segmentation_supported: Segmentation::NO_SEGMENTATION,
            vendor_id: 555,
        },
    );
    captured_golden(
        "bacpypes3-server-whois-global-i-am",
        &IAm {
            device: oid(DEVICE, 3001),
            max_apdu_length_accepted: 1024,
            segmentation_supported: Segmentation::SEGMENTED_BOTH,
            vendor_id: 999,
        },
    );
    captured_golden("bacpypes3-client-whois-global-to-rusty", &WhoIs::ALL);
    captured_golden("bacpypes3-client-whois-range-4001-4001-to-rusty", &WhoIs { range: Some((4001, 4001)) });
    captured_golden("bacpypes3-client-whois-range-0-4194303-to-rusty", &WhoIs { range: Some((0, 4_194_303)) });
    captured_golden(
        "bacpypes3-client-whohas-name-av1-to-rusty",
        &WhoHas { range: None, object: WhoHasObject::Name(CharacterString::utf8("av1")) },
    );
    captured_golden(
        "rusty-server-whohas-name-av1-i-have",
        &IHave {
            device: oid(DEVICE, 4001),
            object_id: oid(ANALOG_VALUE, 1),
            object_name: CharacterString::utf8("av1"),
        },
    );
}

#[test]
fn captured_property_access_bodies_carry_the_expected_fields() {
    captured_golden(
        "bacpypes3-client-writeproperty-av1-pv-55.5-p8-to-rusty",
        &WritePropertyRequest {
            object: oid(ANALOG_VALUE, 1),
            property: PRESENT_VALUE,
            array_index: None,
            value: real(55.5),
            priority: Some(8),
        },
    );
    let pv = |value: AnyValue| PropertyValue { property: PRESENT_VALUE, array_index: None, value, priority: Some(9) };
    captured_golden(
        "bacpypes3-client-writepropertymultiple-av1-bv1-p9-to-rusty",
        &WritePropertyMultipleRequest(vec![
            WriteAccessSpecification { object: oid(ANALOG_VALUE, 1), values: vec![pv(real(33.0))] },
            WriteAccessSpecification {
                object: oid(BINARY_VALUE, 1), // active
                values: vec![pv(AnyValue::primitive(Value::Enumerated(1)))],
            },
        ]),
    );
    captured_golden(
        "bacpypes3-client-readpropertymultiple-mixed-errors-to-rusty",
        &ReadPropertyMultipleRequest(vec![
            ReadAccessSpecification {
                object: oid(ANALOG_VALUE, 1),
                properties: vec![
                    PropertyReference::new(PRESENT_VALUE),
                    PropertyReference::new(PropertyIdentifier::NUMBER_OF_STATES),
                ],
            },
            ReadAccessSpecification {
                object: oid(ANALOG_VALUE, 99),
                properties: vec![PropertyReference::new(PRESENT_VALUE)],
            },
        ]),
    );
    let unknown_property = BacnetError::new(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY);
    let unknown_object = BacnetError::new(ErrorClass::OBJECT, UNKNOWN_OBJECT);
    captured_golden(
        "rusty-server-readpropertymultiple-mixed-errors-ack",
        &ReadPropertyMultipleAck(vec![
            ReadAccessResult {
                object: oid(ANALOG_VALUE, 1),
                results: vec![
                    ReadResult { property: PRESENT_VALUE, array_index: None, outcome: Ok(real(42.0)) },
                    ReadResult {
                        property: PropertyIdentifier::NUMBER_OF_STATES,
                        array_index: None,
                        outcome: Err(unknown_property),
                    },
                ],
            },
            ReadAccessResult {
                object: oid(ANALOG_VALUE, 99),
                results: vec![ReadResult { property: PRESENT_VALUE, array_index: None, outcome: Err(unknown_object) }],
            },
        ]),
    );
    assert_eq!(
        body_of("rusty-server-readpropertymultiple-mixed-errors-ack"),
        body_of("bacpypes3-server-readpropertymultiple-mixed-errors-ack")
    );
    captured_golden(
        "rusty-server-readproperty-av1-object-name-ack",
        &ReadPropertyAck {
            object: oid(ANALOG_VALUE, 1),
            property: PropertyIdentifier::OBJECT_NAME,
            array_index: None,
            value: AnyValue::primitive(Value::CharacterString(CharacterString::utf8("av1"))),
        },
    );
    captured_golden("rusty-server-readproperty-unknown-object-error", &unknown_object);
    captured_golden(
        "rusty-server-writeproperty-ai1-pv-denied-error",
        &BacnetError::new(ErrorClass::PROPERTY, WRITE_ACCESS_DENIED),
    );
}

/// The raw malformed requests in the capture file, and the Reject reason
/// rusty-bacnet answered with (the last octet of its Reject PDU).
#[test]
fn captured_malformed_requests_get_the_reject_reasons_peers_give() {
    let rusty_reason = |name: &str| RejectReason(*captured(name).last().unwrap());
    let ours = |name: &str| ReadPropertyRequest::decode(&body_of(name)).unwrap_err().reject_reason();

    // Cut off inside the object identifier: both say missing-required-parameter.
    let name = "raw-client-readproperty-truncated-to-rusty";
    assert_eq!(ours(name), RejectReason::MISSING_REQUIRED_PARAMETER);
    assert_eq!(ours(name), rusty_reason("rusty-server-readproperty-truncated-reject"));

    // No property identifier: both say missing-required-parameter.
    let name = "raw-client-readproperty-missing-property-to-rusty";
    assert_eq!(ours(name), RejectReason::MISSING_REQUIRED_PARAMETER);
    assert_eq!(ours(name), rusty_reason("rusty-server-readproperty-missing-property-reject"));

    // `FF FF` after a complete request: rusty-bacnet reads a malformed tag
    // where an array index could stand (invalid-tag); bacpypes3 ignores it and
    // answers. This crate answers too-many-arguments: the request was complete
    // and octets followed it (Clause 18.8.7).
    let name = "raw-client-readproperty-extra-octets-to-rusty";
    assert_eq!(ours(name), RejectReason::TOO_MANY_ARGUMENTS);
    assert_eq!(rusty_reason("rusty-server-readproperty-extra-octets-reject"), RejectReason::INVALID_TAG);
}
