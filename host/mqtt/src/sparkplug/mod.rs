//! Sparkplug B 3.0 for an edge node: the topic namespace, the payloads of
//! its births, data and deaths with their sequence numbers, and the
//! commands it takes. Sans-IO: [`EdgeNode`] says what to publish and reads
//! what arrived; the caller owns the MQTT connection.
//!
//! ```text
//! CONNECT (will: NDEATH bdSeq=n) ─▶ NBIRTH seq 0 (bdSeq=n, Node Control/Rebirth)
//!                                   DBIRTH seq 1.. per device (every metric: name, alias, datatype, value)
//!                                   DDATA  seq … on change (alias only)
//! NCMD Node Control/Rebirth=true ─▶ NBIRTH seq 0 (same bdSeq: no new connection), DBIRTH …
//! DCMD {alias or name = value}   ─▶ a write the caller makes; its DDATA follows from the change
//! clean stop                     ─▶ DDEATH per device, NDEATH bdSeq=n
//! ```
//!
//! Sequence numbers run 0..=255 over every message of the node between
//! births; bdSeq counts connections (0..=255, kept by the caller across
//! restarts). Aliases are the caller's and must be unique in the node.
//!
//! Not implemented: metric types beyond scalars (DataSet, Template, arrays,
//! File), historical (`is_historical`) buffering of data from an outage
//! (after a reconnection the births carry the values of the moment), the
//! primary host application's STATE topic, and NDATA beyond the births.
//!
//! Must never: reuse a sequence number inside one birth-to-birth run, or
//! take a command from outside this node's own NCMD/DCMD topics.

pub mod proto;

use prost::Message;
use proto::{DataType, Metric, MetricValue, Payload, PropertyScalar, PropertySet, PropertyValue};

/// The namespace's first topic level.
pub const NAMESPACE: &str = "spBv1.0";
/// The node metric a host application sets to ask for births again.
pub const REBIRTH: &str = "Node Control/Rebirth";
/// The node metric that carries the connection's birth/death sequence.
pub const BD_SEQ: &str = "bdSeq";

/// One value of a metric.
#[derive(Debug, Clone, PartialEq)]
pub enum PointValue {
    /// Float.
    Float(f32),
    /// Double.
    Double(f64),
    /// Boolean.
    Boolean(bool),
    /// UInt32.
    UInt32(u32),
    /// UInt64.
    UInt64(u64),
    /// Int32.
    Int32(i32),
    /// Int64.
    Int64(i64),
    /// String.
    String(String),
    /// No value now, of this type.
    Null(DataType),
}

impl PointValue {
    /// The metric's Sparkplug data type.
    pub fn data_type(&self) -> DataType {
        match self {
            PointValue::Float(_) => DataType::Float,
            PointValue::Double(_) => DataType::Double,
            PointValue::Boolean(_) => DataType::Boolean,
            PointValue::UInt32(_) => DataType::UInt32,
            PointValue::UInt64(_) => DataType::UInt64,
            PointValue::Int32(_) => DataType::Int32,
            PointValue::Int64(_) => DataType::Int64,
            PointValue::String(_) => DataType::String,
            PointValue::Null(t) => *t,
        }
    }

    fn wire(&self) -> Option<MetricValue> {
        Some(match self {
            PointValue::Float(v) => MetricValue::Float(*v),
            PointValue::Double(v) => MetricValue::Double(*v),
            PointValue::Boolean(v) => MetricValue::Boolean(*v),
            PointValue::UInt32(v) => MetricValue::Int(*v),
            PointValue::UInt64(v) => MetricValue::Long(*v),
            PointValue::Int32(v) => MetricValue::Int(*v as u32),
            PointValue::Int64(v) => MetricValue::Long(*v as u64),
            PointValue::String(v) => MetricValue::String(v.clone()),
            PointValue::Null(_) => return None,
        })
    }
}

/// A metric as born: name, alias, value and properties (e.g. `engUnit`).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Its name (folders separated by `/`).
    pub name: String,
    /// Its alias, unique in the node.
    pub alias: u64,
    /// Its value now.
    pub value: PointValue,
    /// String properties shown with the metric in its birth.
    pub properties: Vec<(String, String)>,
}

/// A metric a command names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricRef {
    /// By alias.
    Alias(u64),
    /// By name.
    Name(String),
}

/// One metric of a command: which, and the value asked (`None`: null).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandMetric {
    /// Which.
    pub metric: MetricRef,
    /// The value asked; `None` for a null.
    pub value: Option<MetricValue>,
}

/// What arrived on one of the node's command topics.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// NCMD `Node Control/Rebirth = true`: publish every birth again.
    Rebirth,
    /// Other NCMD metrics (none are writable here; the caller logs them).
    Node(Vec<CommandMetric>),
    /// DCMD for one of the node's devices.
    Device {
        /// The device identifier of the topic.
        device: String,
        /// What it asks.
        metrics: Vec<CommandMetric>,
    },
}

/// Why an incoming message was not a command for this node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Another node's topic, or not a command.
    #[error("not a command topic of this node")]
    NotOurs,
    /// Undecodable.
    #[error("the payload is not a Sparkplug B payload: {0}")]
    Payload(String),
    /// A metric without alias or name.
    #[error("a metric names neither an alias nor a name")]
    Unnamed,
}

/// A message to publish: topic and encoded payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Where.
    pub topic: String,
    /// The encoded `Payload`.
    pub payload: Vec<u8>,
}

/// One edge node's Sparkplug state.
#[derive(Debug, Clone)]
pub struct EdgeNode {
    group: String,
    node: String,
    bd_seq: u8,
    seq: u8,
}

/// Why a group or node identifier cannot be one.
pub fn check_id(what: &str, id: &str) -> Result<(), String> {
    if id.is_empty() || id.contains(['/', '+', '#']) {
        return Err(format!("{what} `{id}` must be a non-empty topic level without /, + or #"));
    }
    Ok(())
}

impl EdgeNode {
    /// Node `node` of group `group`, its last connection's bdSeq being
    /// `last_bd_seq` (`None` for the first ever).
    pub fn new(group: &str, node: &str, last_bd_seq: Option<u8>) -> Self {
        EdgeNode { group: group.to_string(), node: node.to_string(), bd_seq: last_bd_seq.unwrap_or(u8::MAX), seq: 0 }
    }

    /// The topic of a `kind` message (`NBIRTH`, `DDATA`, …), of `device` or the node.
    pub fn topic(&self, kind: &str, device: Option<&str>) -> String {
        match device {
            Some(d) => format!("{NAMESPACE}/{}/{kind}/{}/{d}", self.group, self.node),
            None => format!("{NAMESPACE}/{}/{kind}/{}", self.group, self.node),
        }
    }

    /// The topics to subscribe to: this node's NCMD and its devices' DCMD.
    pub fn command_topics(&self) -> [String; 2] {
        [self.topic("NCMD", None), self.topic("DCMD", Some("+"))]
    }

    /// The connection's bdSeq.
    pub fn bd_seq(&self) -> u8 {
        self.bd_seq
    }

    /// A new connection is about to be made: the next bdSeq, and the
    /// NDEATH to give the broker as its will.
    pub fn connecting(&mut self, now_ms: u64) -> Outgoing {
        self.bd_seq = self.bd_seq.wrapping_add(1);
        self.death(now_ms)
    }

    /// NDEATH for this connection (the will, or published at a clean stop).
    pub fn death(&self, now_ms: u64) -> Outgoing {
        let payload = Payload {
            timestamp: Some(now_ms),
            metrics: vec![node_metric(BD_SEQ, PointValue::UInt64(self.bd_seq.into()))],
            ..Payload::default()
        };
        Outgoing { topic: self.topic("NDEATH", None), payload: payload.encode_to_vec() }
    }

    fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq = self.seq.wrapping_add(1);
        s.into()
    }

    /// NBIRTH (sequence 0): bdSeq, `Node Control/Rebirth` and `extra` node metrics.
    pub fn node_birth(&mut self, now_ms: u64, extra: &[Point]) -> Outgoing {
        self.seq = 0;
        let mut metrics = vec![
            node_metric(BD_SEQ, PointValue::UInt64(self.bd_seq.into())),
            node_metric(REBIRTH, PointValue::Boolean(false)),
        ];
        metrics.extend(extra.iter().map(|p| born(p, now_ms)));
        self.payload("NBIRTH", None, now_ms, metrics)
    }

    /// DBIRTH of `device` with every one of its metrics.
    pub fn device_birth(&mut self, device: &str, now_ms: u64, points: &[Point]) -> Outgoing {
        let metrics = points.iter().map(|p| born(p, now_ms)).collect();
        self.payload("DBIRTH", Some(device), now_ms, metrics)
    }

    /// DDATA of `device`: changed values by alias.
    pub fn device_data(&mut self, device: &str, now_ms: u64, changes: &[(u64, PointValue)]) -> Outgoing {
        let metrics = changes
            .iter()
            .map(|(alias, v)| Metric {
                alias: Some(*alias),
                timestamp: Some(now_ms),
                datatype: Some(v.data_type() as u32),
                is_null: matches!(v, PointValue::Null(_)).then_some(true),
                value: v.wire(),
                ..Metric::default()
            })
            .collect();
        self.payload("DDATA", Some(device), now_ms, metrics)
    }

    /// DDEATH of `device`.
    pub fn device_death(&mut self, device: &str, now_ms: u64) -> Outgoing {
        self.payload("DDEATH", Some(device), now_ms, Vec::new())
    }

    fn payload(&mut self, kind: &str, device: Option<&str>, now_ms: u64, metrics: Vec<Metric>) -> Outgoing {
        let payload = Payload { timestamp: Some(now_ms), metrics, seq: Some(self.next_seq()), ..Payload::default() };
        Outgoing { topic: self.topic(kind, device), payload: payload.encode_to_vec() }
    }

    /// Whether `topic` is this node's NCMD or one of its devices' DCMD.
    pub fn is_command_topic(&self, topic: &str) -> bool {
        self.command_target(topic).is_ok()
    }

    /// The device (`None`: the node) a command on `topic` is for.
    fn command_target(&self, topic: &str) -> Result<Option<String>, CommandError> {
        if topic == self.topic("NCMD", None) {
            return Ok(None);
        }
        let prefix = self.topic("DCMD", Some(""));
        let d = topic.strip_prefix(&prefix).ok_or(CommandError::NotOurs)?;
        if d.is_empty() || d.contains('/') {
            return Err(CommandError::NotOurs);
        }
        Ok(Some(d.to_string()))
    }

    /// Read a message that arrived on `topic`.
    pub fn command(&self, topic: &str, payload: &[u8]) -> Result<Command, CommandError> {
        let device = self.command_target(topic)?;
        let decoded = Payload::decode(payload).map_err(|e| CommandError::Payload(e.to_string()))?;
        let mut metrics = Vec::with_capacity(decoded.metrics.len());
        for m in decoded.metrics {
            // A device's metric by its alias where it has one; the node's by name.
            let metric = match (m.alias, m.name) {
                (Some(alias), _) if device.is_some() => MetricRef::Alias(alias),
                (_, Some(name)) => MetricRef::Name(name),
                (Some(alias), None) => MetricRef::Alias(alias),
                (None, None) => return Err(CommandError::Unnamed),
            };
            let value = if m.is_null == Some(true) { None } else { m.value };
            metrics.push(CommandMetric { metric, value });
        }
        match device {
            Some(device) => Ok(Command::Device { device, metrics }),
            None => {
                let rebirth = metrics.iter().any(|m| {
                    m.metric == MetricRef::Name(REBIRTH.into()) && m.value == Some(MetricValue::Boolean(true))
                });
                Ok(if rebirth { Command::Rebirth } else { Command::Node(metrics) })
            }
        }
    }
}

fn node_metric(name: &str, value: PointValue) -> Metric {
    Metric {
        name: Some(name.to_string()),
        datatype: Some(value.data_type() as u32),
        value: value.wire(),
        ..Metric::default()
    }
}

fn born(p: &Point, now_ms: u64) -> Metric {
    let properties = (!p.properties.is_empty()).then(|| PropertySet {
        keys: p.properties.iter().map(|(k, _)| k.clone()).collect(),
        values: p
            .properties
            .iter()
            .map(|(_, v)| PropertyValue {
                r#type: Some(DataType::String as u32),
                is_null: None,
                value: Some(PropertyScalar::String(v.clone())),
            })
            .collect(),
    });
    Metric {
        name: Some(p.name.clone()),
        alias: Some(p.alias),
        timestamp: Some(now_ms),
        datatype: Some(p.value.data_type() as u32),
        is_null: matches!(p.value, PointValue::Null(_)).then_some(true),
        properties,
        value: p.value.wire(),
        ..Metric::default()
    }
}

#[cfg(test)]
mod tests;
