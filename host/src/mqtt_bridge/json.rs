//! The default scheme: a JSON object per change on
//! `{prefix}/{device}/{object}`, writes on `…/set` with the result on
//! `…/set/result` (see the module above for the shapes).
//!
//! Must never: write to a device what a topic outside `{prefix}/` asked.

use super::MqttSection;
use crate::plugin::PluginModel;
use crate::server::Server;
use bacnet::ObjectIdentifier;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::COVNotification;
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use trellis_mqtt::link::{Incoming, Link};

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
        m.insert(v.property.to_string(), crate::point_json::to_json(&v.value));
    }
    serde_json::Value::Object(m)
}

/// A write asked on `{prefix}/{device}/{object}/set`: the result's topic
/// and payload, or `None` for a topic that is not a command.
pub(super) async fn command(
    section: &MqttSection,
    servers: &HashMap<u32, Arc<Server<PluginModel>>>,
    message: &Incoming,
) -> Option<(String, serde_json::Value)> {
    let (topic, payload) = (message.topic.as_str(), message.payload.as_slice());
    let rest = topic.strip_prefix(&section.topic_prefix)?.strip_prefix('/')?.strip_suffix("/set")?;
    let (device, object) = rest.split_once('/')?;
    let result_topic = format!("{topic}/result");
    let fail = |why: String| Some((result_topic.clone(), json!({"ok": false, "error": why})));
    if let Some(octets) = message.oversized {
        return fail(format!(
            "the message is {octets} octets, over the gateway's limit of {} KiB (mqtt.max_incoming_kb); nothing was written",
            section.max_incoming_kb
        ));
    }
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
    let Some(value) = crate::point_json::from_json(object.object_type, &write.value) else {
        return fail(format!("{} is not a value for {}", write.value, object_name(object)));
    };
    match crate::local_points::write(server, object, property, value, priority).await {
        Ok(()) => Some((result_topic, json!({"ok": true}))),
        Err(why) => fail(why.to_string()),
    }
}
