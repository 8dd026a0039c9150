//! The async BACnet client: Who-Is discovery and the property services,
//! with the transaction state machine's timeouts, retries and per-device
//! concurrency limit.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use trellis_client::{Client, ClientConfig};
//! let client = Client::bind(ClientConfig::default()).await?;
//! let device = "127.0.0.1:47809".parse()?;
//! let pv = client
//!     .read_property(&device, "analog-value,1".parse()?, bacnet::PropertyIdentifier::PRESENT_VALUE, None)
//!     .await?;
//! println!("{pv}");
//! # Ok(()) }
//! ```
//!
//! An actor task owns the transaction state machine; callers send it
//! commands over channels and await the answer. What the client shares with
//! the server (how peers are named, the MS/TP receive bridge) is in
//! `trellis_net`.
//!
//! Must never: depend on the server or the plugin runtime, block the
//! runtime (an MS/TP driver and its bridge run on threads of their own), or
//! keep a transaction going for a caller that gave up (abandoned requests
//! are cancelled).

mod actor;
mod cov;
mod error;
mod events;
mod files;
mod foreign;
mod lifecycle;
mod management;
mod who_is;
pub use files::FILE_CHUNK;

pub use actor::{Destination, UnconfirmedReceived};
pub use cov::{CovNotificationReceived, CovSubscription};
pub use error::ClientError;
pub use events::EventNotificationReceived;
pub use trellis_net::{DeviceAddress, LinkAddress, ParseAddressError, RemoteStation};
pub use who_is::{Discovered, WhoIsScan};

use actor::{Actor, Command, Link};
use bacnet::enums::{ConfirmedServiceChoice as Service, PropertyIdentifier, UnconfirmedServiceChoice};
use bacnet::services::{
    BacnetError, ReadAccessResult, ReadAccessSpecification, ReadPropertyAck, ReadPropertyMultipleAck,
    ReadPropertyMultipleRequest, ReadPropertyRequest, ServiceCodec, WhoIs, WriteAccessSpecification,
    WritePropertyMultipleError, WritePropertyMultipleRequest, WritePropertyRequest,
};
use bacnet::tsm::{Outcome, TsmConfig};
use bacnet::{AnyValue, ObjectIdentifier};
use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use trellis_bip::{BindError, BipConfig};

/// The longest request we send: 255 segments of a 1476-octet APDU.
const MAX_REQUEST_OCTETS: usize = 255 * 1470;

/// Client settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientConfig {
    /// The B/IP port to bind.
    pub bip: BipConfig,
    /// APDU timeout, retries, requests in flight per device.
    pub tsm: TsmConfig,
    /// Register with this BBMD as a foreign device (Annex J.5) and send
    /// broadcasts through it.
    pub foreign_device: Option<ForeignDevice>,
}

/// A foreign-device registration: the BBMD and the time-to-live asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignDevice {
    /// The BBMD's B/IP address.
    pub bbmd: SocketAddrV4,
    /// Seconds the BBMD keeps the registration; renewed at half of it.
    pub ttl: u16,
}

/// A BACnet client on one B/IP port. Cheap to clone; every clone shares the
/// port and its transactions. The port closes when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Client {
    commands: mpsc::Sender<Command>,
    unconfirmed: broadcast::Sender<UnconfirmedReceived>,
    cov: broadcast::Sender<CovNotificationReceived>,
    events: broadcast::Sender<EventNotificationReceived>,
    local: LinkAddress,
    broadcast: LinkAddress,
    tsm: TsmConfig,
    /// The BACnet/IPv6 port, for a client from [`Client::bind_bip6`].
    bip6: Option<trellis_bip6::Bip6Handle>,
    /// The port's receive task (B/IP, B/IPv6) and the foreign-device
    /// renewal, for [`Client::shutdown`].
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Client {
    /// Bind the port and start the client's tasks on the current runtime.
    ///
    /// With [`ClientConfig::foreign_device`] it first registers with the
    /// BBMD (waiting up to the APDU timeout for its answer: a refusal or
    /// silence is an error naming the BBMD), renews at half the TTL for as
    /// long as the client lives, and sends its broadcasts to the BBMD as
    /// Distribute-Broadcast-To-Network.
    pub async fn bind(config: ClientConfig) -> Result<Client, BindError> {
        let (bip, mut driver) = trellis_bip::bind(&config.bip)?;
        if let Some(fd) = config.foreign_device {
            driver.accept_forwarded_from(fd.bbmd);
        }
        let stats = driver.stats();
        let (rx_tx, rx_rx) = mpsc::channel(1024);
        let receiving = tokio::spawn(driver.run(rx_tx));
        let local = bip.local_addr();
        let broadcast_addr = bip.broadcast_addr();
        if let Some(fd) = config.foreign_device {
            foreign::register(&bip, &stats, fd, config.tsm.apdu_timeout)
                .await
                .map_err(|e| BindError::new(fd.bbmd, e))?;
        }
        let link = Link::Bip(bip.clone(), config.foreign_device.map(|fd| fd.bbmd));
        let client = Client::start(link, rx_rx, local.into(), broadcast_addr.into(), config.tsm);
        client.keep(receiving);
        if let Some(fd) = config.foreign_device {
            client.keep(tokio::spawn(foreign::renew(bip, fd, client.commands.downgrade())));
        }
        Ok(client)
    }

    /// Start a client on an MS/TP port (a simulated line or a serial
    /// device): its driver runs on a thread of its own, what it receives
    /// crosses to the runtime on another, and the port shuts down when the
    /// last clone of the client is dropped. Devices on the port are named
    /// [`DeviceAddress::mstp`]`(mac)`; [`Destination::LocalBroadcast`] is
    /// MAC 255.
    pub async fn bind_mstp(port: trellis_mstp::MstpConfig, tsm: TsmConfig) -> Result<Client, trellis_mstp::BindError> {
        let (handle, driver) = trellis_mstp::bind(port)?;
        Client::on_mstp(handle, driver, tsm)
    }

    /// [`Client::bind_mstp`] on a port set up elsewhere (e.g. with
    /// [`trellis_mstp::bind_port`] on a serial line opened by the caller).
    /// Call within the runtime.
    pub fn on_mstp(
        handle: trellis_mstp::MstpHandle,
        driver: trellis_mstp::MstpDriver,
        tsm: TsmConfig,
    ) -> Result<Client, trellis_mstp::BindError> {
        let name = driver.name().to_string();
        driver.spawn().map_err(|source| trellis_mstp::BindError::Io { port: name, source })?;
        let mac = handle.mac();
        let (sender, received) = handle.into_parts();
        let (rx_tx, rx_rx) = mpsc::channel(1024);
        trellis_net::mstp::bridge(received, rx_tx, |r| actor::Received {
            source: LinkAddress::Mstp(r.source_mac),
            npdu: r.npdu,
            broadcast: r.broadcast,
        });
        let local = DeviceAddress::mstp(mac).link;
        let broadcast = DeviceAddress::mstp(trellis_net::mstp::BROADCAST_MAC).link;
        Ok(Client::start(Link::Mstp(sender), rx_rx, local, broadcast, tsm))
    }

    /// Start a client on a BACnet/IPv6 port (Annex U). Devices are named
    /// [`DeviceAddress::bip6`]`(vmac)`; one heard from (or resolved with
    /// [`Client::resolve_bip6`]) is reachable, others are looked for on the
    /// multicast group.
    pub async fn bind_bip6(config: trellis_bip6::Bip6Config, tsm: TsmConfig) -> std::io::Result<Client> {
        let (handle, mut driver) = trellis_bip6::bind(&config)?;
        let (rx_tx, rx_rx) = mpsc::channel(1024);
        let receiving = tokio::spawn(async move {
            let mut batch = Vec::new();
            loop {
                if driver.readable().await.is_err() {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                driver.drain(64, |n| {
                    batch.push(actor::Received {
                        source: LinkAddress::Bip6(n.source),
                        npdu: n.npdu.to_vec(),
                        broadcast: n.broadcast,
                    })
                });
                for r in batch.drain(..) {
                    if rx_tx.send(r).await.is_err() {
                        return;
                    }
                }
            }
        });
        let local = DeviceAddress::bip6(handle.vmac()).link;
        let broadcast = DeviceAddress::bip6([0xFF; 3]).link;
        let mut client = Client::start(Link::Bip6(handle.clone()), rx_rx, local, broadcast, tsm);
        client.bip6 = Some(handle);
        client.keep(receiving);
        Ok(client)
    }

    /// Start a client on a BACnet Ethernet port (Clause 7) on the network
    /// interface `config` names; needs CAP_NET_RAW. Devices are named
    /// [`DeviceAddress::ethernet`]`(mac)`; a broadcast goes to
    /// FF:FF:FF:FF:FF:FF. Call within the runtime.
    pub async fn bind_ethernet(config: trellis_ethernet::EthernetConfig, tsm: TsmConfig) -> std::io::Result<Client> {
        let (handle, mut driver) = trellis_ethernet::bind(&config)?;
        let (rx_tx, rx_rx) = mpsc::channel(1024);
        let receiving = tokio::spawn(async move {
            let mut batch = Vec::new();
            loop {
                if driver.readable().await.is_err() {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                driver.drain(64, |n| {
                    batch.push(actor::Received {
                        source: LinkAddress::Ethernet(n.source),
                        npdu: n.npdu.to_vec(),
                        broadcast: n.broadcast,
                    })
                });
                for r in batch.drain(..) {
                    if rx_tx.send(r).await.is_err() {
                        return;
                    }
                }
            }
        });
        let local = DeviceAddress::ethernet(handle.mac()).link;
        let broadcast = DeviceAddress::ethernet(trellis_ethernet::BROADCAST).link;
        let client = Client::start(Link::Ethernet(handle), rx_rx, local, broadcast, tsm);
        client.keep(receiving);
        Ok(client)
    }

    /// Start a client on a BACnet/SC node already started (see
    /// [`trellis_sc::node::ScNode::start`]): devices are named
    /// [`DeviceAddress::sc`]`(vmac)`; a broadcast goes to the hub, which
    /// relays it to every other node. Call within the runtime.
    pub fn on_sc(
        node: trellis_sc::node::ScNode,
        mut up: mpsc::Receiver<bacnet::sc::connector::Up>,
        tsm: TsmConfig,
    ) -> Client {
        let (rx_tx, rx_rx) = mpsc::channel(1024);
        tokio::spawn(async move {
            while let Some(u) = up.recv().await {
                // The hub names the origin of everything it relays.
                let Some(origin) = u.origin else { continue };
                let r = actor::Received { source: LinkAddress::Sc(origin), npdu: u.npdu, broadcast: u.broadcast };
                if rx_tx.send(r).await.is_err() {
                    return;
                }
            }
        });
        let local = LinkAddress::Sc(node.status().vmac);
        let broadcast = LinkAddress::Sc(bacnet::bvlc_sc::BROADCAST_VMAC);
        Client::start(Link::Sc(node), rx_rx, local, broadcast, tsm)
    }

    /// The VMAC of the BACnet/IPv6 station at `address`
    /// (Virtual-Address-Resolution, waiting up to `within`), as a device
    /// address this client reaches. Only on a client from
    /// [`Client::bind_bip6`].
    pub async fn resolve_bip6(
        &self,
        address: std::net::SocketAddrV6,
        within: std::time::Duration,
    ) -> std::io::Result<DeviceAddress> {
        let Some(port) = &self.bip6 else {
            return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "not a BACnet/IPv6 client"));
        };
        port.resolve(address).await?;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(vmac) = port.vmac_at(address) {
                return Ok(DeviceAddress::bip6(vmac));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("[{}]:{} did not answer Virtual-Address-Resolution", address.ip(), address.port()),
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Register this BACnet/IPv6 client as a foreign device of the BBMD at
    /// `bbmd` (Annex U.4), waiting up to the APDU timeout for its answer;
    /// renewed at half `ttl` while the client lives. From then on its
    /// broadcasts (Who-Is, Who-Has) go to the BBMD as
    /// Distribute-Broadcast-To-Network and the BBMD's forwarded broadcasts
    /// (I-Am, I-Have) come back. Only on a client from [`Client::bind_bip6`].
    pub async fn register_bip6_foreign_device(&self, bbmd: std::net::SocketAddrV6, ttl: u16) -> std::io::Result<()> {
        let Some(port) = self.bip6.clone() else {
            return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "not a BACnet/IPv6 client"));
        };
        port.register_foreign_device(bbmd, ttl, self.tsm.apdu_timeout).await?;
        let client = self.commands.downgrade();
        let every = std::time::Duration::from_secs((u64::from(ttl.max(2)) / 2).min(1800));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if client.upgrade().is_none() {
                    return;
                }
                if let Err(e) = port.register_foreign_device(bbmd, ttl, std::time::Duration::from_secs(5)).await {
                    tracing::warn!(%bbmd, error = %e, "foreign-device renewal failed");
                }
            }
        });
        Ok(())
    }

    fn start(
        link: Link,
        received: mpsc::Receiver<actor::Received>,
        local: LinkAddress,
        broadcast: LinkAddress,
        tsm: TsmConfig,
    ) -> Client {
        let (cmd_tx, cmd_rx) = mpsc::channel(1024);
        let (unconfirmed, _) = broadcast::channel(4096);
        let (cov, _) = broadcast::channel(4096);
        let (events, _) = broadcast::channel(4096);
        let actor = Actor {
            tsm: bacnet::tsm::ClientTsm::new(tsm),
            peer_limits: Default::default(),
            link,
            commands: cmd_rx,
            received,
            unconfirmed: unconfirmed.clone(),
            cov: cov.clone(),
            events: events.clone(),
            waiting: HashMap::new(),
            epoch: tokio::time::Instant::now(),
        };
        tokio::spawn(actor.run());
        Client {
            commands: cmd_tx,
            unconfirmed,
            cov,
            events,
            local,
            broadcast,
            tsm,
            bip6: None,
            tasks: Default::default(),
        }
    }

    fn keep(&self, task: tokio::task::JoinHandle<()>) {
        self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(task);
    }

    /// Shut the client down, for every clone: requests in flight end with
    /// [`ClientError::Closed`], and a B/IP or B/IPv6 port is closed when
    /// this returns (an MS/TP port when the last clone is dropped).
    /// Without it the port closes once the last clone is dropped and its
    /// tasks notice.
    pub async fn shutdown(&self) {
        let (done, wait) = oneshot::channel();
        if self.commands.send(Command::Shutdown { done }).await.is_ok() {
            let _ = wait.await;
        }
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for task in tasks {
            // The receive task ends by itself once the actor is gone; a
            // renewal would sleep until its next period.
            task.abort();
            let _ = task.await;
        }
    }

    /// Our station on the port (a B/IP address, an MS/TP MAC, a VMAC: the
    /// current one, a random VMAC being replaced on a duplicate).
    pub fn local_addr(&self) -> LinkAddress {
        match &self.bip6 {
            Some(port) => DeviceAddress::bip6(port.vmac()).link,
            None => self.local,
        }
    }

    /// The broadcast address Who-Is goes to.
    pub fn broadcast_addr(&self) -> LinkAddress {
        self.broadcast
    }

    /// Subscribe to every unconfirmed request received (I-Am, I-Have, COV
    /// notifications…). Slow subscribers miss messages rather than grow memory.
    pub fn subscribe_unconfirmed(&self) -> broadcast::Receiver<UnconfirmedReceived> {
        self.unconfirmed.subscribe()
    }

    /// Send an unconfirmed request.
    pub async fn send_unconfirmed(
        &self,
        to: Destination,
        service: UnconfirmedServiceChoice,
        body: Vec<u8>,
    ) -> Result<(), ClientError> {
        let (done, wait) = oneshot::channel();
        self.commands.send(Command::Unconfirmed { to, service, body, done }).await.map_err(|_| ClientError::Closed)?;
        match wait.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ClientError::Io(e)),
            Err(_) => Err(ClientError::Closed),
        }
    }

    /// Send Who-Is (to `to`, with an optional instance range) and collect the
    /// I-Am answers that arrive within `wait`.
    pub async fn who_is(
        &self,
        to: Destination,
        range: Option<(u32, u32)>,
        wait: Duration,
    ) -> Result<WhoIsScan, ClientError> {
        let rx = self.subscribe_unconfirmed();
        self.send_unconfirmed(to, UnconfirmedServiceChoice::WHO_IS, WhoIs { range }.to_vec()).await?;
        Ok(WhoIsScan::new(rx, range, wait))
    }

    /// Run one confirmed service and return how it ended.
    pub async fn confirmed(
        &self,
        device: &DeviceAddress,
        service: Service,
        body: Vec<u8>,
    ) -> Result<Outcome, ClientError> {
        // A request longer than the device's Max-APDU goes in segments;
        // the transaction state machine refuses what no device could take.
        if body.len() > MAX_REQUEST_OCTETS {
            return Err(ClientError::Encode(bacnet::EncodeError::TooLong("request (more than 255 full segments)")));
        }
        let (reply, wait) = oneshot::channel();
        self.commands
            .send(Command::Confirmed { peer: device.clone(), service, body, reply })
            .await
            .map_err(|_| ClientError::Closed)?;
        wait.await.map_err(|_| ClientError::Closed)?
    }

    async fn confirmed_ack(
        &self,
        device: &DeviceAddress,
        service: Service,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ClientError> {
        match self.confirmed(device, service, body).await? {
            Outcome::ComplexAck(body) => Ok(body),
            Outcome::SimpleAck => Err(ClientError::UnexpectedReply("a SimpleACK where a ComplexACK was due")),
            other => Err(self.failure(other)),
        }
    }

    async fn confirmed_simple(
        &self,
        device: &DeviceAddress,
        service: Service,
        body: Vec<u8>,
    ) -> Result<(), ClientError> {
        match self.confirmed(device, service, body).await? {
            Outcome::SimpleAck => Ok(()),
            Outcome::ComplexAck(_) => Err(ClientError::UnexpectedReply("a ComplexACK where a SimpleACK was due")),
            other => Err(self.failure(other)),
        }
    }

    fn failure(&self, outcome: Outcome) -> ClientError {
        match outcome {
            Outcome::Error(body) => match BacnetError::decode(&body) {
                Ok(e) => ClientError::Bacnet { class: e.class, code: e.code },
                Err(e) => ClientError::MalformedReply(e),
            },
            Outcome::Reject(r) => ClientError::Reject(r),
            Outcome::Abort { reason, from_server } => ClientError::Abort { reason, from_server },
            Outcome::Timeout => ClientError::Timeout {
                attempts: 1 + self.tsm.retries as u32,
                timeout_ms: self.tsm.apdu_timeout.as_millis() as u64,
            },
            Outcome::SimpleAck | Outcome::ComplexAck(_) => ClientError::UnexpectedReply("success"),
        }
    }

    /// ReadProperty.
    pub async fn read_property(
        &self,
        device: &DeviceAddress,
        object: ObjectIdentifier,
        property: PropertyIdentifier,
        array_index: Option<u32>,
    ) -> Result<AnyValue, ClientError> {
        let req = ReadPropertyRequest { object, property, array_index };
        let body = self.confirmed_ack(device, Service::READ_PROPERTY, req.to_vec()).await?;
        let ack = ReadPropertyAck::decode(&body).map_err(ClientError::MalformedReply)?;
        // Asked as device,4194303 ("whichever device you are"), the answer
        // carries the device's real instance.
        let wildcard =
            object.object_type == bacnet::ObjectType::DEVICE && object.instance == ObjectIdentifier::MAX_INSTANCE;
        let same_object = ack.object == object || (wildcard && ack.object.object_type == bacnet::ObjectType::DEVICE);
        if !same_object || ack.property != property || ack.array_index != array_index {
            return Err(ClientError::UnexpectedReply("a ReadProperty-ACK for another property"));
        }
        Ok(ack.value)
    }

    /// ReadPropertyMultiple; per-property errors come back inside the results.
    pub async fn read_property_multiple(
        &self,
        device: &DeviceAddress,
        specs: Vec<ReadAccessSpecification>,
    ) -> Result<Vec<ReadAccessResult>, ClientError> {
        let req = ReadPropertyMultipleRequest(specs);
        let body = self.confirmed_ack(device, Service::READ_PROPERTY_MULTIPLE, req.to_vec()).await?;
        Ok(ReadPropertyMultipleAck::decode(&body).map_err(ClientError::MalformedReply)?.0)
    }

    /// WriteProperty, with a command priority for commandable properties.
    pub async fn write_property(
        &self,
        device: &DeviceAddress,
        object: ObjectIdentifier,
        property: PropertyIdentifier,
        array_index: Option<u32>,
        value: AnyValue,
        priority: Option<u8>,
    ) -> Result<(), ClientError> {
        let req = WritePropertyRequest { object, property, array_index, value, priority };
        self.confirmed_simple(device, Service::WRITE_PROPERTY, req.to_vec()).await
    }

    /// WritePropertyMultiple. A failure names the first write that failed.
    pub async fn write_property_multiple(
        &self,
        device: &DeviceAddress,
        specs: Vec<WriteAccessSpecification>,
    ) -> Result<(), ClientError> {
        let req = WritePropertyMultipleRequest(specs);
        match self.confirmed(device, Service::WRITE_PROPERTY_MULTIPLE, req.to_vec()).await? {
            Outcome::SimpleAck => Ok(()),
            Outcome::Error(body) => match WritePropertyMultipleError::decode(&body) {
                Ok(e) => Err(ClientError::WriteFailed {
                    class: e.error.class,
                    code: e.error.code,
                    first_failed: e.first_failed,
                }),
                // Some devices answer with a plain Error body.
                Err(_) => Err(self.failure(Outcome::Error(body))),
            },
            Outcome::ComplexAck(_) => Err(ClientError::UnexpectedReply("a ComplexACK to WritePropertyMultiple")),
            other => Err(self.failure(other)),
        }
    }
}
