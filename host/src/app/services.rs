//! What the gateway does for its applications ([`AppServices`]): the
//! served devices' points through their servers (as a requester inside the
//! gateway, so every check a client meets applies), MQTT through the
//! bridge's broker link, the gateway's clock.
//!
//! Must never: reach a device the gateway does not serve (remote devices'
//! points are not offered yet), or publish without a broker configured.

use crate::plugin::PluginModel;
use crate::plugin::app::{AppServices, PointAddress, PointError, ServiceFuture};
use crate::server::{AnswerRoom, Server};
use bacnet::enums::ConfirmedServiceChoice as S;
use bacnet::services::{BacnetError, ReadPropertyAck, ReadPropertyRequest, ServiceCodec, WritePropertyRequest};
use bacnet::{AnyValue, ObjectIdentifier};
use std::collections::HashMap;
use std::sync::Arc;
use trellis_mqtt::link::Link;

/// The gateway's services for applications.
pub struct GatewayServices {
    servers: HashMap<u32, Arc<Server<PluginModel>>>,
    link: Option<Link>,
}

impl GatewayServices {
    /// Over the served devices and the broker link, if there is one.
    pub fn new(servers: &[Arc<Server<PluginModel>>], link: Option<Link>) -> Self {
        GatewayServices { servers: servers.iter().map(|s| (s.device_id().instance, s.clone())).collect(), link }
    }

    /// The server of `device`.
    pub fn server(&self, device: u32) -> Result<Arc<Server<PluginModel>>, PointError> {
        self.servers.get(&device).cloned().ok_or_else(|| {
            PointError::UnknownPoint(format!("device {device} is not served by this gateway (remote devices: not yet)"))
        })
    }

    /// The broker link, if `[mqtt]` is configured.
    pub fn link(&self) -> Option<&Link> {
        self.link.as_ref()
    }
}

/// Who the applications are to the servers.
pub fn requester() -> crate::client::DeviceAddress {
    crate::client::DeviceAddress::from(crate::client::LinkAddress::Local(u32::MAX - 1))
}

const ROOM: AnswerRoom = AnswerRoom { octets: 1476, segmented: false };

/// A server's answer that is not the one asked for, as the guest's error.
pub fn refusal(r: bacnet::tsm::Response) -> PointError {
    match r {
        bacnet::tsm::Response::Error(body) => match BacnetError::decode(&body) {
            Ok(e) => PointError::Bacnet { class: u32::from(e.class), code: u32::from(e.code) },
            Err(_) => PointError::Failed("an Error that does not decode".into()),
        },
        bacnet::tsm::Response::Reject(reason) => PointError::Failed(format!("rejected: {reason}")),
        bacnet::tsm::Response::Abort(reason) => PointError::Failed(format!("aborted: {reason}")),
        other => PointError::Failed(format!("unexpected answer {other:?}")),
    }
}

impl AppServices for GatewayServices {
    fn objects(&self, device: u32) -> ServiceFuture<Result<Vec<(ObjectIdentifier, String)>, PointError>> {
        let server = self.server(device);
        Box::pin(async move {
            let server = server?;
            let objects = crate::model::ObjectModel::objects(server.model())
                .await
                .map_err(|e| PointError::Failed(format!("the object list could not be read: {e}")))?;
            Ok(objects.into_iter().map(|o| (o.id, o.name)).collect())
        })
    }

    fn read(&self, p: PointAddress) -> ServiceFuture<Result<AnyValue, PointError>> {
        let server = self.server(p.device);
        Box::pin(async move {
            let server = server?;
            let request = ReadPropertyRequest { object: p.object, property: p.property, array_index: p.array_index };
            match server.execute(&requester(), S::READ_PROPERTY, &request.to_vec(), ROOM).await {
                bacnet::tsm::Response::ComplexAck(body) => ReadPropertyAck::decode(&body)
                    .map(|ack| ack.value)
                    .map_err(|e| PointError::Failed(format!("an answer that does not decode: {e}"))),
                other => Err(refusal(other)),
            }
        })
    }

    fn write(&self, p: PointAddress, value: AnyValue, priority: Option<u8>) -> ServiceFuture<Result<(), PointError>> {
        let server = self.server(p.device);
        Box::pin(async move {
            let server = server?;
            let request = WritePropertyRequest {
                object: p.object,
                property: p.property,
                array_index: p.array_index,
                value,
                priority,
            };
            match server.execute(&requester(), S::WRITE_PROPERTY, &request.to_vec(), ROOM).await {
                bacnet::tsm::Response::SimpleAck => Ok(()),
                other => Err(refusal(other)),
            }
        })
    }

    fn publish(&self, topic: &str, payload: &[u8], qos: u8, retain: bool) -> Result<(), String> {
        let link = self.link.as_ref().ok_or("no broker: the gateway has no [mqtt] section")?;
        match link.publish_message(topic, qos, retain, payload) {
            Ok(true) => Ok(()),
            Ok(false) => Err("the spool is full and its policy dropped the message".into()),
            Err(e) => Err(format!("the spool refused the message: {e}")),
        }
    }

    fn now_ms(&self) -> u64 {
        let skew = self.servers.values().next().map_or(0, |s| s.model().clock().skew_ms());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        now.saturating_add(skew).max(0) as u64
    }
}
