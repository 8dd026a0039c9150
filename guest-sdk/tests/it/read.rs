//! ReadProperty and ReadPropertyMultiple (Clause 15.5, 15.7) against the
//! object types of Clause 12.

use super::*;
use trellis_guest_sdk::bacnet::{BitString, Element, EventState, Reliability};
use trellis_guest_sdk::errors::*;
use trellis_guest_sdk::{PropertyIdentifier as P, PropertyRef, Write};

#[test]
fn an_object_the_device_lacks_is_object_unknown_object() {
    let s = store();
    assert_eq!(read(&s, id(ObjectType::ANALOG_INPUT, 99), P::PRESENT_VALUE), Err(UNKNOWN_OBJECT));
    assert_eq!(read(&s, id(ObjectType::CALENDAR, 1), P::OBJECT_NAME), Err(UNKNOWN_OBJECT));
    assert_eq!(read(&s, id(ObjectType::DEVICE, 1001), P::OBJECT_NAME), Err(UNKNOWN_OBJECT));
}

#[test]
fn a_property_the_object_lacks_is_property_unknown_property() {
    let s = store();
    assert_eq!(read(&s, OCCUPANCY, P::UNITS), Err(UNKNOWN_PROPERTY));
    assert_eq!(read(&s, OFFSET, P::PRIORITY_ARRAY), Err(UNKNOWN_PROPERTY), "not commandable");
    assert_eq!(read(&s, OFFSET, P::RELINQUISH_DEFAULT), Err(UNKNOWN_PROPERTY));
    assert_eq!(read(&s, OVERRIDE, P::POLARITY), Err(UNKNOWN_PROPERTY), "Binary Value has no Polarity");
    assert_eq!(read(&s, ZONE_TEMP, P(9999)), Err(UNKNOWN_PROPERTY));
    assert_eq!(read(&s, ZONE_TEMP, P::OBJECT_LIST), Err(UNKNOWN_PROPERTY));
}

#[test]
fn identifier_name_and_type_read_as_themselves() {
    let s = store();
    assert_eq!(read(&s, ZONE_TEMP, P::OBJECT_IDENTIFIER), Ok(prim(Value::ObjectIdentifier(ZONE_TEMP))));
    assert_eq!(read(&s, ZONE_TEMP, P::OBJECT_NAME), Ok(text("Zone Temp")));
    assert_eq!(read(&s, ZONE_TEMP, P::OBJECT_TYPE), Ok(prim(Value::Enumerated(0))));
    assert_eq!(read(&s, MODE, P::OBJECT_TYPE), Ok(prim(Value::Enumerated(19))));
    assert_eq!(read(&s, ZONE_TEMP, P::DESCRIPTION), Ok(text("Zone 1")));
}

#[test]
fn present_value_has_its_object_types_datatype() {
    let s = store();
    assert_eq!(read(&s, ZONE_TEMP, P::PRESENT_VALUE), Ok(prim(Value::Real(20.0))));
    assert_eq!(read(&s, SETPOINT, P::PRESENT_VALUE), Ok(prim(Value::Real(21.0))), "Relinquish_Default in effect");
    assert_eq!(read(&s, OCCUPANCY, P::PRESENT_VALUE), Ok(prim(Value::Enumerated(0))), "inactive");
    assert_eq!(read(&s, MODE, P::PRESENT_VALUE), Ok(prim(Value::Unsigned(4))));
    assert_eq!(read(&s, FAN_STATUS, P::PRESENT_VALUE), Ok(prim(Value::Unsigned(1))), "state 1 by default");
}

#[test]
fn class_properties_read_as_configured() {
    let s = store();
    assert_eq!(read(&s, ZONE_TEMP, P::UNITS), Ok(prim(Value::Enumerated(62))));
    assert_eq!(read(&s, ZONE_TEMP, P::COV_INCREMENT), Ok(prim(Value::Real(0.5))));
    assert_eq!(read(&s, OCCUPANCY, P::ACTIVE_TEXT), Ok(text("Occupied")));
    assert_eq!(read(&s, OCCUPANCY, P::INACTIVE_TEXT), Ok(text("Unoccupied")));
    assert_eq!(read(&s, OCCUPANCY, P::POLARITY), Ok(prim(Value::Enumerated(0))));
    assert_eq!(read(&s, MODE, P::NUMBER_OF_STATES), Ok(prim(Value::Unsigned(4))));
    assert_eq!(read(&s, ZONE_TEMP, P::EVENT_STATE), Ok(prim(Value::Enumerated(0))));
    assert_eq!(read(&s, ZONE_TEMP, P::RELIABILITY), Ok(prim(Value::Enumerated(0))));
    assert_eq!(read(&s, ZONE_TEMP, P::OUT_OF_SERVICE), Ok(prim(Value::Boolean(false))));
}

fn flags(s: &Store, object: ObjectIdentifier) -> [bool; 4] {
    let v = read(s, object, P::STATUS_FLAGS).unwrap();
    let Some(Value::BitString(b)) = v.as_primitive() else { panic!("{v:?}") };
    assert_eq!(b.len(), 4);
    [b.get(0), b.get(1), b.get(2), b.get(3)]
}

#[test]
fn status_flags_are_in_alarm_fault_overridden_out_of_service() {
    let mut s = store();
    assert_eq!(flags(&s, ZONE_TEMP), [false; 4]);
    s.set_event_state(ZONE_TEMP, EventState::HIGH_LIMIT).unwrap();
    assert_eq!(flags(&s, ZONE_TEMP), [true, false, false, false], "IN_ALARM: Event_State is not NORMAL");
    s.set_reliability(ZONE_TEMP, Reliability::NO_SENSOR).unwrap();
    assert_eq!(flags(&s, ZONE_TEMP), [true, true, false, false], "FAULT: Reliability is not NO_FAULT_DETECTED");
    s.set_overridden(ZONE_TEMP, true).unwrap();
    s.set_out_of_service(ZONE_TEMP, true).unwrap();
    assert_eq!(flags(&s, ZONE_TEMP), [true; 4]);
    assert_eq!(read(&s, ZONE_TEMP, P::STATUS_FLAGS), Ok(prim(Value::BitString(BitString::from_bits(&[true; 4])))));
}

#[test]
fn property_list_leaves_out_identifier_name_type_and_itself() {
    let s = store();
    let list = s.property_list(ZONE_TEMP).unwrap();
    for p in [P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE, P::PROPERTY_LIST] {
        assert!(!list.contains(&p), "{p} listed");
    }
    let encoded = read(&s, ZONE_TEMP, P::PROPERTY_LIST).unwrap();
    let read_back: Vec<P> = encoded
        .0
        .iter()
        .map(|e| match e {
            Element::Application(Value::Enumerated(n)) => P(*n),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(read_back, list);
    assert_eq!(
        list,
        [
            P::PRESENT_VALUE,
            P::DESCRIPTION,
            P::STATUS_FLAGS,
            P::EVENT_STATE,
            P::RELIABILITY,
            P::OUT_OF_SERVICE,
            P::UNITS,
            P::COV_INCREMENT
        ]
    );
}

#[test]
fn a_commandable_object_lists_priority_array_relinquish_default_and_current_command_priority() {
    let s = store();
    for object in [VALVE, SETPOINT, FAN, OVERRIDE, SPEED] {
        let list = s.property_list(object).unwrap();
        for p in [P::PRIORITY_ARRAY, P::RELINQUISH_DEFAULT, P::CURRENT_COMMAND_PRIORITY] {
            assert!(list.contains(&p), "{object} lacks {p}");
        }
    }
    for object in [ZONE_TEMP, OFFSET, OCCUPANCY, FAN_STATUS, MODE] {
        assert!(!s.property_list(object).unwrap().contains(&P::PRIORITY_ARRAY), "{object}");
    }
}

#[test]
fn array_index_zero_is_the_length_and_one_is_the_first_element() {
    let s = store();
    assert_eq!(read_index(&s, MODE, P::STATE_TEXT, 0), Ok(prim(Value::Unsigned(4))));
    assert_eq!(read_index(&s, MODE, P::STATE_TEXT, 1), Ok(text("Off")));
    assert_eq!(read_index(&s, MODE, P::STATE_TEXT, 4), Ok(text("Auto")));
    assert_eq!(read_index(&s, SETPOINT, P::PRIORITY_ARRAY, 0), Ok(prim(Value::Unsigned(16))));
    assert_eq!(read_index(&s, SETPOINT, P::PRIORITY_ARRAY, 16), Ok(prim(Value::Null)));
    assert_eq!(read_index(&s, DEVICE, P::OBJECT_LIST, 1), Ok(prim(Value::ObjectIdentifier(DEVICE))));
    let n = s.property_list(ZONE_TEMP).unwrap().len() as u64;
    assert_eq!(read_index(&s, ZONE_TEMP, P::PROPERTY_LIST, 0), Ok(prim(Value::Unsigned(n))));
}

#[test]
fn an_index_past_the_end_is_property_invalid_array_index() {
    let s = store();
    assert_eq!(read_index(&s, MODE, P::STATE_TEXT, 5), Err(INVALID_ARRAY_INDEX));
    assert_eq!(read_index(&s, SETPOINT, P::PRIORITY_ARRAY, 17), Err(INVALID_ARRAY_INDEX));
    assert_eq!(read_index(&s, DEVICE, P::OBJECT_LIST, u32::MAX), Err(INVALID_ARRAY_INDEX));
}

#[test]
fn an_index_on_a_property_that_is_not_an_array_is_property_is_not_an_array() {
    let s = store();
    assert_eq!(read_index(&s, ZONE_TEMP, P::PRESENT_VALUE, 1), Err(PROPERTY_IS_NOT_AN_ARRAY));
    assert_eq!(read_index(&s, ZONE_TEMP, P::OBJECT_NAME, 0), Err(PROPERTY_IS_NOT_AN_ARRAY));
    assert_eq!(read_index(&s, DEVICE, P::VENDOR_NAME, 1), Err(PROPERTY_IS_NOT_AN_ARRAY));
}

#[test]
fn the_whole_priority_array_is_sixteen_elements_with_null_for_empty_slots() {
    let mut s = store();
    s.write(&Write::new(SETPOINT, P::PRESENT_VALUE, Value::Real(19.0)).at_priority(8)).unwrap();
    let v = read(&s, SETPOINT, P::PRIORITY_ARRAY).unwrap();
    assert_eq!(v.0.len(), 16);
    for (i, e) in v.0.iter().enumerate() {
        let expected = if i == 7 { Value::Real(19.0) } else { Value::Null };
        assert_eq!(e, &Element::Application(expected), "slot {}", i + 1);
    }
}

#[test]
fn current_command_priority_is_null_until_a_command_is_in_effect() {
    let mut s = store();
    assert_eq!(read(&s, FAN, P::CURRENT_COMMAND_PRIORITY), Ok(prim(Value::Null)));
    s.write(&Write::new(FAN, P::PRESENT_VALUE, Value::Enumerated(1)).at_priority(9)).unwrap();
    assert_eq!(read(&s, FAN, P::CURRENT_COMMAND_PRIORITY), Ok(prim(Value::Unsigned(9))));
}

fn expanded(s: &Store, object: ObjectIdentifier, p: P) -> Vec<P> {
    s.expand(&PropertyRef::new(object, p)).unwrap().into_iter().map(|r| r.property).collect()
}

#[test]
fn all_is_identifier_name_type_then_property_list_order_then_property_list() {
    let s = store();
    for object in [DEVICE, ZONE_TEMP, VALVE, SETPOINT, OFFSET, OCCUPANCY, FAN, OVERRIDE, FAN_STATUS, SPEED, MODE] {
        let all = expanded(&s, object, P::ALL);
        assert_eq!(all[..3], [P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE], "{object}");
        assert_eq!(all[3..all.len() - 1], s.property_list(object).unwrap()[..], "{object}");
        assert_eq!(all.last(), Some(&P::PROPERTY_LIST));
        for p in all {
            assert!(read(&s, object, p).is_ok(), "{object} {p} is listed but does not read");
        }
    }
}

#[test]
fn required_and_optional_split_all_without_overlap() {
    let s = store();
    for object in [DEVICE, ZONE_TEMP, FAN, MODE] {
        let all = expanded(&s, object, P::ALL);
        let required = expanded(&s, object, P::REQUIRED);
        let optional = expanded(&s, object, P::OPTIONAL);
        let mut both: Vec<P> = all.iter().copied().filter(|p| required.contains(p) || optional.contains(p)).collect();
        both.dedup();
        assert_eq!(both, all);
        assert_eq!(required.len() + optional.len(), all.len(), "{object}");
    }
    assert_eq!(
        expanded(&s, OCCUPANCY, P::REQUIRED),
        [
            P::OBJECT_IDENTIFIER,
            P::OBJECT_NAME,
            P::OBJECT_TYPE,
            P::PRESENT_VALUE,
            P::STATUS_FLAGS,
            P::EVENT_STATE,
            P::OUT_OF_SERVICE,
            P::POLARITY,
            P::PROPERTY_LIST
        ]
    );
    assert_eq!(
        expanded(&s, OCCUPANCY, P::OPTIONAL),
        [P::DESCRIPTION, P::RELIABILITY, P::INACTIVE_TEXT, P::ACTIVE_TEXT]
    );
}

#[test]
fn read_property_multiple_answers_in_order_with_errors_in_place() {
    let s = store();
    let missing = id(ObjectType::ANALOG_INPUT, 42);
    let refs = [
        PropertyRef::new(ZONE_TEMP, P::PRESENT_VALUE),
        PropertyRef::new(missing, P::ALL),
        PropertyRef::new(OCCUPANCY, P::UNITS),
        PropertyRef::new(MODE, P::REQUIRED),
    ];
    let results = s.read_multiple(&refs);
    assert_eq!(results[0], (refs[0], Ok(prim(Value::Real(20.0)))));
    assert_eq!(results[1], (refs[1], Err(UNKNOWN_OBJECT)), "an unknown object answers once");
    assert_eq!(results[2], (refs[2], Err(UNKNOWN_PROPERTY)));
    assert_eq!(results.len(), 3 + expanded(&s, MODE, P::REQUIRED).len());
    assert!(results[3..].iter().all(|(r, v)| r.object == MODE && v.is_ok()));
}

#[test]
fn all_with_an_array_index_is_property_is_not_an_array() {
    let s = store();
    assert_eq!(s.expand(&PropertyRef::element(ZONE_TEMP, P::ALL, 1)), Err(PROPERTY_IS_NOT_AN_ARRAY));
}
