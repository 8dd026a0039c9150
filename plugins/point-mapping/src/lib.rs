//! Point mapping: every object's Present_Value of the listed devices to
//! MQTT, under a topic scheme and in a payload shape the operator chooses,
//! and writes in on `{topic}/set` with the result on `{topic}/set/result`.
//! The gateway's own `[mqtt]` publisher does the same with a fixed scheme;
//! this is the mapping as a plugin, for a vendor to replace with its own.
//!
//! ```toml
//! devices = [1001]                        # whose objects (every one but the Device object)
//! topic = "site/{device}/{name}"          # {device} {object} (analog-value,1) {type} {instance} {name}
//! payload = "json"                        # json: {"value": 21.5, "name": "Zone Temperature", "time": …}
//!                                         # value: the bare value (21.5, true, null)
//! qos = 1
//! retain = true
//! commands = true                         # {topic}/set takes 22.5, true, null or {"value": 22.5, "priority": 8}
//! priority = 8                            # of a write that names none
//! ```
//!
//! `{name}` is the Object_Name with every character that cannot be in a
//! topic level (`/ + #`, spaces) turned into `-`. Two objects that map to
//! one topic are refused at start, naming both.

use serde::Deserialize;
use std::collections::HashMap;
use trellis_app_sdk::{App, AppInfo, Gateway, LogLevel, ObjectType, Point, Value, json_string};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    devices: Vec<u32>,
    #[serde(default = "default_topic")]
    topic: String,
    #[serde(default = "default_payload")]
    payload: String,
    #[serde(default = "one")]
    qos: u8,
    #[serde(default)]
    retain: bool,
    #[serde(default = "yes")]
    commands: bool,
    #[serde(default = "eight")]
    priority: u8,
}

fn default_topic() -> String {
    "trellis/{device}/{object}".into()
}
fn default_payload() -> String {
    "json".into()
}
fn one() -> u8 {
    1
}
fn yes() -> bool {
    true
}
fn eight() -> u8 {
    8
}

/// One mapped point.
struct Mapped {
    topic: String,
    name: String,
    kind: ObjectType,
}

/// The application.
pub struct PointMapping {
    settings: Settings,
    by_point: HashMap<Point, Mapped>,
    /// `{topic}/set` → the point.
    by_command: HashMap<String, Point>,
}

/// An Object_Name as one topic level.
fn level(name: &str) -> String {
    name.chars().map(|c| if c.is_whitespace() || "/+#".contains(c) { '-' } else { c }).collect()
}

fn topic_for(scheme: &str, device: u32, object: trellis_app_sdk::ObjectIdentifier, name: &str) -> String {
    scheme
        .replace("{device}", &device.to_string())
        .replace("{object}", &object.to_string())
        .replace("{type}", &object.object_type.to_string())
        .replace("{instance}", &object.instance.to_string())
        .replace("{name}", &level(name))
}

/// A JSON command as a value of the point's kind (and its priority).
fn command(kind: ObjectType, body: &[u8]) -> Result<(Value, Option<u8>), String> {
    let parsed: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let (v, priority) = match parsed {
        serde_json::Value::Object(mut m) => {
            let priority = match m.remove("priority") {
                None => None,
                Some(p) => Some(p.as_u64().filter(|p| (1..=16).contains(p)).ok_or("priority must be 1..=16")? as u8),
            };
            (m.remove("value").ok_or("expected {\"value\": …}")?, priority)
        }
        bare => (bare, None),
    };
    use ObjectType as T;
    let value = match (&v, kind) {
        (serde_json::Value::Null, _) => Value::Null,
        (_, T::ANALOG_INPUT | T::ANALOG_OUTPUT | T::ANALOG_VALUE) => {
            Value::Real(v.as_f64().ok_or("expected a number")? as f32)
        }
        (serde_json::Value::Bool(b), T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE) => {
            Value::Enumerated(u32::from(*b))
        }
        (_, T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE) => match v.as_u64() {
            Some(n @ 0..=1) => Value::Enumerated(n as u32),
            _ => return Err("expected true, false, 0 or 1".into()),
        },
        (_, T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE) => {
            Value::Unsigned(v.as_u64().filter(|n| *n >= 1).ok_or("expected a state number (1, 2, …)")?)
        }
        (serde_json::Value::Bool(b), _) => Value::Boolean(*b),
        (serde_json::Value::String(s), _) => Value::Text(s.clone()),
        (serde_json::Value::Number(n), _) if n.is_u64() => Value::Unsigned(n.as_u64().unwrap_or_default()),
        (serde_json::Value::Number(n), _) => Value::Real(n.as_f64().unwrap_or_default() as f32),
        _ => return Err("not a value this point takes".into()),
    };
    Ok((value, priority))
}

impl App for PointMapping {
    fn start(settings: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
        let settings: Settings = basic_toml::from_str(settings).map_err(|e| format!("settings: {e}"))?;
        if !["json", "value"].contains(&settings.payload.as_str()) {
            return Err(format!("settings: payload is \"json\" or \"value\", not {:?}", settings.payload));
        }
        if settings.qos > 1 || !(1..=16).contains(&settings.priority) {
            return Err("settings: qos is 0 or 1, priority 1..=16".into());
        }
        let mut by_point = HashMap::new();
        let mut by_topic: HashMap<String, String> = HashMap::new();
        for &device in &settings.devices {
            let objects = gw.objects(device).map_err(|e| format!("device {device}: {e}"))?;
            for (object, name) in objects.into_iter().filter(|(o, _)| o.object_type != ObjectType::DEVICE) {
                let topic = topic_for(&settings.topic, device, object, &name);
                let this = format!("{device}/{object}");
                if let Some(other) = by_topic.insert(topic.clone(), this.clone()) {
                    return Err(format!(
                        "settings: {other} and {this} both map to {topic}: add {{object}} to the scheme"
                    ));
                }
                let point = Point::present_value(device, object);
                gw.watch(&point).map_err(|e| format!("watching {this}: {e}"))?;
                by_point.insert(point, Mapped { topic, name, kind: object.object_type });
            }
        }
        let mut by_command = HashMap::new();
        if settings.commands {
            for (point, m) in &by_point {
                let set = format!("{}/set", m.topic);
                gw.subscribe(&set).map_err(|e| format!("subscribing to {set}: {e}"))?;
                by_command.insert(set, point.clone());
            }
        }
        Ok(PointMapping { settings, by_point, by_command })
    }

    fn info(&self) -> AppInfo {
        AppInfo {
            name: "point-mapping".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!(
                "{} points → {} ({}), writes {}",
                self.by_point.len(),
                self.settings.topic,
                self.settings.payload,
                if self.settings.commands { "on …/set" } else { "off" }
            ),
        }
    }

    fn on_change(&mut self, gw: &mut dyn Gateway, point: &Point, value: &Value) {
        let Some(m) = self.by_point.get(point) else { return };
        let payload = match self.settings.payload.as_str() {
            "value" => value.to_json(),
            _ => format!(
                "{{\"value\": {}, \"name\": {}, \"time\": {}}}",
                value.to_json(),
                json_string(&m.name),
                gw.now_ms()
            ),
        };
        if let Err(e) = gw.publish(&m.topic, payload.as_bytes(), self.settings.qos, self.settings.retain) {
            gw.log(LogLevel::Warn, &format!("publishing {}: {e}", m.topic));
        }
    }

    fn on_message(&mut self, gw: &mut dyn Gateway, topic: &str, payload: &[u8]) {
        let Some(point) = self.by_command.get(topic) else { return };
        let kind = self.by_point[point].kind;
        let outcome = command(kind, payload).and_then(|(value, priority)| {
            gw.write(point, value, Some(priority.unwrap_or(self.settings.priority))).map_err(|e| e.to_string())
        });
        let answer = match outcome {
            Ok(()) => "{\"ok\": true}".to_string(),
            Err(e) => format!("{{\"ok\": false, \"error\": {}}}", json_string(&e)),
        };
        let _ = gw.publish(&format!("{topic}/result"), answer.as_bytes(), 1, false);
    }
}

trellis_app_sdk::register_app!(PointMapping);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_app_sdk::ObjectIdentifier;
    use trellis_app_sdk::testing::FakeGateway;

    fn gateway() -> FakeGateway {
        let mut gw = FakeGateway::new();
        let id = |t, i| ObjectIdentifier::new(t, i).unwrap();
        gw.devices.insert(
            1001,
            vec![
                (id(ObjectType::DEVICE, 1001), "Demo".into()),
                (id(ObjectType::ANALOG_VALUE, 1), "Zone Setpoint".into()),
                (id(ObjectType::BINARY_VALUE, 1), "Override/Manual".into()),
            ],
        );
        gw
    }

    #[test]
    fn points_are_published_under_the_scheme_and_commands_come_back_as_writes() {
        let mut gw = gateway();
        let settings = "devices = [1001]\ntopic = \"site/{device}/{name}\"\nretain = true";
        let mut app = PointMapping::start(settings, &mut gw).unwrap();
        assert_eq!(gw.watched.len(), 2, "the Device object is not a point");
        assert!(gw.subscribed.contains(&"site/1001/Zone-Setpoint/set".to_string()), "{:?}", gw.subscribed);
        let av1 = Point::parse("1001/analog-value,1");
        gw.now_ms = 5;
        app.on_change(&mut gw, &av1, &Value::Real(21.5));
        assert_eq!(
            gw.published_on("site/1001/Zone-Setpoint"),
            ["{\"value\": 21.5, \"name\": \"Zone Setpoint\", \"time\": 5}"]
        );
        assert!(gw.published[0].3, "retained");

        app.on_message(&mut gw, "site/1001/Zone-Setpoint/set", br#"{"value": 19, "priority": 10}"#);
        assert_eq!(gw.writes, [(av1, Value::Real(19.0), Some(10))]);
        assert_eq!(gw.published_on("site/1001/Zone-Setpoint/set/result"), ["{\"ok\": true}"]);
        app.on_message(&mut gw, "site/1001/Override-Manual/set", b"2");
        assert!(gw.published_on("site/1001/Override-Manual/set/result")[0].contains("expected true, false, 0 or 1"));
        app.on_message(&mut gw, "site/1001/Override-Manual/set", b"true");
        assert_eq!(gw.writes[1].1, Value::Enumerated(1));
    }

    #[test]
    fn two_objects_on_one_topic_are_refused() {
        let mut gw = gateway();
        let err = PointMapping::start("devices = [1001]\ntopic = \"site/{device}\"", &mut gw).err().unwrap();
        assert!(err.contains("both map to site/1001"), "{err}");
        assert!(PointMapping::start("devices = [1001]\npayload = \"xml\"", &mut gw).is_err());
    }
}
