//! Direct connections' WebSockets (the node switch, AB.4): a listener that
//! takes peers' connections with the `dc.bsc.bacnet.org` subprotocol, and
//! the connections we open to the URIs a peer gave. What they carry goes
//! to the node's switch ([`bacnet::sc::switch::NodeSwitch`]), under the
//! node's lock, as the hub links' frames go to its connector.
//!
//! Must never: take a direct connection without TLS and a certificate from
//! the node's issuers, or hold the node's lock across an await.

use crate::DIRECT_SUBPROTOCOL;
use crate::node::{NodeState, lock};
use bacnet::sc::switch::DirectId;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

/// Direct connections for a node.
#[derive(Debug)]
pub struct DirectConfig {
    /// Take peers' direct connections: where, with which TLS, and the URIs
    /// peers are told (Address-Resolution-ACK).
    pub accept: Option<DirectAccept>,
    /// Open direct connections to the nodes we send to.
    pub initiate: bool,
}

/// Where a node takes direct connections.
#[derive(Debug)]
pub struct DirectAccept {
    /// The listener (bound by the caller; non-blocking).
    pub listener: std::net::TcpListener,
    /// Our TLS as the accepting side (peers' certificates checked against
    /// our issuers).
    pub tls: Arc<rustls::ServerConfig>,
    /// The URIs peers connect to, e.g. `wss://10.0.0.5:47844/`.
    pub uris: Vec<String>,
}

type Shared = Arc<Mutex<NodeState>>;

/// Report to the switch and let the node act on it.
fn report(shared: &Shared, what: impl FnOnce(&mut NodeState, std::time::Duration)) {
    let mut s = lock(shared);
    let now = s.now();
    what(&mut s, now);
    s.pump(shared);
}

/// Take peers' direct connections until the node stops.
pub(crate) async fn accept_loop(
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    shared: Shared,
    mut stopped: watch::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("BACnet/SC node: direct connections cannot be taken: {e}");
            return;
        }
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        let (tcp, peer) = tokio::select! {
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("BACnet/SC node: accepting a direct connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stopped.changed() => return,
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, shared, mut stopped) = (acceptor.clone(), shared.clone(), stopped.clone());
        tokio::spawn(async move {
            let handshake = async {
                let tls = acceptor.accept(tcp).await.map_err(|e| format!("TLS: {e}"))?;
                crate::ws::accept(tls, DIRECT_SUBPROTOCOL).await.map_err(|e| format!("WebSocket upgrade: {e}"))
            };
            let ws = match tokio::time::timeout(crate::hub::HANDSHAKE_LIMIT, handshake).await {
                Ok(Ok(ws)) => ws,
                Ok(Err(why)) => {
                    tracing::warn!(%peer, "BACnet/SC node: direct connection refused: {why}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, "BACnet/SC node: direct connection refused: handshake too slow");
                    return;
                }
            };
            let (writer, mut outbound) = mpsc::channel::<Vec<u8>>(crate::hub::CONNECTION_QUEUE);
            let id = {
                let mut s = lock(&shared);
                let now = s.now();
                let id = s.switch.as_mut().and_then(|sw| sw.accepted(now));
                if let Some(id) = id {
                    s.direct_writers.insert(id, writer);
                }
                id
            };
            let Some(id) = id else {
                tracing::warn!(%peer, "BACnet/SC node: direct connection refused: at the bound");
                return;
            };
            carry(&shared, id, ws, &mut outbound, &mut stopped).await;
        });
    }
}

/// Open a direct connection for `id` to the first of `uris` that answers.
pub(crate) async fn open(
    shared: Shared,
    id: DirectId,
    uris: Vec<String>,
    tls: Arc<rustls::ClientConfig>,
    mut stopped: watch::Receiver<()>,
) {
    let mut why = Vec::new();
    for uri in &uris {
        let connecting =
            tokio::time::timeout(crate::hub::HANDSHAKE_LIMIT, crate::ws::connect(uri, tls.clone(), DIRECT_SUBPROTOCOL));
        let outcome = tokio::select! {
            o = connecting => o,
            _ = stopped.changed() => return,
        };
        match outcome {
            Ok(Ok(ws)) => {
                let (writer, mut outbound) = mpsc::channel::<Vec<u8>>(crate::hub::CONNECTION_QUEUE);
                report(&shared, |s, now| {
                    s.direct_writers.insert(id, writer);
                    if let Some(sw) = s.switch.as_mut() {
                        sw.opened(now, id);
                    }
                });
                tracing::debug!(%uri, "BACnet/SC node: direct connection open");
                carry(&shared, id, ws, &mut outbound, &mut stopped).await;
                return;
            }
            Ok(Err(e)) => why.push(format!("{uri}: {e}")),
            Err(_) => why.push(format!("{uri}: no answer within the handshake limit")),
        }
    }
    tracing::info!("BACnet/SC node: no direct connection (the hub carries on): {}", why.join("; "));
    report(&shared, |s, now| {
        if let Some(sw) = s.switch.as_mut() {
            sw.open_failed(now, id);
        }
    });
}

/// Carry direct connection `id` until it ends; the switch hears of a loss.
async fn carry<S>(
    shared: &Shared,
    id: DirectId,
    ws: tokio_tungstenite::WebSocketStream<S>,
    outbound: &mut mpsc::Receiver<Vec<u8>>,
    stopped: &mut watch::Receiver<()>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let ended = crate::ws::carry(ws, outbound, stopped, |frame| {
        let mut s = lock(shared);
        if !s.direct_writers.contains_key(&id) {
            return false;
        }
        let now = s.now();
        if let Some(sw) = s.switch.as_mut() {
            sw.handle_frame(now, id, frame);
        }
        s.pump(shared);
        true
    })
    .await;
    if ended == crate::ws::Ended::Lost {
        report(shared, |s, now| {
            s.direct_writers.remove(&id);
            if let Some(sw) = s.switch.as_mut() {
                sw.closed(now, id);
            }
        });
    }
}
