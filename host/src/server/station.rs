//! The datalink-independent half of serving one device on one port: the
//! task that owns the server transaction state machine (admission,
//! segmentation), runs each admitted request on its own task, answers
//! unconfirmed requests, and sends our ConfirmedCOVNotifications through a
//! client state machine. A datalink ([`Link`]) only says how an APDU
//! leaves: B/IP in [`super::endpoint`], MS/TP in [`super::mstp`].
//!
//! ```text
//! NPDU ─▶ Confirmed-Request / Segment-ACK / Abort ─▶ ServerTsm ─▶ Indication ─▶ task: Server::execute
//!     └─▶ Unconfirmed-Request ─▶ task: Server::handle (64 at once, excess dropped and counted)
//! task's Response ─▶ ServerTsm::respond ─▶ APDUs (one, or segments) ─▶ Link
//! COV notifier ─▶ UnconfirmedCOVNotification ─▶ Link
//!              └▶ ConfirmedCOVNotification ─▶ ClientTsm (retries) ─▶ Link; its answer ─▶ counted
//! ```
//!
//! Memory is bounded by the state machine's admission limits: a request
//! beyond them is refused with Abort out-of-resources before any work, so
//! an overloaded device keeps its latency for what it admitted.
//!
//! Must never: block on a request's execution, answer a broadcast confirmed
//! request, answer anything under DeviceCommunicationControl `disable` but
//! DCC and ReinitializeDevice, or send to anyone but the requester.

use super::cov::{ConfirmedOut, NotificationSink, run_notifier};
use super::dispatch::{AnswerRoom, Server};
use crate::client::{DeviceAddress, RemoteStation};
use crate::deadline::sleep_until;
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

/// Unconfirmed requests (Who-Is, Who-Has) answered concurrently; more are
/// dropped, as a device may drop unconfirmed requests it cannot serve.
const MAX_CONCURRENT_UNCONFIRMED: usize = 64;

/// ConfirmedCOVNotifications waiting for the station; more are counted as
/// failed.
const CONFIRMED_QUEUE: usize = 1024;

/// Requests of non-normal network priority remembered, so their answers go
/// at the same priority (Clause 6.2.2).
const MAX_PRIORITIES: usize = 4096;

/// How an APDU leaves on the datalink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// To the peer, not expecting a reply (answers, segments, unconfirmed
    /// notifications).
    Unicast,
    /// To the peer, expecting a reply (our confirmed requests).
    Request,
    /// To every station of the local network.
    Broadcast,
}

/// What a datalink does for a station.
pub(super) trait Link: Clone + Send + Sync + 'static {
    /// Send an NPDU carrying `npdu` to `peer` (or, for
    /// [`Delivery::Broadcast`], to everyone).
    fn send_npdu(
        &self,
        peer: &DeviceAddress,
        npdu: Vec<u8>,
        how: Delivery,
    ) -> impl Future<Output = std::io::Result<()>> + Send;
    /// Whether `peer` hears an answer sent as a local broadcast.
    fn hears_broadcasts(&self, peer: &DeviceAddress) -> bool;
    /// The local broadcast address, as a peer (for logs and the I-Am).
    fn broadcast_address(&self) -> DeviceAddress;
}

/// Encode `apdu` in an NPDU to `peer` (through its router when it has
/// one) and send it.
async fn send<L: Link>(
    link: &L,
    peer: &DeviceAddress,
    apdu: &[u8],
    priority: NetworkPriority,
    how: Delivery,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(apdu.len() + 8);
    let mut n = Npdu::local_apdu(apdu, how == Delivery::Request);
    n.priority = priority;
    if let Some(r) = peer.remote.as_ref().filter(|_| how != Delivery::Broadcast) {
        n.destination = Some(NetAddress { net: r.net, mac: &r.mac });
        n.hop_count = DEFAULT_HOP_COUNT;
    }
    n.encode(&mut out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let sent = link.send_npdu(peer, out, how).await;
    if let Err(e) = &sent {
        tracing::warn!(to = %peer, error = %e, "send failed");
    }
    sent
}

/// Where the COV notifier's notifications go out.
struct LinkSink<L> {
    link: L,
    confirmed: mpsc::Sender<ConfirmedOut>,
}

impl<L: Link> NotificationSink for LinkSink<L> {
    async fn unconfirmed(&self, to: &DeviceAddress, body: Vec<u8>) -> std::io::Result<()> {
        let mut apdu = Vec::with_capacity(body.len() + 2);
        Apdu::UnconfirmedRequest { service: UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION, body: &body }
            .encode(&mut apdu);
        send(&self.link, to, &apdu, NetworkPriority::NORMAL, Delivery::Unicast).await
    }

    fn confirmed(&self, to: DeviceAddress, body: Vec<u8>) -> bool {
        self.confirmed.try_send((to, body)).is_ok()
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One served device on one port.
pub(super) struct Station<M, L> {
    server: Arc<Server<M>>,
    link: L,
    tsm: ServerTsm<DeviceAddress>,
    /// Our own confirmed requests: ConfirmedCOVNotifications.
    client: ClientTsm<DeviceAddress>,
    confirmed: mpsc::Receiver<ConfirmedOut>,
    /// Answers from request tasks. Unbounded, yet bounded in practice: at
    /// most one message per admitted transaction.
    done: mpsc::UnboundedReceiver<(TransactionKey<DeviceAddress>, Response)>,
    done_tx: mpsc::UnboundedSender<(TransactionKey<DeviceAddress>, Response)>,
    priorities: HashMap<(DeviceAddress, u8), NetworkPriority>,
    unconfirmed: Arc<Semaphore>,
    epoch: Instant,
    /// The COV notifier lives as long as the station.
    _notifier: AbortOnDrop,
}

impl<M: ObjectModel, L: Link> Station<M, L> {
    /// A station for `server` on `link`; announces the device with an I-Am
    /// and starts its COV notifier.
    pub(super) async fn start(server: Arc<Server<M>>, link: L) -> Self {
        let everyone = link.broadcast_address();
        let _ = send(&link, &everyone, &server.i_am_apdu(), NetworkPriority::NORMAL, Delivery::Broadcast).await;
        let config = server.config();
        let tsm = ServerTsm::with_origin(config.tsm_config(), DeviceAddress::origin);
        let client = ClientTsm::new(TsmConfig {
            apdu_timeout: Duration::from_millis(config.apdu_timeout_ms as u64),
            retries: config.apdu_retries,
            ..TsmConfig::default()
        });
        let (done_tx, done) = mpsc::unbounded_channel();
        let (confirmed_tx, confirmed) = mpsc::channel(CONFIRMED_QUEUE);
        let notifier =
            tokio::spawn(run_notifier(server.clone(), LinkSink { link: link.clone(), confirmed: confirmed_tx }));
        Station {
            server,
            link,
            tsm,
            client,
            confirmed,
            done,
            done_tx,
            priorities: HashMap::new(),
            unconfirmed: Arc::new(Semaphore::new(MAX_CONCURRENT_UNCONFIRMED)),
            epoch: Instant::now(),
            _notifier: AbortOnDrop(notifier),
        }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Serve until `received` closes; each item goes to `on_received`,
    /// which hands its NPDU to [`Station::on_npdu`].
    pub(super) async fn run<R>(mut self, mut received: mpsc::Receiver<R>, mut on_received: impl FnMut(&mut Self, R)) {
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
                r = received.recv() => match r {
                    Some(r) => on_received(&mut self, r),
                    None => return,
                },
                Some((key, response)) = self.done.recv() => {
                    let now = self.now();
                    self.tsm.respond(now, &key, response);
                    self.flush().await;
                    // An acknowledged ReinitializeDevice restarts the model
                    // now that its SimpleACK has left. (Checked first: a task
                    // per answer cost every request a spawn and a wake-up.)
                    if self.server.restart_pending() {
                        let server = self.server.clone();
                        tokio::spawn(async move { server.perform_pending_restart().await });
                    }
                }
                _ = sleep_until(deadline) => {
                    let now = self.now();
                    self.tsm.handle_timeout(now);
                    self.client.handle_timeout(now);
                }
            }
            self.flush().await;
            self.publish_counters();
        }
    }

    /// Copy the state machine's counters where operators and tests read
    /// them ([`Server::stats`]); warn when admission control starts refusing.
    fn publish_counters(&self) {
        let c = self.tsm.counters();
        let stats = self.server.stats();
        let before = stats.refused.swap(c.refused, Ordering::Relaxed);
        if c.refused > before && (before == 0 || c.refused.ilog2() > before.ilog2()) {
            tracing::warn!(refused = c.refused, "admission control refusing requests (Abort out-of-resources)");
        }
        let before = stats.budget_refused.swap(c.budget_refused, Ordering::Relaxed);
        if c.budget_refused > before && (before == 0 || c.budget_refused.ilog2() > before.ilog2()) {
            tracing::warn!(
                refused = c.budget_refused,
                "a requester drew more segmented answers than limits.answer_octets_per_second allows: \
                 refusing them (Abort out-of-resources); a reflection attack looks like this"
            );
        }
        stats.store(&c);
    }

    /// Handle an NPDU received from `from` (its datalink address), as a
    /// local broadcast or not. Returns true when it was a confirmed request
    /// this device goes on to answer (or is already answering).
    pub(super) fn on_npdu(&mut self, from: DeviceAddress, npdu: &[u8], local_broadcast: bool) -> bool {
        let Ok(npdu) = Npdu::decode(npdu) else {
            tracing::debug!(%from, "dropped malformed NPDU");
            return false;
        };
        let NpduPayload::Apdu(apdu) = npdu.payload else { return false };
        if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
            return false; // for a remote network: not a router
        }
        // A global broadcast (DNET 65535) is a broadcast however it arrived.
        let broadcast = local_broadcast || npdu.destination.is_some();
        let peer =
            DeviceAddress { remote: npdu.source.map(|s| RemoteStation { net: s.net, mac: s.mac.to_vec() }), ..from };
        let Ok(decoded) = Apdu::decode(apdu) else {
            tracing::debug!(from = %peer, "dropped malformed APDU");
            return false;
        };
        let service = match &decoded {
            Apdu::ConfirmedRequest(c) => Some(c.service),
            _ => None,
        };
        let from_requester = matches!(decoded, Apdu::ConfirmedRequest(_) | Apdu::UnconfirmedRequest { .. });
        if from_requester && !self.server.communication().answers(service) {
            return false; // DeviceCommunicationControl disable: silence
        }
        let now = self.now();
        match decoded {
            Apdu::UnconfirmedRequest { .. } => {
                self.spawn_unconfirmed(apdu.to_vec(), broadcast, peer, npdu.priority);
                false
            }
            Apdu::ConfirmedRequest(_) if broadcast => false, // never answered (Clause 5.4.5)
            Apdu::ConfirmedRequest(ref c) => {
                if npdu.priority != NetworkPriority::NORMAL {
                    if self.priorities.len() >= MAX_PRIORITIES {
                        self.priorities.clear(); // bounded; only costs the priority of a few answers
                    }
                    self.priorities.insert((peer.clone(), c.invoke_id), npdu.priority);
                }
                if let Some(ind) = self.tsm.handle_apdu(now, &peer, &decoded) {
                    self.spawn_confirmed(ind);
                }
                true
            }
            // From a client of this device.
            Apdu::SegmentAck { server: false, .. } | Apdu::Abort { server: false, .. } => {
                self.tsm.handle_apdu(now, &peer, &decoded);
                false
            }
            // Answers to our ConfirmedCOVNotifications.
            _ => {
                self.client.handle_apdu(now, &peer, &decoded);
                false
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
        let (server, link) = (self.server.clone(), self.link.clone());
        tokio::spawn(async move {
            if let Some(reply) = server.handle(&peer, &apdu, broadcast).await {
                let how = if reply.broadcast && peer.remote.is_none() && link.hears_broadcasts(&peer) {
                    Delivery::Broadcast
                } else {
                    Delivery::Unicast
                };
                let _ = send(&link, &peer, &reply.apdu, priority, how).await;
            }
            drop(permit);
        });
    }

    /// The network priority an APDU to `peer` goes at, when its request
    /// came at another than normal: kept while segments follow, forgotten
    /// with the transaction's last APDU.
    fn remembered_priority(&mut self, peer: &DeviceAddress, apdu: &[u8]) -> Option<NetworkPriority> {
        let key = |invoke_id: u8| (peer.clone(), invoke_id);
        match Apdu::decode(apdu) {
            // A segment with more to follow: the transaction goes on.
            Ok(Apdu::ComplexAck(c)) if c.segment.is_some_and(|s| s.more_follows) => {
                self.priorities.get(&key(c.invoke_id)).copied()
            }
            Ok(Apdu::SegmentAck { invoke_id, .. }) => self.priorities.get(&key(invoke_id)).copied(),
            Ok(a) => a.invoke_id().and_then(|id| self.priorities.remove(&key(id))),
            Err(_) => None,
        }
    }

    async fn flush(&mut self) {
        while let Some((peer, apdu)) = self.tsm.poll_transmit() {
            // Nearly every request comes at normal priority: only look into
            // the APDU when one did not.
            let priority = if self.priorities.is_empty() { None } else { self.remembered_priority(&peer, &apdu) };
            let priority = priority.unwrap_or(NetworkPriority::NORMAL);
            let _ = send(&self.link, &peer, &apdu, priority, Delivery::Unicast).await;
        }
        while let Some(t) = self.client.poll_transmit() {
            let how = if t.expecting_reply { Delivery::Request } else { Delivery::Unicast };
            if send(&self.link, &t.peer, &t.apdu, NetworkPriority::NORMAL, how).await.is_err()
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
