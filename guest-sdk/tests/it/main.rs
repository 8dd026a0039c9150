//! The object store's semantics, written as the standard's rules.

mod alarms;
mod changes;
mod device;
mod lifecycle;
mod model_side;
mod read;
mod state;
mod trend_log;
mod write;

use trellis_guest_sdk::bacnet::{EngineeringUnits, ObjectType};
use trellis_guest_sdk::{
    AnyValue, Device, ObjectIdentifier, ObjectSpec, PropertyIdentifier, PropertyRef, Store, Value,
};

fn id(object_type: ObjectType, instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type, instance }
}

const DEVICE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::DEVICE, instance: 1000 };
const ZONE_TEMP: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 1 };
const VALVE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_OUTPUT, instance: 1 };
const SETPOINT: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
const OFFSET: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 2 };
const OCCUPANCY: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::BINARY_INPUT, instance: 1 };
const FAN: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::BINARY_OUTPUT, instance: 1 };
const OVERRIDE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::BINARY_VALUE, instance: 1 };
const FAN_STATUS: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::MULTI_STATE_INPUT, instance: 1 };
const SPEED: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::MULTI_STATE_OUTPUT, instance: 1 };
const MODE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::MULTI_STATE_VALUE, instance: 1 };

/// A device with one object of each kind the store implements.
fn store() -> Store {
    let mut s = Store::new();
    let mut device = Device::new(1000, "Test Device");
    device.location = "Lab".into();
    s.set_device(device).unwrap();
    let specs = [
        ObjectSpec::analog_input(1, "Zone Temp")
            .units(EngineeringUnits::DEGREES_CELSIUS)
            .cov_increment(0.5)
            .value(20.0)
            .description("Zone 1"),
        ObjectSpec::analog_output(1, "Valve").units(EngineeringUnits::PERCENT),
        ObjectSpec::analog_value(1, "Setpoint").units(EngineeringUnits::DEGREES_CELSIUS).relinquish_default(21.0),
        ObjectSpec::analog_value(2, "Offset").value(0.5),
        ObjectSpec::binary_input(1, "Occupancy").active_text("Occupied").inactive_text("Unoccupied"),
        ObjectSpec::binary_output(1, "Fan"),
        ObjectSpec::binary_value(1, "Override").commandable(),
        ObjectSpec::multi_state_input(1, "Fan Status", ["Off", "On", "Fault"]),
        ObjectSpec::multi_state_output(1, "Speed", ["Low", "Medium", "High"]),
        ObjectSpec::multi_state_value(1, "Mode", ["Off", "Heat", "Cool", "Auto"]).value(4),
    ];
    for spec in specs {
        s.add(spec).unwrap();
    }
    s.take_changes();
    s.take_objects_changed();
    s
}

fn read(
    s: &Store,
    object: ObjectIdentifier,
    property: PropertyIdentifier,
) -> Result<AnyValue, trellis_guest_sdk::BacnetError> {
    s.read(&PropertyRef::new(object, property))
}

fn read_index(
    s: &Store,
    object: ObjectIdentifier,
    property: PropertyIdentifier,
    index: u32,
) -> Result<AnyValue, trellis_guest_sdk::BacnetError> {
    s.read(&PropertyRef::element(object, property, index))
}

fn prim(v: Value) -> AnyValue {
    AnyValue::primitive(v)
}

fn text(s: &str) -> AnyValue {
    trellis_guest_sdk::value::text(s).into()
}
