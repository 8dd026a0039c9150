//! Bulk objects: a large generated object set for scale tests.
//!
//! N Analog Inputs (`analog-input,1` … `analog-input,N`, named "Bulk AI 1"
//! …) with cheap deterministic values: object `i` at tick `k` reads
//! `((i·7919 + k·31) mod 1000) / 10`. Each tick moves `changes_per_tick` of
//! them, round-robin, so COV traffic is steady and predictable.
//!
//! Optionally also M commandable Analog Values (`analog-value,1` …
//! `analog-value,M`, "Bulk AV 1" …, Relinquish_Default 0.0,
//! COV_Increment 0.5) that only a WriteProperty changes: targets for write
//! and COV load (the `cov` and `mixed` benchmarks).
//!
//! Configuration, all optional, from `/data/bulk.toml`:
//!
//! ```toml
//! count = 1000             # N, 0..=100000
//! device_instance = 389002
//! changes_per_tick = 10
//! values = 0               # M, 0..=10000
//! ```

use serde::Deserialize;
use trellis_guest_sdk::bacnet::EngineeringUnits;
use trellis_guest_sdk::{Config, DateTime, Device, ObjectIdentifier, ObjectModel, ObjectSpec, PluginInfo, Store};

/// Most objects this plugin creates.
pub const MAX_COUNT: u32 = 100_000;
/// Most commandable Analog Values this plugin creates.
pub const MAX_VALUES: u32 = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default = "default_count")]
    count: u32,
    #[serde(default = "default_instance")]
    device_instance: u32,
    #[serde(default = "default_changes")]
    changes_per_tick: u32,
    #[serde(default)]
    values: u32,
}

fn default_count() -> u32 {
    1000
}
fn default_instance() -> u32 {
    389_002
}
fn default_changes() -> u32 {
    10
}

/// The model: which object moves next.
pub struct BulkObjects {
    ids: Vec<ObjectIdentifier>,
    changes_per_tick: u32,
    next: usize,
    ticks: u64,
}

/// The value of object `instance` at tick `tick`.
fn value(instance: u32, tick: u64) -> f32 {
    ((instance as u64 * 7919 + tick * 31) % 1000) as f32 / 10.0
}

impl ObjectModel for BulkObjects {
    fn describe() -> PluginInfo {
        PluginInfo::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            "N generated Analog Inputs with deterministic values, for scale tests (N from /data/bulk.toml, default 1000).",
        )
    }

    fn new(store: &mut Store, files: &Config) -> Result<Self, String> {
        let text = files.read_to_string("bulk.toml")?.unwrap_or_default();
        let s: Settings = basic_toml::from_str(&text).map_err(|e| format!("/data/bulk.toml: {e}"))?;
        if s.count > MAX_COUNT {
            return Err(format!("/data/bulk.toml: count {} is above {MAX_COUNT}", s.count));
        }
        if s.values > MAX_VALUES {
            return Err(format!("/data/bulk.toml: values {} is above {MAX_VALUES}", s.values));
        }
        let mut device = Device::new(s.device_instance, "Trellis Bulk Objects");
        device.model_name = "bulk-objects".into();
        device.application_software_version = env!("CARGO_PKG_VERSION").into();
        device.description = format!("{} generated Analog Inputs", s.count);
        store.set_device(device)?;
        let mut ids = Vec::with_capacity(s.count as usize);
        for i in 1..=s.count {
            let spec = ObjectSpec::analog_input(i, &format!("Bulk AI {i}"))
                .description("Generated for scale tests")
                .units(EngineeringUnits::PERCENT)
                .value(value(i, 0));
            ids.push(store.add(spec)?);
        }
        for i in 1..=s.values {
            let spec = ObjectSpec::analog_value(i, &format!("Bulk AV {i}"))
                .description("Commandable, for write and COV load")
                .units(EngineeringUnits::PERCENT)
                .cov_increment(0.5)
                .relinquish_default(0.0);
            store.add(spec)?;
        }
        Ok(BulkObjects { ids, changes_per_tick: s.changes_per_tick, next: 0, ticks: 0 })
    }

    fn tick(&mut self, store: &mut Store, _: DateTime) {
        self.ticks += 1;
        if self.ids.is_empty() {
            return;
        }
        for _ in 0..self.changes_per_tick.min(self.ids.len() as u32) {
            let id = self.ids[self.next];
            let _ = store.update(id, value(id.instance, self.ticks));
            self.next = (self.next + 1) % self.ids.len();
        }
    }

    fn export_state(&self, _: &Store) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&(self.next as u64).to_le_bytes());
        out.extend_from_slice(&self.ticks.to_le_bytes());
        out
    }

    fn import_state(&mut self, _: &mut Store, state: &[u8]) -> Result<(), String> {
        if state.is_empty() {
            return Ok(());
        }
        let b: [u8; 16] =
            state.try_into().map_err(|_| format!("bulk-objects state is {} bytes, not 16", state.len()))?;
        let next = u64::from_le_bytes(b[..8].try_into().unwrap_or_default()) as usize;
        self.next = if next < self.ids.len() { next } else { 0 };
        self.ticks = u64::from_le_bytes(b[8..].try_into().unwrap_or_default());
        Ok(())
    }
}

trellis_guest_sdk::register_plugin!(BulkObjects);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_guest_sdk::Instance;
    use trellis_guest_sdk::Write;
    use trellis_guest_sdk::bacnet::{ObjectType, PropertyIdentifier, Value};

    fn ai(instance: u32) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance }
    }

    fn data_dir(name: &str, bulk_toml: &str) -> Config {
        let dir = std::env::temp_dir().join(format!("trellis-bulk-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bulk.toml"), bulk_toml).unwrap();
        Config::at(dir)
    }

    #[test]
    fn without_a_configuration_there_are_a_thousand_analog_inputs() {
        let i = Instance::<BulkObjects>::start(&Config::none()).unwrap();
        assert_eq!(i.store().len(), 1000);
        assert_eq!(i.store().device_id().instance, 389_002);
        assert_eq!(i.store().name(ai(1000)), Some("Bulk AI 1000"));
        assert_eq!(i.store().analog(ai(1)), Some(value(1, 0)));
    }

    #[test]
    fn each_tick_moves_changes_per_tick_objects_round_robin() {
        let mut i = Instance::<BulkObjects>::start(&data_dir("rr", "count = 5\nchanges_per_tick = 3\n")).unwrap();
        i.tick(DateTime::default());
        assert_eq!(i.take_notifications().values_changed, [ai(1), ai(2), ai(3)]);
        i.tick(DateTime::default());
        assert_eq!(i.take_notifications().values_changed, [ai(1), ai(4), ai(5)]);
        assert_eq!(i.store().analog(ai(1)), Some(value(1, 2)));
    }

    #[test]
    fn the_count_comes_from_bulk_toml_and_is_bounded() {
        let i = Instance::<BulkObjects>::start(&data_dir("count", "count = 20000\ndevice_instance = 7\n")).unwrap();
        assert_eq!(i.store().len(), 20_000);
        assert_eq!(i.store().device_id().instance, 7);
        assert!(Instance::<BulkObjects>::start(&data_dir("big", "count = 100001\n")).is_err());
        assert!(Instance::<BulkObjects>::start(&data_dir("typo", "cuont = 1\n")).is_err());
    }

    #[test]
    fn values_are_commandable_analog_values_that_only_writes_change() {
        let mut i = Instance::<BulkObjects>::start(&data_dir("values", "count = 2\nvalues = 3\n")).unwrap();
        let av3 = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 3 };
        assert_eq!(i.store().len(), 5);
        assert_eq!(i.store().analog(av3), Some(0.0));
        let write = Write::new(av3, PropertyIdentifier::PRESENT_VALUE, Value::Real(21.5)).at_priority(8);
        assert_eq!(i.write(&[write]), [Ok(())]);
        assert_eq!(i.store().analog(av3), Some(21.5));
        assert_eq!(i.take_notifications().values_changed, [av3], "a write notifies its change");
        i.tick(DateTime::default());
        assert!(!i.take_notifications().values_changed.contains(&av3), "ticks move only the inputs");
        assert!(Instance::<BulkObjects>::start(&data_dir("many", "values = 10001\n")).is_err());
    }

    #[test]
    fn the_rotation_survives_a_swap() {
        let mut a = Instance::<BulkObjects>::start(&Config::none()).unwrap();
        a.tick(DateTime::default());
        let mut b = Instance::<BulkObjects>::start(&Config::none()).unwrap();
        b.import_state(&a.export_state()).unwrap();
        assert_eq!((b.model().next, b.model().ticks), (10, 1));
    }
}
