//! The task that owns the client's transaction state machine: it feeds it
//! received APDUs, commands from callers and timeouts, and carries out what
//! it asks for. Callers talk to it over channels, so no lock is ever held
//! across an await and the state machine stays single-threaded.

use bacnet::apdu::Apdu;
use bacnet::enums::{AbortReason, ConfirmedServiceChoice, RejectReason, UnconfirmedServiceChoice};
use bacnet::npdu::{DEFAULT_HOP_COUNT, NetAddress, Npdu, NpduPayload};
use bacnet::services::{COVNotification, COVNotificationMultiple, EventNotification, IAm, ServiceCodec};
use bacnet::tsm::{ClientTsm, Outcome, PeerLimits, StartError, TransactionId};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;
use trellis_bip::BipHandle;
use trellis_net::LinkAddress;

/// An NPDU the client's port received, from whichever datalink.
pub(crate) struct Received {
    /// The station that sent it on our datalink.
    pub source: LinkAddress,
    pub npdu: Vec<u8>,
    /// Sent as a broadcast.
    pub broadcast: bool,
}

impl From<trellis_bip::Received> for Received {
    fn from(r: trellis_bip::Received) -> Self {
        Received { source: LinkAddress::Ip(r.source), npdu: r.npdu, broadcast: r.broadcast }
    }
}
use trellis_mstp::MstpSender;
use trellis_net::mstp;
use trellis_net::{DeviceAddress, RemoteStation, sleep_until};

/// An unconfirmed request received from a device (I-Am, I-Have, COV…).
#[derive(Debug, Clone)]
pub struct UnconfirmedReceived {
    /// Who sent it.
    pub source: DeviceAddress,
    /// Which service.
    pub service: UnconfirmedServiceChoice,
    /// The service body.
    pub body: Vec<u8>,
}

/// Where an unconfirmed request goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// The local broadcast address.
    LocalBroadcast,
    /// Every network (DNET 0xFFFF).
    GlobalBroadcast,
    /// One device.
    Device(DeviceAddress),
}

pub(crate) enum Command {
    Confirmed {
        peer: DeviceAddress,
        service: ConfirmedServiceChoice,
        body: Vec<u8>,
        reply: oneshot::Sender<Result<Outcome, super::ClientError>>,
    },
    Unconfirmed {
        to: Destination,
        service: UnconfirmedServiceChoice,
        body: Vec<u8>,
        done: oneshot::Sender<std::io::Result<()>>,
    },
    /// Stop: transactions in flight end with `Closed`; `done` is sent once
    /// the actor and its port handles are gone.
    Shutdown { done: oneshot::Sender<()> },
}

/// The datalink a client sends on. What it receives arrives as
/// [`Received`] either way (an MS/TP station's source as
/// [`DeviceAddress::mstp`]).
pub(crate) enum Link {
    /// A B/IP port; with a BBMD when registered as a foreign device (its
    /// broadcasts then go to the BBMD as Distribute-Broadcast-To-Network).
    Bip(BipHandle, Option<std::net::SocketAddrV4>),
    /// An MS/TP port: a request goes as BACnet Data Expecting Reply at our
    /// next token; everything else unicast goes through
    /// [`MstpSender::reply`], which answers the peer's pending request in
    /// time if there is one and is a plain BACnet Data frame otherwise.
    Mstp(MstpSender),
    /// A BACnet/IPv6 port: stations by VMAC ([`DeviceAddress::bip6`]).
    Bip6(trellis_bip6::Bip6Handle),
    /// A BACnet/SC node: nodes by VMAC ([`DeviceAddress::sc`]), everything
    /// through its hub.
    Sc(trellis_sc::node::ScNode),
    /// A BACnet Ethernet port: stations by MAC ([`DeviceAddress::ethernet`]).
    Ethernet(trellis_ethernet::EthernetHandle),
}

impl Link {
    async fn send_broadcast(&self, npdu: &[u8]) -> std::io::Result<()> {
        match self {
            Link::Bip(bip, None) => bip.send_broadcast(npdu).await,
            Link::Bip(bip, Some(bbmd)) => bip.send(*bbmd, bacnet::bvll::Bvll::DistributeBroadcastToNetwork(npdu)).await,
            Link::Mstp(m) => m.send(mstp::BROADCAST_MAC, npdu.to_vec(), false).map_err(mstp::send_error),
            Link::Bip6(b) => b.send_broadcast(npdu).await,
            Link::Sc(node) => node.send(bacnet::bvlc_sc::BROADCAST_VMAC, npdu.to_vec()).await,
            Link::Ethernet(e) => e.send_broadcast(npdu).await,
        }
    }

    async fn send_unicast(&self, to: &DeviceAddress, npdu: &[u8], expecting_reply: bool) -> std::io::Result<()> {
        match self {
            Link::Bip(bip, _) => match to.ip() {
                Some(a) => bip.send_unicast(a, npdu).await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{to} is not a B/IP station (use IP[:PORT])"),
                )),
            },
            Link::Bip6(b) => match to.bip6_vmac() {
                Some(vmac) => send_bip6(b, vmac, npdu).await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{to} is not a BACnet/IPv6 station (use bip6:VMAC)"),
                )),
            },
            Link::Sc(node) => match to.sc_vmac() {
                Some(vmac) => node.send(vmac, npdu.to_vec()).await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{to} is not a BACnet/SC node (use sc:VMAC)"),
                )),
            },
            Link::Ethernet(e) => match to.ethernet_mac() {
                Some(mac) => e.send_unicast(mac, npdu).await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{to} is not a BACnet Ethernet station (use eth:MAC)"),
                )),
            },
            Link::Mstp(m) => {
                let Some(mac) = to.mstp_mac() else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("{to} is not an MS/TP station"),
                    ));
                };
                if expecting_reply {
                    m.send(mac, npdu.to_vec(), true).map_err(mstp::send_error)
                } else {
                    m.reply(mac, npdu.to_vec()).map_err(mstp::send_error)
                }
            }
        }
    }
}

pub(crate) struct Actor {
    pub tsm: ClientTsm<DeviceAddress>,
    pub link: Link,
    pub commands: mpsc::Receiver<Command>,
    pub received: mpsc::Receiver<Received>,
    pub unconfirmed: broadcast::Sender<UnconfirmedReceived>,
    pub cov: broadcast::Sender<super::CovNotificationReceived>,
    pub events: broadcast::Sender<super::EventNotificationReceived>,
    pub waiting: HashMap<TransactionId, oneshot::Sender<Result<Outcome, super::ClientError>>>,
    /// What each device said of itself in its I-Am (Max-APDU, segmentation),
    /// to segment requests it can take; bounded, oldest forgotten first.
    pub peer_limits: PeerLimitCache,
    pub epoch: Instant,
}

/// Limits learned from I-Am, at most [`PeerLimitCache::CAPACITY`] devices.
#[derive(Debug, Default)]
pub(crate) struct PeerLimitCache {
    limits: HashMap<DeviceAddress, PeerLimits>,
    order: std::collections::VecDeque<DeviceAddress>,
}

impl PeerLimitCache {
    const CAPACITY: usize = 4096;

    fn learn(&mut self, peer: DeviceAddress, limits: PeerLimits) {
        if self.limits.insert(peer.clone(), limits).is_none() {
            self.order.push_back(peer);
            if self.order.len() > Self::CAPACITY
                && let Some(old) = self.order.pop_front()
            {
                self.limits.remove(&old);
            }
        }
    }

    fn get(&self, peer: &DeviceAddress) -> PeerLimits {
        self.limits.get(peer).copied().unwrap_or_default()
    }
}

impl Actor {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    pub async fn run(mut self) {
        let mut sweep = tokio::time::interval(Duration::from_secs(1));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let shut_down = loop {
            let deadline = self.tsm.poll_timeout().map(|d| self.epoch + d);
            tokio::select! {
                cmd = self.commands.recv() => match cmd {
                    Some(Command::Shutdown { done }) => break Some(done),
                    Some(c) => self.on_command(c).await,
                    None => break None,
                },
                r = self.received.recv() => match r {
                    Some(r) => self.on_received(r).await,
                    None => break None,
                },
                _ = sleep_until(deadline) => {
                    let now = self.now();
                    self.tsm.handle_timeout(now);
                }
                _ = sweep.tick() => self.forget_abandoned(),
            }
            self.flush().await;
        };
        // Waiting callers get `Closed` as their reply senders drop, and the
        // driver sees its receiver gone.
        drop(self);
        if let Some(done) = shut_down {
            let _ = done.send(());
        }
    }

    /// Callers that dropped their future no longer want an answer: stop the
    /// transaction so it frees its slot and sends no more retries.
    fn forget_abandoned(&mut self) {
        let now = self.now();
        let abandoned: Vec<TransactionId> =
            self.waiting.iter().filter(|(_, tx)| tx.is_closed()).map(|(id, _)| *id).collect();
        for id in abandoned {
            self.waiting.remove(&id);
            self.tsm.cancel(now, id);
        }
    }

    async fn on_command(&mut self, c: Command) {
        match c {
            Command::Confirmed { peer, service, body, reply } => {
                let now = self.now();
                let limits = self.peer_limits.get(&peer);
                match self.tsm.start_with(now, peer, service, body, limits) {
                    Ok(id) => {
                        self.waiting.insert(id, reply);
                    }
                    Err(StartError::QueueFull) => {
                        let _ = reply.send(Err(super::ClientError::QueueFull));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(super::ClientError::TooLong(e)));
                    }
                }
            }
            Command::Unconfirmed { to, service, body, done } => {
                let mut apdu = Vec::with_capacity(2 + body.len());
                Apdu::UnconfirmedRequest { service, body: &body }.encode(&mut apdu);
                let _ = done.send(self.send_unconfirmed(&to, &apdu).await);
            }
            Command::Shutdown { .. } => unreachable!("run() ends on Shutdown"),
        }
    }

    async fn send_unconfirmed(&self, to: &Destination, apdu: &[u8]) -> std::io::Result<()> {
        let mut npdu = Vec::with_capacity(apdu.len() + 8);
        match to {
            Destination::LocalBroadcast => {
                encode_npdu(&Npdu::local_apdu(apdu, false), &mut npdu)?;
                self.link.send_broadcast(&npdu).await
            }
            Destination::GlobalBroadcast => {
                let mut n = Npdu::local_apdu(apdu, false);
                n.destination = Some(NetAddress { net: bacnet::npdu::GLOBAL_NETWORK, mac: &[] });
                n.hop_count = DEFAULT_HOP_COUNT;
                encode_npdu(&n, &mut npdu)?;
                self.link.send_broadcast(&npdu).await
            }
            Destination::Device(d) => {
                encode_for(d, apdu, false, &mut npdu)?;
                self.link.send_unicast(d, &npdu, false).await
            }
        }
    }

    async fn on_received(&mut self, r: Received) {
        let npdu = match Npdu::decode(&r.npdu) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(from = %r.source, error = %e, "dropped malformed NPDU");
                return;
            }
        };
        let apdu_bytes = match npdu.payload {
            NpduPayload::Apdu(bytes) => bytes,
            NpduPayload::Message(bacnet::npdu::NetworkMessage::RejectMessageToNetwork { reason, net }) => {
                self.fail_rejected(&r.source, net, reason);
                return;
            }
            // Other network-layer messages are the router's business.
            NpduPayload::Message(_) => return,
        };
        if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
            return; // addressed to a remote network: we are not a router
        }
        let source = DeviceAddress {
            link: r.source,
            remote: npdu.source.map(|s| RemoteStation { net: s.net, mac: s.mac.to_vec() }),
        };
        let apdu = match Apdu::decode(apdu_bytes) {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(from = %source, error = %e, "dropped malformed APDU");
                return;
            }
        };
        match apdu {
            Apdu::UnconfirmedRequest { service, body } => {
                if service == UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION
                    && let Ok(notification) = COVNotification::decode(body)
                {
                    let _ = self.cov.send(super::CovNotificationReceived {
                        source: source.clone(),
                        confirmed: false,
                        notification,
                        multiple: false,
                    });
                }
                if service == UnconfirmedServiceChoice::UNCONFIRMED_EVENT_NOTIFICATION
                    && let Ok(notification) = EventNotification::decode(body)
                {
                    let _ = self.events.send(super::EventNotificationReceived {
                        source: source.clone(),
                        confirmed: false,
                        notification,
                    });
                }
                if service == UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION_MULTIPLE
                    && let Ok(multiple) = COVNotificationMultiple::decode(body)
                {
                    self.deliver_multiple(&source, false, multiple);
                }
                if service == UnconfirmedServiceChoice::I_AM
                    && let Ok(i_am) = IAm::decode(body)
                {
                    let segmented_receive = matches!(
                        i_am.segmentation_supported,
                        bacnet::Segmentation::SEGMENTED_BOTH | bacnet::Segmentation::SEGMENTED_RECEIVE
                    );
                    let limits = PeerLimits {
                        max_apdu: i_am.max_apdu_length_accepted as usize,
                        segmented_receive,
                        max_segments: None,
                    };
                    self.peer_limits.learn(source.clone(), limits);
                }
                let _ = self.unconfirmed.send(UnconfirmedReceived { source, service, body: body.to_vec() });
            }
            Apdu::ConfirmedRequest(_) if r.broadcast => {} // never answer a broadcast confirmed request
            Apdu::ConfirmedRequest(c) => {
                // This node serves no objects: it takes COV and event
                // notifications and refuses every other confirmed service.
                let mut out = Vec::with_capacity(3);
                let notification = (c.segment.is_none()
                    && c.service == ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION)
                    .then(|| COVNotification::decode(c.body));
                let multiple = (c.segment.is_none()
                    && c.service == ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION_MULTIPLE)
                    .then(|| COVNotificationMultiple::decode(c.body));
                let event = (c.segment.is_none() && c.service == ConfirmedServiceChoice::CONFIRMED_EVENT_NOTIFICATION)
                    .then(|| EventNotification::decode(c.body));
                if let Some(decoded) = event {
                    match decoded {
                        Ok(notification) => {
                            Apdu::SimpleAck { invoke_id: c.invoke_id, service: c.service }.encode(&mut out);
                            let _ = self.events.send(super::EventNotificationReceived {
                                source: source.clone(),
                                confirmed: true,
                                notification,
                            });
                        }
                        Err(e) => Apdu::Reject { invoke_id: c.invoke_id, reason: e.reject_reason() }.encode(&mut out),
                    }
                } else if let Some(decoded) = multiple {
                    match decoded {
                        Ok(multiple) => {
                            Apdu::SimpleAck { invoke_id: c.invoke_id, service: c.service }.encode(&mut out);
                            self.deliver_multiple(&source, true, multiple);
                        }
                        Err(e) => Apdu::Reject { invoke_id: c.invoke_id, reason: e.reject_reason() }.encode(&mut out),
                    }
                } else if let Some(decoded) = notification {
                    match decoded {
                        Ok(notification) => {
                            Apdu::SimpleAck { invoke_id: c.invoke_id, service: c.service }.encode(&mut out);
                            let _ = self.cov.send(super::CovNotificationReceived {
                                source: source.clone(),
                                confirmed: true,
                                notification,
                                multiple: false,
                            });
                        }
                        Err(e) => Apdu::Reject { invoke_id: c.invoke_id, reason: e.reject_reason() }.encode(&mut out),
                    }
                } else if c.segment.is_some() {
                    Apdu::Abort {
                        server: true,
                        invoke_id: c.invoke_id,
                        reason: AbortReason::SEGMENTATION_NOT_SUPPORTED,
                    }
                    .encode(&mut out);
                } else {
                    Apdu::Reject { invoke_id: c.invoke_id, reason: RejectReason::UNRECOGNIZED_SERVICE }
                        .encode(&mut out);
                }
                let mut npdu = Vec::with_capacity(16);
                if encode_for(&source, &out, false, &mut npdu).is_ok() {
                    let _ = self.link.send_unicast(&source, &npdu, false).await;
                }
            }
            other => {
                let now = self.now();
                if !self.tsm.handle_apdu(now, &source, &other) {
                    tracing::debug!(from = %source, invoke_id = ?other.invoke_id(), "answer to no transaction of ours");
                }
            }
        }
    }

    /// Hand each object of a COVNotificationMultiple to the listeners.
    fn deliver_multiple(&self, source: &DeviceAddress, confirmed: bool, multiple: COVNotificationMultiple) {
        for notification in super::cov::split_multiple(multiple) {
            let _ = self.cov.send(super::CovNotificationReceived {
                source: source.clone(),
                confirmed,
                notification,
                multiple: true,
            });
        }
    }

    /// A router (at `router`) refuses to reach network `net`: every request
    /// waiting for a device on it through that router ends with the reason,
    /// instead of running into its timeout.
    fn fail_rejected(&mut self, router: &LinkAddress, net: u16, reason: bacnet::enums::RejectMessageReason) {
        let now = self.now();
        let ids = self.tsm.transactions_to(|peer: &DeviceAddress| {
            peer.link == *router && peer.remote.as_ref().is_some_and(|remote| remote.net == net)
        });
        tracing::debug!(%router, net, %reason, requests = ids.len(), "Reject-Message-To-Network");
        for id in ids {
            self.tsm.cancel(now, id);
            if let Some(reply) = self.waiting.remove(&id) {
                let _ =
                    reply.send(Err(super::ClientError::NetworkRejected { router: router.to_string(), net, reason }));
            }
        }
    }

    async fn flush(&mut self) {
        while let Some(t) = self.tsm.poll_transmit() {
            let mut npdu = Vec::with_capacity(t.apdu.len() + 8);
            if let Err(e) = encode_for(&t.peer, &t.apdu, t.expecting_reply, &mut npdu) {
                tracing::warn!(peer = %t.peer, error = %e, "cannot encode NPDU");
                continue;
            }
            if let Err(e) = self.link.send_unicast(&t.peer, &npdu, t.expecting_reply).await {
                tracing::warn!(peer = %t.peer, error = %e, "send failed");
                // Retrying cannot fix an unreachable address: fail now, with the reason.
                if let Some(id) = t.transaction
                    && !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted)
                {
                    let now = self.now();
                    self.tsm.cancel(now, id);
                    if let Some(reply) = self.waiting.remove(&id) {
                        let _ = reply.send(Err(super::ClientError::Io(e)));
                    }
                }
            }
        }
        while let Some(done) = self.tsm.poll_event() {
            if let Some(reply) = self.waiting.remove(&done.id) {
                let _ = reply.send(Ok(done.outcome));
            }
        }
    }
}

fn encode_npdu(n: &Npdu<'_>, out: &mut Vec<u8>) -> std::io::Result<()> {
    n.encode(out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

fn encode_for(d: &DeviceAddress, apdu: &[u8], expecting_reply: bool, out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut n = Npdu::local_apdu(apdu, expecting_reply);
    if let Some(r) = &d.remote {
        n.destination = Some(NetAddress { net: r.net, mac: &r.mac });
        n.hop_count = DEFAULT_HOP_COUNT;
    }
    encode_npdu(&n, out)
}

/// How long the client waits for an unknown VMAC's Address-Resolution-ACK
/// before it gives up on the NPDU.
const BIP6_RESOLVE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Send to a VMAC. One not heard from yet is asked for on the multicast
/// group (Address-Resolution) and the NPDU goes, from a task of its own,
/// once the port's driver has learned it (within [`BIP6_RESOLVE_WAIT`]);
/// the actor does not wait, and a request whose NPDU never went is retried
/// or timed out by the TSM like any lost one.
async fn send_bip6(port: &trellis_bip6::Bip6Handle, vmac: [u8; 3], npdu: &[u8]) -> std::io::Result<()> {
    match port.send_unicast(vmac, npdu).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (port, npdu) = (port.clone(), npdu.to_vec());
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + BIP6_RESOLVE_WAIT;
                while tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    if port.address_of(vmac).is_some() {
                        if let Err(e) = port.send_unicast(vmac, &npdu).await {
                            tracing::warn!(error = %e, "send failed after the VMAC was resolved");
                        }
                        return;
                    }
                }
                tracing::warn!("{e}; no answer within {BIP6_RESOLVE_WAIT:?}");
            });
            Ok(())
        }
        sent => sent,
    }
}
