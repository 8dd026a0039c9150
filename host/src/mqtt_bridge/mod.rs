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
//! With `sparkplug = { group_id, edge_node_id }` the gateway is a Sparkplug
//! B 3.0 edge node instead (see [`sparkplug`]): each served device a
//! Sparkplug device, births with every object's Present_Value, DDATA on
//! change, NCMD rebirth and DCMD writes.
//!
//! Not yet (issue 16): the mapping as a replaceable application plugin,
//! remote devices' points, configurable topic schemes.
//!
//! Must never: block a device's thread on the broker, or write to a device
//! what a topic outside `{prefix}/` (or the node's DCMD) asked.

mod json;
pub mod sparkplug;

use crate::plugin::PluginModel;
use crate::server::Server;
use anyhow::Context;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{broadcast, mpsc};
use trellis_mqtt::link::{Incoming, Link, LinkConfig};
use trellis_mqtt::spool::{Spool, SpoolConfig};

/// `[mqtt]`: publish the served devices' points to a broker.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
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
    /// Publish the points here (default true); `false` leaves the link to
    /// the applications (an `[[app]]` such as `builtin:point-mapping` does
    /// the mapping instead).
    #[serde(default = "default_true")]
    pub publish_points: bool,
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
    /// Replay at most this many messages a second from the spool after an
    /// outage (default: as fast as the broker acknowledges).
    pub replay_per_s: Option<u32>,
    /// The largest message payload taken from the broker, in KiB (default
    /// 64): a larger one is discarded as it arrives, counted, and answered
    /// on its `…/set/result` topic where it has one; the connection stays.
    #[serde(default = "default_max_incoming_kb")]
    pub max_incoming_kb: u32,
    /// Be a Sparkplug B edge node instead of publishing JSON.
    pub sparkplug: Option<sparkplug::SparkplugSection>,
}

/// `tls = { … }` in `[mqtt]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
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
fn default_max_incoming_kb() -> u32 {
    (trellis_mqtt::link::DEFAULT_MAX_INCOMING >> 10) as u32
}

/// What `[mqtt] max_incoming_kb` may be at most: MQTT 3.1.1 frames no
/// larger packet (256 MiB).
const MAX_INCOMING_KB: u32 = 256 * 1024 - 1;

impl MqttSection {
    /// What can be checked before starting.
    pub fn validate(&self) -> anyhow::Result<()> {
        let (host, port) = self.host_port()?;
        anyhow::ensure!(!host.is_empty() && port != 0, "mqtt.broker `{}` must be HOST:PORT", self.broker);
        anyhow::ensure!(self.qos <= 1, "mqtt.qos must be 0 or 1");
        anyhow::ensure!((1..=16).contains(&self.priority), "mqtt.priority must be 1..=16");
        anyhow::ensure!(self.lifetime_s >= 4, "mqtt.lifetime_s must be at least 4");
        anyhow::ensure!(self.spool_mb >= 1, "mqtt.spool_mb must be at least 1");
        anyhow::ensure!(self.replay_per_s != Some(0), "mqtt.replay_per_s must be at least 1");
        anyhow::ensure!(
            (1..=MAX_INCOMING_KB).contains(&self.max_incoming_kb),
            "mqtt.max_incoming_kb must be 1..={MAX_INCOMING_KB}"
        );
        anyhow::ensure!(
            !self.topic_prefix.is_empty() && !self.topic_prefix.contains(['+', '#']),
            "mqtt.topic_prefix must be a topic without wildcards"
        );
        anyhow::ensure!(
            self.username.is_some() == self.password.is_some(),
            "mqtt.username and mqtt.password go together"
        );
        if let Some(sp) = &self.sparkplug {
            sp.validate()?;
        }
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

/// The running bridge: its broker link, and every message that arrives
/// on a subscribed topic (for the applications).
pub struct Bridge {
    /// The broker link.
    pub link: Link,
    /// What arrives, to every receiver.
    pub messages: broadcast::Sender<Incoming>,
    /// Writes asked over MQTT, by outcome.
    pub commands: Arc<CommandCounts>,
}

/// Writes asked over MQTT, for `/metrics`. A JSON `…/set` message counts
/// once; a Sparkplug DCMD once per metric it names, and once as a whole
/// when it is refused before any metric is looked at (undecodable, for a
/// device not served here, over the size limit), as does an NCMD other
/// than a rebirth. A command dropped because commands came faster than
/// they were taken counts refused.
#[derive(Debug, Default)]
pub struct CommandCounts {
    /// Written to the device.
    pub written: AtomicU64,
    /// Refused: oversized, malformed, for no device or object served here,
    /// or refused by the device; and commands dropped because they came
    /// faster than they were taken.
    pub refused: AtomicU64,
}

impl CommandCounts {
    fn count(&self, written: bool) {
        let counter = if written { &self.written } else { &self.refused };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Every message from `incoming` to `messages` (the applications), and
/// those on a command topic to the receiver returned (the bridge's own
/// command handling); a command it has no room for is counted refused.
fn fan_out(
    mut incoming: mpsc::Receiver<Incoming>,
    messages: broadcast::Sender<Incoming>,
    is_command: impl Fn(&str) -> bool + Send + 'static,
    commands: Arc<CommandCounts>,
) -> mpsc::Receiver<Incoming> {
    let (to_bridge, bridge) = mpsc::channel(1024);
    tokio::spawn(async move {
        while let Some(m) = incoming.recv().await {
            let _ = messages.send(m.clone());
            if !is_command(&m.topic) {
                continue;
            }
            let topic = m.topic.clone();
            if to_bridge.try_send(m).is_err() {
                commands.count(false);
                tracing::warn!(topic, "MQTT bridge: commands came faster than they were taken; one dropped");
            }
        }
    });
    bridge
}

/// Start the bridge for `servers` (within the runtime that is to run it);
/// relative paths are relative to `base`.
pub fn start(
    section: &MqttSection,
    servers: Vec<Arc<Server<PluginModel>>>,
    cache: PathBuf,
    base: &std::path::Path,
) -> anyhow::Result<Bridge> {
    let (messages, _) = broadcast::channel(1024);
    let counts = Arc::new(CommandCounts::default());
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
    link_config.pace = section.replay_per_s;
    link_config.max_incoming = (section.max_incoming_kb as usize) << 10;
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
    let (changes_in, changes) = mpsc::channel(4096);
    if section.publish_points || section.sparkplug.is_some() {
        for server in &servers {
            tokio::spawn(crate::local_points::follow(server.clone(), section.lifetime_s, changes_in.clone()));
        }
    }
    if let Some(sp) = &section.sparkplug {
        let node = sparkplug::prepare(sp, &spool_dir, &mut link_config)?;
        let (link, incoming) = Link::start(link_config, spool);
        let incoming = fan_out(incoming, messages.clone(), sparkplug::command_filter(&node), counts.clone());
        let writes = sparkplug::Writes { priority: section.priority, counts: counts.clone() };
        tokio::spawn(sparkplug::run(node, servers, link.clone(), incoming, changes, writes));
        return Ok(Bridge { link, messages, commands: counts });
    }
    link_config.availability_topic = Some(format!("{}/availability", section.topic_prefix));
    if section.commands && section.publish_points {
        link_config.subscriptions.push(format!("{}/+/+/set", section.topic_prefix));
    }
    let (link, incoming) = Link::start(link_config, spool);
    let set_prefix = format!("{}/", section.topic_prefix);
    let takes_commands = section.commands && section.publish_points;
    let is_command = move |t: &str| takes_commands && t.starts_with(&set_prefix) && t.ends_with("/set");
    let mut incoming = fan_out(incoming, messages.clone(), is_command, counts.clone());
    let by_instance: HashMap<u32, Arc<Server<PluginModel>>> =
        servers.iter().map(|s| (s.device_id().instance, s.clone())).collect();
    if section.publish_points {
        tokio::spawn(json::publish_changes(changes, link.clone(), section.clone()));
    }
    let (commands, writer, counted) = (section.clone(), link.clone(), counts.clone());
    tokio::spawn(async move {
        while let Some(m) = incoming.recv().await {
            if let Some((topic, answer)) = json::command(&commands, &by_instance, &m).await {
                counted.count(answer["ok"] == true);
                let _ = writer.publish(&topic, 1, answer.to_string().as_bytes());
            }
        }
    });
    Ok(Bridge { link, messages, commands: counts })
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
}
