//! `[[opcua_client]]`: points of an OPC UA server (a PLC) pulled into
//! BACnet objects of a served device, and BACnet writes sent back.
//!
//! ```text
//! OPC UA server ──DataChange (subscription)──▶ WriteProperty Present_Value at `priority` (in process) ──▶ BACnet clients, COV
//! BACnet client ──WriteProperty (any priority)──▶ device ──COV (a local subscriber)──▶ OPC UA Write (the node's DataType)
//! ```
//!
//! The served device's objects come from its plugin (the demo-building
//! plugin serves the objects a `/data/objects.toml` declares; make them
//! commandable Values). A pulled value is written at a low priority (16 by
//! default), so an operator's command at a higher priority wins on the
//! BACnet side — and goes back to the OPC UA server: a Present_Value change
//! goes back when the object's Priority_Array holds a command above ours
//! (so the pulled values themselves never echo). On an object without a
//! Priority_Array, a value other than the last one pulled goes back.
//!
//! Must never: write to an object the mapping does not name, or send a
//! pulled value back to where it came from.

use crate::local_points;
use crate::plugin::PluginModel;
use crate::server::Server;
use anyhow::Context;
use bacnet::enums::{ObjectType, PropertyIdentifier as P};
use bacnet::{ObjectIdentifier, Value};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use trellis_opcua::client::{PullEvent, PullSettings, Puller};
use trellis_opcua::opcua::types::{NodeId, Variant};
use trellis_opcua::server::Security;

/// `[[opcua_client]]`: one OPC UA server to pull from.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpcUaClientSection {
    /// The server's endpoint URL.
    pub url: String,
    /// `none` (default), `basic256sha256-sign` or `basic256sha256-sign-encrypt`.
    #[serde(default = "default_security")]
    pub security: String,
    /// A user name (with `password`); anonymous without.
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<String>,
    /// The client's certificate store (default `opcua/client-pki` under the cache directory).
    pub pki_dir: Option<PathBuf>,
    /// Trust any server certificate instead of the store's trusted/ (commissioning only).
    #[serde(default)]
    pub trust_server_certs: bool,
    /// The served device whose objects the points feed (its instance).
    pub device: u32,
    /// The BACnet priority pulled values are written at (default 16, the lowest).
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// The subscription's publishing interval in ms (default 100).
    #[serde(default = "default_publishing")]
    pub publishing_ms: u64,
    /// The mapping.
    #[serde(rename = "point")]
    pub points: Vec<PointMapping>,
}

/// `[[opcua_client.point]]`: one node ↔ one object's Present_Value.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PointMapping {
    /// The node, `ns=2;s=Line3.Temperature` or `ns=2;i=1001`.
    pub node: String,
    /// The object, `analog-value,1`.
    pub object: String,
    /// Send BACnet writes back to the node (default true).
    #[serde(default = "default_true")]
    pub write_back: bool,
}

fn default_security() -> String {
    "none".into()
}
fn default_priority() -> u8 {
    16
}
fn default_publishing() -> u64 {
    100
}
fn default_true() -> bool {
    true
}

struct Point {
    object: ObjectIdentifier,
    write_back: bool,
}

impl OpcUaClientSection {
    /// Check what can be checked without a server.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.parsed().map(|_| ())
    }

    fn parsed(&self) -> anyhow::Result<(Security, Vec<(NodeId, Point)>)> {
        let security = Security::from_name(&self.security).with_context(|| {
            format!("security: {:?} is not none, basic256sha256-sign or basic256sha256-sign-encrypt", self.security)
        })?;
        anyhow::ensure!((1..=16).contains(&self.priority), "priority must be 1..=16");
        anyhow::ensure!(self.user.is_some() == self.password.is_some(), "user and password go together");
        anyhow::ensure!(!self.points.is_empty(), "no [[opcua_client.point]]");
        anyhow::ensure!(self.publishing_ms >= 10, "publishing_ms must be at least 10");
        let mut seen = std::collections::HashSet::new();
        let points = self
            .points
            .iter()
            .map(|p| {
                let node = NodeId::from_str(&p.node)
                    .map_err(|_| anyhow::anyhow!("point {:?}: not a NodeId (ns=2;s=Name, ns=2;i=1001)", p.node))?;
                let object = ObjectIdentifier::from_str(&p.object)
                    .map_err(|e| anyhow::anyhow!("point {:?}: object {:?}: {e}", p.node, p.object))?;
                anyhow::ensure!(seen.insert(object), "object {} is fed by two points", p.object);
                Ok((node, Point { object, write_back: p.write_back }))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok((security, points))
    }
}

/// Whether `object`'s Present_Value `value` is a BACnet client's command
/// rather than the value pulled in: on a commandable object, a command sits
/// at a priority above ours; on another, the value differs from the last one
/// pulled (and one was pulled: the COV subscription's first report is the
/// object's default, not a command).
async fn commanded_by_bacnet(
    server: &Server<PluginModel>,
    object: ObjectIdentifier,
    ours: u8,
    value: &Value,
    pulled: &Mutex<HashMap<ObjectIdentifier, Value>>,
) -> bool {
    use crate::model::{ObjectModel, PropertyTarget};
    let target = PropertyTarget { object, property: P::PRIORITY_ARRAY, array_index: None };
    let read = server.model().read(&[target]).await.ok().and_then(|r| r.into_iter().next()?.into_iter().next());
    if let Some(Ok(array)) = read.map(|r| r.outcome) {
        let highest = array.0.iter().position(|e| !matches!(e, bacnet::Element::Application(Value::Null)));
        return highest.is_some_and(|slot| slot + 1 < usize::from(ours));
    }
    match pulled.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&object) {
        None => false,
        Some(last) => last != value,
    }
}

/// The BACnet Present_Value an OPC UA value becomes for `object`.
fn bacnet_value(object: ObjectType, v: &Variant) -> Option<Value> {
    let n = match v {
        Variant::Boolean(b) => f64::from(u8::from(*b)),
        other => trellis_opcua::convert::numeric(other)?,
    };
    use ObjectType as T;
    match object {
        T::BINARY_INPUT | T::BINARY_OUTPUT | T::BINARY_VALUE => Some(Value::Enumerated(u32::from(n != 0.0))),
        T::MULTI_STATE_INPUT | T::MULTI_STATE_OUTPUT | T::MULTI_STATE_VALUE => {
            (n.fract() == 0.0 && n >= 1.0 && n <= f64::from(u32::MAX)).then_some(Value::Unsigned(n as u64))
        }
        _ => (n.is_finite() && n.abs() <= f64::from(f32::MAX)).then_some(Value::Real(n as f32)),
    }
}

/// The OPC UA value a BACnet Present_Value goes back as (then cast to the
/// node's DataType by the client).
fn variant_of(v: &Value) -> Option<Variant> {
    Some(match v {
        Value::Real(x) => Variant::Double(f64::from(*x)),
        Value::Double(x) => Variant::Double(*x),
        Value::Enumerated(e) => Variant::UInt32(*e),
        Value::Unsigned(u) => Variant::UInt64(*u),
        Value::Signed(i) => Variant::Int64(*i),
        Value::Boolean(b) => Variant::Boolean(*b),
        _ => return None,
    })
}

/// Start pulling for one section (within the runtime that is to run it):
/// errors are the configuration's; the server may come later.
pub async fn start(
    section: &OpcUaClientSection,
    servers: &[Arc<Server<PluginModel>>],
    base: &Path,
    cache: &Path,
) -> anyhow::Result<()> {
    let (security, points) = section.parsed()?;
    let server = servers
        .iter()
        .find(|s| s.device_id().instance == section.device)
        .with_context(|| format!("device {} is not served here", section.device))?
        .clone();
    let file = |p: &PathBuf| if p.is_absolute() { p.clone() } else { base.join(p) };
    let settings = PullSettings {
        url: section.url.clone(),
        security,
        user: section.user.clone().zip(section.password.clone()),
        pki_dir: section.pki_dir.as_ref().map(file).unwrap_or_else(|| cache.join("opcua").join("client-pki")),
        trust_server_certs: section.trust_server_certs,
        application_uri: "urn:trellis:gateway:client".into(),
        publishing: std::time::Duration::from_millis(section.publishing_ms),
        nodes: points.iter().map(|(n, _)| n.clone()).collect(),
    };
    let points: Vec<Point> = points.into_iter().map(|(_, p)| p).collect();
    // The gateway serves BACnet whether or not the OPC UA server is there:
    // the client connects (and reconnects) in the background.
    tokio::spawn(run(settings, server, points, section.priority));
    Ok(())
}

async fn run(settings: PullSettings, server: Arc<Server<PluginModel>>, points: Vec<Point>, priority: u8) {
    let url = settings.url.clone();
    let points = Arc::new(points);
    // The last value pulled into each object: what COV echoes back.
    let pulled: Arc<Mutex<HashMap<ObjectIdentifier, Value>>> = Arc::default();
    let (puller, mut events) = match Puller::start(settings).await {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(url, "OPC UA pull: the client cannot start: {e}");
            return;
        }
    };
    let puller = Arc::new(puller);

    let (into_bacnet, from_bacnet) = (pulled.clone(), pulled);
    let (pull_server, pull_points, pull_url) = (server.clone(), points.clone(), url.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let PullEvent::Value { index, value } = event else {
                if let PullEvent::Lost(status) = event {
                    tracing::warn!(
                        url = pull_url,
                        "OPC UA pull: connection lost ({status}), values hold until it is back"
                    );
                }
                continue;
            };
            let point = &pull_points[index];
            let Some(v) = value.value.as_ref().filter(|_| value.status.is_none_or(|s| s.is_good())) else {
                tracing::debug!(url = pull_url, object = %point.object, status = ?value.status, "OPC UA pull: a value without a Good status is not written");
                continue;
            };
            let Some(v) = bacnet_value(point.object.object_type, v) else {
                tracing::warn!(url = pull_url, object = %point.object, "OPC UA pull: {v:?} does not fit the object");
                continue;
            };
            into_bacnet.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(point.object, v.clone());
            if let Err(why) = local_points::write(&pull_server, point.object, P::PRESENT_VALUE, v, priority).await {
                tracing::warn!(url = pull_url, object = %point.object, "OPC UA pull: the device refused the value: {why}");
            }
        }
    });

    let (changes_in, mut changes) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(local_points::follow(server.clone(), 300, changes_in));
    // The last value each object sent back (COV repeats itself).
    let mut sent_back: HashMap<ObjectIdentifier, Value> = HashMap::new();
    let by_object: HashMap<ObjectIdentifier, usize> =
        points.iter().enumerate().filter(|(_, p)| p.write_back).map(|(i, p)| (p.object, i)).collect();
    while let Some((_, n)) = changes.recv().await {
        let n: bacnet::services::COVNotification = n;
        let Some(&index) = by_object.get(&n.monitored_object) else { continue };
        let Some(pv) = n.values.iter().find(|v| v.property == P::PRESENT_VALUE) else { continue };
        let Some(value) = pv.value.as_primitive().cloned() else { continue };
        if !commanded_by_bacnet(&server, n.monitored_object, priority, &value, &from_bacnet).await {
            continue;
        }
        if sent_back.get(&n.monitored_object) == Some(&value) {
            continue;
        }
        let Some(variant) = variant_of(&value) else { continue };
        match puller.write(index, variant).await {
            Ok(()) => {
                sent_back.insert(n.monitored_object, value);
            }
            Err(status) => {
                tracing::warn!(url, object = %n.monitored_object, "OPC UA pull: the server refused a value written over BACnet ({status})");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_the_objects_types() {
        assert_eq!(bacnet_value(ObjectType::ANALOG_VALUE, &Variant::Int32(3)), Some(Value::Real(3.0)));
        assert_eq!(bacnet_value(ObjectType::BINARY_VALUE, &Variant::Boolean(true)), Some(Value::Enumerated(1)));
        assert_eq!(bacnet_value(ObjectType::MULTI_STATE_VALUE, &Variant::UInt32(2)), Some(Value::Unsigned(2)));
        assert_eq!(bacnet_value(ObjectType::MULTI_STATE_VALUE, &Variant::UInt32(0)), None, "states start at 1");
        assert_eq!(bacnet_value(ObjectType::ANALOG_VALUE, &Variant::String("x".into())), None);
    }
}
