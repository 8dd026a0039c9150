//! The gateway as a Sparkplug B 3.0 edge node (`[mqtt] sparkplug = {
//! group_id, edge_node_id }`): each served device is a Sparkplug device
//! named by its instance, each of its objects a metric.
//!
//! ```text
//! connect (will NDEATH bdSeq) ─▶ NBIRTH ─▶ DBIRTH 1001 {analog-value,1/present-value (alias), …} ─▶ DBIRTH 1002 …
//! COV (local subscriber) ─▶ DDATA 1001 {alias = value}
//! NCMD Node Control/Rebirth ─▶ NBIRTH, DBIRTH … on the same connection
//! a device's plugin fails (backing off, disabled) ─▶ DDEATH 1001; serving again ─▶ DBIRTH 1001
//! DCMD 1001 {alias or name = value | null} ─▶ WriteProperty Present_Value at `[mqtt] priority` (null relinquishes)
//! ```
//!
//! A metric is `{object-type},{instance}/present-value`, alias
//! `(device instance << 32) | object identifier` (unique in the node and
//! the same across restarts and hot swaps), typed by its object: Float for
//! analog objects, Boolean for binary ones, UInt32 for multi-state ones,
//! otherwise the type of the value at birth. Births carry `objectName` and
//! (analog objects) `engUnit` as metric properties. bdSeq is kept in the
//! spool directory so that a restarted gateway goes on counting.
//!
//! Sparkplug messages go on the live path (QoS 0, never spooled): their
//! sequence numbers belong to one connection, and after an outage the
//! births carry the values of the moment.
//!
//! Must never: publish DDATA on a connection before its births, or write
//! what a DCMD names that no birth announced.

use crate::local_points::{self as points, ObjectPoint};
use crate::plugin::PluginModel;
use crate::server::Server;
use bacnet::enums::{EngineeringUnits, PropertyIdentifier as P};
use bacnet::services::COVNotification;
use bacnet::{AnyValue, Element, ObjectIdentifier, ObjectType, Value};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;
use trellis_mqtt::link::{Incoming, Link, LinkConfig, WillSource};
use trellis_mqtt::sparkplug::proto::{DataType, MetricValue};
use trellis_mqtt::sparkplug::{self as spb, Command, CommandMetric, EdgeNode, MetricRef, Point, PointValue};

/// `sparkplug = { … }` in `[mqtt]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SparkplugSection {
    /// The Sparkplug group (topic level 2).
    pub group_id: String,
    /// This gateway's edge node identifier (topic level 4).
    pub edge_node_id: String,
}

impl SparkplugSection {
    /// Identifiers that cannot be topic levels are refused.
    pub fn validate(&self) -> anyhow::Result<()> {
        spb::check_id("mqtt.sparkplug.group_id", &self.group_id).map_err(anyhow::Error::msg)?;
        spb::check_id("mqtt.sparkplug.edge_node_id", &self.edge_node_id).map_err(anyhow::Error::msg)
    }
}

/// The node's state, shared with the link's will maker.
pub type SharedNode = Arc<Mutex<EdgeNode>>;

fn lock(node: &SharedNode) -> std::sync::MutexGuard<'_, EdgeNode> {
    node.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Set `link` up for Sparkplug (no availability topic; the command topics;
/// a will per connection naming its bdSeq, kept in `dir`).
pub fn prepare(section: &SparkplugSection, dir: &Path, link: &mut LinkConfig) -> anyhow::Result<SharedNode> {
    let file: PathBuf = dir.join("sparkplug-bdseq");
    let last = std::fs::read_to_string(&file).ok().and_then(|t| t.trim().parse::<u8>().ok());
    let node = Arc::new(Mutex::new(EdgeNode::new(&section.group_id, &section.edge_node_id, last)));
    link.availability_topic = None;
    link.subscriptions = lock(&node).command_topics().to_vec();
    let maker = node.clone();
    link.will = Some(WillSource(Arc::new(move || {
        let mut node = lock(&maker);
        let will = node.connecting(now_ms());
        if let Err(e) = std::fs::write(&file, node.bd_seq().to_string()) {
            tracing::warn!("Sparkplug: bdSeq could not be kept in {}: {e}", file.display());
        }
        (will.topic, will.payload)
    })));
    Ok(node)
}

/// One served device as a Sparkplug device.
struct Device {
    server: Arc<Server<PluginModel>>,
    /// Its Sparkplug device identifier (the instance, in decimal).
    id: String,
    /// The metrics its last birth announced: object → (alias, type).
    born: HashMap<ObjectIdentifier, (u64, DataType)>,
    by_alias: HashMap<u64, ObjectIdentifier>,
    by_name: HashMap<String, ObjectIdentifier>,
    /// Its plugin serves (not backing off after a failure, not disabled).
    alive: bool,
}

impl Device {
    fn serving(&self) -> bool {
        let h = self.server.model().health();
        !(h.disabled || h.backing_off)
    }
}

/// Which topics are this node's commands (NCMD, its devices' DCMD).
pub fn command_filter(node: &SharedNode) -> impl Fn(&str) -> bool + Send + 'static {
    let node = node.clone();
    move |topic| lock(&node).is_command_topic(topic)
}

/// How DCMD metrics are written: at which priority, counted where.
pub struct Writes {
    /// The BACnet priority of a write.
    pub priority: u8,
    /// Written and refused metrics (and refused commands).
    pub counts: Arc<super::CommandCounts>,
}

/// Run the edge node until the link's receivers close.
pub async fn run(
    node: SharedNode,
    servers: Vec<Arc<Server<PluginModel>>>,
    link: Link,
    mut incoming: mpsc::Receiver<Incoming>,
    mut changes: mpsc::Receiver<(u32, COVNotification)>,
    writes: Writes,
) {
    let mut devices: HashMap<u32, Device> = servers
        .into_iter()
        .map(|server| {
            let instance = server.device_id().instance;
            let d = Device {
                server,
                id: instance.to_string(),
                born: HashMap::new(),
                by_alias: HashMap::new(),
                by_name: HashMap::new(),
                alive: true,
            };
            (instance, d)
        })
        .collect();
    let mut sessions = link.sessions();
    // The connection whose births are out.
    let mut born: Option<u64> = None;
    let mut health = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = health.tick() => {
                for device in devices.values_mut() {
                    let alive = device.serving();
                    if alive == device.alive {
                        continue;
                    }
                    device.alive = alive;
                    let Some(epoch) = born else { continue };
                    if alive {
                        tracing::info!(device = device.id, "Sparkplug: the device serves again; DBIRTH");
                        device_birth(&node, &link, epoch, device).await;
                    } else {
                        tracing::warn!(device = device.id, "Sparkplug: the device's plugin is failing; DDEATH");
                        let out = lock(&node).device_death(&device.id, now_ms());
                        link.publish_live(epoch, out.topic, 0, out.payload);
                    }
                }
            }
            changed = sessions.changed() => {
                if changed.is_err() {
                    return;
                }
                let s = *sessions.borrow_and_update();
                born = None;
                if s.connected {
                    births(&node, &link, s.epoch, &mut devices).await;
                    born = Some(s.epoch);
                }
            }
            change = changes.recv() => {
                let Some((instance, n)) = change else { return };
                let (Some(epoch), Some(device)) = (born, devices.get(&instance)) else { continue };
                let Some(&(alias, kind)) = device.born.get(&n.monitored_object) else { continue };
                let Some(value) = n.values.iter().find(|v| v.property == P::PRESENT_VALUE) else { continue };
                let out = lock(&node).device_data(&device.id, now_ms(), &[(alias, point_value(&value.value, kind))]);
                link.publish_live(epoch, out.topic, 0, out.payload);
            }
            message = incoming.recv() => {
                let Some(m) = message else { return };
                if let Some(octets) = m.oversized {
                    if lock(&node).is_command_topic(&m.topic) {
                        writes.counts.count(false);
                        // The link logs it (rate-limited); the count says how many.
                        tracing::debug!(topic = m.topic, octets, "Sparkplug: command over mqtt.max_incoming_kb refused; nothing was written");
                    }
                    continue;
                }
                let command = lock(&node).command(&m.topic, &m.payload);
                match command {
                    Ok(Command::Rebirth) => {
                        if let Some(epoch) = born {
                            tracing::info!("Sparkplug: rebirth asked");
                            births(&node, &link, epoch, &mut devices).await;
                        }
                    }
                    Ok(Command::Device { device, metrics }) => {
                        let target = devices.values().find(|d| d.id == device);
                        match target {
                            Some(d) => write_metrics(d, metrics, &writes).await,
                            None => {
                                writes.counts.count(false);
                                tracing::warn!(device, "Sparkplug: DCMD for a device not served here")
                            }
                        }
                    }
                    Ok(Command::Node(metrics)) => {
                        writes.counts.count(false);
                        tracing::warn!(?metrics, "Sparkplug: NCMD metrics other than a rebirth are not writable here")
                    }
                    Err(spb::CommandError::NotOurs) => {}
                    Err(e) => {
                        writes.counts.count(false);
                        tracing::warn!(topic = m.topic, "Sparkplug: command refused: {e}")
                    }
                }
            }
        }
    }
}

/// NBIRTH, then a DBIRTH per device with every object's value now.
async fn births(node: &SharedNode, link: &Link, epoch: u64, devices: &mut HashMap<u32, Device>) {
    let out = lock(node).node_birth(now_ms(), &[]);
    link.publish_live(epoch, out.topic, 0, out.payload);
    let mut order: Vec<u32> = devices.keys().copied().collect();
    order.sort_unstable();
    for instance in order {
        let device = devices.get_mut(&instance).expect("listed above");
        device.alive = device.serving();
        if device.alive {
            device_birth(node, link, epoch, device).await;
        }
    }
}

/// One device's DBIRTH with every object's value now.
async fn device_birth(node: &SharedNode, link: &Link, epoch: u64, device: &mut Device) {
    let instance = device.server.device_id().instance;
    let objects = match points::read_objects(&device.server).await {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(device = instance, "Sparkplug: no DBIRTH, the objects could not be read: {e}");
            return;
        }
    };
    let metrics: Vec<Point> = objects.iter().map(|o| metric(instance, o)).collect();
    device.born.clear();
    device.by_alias.clear();
    device.by_name.clear();
    for (o, m) in objects.iter().zip(&metrics) {
        device.born.insert(o.id, (m.alias, m.value.data_type()));
        device.by_alias.insert(m.alias, o.id);
        device.by_name.insert(m.name.clone(), o.id);
    }
    let out = lock(node).device_birth(&device.id, now_ms(), &metrics);
    link.publish_live(epoch, out.topic, 0, out.payload);
}

/// The metric of one object.
fn metric(device: u32, o: &ObjectPoint) -> Point {
    let kind = kind_of(o.id.object_type, o.present_value.as_ref());
    let value = o.present_value.as_ref().map_or(PointValue::Null(kind), |v| point_value(v, kind));
    let mut properties = vec![("objectName".to_string(), o.name.clone())];
    if let Some(u) = o.units {
        properties.push(("engUnit".to_string(), EngineeringUnits::from(u).to_string()));
    }
    Point {
        name: format!("{},{}/present-value", o.id.object_type, o.id.instance),
        alias: (u64::from(device) << 32) | u64::from(o.id.to_u32()),
        value,
        properties,
    }
}

/// A metric's type: by its object's type, else by its value at birth.
fn kind_of(object: ObjectType, value: Option<&AnyValue>) -> DataType {
    use ObjectType as T;
    match object {
        T::ANALOG_INPUT | T::ANALOG_OUTPUT | T::ANALOG_VALUE => DataType::Float,
        T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE => DataType::Boolean,
        T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE => DataType::UInt32,
        _ => match value.map(|v| v.0.as_slice()) {
            Some([Element::Application(v)]) => match v {
                Value::Real(_) => DataType::Float,
                Value::Double(_) => DataType::Double,
                Value::Boolean(_) => DataType::Boolean,
                Value::Unsigned(_) => DataType::UInt64,
                Value::Signed(_) => DataType::Int64,
                Value::Enumerated(_) => DataType::UInt32,
                _ => DataType::String,
            },
            _ => DataType::String,
        },
    }
}

/// A BACnet value as a metric of type `kind` (null if it is not one).
fn point_value(v: &AnyValue, kind: DataType) -> PointValue {
    let [Element::Application(v)] = v.0.as_slice() else { return PointValue::Null(kind) };
    let number = match v {
        Value::Real(r) => Some(f64::from(*r)),
        Value::Double(d) => Some(*d),
        Value::Unsigned(u) => Some(*u as f64),
        Value::Signed(i) => Some(*i as f64),
        Value::Enumerated(e) => Some(f64::from(*e)),
        Value::Boolean(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (kind, v, number) {
        (_, Value::Null, _) => PointValue::Null(kind),
        (DataType::Float, _, Some(n)) => PointValue::Float(n as f32),
        (DataType::Double, _, Some(n)) => PointValue::Double(n),
        (DataType::Boolean, _, Some(n)) => PointValue::Boolean(n != 0.0),
        (DataType::UInt32, Value::Unsigned(u), _) => {
            u32::try_from(*u).map_or(PointValue::Null(kind), PointValue::UInt32)
        }
        (DataType::UInt32, Value::Enumerated(e), _) => PointValue::UInt32(*e),
        (DataType::UInt64, Value::Unsigned(u), _) => PointValue::UInt64(*u),
        (DataType::Int64, Value::Signed(i), _) => PointValue::Int64(*i),
        (DataType::String, Value::CharacterString(s), _) => PointValue::String(s.to_text().unwrap_or_default()),
        (DataType::String, other, _) => PointValue::String(other.to_string()),
        _ => PointValue::Null(kind),
    }
}

/// A DCMD's metrics written to `device`, one WriteProperty each.
async fn write_metrics(device: &Device, metrics: Vec<CommandMetric>, writes: &Writes) {
    for m in metrics {
        let written = write_metric(device, m, writes.priority).await;
        writes.counts.count(written);
    }
}

/// One DCMD metric to its object; whether it was written.
async fn write_metric(device: &Device, m: CommandMetric, priority: u8) -> bool {
    let object = match &m.metric {
        MetricRef::Alias(a) => device.by_alias.get(a),
        MetricRef::Name(n) => device.by_name.get(n),
    };
    let Some(&object) = object else {
        tracing::warn!(device = device.id, metric = ?m.metric, "Sparkplug: DCMD names a metric no birth announced");
        return false;
    };
    let Some(value) = bacnet_value(object.object_type, m.value.as_ref()) else {
        tracing::warn!(device = device.id, metric = ?m.metric, value = ?m.value, "Sparkplug: DCMD value does not fit the object");
        return false;
    };
    match points::write(&device.server, object, P::PRESENT_VALUE, value, priority).await {
        Ok(()) => true,
        Err(why) => {
            tracing::warn!(device = device.id, %object, "Sparkplug: DCMD write refused: {why}");
            false
        }
    }
}

/// A command's value as the object's Present_Value type (`None` in a
/// command: Null, which relinquishes).
fn bacnet_value(object: ObjectType, v: Option<&MetricValue>) -> Option<Value> {
    use ObjectType as T;
    let Some(v) = v else { return Some(Value::Null) };
    let number = match v {
        MetricValue::Int(i) => Some(f64::from(*i)),
        MetricValue::Long(l) => Some(*l as f64),
        MetricValue::Float(f) => Some(f64::from(*f)),
        MetricValue::Double(d) => Some(*d),
        MetricValue::Boolean(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match object {
        T::ANALOG_INPUT | T::ANALOG_OUTPUT | T::ANALOG_VALUE => Some(Value::Real(number? as f32)),
        T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE => match number? {
            0.0 => Some(Value::Enumerated(0)),
            1.0 => Some(Value::Enumerated(1)),
            _ => None,
        },
        T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE => match v {
            MetricValue::Int(i) => Some(Value::Unsigned(u64::from(*i))),
            MetricValue::Long(l) => Some(Value::Unsigned(*l)),
            _ => None,
        },
        _ => Some(match v {
            MetricValue::Float(f) => Value::Real(*f),
            MetricValue::Double(d) => Value::Double(*d),
            MetricValue::Boolean(b) => Value::Boolean(*b),
            MetricValue::Int(i) => Value::Unsigned(u64::from(*i)),
            MetricValue::Long(l) => Value::Unsigned(*l),
            MetricValue::String(s) => Value::CharacterString(bacnet::CharacterString::utf8(s)),
            MetricValue::Bytes(b) => Value::OctetString(b.clone()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_their_metrics_types_both_ways() {
        let av = |v: Value| AnyValue::from(v);
        assert_eq!(point_value(&av(Value::Real(21.5)), DataType::Float), PointValue::Float(21.5));
        assert_eq!(point_value(&av(Value::Enumerated(1)), DataType::Boolean), PointValue::Boolean(true));
        assert_eq!(point_value(&av(Value::Unsigned(3)), DataType::UInt32), PointValue::UInt32(3));
        assert_eq!(point_value(&av(Value::Null), DataType::Float), PointValue::Null(DataType::Float));
        assert_eq!(
            point_value(&av(Value::CharacterString(bacnet::CharacterString::utf8("x"))), DataType::Float),
            PointValue::Null(DataType::Float),
            "a value that is not the metric's type is null, never a different type"
        );
        assert_eq!(bacnet_value(ObjectType::ANALOG_VALUE, Some(&MetricValue::Double(2.5))), Some(Value::Real(2.5)));
        assert_eq!(
            bacnet_value(ObjectType::BINARY_VALUE, Some(&MetricValue::Boolean(true))),
            Some(Value::Enumerated(1))
        );
        assert_eq!(bacnet_value(ObjectType::BINARY_VALUE, Some(&MetricValue::Int(2))), None);
        assert_eq!(bacnet_value(ObjectType::MULTI_STATE_VALUE, Some(&MetricValue::Int(2))), Some(Value::Unsigned(2)));
        assert_eq!(bacnet_value(ObjectType::ANALOG_VALUE, None), Some(Value::Null));
        assert_eq!(bacnet_value(ObjectType::ANALOG_VALUE, Some(&MetricValue::String("hot".into()))), None);
    }

    #[test]
    fn aliases_are_unique_across_devices_and_stable() {
        let o = |t, i| ObjectPoint {
            id: ObjectIdentifier::new(t, i).unwrap(),
            name: "x".into(),
            present_value: None,
            units: Some(62),
        };
        let a = metric(1001, &o(ObjectType::ANALOG_VALUE, 1));
        let b = metric(1002, &o(ObjectType::ANALOG_VALUE, 1));
        let c = metric(1001, &o(ObjectType::ANALOG_INPUT, 1));
        assert!(a.alias != b.alias && a.alias != c.alias && b.alias != c.alias);
        assert_eq!(a.alias, metric(1001, &o(ObjectType::ANALOG_VALUE, 1)).alias);
        assert_eq!(a.name, "analog-value,1/present-value");
        assert_eq!(a.value, PointValue::Null(DataType::Float));
        assert!(a.properties.contains(&("engUnit".into(), "degrees-celsius".into())), "{:?}", a.properties);
    }
}
