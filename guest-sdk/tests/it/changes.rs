//! What is reported to the host's `values-changed` and `objects-changed`
//! (the COV rules of Clause 13.1: Present_Value by COV_Increment for analog
//! objects, any change otherwise, and any change of Status_Flags).

use super::*;
use trellis_guest_sdk::bacnet::Reliability;
use trellis_guest_sdk::{PresentValue, PropertyIdentifier as P, Write};

#[test]
fn nothing_is_reported_when_nothing_changed() {
    let mut s = store();
    assert_eq!(s.take_changes(), []);
    assert!(!s.take_objects_changed());
    s.update(ZONE_TEMP, 20.0).unwrap();
    assert_eq!(s.take_changes(), [], "the same value again");
}

#[test]
fn an_analog_present_value_is_reported_once_it_moved_by_cov_increment() {
    let mut s = store();
    s.update(ZONE_TEMP, 20.3).unwrap();
    assert_eq!(s.take_changes(), [], "0.3 < COV_Increment 0.5");
    s.update(ZONE_TEMP, 20.6).unwrap();
    assert_eq!(s.take_changes(), [ZONE_TEMP], "0.6 since the last report");
    s.update(ZONE_TEMP, 20.9).unwrap();
    assert_eq!(s.take_changes(), [], "0.3 since the last report");
    s.update(ZONE_TEMP, 20.0).unwrap();
    assert_eq!(s.take_changes(), [ZONE_TEMP]);
}

#[test]
fn a_cov_increment_of_zero_reports_every_change() {
    let mut s = store();
    s.update(OFFSET, 0.500_001).unwrap();
    assert_eq!(s.take_changes(), [OFFSET]);
}

#[test]
fn binary_and_multi_state_changes_are_reported_each_time() {
    let mut s = store();
    s.update(OCCUPANCY, true).unwrap();
    s.update(FAN_STATUS, 2u32).unwrap();
    assert_eq!(s.take_changes(), [OCCUPANCY, FAN_STATUS]);
    s.update(OCCUPANCY, true).unwrap();
    assert_eq!(s.take_changes(), []);
}

#[test]
fn a_status_flags_change_is_reported_even_when_the_value_holds() {
    let mut s = store();
    s.set_reliability(ZONE_TEMP, Reliability::OVER_RANGE).unwrap();
    assert_eq!(s.take_changes(), [ZONE_TEMP]);
    s.write(&Write::new(OFFSET, P::OUT_OF_SERVICE, Value::Boolean(true))).unwrap();
    assert_eq!(s.take_changes(), [OFFSET]);
}

#[test]
fn commands_and_relinquishes_are_reported_when_present_value_moves() {
    let mut s = store();
    s.write(&Write::new(FAN, P::PRESENT_VALUE, Value::Enumerated(1)).at_priority(8)).unwrap();
    assert_eq!(s.take_changes(), [FAN]);
    s.write(&Write::new(FAN, P::PRESENT_VALUE, Value::Enumerated(1)).at_priority(9)).unwrap();
    assert_eq!(s.take_changes(), [], "priority 8 still wins with the same value");
    s.write(&Write::new(FAN, P::PRESENT_VALUE, Value::Null).at_priority(8)).unwrap();
    assert_eq!(s.take_changes(), [], "priority 9 holds active");
    s.command(FAN, 9, None).unwrap();
    assert_eq!(s.take_changes(), [FAN], "back to Relinquish_Default inactive");
    assert_eq!(s.present_value(FAN), Some(PresentValue::Binary(false)));
}

#[test]
fn creating_deleting_and_renaming_objects_change_the_object_list() {
    let mut s = store();
    s.add(ObjectSpec::analog_value(9, "Extra")).unwrap();
    assert!(s.take_objects_changed());
    assert!(!s.take_objects_changed(), "reported once");
    assert!(s.remove(id(ObjectType::ANALOG_VALUE, 9)));
    assert!(s.take_objects_changed());
    assert!(!s.remove(id(ObjectType::ANALOG_VALUE, 9)));
    assert!(!s.take_objects_changed());
    assert_eq!(s.find("Extra"), None, "the name is free again");
}
