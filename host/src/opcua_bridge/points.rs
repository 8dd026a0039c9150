//! The served devices as an OPC UA [`PointSource`]: object lists and reads
//! straight from each device's object model (one model call per device per
//! OPC UA Read, however many points it names), writes as WriteProperty
//! through the device's server (a requester inside the gateway, so the
//! server's checks apply as to any BACnet client).
//!
//! Remote devices (`[[remote]]`) are reached through [`RemotePoints`].
//!
//! Must never: answer for a device that is neither served nor bound here.

use super::remote::RemotePoints;
use crate::local_points::{self, WriteRefused};
use crate::model::{ObjectModel, PropertyTarget};
use crate::plugin::PluginModel;
use crate::server::Server;
use bacnet::enums::{ObjectType, PropertyIdentifier as P};
use bacnet::{AnyValue, Element, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_opcua::source::{DeviceView, ObjectView, PointFault, PointRef, PointSource};

/// The properties shown as variables, when an object has them.
pub const SHOWN: &[P] = &[
    P::PRESENT_VALUE,
    P::STATUS_FLAGS,
    P::EVENT_STATE,
    P::RELIABILITY,
    P::OUT_OF_SERVICE,
    P::RELINQUISH_DEFAULT,
    P::COV_INCREMENT,
];

/// The served devices, by instance, and the remote ones.
pub struct GatewayPoints {
    servers: BTreeMap<u32, Arc<Server<PluginModel>>>,
    remote: Option<Arc<RemotePoints>>,
}

impl GatewayPoints {
    /// Over these servers and these remote devices.
    pub fn new(servers: &[Arc<Server<PluginModel>>], remote: Option<Arc<RemotePoints>>) -> Self {
        GatewayPoints { servers: servers.iter().map(|s| (s.device_id().instance, s.clone())).collect(), remote }
    }

    /// Each device's objects as (id, name), for noticing a changed list
    /// cheaply.
    pub async fn outline(&self) -> Vec<(u32, Vec<(bacnet::ObjectIdentifier, String)>)> {
        let mut out = Vec::new();
        for (instance, server) in &self.servers {
            let objects = server.model().objects().await.unwrap_or_default();
            out.push((*instance, objects.into_iter().map(|o| (o.id, o.name)).collect()));
        }
        out
    }

    async fn device(&self, instance: u32, server: &Server<PluginModel>) -> DeviceView {
        let objects = match server.model().objects().await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(device = instance, "OPC UA: the object list could not be read: {e}");
                return DeviceView { instance, name: format!("device-{instance}"), objects: Vec::new() };
            }
        };
        let name = objects
            .iter()
            .find(|o| o.id.object_type == ObjectType::DEVICE)
            .map(|o| o.name.clone())
            .unwrap_or_else(|| format!("device-{instance}"));
        let objects: Vec<_> = objects.into_iter().filter(|o| o.id.object_type != ObjectType::DEVICE).collect();
        let asked: Vec<P> = SHOWN.iter().copied().chain([P::UNITS, P::DESCRIPTION]).collect();
        let targets: Vec<PropertyTarget> = objects
            .iter()
            .flat_map(|o| asked.iter().map(|&property| PropertyTarget { object: o.id, property, array_index: None }))
            .collect();
        let reads = match server.model().read(&targets).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(device = instance, "OPC UA: the objects' properties could not be read: {e}");
                return DeviceView { instance, name, objects: Vec::new() };
            }
        };
        let mut reads = reads.into_iter().map(|r| r.into_iter().next().and_then(|r| r.outcome.ok()));
        let views = objects
            .into_iter()
            .map(|o| {
                let mut properties = Vec::new();
                let (mut units, mut description) = (None, None);
                for &p in &asked {
                    let Some(value) = reads.next().flatten() else { continue };
                    match p {
                        P::UNITS => units = enumerated(&value),
                        P::DESCRIPTION => description = text(&value),
                        _ => properties.push((p, value)),
                    }
                }
                ObjectView { id: o.id, name: o.name, description, units, properties }
            })
            .collect();
        DeviceView { instance, name, objects: views }
    }
}

fn enumerated(v: &AnyValue) -> Option<u32> {
    match v.0.as_slice() {
        [Element::Application(Value::Enumerated(e))] => Some(*e),
        _ => None,
    }
}

fn text(v: &AnyValue) -> Option<String> {
    match v.0.as_slice() {
        [Element::Application(Value::CharacterString(s))] => s.to_text().ok().filter(|t| !t.is_empty()),
        _ => None,
    }
}

impl PointSource for GatewayPoints {
    async fn devices(&self) -> Vec<DeviceView> {
        let mut out = Vec::new();
        for (instance, server) in &self.servers {
            out.push(self.device(*instance, server).await);
        }
        if let Some(remote) = &self.remote {
            out.extend(remote.devices().await);
        }
        out
    }

    async fn read(&self, points: &[PointRef]) -> Vec<Result<AnyValue, PointFault>> {
        // The usual Read names points of one served device: one model call, no grouping.
        if let Some(first) = points.first()
            && let Some(server) = self.servers.get(&first.device)
            && points.iter().all(|p| p.device == first.device)
        {
            let targets: Vec<PropertyTarget> = points
                .iter()
                .map(|p| PropertyTarget { object: p.object, property: p.property, array_index: None })
                .collect();
            return match server.model().read(&targets).await {
                Ok(reads) if reads.len() == points.len() => reads
                    .into_iter()
                    .map(|read| match read.into_iter().next() {
                        Some(r) => r.outcome.map_err(PointFault::Bacnet),
                        None => Err(PointFault::Unavailable("the model gave no answer".into())),
                    })
                    .collect(),
                Ok(_) => vec![Err(PointFault::Unavailable("the model answered another count".into())); points.len()],
                Err(e) => vec![Err(PointFault::Unavailable(e.to_string())); points.len()],
            };
        }
        let mut results: Vec<Option<Result<AnyValue, PointFault>>> = vec![None; points.len()];
        // One model call per device, whatever the order of the points.
        let mut by_device: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, p) in points.iter().enumerate() {
            by_device.entry(p.device).or_default().push(i);
        }
        for (device, indexes) in by_device {
            let Some(server) = self.servers.get(&device) else {
                let asked: Vec<PointRef> = indexes.iter().map(|&i| points[i]).collect();
                let answers = match &self.remote {
                    Some(remote) if remote.has(device) => remote.read(device, &asked).await,
                    _ => vec![Err(PointFault::Unavailable(format!("device {device} is not served here"))); asked.len()],
                };
                for (i, a) in indexes.into_iter().zip(answers) {
                    results[i] = Some(a);
                }
                continue;
            };
            let targets: Vec<PropertyTarget> = indexes
                .iter()
                .map(|&i| PropertyTarget { object: points[i].object, property: points[i].property, array_index: None })
                .collect();
            match server.model().read(&targets).await {
                Ok(reads) => {
                    for (&i, read) in indexes.iter().zip(reads) {
                        results[i] = Some(match read.into_iter().next() {
                            Some(r) => r.outcome.map_err(PointFault::Bacnet),
                            None => Err(PointFault::Unavailable("the model gave no answer".into())),
                        });
                    }
                }
                Err(e) => {
                    for i in indexes {
                        results[i] = Some(Err(PointFault::Unavailable(e.to_string())));
                    }
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(PointFault::Unavailable("the model left it out".into()))))
            .collect()
    }

    async fn write(&self, point: PointRef, value: AnyValue, priority: u8) -> Result<(), PointFault> {
        let Some(server) = self.servers.get(&point.device) else {
            return match &self.remote {
                Some(remote) if remote.has(point.device) => remote.write(point, value, priority).await,
                _ => Err(PointFault::Unavailable(format!("device {} is not served here", point.device))),
            };
        };
        let value = value.as_primitive().cloned().ok_or_else(|| PointFault::Refused("not a primitive value".into()))?;
        local_points::write(server, point.object, point.property, value, priority).await.map_err(|e| match e {
            WriteRefused::Error(e) => PointFault::Bacnet(e),
            WriteRefused::Other(why) => PointFault::Refused(why),
        })
    }
}
