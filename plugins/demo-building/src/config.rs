//! `objects.toml`: the demo building's Device object and objects (the
//! embedded default is `../objects.toml`, which documents the format).

use serde::Deserialize;
use trellis_guest_sdk::bacnet::{EngineeringUnits, ObjectType, Polarity, PropertyIdentifier};
use trellis_guest_sdk::{AlarmSpec, Device, ObjectIdentifier, ObjectSpec, PresentValue, TrendLogSpec};

/// The embedded default.
pub const DEFAULT: &str = include_str!("../objects.toml");

/// The file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    device: DeviceSection,
    #[serde(default, rename = "object")]
    objects: Vec<ObjectEntry>,
    #[serde(default)]
    trend_log: Vec<TrendLogEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrendLogEntry {
    instance: u32,
    name: String,
    #[serde(default)]
    description: String,
    /// The logged object, "type,instance".
    object: String,
    /// The logged property; Present_Value by default.
    property: Option<String>,
    /// Seconds between records (Log_Interval).
    interval: Option<f64>,
    buffer_size: Option<u32>,
    #[serde(default)]
    stop_when_full: bool,
    enable: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceSection {
    instance: Option<u32>,
    name: Option<String>,
    description: Option<String>,
    location: Option<String>,
    model_name: Option<String>,
    vendor_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectEntry {
    #[serde(rename = "type")]
    object_type: String,
    instance: u32,
    name: String,
    #[serde(default)]
    description: String,
    units: Option<String>,
    cov_increment: Option<f32>,
    value: Option<Scalar>,
    #[serde(default)]
    commandable: bool,
    relinquish_default: Option<Scalar>,
    states: Option<Vec<String>>,
    active_text: Option<String>,
    inactive_text: Option<String>,
    polarity: Option<String>,
    role: Option<Role>,
    alarm: Option<AlarmEntry>,
}

/// `[object.alarm]`: intrinsic reporting (see `objects.toml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlarmEntry {
    high_limit: Option<f32>,
    low_limit: Option<f32>,
    #[serde(default)]
    deadband: f32,
    alarm_value: Option<bool>,
    alarm_values: Option<Vec<u32>>,
    #[serde(default)]
    fault_values: Vec<u32>,
    #[serde(default)]
    notification_class: u32,
    #[serde(default)]
    time_delay: u32,
    time_delay_normal: Option<u32>,
    notify_type: Option<String>,
    event_enable: Option<Vec<String>>,
    message_texts: Option<[String; 3]>,
}

fn alarm_spec(a: &AlarmEntry) -> Result<AlarmSpec, String> {
    let mut s = match (a.high_limit, a.low_limit, a.alarm_value, &a.alarm_values) {
        (Some(high), Some(low), None, None) => AlarmSpec::out_of_range(low, high, a.deadband),
        (Some(high), None, None, None) => AlarmSpec::out_of_range(f32::MIN, high, a.deadband).high_limit_only(),
        (None, Some(low), None, None) => AlarmSpec::out_of_range(low, f32::MAX, a.deadband).low_limit_only(),
        (None, None, Some(v), None) => AlarmSpec::alarm_value(v),
        (None, None, None, Some(v)) => {
            AlarmSpec::alarm_values(v.iter().copied()).fault_values(a.fault_values.iter().copied())
        }
        _ => return Err("an alarm takes high_limit and/or low_limit, or alarm_value, or alarm_values".into()),
    };
    s = s.notification_class(a.notification_class).time_delay(a.time_delay);
    if let Some(n) = a.time_delay_normal {
        s = s.time_delay_normal(n);
    }
    match a.notify_type.as_deref() {
        None | Some("alarm") => {}
        Some("event") => s = s.as_event(),
        Some(other) => return Err(format!("notify_type {other:?} is neither \"alarm\" nor \"event\"")),
    }
    if let Some(enable) = &a.event_enable {
        for t in enable {
            if !["to-offnormal", "to-fault", "to-normal"].contains(&t.as_str()) {
                return Err(format!("event_enable {t:?}: not to-offnormal, to-fault or to-normal"));
            }
        }
        let on = |t: &str| enable.iter().any(|e| e == t);
        s = s.event_enable(on("to-offnormal"), on("to-fault"), on("to-normal"));
    }
    if let Some([a, b, c]) = &a.message_texts {
        s = s.message_texts(a, b, c);
    }
    Ok(s)
}

/// A value as TOML writes it.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Bool(bool),
    Integer(i64),
    Float(f64),
}

impl From<Scalar> for PresentValue {
    fn from(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => PresentValue::Binary(b),
            Scalar::Integer(n) => match u32::try_from(n) {
                Ok(n) => PresentValue::MultiState(n),
                Err(_) => PresentValue::Analog(n as f32),
            },
            Scalar::Float(x) => PresentValue::Analog(x as f32),
        }
    }
}

/// What the simulation does with an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// AI: follows the conditioning, or floats with the outdoor temperature.
    ZoneTemperature,
    /// AI: a daily sinusoid.
    OutdoorTemperature,
    /// AI: hot when heating, cold when cooling.
    SupplyAirTemperature,
    /// AO: commanded by the control program at priority 16.
    DamperCommand,
    /// AV: the heating setpoint.
    ZoneSetpoint,
    /// AV: the cooling setpoint.
    CoolingSetpoint,
    /// BI: the weekday schedule.
    Occupancy,
    /// BO: commanded by the control program at priority 16.
    FanCommand,
    /// BV: forces occupied.
    OccupancyOverride,
    /// MSV: Off, Heat, Cool, Auto.
    OperatingMode,
    /// MSI: Off, On (follows the fan command).
    FanStatus,
}

/// The configuration, checked and ready for the store.
pub struct Config {
    /// The Device object.
    pub device: Device,
    /// The objects, each with its role.
    pub objects: Vec<(ObjectSpec, Option<Role>)>,
    /// The Trend Logs (created after the objects they log).
    pub trend_logs: Vec<TrendLogSpec>,
}

/// Parse and check `text` (`origin` names it in errors).
pub fn parse(text: &str, origin: &str) -> Result<Config, String> {
    let file: File = basic_toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    let d = file.device;
    let mut device = Device::new(d.instance.unwrap_or(Device::DEFAULT_INSTANCE), "Trellis Demo Building");
    device.model_name = "demo-building".into();
    device.application_software_version = env!("CARGO_PKG_VERSION").into();
    if let Some(v) = d.name {
        device.name = v;
    }
    if let Some(v) = d.description {
        device.description = v;
    }
    if let Some(v) = d.location {
        device.location = v;
    }
    if let Some(v) = d.model_name {
        device.model_name = v;
    }
    if let Some(v) = d.vendor_name {
        device.vendor_name = v;
    }
    let mut objects = Vec::with_capacity(file.objects.len());
    for (i, o) in file.objects.into_iter().enumerate() {
        let at = || format!("{origin}: object {} ({:?})", i + 1, o.name);
        let role = o.role;
        objects.push((spec(&o).map_err(|e| format!("{}: {e}", at()))?, role));
    }
    let mut trend_logs = Vec::with_capacity(file.trend_log.len());
    for (i, t) in file.trend_log.into_iter().enumerate() {
        let at = || format!("{origin}: trend_log {} ({:?})", i + 1, t.name);
        trend_logs.push(trend_log(&t).map_err(|e| format!("{}: {e}", at()))?);
    }
    Ok(Config { device, objects, trend_logs })
}

fn trend_log(t: &TrendLogEntry) -> Result<TrendLogSpec, String> {
    let (object_type, instance) =
        t.object.split_once([',', ':']).ok_or_else(|| format!("object {:?} is not \"type,instance\"", t.object))?;
    let object_type = ObjectType::from_name(object_type.trim())
        .ok_or_else(|| format!("unknown object type {:?}", object_type.trim()))?;
    let instance: u32 = instance.trim().parse().map_err(|_| format!("bad instance in {:?}", t.object))?;
    let object = ObjectIdentifier { object_type, instance };
    let mut s = TrendLogSpec::new(t.instance, &t.name, object).description(&t.description);
    if let Some(p) = &t.property {
        s = s.property(PropertyIdentifier::from_name(p).ok_or_else(|| format!("unknown property {p:?}"))?);
    }
    if let Some(seconds) = t.interval {
        let centiseconds = (seconds * 100.0).round();
        if !(1.0..=u32::MAX as f64).contains(&centiseconds) {
            return Err(format!("interval {seconds} s is outside 0.01 s..=42,949,672 s"));
        }
        s = s.log_interval(centiseconds as u32);
    }
    if let Some(n) = t.buffer_size {
        s = s.buffer_size(n);
    }
    if let Some(enable) = t.enable {
        s = s.enabled(enable);
    }
    Ok(s.stop_when_full(t.stop_when_full))
}

fn spec(o: &ObjectEntry) -> Result<ObjectSpec, String> {
    let object_type =
        ObjectType::from_name(&o.object_type).ok_or_else(|| format!("unknown object type {:?}", o.object_type))?;
    let mut s = ObjectSpec::new(object_type, o.instance, &o.name).description(&o.description);
    if let Some(u) = &o.units {
        s = s.units(EngineeringUnits::from_name(u).ok_or_else(|| format!("unknown units {u:?}"))?);
    }
    if let Some(x) = o.cov_increment {
        s = s.cov_increment(x);
    }
    if let Some(v) = o.value {
        s = s.value(v);
    }
    if o.commandable {
        s = s.commandable();
    }
    if let Some(v) = o.relinquish_default {
        s = s.relinquish_default(v);
    }
    if let Some(states) = &o.states {
        s = s.states(states.iter().map(String::as_str));
    }
    if let Some(t) = &o.active_text {
        s = s.active_text(t);
    }
    if let Some(t) = &o.inactive_text {
        s = s.inactive_text(t);
    }
    if let Some(p) = &o.polarity {
        s = s.polarity(Polarity::from_name(p).ok_or_else(|| format!("unknown polarity {p:?}"))?);
    }
    if let Some(a) = &o.alarm {
        s = s.alarm(alarm_spec(a).map_err(|e| format!("{}: {e}", o.name))?);
    }
    Ok(s)
}
