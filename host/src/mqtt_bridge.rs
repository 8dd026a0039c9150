//! The MQTT bridge (issue 16, in progress): the served devices' points out
//! to an MQTT broker on change, and writes in.
//!
//! ```text
//! served device ──COV (a local subscriber, in process)──▶ JSON ──▶ spool ──▶ broker
//!   {prefix}/{device}/{object}              {"present-value": 21.5, "status-flags": [false, false, false, false]}
//! broker ──{prefix}/{device}/{object}/set──▶ WriteProperty (in process) ──▶ {prefix}/{device}/{object}/set/result
//!   {"value": 22.0, "priority": 8}  (or a bare value; null relinquishes)      {"ok": true} | {"ok": false, "error": "…"}
//! ```
//!
//! The bridge subscribes to COV on every object of every served device
//! that takes it (SubscribeCOV through the server, as a subscriber inside
//! the gateway: nothing goes on the network), renews the subscriptions at
//! three quarters of their lifetime, and publishes each notification's
//! values. What is published goes through the store-and-forward spool
//! (`trellis_mqtt::spool`): nothing is lost while the broker is away.
//!
//! Not yet (issue 16): the mapping as a replaceable application plugin,
//! remote devices' points, Sparkplug B, configurable topic schemes.
//!
//! Must never: block a device's thread on the broker, or write to a device
//! what a topic outside `{prefix}/` asked.

use crate::plugin::PluginModel;
use crate::server::{AnswerRoom, Server};
use anyhow::Context;
use bacnet::enums::{ConfirmedServiceChoice as S, PropertyIdentifier as P};
use bacnet::services::{COVNotification, ServiceCodec, SubscribeCOVRequest, WritePropertyRequest};
use bacnet::{AnyValue, Element, ObjectIdentifier, ObjectType, Value};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use trellis_mqtt::link::{Link, LinkConfig};
use trellis_mqtt::spool::{Spool, SpoolConfig};

/// `[mqtt]`: publish the served devices' points to a broker.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MqttSection {
    /// The broker, `HOST:PORT`.
    pub broker: String,
    /// TLS to the broker: `{ ca = "ca.pem" }` (the issuers its certificate
    /// must chain to), with `certificate` and `key` for a client
    /// certificate. Without it, plain MQTT.
    pub tls: Option<MqttTls>,
    /// User name, if the broker asks (with `password`).
    pub username: Option<String>,
    /// Password for `username`.
    pub password: Option<String>,
    /// Our client identifier (default `trellis`).
    #[serde(default = "default_client_id")]
    pub client_id: String,
    /// Every topic begins with it (default `trellis`).
    #[serde(default = "default_prefix")]
    pub topic_prefix: String,
    /// QoS of the point messages: 0 or 1 (default 1).
    #[serde(default = "default_qos")]
    pub qos: u8,
    /// Take writes on `{prefix}/{device}/{object}/set` (default true).
    #[serde(default = "default_true")]
    pub commands: bool,
    /// The priority of a write that names none (default 8).
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// COV subscription lifetime in seconds, renewed at three quarters
    /// (default 300).
    #[serde(default = "default_lifetime")]
    pub lifetime_s: u32,
    /// The spool's directory (default: under the cache directory).
    pub spool_dir: Option<PathBuf>,
    /// Spool bound in MiB (default 16).
    #[serde(default = "default_spool_mb")]
    pub spool_mb: u64,
}

/// `tls = { … }` in `[mqtt]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MqttTls {
    /// The issuer certificates (PEM) the broker's must chain to.
    pub ca: PathBuf,
    /// Our client certificate (PEM), if the broker asks for one.
    pub certificate: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
}

fn default_client_id() -> String {
    "trellis".into()
}
fn default_prefix() -> String {
    "trellis".into()
}
fn default_qos() -> u8 {
    1
}
fn default_true() -> bool {
    true
}
fn default_priority() -> u8 {
    8
}
fn default_lifetime() -> u32 {
    300
}
fn default_spool_mb() -> u64 {
    16
}

impl MqttSection {
    /// What can be checked before starting.
    pub fn validate(&self) -> anyhow::Result<()> {
        let (host, port) = self.host_port()?;
        anyhow::ensure!(!host.is_empty() && port != 0, "mqtt.broker `{}` must be HOST:PORT", self.broker);
        anyhow::ensure!(self.qos <= 1, "mqtt.qos must be 0 or 1");
        anyhow::ensure!((1..=16).contains(&self.priority), "mqtt.priority must be 1..=16");
        anyhow::ensure!(self.lifetime_s >= 4, "mqtt.lifetime_s must be at least 4");
        anyhow::ensure!(self.spool_mb >= 1, "mqtt.spool_mb must be at least 1");
        anyhow::ensure!(
            !self.topic_prefix.is_empty() && !self.topic_prefix.contains(['+', '#']),
            "mqtt.topic_prefix must be a topic without wildcards"
        );
        anyhow::ensure!(
            self.username.is_some() == self.password.is_some(),
            "mqtt.username and mqtt.password go together"
        );
        if let Some(t) = &self.tls {
            anyhow::ensure!(
                t.certificate.is_some() == t.key.is_some(),
                "mqtt.tls.certificate and mqtt.tls.key go together"
            );
        }
        Ok(())
    }

    fn host_port(&self) -> anyhow::Result<(String, u16)> {
        let (host, port) = self
            .broker
            .rsplit_once(':')
            .ok_or_else(|| anyhow::anyhow!("mqtt.broker `{}` must be HOST:PORT", self.broker))?;
        let port = port.parse().map_err(|_| anyhow::anyhow!("mqtt.broker `{}`: not a port", self.broker))?;
        Ok((host.trim_start_matches('[').trim_end_matches(']').to_string(), port))
    }
}

/// Start the bridge for `servers` (within the runtime that is to run it);
/// relative paths are relative to `base`.
pub fn start(
    section: &MqttSection,
    servers: Vec<Arc<Server<PluginModel>>>,
    cache: PathBuf,
    base: &std::path::Path,
) -> anyhow::Result<Link> {
    section.validate()?;
    let (host, port) = section.host_port()?;
    let spool_dir = section.spool_dir.clone().unwrap_or_else(|| cache.join("mqtt-spool").join(&section.client_id));
    let config = SpoolConfig { max_bytes: section.spool_mb << 20, ..SpoolConfig::new(&spool_dir) };
    let (spool, recovered) = Spool::open(config).with_context(|| format!("MQTT spool in {}", spool_dir.display()))?;
    if recovered.pending > 0 || recovered.torn_tail || recovered.corrupt > 0 {
        tracing::info!(
            pending = recovered.pending,
            torn = recovered.torn_tail,
            corrupt = recovered.corrupt,
            "MQTT spool read back"
        );
    }
    let mut link_config = LinkConfig::new(host, port, &section.client_id);
    if let Some(t) = &section.tls {
        let file = |p: &PathBuf| if p.is_absolute() { p.clone() } else { base.join(p) };
        let (cert, key) = (t.certificate.as_ref().map(file), t.key.as_ref().map(file));
        let client = cert.as_deref().zip(key.as_deref());
        link_config.tls =
            Some(trellis_mqtt::tls::client_config(&file(&t.ca), client).map_err(|e| anyhow::anyhow!("mqtt.tls: {e}"))?);
    }
    if let (Some(u), Some(p)) = (&section.username, &section.password) {
        link_config.credentials = Some((u.clone(), p.clone()));
    }
    link_config.availability_topic = format!("{}/availability", section.topic_prefix);
    if section.commands {
        link_config.subscriptions.push(format!("{}/+/+/set", section.topic_prefix));
    }
    let (link, mut incoming) = Link::start(link_config, spool);
    let by_instance: HashMap<u32, Arc<Server<PluginModel>>> =
        servers.iter().map(|s| (s.device_id().instance, s.clone())).collect();
    for server in servers {
        tokio::spawn(publish_changes(server, link.clone(), section.clone()));
    }
    let (commands, writer) = (section.clone(), link.clone());
    tokio::spawn(async move {
        while let Some(m) = incoming.recv().await {
            if let Some((topic, answer)) = command(&commands, &by_instance, &m.topic, &m.payload).await {
                let _ = writer.publish(&topic, 1, answer.to_string().as_bytes());
            }
        }
    });
    Ok(link)
}

/// Subscribe to every object of `server` that takes COV, renew, and
/// publish each notification.
async fn publish_changes(server: Arc<Server<PluginModel>>, link: Link, section: MqttSection) {
    let (me, mut notifications) = server.cov().local_subscriber(4096);
    let device = server.device_id().instance;
    let renew = Duration::from_secs(u64::from(section.lifetime_s) * 3 / 4);
    loop {
        let objects = match crate::model::ObjectModel::objects(server.model()).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(device, "MQTT bridge: the object list could not be read: {e}");
                Vec::new()
            }
        };
        let mut subscribed = 0;
        for o in objects.iter().filter(|o| o.id.object_type != ObjectType::DEVICE) {
            let request = SubscribeCOVRequest {
                subscriber_process_identifier: 1,
                monitored_object: o.id,
                issue_confirmed_notifications: Some(false),
                lifetime: Some(section.lifetime_s),
            };
            let room = AnswerRoom { octets: 1476, segmented: false };
            let r = server.execute(&me, S::SUBSCRIBE_COV, &request.to_vec(), room).await;
            if matches!(r, bacnet::tsm::Response::SimpleAck) {
                subscribed += 1;
            }
        }
        tracing::debug!(device, subscribed, "MQTT bridge: COV subscriptions made");
        let until = tokio::time::Instant::now() + renew;
        loop {
            let n = tokio::select! {
                n = notifications.recv() => n,
                _ = tokio::time::sleep_until(until) => break,
            };
            let Some(n) = n else { return };
            let topic = format!("{}/{device}/{}", section.topic_prefix, object_name(n.monitored_object));
            if let Err(e) = link.publish(&topic, section.qos, payload(&n).to_string().as_bytes()) {
                tracing::warn!("MQTT bridge: the spool refused a message: {e}");
            }
        }
    }
}

/// `analog-value,1`.
fn object_name(o: ObjectIdentifier) -> String {
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
async fn command(
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
    let request = WritePropertyRequest {
        object,
        property,
        array_index: None,
        value: AnyValue::from(value),
        priority: Some(priority),
    };
    let room = AnswerRoom { octets: 1476, segmented: false };
    let me = trellis_net_local();
    match server.execute(&me, S::WRITE_PROPERTY, &request.to_vec(), room).await {
        bacnet::tsm::Response::SimpleAck => Some((result_topic, json!({"ok": true}))),
        bacnet::tsm::Response::Error(body) => {
            let why = bacnet::services::BacnetError::decode(&body)
                .map(|e| format!("{}/{}", e.class, e.code))
                .unwrap_or_else(|_| "error".into());
            fail(why)
        }
        other => fail(format!("{other:?}")),
    }
}

/// Who writes from MQTT, for the server's per-requester bounds.
fn trellis_net_local() -> crate::client::DeviceAddress {
    crate::client::DeviceAddress::from(crate::client::LinkAddress::Local(u32::MAX))
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

    fn section(text: &str) -> MqttSection {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn mistakes_are_named() {
        section("broker = \"127.0.0.1:1883\"").validate().unwrap();
        for (text, named) in [
            ("broker = \"localhost\"", "HOST:PORT"),
            ("broker = \"h:0\"", "HOST:PORT"),
            ("broker = \"h:1\"\nqos = 2", "mqtt.qos"),
            ("broker = \"h:1\"\npriority = 17", "mqtt.priority"),
            ("broker = \"h:1\"\ntopic_prefix = \"a/#\"", "wildcards"),
            ("broker = \"h:1\"\nusername = \"u\"", "go together"),
            ("broker = \"h:1\"\ntls = { ca = \"ca.pem\", key = \"k.pem\" }", "go together"),
        ] {
            let e = section(text).validate().unwrap_err().to_string();
            assert!(e.contains(named), "{text}: {e}");
        }
        assert!(toml::from_str::<MqttSection>("broker = \"h:1\"\nqos_level = 1").is_err(), "unknown keys refused");
    }

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
