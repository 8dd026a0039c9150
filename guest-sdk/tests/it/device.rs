//! The Device object's properties that the model serves (Clause 12.11).

use super::*;
use trellis_guest_sdk::bacnet::{Date, Element, Time};
use trellis_guest_sdk::errors::*;
use trellis_guest_sdk::{DateTime, PropertyIdentifier as P, Write};

#[test]
fn the_device_object_reads_its_identity() {
    let s = store();
    assert_eq!(read(&s, DEVICE, P::OBJECT_IDENTIFIER), Ok(prim(Value::ObjectIdentifier(DEVICE))));
    assert_eq!(read(&s, DEVICE, P::OBJECT_NAME), Ok(text("Test Device")));
    assert_eq!(read(&s, DEVICE, P::OBJECT_TYPE), Ok(prim(Value::Enumerated(8))));
    assert_eq!(read(&s, DEVICE, P::SYSTEM_STATUS), Ok(prim(Value::Enumerated(0))), "operational");
    assert_eq!(read(&s, DEVICE, P::VENDOR_NAME), Ok(text("Trellis")));
    assert_eq!(read(&s, DEVICE, P::LOCATION), Ok(text("Lab")));
    assert!(read(&s, DEVICE, P::MODEL_NAME).is_ok());
    assert!(read(&s, DEVICE, P::FIRMWARE_REVISION).is_ok());
    assert!(read(&s, DEVICE, P::APPLICATION_SOFTWARE_VERSION).is_ok());
    assert_eq!(read(&s, DEVICE, P::PROTOCOL_REVISION), Err(UNKNOWN_PROPERTY), "the host's, not the model's");
    assert_eq!(read(&s, DEVICE, P::VENDOR_IDENTIFIER), Err(UNKNOWN_PROPERTY), "the host's: it must match the I-Am");
}

#[test]
fn object_list_is_the_device_then_every_object_in_type_and_instance_order() {
    let s = store();
    let list = read(&s, DEVICE, P::OBJECT_LIST).unwrap();
    let ids: Vec<ObjectIdentifier> = list
        .0
        .iter()
        .map(|e| match e {
            Element::Application(Value::ObjectIdentifier(o)) => *o,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids[0], DEVICE);
    assert_eq!(ids[1..], s.ids().collect::<Vec<_>>()[..]);
    assert_eq!(ids[1..4], [ZONE_TEMP, VALVE, SETPOINT]);
    assert_eq!(read_index(&s, DEVICE, P::OBJECT_LIST, 0), Ok(prim(Value::Unsigned(11))));
    assert_eq!(read_index(&s, DEVICE, P::OBJECT_LIST, 2), Ok(prim(Value::ObjectIdentifier(ZONE_TEMP))));
}

fn half_past_midnight_on_1_march_2024_in_utc_plus_1() -> DateTime {
    DateTime::new(1_709_249_415_250, 60)
}

#[test]
fn local_date_local_time_and_utc_offset_come_from_the_hosts_clock() {
    let mut s = store();
    s.set_clock(half_past_midnight_on_1_march_2024_in_utc_plus_1);
    assert_eq!(
        read(&s, DEVICE, P::LOCAL_DATE),
        Ok(prim(Value::Date(Date { year: 124, month: 3, day: 1, weekday: 5 })))
    );
    assert_eq!(
        read(&s, DEVICE, P::LOCAL_TIME),
        Ok(prim(Value::Time(Time { hour: 0, minute: 30, second: 15, hundredths: 25 })))
    );
    assert_eq!(read(&s, DEVICE, P::UTC_OFFSET), Ok(prim(Value::Signed(-60))), "UTC_Offset is UTC minus local");
}

#[test]
fn name_description_and_location_of_the_device_are_writable_and_nothing_else() {
    let mut s = store();
    let t = |x: &str| trellis_guest_sdk::value::text(x);
    s.write(&Write::new(DEVICE, P::OBJECT_NAME, t("Renamed"))).unwrap();
    s.write(&Write::new(DEVICE, P::DESCRIPTION, t("Described"))).unwrap();
    s.write(&Write::new(DEVICE, P::LOCATION, t("Roof"))).unwrap();
    assert_eq!(s.device().name, "Renamed");
    assert_eq!(s.find("Renamed"), Some(DEVICE));
    assert_eq!(read(&s, DEVICE, P::LOCATION), Ok(text("Roof")));
    assert_eq!(s.write(&Write::new(DEVICE, P::OBJECT_NAME, t("Valve"))), Err(DUPLICATE_NAME));
    assert_eq!(s.write(&Write::new(DEVICE, P::VENDOR_NAME, t("Me"))), Err(WRITE_ACCESS_DENIED));
    assert_eq!(s.write(&Write::new(DEVICE, P::OBJECT_LIST, Value::Null)), Err(WRITE_ACCESS_DENIED));
    assert_eq!(s.write(&Write::new(DEVICE, P::LOCAL_TIME, Value::Null)), Err(WRITE_ACCESS_DENIED));
}

#[test]
fn the_device_property_list_is_the_models_part() {
    let s = store();
    let list = s.property_list(DEVICE).unwrap();
    assert!(list.contains(&P::OBJECT_LIST) && list.contains(&P::VENDOR_NAME));
    assert!(!list.contains(&P::OBJECT_NAME) && !list.contains(&P::PROPERTY_LIST));
}
