//! The BACnet/SC hub function on a TCP listener.
//!
//! ```text
//! TCP accept ─TLS 1.3 (client certificate required)─▶ WebSocket (hub.bsc.bacnet.org) ─frames─▶ hub task (core Hub)
//!                                                                           ◀─bounded queue─ per-connection writer
//! ```
//!
//! One task owns the core's [`Hub`]: every connection's reader sends it
//! the frames it receives, and it hands each connection's frames to that
//! connection's bounded queue (a full queue drops the frame and counts
//! it: a node that does not read cannot hold up the others). TLS and
//! WebSocket handshakes run per connection, each under a time limit. Every
//! refusal — TLS (no or untrusted certificate), the wrong subprotocol, the
//! connection bound, a handshake too slow — is logged once with the peer's
//! address and what was wrong, and counted.
//!
//! Must never: accept a WebSocket without TLS and a trusted client
//! certificate, or block the hub task on one connection.

use crate::HUB_SUBPROTOCOL;
use bacnet::sc::hub::{ConnId, Hub, HubConfig, HubCounters};
use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};

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
    /// Handshakes that took too long.
    pub handshake_timeouts: AtomicU64,
    /// Frames dropped: the connection's queue was full.
    pub queue_full: AtomicU64,
    /// Messages that were not binary frames, or too large.
    pub bad_frames: AtomicU64,
    /// Nodes connected now.
    pub connected_nodes: AtomicU64,
    /// The core hub's counters, as last published.
    pub hub: Mutex<HubCounters>,
}

impl HubPortStats {
    /// The hub's counters.
    pub fn hub(&self) -> HubCounters {
        *self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What connections tell the hub task.
enum ToHub {
    /// A WebSocket is up: its handle and its queue, or `None` at the bound.
    Open(mpsc::Sender<Vec<u8>>, oneshot::Sender<Option<ConnId>>),
    Frame(ConnId, Vec<u8>),
    Closed(ConnId),
}

/// Serve the hub function on `listener` until the future is dropped.
pub async fn serve_hub(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    config: HubConfig,
    stats: Arc<HubPortStats>,
) -> std::io::Result<()> {
    let (to_hub, from_connections) = mpsc::channel(4096);
    let hub = tokio::spawn(run_hub(Hub::new(config), from_connections, stats.clone()));
    let acceptor = TlsAcceptor::from(tls);
    let result = loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => break Err(e),
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(tcp, peer, acceptor.clone(), to_hub.clone(), stats.clone()));
    };
    hub.abort();
    result
}

/// The hub task: the core hub, its timers, and the connections' queues.
async fn run_hub(mut hub: Hub, mut inbound: mpsc::Receiver<ToHub>, stats: Arc<HubPortStats>) {
    let epoch = Instant::now();
    let mut queues: HashMap<ConnId, mpsc::Sender<Vec<u8>>> = HashMap::new();
    loop {
        let deadline = hub.poll_timeout().map(|d| epoch + d);
        let message = tokio::select! {
            m = inbound.recv() => match m { Some(m) => Some(m), None => return },
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => None,
        };
        let now = epoch.elapsed();
        match message {
            Some(ToHub::Open(queue, answer)) => {
                let id = hub.open(now);
                if let Some(id) = id {
                    queues.insert(id, queue);
                }
                let _ = answer.send(id);
            }
            Some(ToHub::Frame(id, frame)) => hub.handle_frame(now, id, &frame),
            Some(ToHub::Closed(id)) => {
                hub.close(id);
                queues.remove(&id);
            }
            None => hub.handle_timeout(now),
        }
        while let Some((id, frame)) = hub.poll_transmit() {
            if let Some(q) = queues.get(&id)
                && q.try_send(frame).is_err()
            {
                stats.queue_full.fetch_add(1, Ordering::Relaxed);
            }
        }
        while let Some(id) = hub.poll_closed() {
            // Dropping its queue ends its writer, which closes the WebSocket
            // after what is queued.
            queues.remove(&id);
            hub.close(id);
        }
        *stats.hub.lock().unwrap_or_else(PoisonError::into_inner) = hub.counters();
        stats.connected_nodes.store(hub.nodes().count() as u64, Ordering::Relaxed);
    }
}

/// One node's connection: handshakes, then frames both ways.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    to_hub: mpsc::Sender<ToHub>,
    stats: Arc<HubPortStats>,
) {
    let handshake = async {
        let tls = acceptor.accept(tcp).await.map_err(|e| {
            stats.tls_refused.fetch_add(1, Ordering::Relaxed);
            format!("TLS: {e}")
        })?;
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME))
            .max_frame_size(Some(MAX_FRAME));
        tokio_tungstenite::accept_hdr_async_with_config(tls, subprotocol_check, Some(config)).await.map_err(|e| {
            stats.wrong_subprotocol.fetch_add(1, Ordering::Relaxed);
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
    let (queue, mut outbound) = mpsc::channel::<Vec<u8>>(CONNECTION_QUEUE);
    let (answer, id) = oneshot::channel();
    if to_hub.send(ToHub::Open(queue, answer)).await.is_err() {
        return;
    }
    let Ok(Some(id)) = id.await else {
        tracing::warn!(%peer, "BACnet/SC hub: connection refused: the hub is at its connection bound");
        return;
    };
    let (mut write, mut read) = ws.split();
    loop {
        tokio::select! {
            frame = outbound.recv() => match frame {
                Some(f) => if write.send(Message::Binary(f.into())).await.is_err() { break },
                None => { let _ = write.close().await; break }
            },
            m = read.next() => match m {
                Some(Ok(Message::Binary(data))) => {
                    if to_hub.send(ToHub::Frame(id, data.to_vec())).await.is_err() { break }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => { stats.bad_frames.fetch_add(1, Ordering::Relaxed); }
                Some(Err(e)) => {
                    stats.bad_frames.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, "BACnet/SC hub: WebSocket error: {e}");
                    break;
                }
            },
        }
    }
    let _ = to_hub.send(ToHub::Closed(id)).await;
}

/// Take the upgrade only with the hub subprotocol, and say it back.
#[allow(clippy::result_large_err)]
fn subprotocol_check(request: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
    let offered = request
        .headers()
        .get_all("Sec-WebSocket-Protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == HUB_SUBPROTOCOL);
    if !offered {
        let mut refusal = ErrorResponse::new(Some(format!("subprotocol {HUB_SUBPROTOCOL} required")));
        *refusal.status_mut() = StatusCode::BAD_REQUEST;
        return Err(refusal);
    }
    response.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static(HUB_SUBPROTOCOL));
    Ok(response)
}
