//! The model's side of the store: declaring objects and driving values.

use super::*;
use trellis_guest_sdk::bacnet::Polarity;
use trellis_guest_sdk::{PresentValue, PropertyIdentifier as P, StoreError};

#[test]
fn add_refuses_what_a_device_cannot_have() {
    let mut s = store();
    assert_eq!(s.add(ObjectSpec::analog_input(1, "Again")), Err(StoreError::DuplicateObject(ZONE_TEMP)));
    assert_eq!(s.add(ObjectSpec::analog_input(2, "Valve")), Err(StoreError::DuplicateName("Valve".into())));
    assert_eq!(s.add(ObjectSpec::analog_input(2, "Test Device")), Err(StoreError::DuplicateName("Test Device".into())));
    assert_eq!(s.add(ObjectSpec::analog_input(2, "")), Err(StoreError::EmptyName));
    assert_eq!(s.add(ObjectSpec::analog_input(4_194_303, "Wildcard")), Err(StoreError::InvalidInstance(4_194_303)));
    assert_eq!(
        s.add(ObjectSpec::new(ObjectType::CALENDAR, 1, "Calendar")),
        Err(StoreError::UnsupportedObjectType(ObjectType::CALENDAR))
    );
    let commandable_input = ObjectSpec::binary_input(2, "Switch").commandable();
    assert_eq!(s.add(commandable_input), Err(StoreError::InputNotCommandable(id(ObjectType::BINARY_INPUT, 2))));
    let stateless = ObjectSpec::new(ObjectType::MULTI_STATE_VALUE, 2, "Stateless");
    assert_eq!(s.add(stateless), Err(StoreError::NoStates(id(ObjectType::MULTI_STATE_VALUE, 2))));
    let beyond = ObjectSpec::multi_state_value(2, "Beyond", ["A", "B"]).value(3);
    assert_eq!(s.add(beyond), Err(StoreError::OutOfRange { object: id(ObjectType::MULTI_STATE_VALUE, 2) }));
    let wrong = ObjectSpec::binary_value(2, "Wrong").value(1.5);
    assert!(matches!(s.add(wrong), Err(StoreError::WrongDatatype { .. })));
    assert_eq!(s.len(), 10, "nothing was added");
}

#[test]
fn an_integer_is_accepted_for_an_analog_object() {
    let mut s = store();
    let a = s.add(ObjectSpec::analog_value(5, "Integer").value(20)).unwrap();
    assert_eq!(s.present_value(a), Some(PresentValue::Analog(20.0)));
    s.update(a, 7).unwrap();
    assert_eq!(s.analog(a), Some(7.0));
}

#[test]
fn a_commandable_object_starts_at_its_relinquish_default() {
    let mut s = store();
    let a = s.add(ObjectSpec::analog_value(5, "SP").commandable().value(18.0)).unwrap();
    assert_eq!(s.analog(a), Some(18.0));
    assert_eq!(read(&s, a, P::RELINQUISH_DEFAULT), Ok(prim(Value::Real(18.0))));
    assert_eq!(s.analog(VALVE), Some(0.0), "an output's default Relinquish_Default");
    assert_eq!(s.binary(FAN), Some(false));
    assert_eq!(s.multi_state(SPEED), Some(1));
}

#[test]
fn update_is_for_values_the_model_owns_and_command_for_priority_arrays() {
    let mut s = store();
    assert_eq!(s.update(SETPOINT, 20.0), Err(StoreError::Commandable(SETPOINT)));
    assert_eq!(s.command(OFFSET, 16, Some(1.0.into())), Err(StoreError::NotCommandable(OFFSET)));
    assert_eq!(s.command(SETPOINT, 0, None), Err(StoreError::InvalidPriority(0)));
    assert_eq!(s.update(FAN, true), Err(StoreError::Commandable(FAN)));
    assert_eq!(s.update(MODE, 9u32), Err(StoreError::OutOfRange { object: MODE }));
    assert_eq!(
        s.update(id(ObjectType::ANALOG_VALUE, 50), 1.0),
        Err(StoreError::UnknownObject(id(ObjectType::ANALOG_VALUE, 50)))
    );
    s.command(SETPOINT, 6, Some(PresentValue::Analog(17.0))).unwrap();
    assert_eq!(s.command_priority(SETPOINT), Some(6), "a model may use priority 6 itself");
}

#[test]
fn polarity_belongs_to_inputs_and_outputs_only() {
    let mut s = store();
    let bo = s.add(ObjectSpec::binary_output(2, "Reverse").polarity(Polarity::REVERSE)).unwrap();
    assert_eq!(read(&s, bo, P::POLARITY), Ok(prim(Value::Enumerated(1))));
    assert!(!s.property_list(OVERRIDE).unwrap().contains(&P::POLARITY));
}

#[test]
fn errors_read_as_sentences() {
    let e = StoreError::DuplicateName("Fan".into());
    assert_eq!(e.to_string(), "another object is named \"Fan\"");
    let s: String = StoreError::InvalidPriority(17).into();
    assert_eq!(s, "priority 17 is outside 1..=16");
}
