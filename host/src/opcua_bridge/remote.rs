//! The remote devices (`[[remote]]`) in the OPC UA address space: their
//! objects read over the network with the gateway's BACnet client
//! (Object_List, then ReadPropertyMultiple per object), reads as
//! ReadPropertyMultiple per device, writes as WriteProperty, changes by
//! SubscribeCOV (unconfirmed, renewed) — an object that refuses COV is
//! still read fresh by every Read with maxAge 0, it only does not notify.
//!
//! Must never: reach a device that no `[[remote]]` binds.

use super::points::SHOWN;
use crate::app::services::Remotes;
use crate::client::{ClientError, CovSubscription, DeviceAddress};
use bacnet::enums::{ObjectType, PropertyIdentifier as P};
use bacnet::services::{BacnetError, PropertyReference, ReadAccessSpecification};
use bacnet::{AnyValue, Element, ObjectIdentifier, Value};
use std::collections::BTreeMap;
use trellis_opcua::source::{DeviceView, ObjectView, PointFault, PointRef};

/// Objects asked per ReadPropertyMultiple when describing a device.
const OBJECTS_PER_REQUEST: usize = 16;

fn fault(e: ClientError) -> PointFault {
    match e {
        ClientError::Bacnet { class, code } => PointFault::Bacnet(BacnetError::new(class, code)),
        ClientError::Timeout { .. } => PointFault::Timeout,
        e @ (ClientError::Reject(_) | ClientError::Abort { .. }) => PointFault::Refused(e.to_string()),
        e => PointFault::Unavailable(e.to_string()),
    }
}

fn text(v: &AnyValue) -> Option<String> {
    match v.0.as_slice() {
        [Element::Application(Value::CharacterString(s))] => s.to_text().ok(),
        _ => None,
    }
}

/// The bound remote devices.
pub struct RemotePoints {
    remotes: Remotes,
}

impl RemotePoints {
    /// Over these bindings.
    pub fn new(remotes: Remotes) -> Self {
        RemotePoints { remotes }
    }

    /// Whether `device` is bound here.
    pub fn has(&self, device: u32) -> bool {
        self.remotes.devices.contains_key(&device)
    }

    fn address(&self, device: u32) -> Result<&DeviceAddress, PointFault> {
        self.remotes
            .devices
            .get(&device)
            .ok_or_else(|| PointFault::Unavailable(format!("device {device} is not bound by a [[remote]]")))
    }

    /// Each bound device with its objects (a device that does not answer is
    /// shown without objects and logged).
    pub async fn devices(&self) -> Vec<DeviceView> {
        let mut out = Vec::new();
        for (&instance, address) in &self.remotes.devices {
            match self.device(instance, address).await {
                Ok(d) => out.push(d),
                Err(e) => {
                    tracing::warn!(device = instance, "OPC UA: the remote device could not be described: {e}");
                    out.push(DeviceView { instance, name: format!("device-{instance}"), objects: Vec::new() });
                }
            }
        }
        out
    }

    async fn device(&self, instance: u32, address: &DeviceAddress) -> Result<DeviceView, String> {
        let client = self.remotes.client().await?;
        let device = ObjectIdentifier { object_type: ObjectType::DEVICE, instance };
        let name = client
            .read_property(address, device, P::OBJECT_NAME, None)
            .await
            .ok()
            .and_then(|v| text(&v))
            .unwrap_or_else(|| format!("device-{instance}"));
        let list = client.read_property(address, device, P::OBJECT_LIST, None).await.map_err(|e| e.to_string())?;
        let ids: Vec<ObjectIdentifier> = list
            .0
            .iter()
            .filter_map(|e| match e {
                Element::Application(Value::ObjectIdentifier(o)) if o.object_type != ObjectType::DEVICE => Some(*o),
                _ => None,
            })
            .collect();
        let asked: Vec<P> =
            [P::OBJECT_NAME, P::DESCRIPTION, P::UNITS].into_iter().chain(SHOWN.iter().copied()).collect();
        let mut objects = Vec::new();
        for chunk in ids.chunks(OBJECTS_PER_REQUEST) {
            let specs = chunk
                .iter()
                .map(|&object| ReadAccessSpecification {
                    object,
                    properties: asked.iter().map(|&p| PropertyReference::new(p)).collect(),
                })
                .collect();
            let results = client.read_property_multiple(address, specs).await.map_err(|e| e.to_string())?;
            for r in results {
                let mut view = ObjectView {
                    id: r.object,
                    name: String::new(),
                    description: None,
                    units: None,
                    properties: Vec::new(),
                };
                for p in r.results {
                    let Ok(value) = p.outcome else { continue };
                    match p.property {
                        P::OBJECT_NAME => view.name = text(&value).unwrap_or_default(),
                        P::DESCRIPTION => view.description = text(&value).filter(|t| !t.is_empty()),
                        P::UNITS => {
                            view.units = match value.as_primitive() {
                                Some(Value::Enumerated(u)) => Some(*u),
                                _ => None,
                            }
                        }
                        p => view.properties.push((p, value)),
                    }
                }
                if view.name.is_empty() {
                    view.name = format!("{}", view.id);
                }
                objects.push(view);
            }
        }
        Ok(DeviceView { instance, name, objects })
    }

    /// Read points of one remote device (one ReadPropertyMultiple).
    pub async fn read(&self, device: u32, points: &[PointRef]) -> Vec<Result<AnyValue, PointFault>> {
        let failed = |f: PointFault| vec![Err(f); points.len()];
        let address = match self.address(device) {
            Ok(a) => a,
            Err(f) => return failed(f),
        };
        let client = match self.remotes.client().await {
            Ok(c) => c,
            Err(e) => return failed(PointFault::Unavailable(e)),
        };
        // One specification per object, in first-seen order.
        let mut by_object: BTreeMap<ObjectIdentifier, Vec<P>> = BTreeMap::new();
        for p in points {
            by_object.entry(p.object).or_default().push(p.property);
        }
        let specs = by_object
            .iter()
            .map(|(&object, properties)| ReadAccessSpecification {
                object,
                properties: properties.iter().map(|&p| PropertyReference::new(p)).collect(),
            })
            .collect();
        let results = match client.read_property_multiple(address, specs).await {
            Ok(r) => r,
            Err(e) => return failed(fault(e)),
        };
        let mut values: BTreeMap<(ObjectIdentifier, P), Result<AnyValue, BacnetError>> = BTreeMap::new();
        for r in results {
            for p in r.results {
                values.insert((r.object, p.property), p.outcome);
            }
        }
        points
            .iter()
            .map(|p| match values.get(&(p.object, p.property)) {
                Some(Ok(v)) => Ok(v.clone()),
                Some(Err(e)) => Err(PointFault::Bacnet(*e)),
                None => Err(PointFault::Unavailable("the device's answer left it out".into())),
            })
            .collect()
    }

    /// WriteProperty on a remote device.
    pub async fn write(&self, point: PointRef, value: AnyValue, priority: u8) -> Result<(), PointFault> {
        let address = self.address(point.device)?;
        let client = self.remotes.client().await.map_err(PointFault::Unavailable)?;
        client.write_property(address, point.object, point.property, None, value, Some(priority)).await.map_err(fault)
    }

    /// Subscribe to COV on every object of `devices` (those bound here),
    /// renewed at three quarters of `lifetime_s`, and hand each
    /// notification to `changed` until the process ends.
    pub async fn follow(
        self: std::sync::Arc<Self>,
        devices: Vec<DeviceView>,
        lifetime_s: u32,
        changed: impl Fn(u32, bacnet::services::COVNotification) + Send + 'static,
    ) {
        let client = match self.remotes.client().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("OPC UA: remote devices will not notify changes: {e}");
                return;
            }
        };
        let mut notifications = client.cov_notifications();
        let subscriptions: Vec<(DeviceAddress, CovSubscription)> = devices
            .iter()
            .filter_map(|d| self.remotes.devices.get(&d.instance).map(|a| (d, a)))
            .flat_map(|(d, address)| {
                d.objects.iter().enumerate().map(move |(i, o)| {
                    // Process ids unique per device and object.
                    let process = 0x4f50_0000 | (i as u32 & 0xffff);
                    (address.clone(), CovSubscription::new(process, o.id).lifetime(lifetime_s))
                })
            })
            .collect();
        let renew = std::time::Duration::from_secs(u64::from(lifetime_s) * 3 / 4);
        loop {
            let mut refused = 0;
            for (address, s) in &subscriptions {
                if client.subscribe_cov(address, s).await.is_err() {
                    refused += 1;
                }
            }
            if refused > 0 {
                tracing::debug!(refused, "OPC UA: remote objects without COV (read on demand only)");
            }
            let until = tokio::time::Instant::now() + renew;
            loop {
                let n = tokio::select! {
                    n = notifications.recv() => n,
                    _ = tokio::time::sleep_until(until) => break,
                };
                match n {
                    Ok(n) => changed(n.notification.initiating_device.instance, n.notification),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "OPC UA: remote COV notifications were missed");
                    }
                    Err(_) => return,
                }
            }
        }
    }
}
