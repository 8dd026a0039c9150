//! Who-Is, ReadProperty and WriteProperty from the gateway, over the line,
//! and the protocol's answers to what the node does not do.

use crate::line::{
    Answer, BAUD, DEVICE_INSTANCE, NODE_MAC, Segment, apdu_of, confirmed, decode_answer, device, oid, points,
};
use bacnet::apdu::Apdu;
use bacnet::services::{IAm, ServiceCodec};
use bacnet::{
    AbortReason, AnyValue, ConfirmedServiceChoice, Element, ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P,
    RejectReason, UnconfirmedServiceChoice, Value,
};
use trellis_mstp::sim::LineConfig;
use trellis_mstp_node::Device;

/// A segment whose ring has formed (the node found the gateway).
fn ready(dev: &mut Device<'_>) -> Segment {
    let mut seg = Segment::new(true, LineConfig::new(BAUD));
    seg.run_for(dev, 4_000_000);
    seg.gateway_received();
    seg
}

fn value(v: Value) -> Answer {
    Answer::Value(AnyValue::primitive(v))
}

fn text(s: &str) -> Answer {
    value(Value::CharacterString(bacnet::CharacterString::utf8(s)))
}

fn error(class: ErrorClass, code: ErrorCode) -> Answer {
    Answer::Error(class, code)
}

#[test]
fn readproperty_reads_the_device_object_s_required_properties() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let me = oid(ObjectType::DEVICE, DEVICE_INSTANCE);
    let mut read = |p: P, index: Option<u32>| seg.read(&mut dev, me, p, index);

    assert_eq!(read(P::OBJECT_IDENTIFIER, None), value(Value::ObjectIdentifier(me)));
    assert_eq!(read(P::OBJECT_NAME, None), text("Trellis MS/TP node 5"));
    assert_eq!(read(P::OBJECT_TYPE, None), value(Value::Enumerated(ObjectType::DEVICE.0)));
    assert_eq!(read(P::SYSTEM_STATUS, None), value(Value::Enumerated(0)));
    assert_eq!(read(P::VENDOR_NAME, None), text("Trellis"));
    assert_eq!(read(P::VENDOR_IDENTIFIER, None), value(Value::Unsigned(0xFFFF)));
    assert_eq!(read(P::MODEL_NAME, None), text("trellis-mstp-node test"));
    assert_eq!(read(P::PROTOCOL_VERSION, None), value(Value::Unsigned(1)));
    assert_eq!(read(P::PROTOCOL_REVISION, None), value(Value::Unsigned(22)));
    assert_eq!(read(P::MAX_APDU_LENGTH_ACCEPTED, None), value(Value::Unsigned(480)));
    assert_eq!(read(P::SEGMENTATION_SUPPORTED, None), value(Value::Enumerated(3)));
    assert_eq!(read(P::MAX_MASTER, None), value(Value::Unsigned(127)));
    assert_eq!(read(P::MAX_INFO_FRAMES, None), value(Value::Unsigned(1)));
    assert_eq!(read(P::DATABASE_REVISION, None), value(Value::Unsigned(1)));
    assert_eq!(read(P::DEVICE_ADDRESS_BINDING, None), Answer::Value(AnyValue::default()));

    let Answer::Value(services) = read(P::PROTOCOL_SERVICES_SUPPORTED, None) else { panic!("no services") };
    let Some(Value::BitString(bits)) = services.as_primitive() else { panic!("not a bit string") };
    let set: Vec<usize> = bits.iter().enumerate().filter(|(_, b)| *b).map(|(i, _)| i).collect();
    assert_eq!(bits.len(), 47, "Protocol_Revision 22's 47 services");
    assert_eq!(set, [12, 15, 26, 34], "readProperty, writeProperty, i-Am, who-Is");
    let Answer::Value(types) = read(P::PROTOCOL_OBJECT_TYPES_SUPPORTED, None) else { panic!("no types") };
    let Some(Value::BitString(bits)) = types.as_primitive() else { panic!("not a bit string") };
    let set: Vec<usize> = bits.iter().enumerate().filter(|(_, b)| *b).map(|(i, _)| i).collect();
    assert_eq!(set, [0, 2, 3, 5, 8], "analog input/value, binary input/value, device");

    // Object_List, whole and by index (0: its length).
    let ids = [
        me,
        oid(ObjectType::ANALOG_INPUT, 1),
        oid(ObjectType::ANALOG_VALUE, 1),
        oid(ObjectType::BINARY_INPUT, 1),
        oid(ObjectType::BINARY_VALUE, 1),
    ];
    let list = AnyValue(ids.iter().map(|&o| Element::Application(Value::ObjectIdentifier(o))).collect());
    assert_eq!(read(P::OBJECT_LIST, None), Answer::Value(list));
    assert_eq!(read(P::OBJECT_LIST, Some(0)), value(Value::Unsigned(5)));
    assert_eq!(read(P::OBJECT_LIST, Some(4)), value(Value::ObjectIdentifier(ids[3])));
    assert_eq!(read(P::OBJECT_LIST, Some(6)), error(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX));
    // Property_List leaves out the four every object has.
    let Answer::Value(props) = read(P::PROPERTY_LIST, None) else { panic!("no Property_List") };
    assert_eq!(props.0.len(), 19);
    assert!(props.0.contains(&Element::Application(Value::Enumerated(P::MAX_MASTER.0))));
    assert!(!props.0.contains(&Element::Application(Value::Enumerated(P::OBJECT_NAME.0))));

    // The wildcard instance 4194303 names the device that receives it.
    let wildcard = oid(ObjectType::DEVICE, 4_194_303);
    assert_eq!(seg.read(&mut dev, wildcard, P::OBJECT_IDENTIFIER, None), value(Value::ObjectIdentifier(me)));
}

#[test]
fn readproperty_reads_each_point_and_errors_name_what_is_missing() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let ai = oid(ObjectType::ANALOG_INPUT, 1);
    let bi = oid(ObjectType::BINARY_INPUT, 1);
    let bv = oid(ObjectType::BINARY_VALUE, 1);

    assert_eq!(seg.read(&mut dev, ai, P::PRESENT_VALUE, None), value(Value::Real(18.5)));
    assert_eq!(seg.read(&mut dev, ai, P::OBJECT_NAME, None), text("Supply Air Temp"));
    assert_eq!(seg.read(&mut dev, ai, P::UNITS, None), value(Value::Enumerated(62)));
    assert_eq!(seg.read(&mut dev, ai, P::EVENT_STATE, None), value(Value::Enumerated(0)));
    assert_eq!(seg.read(&mut dev, ai, P::OUT_OF_SERVICE, None), value(Value::Boolean(false)));
    let Answer::Value(flags) = seg.read(&mut dev, ai, P::STATUS_FLAGS, None) else { panic!("no Status_Flags") };
    let Some(Value::BitString(flags)) = flags.as_primitive() else { panic!("not a bit string") };
    assert_eq!((flags.len(), flags.iter().any(|b| b)), (4, false));
    assert_eq!(seg.read(&mut dev, bi, P::PRESENT_VALUE, None), value(Value::Enumerated(0)));
    assert_eq!(seg.read(&mut dev, bi, P::POLARITY, None), value(Value::Enumerated(0)));
    assert_eq!(seg.read(&mut dev, bv, P::PROPERTY_LIST, Some(0)), value(Value::Unsigned(4)));

    assert_eq!(
        seg.read(&mut dev, oid(ObjectType::ANALOG_VALUE, 9), P::PRESENT_VALUE, None),
        error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)
    );
    assert_eq!(seg.read(&mut dev, bv, P::UNITS, None), error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
    assert_eq!(
        seg.read(&mut dev, ai, P::PRESENT_VALUE, Some(1)),
        error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)
    );
}

#[test]
fn writeproperty_writes_values_and_refuses_what_it_must() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let ai = oid(ObjectType::ANALOG_INPUT, 1);
    let av = oid(ObjectType::ANALOG_VALUE, 1);
    let bv = oid(ObjectType::BINARY_VALUE, 1);

    // A setpoint write, a priority accepted and ignored (not commandable).
    assert_eq!(seg.write(&mut dev, av, P::PRESENT_VALUE, Value::Real(23.5), Some(8)), Answer::Ok);
    assert_eq!(seg.read(&mut dev, av, P::PRESENT_VALUE, None), value(Value::Real(23.5)));
    assert!(dev.points[1].changed, "the application sees the write");
    assert_eq!(seg.write(&mut dev, bv, P::PRESENT_VALUE, Value::Enumerated(1), None), Answer::Ok);
    assert_eq!(seg.read(&mut dev, bv, P::PRESENT_VALUE, None), value(Value::Enumerated(1)));

    // An input is the hardware's until it is taken out of service.
    assert_eq!(
        seg.write(&mut dev, ai, P::PRESENT_VALUE, Value::Real(40.0), None),
        error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
    );
    assert_eq!(seg.write(&mut dev, ai, P::OUT_OF_SERVICE, Value::Boolean(true), None), Answer::Ok);
    assert_eq!(seg.write(&mut dev, ai, P::PRESENT_VALUE, Value::Real(40.0), None), Answer::Ok);
    let Answer::Value(flags) = seg.read(&mut dev, ai, P::STATUS_FLAGS, None) else { panic!("no Status_Flags") };
    let Some(Value::BitString(flags)) = flags.as_primitive() else { panic!("not a bit string") };
    assert_eq!(flags.iter().collect::<Vec<_>>(), [false, false, false, true], "out-of-service flagged");

    // Wrong datatype, out of range, read-only, unknown.
    assert_eq!(
        seg.write(&mut dev, av, P::PRESENT_VALUE, Value::Unsigned(20), None),
        error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE)
    );
    assert_eq!(
        seg.write(&mut dev, bv, P::PRESENT_VALUE, Value::Enumerated(2), None),
        error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE)
    );
    assert_eq!(
        seg.write(&mut dev, av, P::OBJECT_NAME, Value::CharacterString(bacnet::CharacterString::utf8("x")), None),
        error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
    );
    assert_eq!(
        seg.write(
            &mut dev,
            oid(ObjectType::DEVICE, DEVICE_INSTANCE),
            P::VENDOR_NAME,
            Value::CharacterString(bacnet::CharacterString::utf8("x")),
            None
        ),
        error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
    );
    assert_eq!(
        seg.write(&mut dev, bv, P::UNITS, Value::Enumerated(62), None),
        error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)
    );
    assert_eq!(
        seg.write(&mut dev, oid(ObjectType::BINARY_VALUE, 2), P::PRESENT_VALUE, Value::Enumerated(1), None),
        error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)
    );
    assert_eq!(dev.points[1].present_value, 23.5, "no refused write changed anything");
}

#[test]
fn what_the_node_does_not_do_gets_the_protocol_s_answer() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let av = oid(ObjectType::ANALOG_VALUE, 1);
    let mut rp = Vec::new();
    bacnet::services::ReadPropertyRequest { object: av, property: P::PRESENT_VALUE, array_index: None }.encode(&mut rp);

    // ReadPropertyMultiple: not a service it executes.
    let npdu = confirmed(1, 5, ConfirmedServiceChoice::READ_PROPERTY_MULTIPLE, &rp);
    let answer = seg.ask(&mut dev, npdu);
    assert_eq!(decode_answer(&answer, 1), Answer::Reject(RejectReason::UNRECOGNIZED_SERVICE));
    // A segment of a segmented request.
    let mut npdu = vec![0x01, 0x04, 0x08, 0x05, 2, 0, 4, ConfirmedServiceChoice::WRITE_PROPERTY.0];
    npdu.extend_from_slice(&rp);
    let answer = seg.ask(&mut dev, npdu);
    assert_eq!(decode_answer(&answer, 2), Answer::Abort(AbortReason::SEGMENTATION_NOT_SUPPORTED));
    // A ReadProperty without its property.
    let npdu = confirmed(3, 5, ConfirmedServiceChoice::READ_PROPERTY, &rp[..5]);
    let answer = seg.ask(&mut dev, npdu);
    assert_eq!(decode_answer(&answer, 3), Answer::Reject(RejectReason::MISSING_REQUIRED_PARAMETER));
    // One parameter too many.
    let mut long = rp.clone();
    long.extend_from_slice(&[0x39, 0x01]);
    let answer = seg.ask(&mut dev, confirmed(4, 5, ConfirmedServiceChoice::READ_PROPERTY, &long));
    assert_eq!(decode_answer(&answer, 4), Answer::Reject(RejectReason::TOO_MANY_ARGUMENTS));
    // An answer larger than the requester takes (50 octets), and no segmentation.
    let mut big = Vec::new();
    bacnet::services::ReadPropertyRequest {
        object: oid(ObjectType::DEVICE, DEVICE_INSTANCE),
        property: P::PROPERTY_LIST,
        array_index: None,
    }
    .encode(&mut big);
    let answer = seg.ask(&mut dev, confirmed(5, 0, ConfirmedServiceChoice::READ_PROPERTY, &big));
    assert_eq!(decode_answer(&answer, 5), Answer::Abort(AbortReason::SEGMENTATION_NOT_SUPPORTED));
    // WriteProperty at priority 17.
    let mut wp = Vec::new();
    bacnet::services::WritePropertyRequest {
        object: av,
        property: P::PRESENT_VALUE,
        array_index: None,
        value: AnyValue::primitive(Value::Real(1.0)),
        priority: Some(16),
    }
    .encode(&mut wp);
    *wp.last_mut().expect("the priority") = 17;
    let answer = seg.ask(&mut dev, confirmed(6, 5, ConfirmedServiceChoice::WRITE_PROPERTY, &wp));
    assert_eq!(decode_answer(&answer, 6), Answer::Reject(RejectReason::PARAMETER_OUT_OF_RANGE));
}

#[test]
fn a_request_through_a_router_is_answered_back_through_it() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let mut rp = Vec::new();
    let av = oid(ObjectType::ANALOG_VALUE, 1);
    bacnet::services::ReadPropertyRequest { object: av, property: P::PRESENT_VALUE, array_index: None }.encode(&mut rp);
    // From network 1, MAC 127.0.0.1:47808, as the gateway's router sends it.
    let mut npdu = vec![0x01, 0x0C, 0x00, 0x01, 6, 127, 0, 0, 1, 0xBA, 0xC0, 0x00, 0x05, 9, 0x0C];
    npdu.extend_from_slice(&rp);
    let answer = seg.ask(&mut dev, npdu);
    let n = bacnet::npdu::Npdu::decode(&answer).expect("an NPDU");
    let to = n.destination.expect("a routed answer");
    assert_eq!((to.net, to.mac), (1, &[127, 0, 0, 1, 0xBA, 0xC0][..]));
    assert_eq!(n.hop_count, 255);
    assert_eq!(decode_answer(&answer, 9), value(Value::Real(21.0)));
}

#[test]
fn who_is_gets_an_i_am_at_the_next_token_when_the_range_holds_the_device() {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut seg = ready(&mut dev);
    let who_is = |range: Option<(u32, u32)>| {
        let mut npdu = vec![0x01, 0x00, 0x10, UnconfirmedServiceChoice::WHO_IS.0];
        if let Some((low, high)) = range {
            bacnet::services::WhoIs { range: Some((low, high)) }.encode(&mut npdu);
        }
        npdu
    };
    for (range, answered) in
        [(None, true), (Some((7800, 7810)), true), (Some((7805, 7805)), true), (Some((1, 7804)), false)]
    {
        seg.gateway().send(255, who_is(range), false).expect("a broadcast Who-Is");
        seg.run_for(&mut dev, 300_000);
        let i_ams: Vec<_> = seg.gateway_received().into_iter().filter(|r| r.source_mac == NODE_MAC).collect();
        assert_eq!(i_ams.len(), usize::from(answered), "Who-Is {range:?}");
        if let Some(r) = i_ams.first() {
            let n = bacnet::npdu::Npdu::decode(&r.npdu).expect("an NPDU");
            assert_eq!(n.destination.map(|d| d.net), Some(0xFFFF), "a global broadcast");
            let Apdu::UnconfirmedRequest { body, .. } = apdu_of(&r.npdu) else { panic!("not an I-Am") };
            assert_eq!(IAm::decode(body).expect("an I-Am").device.instance, DEVICE_INSTANCE);
        }
    }
}
