//! The served devices' points as the northbound bridges (MQTT, OPC UA) see
//! them, always through the server itself as a requester inside the gateway
//! (nothing goes on the network, and the server's checks apply as to any
//! client; of its bounds, the COV table's per-subscriber, per-origin and
//! total limits do not: a bridge follows every object of the device, and
//! takes no place from the network's subscribers):
//! - [`follow`]: changes — SubscribeCOV (unconfirmed) on every object that
//!   takes it, renewed at three quarters of the lifetime, the notifications
//!   handed to a channel;
//! - [`write()`]: WriteProperty at a priority, a BACnet error named in the result;
//! - [`read_objects`]: every object's Present_Value (and Units) for a birth.
//!
//! Must never: wait on whoever reads the channel (a full one drops, counted
//! by the server's COV statistics).

use crate::model::{ObjectModel, PropertyTarget};
use crate::plugin::PluginModel;
use crate::server::{AnswerRoom, Server};
use bacnet::enums::{ConfirmedServiceChoice as S, PropertyIdentifier as P};
use bacnet::services::{COVNotification, ServiceCodec, SubscribeCOVRequest, WritePropertyRequest};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Follow `server`'s objects until `out` is closed: each notification goes
/// to `out` tagged with the device instance.
pub async fn follow(server: Arc<Server<PluginModel>>, lifetime_s: u32, out: mpsc::Sender<(u32, COVNotification)>) {
    let (me, mut notifications) = server.cov().local_subscriber(4096);
    let device = server.device_id().instance;
    let renew = Duration::from_secs(u64::from(lifetime_s) * 3 / 4);
    loop {
        let objects = match crate::model::ObjectModel::objects(server.model()).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(device, "northbound: the object list could not be read: {e}");
                Vec::new()
            }
        };
        let (mut subscribed, mut refused) = (0, Vec::new());
        for o in objects.iter().filter(|o| o.id.object_type != ObjectType::DEVICE) {
            let request = SubscribeCOVRequest {
                subscriber_process_identifier: 1,
                monitored_object: o.id,
                issue_confirmed_notifications: Some(false),
                lifetime: Some(lifetime_s),
            };
            let room = AnswerRoom { octets: 1476, segmented: false };
            let r = server.execute(&me, S::SUBSCRIBE_COV, &request.to_vec(), room).await;
            match r {
                bacnet::tsm::Response::SimpleAck => subscribed += 1,
                // An object without COV (a File, a Schedule) answers an
                // Error the table expects; anything else is worth a line.
                bacnet::tsm::Response::Error(body) if refused_for_lack_of_cov(&body) => {}
                other => refused.push((o.id, other)),
            }
        }
        tracing::debug!(device, subscribed, "northbound: COV subscriptions made");
        if let Some((first, why)) = refused.first() {
            tracing::warn!(
                device,
                refused = refused.len(),
                "northbound: {} objects will not be followed (first {first}: {why:?})",
                refused.len()
            );
        }
        let until = tokio::time::Instant::now() + renew;
        loop {
            let n = tokio::select! {
                n = notifications.recv() => n,
                _ = tokio::time::sleep_until(until) => break,
            };
            let Some(n) = n else { return };
            if out.send((device, n)).await.is_err() {
                return;
            }
        }
    }
}

/// Whether a SubscribeCOV's Error says the object has no COV to follow
/// (`object: optional-functionality-not-supported` and the like) rather
/// than that the table refused (`resources: …`).
fn refused_for_lack_of_cov(body: &[u8]) -> bool {
    bacnet::services::BacnetError::decode(body).is_ok_and(|e| e.class != bacnet::enums::ErrorClass::RESOURCES)
}

/// Who writes and subscribes from MQTT, for the server's per-requester bounds.
fn requester() -> crate::client::DeviceAddress {
    crate::client::DeviceAddress::from(crate::client::LinkAddress::Local(u32::MAX))
}

/// Why a write inside the gateway was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteRefused {
    /// The device's BACnet Error.
    Error(bacnet::services::BacnetError),
    /// A Reject or an Abort, or an answer that could not be read.
    Other(String),
}

impl std::fmt::Display for WriteRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteRefused::Error(e) => write!(f, "{}/{}", e.class, e.code),
            WriteRefused::Other(why) => f.write_str(why),
        }
    }
}

/// WriteProperty `object`'s `property` := `value` at `priority`; a refusal
/// as the device's error (`class/code` when shown), reject or abort.
pub async fn write(
    server: &Server<PluginModel>,
    object: ObjectIdentifier,
    property: P,
    value: Value,
    priority: u8,
) -> Result<(), WriteRefused> {
    let request = WritePropertyRequest {
        object,
        property,
        array_index: None,
        value: AnyValue::from(value),
        priority: Some(priority),
    };
    let room = AnswerRoom { octets: 1476, segmented: false };
    match server.execute(&requester(), S::WRITE_PROPERTY, &request.to_vec(), room).await {
        bacnet::tsm::Response::SimpleAck => Ok(()),
        bacnet::tsm::Response::Error(body) => Err(bacnet::services::BacnetError::decode(&body)
            .map(WriteRefused::Error)
            .unwrap_or_else(|_| WriteRefused::Other("an Error that could not be decoded".into()))),
        other => Err(WriteRefused::Other(format!("{other:?}"))),
    }
}

/// One object's point for a birth.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectPoint {
    /// The object.
    pub id: ObjectIdentifier,
    /// Its Object_Name.
    pub name: String,
    /// Its Present_Value, if it has one.
    pub present_value: Option<AnyValue>,
    /// Its Units, if it has them.
    pub units: Option<u32>,
}

/// Every object of `server` but the Device, with Present_Value and Units.
pub async fn read_objects(server: &Server<PluginModel>) -> Result<Vec<ObjectPoint>, String> {
    let model = server.model();
    let objects = model.objects().await.map_err(|e| e.to_string())?;
    let objects: Vec<_> = objects.into_iter().filter(|o| o.id.object_type != ObjectType::DEVICE).collect();
    let targets: Vec<PropertyTarget> = objects
        .iter()
        .flat_map(|o| {
            [P::PRESENT_VALUE, P::UNITS].map(|property| PropertyTarget { object: o.id, property, array_index: None })
        })
        .collect();
    let reads = model.read(&targets).await.map_err(|e| e.to_string())?;
    let mut values = reads.into_iter().map(|r| r.into_iter().next().and_then(|r| r.outcome.ok()));
    Ok(objects
        .into_iter()
        .map(|o| {
            let present_value = values.next().flatten();
            let units = values.next().flatten().and_then(|u| match u.0.as_slice() {
                [bacnet::Element::Application(Value::Enumerated(e))] => Some(*e),
                _ => None,
            });
            ObjectPoint { id: o.id, name: o.name, present_value, units }
        })
        .collect())
}
