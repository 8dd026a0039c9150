//! The datalink-independent half of serving one device on one port, run
//! to completion: one task owns the server transaction state machine
//! (admission, segmentation), takes every NPDU waiting on the port at one
//! wake-up, executes each admitted request in place (the object model's
//! call runs on this thread and is ready at once), and sends every answer
//! of the batch before it waits again. No channel, spawned task or other
//! thread lies between a request and its answer. A datalink says where
//! NPDUs come from ([`Inbound`]) and how an APDU leaves ([`Link`]): B/IP in
//! [`super::endpoint`], MS/TP in [`super::mstp`].
//!
//! ```text
//! wake-up ─▶ Inbound::drain (≤ MAX_BATCH NPDUs) ─▶ on_npdu ─▶ ServerTsm ─▶ Indication ─┐
//!                                                          └▶ Unconfirmed-Request ─────┤ work queue
//! execute each: Server::execute / Server::handle ─▶ ServerTsm::respond ◀───────────────┘
//! flush: APDUs (answers, segments) ─▶ Link
//! COV notifier (a task on the same thread) ─▶ UnconfirmedCOVNotification ─▶ Link
//!              └▶ ConfirmedCOVNotification ─▶ ClientTsm (retries) ─▶ Link; its answer ─▶ counted
//! ```
//!
//! Memory is bounded by the state machine's admission limits and the
//! batch: a request beyond the limits is refused with Abort
//! out-of-resources before any work, and unconfirmed requests beyond
//! [`MAX_UNCONFIRMED_PER_BATCH`] in one wake-up are dropped and counted.
//!
//! Must never: wait on anything but the port, its timers and the COV
//! queue (a request's execution never waits on another thread), answer a
//! broadcast confirmed request, answer anything under
//! DeviceCommunicationControl `disable` but DCC and ReinitializeDevice, or
//! send to anyone but the requester.

use super::cov::{ConfirmedOut, NotificationSink, run_notifier};
use super::dispatch::{AnswerRoom, Server};
use super::outbox::Outbox;
use bacnet::apdu::Apdu;
use bacnet::enums::{ConfirmedServiceChoice, NetworkPriority, UnconfirmedServiceChoice};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::tsm::{ClientTsm, Indication, Outcome, ServerTsm, TsmConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use trellis_model::ObjectModel;
use trellis_net::{DeviceAddress, LinkAddress, RemoteStation, sleep_until};

/// NPDUs taken from the port at one wake-up before their answers go out.
pub(super) const MAX_BATCH: usize = 64;

/// Unconfirmed requests (Who-Is, Who-Has) answered per wake-up; more are
/// dropped and counted, as a device may drop unconfirmed requests it cannot
/// serve.
pub(super) const MAX_UNCONFIRMED_PER_BATCH: usize = 16;

/// ConfirmedCOVNotifications waiting for the station; more are counted as
/// failed.
const CONFIRMED_QUEUE: usize = 1024;

/// Requests of non-normal network priority remembered, so their answers go
/// at the same priority (Clause 6.2.2).
const MAX_PRIORITIES: usize = 4096;

/// Where a station's NPDUs come from.
pub(super) trait Inbound: Send {
    /// Wait until NPDUs may be waiting; false once the source is gone for
    /// good. A wake-up may be spurious.
    fn ready(&mut self) -> impl Future<Output = bool> + Send;
    /// Hand every NPDU waiting now, up to `max`, to
    /// [`Station::on_npdu`], without waiting.
    fn drain<M: ObjectModel, L: Link>(&mut self, station: &mut Station<M, L>, max: usize);
}

/// Work found in one batch, executed before its answers go out.
enum Work {
    Confirmed(Indication<DeviceAddress>),
    Unconfirmed { apdu: Vec<u8>, broadcast: bool, peer: DeviceAddress, priority: NetworkPriority },
}

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
    /// Octets the datalink writes in front of each NPDU.
    const HEADROOM: usize;
    /// Send every frame of `outbox` in order (each an NPDU behind
    /// [`HEADROOM`](Self::HEADROOM) octets), to its peer or, for
    /// [`Delivery::Broadcast`], to everyone; a frame that cannot go does not
    /// keep the others back, and the first failure is returned at the end.
    fn send_all(&self, outbox: &mut Outbox) -> impl Future<Output = std::io::Result<()>> + Send;
    /// Whether `peer` hears an answer sent as a local broadcast.
    fn hears_broadcasts(&self, peer: &DeviceAddress) -> bool;
    /// The local broadcast address, as a peer (for logs and the I-Am).
    fn broadcast_address(&self) -> DeviceAddress;
}

/// Send one APDU to `peer` on its own (I-Am at start, COV notifications,
/// our confirmed requests); a batch's answers go through the station's
/// outbox instead.
async fn send<L: Link>(
    link: &L,
    peer: &DeviceAddress,
    apdu: &[u8],
    priority: NetworkPriority,
    how: Delivery,
) -> std::io::Result<()> {
    let mut out = Outbox::default();
    out.push(L::HEADROOM, peer, apdu, priority, how)?;
    let sent = link.send_all(&mut out).await;
    if let Err(e) = &sent {
        tracing::warn!(to = %peer, error = %e, "send failed");
    }
    sent
}

/// Where the COV notifier's notifications go out.
struct LinkSink<L> {
    link: L,
    confirmed: mpsc::Sender<ConfirmedOut>,
    /// Told when a confirmed notification is queued, for a station driven
    /// by another loop (a router's, see [`Station::start_driven`]).
    wake: Option<Arc<tokio::sync::Notify>>,
}

impl<L: Link> NotificationSink for LinkSink<L> {
    async fn unconfirmed(
        &self,
        to: &DeviceAddress,
        service: UnconfirmedServiceChoice,
        body: Vec<u8>,
    ) -> std::io::Result<()> {
        let mut apdu = Vec::with_capacity(body.len() + 2);
        Apdu::UnconfirmedRequest { service, body: &body }.encode(&mut apdu);
        send(&self.link, to, &apdu, NetworkPriority::NORMAL, Delivery::Unicast).await
    }

    fn confirmed(&self, to: DeviceAddress, service: ConfirmedServiceChoice, body: Vec<u8>) -> bool {
        let queued = self.confirmed.try_send((to, service, body)).is_ok();
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
        queued
    }
}

impl<L: Link> super::alarms::EventSink for LinkSink<L> {
    async fn broadcast(&self, service: UnconfirmedServiceChoice, body: Vec<u8>) -> std::io::Result<()> {
        let mut apdu = Vec::with_capacity(body.len() + 2);
        Apdu::UnconfirmedRequest { service, body: &body }.encode(&mut apdu);
        let everyone = self.link.broadcast_address();
        send(&self.link, &everyone, &apdu, NetworkPriority::NORMAL, Delivery::Broadcast).await
    }

    fn local_station(&self, mac: &[u8]) -> Option<DeviceAddress> {
        let link = match (self.link.broadcast_address().link, mac) {
            (LinkAddress::Ip(_), [a, b, c, d, p0, p1]) => {
                LinkAddress::Ip(std::net::SocketAddrV4::new([*a, *b, *c, *d].into(), u16::from_be_bytes([*p0, *p1])))
            }
            (LinkAddress::Mstp(_), [m]) if *m < 255 => LinkAddress::Mstp(*m),
            (LinkAddress::Bip6(_), [a, b, c]) => LinkAddress::Bip6([*a, *b, *c]),
            (LinkAddress::Sc(_), [a, b, c, d, e, f]) => LinkAddress::Sc([*a, *b, *c, *d, *e, *f]),
            (LinkAddress::Ethernet(_), [a, b, c, d, e, f]) => LinkAddress::Ethernet([*a, *b, *c, *d, *e, *f]),
            _ => return None,
        };
        Some(DeviceAddress { link, remote: None })
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What one of the station's own confirmed requests is, for its statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outgoing {
    Cov,
    Event,
    ScheduledWrite,
}

impl Outgoing {
    fn of(service: ConfirmedServiceChoice) -> Self {
        match service {
            ConfirmedServiceChoice::CONFIRMED_EVENT_NOTIFICATION => Outgoing::Event,
            ConfirmedServiceChoice::WRITE_PROPERTY => Outgoing::ScheduledWrite,
            _ => Outgoing::Cov,
        }
    }

    fn service(self) -> &'static str {
        match self {
            Outgoing::Cov => "ConfirmedCOVNotification",
            Outgoing::Event => "ConfirmedEventNotification",
            Outgoing::ScheduledWrite => "WriteProperty (scheduled)",
        }
    }
}

/// One served device on one port.
pub(super) struct Station<M, L> {
    server: Arc<Server<M>>,
    link: L,
    tsm: ServerTsm<DeviceAddress>,
    /// Our own confirmed requests: ConfirmedCOVNotifications,
    /// ConfirmedEventNotifications, schedules' WriteProperty requests.
    client: ClientTsm<DeviceAddress>,
    /// Which of the client's transactions are not COV notifications (the
    /// statistics each outcome is counted in).
    transaction_kinds: HashMap<bacnet::tsm::TransactionId, Outgoing>,
    confirmed: mpsc::Receiver<ConfirmedOut>,
    /// What the current batch asks for, in arrival order.
    work: Vec<Work>,
    /// Unconfirmed requests taken into the current batch.
    unconfirmed_in_batch: usize,
    priorities: HashMap<(DeviceAddress, u8), NetworkPriority>,
    /// The batch's answers, sent together by [`flush`](Self::flush).
    outbox: Outbox,
    /// When the batch being handled started (see [`now`](Self::now)).
    batch_started: Option<Duration>,
    epoch: Instant,
    /// The COV notifier lives as long as the station.
    _notifier: AbortOnDrop,
}

impl<M: ObjectModel, L: Link> Station<M, L> {
    /// A station for `server` on `link`; announces the device with an I-Am
    /// and starts its COV notifier.
    pub(super) async fn start(server: Arc<Server<M>>, link: L) -> Self {
        Self::start_with(server, link, None).await
    }

    /// A station that another loop drives instead of [`run`](Self::run)
    /// (a router's, which serves several stations on one task): `wake` is
    /// told whenever the station has something to do that did not come in
    /// through that loop (a ConfirmedCOVNotification queued).
    pub(super) async fn start_driven(server: Arc<Server<M>>, link: L, wake: Arc<tokio::sync::Notify>) -> Self {
        Self::start_with(server, link, Some(wake)).await
    }

    async fn start_with(server: Arc<Server<M>>, link: L, wake: Option<Arc<tokio::sync::Notify>>) -> Self {
        let everyone = link.broadcast_address();
        let _ = send(&link, &everyone, &server.i_am_apdu(), NetworkPriority::NORMAL, Delivery::Broadcast).await;
        let config = server.config();
        let tsm = ServerTsm::with_origin(config.tsm_config(), DeviceAddress::origin);
        let client = ClientTsm::new(TsmConfig {
            apdu_timeout: Duration::from_millis(config.apdu_timeout_ms as u64),
            retries: config.apdu_retries,
            ..TsmConfig::default()
        });
        let (confirmed_tx, confirmed) = mpsc::channel(CONFIRMED_QUEUE);
        let notifier =
            tokio::spawn(run_notifier(server.clone(), LinkSink { link: link.clone(), confirmed: confirmed_tx, wake }));
        Station {
            server,
            link,
            tsm,
            client,
            transaction_kinds: HashMap::new(),
            confirmed,
            work: Vec::new(),
            unconfirmed_in_batch: 0,
            priorities: HashMap::new(),
            outbox: Outbox::default(),
            batch_started: None,
            epoch: Instant::now(),
            _notifier: AbortOnDrop(notifier),
        }
    }

    /// The time now, or the wake-up's while its datagrams are taken from the
    /// port (one clock read for the batch rather than one per request;
    /// executing them reads the clock again).
    fn now(&self) -> Duration {
        self.batch_started.unwrap_or_else(|| self.epoch.elapsed())
    }

    /// When the next timer of either state machine is due.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let next = [self.tsm.poll_timeout(), self.client.poll_timeout()].into_iter().flatten().min();
        next.map(|d| self.epoch + d)
    }

    /// Start taking a batch: NPDUs go to [`on_npdu`](Self::on_npdu) until
    /// [`end_intake`](Self::end_intake).
    pub(super) fn begin_intake(&mut self) {
        self.unconfirmed_in_batch = 0;
        self.batch_started = Some(self.epoch.elapsed());
    }

    /// The batch is taken; executing it reads the clock again (a guest
    /// call may take up to its deadline).
    pub(super) fn end_intake(&mut self) {
        self.batch_started = None;
    }

    /// Serve until `inbound` is gone: wait for the port, a timer or a COV
    /// notification to send; take what the port has; answer it all; send.
    pub(super) async fn run(mut self, mut inbound: impl Inbound) {
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                alive = inbound.ready() => {
                    if !alive {
                        return;
                    }
                    self.begin_intake();
                    inbound.drain(&mut self, MAX_BATCH);
                    self.end_intake();
                    self.execute_batch().await;
                    // Under sustained load the port is ready at every wake-up
                    // and wins the biased select: timers and queued
                    // notifications are served here too, never starved.
                    self.catch_up(deadline);
                }
                Some((to, service, body)) = self.confirmed.recv() => self.start_confirmed(to, service, body),
                _ = sleep_until(deadline) => self.run_timers(),
            }
            self.flush().await;
            self.publish_counters();
        }
    }

    /// Run timers that came due and start queued ConfirmedCOVNotifications
    /// (what the other arms of the loop do when the port is not busy).
    pub(super) fn catch_up(&mut self, deadline: Option<Instant>) {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            self.run_timers();
        }
        while let Ok((to, service, body)) = self.confirmed.try_recv() {
            self.start_confirmed(to, service, body);
        }
    }

    /// Let both state machines act on their timers (retries, timeouts).
    fn run_timers(&mut self) {
        let now = self.now();
        self.tsm.handle_timeout(now);
        self.client.handle_timeout(now);
    }

    /// Hand a confirmed notification to our client state machine (its
    /// retries and timeouts), or count it failed when it cannot take it.
    fn start_confirmed(&mut self, to: DeviceAddress, service: ConfirmedServiceChoice, body: Vec<u8>) {
        let now = self.now();
        let kind = Outgoing::of(service);
        match self.client.start(now, to, service, body) {
            Ok(id) => {
                if kind != Outgoing::Cov {
                    self.transaction_kinds.insert(id, kind);
                }
            }
            Err(_) => {
                self.failed_counter(kind).fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Where a failed request of `kind` is counted.
    fn failed_counter(&self, kind: Outgoing) -> &std::sync::atomic::AtomicU64 {
        match kind {
            Outgoing::Cov => &self.server.cov().stats.confirmed_failed,
            Outgoing::Event => &self.server.alarms().stats.confirmed_failed,
            Outgoing::ScheduledWrite => &self.server.host().schedules.stats.remote_failed,
        }
    }

    /// Execute what the batch asked for, in order, each in place; the
    /// answers wait in the state machine for [`flush`](Self::flush). The
    /// writes' journal flushes (`[device.persistence]`) are made once, when
    /// the batch is done: before its answers leave, never once per write
    /// with the rest of the batch waiting behind each.
    pub(super) async fn execute_batch(&mut self) {
        trellis_persist::group_commit(self.execute_in_place()).await
    }

    async fn execute_in_place(&mut self) {
        let mut work = std::mem::take(&mut self.work);
        for w in work.drain(..) {
            match w {
                Work::Confirmed(ind) => {
                    let config = self.tsm.config();
                    let room = AnswerRoom {
                        octets: ind.answer_capacity(config),
                        segmented: ind.segmented_response_accepted && config.segmentation,
                    };
                    let answer = self.tsm.take_buffer();
                    let response = self.server.execute_into(&ind.key.peer, ind.service, &ind.body, room, answer).await;
                    let now = self.now();
                    self.tsm.respond(now, &ind.key, response);
                    self.tsm.recycle(ind.body);
                    // An acknowledged ReinitializeDevice restarts the model
                    // once its SimpleACK has left, on a task of its own (the
                    // restart waits for writes in progress).
                    if self.server.restart_pending() {
                        // What this batch journaled is on the disk before any answer leaves.
                        trellis_persist::sync_deferred();
                        self.flush().await;
                        let server = self.server.clone();
                        tokio::spawn(async move { server.perform_pending_restart().await });
                    }
                }
                Work::Unconfirmed { apdu, broadcast, peer, priority } => {
                    if let Some(reply) = self.server.handle(&peer, &apdu, broadcast).await {
                        let how = if reply.broadcast && peer.remote.is_none() && self.link.hears_broadcasts(&peer) {
                            Delivery::Broadcast
                        } else {
                            Delivery::Unicast
                        };
                        self.queue(&peer, &reply.apdu, priority, how);
                    }
                }
            }
        }
        // Keep the queue's allocation for the next batch.
        self.work = work;
    }

    /// Copy the state machine's counters where operators and tests read
    /// them ([`Server::stats`]); warn when admission control starts refusing.
    pub(super) fn publish_counters(&self) {
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
                self.queue_unconfirmed(apdu, broadcast, peer, npdu.priority);
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
                    self.work.push(Work::Confirmed(ind));
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

    fn queue_unconfirmed(&mut self, apdu: &[u8], broadcast: bool, peer: DeviceAddress, priority: NetworkPriority) {
        if self.unconfirmed_in_batch >= MAX_UNCONFIRMED_PER_BATCH {
            let dropped = self.server.stats().dropped_unconfirmed.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "too many unconfirmed requests at once: dropping");
            }
            return;
        }
        self.unconfirmed_in_batch += 1;
        self.work.push(Work::Unconfirmed { apdu: apdu.to_vec(), broadcast, peer, priority });
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

    /// Put an APDU in the outbox.
    fn queue(&mut self, peer: &DeviceAddress, apdu: &[u8], priority: NetworkPriority, how: Delivery) {
        if let Err(e) = self.outbox.push(L::HEADROOM, peer, apdu, priority, how) {
            tracing::warn!(to = %peer, error = %e, "not sent");
        }
    }

    pub(super) async fn flush(&mut self) {
        while let Some((peer, apdu)) = self.tsm.poll_transmit() {
            // Nearly every request comes at normal priority: only look into
            // the APDU when one did not.
            let priority = if self.priorities.is_empty() { None } else { self.remembered_priority(&peer, &apdu) };
            let priority = priority.unwrap_or(NetworkPriority::NORMAL);
            self.queue(&peer, &apdu, priority, Delivery::Unicast);
            self.tsm.recycle(apdu);
        }
        if !self.outbox.is_empty() {
            if let Err(e) = self.link.send_all(&mut self.outbox).await {
                tracing::warn!(error = %e, frames = self.outbox.frames().len(), "send failed");
            }
            self.outbox.clear();
        }
        while let Some(t) = self.client.poll_transmit() {
            let how = if t.expecting_reply { Delivery::Request } else { Delivery::Unicast };
            if send(&self.link, &t.peer, &t.apdu, NetworkPriority::NORMAL, how).await.is_err()
                && let Some(id) = t.transaction
            {
                let now = self.now();
                if self.client.cancel(now, id) {
                    let kind = self.transaction_kinds.remove(&id).unwrap_or(Outgoing::Cov);
                    self.failed_counter(kind).fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        while let Some(done) = self.client.poll_event() {
            let kind = self.transaction_kinds.remove(&done.id).unwrap_or(Outgoing::Cov);
            let counter = match (done.outcome, kind) {
                (Outcome::SimpleAck, Outgoing::Cov) => &self.server.cov().stats.confirmed_acknowledged,
                (Outcome::SimpleAck, Outgoing::Event) => &self.server.alarms().stats.confirmed_acknowledged,
                (Outcome::SimpleAck, Outgoing::ScheduledWrite) => {
                    &self.server.host().schedules.stats.remote_acknowledged
                }
                (other, kind) => {
                    tracing::warn!(outcome = ?other, service = kind.service(), "confirmed request failed after its retries");
                    self.failed_counter(kind)
                }
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}
