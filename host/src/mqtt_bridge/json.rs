//! The default scheme: a JSON object per change on
//! `{prefix}/{device}/{object}`, writes on `…/set` with the result on
//! `…/set/result` (see the module above for the shapes).
//!
//! Must never: write to a device what a topic outside `{prefix}/` asked.

use super::MqttSection;
use crate::plugin::PluginModel;
use crate::server::Server;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::COVNotification;
use bacnet::{AnyValue, Element, ObjectIdentifier, ObjectType, Value};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use trellis_mqtt::link::Link;

/// Publish each change that arrives on `changes` as JSON.
pub(super) async fn publish_changes(
    mut changes: mpsc::Receiver<(u32, COVNotification)>,
    link: Link,
    section: MqttSection,
) {
    while let Some((device, n)) = changes.recv().await {
        let topic = format!("{}/{device}/{}", section.topic_prefix, object_name(n.monitored_object));
        if let Err(e) = link.publish(&topic, section.qos, payload(&n).to_string().as_bytes()) {
            tracing::warn!("MQTT bridge: the spool refused a message: {e}");
        }
    }
}

/// `analog-value,1`.
pub(super) fn object_name(o: ObjectIdentifier) -> String {
    format!("{},{}", o.object_type, o.instance)
}

/// A notification's values as JSON, by the standard's property names.
fn payload(n: &COVNotification) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for v in &n.values {
        m.insert(v.property.to_string(), value_json(&v.value));
    }
    serde_json::Value::Object(m)
}

fn value_json(v: &AnyValue) -> serde_json::Value {
    let one = |e: &Element| match e {
        Element::Application(v) => match v {
            Value::Null => json!(null),
            Value::Boolean(b) => json!(b),
            Value::Unsigned(u) => json!(u),
            Value::Signed(i) => json!(i),
            Value::Real(r) => json!(r),
            Value::Double(d) => json!(d),
            Value::Enumerated(e) => json!(e),
            Value::CharacterString(s) => json!(s.to_text().unwrap_or_default()),
            Value::BitString(b) => json!((0..b.len()).map(|i| b.get(i)).collect::<Vec<_>>()),
            other => json!(other.to_string()),
        },
        other => json!(format!("{other:?}")),
    };
    match v.0.as_slice() {
        [e] => one(e),
        many => json!(many.iter().map(one).collect::<Vec<_>>()),
    }
}

/// A write asked on `{prefix}/{device}/{object}/set`: the result's topic
/// and payload, or `None` for a topic that is not a command.
pub(super) async fn command(
    section: &MqttSection,
    servers: &HashMap<u32, Arc<Server<PluginModel>>>,
    topic: &str,
    payload: &[u8],
) -> Option<(String, serde_json::Value)> {
    let rest = topic.strip_prefix(&section.topic_prefix)?.strip_prefix('/')?.strip_suffix("/set")?;
    let (device, object) = rest.split_once('/')?;
    let result_topic = format!("{topic}/result");
    let fail = |why: String| Some((result_topic.clone(), json!({"ok": false, "error": why})));
    let Some(server) = device.parse::<u32>().ok().and_then(|d| servers.get(&d)) else {
        return fail(format!("no device {device} is served here"));
    };
    let Ok(object) = object.parse::<ObjectIdentifier>() else {
        return fail(format!("`{object}` is not an object (e.g. analog-value,1)"));
    };
    #[derive(Deserialize)]
    struct Write {
        value: serde_json::Value,
        priority: Option<u8>,
        property: Option<String>,
    }
    let parsed: serde_json::Value = match serde_json::from_slice(payload) {
        Ok(v) => v,
        Err(e) => return fail(format!("not JSON: {e}")),
    };
    let write = match parsed {
        serde_json::Value::Object(_) => match serde_json::from_value::<Write>(parsed) {
            Ok(w) => w,
            Err(e) => return fail(format!("expected {{\"value\": …, \"priority\": 1..16}}: {e}")),
        },
        bare => Write { value: bare, priority: None, property: None },
    };
    let property = match write.property.as_deref().map(P::from_name) {
        None => P::PRESENT_VALUE,
        Some(Some(p)) => p,
        Some(None) => return fail("unknown property (e.g. present-value)".into()),
    };
    let priority = write.priority.unwrap_or(section.priority);
    if !(1..=16).contains(&priority) {
        return fail("priority must be 1..=16".into());
    }
    let Some(value) = json_value(object.object_type, &write.value) else {
        return fail(format!("{} is not a value for {}", write.value, object_name(object)));
    };
    match crate::local_points::write(server, object, property, value, priority).await {
        Ok(()) => Some((result_topic, json!({"ok": true}))),
        Err(why) => fail(why.to_string()),
    }
}

/// A JSON value as the object's Present_Value type: analog objects take a
/// number (Real), binary ones `true`/`false`, 0/1 or "active"/"inactive"
/// (Enumerated), multi-state ones a state number (Unsigned); `null`
/// relinquishes.
fn json_value(kind: ObjectType, v: &serde_json::Value) -> Option<Value> {
    use ObjectType as T;
    if v.is_null() {
        return Some(Value::Null);
    }
    match kind {
        T::ANALOG_INPUT | T::ANALOG_OUTPUT | T::ANALOG_VALUE => Some(Value::Real(v.as_f64()? as f32)),
        T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE => {
            let active = match v {
                serde_json::Value::Bool(b) => *b,
                serde_json::Value::Number(n) => n.as_u64()? == 1,
                serde_json::Value::String(s) => match s.as_str() {
                    "active" => true,
                    "inactive" => false,
                    _ => return None,
                },
                _ => return None,
            };
            Some(Value::Enumerated(u32::from(active)))
        }
        T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE => Some(Value::Unsigned(v.as_u64()?)),
        _ => match v {
            serde_json::Value::Number(n) if n.is_f64() => Some(Value::Real(n.as_f64()? as f32)),
            serde_json::Value::Number(n) => Some(Value::Unsigned(n.as_u64()?)),
            serde_json::Value::Bool(b) => Some(Value::Boolean(*b)),
            serde_json::Value::String(s) => Some(Value::CharacterString(bacnet::CharacterString::utf8(s))),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_take_the_objects_types() {
        use serde_json::json;
        assert_eq!(json_value(ObjectType::ANALOG_VALUE, &json!(21.5)), Some(Value::Real(21.5)));
        assert_eq!(json_value(ObjectType::BINARY_VALUE, &json!("active")), Some(Value::Enumerated(1)));
        assert_eq!(json_value(ObjectType::BINARY_OUTPUT, &json!(false)), Some(Value::Enumerated(0)));
        assert_eq!(json_value(ObjectType::MULTI_STATE_VALUE, &json!(3)), Some(Value::Unsigned(3)));
        assert_eq!(json_value(ObjectType::ANALOG_VALUE, &json!(null)), Some(Value::Null));
        assert_eq!(json_value(ObjectType::ANALOG_VALUE, &json!("hot")), None);
        assert_eq!(json_value(ObjectType::BINARY_VALUE, &json!("on")), None);
    }
}
