//! The demo building: Trellis's default object model.
//!
//! A small building controller — zone, outdoor and supply air temperatures,
//! a damper/valve, setpoints, a supply fan, occupancy and an operating mode —
//! whose values move over time (see [`sim`]), and a Trend Log of the zone
//! temperature (one record a minute, the last 1,000 kept; the SDK's store
//! takes the records at the ticks). The objects come from
//! `/data/objects.toml` when the host preopened a data directory holding
//! one, else from the embedded default (`objects.toml` beside this crate's
//! manifest, which documents the format).
//!
//! A front end may create (and delete again) commandable Analog and Binary
//! Values and Multi-state Values (three states until its State_Text says
//! otherwise) where the operator's `create_objects` allows the type: the
//! store's templates, see [`creatable`].

mod config;
mod sim;

use sim::{Points, Sim};
use trellis_guest_sdk::host::{LogLevel, log};
use trellis_guest_sdk::{Config, DateTime, ObjectModel, ObjectSpec, PluginInfo, Store};

/// The demo building's model: the points the simulation drives and its state.
pub struct DemoBuilding {
    points: Points,
    sim: Sim,
}

impl ObjectModel for DemoBuilding {
    fn describe() -> PluginInfo {
        PluginInfo::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            "A small building controller: zone temperature following a setpoint, outdoor air, supply air, damper, fan, occupancy and operating mode.",
        )
    }

    fn new(store: &mut Store, files: &Config) -> Result<Self, String> {
        let cfg = match files.read_to_string("objects.toml")? {
            Some(text) => {
                log(LogLevel::Info, "serving the objects of /data/objects.toml");
                config::parse(&text, "/data/objects.toml")?
            }
            None => config::parse(config::DEFAULT, "the embedded objects.toml")?,
        };
        build(store, cfg)
    }

    fn tick(&mut self, store: &mut Store, now: DateTime) {
        self.sim.tick(&self.points, store, now);
    }

    fn export_state(&self, _: &Store) -> Vec<u8> {
        self.sim.state_bytes()
    }

    fn import_state(&mut self, _: &mut Store, state: &[u8]) -> Result<(), String> {
        self.sim.restore(state)
    }
}

fn build(store: &mut Store, cfg: config::Config) -> Result<DemoBuilding, String> {
    store.set_device(cfg.device)?;
    let mut points = Points::default();
    for (spec, role) in cfg.objects {
        let id = store.add(spec)?;
        if let Some(role) = role {
            points.assign(role, id)?;
        }
    }
    points.check(store)?;
    for log in cfg.trend_logs {
        store.add_trend_log(log)?;
    }
    for template in creatable() {
        store.allow_creation(template)?;
    }
    let sim = Sim::new(&points, store);
    Ok(DemoBuilding { points, sim })
}

/// What a front end may create: commandable values an operator adds while
/// commissioning (a setpoint, an override, a mode).
fn creatable() -> [ObjectSpec; 3] {
    [
        ObjectSpec::analog_value(0, "template").commandable(),
        ObjectSpec::binary_value(0, "template").commandable(),
        ObjectSpec::multi_state_value(0, "template", ["State 1", "State 2", "State 3"]).commandable(),
    ]
}

trellis_guest_sdk::register_plugin!(DemoBuilding);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_guest_sdk::bacnet::Element;
    use trellis_guest_sdk::bacnet::{ObjectType, PropertyIdentifier as P};
    use trellis_guest_sdk::{ObjectIdentifier, PresentValue, Value, Write};

    fn id(t: ObjectType, i: u32) -> ObjectIdentifier {
        ObjectIdentifier { object_type: t, instance: i }
    }

    fn building() -> (Store, DemoBuilding) {
        let mut store = Store::new();
        let model = DemoBuilding::new(&mut store, &Config::none()).expect("the embedded objects.toml builds");
        (store, model)
    }

    /// Tuesday 2024-03-05, 10:00 UTC (occupied), local = UTC.
    const TUESDAY_10H: u64 = 1_709_632_800_000;

    fn run(store: &mut Store, model: &mut DemoBuilding, from_ms: u64, minutes: u64) -> u64 {
        let mut t = from_ms;
        for _ in 0..minutes * 6 {
            model.tick(store, DateTime::new(t, 0));
            t += 10_000;
        }
        t
    }

    #[test]
    fn the_embedded_default_serves_a_device_eleven_points_and_a_trend_log() {
        let (store, _) = building();
        assert_eq!(store.device_id(), id(ObjectType::DEVICE, 389_001));
        assert_eq!(store.len(), 12);
        assert_eq!(store.find("Zone Temperature Log"), Some(id(ObjectType::TREND_LOG, 1)));
        assert_eq!(store.find("Zone Setpoint"), Some(id(ObjectType::ANALOG_VALUE, 1)));
        assert!(store.is_commandable(id(ObjectType::ANALOG_VALUE, 1)));
        assert_eq!(store.analog(id(ObjectType::ANALOG_VALUE, 1)), Some(21.0));
        assert_eq!(store.multi_state(id(ObjectType::MULTI_STATE_VALUE, 1)), Some(4));
    }

    #[test]
    fn the_zone_follows_a_setpoint_written_to_the_analog_value() {
        let (mut store, mut model) = building();
        let zone = id(ObjectType::ANALOG_INPUT, 1);
        let setpoint = id(ObjectType::ANALOG_VALUE, 1);
        store
            .write(&Write::new(setpoint, P::PRESENT_VALUE, trellis_guest_sdk::Value::Real(23.0)).at_priority(8))
            .unwrap();
        run(&mut store, &mut model, TUESDAY_10H, 60);
        let t = store.analog(zone).unwrap();
        assert!((22.0..=23.5).contains(&t), "zone at {t} °C after an hour toward 23 °C");
        assert_eq!(store.binary(id(ObjectType::BINARY_OUTPUT, 1)), Some(true), "fan runs while occupied");
        assert_eq!(store.multi_state(id(ObjectType::MULTI_STATE_INPUT, 1)), Some(2), "fan status On");
    }

    #[test]
    fn an_operator_command_outranks_the_control_program() {
        let (mut store, mut model) = building();
        let fan = id(ObjectType::BINARY_OUTPUT, 1);
        run(&mut store, &mut model, TUESDAY_10H, 1);
        assert_eq!(store.binary(fan), Some(true));
        store
            .write(&Write::new(fan, P::PRESENT_VALUE, trellis_guest_sdk::Value::Enumerated(0)).at_priority(8))
            .unwrap();
        run(&mut store, &mut model, TUESDAY_10H + 60_000, 1);
        assert_eq!(store.binary(fan), Some(false));
        assert_eq!(store.command_priority(fan), Some(8));
        assert_eq!(store.multi_state(id(ObjectType::MULTI_STATE_INPUT, 1)), Some(1), "fan status Off");
    }

    #[test]
    fn outdoor_air_is_warmest_in_the_afternoon_and_nobody_is_in_at_night() {
        let (mut store, mut model) = building();
        let outdoor = id(ObjectType::ANALOG_INPUT, 2);
        model.tick(&mut store, DateTime::new(TUESDAY_10H + 5 * 3_600_000, 0));
        assert!((store.analog(outdoor).unwrap() - 18.0).abs() < 0.01);
        model.tick(&mut store, DateTime::new(TUESDAY_10H + 13 * 3_600_000, 0));
        assert_eq!(store.binary(id(ObjectType::BINARY_INPUT, 1)), Some(false));
        assert_eq!(store.binary(id(ObjectType::BINARY_OUTPUT, 1)), Some(false));
    }

    fn read(store: &Store, object: ObjectIdentifier, p: P) -> trellis_guest_sdk::AnyValue {
        store.read(&trellis_guest_sdk::PropertyRef::new(object, p)).unwrap()
    }

    #[test]
    fn the_trend_log_records_the_zone_temperature_once_a_minute() {
        let (mut store, mut model) = building();
        let log = id(ObjectType::TREND_LOG, 1);
        assert_eq!(read(&store, log, P::BUFFER_SIZE).as_primitive(), Some(&Value::Unsigned(1000)));
        assert_eq!(read(&store, log, P::LOG_INTERVAL).as_primitive(), Some(&Value::Unsigned(6000)));
        // run() ticks every 10 s: 10 minutes give records at 0, 1, …, 9 minutes.
        let mut t = TUESDAY_10H;
        for _ in 0..60 {
            model.tick(&mut store, DateTime::new(t, 0));
            store.log_trends(DateTime::new(t, 0));
            t += 10_000;
        }
        assert_eq!(store.record_count(log), Some(10));
        assert_eq!(read(&store, log, P::TOTAL_RECORD_COUNT).as_primitive(), Some(&Value::Unsigned(10)));
        let buffer = read(&store, log, P::LOG_BUFFER);
        // The last record: [0] timestamp, [1] { real-value [2] }, [2] status flags.
        let n = buffer.0.len();
        let Element::Constructed { tag: 1, elements } = &buffer.0[n - 2] else { panic!("{buffer:?}") };
        let [Element::Context { tag: 2, data }] = elements.as_slice() else { panic!("{elements:?}") };
        let logged = f32::from_be_bytes(data.as_slice().try_into().unwrap());
        let zone = store.analog(id(ObjectType::ANALOG_INPUT, 1)).unwrap();
        assert!((logged - zone).abs() < 0.5, "logged {logged}, zone now {zone}");
    }

    #[test]
    fn the_log_interval_and_buffer_come_from_objects_toml() {
        let text = r#"
            [[object]]
            type = "analog-input"
            instance = 7
            name = "Zone"
            role = "zone-temperature"
            [[trend_log]]
            instance = 3
            name = "Fast Zone Log"
            object = "analog-input,7"
            interval = 0.5
            buffer_size = 20
            stop_when_full = true
        "#;
        let mut store = Store::new();
        build(&mut store, config::parse(text, "test").unwrap()).unwrap();
        let log = id(ObjectType::TREND_LOG, 3);
        assert_eq!(read(&store, log, P::LOG_INTERVAL).as_primitive(), Some(&Value::Unsigned(50)));
        assert_eq!(read(&store, log, P::BUFFER_SIZE).as_primitive(), Some(&Value::Unsigned(20)));
        assert_eq!(read(&store, log, P::STOP_WHEN_FULL).as_primitive(), Some(&Value::Boolean(true)));
        let bad = "[[trend_log]]\ninstance = 1\nname = \"L\"\nobject = \"analog-input,9\"\n";
        let e = build(&mut Store::new(), config::parse(bad, "t").unwrap()).err().unwrap();
        assert!(e.contains("analog-input,9"), "{e}");
        let bad = "[[trend_log]]\ninstance = 1\nname = \"L\"\nobject = \"analog-input\"\n";
        let e = config::parse(bad, "t").err().unwrap();
        assert!(e.contains("trend_log 1") && e.contains("type,instance"), "{e}");
    }

    #[test]
    fn the_simulation_state_survives_export_and_import() {
        let (mut store, mut model) = building();
        run(&mut store, &mut model, TUESDAY_10H, 10);
        let bytes = model.export_state(&store);
        let (mut store2, mut model2) = building();
        model2.import_state(&mut store2, &bytes).unwrap();
        assert_eq!(model2.sim.zone, model.sim.zone);
        assert!(model2.import_state(&mut store2, b"bad").is_err());
    }

    #[test]
    fn a_configuration_file_replaces_the_default() {
        let text = r#"
            [device]
            instance = 1234
            name = "Test Rig"
            [[object]]
            type = "analog-input"
            instance = 7
            name = "Zone"
            units = "degrees-fahrenheit"
            value = 70.0
            role = "zone-temperature"
        "#;
        let mut store = Store::new();
        build(&mut store, config::parse(text, "test").unwrap()).unwrap();
        assert_eq!(store.device_id(), id(ObjectType::DEVICE, 1234));
        assert_eq!(store.present_value(id(ObjectType::ANALOG_INPUT, 7)), Some(PresentValue::Analog(70.0)));
    }

    #[test]
    fn configuration_errors_name_the_object_and_the_problem() {
        let bad_type = "[[object]]\ntype = \"analog-thing\"\ninstance = 1\nname = \"X\"\n";
        let e = config::parse(bad_type, "objects.toml").err().unwrap();
        assert!(e.contains("object 1") && e.contains("analog-thing"), "{e}");
        let bad_role = "[[object]]\ntype = \"binary-input\"\ninstance = 1\nname = \"X\"\nrole = \"zone-temperature\"\n";
        let mut store = Store::new();
        let e = build(&mut store, config::parse(bad_role, "t").unwrap()).err().unwrap();
        assert!(e.contains("binary-input,1"), "{e}");
        assert!(config::parse("[[object]]\ntype = 3\n", "t").is_err());
    }
}
