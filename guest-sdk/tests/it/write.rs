//! WriteProperty (Clause 15.9) and command prioritization (Clause 19.2).

use super::*;
use trellis_guest_sdk::bacnet::{CharacterSet, CharacterString};
use trellis_guest_sdk::errors::*;
use trellis_guest_sdk::{PresentValue, PropertyIdentifier as P, PropertyRef, Write};

fn write(s: &mut Store, object: ObjectIdentifier, p: P, v: Value) -> Result<(), trellis_guest_sdk::BacnetError> {
    s.write(&Write::new(object, p, v))
}

fn command(
    s: &mut Store,
    object: ObjectIdentifier,
    v: Value,
    priority: u8,
) -> Result<(), trellis_guest_sdk::BacnetError> {
    s.write(&Write::new(object, P::PRESENT_VALUE, v).at_priority(priority))
}

#[test]
fn present_value_of_an_input_in_service_is_write_access_denied() {
    let mut s = store();
    assert_eq!(write(&mut s, ZONE_TEMP, P::PRESENT_VALUE, Value::Real(30.0)), Err(WRITE_ACCESS_DENIED));
    assert_eq!(write(&mut s, OCCUPANCY, P::PRESENT_VALUE, Value::Enumerated(1)), Err(WRITE_ACCESS_DENIED));
    assert_eq!(write(&mut s, FAN_STATUS, P::PRESENT_VALUE, Value::Unsigned(2)), Err(WRITE_ACCESS_DENIED));
    assert_eq!(s.analog(ZONE_TEMP), Some(20.0));
}

#[test]
fn out_of_service_decouples_an_input_from_the_model_and_lets_clients_write_it() {
    let mut s = store();
    write(&mut s, ZONE_TEMP, P::OUT_OF_SERVICE, Value::Boolean(true)).unwrap();
    write(&mut s, ZONE_TEMP, P::PRESENT_VALUE, Value::Real(30.0)).unwrap();
    assert_eq!(s.update(ZONE_TEMP, 22.0), Ok(false), "the model's value is ignored");
    assert_eq!(s.analog(ZONE_TEMP), Some(30.0));
    write(&mut s, ZONE_TEMP, P::OUT_OF_SERVICE, Value::Boolean(false)).unwrap();
    assert_eq!(s.update(ZONE_TEMP, 22.0), Ok(true));
    assert_eq!(s.analog(ZONE_TEMP), Some(22.0));
}

#[test]
fn a_command_without_a_priority_is_taken_at_priority_16() {
    let mut s = store();
    write(&mut s, SETPOINT, P::PRESENT_VALUE, Value::Real(22.5)).unwrap();
    assert_eq!(s.command_priority(SETPOINT), Some(16));
    assert_eq!(read_index(&s, SETPOINT, P::PRIORITY_ARRAY, 16), Ok(prim(Value::Real(22.5))));
}

#[test]
fn the_highest_priority_command_wins_and_null_relinquishes_down_to_relinquish_default() {
    let mut s = store();
    command(&mut s, SETPOINT, Value::Real(19.0), 12).unwrap();
    command(&mut s, SETPOINT, Value::Real(23.0), 8).unwrap();
    assert_eq!(s.analog(SETPOINT), Some(23.0));
    command(&mut s, SETPOINT, Value::Real(20.0), 16).unwrap();
    assert_eq!(s.analog(SETPOINT), Some(23.0), "a lower priority does not take over");
    command(&mut s, SETPOINT, Value::Null, 8).unwrap();
    assert_eq!(s.analog(SETPOINT), Some(19.0));
    command(&mut s, SETPOINT, Value::Null, 12).unwrap();
    command(&mut s, SETPOINT, Value::Null, 16).unwrap();
    assert_eq!(s.analog(SETPOINT), Some(21.0), "Relinquish_Default");
    assert_eq!(s.command_priority(SETPOINT), None);
    // Relinquishing an empty slot is not an error.
    command(&mut s, SETPOINT, Value::Null, 1).unwrap();
}

#[test]
fn every_commandable_class_takes_its_own_datatype() {
    let mut s = store();
    command(&mut s, VALVE, Value::Real(55.0), 8).unwrap();
    command(&mut s, FAN, Value::Enumerated(1), 8).unwrap();
    command(&mut s, OVERRIDE, Value::Enumerated(1), 8).unwrap();
    command(&mut s, SPEED, Value::Unsigned(3), 8).unwrap();
    assert_eq!(s.present_value(VALVE), Some(PresentValue::Analog(55.0)));
    assert_eq!(s.binary(FAN), Some(true));
    assert_eq!(s.binary(OVERRIDE), Some(true));
    assert_eq!(s.multi_state(SPEED), Some(3));
}

#[test]
fn a_priority_outside_1_to_16_is_value_out_of_range() {
    let mut s = store();
    assert_eq!(command(&mut s, SETPOINT, Value::Real(20.0), 0), Err(VALUE_OUT_OF_RANGE));
    assert_eq!(command(&mut s, SETPOINT, Value::Real(20.0), 17), Err(VALUE_OUT_OF_RANGE));
    assert_eq!(command(&mut s, SETPOINT, Value::Real(20.0), 255), Err(VALUE_OUT_OF_RANGE));
}

#[test]
fn priority_6_is_reserved_for_minimum_on_off_and_write_access_denied() {
    let mut s = store();
    assert_eq!(command(&mut s, FAN, Value::Enumerated(1), 6), Err(WRITE_ACCESS_DENIED));
    assert_eq!(command(&mut s, FAN, Value::Null, 6), Err(WRITE_ACCESS_DENIED));
    assert_eq!(s.command_priority(FAN), None);
    // The datatype is checked first.
    assert_eq!(command(&mut s, FAN, Value::Real(1.0), 6), Err(INVALID_DATA_TYPE));
}

#[test]
fn a_value_of_the_wrong_datatype_is_invalid_data_type() {
    let mut s = store();
    assert_eq!(command(&mut s, SETPOINT, Value::Unsigned(20), 8), Err(INVALID_DATA_TYPE));
    assert_eq!(command(&mut s, SETPOINT, Value::Double(20.0), 8), Err(INVALID_DATA_TYPE));
    assert_eq!(command(&mut s, FAN, Value::Boolean(true), 8), Err(INVALID_DATA_TYPE));
    assert_eq!(command(&mut s, SPEED, Value::Enumerated(1), 8), Err(INVALID_DATA_TYPE));
    assert_eq!(
        write(&mut s, OFFSET, P::PRESENT_VALUE, Value::Null),
        Err(INVALID_DATA_TYPE),
        "Null on a non-commandable"
    );
    assert_eq!(write(&mut s, ZONE_TEMP, P::OUT_OF_SERVICE, Value::Enumerated(1)), Err(INVALID_DATA_TYPE));
    assert_eq!(write(&mut s, ZONE_TEMP, P::OBJECT_NAME, Value::OctetString(b"x".to_vec())), Err(INVALID_DATA_TYPE));
    let two_values = AnyValue(vec![
        trellis_guest_sdk::bacnet::Element::Application(Value::Real(1.0)),
        trellis_guest_sdk::bacnet::Element::Application(Value::Real(2.0)),
    ]);
    let w = Write { target: PropertyRef::new(OFFSET, P::PRESENT_VALUE), value: two_values, priority: None };
    assert_eq!(s.write(&w), Err(INVALID_DATA_TYPE));
}

#[test]
fn a_binary_value_above_active_is_value_out_of_range() {
    let mut s = store();
    assert_eq!(command(&mut s, FAN, Value::Enumerated(2), 8), Err(VALUE_OUT_OF_RANGE));
}

#[test]
fn a_state_outside_1_to_number_of_states_is_value_out_of_range() {
    let mut s = store();
    assert_eq!(write(&mut s, MODE, P::PRESENT_VALUE, Value::Unsigned(0)), Err(VALUE_OUT_OF_RANGE));
    assert_eq!(write(&mut s, MODE, P::PRESENT_VALUE, Value::Unsigned(5)), Err(VALUE_OUT_OF_RANGE));
    assert_eq!(command(&mut s, SPEED, Value::Unsigned(4), 8), Err(VALUE_OUT_OF_RANGE));
    write(&mut s, MODE, P::PRESENT_VALUE, Value::Unsigned(2)).unwrap();
    assert_eq!(s.multi_state(MODE), Some(2));
}

#[test]
fn a_real_that_is_not_a_number_is_value_out_of_range() {
    let mut s = store();
    assert_eq!(command(&mut s, SETPOINT, Value::Real(f32::NAN), 8), Err(VALUE_OUT_OF_RANGE));
    assert_eq!(write(&mut s, OFFSET, P::PRESENT_VALUE, Value::Real(f32::INFINITY)), Err(VALUE_OUT_OF_RANGE));
}

#[test]
fn a_priority_is_ignored_for_a_property_that_is_not_commandable() {
    let mut s = store();
    command(&mut s, OFFSET, Value::Real(1.5), 3).unwrap();
    assert_eq!(s.analog(OFFSET), Some(1.5));
    command(&mut s, OFFSET, Value::Real(2.5), 6).unwrap();
    assert_eq!(s.analog(OFFSET), Some(2.5), "priority 6 is not special off a priority array");
}

#[test]
fn name_description_out_of_service_and_cov_increment_are_writable() {
    let mut s = store();
    write(&mut s, ZONE_TEMP, P::OBJECT_NAME, Value::CharacterString(CharacterString::utf8("Zone 1 Temp"))).unwrap();
    write(&mut s, ZONE_TEMP, P::DESCRIPTION, Value::CharacterString(CharacterString::utf8("Moved"))).unwrap();
    write(&mut s, ZONE_TEMP, P::OUT_OF_SERVICE, Value::Boolean(true)).unwrap();
    write(&mut s, ZONE_TEMP, P::COV_INCREMENT, Value::Real(0.25)).unwrap();
    assert_eq!(read(&s, ZONE_TEMP, P::OBJECT_NAME), Ok(text("Zone 1 Temp")));
    assert_eq!(s.find("Zone 1 Temp"), Some(ZONE_TEMP));
    assert_eq!(s.find("Zone Temp"), None);
    assert_eq!(read(&s, ZONE_TEMP, P::DESCRIPTION), Ok(text("Moved")));
    assert_eq!(read(&s, ZONE_TEMP, P::COV_INCREMENT), Ok(prim(Value::Real(0.25))));
    assert!(s.take_objects_changed(), "a rename changes the host's object list");
}

#[test]
fn a_negative_cov_increment_is_value_out_of_range() {
    let mut s = store();
    assert_eq!(write(&mut s, ZONE_TEMP, P::COV_INCREMENT, Value::Real(-1.0)), Err(VALUE_OUT_OF_RANGE));
}

#[test]
fn object_name_is_unique_in_the_device_and_not_empty() {
    let mut s = store();
    let name = |t: &str| Value::CharacterString(CharacterString::utf8(t));
    assert_eq!(write(&mut s, ZONE_TEMP, P::OBJECT_NAME, name("Valve")), Err(DUPLICATE_NAME));
    assert_eq!(write(&mut s, ZONE_TEMP, P::OBJECT_NAME, name("Test Device")), Err(DUPLICATE_NAME));
    assert_eq!(write(&mut s, ZONE_TEMP, P::OBJECT_NAME, name("  ")), Err(VALUE_OUT_OF_RANGE));
    write(&mut s, ZONE_TEMP, P::OBJECT_NAME, name("Zone Temp")).unwrap();
}

#[test]
fn a_name_in_latin_1_or_ucs_2_is_taken_and_a_set_without_tables_is_refused() {
    let mut s = store();
    let latin1 = CharacterString::encode(CharacterSet::ISO_8859_1, 0, "Zone °C").unwrap();
    write(&mut s, ZONE_TEMP, P::OBJECT_NAME, Value::CharacterString(latin1)).unwrap();
    assert_eq!(s.name(ZONE_TEMP), Some("Zone °C"));
    let ucs2 = CharacterString::encode(CharacterSet::ISO_10646_UCS_2, 0, "Zone Ω").unwrap();
    write(&mut s, ZONE_TEMP, P::DESCRIPTION, Value::CharacterString(ucs2)).unwrap();
    assert_eq!(read(&s, ZONE_TEMP, P::DESCRIPTION), Ok(text("Zone Ω")));
    let dbcs = CharacterString { charset: CharacterSet::IBM_MICROSOFT_DBCS, code_page: 932, bytes: vec![0x82, 0xA0] };
    assert_eq!(
        write(&mut s, ZONE_TEMP, P::OBJECT_NAME, Value::CharacterString(dbcs)),
        Err(CHARACTER_SET_NOT_SUPPORTED)
    );
}

#[test]
fn every_other_property_is_write_access_denied() {
    let mut s = store();
    let denied = [
        (ZONE_TEMP, P::OBJECT_IDENTIFIER, Value::ObjectIdentifier(ZONE_TEMP)),
        (ZONE_TEMP, P::OBJECT_TYPE, Value::Enumerated(0)),
        (ZONE_TEMP, P::UNITS, Value::Enumerated(64)),
        (ZONE_TEMP, P::STATUS_FLAGS, Value::Null),
        (ZONE_TEMP, P::EVENT_STATE, Value::Enumerated(0)),
        (ZONE_TEMP, P::RELIABILITY, Value::Enumerated(0)),
        (ZONE_TEMP, P::PROPERTY_LIST, Value::Null),
        (SETPOINT, P::PRIORITY_ARRAY, Value::Null),
        (SETPOINT, P::RELINQUISH_DEFAULT, Value::Real(20.0)),
        (SETPOINT, P::CURRENT_COMMAND_PRIORITY, Value::Null),
        (MODE, P::NUMBER_OF_STATES, Value::Unsigned(5)),
        (MODE, P::STATE_TEXT, Value::Null),
        (OCCUPANCY, P::POLARITY, Value::Enumerated(1)),
        (OCCUPANCY, P::ACTIVE_TEXT, Value::CharacterString(CharacterString::utf8("x"))),
    ];
    for (object, p, v) in denied {
        assert_eq!(write(&mut s, object, p, v), Err(WRITE_ACCESS_DENIED), "{object} {p}");
    }
    let element = Write {
        target: PropertyRef::element(SETPOINT, P::PRIORITY_ARRAY, 8),
        value: prim(Value::Real(1.0)),
        priority: None,
    };
    assert_eq!(s.write(&element), Err(WRITE_ACCESS_DENIED), "an element of the priority array");
}

#[test]
fn an_array_index_on_a_property_that_is_not_an_array_is_property_is_not_an_array() {
    let mut s = store();
    let w = Write {
        target: PropertyRef::element(SETPOINT, P::PRESENT_VALUE, 1),
        value: prim(Value::Real(1.0)),
        priority: Some(8),
    };
    assert_eq!(s.write(&w), Err(PROPERTY_IS_NOT_AN_ARRAY));
}

#[test]
fn writes_to_unknown_objects_and_properties_answer_like_reads() {
    let mut s = store();
    assert_eq!(
        write(&mut s, id(ObjectType::ANALOG_VALUE, 77), P::PRESENT_VALUE, Value::Real(1.0)),
        Err(UNKNOWN_OBJECT)
    );
    assert_eq!(write(&mut s, OCCUPANCY, P::UNITS, Value::Enumerated(1)), Err(UNKNOWN_PROPERTY));
    assert_eq!(write(&mut s, OFFSET, P::PRIORITY_ARRAY, Value::Null), Err(UNKNOWN_PROPERTY));
}
