//! CreateObject and DeleteObject in the store (Clauses 15.3, 15.4): a
//! front end creates objects of the types the model gives a template for,
//! with initial values all or nothing, and deletes what it created.

use super::*;
use trellis_guest_sdk::bacnet::{ErrorClass, ErrorCode};
use trellis_guest_sdk::{BacnetError, Config, Instance, ObjectModel, PluginInfo, PropertyIdentifier as P, Write};

/// The test device, letting clients create commandable Analog Values in
/// °C and Multi-state Values with three states.
struct Creating;

impl ObjectModel for Creating {
    fn describe() -> PluginInfo {
        PluginInfo::new("creating", "1.0.0", "the test device, with creation")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        *s = store();
        s.allow_creation(
            ObjectSpec::analog_value(0, "template").units(EngineeringUnits::DEGREES_CELSIUS).commandable(),
        )
        .map_err(|e| e.to_string())?;
        s.allow_creation(ObjectSpec::multi_state_value(0, "template", ["Low", "Mid", "High"]))
            .map_err(|e| e.to_string())?;
        Ok(Creating)
    }
    /// Vetoes a Description with "forbidden" in it, to show initial values
    /// go through the model's hook.
    fn write_property(&mut self, store: &mut Store, write: &Write) -> Result<(), BacnetError> {
        if write.target.property == P::DESCRIPTION
            && write.value.as_primitive() == Some(&trellis_guest_sdk::value::text("forbidden"))
        {
            return Err(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::WRITE_ACCESS_DENIED });
        }
        store.write(write)
    }
}

fn start() -> Instance<Creating> {
    let mut i = Instance::<Creating>::start(&Config::none()).unwrap();
    i.take_notifications();
    i
}

/// An initial value for an object given by type only.
fn initial(p: P, v: impl Into<AnyValue>) -> Write {
    Write::new(id(ObjectType::ANALOG_VALUE, ObjectIdentifier::MAX_INSTANCE), p, v)
}

fn read(i: &Instance<Creating>, object: ObjectIdentifier, p: P) -> Result<AnyValue, BacnetError> {
    i.store().read(&PropertyRef::new(object, p))
}

fn object_error(code: ErrorCode) -> BacnetError {
    BacnetError { class: ErrorClass::OBJECT, code }
}

#[test]
fn by_type_the_lowest_free_instance_with_the_templates_properties_and_the_initial_values() {
    let mut i = start();
    // AV 1 and 2 exist: the first free instance is 3.
    let created = i
        .create_object(
            ObjectType::ANALOG_VALUE,
            None,
            &[
                initial(P::OBJECT_NAME, trellis_guest_sdk::value::text("Room 12 Setpoint")),
                initial(P::PRESENT_VALUE, Value::Real(22.5)),
                initial(P::UNITS, Value::Enumerated(EngineeringUnits::DEGREES_FAHRENHEIT.0)),
            ],
        )
        .unwrap();
    assert_eq!(created, id(ObjectType::ANALOG_VALUE, 3));
    assert_eq!(i.store().find("Room 12 Setpoint"), Some(created));
    assert_eq!(i.store().analog(created), Some(22.5));
    assert_eq!(read(&i, created, P::UNITS).unwrap(), Value::Enumerated(EngineeringUnits::DEGREES_FAHRENHEIT.0).into());
    assert!(i.store().is_commandable(created), "the template is commandable");
    assert!(i.take_notifications().objects_changed, "Object_List changed");
}

#[test]
fn by_identifier_and_without_a_name_it_is_named_by_type_and_instance() {
    let mut i = start();
    let mode = id(ObjectType::MULTI_STATE_VALUE, 40);
    assert_eq!(i.create_object(ObjectType::MULTI_STATE_VALUE, Some(40), &[]), Ok(mode));
    assert_eq!(i.store().name(mode), Some("multi-state-value-40"));
    assert_eq!(read(&i, mode, P::NUMBER_OF_STATES).unwrap(), Value::Unsigned(3).into());
}

#[test]
fn the_standards_refusals() {
    let mut i = start();
    let e = |code| Err((object_error(code), 0));
    assert_eq!(i.create_object(ObjectType::BINARY_VALUE, None, &[]), e(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED));
    assert_eq!(
        i.create_object(ObjectType::ANALOG_VALUE, Some(1), &[]),
        e(ErrorCode::OBJECT_IDENTIFIER_ALREADY_EXISTS),
        "AV 1 is configured"
    );
    assert_eq!(
        i.create_object(ObjectType::ANALOG_VALUE, Some(ObjectIdentifier::MAX_INSTANCE), &[]),
        e(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED)
    );
    assert_eq!(i.delete_object(SETPOINT), Err(object_error(ErrorCode::OBJECT_DELETION_NOT_PERMITTED)));
    assert_eq!(i.delete_object(id(ObjectType::ANALOG_VALUE, 99)), Err(object_error(ErrorCode::UNKNOWN_OBJECT)));
}

#[test]
fn a_refused_initial_value_names_its_position_and_nothing_is_created() {
    let mut i = start();
    let property = |code| BacnetError { class: ErrorClass::PROPERTY, code };
    let cases = [
        (initial(P::OBJECT_NAME, trellis_guest_sdk::value::text("Setpoint")), property(ErrorCode::DUPLICATE_NAME)),
        (initial(P::PRESENT_VALUE, Value::Boolean(true)), property(ErrorCode::INVALID_DATA_TYPE)),
        (
            initial(P::DESCRIPTION, trellis_guest_sdk::value::text("forbidden")),
            property(ErrorCode::WRITE_ACCESS_DENIED),
        ),
        (
            initial(P::OBJECT_TYPE, Value::Enumerated(ObjectType::BINARY_VALUE.0)),
            property(ErrorCode::WRITE_ACCESS_DENIED),
        ),
    ];
    for (bad, error) in cases {
        let before = i.store().len();
        let values = [initial(P::PRESENT_VALUE, Value::Real(1.0)), bad];
        assert_eq!(i.create_object(ObjectType::ANALOG_VALUE, None, &values), Err((error, 2)));
        assert_eq!(i.store().len(), before, "nothing left behind");
        assert!(!i.store().contains(id(ObjectType::ANALOG_VALUE, 3)));
    }
    // A state text list the initial value does not fit.
    let mode = |p, v: AnyValue| Write::new(id(ObjectType::MULTI_STATE_VALUE, 7), p, v);
    let two = trellis_guest_sdk::value::array(["A", "B"].map(trellis_guest_sdk::value::text));
    let values = [mode(P::PRESENT_VALUE, Value::Unsigned(3).into()), mode(P::STATE_TEXT, two.clone())];
    assert_eq!(
        i.create_object(ObjectType::MULTI_STATE_VALUE, Some(7), &values),
        Err((property(ErrorCode::VALUE_OUT_OF_RANGE), 2))
    );
    let values = [mode(P::STATE_TEXT, two), mode(P::PRESENT_VALUE, Value::Unsigned(2).into())];
    assert!(i.create_object(ObjectType::MULTI_STATE_VALUE, Some(7), &values).is_ok());
    assert_eq!(
        read(&i, id(ObjectType::MULTI_STATE_VALUE, 7), P::STATE_TEXT).unwrap(),
        trellis_guest_sdk::value::array(["A", "B"].map(trellis_guest_sdk::value::text))
    );
}

#[test]
fn a_created_object_is_deleted_with_its_name() {
    let mut i = start();
    let name = initial(P::OBJECT_NAME, trellis_guest_sdk::value::text("Temporary"));
    let created = i.create_object(ObjectType::ANALOG_VALUE, None, std::slice::from_ref(&name)).unwrap();
    i.take_notifications();
    assert_eq!(i.delete_object(created), Ok(()));
    assert!(!i.store().contains(created));
    assert!(i.take_notifications().objects_changed);
    assert_eq!(read(&i, created, P::PRESENT_VALUE), Err(object_error(ErrorCode::UNKNOWN_OBJECT)));
    // The name is free again.
    assert_eq!(i.create_object(ObjectType::ANALOG_VALUE, None, &[name]), Ok(created));
}

#[test]
fn created_objects_survive_a_restart_with_their_values_and_creation_properties() {
    let mut old = start();
    let av = old
        .create_object(
            ObjectType::ANALOG_VALUE,
            Some(12),
            &[
                initial(P::OBJECT_NAME, trellis_guest_sdk::value::text("Kept")),
                initial(P::UNITS, Value::Enumerated(EngineeringUnits::PERCENT.0)),
            ],
        )
        .unwrap();
    assert_eq!(old.write(&[Write::new(av, P::PRESENT_VALUE, Value::Real(64.0)).at_priority(9)]), [Ok(())]);
    let three = trellis_guest_sdk::value::array(["X", "Y", "Z", "W"].map(trellis_guest_sdk::value::text));
    let msv = old
        .create_object(
            ObjectType::MULTI_STATE_VALUE,
            None,
            &[Write::new(id(ObjectType::MULTI_STATE_VALUE, 0), P::STATE_TEXT, three.clone())],
        )
        .unwrap();
    assert_eq!(old.write(&[Write::new(msv, P::PRESENT_VALUE, Value::Unsigned(4))]), [Ok(())]);

    let mut new = Instance::<Creating>::start(&Config::none()).unwrap();
    new.import_state(&old.export_state()).unwrap();
    assert_eq!(new.store().find("Kept"), Some(av));
    assert_eq!(new.store().analog(av), Some(64.0));
    assert_eq!(new.store().command_priority(av), Some(9));
    assert_eq!(read(&new, av, P::UNITS).unwrap(), Value::Enumerated(EngineeringUnits::PERCENT.0).into());
    assert_eq!(read(&new, msv, P::STATE_TEXT).unwrap(), three);
    assert_eq!(new.store().multi_state(msv), Some(4), "the fourth state exists again before the value");
    assert_eq!(new.delete_object(av), Ok(()), "still deletable after the restart");
    assert_eq!(new.delete_object(SETPOINT), Err(object_error(ErrorCode::OBJECT_DELETION_NOT_PERMITTED)));
}

/// A version without templates cannot take created objects back.
struct NoCreation;

impl ObjectModel for NoCreation {
    fn describe() -> PluginInfo {
        PluginInfo::new("creating", "0.9.0", "without creation")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        *s = store();
        Ok(NoCreation)
    }
}

#[test]
fn a_version_without_the_template_skips_created_objects_and_keeps_the_rest() {
    let mut old = start();
    let av = old.create_object(ObjectType::ANALOG_VALUE, None, &[]).unwrap();
    assert_eq!(old.write(&[Write::new(SETPOINT, P::PRESENT_VALUE, Value::Real(25.0)).at_priority(8)]), [Ok(())]);
    let mut new = Instance::<NoCreation>::start(&Config::none()).unwrap();
    new.import_state(&old.export_state()).unwrap();
    assert!(!new.store().contains(av));
    assert_eq!(new.store().analog(SETPOINT), Some(25.0));
}
