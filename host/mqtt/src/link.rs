//! The gateway's connection to its MQTT broker (rumqttc), fed from the
//! spool: what is published goes to the spool first and leaves it only when
//! the broker has it (QoS 1: its PUBACK; QoS 0: once written).
//!
//! ```text
//! publish ──▶ spool (disk) ──next_to_send──▶ rumqttc ──▶ broker
//!                 ▲                                        │
//!                 └──────── ack(seq) ◀── PUBACK(pkid) ─────┘
//! ```
//!
//! rumqttc's `poll` is never dropped half-way: its future owns the (boxed)
//! event loop and lives until it answers, and the events it has ready are
//! taken in one go before the select looks at the other branches again.
//!
//! Each connection is a fresh rumqttc event loop (so the spool is the one
//! record of what is unacknowledged): after a loss the link waits its
//! back-off (doubling to a maximum, each wait drawn from its upper half),
//! connects again and replays the spool from its oldest unacknowledged
//! message. At most `max_in_flight` messages are unacknowledged at once.
//! A last will marks the availability topic
//! `offline` (retained) when the link dies; `online` is published at each
//! connection. What arrives on the subscribed topics comes out of the
//! receiver [`Link::start`] returns.
//!
//! A message from the broker whose payload is over
//! [`LinkConfig::max_incoming`] comes out without its payload, marked
//! [`Incoming::oversized`] and counted; it is acknowledged, and the
//! connection stays up, so a publisher on a subscribed topic cannot take
//! the gateway off its broker. A packet up to the limit plus the largest
//! topic (64 KiB) is read whole and its payload dropped here; a larger one
//! is never buffered: the vendored rumqttc's codec discards its octets as
//! they arrive (vendor/README.md).
//!
//! Beside the spool, a protocol with per-connection state (Sparkplug B:
//! births, sequence numbers, a will that names the connection) uses the
//! *live* path: [`Link::sessions`] says when a connection is up and its
//! epoch, [`Link::publish_live`] sends a message only on that connection
//! (a message for an older one is dropped, counted), and
//! [`LinkConfig::will`] makes each connection's will.
//!
//! Must never: drop a message the spool accepted, wait on the broker from
//! the caller of [`Link::publish`], or end a connection because of what a
//! subscribed topic carried.

use crate::spool::Spool;
use rumqttc::{AsyncClient, ConnectionError, Event, EventLoop, LastWill, MqttOptions, Outgoing, Packet, QoS};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};

/// How the link reaches its broker.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The broker's host name or address.
    pub host: String,
    /// Its port (1883; 8883 with TLS).
    pub port: u16,
    /// Our client identifier.
    pub client_id: String,
    /// TLS (rustls), if the broker takes it.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// User name and password, if the broker asks.
    pub credentials: Option<(String, String)>,
    /// `online` at each connection, `offline` (the last will) when the link
    /// dies; both retained. `None`: no availability topic.
    pub availability_topic: Option<String>,
    /// Each connection's will, made just before it is attempted (instead of
    /// the availability topic's).
    pub will: Option<WillSource>,
    /// Topics subscribed at each connection (commands in), QoS 1.
    pub subscriptions: Vec<String>,
    /// Keep-alive interval.
    pub keep_alive: Duration,
    /// Unacknowledged messages at most.
    pub max_in_flight: usize,
    /// The first wait after a loss, doubling up to `max_reconnect`.
    pub reconnect: Duration,
    /// The longest wait between attempts.
    pub max_reconnect: Duration,
    /// Messages per second at most from the spool (a replay after an
    /// outage at a pace the broker and its subscribers take); `None`: as
    /// fast as the in-flight bound allows.
    pub pace: Option<u32>,
    /// The largest payload taken from the broker, in octets; a larger one
    /// is discarded and marked [`Incoming::oversized`].
    pub max_incoming: usize,
}

/// [`LinkConfig::max_incoming`] unless configured: 64 KiB.
pub const DEFAULT_MAX_INCOMING: usize = 64 << 10;

/// The largest packet MQTT 3.1.1 can frame (a remaining length of
/// 268,435,455 octets): what goes out is bounded by the spool, not here.
const MQTT_MAX_PACKET: usize = 268_435_455;

/// What a PUBLISH carries beside its payload at most: the topic's length
/// and a 65,535-octet topic, and the packet identifier.
const PUBLISH_OVERHEAD: usize = 2 + 65_535 + 2;

impl LinkConfig {
    /// Plain MQTT to `host:port` as `client_id`; availability on
    /// `{client_id}/availability`; 30 s keep-alive, 100 in flight, back-off
    /// from 1 s to 60 s.
    pub fn new(host: impl Into<String>, port: u16, client_id: impl Into<String>) -> Self {
        let client_id = client_id.into();
        LinkConfig {
            host: host.into(),
            port,
            availability_topic: Some(format!("{client_id}/availability")),
            will: None,
            client_id,
            tls: None,
            credentials: None,
            subscriptions: Vec::new(),
            keep_alive: Duration::from_secs(30),
            max_in_flight: 100,
            reconnect: Duration::from_secs(1),
            max_reconnect: Duration::from_secs(60),
            pace: None,
            max_incoming: DEFAULT_MAX_INCOMING,
        }
    }
}

/// Makes a connection's last will: (topic, payload), sent at QoS 1, not retained.
#[derive(Clone)]
pub struct WillSource(pub Arc<dyn Fn() -> (String, Vec<u8>) + Send + Sync>);

impl std::fmt::Debug for WillSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WillSource")
    }
}

/// The broker connection as the live path sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    /// Which connection (1 for the first); live messages name it.
    pub epoch: u64,
    /// It is up.
    pub connected: bool,
}

/// A message for one connection only.
#[derive(Debug)]
struct Live {
    epoch: u64,
    topic: String,
    qos: u8,
    payload: Vec<u8>,
}

/// A message from a subscribed topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// Its topic.
    pub topic: String,
    /// Its payload (empty when [`Incoming::oversized`]).
    pub payload: Vec<u8>,
    /// `Some(octets)`: its payload was that long, over
    /// [`LinkConfig::max_incoming`], and was discarded.
    pub oversized: Option<usize>,
}

impl Incoming {
    /// A message as it came.
    pub fn new(topic: impl Into<String>, payload: impl Into<Vec<u8>>) -> Incoming {
        Incoming { topic: topic.into(), payload: payload.into(), oversized: None }
    }
}

/// What the link has done, for operators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkStatus {
    /// Connected to the broker now.
    pub connected: bool,
    /// Connections made.
    pub connects: u64,
    /// Connections lost or refused.
    pub losses: u64,
    /// Messages the broker has (acknowledged, or written at QoS 0).
    pub delivered: u64,
    /// Messages from subscribed topics dropped: the receiver was full.
    pub incoming_dropped: u64,
    /// Messages from subscribed topics whose payload was over the limit
    /// (handed on without it).
    pub incoming_oversized: u64,
    /// Live messages dropped: their connection was gone (or the queue full).
    pub live_dropped: u64,
    /// The last connection error.
    pub last_error: Option<String>,
}

/// The running link (cheap to clone); it stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Link {
    spool: Arc<Mutex<Spool>>,
    wake: Arc<Notify>,
    status: Arc<Mutex<LinkStatus>>,
    live: mpsc::Sender<Live>,
    sessions: watch::Receiver<Session>,
    subscriptions: Arc<Mutex<Vec<String>>>,
    subscribe_now: mpsc::UnboundedSender<String>,
    _stop: Arc<watch::Sender<()>>,
}

impl Link {
    /// Start the link over `spool` (within a tokio runtime).
    pub fn start(config: LinkConfig, spool: Spool) -> (Link, mpsc::Receiver<Incoming>) {
        let (stop, stopped) = watch::channel(());
        let (incoming, received) = mpsc::channel(1024);
        let (live, live_out) = mpsc::channel(4096);
        let (session, sessions) = watch::channel(Session::default());
        let (subscribe_now, to_subscribe) = mpsc::unbounded_channel();
        let link = Link {
            subscriptions: Arc::new(Mutex::new(config.subscriptions.clone())),
            subscribe_now,
            spool: Arc::new(Mutex::new(spool)),
            wake: Arc::new(Notify::new()),
            status: Arc::new(Mutex::new(LinkStatus::default())),
            live,
            sessions,
            _stop: Arc::new(stop),
        };
        let shared = Shared {
            spool: link.spool.clone(),
            wake: link.wake.clone(),
            status: link.status.clone(),
            session,
            subscriptions: link.subscriptions.clone(),
        };
        tokio::spawn(run(config, shared, incoming, (live_out, to_subscribe), stopped));
        (link, received)
    }

    /// Subscribe to `filter` (QoS 1) now if connected, and at every
    /// connection from now on; what arrives comes out of the receiver
    /// [`Link::start`] returned. Subscribing twice is once.
    pub fn subscribe(&self, filter: &str) {
        let mut subs = lock(&self.subscriptions);
        if !subs.iter().any(|s| s == filter) {
            subs.push(filter.to_string());
            let _ = self.subscribe_now.send(filter.to_string());
        }
    }

    /// The connection now, and a way to wait for the next one.
    pub fn sessions(&self) -> watch::Receiver<Session> {
        self.sessions.clone()
    }

    /// Publish on connection `epoch` only, not through the spool: `false`
    /// (counted in [`LinkStatus::live_dropped`]) if the queue to the
    /// connection is full; a message whose connection is gone by the time
    /// it is sent is dropped there, counted too.
    pub fn publish_live(&self, epoch: u64, topic: String, qos: u8, payload: Vec<u8>) -> bool {
        let taken = self.live.try_send(Live { epoch, topic, qos, payload }).is_ok();
        if !taken {
            lock(&self.status).live_dropped += 1;
        }
        taken
    }

    /// Publish: into the spool now (on disk), to the broker when it can.
    /// `Ok(false)` when the spool's full policy dropped it.
    pub fn publish(&self, topic: &str, qos: u8, payload: &[u8]) -> std::io::Result<bool> {
        self.publish_message(topic, qos, false, payload)
    }

    /// [`Link::publish`], retained or not.
    pub fn publish_message(&self, topic: &str, qos: u8, retain: bool, payload: &[u8]) -> std::io::Result<bool> {
        let taken = lock(&self.spool).push_message(topic, qos.min(1), retain, payload)?.is_some();
        self.wake.notify_one();
        Ok(taken)
    }

    /// What it has done.
    pub fn status(&self) -> LinkStatus {
        lock(&self.status).clone()
    }

    /// Messages waiting in the spool.
    pub fn pending(&self) -> usize {
        lock(&self.spool).len()
    }

    /// How the spool's disk is doing, and what the spool counted.
    pub fn spool_state(&self) -> (crate::spool::SpoolHealth, crate::spool::SpoolCounters) {
        let spool = lock(&self.spool);
        (spool.health(), spool.counters())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn options(config: &LinkConfig) -> MqttOptions {
    let mut o = MqttOptions::new(&config.client_id, &config.host, config.port);
    o.set_keep_alive(config.keep_alive);
    o.set_max_packet_size(config.max_incoming.saturating_add(PUBLISH_OVERHEAD).min(MQTT_MAX_PACKET), MQTT_MAX_PACKET);
    // rumqttc keeps a slot per packet identifier (an `Option<Publish>`
    // each, allocated and written at every connection: 65,535 of them were
    // 6 MiB per connection, and the allocator kept what each reconnection
    // freed). The spool's bound plus room for the availability message and
    // the subscriptions, so packet identifiers never wait for a free slot.
    o.set_inflight(inflight_slots(config.max_in_flight));
    if let Some(make) = &config.will {
        let (topic, payload) = (make.0)();
        o.set_last_will(LastWill::new(topic, payload, QoS::AtLeastOnce, false));
    } else if let Some(topic) = &config.availability_topic {
        o.set_last_will(LastWill::new(topic, "offline", QoS::AtLeastOnce, true));
    }
    if let Some((user, password)) = &config.credentials {
        o.set_credentials(user, password);
    }
    if let Some(tls) = &config.tls {
        o.set_transport(rumqttc::Transport::tls_with_config(rumqttc::TlsConfiguration::Rustls(tls.clone())));
    }
    o
}

/// Packet identifiers rumqttc may have in use at once: the spool's
/// messages in flight, and the link's own (the availability message, a
/// subscription per filter) beside them.
fn inflight_slots(max_in_flight: usize) -> u16 {
    u16::try_from(max_in_flight.saturating_add(64)).unwrap_or(u16::MAX)
}

/// What an outgoing publish was: one of the spool's (its sequence number
/// and QoS), or the link's own (availability).
type Sent = Option<(u64, u8)>;

/// What the connection task shares with the [`Link`].
struct Shared {
    spool: Arc<Mutex<Spool>>,
    wake: Arc<Notify>,
    status: Arc<Mutex<LinkStatus>>,
    session: watch::Sender<Session>,
    subscriptions: Arc<Mutex<Vec<String>>>,
}

async fn run(
    config: LinkConfig,
    shared: Shared,
    incoming: mpsc::Sender<Incoming>,
    (mut live, mut to_subscribe): (mpsc::Receiver<Live>, mpsc::UnboundedReceiver<String>),
    mut stopped: watch::Receiver<()>,
) {
    let Shared { spool, wake, status, session, subscriptions } = shared;
    let mut backoff = config.reconnect;
    loop {
        let (client, events) = AsyncClient::new(options(&config), 1024);
        // rumqttc's poll is never dropped half-way (a flush cut short leaves
        // bytes in its buffer until the next write): the future owns the
        // event loop and lives until it answers.
        let mut next = Box::pin(next_event(Box::new(events)));
        lock(&spool).rewind();
        let mut sent: VecDeque<Sent> = VecDeque::new();
        let mut in_flight: HashMap<u16, u64, PacketIds> = HashMap::default();
        let mut connected = false;
        let mut epoch = 0;
        let mut pacer = config.pace.map(Pacer::new);
        let error = 'connection: loop {
            let mut paced = false;
            if connected {
                paced = feed(&client, &spool, &mut sent, in_flight.len(), config.max_in_flight, pacer.as_mut());
            }
            let next_token = pacer.as_ref().map_or(Duration::MAX, Pacer::next_token);
            let mut event = tokio::select! {
                (events, e) = &mut next => {
                    next.set(next_event(events));
                    e
                }
                _ = wake.notified() => continue,
                _ = tokio::time::sleep(next_token), if paced => continue,
                l = live.recv() => {
                    let Some(l) = l else { continue };
                    let qos = if l.qos == 0 { QoS::AtMostOnce } else { QoS::AtLeastOnce };
                    if connected && l.epoch == epoch && client.try_publish(l.topic, qos, false, l.payload).is_ok() {
                        sent.push_back(None);
                    } else {
                        lock(&status).live_dropped += 1;
                    }
                    continue;
                }
                filter = to_subscribe.recv() => {
                    if let Some(filter) = filter && connected {
                        let _ = client.try_subscribe(filter, QoS::AtLeastOnce);
                    }
                    continue;
                }
                _ = stopped.changed() => return,
            };
            // The events rumqttc has ready are taken here, without going
            // back through the select and its other branches each time.
            // The last event taken is always handled: a poll is made only
            // when another pass is left (an event polled and then dropped
            // would lose a PUBACK, or the error that ends the connection).
            let mut drained = 0;
            loop {
                drained += 1;
                match event {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        connected = true;
                        backoff = config.reconnect;
                        {
                            let mut s = lock(&status);
                            s.connected = true;
                            s.connects += 1;
                            epoch = s.connects;
                        }
                        tracing::info!(broker = %format!("{}:{}", config.host, config.port), "MQTT: connected");
                        if let Some(topic) = &config.availability_topic
                            && client.try_publish(topic, QoS::AtLeastOnce, true, "online").is_ok()
                        {
                            sent.push_back(None);
                        }
                        for topic in lock(&subscriptions).iter() {
                            let _ = client.try_subscribe(topic, QoS::AtLeastOnce);
                        }
                        session.send_replace(Session { epoch, connected: true });
                    }
                    Ok(Event::Outgoing(Outgoing::Publish(pkid))) => match sent.pop_front() {
                        Some(Some((seq, 0))) => delivered(&spool, &status, seq),
                        Some(Some((seq, _))) => {
                            in_flight.insert(pkid, seq);
                        }
                        _ => {}
                    },
                    Ok(Event::Incoming(Packet::PubAck(ack))) => {
                        if let Some(seq) = in_flight.remove(&ack.pkid) {
                            delivered(&spool, &status, seq);
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let m = incoming_message(&p, config.max_incoming, &status);
                        if incoming.try_send(m).is_err() {
                            lock(&status).incoming_dropped += 1;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => break 'connection e.to_string(),
                }
                if drained == DRAIN_AT_MOST {
                    break;
                }
                match poll_now(next.as_mut()) {
                    Some((events, e)) => {
                        next.set(next_event(events));
                        event = e;
                    }
                    None => break,
                }
            }
        };
        let wait = jittered(backoff);
        {
            let mut s = lock(&status);
            if s.connected || s.last_error.as_deref() != Some(error.as_str()) {
                tracing::warn!(broker = %format!("{}:{}", config.host, config.port), "MQTT: {error}; again in {wait:.1?}");
            }
            s.connected = false;
            s.losses += 1;
            s.last_error = Some(error);
        }
        session.send_replace(Session { epoch, connected: false });
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => return,
        }
        backoff = (backoff * 2).min(config.max_reconnect);
    }
}

/// A back-off wait drawn from its upper half (`[wait/2, wait)`): gateways
/// that lost one broker at the same moment do not all come back at the same
/// moment, and a broker that restarts on a period does not meet the same
/// point of our doubling each time.
fn jittered(wait: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // std's hasher keys are random per process and differ per call: enough
    // for spreading reconnections, and no dependency for it.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let half = wait / 2;
    half + half.mul_f64((random >> 11) as f64 / (1u64 << 53) as f64)
}

/// What a PUBLISH from the broker hands on: its payload, or (over `max`)
/// only its size, counted and logged (at most every [`OVERSIZED_LOG_EVERY`]).
fn incoming_message(p: &rumqttc::Publish, max: usize, status: &Mutex<LinkStatus>) -> Incoming {
    let size = p.oversized.unwrap_or(p.payload.len());
    if size <= max {
        return Incoming::new(p.topic.clone(), p.payload.to_vec());
    }
    let count = {
        let mut s = lock(status);
        s.incoming_oversized += 1;
        s.incoming_oversized
    };
    if count == 1 || count.is_multiple_of(OVERSIZED_LOG_EVERY) {
        tracing::warn!(
            topic = p.topic,
            octets = size,
            limit = max,
            oversized_so_far = count,
            "MQTT: a message over the size limit was discarded (the connection stays up)"
        );
    }
    Incoming { topic: p.topic.clone(), payload: Vec::new(), oversized: Some(size) }
}

/// Oversized messages logged: the first, then every this many.
const OVERSIZED_LOG_EVERY: u64 = 100;

/// Packet identifiers hash as themselves: they are small, distinct numbers
/// chosen by rumqttc, not by a peer, so no flooding concern applies.
#[derive(Default, Clone, Copy)]
struct PacketIds;

impl std::hash::BuildHasher for PacketIds {
    type Hasher = PacketIdHasher;
    fn build_hasher(&self) -> PacketIdHasher {
        PacketIdHasher(0)
    }
}

/// The identity hash of a packet identifier.
#[derive(Default)]
struct PacketIdHasher(u64);

impl std::hash::Hasher for PacketIdHasher {
    fn finish(&self) -> u64 {
        // Spread over the high bits too: hashbrown takes its control bits from the top.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.0 = u64::from(n);
    }
}

/// rumqttc's next event, the event loop handed back with it (boxed: it
/// moves in and out of this future at every event).
async fn next_event(mut events: Box<EventLoop>) -> (Box<EventLoop>, Result<Event, ConnectionError>) {
    let e = events.poll().await;
    (events, e)
}

/// Events taken from rumqttc in one go before the select looks again.
const DRAIN_AT_MOST: usize = 256;

/// `f` polled once: its output if it is ready now.
fn poll_now<F: std::future::Future>(f: F) -> Option<F::Output> {
    use std::task::{Context, Poll, Waker};
    match std::pin::pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// A token bucket: `per_s` messages a second, a burst of a tenth of a second.
struct Pacer {
    per_s: f64,
    tokens: f64,
    at: std::time::Instant,
}

impl Pacer {
    fn new(per_s: u32) -> Pacer {
        let per_s = f64::from(per_s.max(1));
        Pacer { per_s, tokens: 1.0, at: std::time::Instant::now() }
    }

    /// Take one token if there is one.
    fn take(&mut self) -> bool {
        let now = std::time::Instant::now();
        let burst = (self.per_s / 10.0).max(1.0);
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * self.per_s).min(burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How long until the next token.
    fn next_token(&self) -> Duration {
        Duration::from_secs_f64(((1.0 - self.tokens) / self.per_s).max(0.0005))
    }
}

/// Hand the spool's next messages to rumqttc while in-flight room (and the
/// pace) allows; `true` when the pace stopped it with messages waiting.
fn feed(
    client: &AsyncClient,
    spool: &Mutex<Spool>,
    sent: &mut VecDeque<Sent>,
    in_flight: usize,
    max_in_flight: usize,
    mut pacer: Option<&mut Pacer>,
) -> bool {
    let mut s = lock(spool);
    while sent.len() + in_flight < max_in_flight {
        if !s.has_unsent() {
            return false;
        }
        if pacer.as_mut().is_some_and(|p| !p.take()) {
            return true;
        }
        let Some(m) = s.next_to_send() else { return false };
        let qos = if m.qos == 0 { QoS::AtMostOnce } else { QoS::AtLeastOnce };
        let (seq, level) = (m.seq, m.qos);
        if !try_publish_shared(client, m.topic.clone(), qos, m.retain, m.payload.clone()) {
            // rumqttc's queue is full: the rest waits for the next round.
            s.rewind_to(seq);
            return false;
        }
        sent.push_back(Some((seq, level)));
    }
    false
}

/// Hand rumqttc a publish whose payload is the spool's own (shared, not
/// copied): its `publish_bytes` polled once — ready at once when its
/// request queue has room; `false` (nothing sent) when it is full.
fn try_publish_shared(client: &AsyncClient, topic: String, qos: QoS, retain: bool, payload: bytes::Bytes) -> bool {
    matches!(poll_now(client.publish_bytes(topic, qos, retain, payload)), Some(Ok(())))
}

fn delivered(spool: &Mutex<Spool>, status: &Mutex<LinkStatus>, seq: u64) {
    if let Err(e) = lock(spool).ack(seq) {
        tracing::error!("MQTT spool: an acknowledgement could not be recorded: {e}");
    }
    lock(status).delivered += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_back_off_wait_is_drawn_from_its_upper_half_and_varies() {
        let wait = Duration::from_secs(4);
        let draws: Vec<Duration> = (0..200).map(|_| jittered(wait)).collect();
        assert!(draws.iter().all(|d| *d >= wait / 2 && *d < wait), "{draws:?}");
        let first = draws[0];
        assert!(
            draws.iter().any(|d| d.abs_diff(first) > Duration::from_millis(100)),
            "the waits did not vary: {first:?}"
        );
    }
}
