//! The BACnet/SC hub function on a TCP listener.
//!
//! ```text
//! TCP accept ─TLS 1.3 (client certificate required)─▶ WebSocket (hub.bsc.bacnet.org) ─frames─▶ hub task (core Hub)
//!                                                      (each connection's reader drives the shared core Hub)
//!                                                                           ◀─bounded queue─ per-connection writer
//! ```
//!
//! The core's [`Hub`] sits behind a lock shared by the connections: each
//! connection's reader hands the frames it receives to it and puts what it
//! relays on the destinations' bounded queues (a full queue drops the frame
//! and counts it: a node that does not read cannot hold up the others);
//! each connection's writer sends its queue in bursts, one flush per burst.
//! A timer task runs the hub's timers. TLS and
//! WebSocket handshakes run per connection, each under a time limit. Every
//! refusal — TLS (no or untrusted certificate), the wrong subprotocol, the
//! connection bound, a handshake too slow — is logged once with the peer's
//! address and what was wrong, and counted.
//!
//! Must never: accept a WebSocket without TLS and a trusted client
//! certificate, hold the hub's lock across an await, or let one connection's
//! writes hold up another's.

use crate::HUB_SUBPROTOCOL;
use bacnet::sc::hub::{ConnId, Hub, HubConfig, HubCounters};
use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::Message;

/// Frames queued for one connection, at most.
pub const CONNECTION_QUEUE: usize = 256;
/// How long a TLS plus WebSocket handshake may take.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// The largest WebSocket message taken (a BVLC-SC message of the largest
/// Max-BVLC-Length a node may announce).
pub const MAX_FRAME: usize = 65_535;

/// What the transport refused and dropped, besides the hub's own counters.
#[derive(Debug, Default)]
pub struct HubPortStats {
    /// TLS handshakes that failed (no certificate, an untrusted one, not TLS 1.3…).
    pub tls_refused: AtomicU64,
    /// WebSocket upgrades refused: not the hub subprotocol.
    pub wrong_subprotocol: AtomicU64,
    /// WebSocket upgrades that failed otherwise (malformed HTTP, the peer
    /// gone mid-upgrade).
    pub upgrades_failed: AtomicU64,
    /// Handshakes that took too long.
    pub handshake_timeouts: AtomicU64,
    /// Frames dropped: the connection's queue was full.
    pub queue_full: AtomicU64,
    /// Messages that were not binary frames, or too large.
    pub bad_frames: AtomicU64,
    /// Nodes connected now.
    pub connected_nodes: AtomicU64,
    /// The core hub's counters, as last published (at every connection's
    /// opening and closing, and four times a second).
    pub hub: Mutex<HubCounters>,
}

impl HubPortStats {
    /// The hub's counters.
    pub fn hub(&self) -> HubCounters {
        *self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The core hub and the connections' queues, shared by every
/// connection's reader (which hands its frames to the hub itself: no task
/// between a frame's arrival and its destination's queue) and the timer.
struct Shared {
    hub: Hub,
    queues: HashMap<ConnId, mpsc::Sender<Vec<u8>>>,
    epoch: Instant,
}

type SharedHub = Arc<Mutex<Shared>>;

fn lock(shared: &SharedHub) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Hand what the hub sends to the connections' queues (a full queue
    /// drops the frame, counted), end the connections it closed, and say
    /// how many nodes are connected; with `publish`, also the hub's
    /// counters (a sum over the connections: not for every frame).
    fn flush(&mut self, stats: &HubPortStats, publish: bool) {
        while let Some((id, frame)) = self.hub.poll_transmit() {
            if let Some(q) = self.queues.get(&id)
                && q.try_send(frame).is_err()
            {
                stats.queue_full.fetch_add(1, Ordering::Relaxed);
            }
        }
        while let Some(id) = self.hub.poll_closed() {
            // Dropping its queue ends its writer, which closes the WebSocket
            // after what is queued.
            self.queues.remove(&id);
            self.hub.close(id);
        }
        stats.connected_nodes.store(self.hub.node_count() as u64, Ordering::Relaxed);
        if publish {
            *stats.hub.lock().unwrap_or_else(PoisonError::into_inner) = self.hub.counters();
        }
    }
}

/// How late the hub's timers may run: they are of seconds (connect and
/// disconnect waits, heartbeats), and a frame never waits for them.
const TIMER_GRANULARITY: Duration = Duration::from_millis(250);

/// Handshakes (TLS, then the WebSocket upgrade) in progress at once, at
/// most: a flood of TCP connections that never finish theirs waits here
/// rather than holding sockets and tasks without bound.
pub const HANDSHAKES_AT_ONCE: usize = 64;

/// Serve the hub function on `listener` until the future is dropped (which
/// ends every connection and the timer).
pub async fn serve_hub(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    config: HubConfig,
    stats: Arc<HubPortStats>,
) -> std::io::Result<()> {
    let shared = Arc::new(Mutex::new(Shared { hub: Hub::new(config), queues: HashMap::new(), epoch: Instant::now() }));
    // Dropping the set aborts every task in it.
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(run_timers(shared.clone(), stats.clone()));
    let acceptor = TlsAcceptor::from(tls);
    let handshakes = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_AT_ONCE));
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(x) => x,
            // Out of file descriptors, a connection reset before it was
            // taken…: say so and go on accepting.
            Err(e) => {
                tracing::warn!("BACnet/SC hub: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        // Reap what finished, so the set holds only live connections.
        while tasks.try_join_next().is_some() {}
        let permit = handshakes.clone().acquire_owned().await.map_err(std::io::Error::other)?;
        tasks.spawn(connection(tcp, peer, acceptor.clone(), shared.clone(), stats.clone(), permit));
    }
}

/// The hub's timers (connect waits, heartbeats), at most
/// [`TIMER_GRANULARITY`] late.
async fn run_timers(shared: SharedHub, stats: Arc<HubPortStats>) {
    loop {
        let wait = {
            let s = lock(&shared);
            let now = s.now();
            s.hub.poll_timeout().map_or(TIMER_GRANULARITY, |d| d.saturating_sub(now).min(TIMER_GRANULARITY))
        };
        tokio::time::sleep(wait).await;
        let mut s = lock(&shared);
        let now = s.now();
        s.hub.handle_timeout(now);
        s.flush(&stats, true);
    }
}

/// One node's connection: handshakes, then frames both ways.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    shared: SharedHub,
    stats: Arc<HubPortStats>,
    handshaking: tokio::sync::OwnedSemaphorePermit,
) {
    let handshake = async {
        let tls = acceptor.accept(tcp).await.map_err(|e| {
            stats.tls_refused.fetch_add(1, Ordering::Relaxed);
            format!("TLS: {e}")
        })?;
        crate::ws::accept(tls, HUB_SUBPROTOCOL).await.map_err(|e| {
            // Our refusal is an HTTP answer; anything else is a failed
            // upgrade (malformed HTTP, the peer gone…).
            let counter = match e {
                tokio_tungstenite::tungstenite::Error::Http(_) => &stats.wrong_subprotocol,
                _ => &stats.upgrades_failed,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            format!("WebSocket upgrade: {e}")
        })
    };
    let ws = match tokio::time::timeout(HANDSHAKE_LIMIT, handshake).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(why)) => {
            tracing::warn!(%peer, "BACnet/SC hub: connection refused: {why}");
            return;
        }
        Err(_) => {
            stats.handshake_timeouts.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%peer, "BACnet/SC hub: connection refused: handshake not finished within {HANDSHAKE_LIMIT:?}");
            return;
        }
    };
    drop(handshaking);
    let (queue, mut outbound) = mpsc::channel::<Vec<u8>>(CONNECTION_QUEUE);
    let opened = {
        let mut s = lock(&shared);
        let now = s.now();
        let id = s.hub.open(now);
        if let Some(id) = id {
            s.queues.insert(id, queue);
            s.flush(&stats, true);
        }
        id
    };
    let Some(id) = opened else {
        tracing::warn!(%peer, "BACnet/SC hub: connection refused: the hub is at its connection bound");
        return;
    };
    let (mut write, mut read) = ws.split();
    loop {
        tokio::select! {
            frame = outbound.recv() => match frame {
                Some(f) => if crate::write_burst(&mut write, f, &mut outbound).await.is_err() {
                    tracing::debug!(%peer, "BACnet/SC hub: a node's connection could not be written (or too slowly)");
                    break
                },
                None => { let _ = tokio::time::timeout(crate::WRITE_LIMIT, write.close()).await; break }
            },
            m = read.next() => match m {
                Some(Ok(Message::Binary(data))) => {
                    let mut s = lock(&shared);
                    let now = s.now();
                    s.hub.handle_frame(now, id, &data);
                    s.flush(&stats, false);
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => { stats.bad_frames.fetch_add(1, Ordering::Relaxed); }
                Some(Err(e)) => {
                    use tokio_tungstenite::tungstenite::Error as WsError;
                    // A frame too large or not WebSocket is the node's fault;
                    // a reset connection is not.
                    if matches!(e, WsError::Capacity(_) | WsError::Protocol(_) | WsError::Utf8(_)) {
                        stats.bad_frames.fetch_add(1, Ordering::Relaxed);
                    }
                    tracing::debug!(%peer, "BACnet/SC hub: WebSocket error: {e}");
                    break;
                }
            },
        }
    }
    let mut s = lock(&shared);
    s.hub.close(id);
    s.queues.remove(&id);
    s.flush(&stats, true);
}
