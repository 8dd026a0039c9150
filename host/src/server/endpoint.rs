//! One served device on one B/IP port: the task that owns the server
//! transaction state machine, feeds it datagrams and timers, runs each
//! admitted request on its own task, and sends what the machine asks for.
//!
//! ```text
//! datagram ─▶ NPDU ─▶ Confirmed-Request / Segment-ACK / Abort ─▶ ServerTsm ─▶ Indication ─▶ task: Server::execute
//!                 └─▶ Unconfirmed-Request ─▶ task: Server::handle (bounded, excess dropped and counted)
//! task's Response ─▶ ServerTsm::respond ─▶ APDUs (one, or segments) ─▶ NPDU ─▶ datagram
//! COV notifier ─▶ UnconfirmedCOVNotification ─▶ datagram
//!              └▶ ConfirmedCOVNotification ─▶ ClientTsm (retries) ─▶ datagram; its answer ─▶ counted
//! ```
//!
//! Memory is bounded by the state machine's admission limits: a request
//! beyond them is refused with Abort out-of-resources before any work, so
//! an overloaded device keeps its latency for what it admitted.
//!
//! Must never: block on a request's execution (every one runs on its own
//! task), answer a broadcast confirmed request, or send to anyone but the
//! requester.

use super::cov::{ConfirmedOut, NotificationSink, run_notifier};
use super::dispatch::{AnswerRoom, Server};
use crate::client::{DeviceAddress, RemoteStation};
use crate::model::ObjectModel;
use bacnet::apdu::Apdu;
use bacnet::enums::NetworkPriority;
use bacnet::enums::{ConfirmedServiceChoice, UnconfirmedServiceChoice};
use bacnet::npdu::{DEFAULT_HOP_COUNT, NetAddress, Npdu, NpduPayload};
use bacnet::tsm::{ClientTsm, Indication, Outcome, Response, ServerTsm, TransactionKey, TsmConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use trellis_bip::{BipConfig, BipHandle, Received};

/// Unconfirmed requests (Who-Is, Who-Has) answered concurrently; more are
/// dropped, as a device may drop unconfirmed requests it cannot serve.
pub(super) const MAX_CONCURRENT_UNCONFIRMED: usize = 64;

/// Serve `server` on a B/IP port until the port fails or the future is
/// dropped. Pass an `Arc` to keep a handle on the server (its COV counters,
/// say) while it serves.
pub async fn serve<M: ObjectModel>(bip: BipConfig, server: impl Into<Arc<Server<M>>>) -> anyhow::Result<()> {
    let server = server.into();
    let (handle, driver) = trellis_bip::bind(&bip)?;
    tracing::info!(address = %handle.local_addr(), device = %server.device_id(), "serving BACnet/IP");
    let (tx, received) = mpsc::channel(1024);
    tokio::spawn(driver.run(tx));
    send_i_am(&handle, &server).await;
    let tsm = ServerTsm::new(server.config().tsm_config());
    let config = server.config();
    let client = ClientTsm::new(TsmConfig {
        apdu_timeout: Duration::from_millis(config.apdu_timeout_ms as u64),
        retries: config.apdu_retries,
        ..TsmConfig::default()
    });
    let (done_tx, done) = mpsc::unbounded_channel();
    let (confirmed_tx, confirmed) = mpsc::channel(CONFIRMED_QUEUE);
    let notifier =
        tokio::spawn(run_notifier(server.clone(), BipSink { handle: handle.clone(), confirmed: confirmed_tx }));
    // The notifier lives as long as this device is served.
    let _stop_notifier = AbortOnDrop(notifier);
    let endpoint = Endpoint {
        server,
        handle,
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

/// ConfirmedCOVNotifications waiting for the endpoint; more are counted as
/// failed.
pub(super) const CONFIRMED_QUEUE: usize = 1024;

/// Where the COV notifier's notifications go out.
struct BipSink {
    handle: BipHandle,
    confirmed: mpsc::Sender<ConfirmedOut>,
}

impl NotificationSink for BipSink {
    async fn unconfirmed(&self, to: &DeviceAddress, body: Vec<u8>) -> std::io::Result<()> {
        let mut apdu = Vec::with_capacity(body.len() + 2);
        Apdu::UnconfirmedRequest { service: UnconfirmedServiceChoice::UNCONFIRMED_COV_NOTIFICATION, body: &body }
            .encode(&mut apdu);
        send_npdu(&self.handle, to, &apdu, NetworkPriority::NORMAL, false, false).await
    }

    fn confirmed(&self, to: DeviceAddress, body: Vec<u8>) -> bool {
        self.confirmed.try_send((to, body)).is_ok()
    }
}

/// Aborts a task when dropped.
pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Endpoint<M> {
    server: Arc<Server<M>>,
    handle: BipHandle,
    tsm: ServerTsm<DeviceAddress>,
    /// Our own confirmed requests: ConfirmedCOVNotifications.
    client: ClientTsm<DeviceAddress>,
    confirmed: mpsc::Receiver<ConfirmedOut>,
    received: mpsc::Receiver<Received>,
    /// Answers from request tasks. Unbounded, yet bounded in practice: at
    /// most one message per admitted transaction.
    done: mpsc::UnboundedReceiver<(TransactionKey<DeviceAddress>, Response)>,
    done_tx: mpsc::UnboundedSender<(TransactionKey<DeviceAddress>, Response)>,
    /// Network priority of requests not sent at normal priority, so the
    /// answer goes at the request's priority (Clause 6.2.2).
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
                        self.server.cov().stats.confirmed_failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                r = self.received.recv() => match r {
                    Some(r) => self.on_datagram(r),
                    None => return,
                },
                Some((key, response)) = self.done.recv() => {
                    let now = self.now();
                    self.tsm.respond(now, &key, response);
                    self.flush().await;
                    // An acknowledged ReinitializeDevice restarts the model
                    // now that its SimpleACK has left.
                    let server = self.server.clone();
                    tokio::spawn(async move { server.perform_pending_restart().await });
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
        let before = stats.refused.swap(c.refused, std::sync::atomic::Ordering::Relaxed);
        if c.refused > before && (before == 0 || c.refused.ilog2() > before.ilog2()) {
            tracing::warn!(refused = c.refused, "admission control refusing requests (Abort out-of-resources)");
        }
        stats.store(&c);
    }

    fn on_datagram(&mut self, r: Received) {
        let Ok(npdu) = Npdu::decode(&r.npdu) else {
            tracing::debug!(from = %r.source, "dropped malformed NPDU");
            return;
        };
        let NpduPayload::Apdu(apdu) = npdu.payload else { return };
        if npdu.destination.is_some_and(|d| d.net != bacnet::npdu::GLOBAL_NETWORK) {
            return; // for a remote network: not a router
        }
        // A global broadcast (DNET 65535) is a broadcast however it arrived.
        let broadcast = r.broadcast || npdu.destination.is_some();
        let peer = DeviceAddress {
            link: r.source,
            remote: npdu.source.map(|s| RemoteStation { net: s.net, mac: s.mac.to_vec() }),
        };
        let Ok(decoded) = Apdu::decode(apdu) else {
            tracing::debug!(from = %peer, "dropped malformed APDU");
            return;
        };
        let service = match &decoded {
            Apdu::ConfirmedRequest(c) => Some(c.service),
            _ => None,
        };
        let from_requester = matches!(decoded, Apdu::ConfirmedRequest(_) | Apdu::UnconfirmedRequest { .. });
        if from_requester && !self.server.communication().answers(service) {
            return; // DeviceCommunicationControl disable: silence
        }
        match decoded {
            Apdu::UnconfirmedRequest { .. } => self.spawn_unconfirmed(apdu.to_vec(), broadcast, peer, npdu.priority),
            Apdu::ConfirmedRequest(_) if broadcast => {} // never answered (Clause 5.4.5)
            Apdu::ConfirmedRequest(ref c) => {
                if npdu.priority != NetworkPriority::NORMAL {
                    if self.priorities.len() >= 4096 {
                        self.priorities.clear(); // bounded; only costs the priority of a few answers
                    }
                    self.priorities.insert((peer.clone(), c.invoke_id), npdu.priority);
                }
                let now = self.now();
                if let Some(ind) = self.tsm.handle_apdu(now, &peer, &decoded) {
                    self.spawn_confirmed(ind);
                }
            }
            // From a client of this device.
            Apdu::SegmentAck { server: false, .. } | Apdu::Abort { server: false, .. } => {
                let now = self.now();
                self.tsm.handle_apdu(now, &peer, &decoded);
            }
            // Answers to our ConfirmedCOVNotifications.
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
            let dropped =
                self.server.stats().dropped_unconfirmed.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "too many unconfirmed requests at once: dropping");
            }
            return;
        };
        let (server, handle) = (self.server.clone(), self.handle.clone());
        tokio::spawn(async move {
            if let Some(reply) = server.handle(&peer, &apdu, broadcast).await {
                // A requester on another UDP port cannot hear our broadcasts
                // (on loopback every process has its own port): answer it directly.
                let reachable_by_broadcast = peer.link.port() == handle.local_addr().port();
                let broadcast = reply.broadcast && peer.remote.is_none() && reachable_by_broadcast;
                let _ = send_npdu(&handle, &peer, &reply.apdu, priority, false, broadcast).await;
            }
            drop(permit);
        });
    }

    async fn flush(&mut self) {
        while let Some((peer, apdu)) = self.tsm.poll_transmit() {
            let priority = match Apdu::decode(&apdu) {
                // A segment with more to follow: the transaction goes on.
                Ok(Apdu::ComplexAck(c)) if c.segment.is_some_and(|s| s.more_follows) => {
                    self.priorities.get(&(peer.clone(), c.invoke_id)).copied()
                }
                Ok(Apdu::SegmentAck { invoke_id, .. }) => self.priorities.get(&(peer.clone(), invoke_id)).copied(),
                Ok(a) => a.invoke_id().and_then(|id| self.priorities.remove(&(peer.clone(), id))),
                Err(_) => None,
            };
            let priority = priority.unwrap_or(NetworkPriority::NORMAL);
            let _ = send_npdu(&self.handle, &peer, &apdu, priority, false, false).await;
        }
        while let Some(t) = self.client.poll_transmit() {
            if send_npdu(&self.handle, &t.peer, &t.apdu, NetworkPriority::NORMAL, t.expecting_reply, false)
                .await
                .is_err()
                && let Some(id) = t.transaction
            {
                let now = self.now();
                if self.client.cancel(now, id) {
                    self.server.cov().stats.confirmed_failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Send an APDU to `peer` (through its router when it has one).
async fn send_npdu(
    handle: &BipHandle,
    peer: &DeviceAddress,
    apdu: &[u8],
    priority: NetworkPriority,
    expecting_reply: bool,
    broadcast: bool,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(apdu.len() + 8);
    let mut n = Npdu::local_apdu(apdu, expecting_reply);
    n.priority = priority;
    if let Some(r) = &peer.remote {
        n.destination = Some(NetAddress { net: r.net, mac: &r.mac });
        n.hop_count = DEFAULT_HOP_COUNT;
    }
    n.encode(&mut out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let sent = if broadcast { handle.send_broadcast(&out).await } else { handle.send_unicast(peer.link, &out).await };
    if let Err(e) = &sent {
        tracing::warn!(to = %peer, error = %e, "send failed");
    }
    sent
}

async fn send_i_am<M: ObjectModel>(handle: &BipHandle, server: &Server<M>) {
    let mut out = Vec::new();
    if Npdu::local_apdu(&server.i_am_apdu(), false).encode(&mut out).is_ok() {
        let _ = handle.send_broadcast(&out).await;
    }
}

pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
