//! What the gateway does for its applications ([`AppServices`]): the
//! served devices' points through their servers (as a requester inside the
//! gateway, so every check a client meets applies), remote devices' points
//! (`[[remote]]`: a device instance bound to its address) through the
//! gateway's BACnet client, MQTT through the bridge's broker link, the
//! gateway's clock.
//!
//! Must never: reach a device that is neither served nor bound, or publish
//! without a broker configured.

use crate::plugin::PluginModel;
use crate::plugin::app::{AppServices, PointAddress, PointError, ServiceFuture};
use crate::server::{AnswerRoom, Server};
use bacnet::enums::ConfirmedServiceChoice as S;
use bacnet::services::{BacnetError, ReadPropertyAck, ReadPropertyRequest, ServiceCodec, WritePropertyRequest};
use bacnet::{AnyValue, ObjectIdentifier};
use std::collections::HashMap;
use std::sync::Arc;
use trellis_mqtt::link::Link;

/// The remote devices the applications may reach, and how.
#[derive(Debug, Clone, Default)]
pub struct Remotes {
    /// Device instance → where it is.
    pub devices: HashMap<u32, crate::client::DeviceAddress>,
    /// The client's settings (its B/IP port: an ephemeral one by default).
    pub client: crate::client::ClientConfig,
    /// The gateway's BACnet client, bound at the first remote request and
    /// shared by every clone (the applications and the OPC UA server use one).
    pub bound: Arc<tokio::sync::OnceCell<Arc<crate::client::Client>>>,
}

impl Remotes {
    /// The client, bound now if it was not yet.
    pub async fn client(&self) -> Result<Arc<crate::client::Client>, String> {
        let config = self.client;
        self.bound
            .get_or_try_init(|| async move {
                crate::client::Client::bind(config)
                    .await
                    .map(Arc::new)
                    .map_err(|e| format!("the gateway's BACnet client could not bind: {e}"))
            })
            .await
            .cloned()
    }
}

/// The gateway's services for applications.
pub struct GatewayServices {
    servers: HashMap<u32, Arc<Server<PluginModel>>>,
    link: Option<Link>,
    remotes: Remotes,
}

/// Where a point's device is.
enum Reach {
    Served(Arc<Server<PluginModel>>),
    Remote(Arc<crate::client::Client>, crate::client::DeviceAddress),
}

/// How to get there, without borrowing the services.
enum Plan {
    Served(Arc<Server<PluginModel>>),
    Remote(Remotes, crate::client::DeviceAddress),
}

impl Plan {
    async fn reach(self) -> Result<Reach, PointError> {
        match self {
            Plan::Served(s) => Ok(Reach::Served(s)),
            Plan::Remote(remotes, address) => {
                let client = remotes.client().await.map_err(PointError::Failed)?;
                Ok(Reach::Remote(client, address))
            }
        }
    }
}

impl GatewayServices {
    /// Over the served devices and the broker link, if there is one.
    pub fn new(servers: &[Arc<Server<PluginModel>>], link: Option<Link>, remotes: Remotes) -> Self {
        GatewayServices {
            servers: servers.iter().map(|s| (s.device_id().instance, s.clone())).collect(),
            link,
            remotes,
        }
    }

    /// The server of `device`, if it is served here.
    pub fn server(&self, device: u32) -> Result<Arc<Server<PluginModel>>, PointError> {
        self.servers
            .get(&device)
            .cloned()
            .ok_or_else(|| PointError::UnknownPoint(format!("device {device} is not served by this gateway")))
    }

    /// Where `device` is: served here, or bound by `[[remote]]`.
    fn reach(&self, device: u32) -> impl std::future::Future<Output = Result<Reach, PointError>> + Send + 'static {
        let plan = match self.servers.get(&device) {
            Some(s) => Ok(Plan::Served(s.clone())),
            None => match self.remotes.devices.get(&device) {
                Some(address) => Ok(Plan::Remote(self.remotes.clone(), address.clone())),
                None => Err(PointError::UnknownPoint(format!(
                    "device {device} is neither served here nor bound by a [[remote]] section"
                ))),
            },
        };
        async move { plan?.reach().await }
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
        let reach = self.reach(device);
        Box::pin(async move {
            match reach.await? {
                Reach::Served(server) => {
                    let objects = crate::model::ObjectModel::objects(server.model())
                        .await
                        .map_err(|e| PointError::Failed(format!("the object list could not be read: {e}")))?;
                    Ok(objects.into_iter().map(|o| (o.id, o.name)).collect())
                }
                Reach::Remote(client, address) => remote_objects(&client, &address, device).await,
            }
        })
    }

    fn read(&self, p: PointAddress) -> ServiceFuture<Result<AnyValue, PointError>> {
        let reach = self.reach(p.device);
        Box::pin(async move {
            let server = match reach.await? {
                Reach::Served(server) => server,
                Reach::Remote(client, address) => {
                    return client
                        .read_property(&address, p.object, p.property, p.array_index)
                        .await
                        .map_err(remote_error);
                }
            };
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
        let reach = self.reach(p.device);
        Box::pin(async move {
            let server = match reach.await? {
                Reach::Served(server) => server,
                Reach::Remote(client, address) => {
                    return client
                        .write_property(&address, p.object, p.property, p.array_index, value, priority)
                        .await
                        .map_err(remote_error);
                }
            };
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

/// A client's failure as the guest's error.
fn remote_error(e: crate::client::ClientError) -> PointError {
    match e {
        crate::client::ClientError::Bacnet { class, code } => {
            PointError::Bacnet { class: u32::from(class), code: u32::from(code) }
        }
        other => PointError::Failed(other.to_string()),
    }
}

/// A remote device's objects (its Object_List, less the Device object) and
/// their names, one ReadProperty each.
async fn remote_objects(
    client: &crate::client::Client,
    address: &crate::client::DeviceAddress,
    device: u32,
) -> Result<Vec<(ObjectIdentifier, String)>, PointError> {
    use bacnet::enums::PropertyIdentifier as P;
    use bacnet::{Element, ObjectType, Value};
    let me = ObjectIdentifier::new(ObjectType::DEVICE, device)
        .map_err(|_| PointError::UnknownPoint(format!("device {device}")))?;
    let list = client.read_property(address, me, P::OBJECT_LIST, None).await.map_err(remote_error)?;
    let mut out = Vec::new();
    for e in &list.0 {
        let Element::Application(Value::ObjectIdentifier(id)) = e else { continue };
        if id.object_type == ObjectType::DEVICE {
            continue;
        }
        let name = client.read_property(address, *id, P::OBJECT_NAME, None).await.map_err(remote_error)?;
        let name = match name.as_primitive() {
            Some(Value::CharacterString(s)) => s.to_text().unwrap_or_default(),
            _ => String::new(),
        };
        out.push((*id, name));
    }
    Ok(out)
}
