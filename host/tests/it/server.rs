//! The served Device object, request by request, as the standard's
//! sequence diagrams: client → server, then what the server answers.

use bacnet::apdu::{Apdu, ComplexAck, ConfirmedRequest, MaxApdu, MaxSegments, SegmentInfo};
use bacnet::enums::{
    AbortReason, ConfirmedServiceChoice as S, ErrorClass, ErrorCode, PropertyIdentifier as P, RejectReason,
    UnconfirmedServiceChoice as U,
};
use bacnet::services::{
    BacnetError, IAm, PropertyReference, ReadAccessSpecification, ReadPropertyAck, ReadPropertyMultipleAck,
    ReadPropertyMultipleRequest, ReadPropertyRequest, ServiceCodec, WhoIs,
};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use trellis::server::{DeviceConfig, DeviceOnlyModel, Server, build};

const INSTANCE: u32 = 1234;

fn server() -> Server<DeviceOnlyModel> {
    let model = DeviceOnlyModel::new(INSTANCE, "dut");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(build(model, DeviceConfig::default(), 999)).unwrap()
}

/// Run the server on one APDU.
fn handle(apdu: &[u8], broadcast: bool) -> Option<trellis::server::Reply> {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(server().handle(&requester(), apdu, broadcast))
}

/// The address requests come from.
fn requester() -> trellis::client::DeviceAddress {
    trellis::client::DeviceAddress::direct("127.0.0.1:47900".parse().unwrap())
}

fn device() -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::DEVICE, INSTANCE).unwrap()
}

/// Client → server: a confirmed request; returns the decoded answer's owned bytes.
fn confirmed(service: S, body: &[u8], max_apdu: MaxApdu) -> Vec<u8> {
    let mut apdu = Vec::new();
    Apdu::ConfirmedRequest(ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu,
        invoke_id: 7,
        service,
        body,
    })
    .encode(&mut apdu);
    handle(&apdu, false).expect("a confirmed request is always answered").apdu
}

fn ack_body(reply: &[u8]) -> Vec<u8> {
    match Apdu::decode(reply).unwrap() {
        Apdu::ComplexAck(ComplexAck { invoke_id: 7, body, .. }) => body.to_vec(),
        other => panic!("expected a ComplexACK, got {other:?}"),
    }
}

fn rp(property: P, array_index: Option<u32>) -> Vec<u8> {
    ReadPropertyRequest { object: device(), property, array_index }.to_vec()
}

#[test]
fn read_property_of_the_device_object_name() {
    let reply = confirmed(S::READ_PROPERTY, &rp(P::OBJECT_NAME, None), MaxApdu::UP_TO_1476);
    let ack = ReadPropertyAck::decode(&ack_body(&reply)).unwrap();
    assert_eq!(ack.value.to_string(), "\"dut\"");
}

#[test]
fn the_wildcard_device_instance_reads_this_device() {
    let wildcard = ObjectIdentifier::new(ObjectType::DEVICE, ObjectIdentifier::MAX_INSTANCE).unwrap();
    let body = ReadPropertyRequest { object: wildcard, property: P::OBJECT_IDENTIFIER, array_index: None }.to_vec();
    let ack = ReadPropertyAck::decode(&ack_body(&confirmed(S::READ_PROPERTY, &body, MaxApdu::UP_TO_1476))).unwrap();
    assert_eq!(ack.value.as_primitive(), Some(&Value::ObjectIdentifier(device())));
    assert_eq!(ack.object, device(), "the ACK names the real instance, not the wildcard");
}

#[test]
fn object_list_is_an_array_with_its_length_at_index_0() {
    let len = ReadPropertyAck::decode(&ack_body(&confirmed(
        S::READ_PROPERTY,
        &rp(P::OBJECT_LIST, Some(0)),
        MaxApdu::UP_TO_1476,
    )));
    assert_eq!(len.unwrap().value.as_primitive(), Some(&Value::Unsigned(1)));
    let reply = confirmed(S::READ_PROPERTY, &rp(P::PROPERTY_LIST, Some(0)), MaxApdu::UP_TO_1476);
    assert!(ReadPropertyAck::decode(&ack_body(&reply)).is_ok(), "Property_List is an array too");
    let reply = confirmed(S::READ_PROPERTY, &rp(P::OBJECT_LIST, Some(2)), MaxApdu::UP_TO_1476);
    assert_error(&reply, ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX);
    let reply = confirmed(S::READ_PROPERTY, &rp(P::OBJECT_NAME, Some(1)), MaxApdu::UP_TO_1476);
    assert_error(&reply, ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY);
}

fn assert_error(reply: &[u8], class: ErrorClass, code: ErrorCode) {
    match Apdu::decode(reply).unwrap() {
        Apdu::Error { invoke_id: 7, body, .. } => {
            assert_eq!(BacnetError::decode(body).unwrap(), BacnetError { class, code })
        }
        other => panic!("expected Error {class}: {code}, got {other:?}"),
    }
}

fn assert_reject(reply: &[u8], reason: RejectReason) {
    assert_eq!(Apdu::decode(reply).unwrap(), Apdu::Reject { invoke_id: 7, reason });
}

#[test]
fn unknown_object_and_unknown_property_are_errors() {
    let other = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let body = ReadPropertyRequest { object: other, property: P::PRESENT_VALUE, array_index: None }.to_vec();
    assert_error(
        &confirmed(S::READ_PROPERTY, &body, MaxApdu::UP_TO_1476),
        ErrorClass::OBJECT,
        ErrorCode::UNKNOWN_OBJECT,
    );
    let reply = confirmed(S::READ_PROPERTY, &rp(P::PRESENT_VALUE, None), MaxApdu::UP_TO_1476);
    assert_error(&reply, ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY);
}

#[test]
fn malformed_requests_get_the_reject_reason_the_standard_names() {
    let good = rp(P::OBJECT_NAME, None);
    // Cut off before the property identifier.
    assert_reject(
        &confirmed(S::READ_PROPERTY, &good[..5], MaxApdu::UP_TO_1476),
        RejectReason::MISSING_REQUIRED_PARAMETER,
    );
    // Octets after the last parameter.
    let mut long = good.clone();
    long.push(0x00);
    assert_reject(&confirmed(S::READ_PROPERTY, &long, MaxApdu::UP_TO_1476), RejectReason::TOO_MANY_ARGUMENTS);
    // The property identifier where the object identifier belongs: the
    // required [0] is absent.
    assert_reject(
        &confirmed(S::READ_PROPERTY, &[0x19, 0x55], MaxApdu::UP_TO_1476),
        RejectReason::MISSING_REQUIRED_PARAMETER,
    );
    // An application tag where the context tag [0] belongs.
    let app_tagged = [0xC4, 0x02, 0x00, 0x00, 0x01, 0x19, 0x55];
    assert_reject(&confirmed(S::READ_PROPERTY, &app_tagged, MaxApdu::UP_TO_1476), RejectReason::INVALID_TAG);
    // A service this device does not execute.
    assert_reject(&confirmed(S::VT_OPEN, &[], MaxApdu::UP_TO_1476), RejectReason::UNRECOGNIZED_SERVICE);
}

#[test]
fn every_truncation_of_a_request_is_answered_never_a_panic() {
    let body = ReadPropertyMultipleRequest(vec![ReadAccessSpecification {
        object: device(),
        properties: vec![
            PropertyReference::new(P::OBJECT_NAME),
            PropertyReference { property: P::OBJECT_LIST, array_index: Some(1) },
        ],
    }])
    .to_vec();
    for cut in 0..body.len() {
        let reply = confirmed(S::READ_PROPERTY_MULTIPLE, &body[..cut], MaxApdu::UP_TO_1476);
        assert!(matches!(Apdu::decode(&reply).unwrap(), Apdu::Reject { invoke_id: 7, .. }), "cut at {cut}");
    }
}

#[test]
fn rpm_all_lists_every_property_and_unknown_objects_fail_per_property() {
    let unknown = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 9).unwrap();
    let body = ReadPropertyMultipleRequest(vec![
        ReadAccessSpecification { object: device(), properties: vec![PropertyReference::new(P::ALL)] },
        ReadAccessSpecification { object: unknown, properties: vec![PropertyReference::new(P::OBJECT_NAME)] },
    ])
    .to_vec();
    let ack =
        ReadPropertyMultipleAck::decode(&ack_body(&confirmed(S::READ_PROPERTY_MULTIPLE, &body, MaxApdu::UP_TO_1476)))
            .unwrap();
    let props: Vec<P> = ack.0[0].results.iter().map(|r| r.property).collect();
    assert_eq!(&props[..3], &[P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE]);
    assert!(props.contains(&P::PROTOCOL_SERVICES_SUPPORTED) && props.contains(&P::DATABASE_REVISION));
    assert!(ack.0[0].results.iter().all(|r| r.outcome.is_ok()));
    let e = ack.0[1].results[0].outcome.as_ref().unwrap_err();
    assert_eq!((e.class, e.code), (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
}

#[test]
fn an_answer_larger_than_the_requesters_max_apdu_is_aborted() {
    let body = ReadPropertyMultipleRequest(vec![ReadAccessSpecification {
        object: device(),
        properties: vec![PropertyReference::new(P::ALL)],
    }])
    .to_vec();
    let reply = confirmed(S::READ_PROPERTY_MULTIPLE, &body, MaxApdu::UP_TO_50);
    assert_eq!(
        Apdu::decode(&reply).unwrap(),
        Apdu::Abort { server: true, invoke_id: 7, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED }
    );
}

#[test]
fn a_segmented_request_is_aborted_and_a_broadcast_confirmed_request_ignored() {
    let mut apdu = Vec::new();
    let body = rp(P::OBJECT_NAME, None);
    Apdu::ConfirmedRequest(ConfirmedRequest {
        segment: Some(SegmentInfo { sequence_number: 0, proposed_window_size: 1, more_follows: true }),
        segmented_response_accepted: true,
        max_segments: MaxSegments::UNSPECIFIED,
        max_apdu: MaxApdu::UP_TO_1476,
        invoke_id: 7,
        service: S::READ_PROPERTY,
        body: &body,
    })
    .encode(&mut apdu);
    let reply = handle(&apdu, false).unwrap();
    assert_eq!(
        Apdu::decode(&reply.apdu).unwrap(),
        Apdu::Abort { server: true, invoke_id: 7, reason: AbortReason::SEGMENTATION_NOT_SUPPORTED }
    );
    assert_eq!(handle(&apdu, true), None);
}

#[test]
fn who_is_in_range_gets_i_am_and_out_of_range_gets_silence() {
    let who_is = |range| {
        let mut apdu = Vec::new();
        Apdu::UnconfirmedRequest { service: U::WHO_IS, body: &WhoIs { range }.to_vec() }.encode(&mut apdu);
        handle(&apdu, true)
    };
    let reply = who_is(Some((1000, 2000))).expect("I-Am");
    assert!(reply.broadcast, "a broadcast Who-Is is answered by a broadcast I-Am");
    let Apdu::UnconfirmedRequest { service: U::I_AM, body } = Apdu::decode(&reply.apdu).unwrap() else { panic!() };
    assert_eq!(IAm::decode(body).unwrap().device, device());
    assert!(who_is(Some((1, 5))).is_none());
    assert!(who_is(None).is_some());
}

/// A model whose plugin was disabled after repeated failures.
struct DisabledModel;

impl trellis::model::ObjectModel for DisabledModel {
    async fn objects(&self) -> Result<Vec<trellis::model::ObjectInfo>, trellis::model::ModelError> {
        Ok(vec![trellis::model::ObjectInfo { id: device(), name: "dut".into() }])
    }
    async fn read(
        &self,
        _: &[trellis::model::PropertyTarget],
    ) -> Result<Vec<Vec<trellis::model::PropertyRead>>, trellis::model::ModelError> {
        Err(trellis::model::ModelError::Disabled { plugin: "broken".into() })
    }
    async fn write(
        &self,
        _: Vec<trellis::model::PropertyWrite>,
    ) -> Result<Vec<Result<(), BacnetError>>, trellis::model::ModelError> {
        Err(trellis::model::ModelError::Disabled { plugin: "broken".into() })
    }
}

#[test]
fn the_objects_of_a_disabled_plugin_are_reported_out_of_service() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let server = rt.block_on(build(DisabledModel, DeviceConfig::default(), 999)).unwrap();
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let ask = |property| {
        let body = ReadPropertyRequest { object: av1, property, array_index: None }.to_vec();
        let mut apdu = Vec::new();
        Apdu::ConfirmedRequest(ConfirmedRequest {
            segment: None,
            segmented_response_accepted: false,
            max_segments: MaxSegments::UNSPECIFIED,
            max_apdu: MaxApdu::UP_TO_1476,
            invoke_id: 7,
            service: S::READ_PROPERTY,
            body: &body,
        })
        .encode(&mut apdu);
        rt.block_on(server.handle(&requester(), &apdu, false)).unwrap().apdu
    };
    let flags = ReadPropertyAck::decode(&ack_body(&ask(P::STATUS_FLAGS))).unwrap();
    assert_eq!(
        flags.value.as_primitive(),
        Some(&Value::BitString(bacnet::BitString::from_bits(&[false, true, false, true])))
    );
    let oos = ReadPropertyAck::decode(&ack_body(&ask(P::OUT_OF_SERVICE))).unwrap();
    assert_eq!(oos.value.as_primitive(), Some(&Value::Boolean(true)));
    assert_error(&ask(P::PRESENT_VALUE), ErrorClass::DEVICE, ErrorCode::OPERATIONAL_PROBLEM);
}
