//! {{name}}: a Trellis object model — the BACnet objects of one device.
//!
//! A setpoint the network may write (commandable, at most 30.0), and a
//! temperature that follows it a little each tick. The SDK's store does
//! the rest: the Device object, Object_List, priority arrays, Status_Flags,
//! every read of ALL, every BACnet Error, COV reports to the host.

use trellis_guest_sdk::bacnet::{EngineeringUnits, ObjectType, PropertyIdentifier as P};
use trellis_guest_sdk::value::as_real;
use trellis_guest_sdk::{
    BacnetError, Config, DateTime, Device, ObjectIdentifier, ObjectModel, ObjectSpec, PluginInfo, Store, Write,
    errors, register_plugin,
};

const SETPOINT: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
const TEMPERATURE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 1 };

/// The model: nothing of its own beyond the store.
pub struct Model;

impl ObjectModel for Model {
    fn describe() -> PluginInfo {
        PluginInfo::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"), "{{summary}}")
    }

    fn new(store: &mut Store, _config: &Config) -> Result<Self, String> {
        store.set_device(Device::new(260_001, "{{name}}"))?;
        store.add(
            ObjectSpec::analog_value(1, "Setpoint")
                .units(EngineeringUnits::DEGREES_CELSIUS)
                .relinquish_default(21.0)
                .cov_increment(0.1),
        )?;
        store.add(
            ObjectSpec::analog_input(1, "Temperature")
                .units(EngineeringUnits::DEGREES_CELSIUS)
                .cov_increment(0.1)
                .value(20.0),
        )?;
        Ok(Model)
    }

    fn tick(&mut self, store: &mut Store, _now: DateTime) {
        let target = store.analog(SETPOINT).unwrap_or(21.0);
        let now = store.analog(TEMPERATURE).unwrap_or(20.0);
        // Ignored while a client has the input out of service.
        let _ = store.update(TEMPERATURE, now + (target - now) * 0.1);
    }

    fn write_property(&mut self, store: &mut Store, write: &Write) -> Result<(), BacnetError> {
        if write.target.object == SETPOINT
            && write.target.property == P::PRESENT_VALUE
            && as_real(&write.value).is_ok_and(|x| x > 30.0)
        {
            return Err(errors::VALUE_OUT_OF_RANGE);
        }
        store.write(write)
    }
}

register_plugin!(Model);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_guest_sdk::{Instance, Value};

    #[test]
    fn a_setpoint_above_30_is_value_out_of_range_and_the_temperature_follows_one_below() {
        let mut m = Instance::<Model>::start(&Config::none()).unwrap();
        let too_hot = Write::new(SETPOINT, P::PRESENT_VALUE, Value::Real(31.0)).at_priority(8);
        assert_eq!(m.write(&[too_hot]), [Err(errors::VALUE_OUT_OF_RANGE)]);
        let warm = Write::new(SETPOINT, P::PRESENT_VALUE, Value::Real(25.0)).at_priority(8);
        assert_eq!(m.write(&[warm]), [Ok(())]);
        for s in 0..100 {
            m.tick(DateTime::new(1_700_000_000_000 + s * 1000, 0));
        }
        assert!(m.store().analog(TEMPERATURE).unwrap() > 24.9);
    }
}
