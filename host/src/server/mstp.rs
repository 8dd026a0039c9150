//! One served device on one MS/TP port: the same task as the B/IP
//! endpoint ([`super::serve`]) — a server transaction state machine with
//! its admission control and segmentation, each admitted request executed
//! on its own task, unconfirmed requests answered, COV notifications sent,
//! DeviceCommunicationControl obeyed — over an MS/TP driver thread.
//!
//! ```text
//! driver thread ─std channel─▶ bridge thread ─tokio channel─▶ endpoint task ─▶ ServerTsm / Server::handle
//! endpoint task ─▶ MstpSender::reply (an answer: within Treply_delay, or after Reply Postponed at the next token)
//!               └▶ MstpSender::send (I-Am and other broadcasts to MAC 255, our ConfirmedCOVNotifications)
//! ```
//!
//! Peers are [`DeviceAddress::mstp`] addresses (the MAC, plus the remote
//! station when the NPDU came through a router), so the server, its
//! transaction state machine and its COV table are the B/IP endpoint's.
//!
//! Must never: block the runtime on the driver's channel (a thread of its
//! own waits on it), answer a broadcast confirmed request, or send to
//! anyone but the requester.

use super::cov::{ConfirmedOut, NotificationSink, run_notifier};
use super::dispatch::{AnswerRoom, Server};
use super::endpoint::{AbortOnDrop, CONFIRMED_QUEUE, MAX_CONCURRENT_UNCONFIRMED, sleep_until};
use crate::client::{DeviceAddress, RemoteStation};
use crate::model::ObjectModel;
use bacnet::apdu::Apdu;
use bacnet::enums::{ConfirmedServiceChoice, NetworkPriority, UnconfirmedServiceChoice};
use bacnet::npdu::{DEFAULT_HOP_COUNT, NetAddress, Npdu, NpduPayload};
use bacnet::tsm::{ClientTsm, Indication, Outcome, Response, ServerTsm, TransactionKey, TsmConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use trellis_mstp::{MstpConfig, MstpSender, Received};

/// The MS/TP broadcast address.
const BROADCAST_MAC: u8 = 255;

/// NPDUs waiting between the bridge thread and the endpoint task.
const RECEIVED_QUEUE: usize = 1024;

/// Serve `server` on the MS/TP port `port` names until the port stops or
/// the future is dropped (which shuts the port's driver thread down).
/// Pass an `Arc` to keep a handle on the server while it serves.
pub async fn serve_mstp<M: ObjectModel>(port: MstpConfig, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let (handle, driver) = trellis_mstp::bind(port)?;
    let name = driver.name().to_string();
    driver.spawn()?;
    let (sender, from_driver) = handle.into_parts();
    let _stop_driver = ShutdownOnDrop(sender.clone());
    tracing::info!(port = %name, mac = sender.mac(), device = %server.device_id(), "serving BACnet MS/TP");
    let (tx, received) = mpsc::channel(RECEIVED_QUEUE);
    bridge(from_driver, tx, |r| r);
    send_i_am(&sender, &server);
    let config = server.config();
    let tsm = ServerTsm::new(config.tsm_config());
    let client = ClientTsm::new(TsmConfig {
        apdu_timeout: Duration::from_millis(config.apdu_timeout_ms as u64),
        retries: config.apdu_retries,
        ..TsmConfig::default()
    });
    let (done_tx, done) = mpsc::unbounded_channel();
    let (confirmed_tx, confirmed) = mpsc::channel(CONFIRMED_QUEUE);
    let notifier =
        tokio::spawn(run_notifier(server.clone(), MstpSink { sender: sender.clone(), confirmed: confirmed_tx }));
    let _stop_notifier = AbortOnDrop(notifier);
    let endpoint = Endpoint {
        server,
        sender,
        tsm,
        client,
        confirmed,
        received,
        done,
        done_tx,
        priorities: HashMap::new(),
        unconfirmed: Arc::new(Semaphore::new(MAX_CONCURRENT_UNCONFIRMED)),
        epoch: Instant::now(),
    };
    endpoint.run().await;
    Ok(())
}

/// Carry what the driver thread hands up into the runtime: a thread of its
/// own waits on the driver's `std` channel, so no runtime thread ever
/// blocks on it. The thread ends when the driver stops (its channel
/// closes) or the runtime side is gone.
pub(crate) fn bridge<T: Send + 'static>(
    received: std::sync::mpsc::Receiver<Received>,
    to: mpsc::Sender<T>,
    convert: impl Fn(Received) -> T + Send + 'static,
) {
    let spawned = std::thread::Builder::new().name("mstp rx".into()).spawn(move || {
        while let Ok(r) = received.recv() {
            if to.blocking_send(convert(r)).is_err() {
                return;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the MS/TP receive thread");
    }
}

/// Stops the port's driver when dropped.
struct ShutdownOnDrop(MstpSender);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

/// Where the COV notifier's notifications go out.
struct MstpSink {
    sender: MstpSender,
    confirmed: mpsc::Sender<ConfirmedOut>,
}

impl NotificationSink for MstpSink {
    async fn unconfirmed(&self, to: &DeviceAddress, body: Vec<u8>) -> std::io::Result<()> {
        let mut apdu = Vec::with_capacity(body.len() + 2);
        Apdu::UnconfirmedRequest { service: UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION, body: &body }
            .encode(&mut apdu);
        send_npdu(&self.sender, to, &apdu, NetworkPriority::NORMAL, Frame::Data)
    }

    fn confirmed(&self, to: DeviceAddress, body: Vec<u8>) -> bool {
        self.confirmed.try_send((to, body)).is_ok()
    }
}

struct Endpoint<M> {
    server: Arc<Server<M>>,
    sender: MstpSender,
    tsm: ServerTsm<DeviceAddress>,
    /// Our own confirmed requests: ConfirmedCOVNotifications.
    client: ClientTsm<DeviceAddress>,
    confirmed: mpsc::Receiver<ConfirmedOut>,
    received: mpsc::Receiver<Received>,
    /// Answers from request tasks (at most one per admitted transaction).
    done: mpsc::UnboundedReceiver<(TransactionKey<DeviceAddress>, Response)>,
    done_tx: mpsc::UnboundedSender<(TransactionKey<DeviceAddress>, Response)>,
    /// Network priority of requests not sent at normal priority.
    priorities: HashMap<(DeviceAddress, u8), NetworkPriority>,
    unconfirmed: Arc<Semaphore>,
    epoch: Instant,
}

impl<M: ObjectModel> Endpoint<M> {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    async fn run(mut self) {
        loop {
            let next = [self.tsm.poll_timeout(), self.client.poll_timeout()].into_iter().flatten().min();
            let deadline = next.map(|d| self.epoch + d);
            tokio::select! {
                Some((to, body)) = self.confirmed.recv() => {
                    let now = self.now();
                    let service = ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION;
                    if self.client.start(now, to, service, body).is_err() {
                        self.server.cov().stats.confirmed_failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                r = self.received.recv() => match r {
                    Some(r) => self.on_npdu(r),
                    None => return,
                },
                Some((key, response)) = self.done.recv() => {
                    let now = self.now();
                    self.tsm.respond(now, &key, response);
                    self.flush();
                    let server = self.server.clone();
                    tokio::spawn(async move { server.perform_pending_restart().await });
                }
                _ = sleep_until(deadline) => {
                    let now = self.now();
                    self.tsm.handle_timeout(now);
                    self.client.handle_timeout(now);
                }
            }
            self.flush();
            self.publish_counters();
        }
    }

    fn publish_counters(&self) {
        let c = self.tsm.counters();
        let stats = self.server.stats();
        let before = stats.refused.swap(c.refused, Ordering::Relaxed);
        if c.refused > before && (before == 0 || c.refused.ilog2() > before.ilog2()) {
            tracing::warn!(refused = c.refused, "admission control refusing requests (Abort out-of-resources)");
        }
        stats.store(&c);
    }

    /// A request that gets no answer from us: tell the requester at once
    /// (Reply Postponed) rather than let the driver wait out Treply_delay.
    fn no_answer(&self, r: &Received) {
        if r.expecting_reply {
            let _ = self.sender.reply_postponed(r.source_mac);
        }
    }

    fn on_npdu(&mut self, r: Received) {
        let Ok(npdu) = Npdu::decode(&r.npdu) else {
            tracing::debug!(from = r.source_mac, "dropped malformed NPDU");
            return self.no_answer(&r);
        };
        let NpduPayload::Apdu(apdu) = npdu.payload else { return self.no_answer(&r) };
        if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
            return self.no_answer(&r); // for a remote network: not a router
        }
        let broadcast = r.broadcast || npdu.destination.is_some();
        let mut peer = DeviceAddress::mstp(r.source_mac);
        peer.remote = npdu.source.map(|s| RemoteStation { net: s.net, mac: s.mac.to_vec() });
        let Ok(decoded) = Apdu::decode(apdu) else {
            tracing::debug!(from = %peer, "dropped malformed APDU");
            return self.no_answer(&r);
        };
        let service = match &decoded {
            Apdu::ConfirmedRequest(c) => Some(c.service),
            _ => None,
        };
        let from_requester = matches!(decoded, Apdu::ConfirmedRequest(_) | Apdu::UnconfirmedRequest { .. });
        if from_requester && !self.server.communication().answers(service) {
            return self.no_answer(&r); // DeviceCommunicationControl disable: silence
        }
        match decoded {
            Apdu::UnconfirmedRequest { .. } => {
                self.no_answer(&r);
                self.spawn_unconfirmed(apdu.to_vec(), broadcast, peer, npdu.priority)
            }
            Apdu::ConfirmedRequest(_) if broadcast => {} // never answered (Clause 5.4.5)
            Apdu::ConfirmedRequest(ref c) => {
                if npdu.priority != NetworkPriority::NORMAL {
                    if self.priorities.len() >= 4096 {
                        self.priorities.clear();
                    }
                    self.priorities.insert((peer.clone(), c.invoke_id), npdu.priority);
                }
                let now = self.now();
                if let Some(ind) = self.tsm.handle_apdu(now, &peer, &decoded) {
                    self.spawn_confirmed(ind);
                }
            }
            Apdu::SegmentAck { server: false, .. } | Apdu::Abort { server: false, .. } => {
                let now = self.now();
                self.tsm.handle_apdu(now, &peer, &decoded);
            }
            _ => {
                let now = self.now();
                self.client.handle_apdu(now, &peer, &decoded);
            }
        }
    }

    fn spawn_confirmed(&self, ind: Indication<DeviceAddress>) {
        let (server, done) = (self.server.clone(), self.done_tx.clone());
        let config = self.tsm.config();
        let room = AnswerRoom {
            octets: ind.answer_capacity(config),
            segmented: ind.segmented_response_accepted && config.segmentation,
        };
        tokio::spawn(async move {
            let response = server.execute(&ind.key.peer, ind.service, &ind.body, room).await;
            let _ = done.send((ind.key, response));
        });
    }

    fn spawn_unconfirmed(&mut self, apdu: Vec<u8>, broadcast: bool, peer: DeviceAddress, priority: NetworkPriority) {
        let Ok(permit) = self.unconfirmed.clone().try_acquire_owned() else {
            let dropped = self.server.stats().dropped_unconfirmed.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "too many unconfirmed requests at once: dropping");
            }
            return;
        };
        let (server, sender) = (self.server.clone(), self.sender.clone());
        tokio::spawn(async move {
            if let Some(reply) = server.handle(&peer, &apdu, broadcast).await {
                // Every station on the line hears a broadcast.
                let frame = if reply.broadcast && peer.remote.is_none() { Frame::Broadcast } else { Frame::Data };
                let _ = send_npdu(&sender, &peer, &reply.apdu, priority, frame);
            }
            drop(permit);
        });
    }

    fn flush(&mut self) {
        while let Some((peer, apdu)) = self.tsm.poll_transmit() {
            let priority = match Apdu::decode(&apdu) {
                Ok(Apdu::ComplexAck(c)) if c.segment.is_some_and(|s| s.more_follows) => {
                    self.priorities.get(&(peer.clone(), c.invoke_id)).copied()
                }
                Ok(Apdu::SegmentAck { invoke_id, .. }) => self.priorities.get(&(peer.clone(), invoke_id)).copied(),
                Ok(a) => a.invoke_id().and_then(|id| self.priorities.remove(&(peer.clone(), id))),
                Err(_) => None,
            };
            let priority = priority.unwrap_or(NetworkPriority::NORMAL);
            let _ = send_npdu(&self.sender, &peer, &apdu, priority, Frame::Data);
        }
        while let Some(t) = self.client.poll_transmit() {
            let frame = if t.expecting_reply { Frame::DataExpectingReply } else { Frame::Data };
            if send_npdu(&self.sender, &t.peer, &t.apdu, NetworkPriority::NORMAL, frame).is_err()
                && let Some(id) = t.transaction
            {
                let now = self.now();
                if self.client.cancel(now, id) {
                    self.server.cov().stats.confirmed_failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let stats = &self.server.cov().stats;
        while let Some(done) = self.client.poll_event() {
            let counter = match done.outcome {
                Outcome::SimpleAck => &stats.confirmed_acknowledged,
                other => {
                    tracing::warn!(outcome = ?other, "ConfirmedCOVNotification failed after its retries");
                    &stats.confirmed_failed
                }
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// How an NPDU goes on the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// BACnet Data Not Expecting Reply to the peer, through
    /// [`MstpSender::reply`]: the answer to the peer's pending request if
    /// the node still waits for one (sent at once), else queued for our
    /// next token.
    Data,
    /// BACnet Data Expecting Reply (our own confirmed requests).
    DataExpectingReply,
    /// BACnet Data Not Expecting Reply to MAC 255.
    Broadcast,
}

/// Send an APDU to `peer` (through its router when it has one).
fn send_npdu(
    sender: &MstpSender,
    peer: &DeviceAddress,
    apdu: &[u8],
    priority: NetworkPriority,
    frame: Frame,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(apdu.len() + 8);
    let mut n = Npdu::local_apdu(apdu, frame == Frame::DataExpectingReply);
    n.priority = priority;
    if let Some(r) = &peer.remote {
        n.destination = Some(NetAddress { net: r.net, mac: &r.mac });
        n.hop_count = DEFAULT_HOP_COUNT;
    }
    n.encode(&mut out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let sent = match (frame, peer.mstp_mac()) {
        (Frame::Broadcast, _) => sender.send(BROADCAST_MAC, out, false),
        (Frame::DataExpectingReply, Some(mac)) => sender.send(mac, out, true),
        (Frame::Data, Some(mac)) => sender.reply(mac, out),
        (_, None) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{peer} is not an MS/TP station"),
            ));
        }
    }
    .map_err(crate::client::mstp_send_error);
    if let Err(e) = &sent {
        tracing::warn!(to = %peer, error = %e, "MS/TP send failed");
    }
    sent
}

fn send_i_am<M: ObjectModel>(sender: &MstpSender, server: &Server<M>) {
    let mut out = Vec::new();
    if Npdu::local_apdu(&server.i_am_apdu(), false).encode(&mut out).is_ok() {
        let _ = sender.send(BROADCAST_MAC, out, false);
    }
}
