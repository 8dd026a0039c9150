//! Misbehave: a plugin that fails on purpose, for the host's failure tests.
//!
//! A normal small model (Device 389666, `analog-value,1` commandable) plus
//! objects whose use fails the call — a read of any of their properties,
//! or a write to them:
//!
//! | object | failure |
//! |---|---|
//! | `analog-value,666` "Trap" | panics: the call traps |
//! | `analog-value,667` "Runaway Loop" | loops forever: the epoch deadline ends it |
//! | `analog-value,668` "Memory Bomb" | allocates until the memory limit traps it |
//! | `analog-value,670` "Sleeper" | sleeps an hour through WASI (`std::thread::sleep`): the host must not let it block its thread |
//! | `binary-value,669` "Poison State" | while active, `export-state` yields a state every `import-state` of this plugin refuses |
//!
//! `import-state` also refuses any state that does not start with the SDK's
//! header — `b"bad…"` for instance — with an error naming the problem.
//!
//! `/data/misbehave.toml` (optional) makes the other exports fail, each
//! with `"trap"`, `"loop"`, `"memory"`, `"sleep"` or `"none"` (the default):
//!
//! ```toml
//! on_start = "none"   # building the model (the first call after describe)
//! on_tick = "none"
//! on_import = "none"  # import-state
//! device_instance = 389666
//! ```

use serde::Deserialize;
use trellis_guest_sdk::bacnet::ObjectType;
use trellis_guest_sdk::{
    AnyValue, BacnetError, Config, DateTime, Device, ObjectIdentifier, ObjectModel, ObjectSpec, PluginInfo,
    PropertyRef, Store, Write,
};

/// One way to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// Do not fail.
    #[default]
    None,
    /// Panic, which traps.
    Trap,
    /// Loop forever.
    Loop,
    /// Allocate until memory runs out.
    Memory,
    /// Sleep an hour in a WASI call (a host import that would block).
    Sleep,
}

impl Failure {
    /// Fail this way (returns only for `None`).
    pub fn happen(self, context: &str) {
        match self {
            Failure::None => {}
            Failure::Trap => panic!("misbehave: trap on {context}"),
            Failure::Loop => loop {
                std::hint::spin_loop();
            },
            Failure::Memory => {
                let mut hog: Vec<Vec<u8>> = Vec::new();
                loop {
                    // Written, so every page is really touched.
                    hog.push(vec![0xA5; 1 << 20]);
                    std::hint::black_box(&hog);
                }
            }
            Failure::Sleep => std::thread::sleep(std::time::Duration::from_secs(3600)),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    on_start: Failure,
    #[serde(default)]
    on_tick: Failure,
    #[serde(default)]
    on_import: Failure,
    device_instance: Option<u32>,
}

const TRAP: ObjectIdentifier = av(666);
const LOOP: ObjectIdentifier = av(667);
const MEMORY: ObjectIdentifier = av(668);
const SLEEP: ObjectIdentifier = av(670);
const POISON: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::BINARY_VALUE, instance: 669 };
const POISONED: &[u8] = b"bad: poisoned by binary-value,669";

const fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance }
}

fn failure_of(object: ObjectIdentifier) -> Failure {
    match object {
        TRAP => Failure::Trap,
        LOOP => Failure::Loop,
        MEMORY => Failure::Memory,
        SLEEP => Failure::Sleep,
        _ => Failure::None,
    }
}

/// The model.
pub struct Misbehave {
    settings: Settings,
}

impl ObjectModel for Misbehave {
    fn describe() -> PluginInfo {
        PluginInfo::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            "Fails on purpose (trap, runaway loop, memory bomb, refused state) for the host's failure tests.",
        )
    }

    fn new(store: &mut Store, files: &Config) -> Result<Self, String> {
        let text = files.read_to_string("misbehave.toml")?.unwrap_or_default();
        let settings: Settings = basic_toml::from_str(&text).map_err(|e| format!("/data/misbehave.toml: {e}"))?;
        settings.on_start.happen("start");
        let mut device = Device::new(settings.device_instance.unwrap_or(389_666), "Trellis Misbehave");
        device.model_name = "misbehave".into();
        device.application_software_version = env!("CARGO_PKG_VERSION").into();
        store.set_device(device)?;
        store.add(ObjectSpec::analog_value(1, "Normal Value").description("Behaves").relinquish_default(0.0))?;
        store.add(ObjectSpec::analog_value(666, "Trap").description("Reading or writing it traps"))?;
        store.add(ObjectSpec::analog_value(667, "Runaway Loop").description("Reading or writing it never returns"))?;
        store.add(ObjectSpec::analog_value(668, "Memory Bomb").description("Reading or writing it exhausts memory"))?;
        store.add(
            ObjectSpec::analog_value(670, "Sleeper").description("Reading or writing it sleeps an hour in WASI"),
        )?;
        store.add(
            ObjectSpec::binary_value(669, "Poison State")
                .description("While active, exported state is refused on import")
                .active_text("Poisoned")
                .inactive_text("Clean"),
        )?;
        // Created objects: to show they outlive a trap (the host's snapshot).
        store.allow_creation(ObjectSpec::analog_value(0, "template").commandable())?;
        Ok(Misbehave { settings })
    }

    fn tick(&mut self, _: &mut Store, _: DateTime) {
        self.settings.on_tick.happen("tick");
    }

    fn read_property(&self, store: &Store, target: &PropertyRef) -> Result<AnyValue, BacnetError> {
        failure_of(target.object).happen(&format!("read of {}", target.object));
        store.read(target)
    }

    fn write_property(&mut self, store: &mut Store, write: &Write) -> Result<(), BacnetError> {
        failure_of(write.target.object).happen(&format!("write to {}", write.target.object));
        store.write(write)
    }

    fn export_state(&self, store: &Store) -> Vec<u8> {
        if store.binary(POISON) == Some(true) { POISONED.to_vec() } else { Vec::new() }
    }

    fn import_state(&mut self, _: &mut Store, state: &[u8]) -> Result<(), String> {
        self.settings.on_import.happen("import-state");
        if state.starts_with(b"bad") {
            // The model's own bytes: what a poisoned instance exported.
            return Err(format!("misbehave refuses this state: {}", String::from_utf8_lossy(state)));
        }
        Ok(())
    }
}

trellis_guest_sdk::register_plugin!(Misbehave);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_guest_sdk::{Instance, PropertyIdentifier as P, Value};

    fn start() -> Instance<Misbehave> {
        Instance::start(&Config::none()).unwrap()
    }

    #[test]
    fn the_normal_value_behaves() {
        let mut i = start();
        let r = i.write(&[Write::new(av(1), P::PRESENT_VALUE, Value::Real(4.0)).at_priority(8)]);
        assert_eq!(r, [Ok(())]);
        assert_eq!(i.store().analog(av(1)), Some(4.0));
        assert_eq!(i.read(&[PropertyRef::new(POISON, P::PRESENT_VALUE)])[0][0].1, Ok(Value::Enumerated(0).into()));
    }

    #[test]
    #[should_panic(expected = "misbehave: trap on read of analog-value,666")]
    fn reading_the_trap_object_panics() {
        start().read(&[PropertyRef::new(TRAP, P::PRESENT_VALUE)]);
    }

    #[test]
    #[should_panic(expected = "misbehave: trap on write to analog-value,666")]
    fn writing_the_trap_object_panics() {
        start().write(&[Write::new(TRAP, P::PRESENT_VALUE, Value::Real(1.0))]);
    }

    #[test]
    fn a_state_starting_with_bad_is_refused() {
        let mut i = start();
        assert!(i.import_state(b"bad").unwrap_err().contains("not a Trellis object-model state"));
    }

    #[test]
    fn a_poisoned_instance_exports_state_that_every_instance_refuses() {
        let mut old = start();
        assert_eq!(old.write(&[Write::new(POISON, P::PRESENT_VALUE, Value::Enumerated(1))]), [Ok(())]);
        let mut new = start();
        let e = new.import_state(&old.export_state()).unwrap_err();
        assert!(e.contains("misbehave refuses this state"), "{e}");
        let clean = start();
        new.import_state(&clean.export_state()).unwrap();
    }

    #[test]
    fn the_configuration_names_a_failure_per_export() {
        let s: Settings = basic_toml::from_str("on_tick = \"loop\"\non_import = \"memory\"\n").unwrap();
        assert_eq!((s.on_start, s.on_tick, s.on_import), (Failure::None, Failure::Loop, Failure::Memory));
        assert!(basic_toml::from_str::<Settings>("on_tick = \"explode\"\n").is_err());
    }
}
