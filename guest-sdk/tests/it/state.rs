//! State across a hot swap: `export-state` of one instance into
//! `import-state` of the next, through a model registered the way plugins do.

use super::*;
use trellis_guest_sdk::{Config, Instance, ObjectModel, PluginInfo, PropertyIdentifier as P, Write};

/// The test device as a model; `extra` is the model's own state.
struct TestModel {
    extra: Vec<u8>,
}

impl ObjectModel for TestModel {
    fn describe() -> PluginInfo {
        PluginInfo::new("test", "1.0.0", "the test device")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        *s = store();
        Ok(TestModel { extra: b"model bytes".to_vec() })
    }
    fn export_state(&self, _: &Store) -> Vec<u8> {
        self.extra.clone()
    }
    fn import_state(&mut self, _: &mut Store, state: &[u8]) -> Result<(), String> {
        if state == b"refuse" {
            return Err("refused".into());
        }
        self.extra = state.to_vec();
        Ok(())
    }
}

/// A later version: the zone is renamed in its configuration, the valve is
/// gone, the mode has three states.
struct NextVersion;

impl ObjectModel for NextVersion {
    fn describe() -> PluginInfo {
        PluginInfo::new("test", "2.0.0", "the next version")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        *s = store();
        s.remove(VALVE);
        s.remove(MODE);
        s.add(ObjectSpec::multi_state_value(1, "Mode", ["Off", "On", "Auto"])).unwrap();
        s.remove(OFFSET);
        s.add(ObjectSpec::analog_value(2, "Offset (v2)").value(0.0)).unwrap();
        Ok(NextVersion)
    }
}

fn w(object: ObjectIdentifier, p: P, v: Value) -> Write {
    Write::new(object, p, v)
}

#[test]
fn present_values_priority_arrays_out_of_service_and_written_names_survive_a_swap() {
    let mut old = Instance::<TestModel>::start(&Config::none()).unwrap();
    let writes = [
        w(SETPOINT, P::PRESENT_VALUE, Value::Real(23.0)).at_priority(8),
        w(SETPOINT, P::PRESENT_VALUE, Value::Real(19.0)).at_priority(14),
        w(FAN, P::PRESENT_VALUE, Value::Enumerated(1)).at_priority(1),
        w(OFFSET, P::PRESENT_VALUE, Value::Real(-1.5)),
        w(ZONE_TEMP, P::OUT_OF_SERVICE, Value::Boolean(true)),
        w(ZONE_TEMP, P::PRESENT_VALUE, Value::Real(35.0)),
        w(ZONE_TEMP, P::OBJECT_NAME, trellis_guest_sdk::value::text("Hot Zone")),
        w(ZONE_TEMP, P::COV_INCREMENT, Value::Real(1.0)),
        w(MODE, P::PRESENT_VALUE, Value::Unsigned(3)),
        w(DEVICE, P::LOCATION, trellis_guest_sdk::value::text("Roof")),
    ];
    for r in old.write(&writes) {
        r.unwrap();
    }
    let state = old.export_state();
    assert_eq!(state, old.export_state(), "deterministic");

    let mut new = Instance::<TestModel>::start(&Config::none()).unwrap();
    new.import_state(&state).unwrap();
    let s = new.store();
    assert_eq!(s.analog(SETPOINT), Some(23.0));
    assert_eq!(read_index(s, SETPOINT, P::PRIORITY_ARRAY, 14), Ok(prim(Value::Real(19.0))));
    assert_eq!(s.command_priority(FAN), Some(1));
    assert_eq!(s.analog(OFFSET), Some(-1.5));
    assert_eq!(s.out_of_service(ZONE_TEMP), Some(true));
    assert_eq!(s.analog(ZONE_TEMP), Some(35.0));
    assert_eq!(s.name(ZONE_TEMP), Some("Hot Zone"));
    assert_eq!(read(s, ZONE_TEMP, P::COV_INCREMENT), Ok(prim(Value::Real(1.0))));
    assert_eq!(s.multi_state(MODE), Some(3));
    assert_eq!(s.device().location, "Roof");
    assert_eq!(new.model().extra, b"model bytes");
    assert_eq!(new.export_state(), state, "the new instance exports what it took over");
}

#[test]
fn a_new_version_keeps_what_fits_and_its_own_configuration_for_the_rest() {
    let mut old = Instance::<TestModel>::start(&Config::none()).unwrap();
    let writes = [
        w(VALVE, P::PRESENT_VALUE, Value::Real(40.0)).at_priority(8),
        w(MODE, P::PRESENT_VALUE, Value::Unsigned(4)),
        w(SETPOINT, P::PRESENT_VALUE, Value::Real(22.0)),
    ];
    for r in old.write(&writes) {
        r.unwrap();
    }
    let mut new = Instance::<NextVersion>::start(&Config::none()).unwrap();
    new.import_state(&old.export_state()).unwrap();
    let s = new.store();
    assert!(!s.contains(VALVE), "an object the new version lacks is skipped");
    assert_eq!(s.multi_state(MODE), Some(1), "state 4 does not fit three states: skipped");
    assert_eq!(s.analog(SETPOINT), Some(22.0));
    assert_eq!(s.name(OFFSET), Some("Offset (v2)"), "a name no client wrote follows the new configuration");
}

#[test]
fn a_state_that_is_not_a_trellis_state_is_refused_with_a_reason() {
    let mut i = Instance::<TestModel>::start(&Config::none()).unwrap();
    let e = i.import_state(b"bad state").unwrap_err();
    assert!(e.contains("not a Trellis object-model state"), "{e}");
    assert!(i.import_state(b"").is_err());
    assert!(i.import_state(b"TRST").is_err(), "no version");
    let e = i.import_state(b"TRST\x02").unwrap_err();
    assert!(e.contains("version 2"), "{e}");
    let e = i.import_state(b"TRST\x01\x0e").unwrap_err();
    assert!(e.contains("does not decode"), "{e}");
}

#[test]
fn the_models_refusal_is_the_answer() {
    let mut old = Instance::<TestModel>::start(&Config::none()).unwrap();
    old.model_mut().extra = b"refuse".to_vec();
    let mut new = Instance::<TestModel>::start(&Config::none()).unwrap();
    assert_eq!(new.import_state(&old.export_state()), Err("refused".into()));
}

#[test]
fn records_a_later_writer_added_are_skipped() {
    let old = Instance::<TestModel>::start(&Config::none()).unwrap();
    let mut state = old.export_state();
    // A context-tagged [7] record with one octet: unknown to this version.
    state.extend_from_slice(&[0x79, 0x00]);
    let mut new = Instance::<TestModel>::start(&Config::none()).unwrap();
    new.import_state(&state).unwrap();
}
