//! A BACnet/SC node's link to its hubs: the core's hub connector
//! ([`HubConnector`]: primary, failover, back-off) driven over real
//! WebSockets with TLS 1.3.
//!
//! The connector sits behind a lock shared by the node's handles, its hub
//! links and a timer task. For each hub it says to open, a link task
//! connects (TCP, TLS with our certificate, the WebSocket upgrade with the
//! `hub.bsc.bacnet.org` subprotocol), then hands every frame it reads to the
//! connector itself and writes its queue in bursts. NPDUs to send go in
//! through [`ScNode::send`] (straight onto the link's queue); NPDUs received
//! come out of the receiver [`ScNode::start`] returns.
//!
//! A hub that refuses our VMAC as a duplicate gets a new random one
//! (Random-48, Clause H.7.3: the low nibble of the first octet 0x2).
//!
//! Must never: send an NPDU to a hub it is not connected to, hold the lock
//! across an await, or outlive its last handle.

use crate::HUB_SUBPROTOCOL;
use bacnet::bvlc_sc::{HubConnectionStatus, ScVmac};
use bacnet::sc::connector::{Action, ConnectorConfig, HubChoice, HubConnector, Up};
use futures_util::{SinkExt, StreamExt};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, Uri};

/// How a node reaches its hubs.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The primary hub, `wss://host:port/path`.
    pub primary: String,
    /// The failover hub, if any.
    pub failover: Option<String>,
    /// Our TLS (from [`crate::tls::ScCredentials::client_config`]).
    pub tls: Arc<rustls::ClientConfig>,
    /// The connector's settings (our VMAC, UUID, sizes, timers).
    pub connector: ConnectorConfig,
}

/// The node's state and whoever reports to it. Shared by the node's
/// handles (which send NPDUs), its hub links (which hand it their frames)
/// and its timer: no task between a frame's arrival and the NPDU's
/// delivery, nor between a send and the link's queue.
struct NodeState {
    connector: HubConnector,
    epoch: Instant,
    primary: String,
    failover: Option<String>,
    tls: Arc<rustls::ClientConfig>,
    /// Per hub: the current attempt (older attempts' reports are ignored)
    /// and, once open, its writer's queue.
    attempt: [u64; 2],
    writers: [Option<mpsc::Sender<Vec<u8>>>; 2],
    generation: u64,
    up: mpsc::Sender<Up>,
    status: NodeStatus,
    /// Ends the links and the timer when the last handle is dropped.
    stopped: watch::Receiver<()>,
}

type Shared = Arc<Mutex<NodeState>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, NodeState> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn slot(h: HubChoice) -> usize {
    match h {
        HubChoice::Primary => 0,
        HubChoice::Failover => 1,
    }
}

impl NodeState {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Carry out what the connector asks, hand up what it received, and
    /// take a new VMAC when a hub refused ours.
    fn pump(&mut self, shared: &Shared) {
        loop {
            while let Some(action) = self.connector.poll_action() {
                match action {
                    // The last handle is gone: open nothing more.
                    Action::Open(_) if self.stopped.has_changed().is_err() => {}
                    Action::Open(h) => {
                        self.generation += 1;
                        self.attempt[slot(h)] = self.generation;
                        self.writers[slot(h)] = None;
                        let uri = match h {
                            HubChoice::Primary => Some(self.primary.clone()),
                            HubChoice::Failover => self.failover.clone(),
                        };
                        let link = Link {
                            shared: shared.clone(),
                            hub: h,
                            this: self.generation,
                            stopped: self.stopped.clone(),
                        };
                        tokio::spawn(link.run(uri, self.tls.clone()));
                    }
                    Action::Close(h) => {
                        self.attempt[slot(h)] = 0;
                        self.writers[slot(h)] = None;
                    }
                    Action::Send(h, frame) => {
                        if let Some(w) = &self.writers[slot(h)]
                            && w.try_send(frame).is_err()
                        {
                            self.status.dropped += 1;
                        }
                    }
                }
            }
            while let Some(u) = self.connector.poll_up() {
                if self.up.try_send(u).is_err() {
                    self.status.dropped += 1;
                }
            }
            if self.connector.duplicate_vmac() {
                let vmac = crate::identity::random_vmac();
                tracing::warn!("BACnet/SC node: the hub refused our VMAC as a duplicate; trying {}", hex(&vmac));
                self.status.vmac = vmac;
                self.connector.set_vmac(vmac);
                continue;
            }
            break;
        }
        self.status.hub = self.connector.status();
        self.status.counters = self.connector.counters();
    }
}

/// The node's state, for operators (the Network Port object's SC
/// properties).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeStatus {
    /// Which hub carries our traffic.
    pub hub: HubConnectionStatus,
    /// Our VMAC now.
    pub vmac: ScVmac,
    /// The connector's counters.
    pub counters: bacnet::sc::connector::ConnectorCounters,
    /// What the node itself dropped: NPDUs received while the receiver's
    /// channel was full, frames for a hub whose queue was full.
    pub dropped: u64,
}

/// A running node (cheap to clone); it stops, closing its hub
/// connections, when the last clone is dropped.
#[derive(Clone)]
pub struct ScNode {
    shared: Shared,
    _stop: Arc<watch::Sender<()>>,
}

impl std::fmt::Debug for ScNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScNode").field("status", &self.status()).finish()
    }
}

/// How late the connector's timers may run: they are of seconds
/// (reconnect intervals, connect waits, heartbeats).
const TIMER_GRANULARITY: Duration = Duration::from_millis(250);

impl ScNode {
    /// Start the node (within the runtime that is to run its hub links);
    /// NPDUs received arrive on the receiver.
    pub fn start(config: NodeConfig) -> (ScNode, mpsc::Receiver<Up>) {
        let (up_tx, up_rx) = mpsc::channel(1024);
        let (stop, stopped) = watch::channel(());
        let shared = Arc::new(Mutex::new(NodeState {
            status: NodeStatus {
                hub: HubConnectionStatus::NO_HUB_CONNECTION,
                vmac: config.connector.connection.local.vmac,
                counters: Default::default(),
                dropped: 0,
            },
            // Whether there is a failover is the URIs' to say.
            connector: HubConnector::new(ConnectorConfig {
                has_failover: config.failover.is_some(),
                ..config.connector
            }),
            epoch: Instant::now(),
            primary: config.primary,
            failover: config.failover,
            tls: config.tls,
            attempt: [0; 2],
            writers: [None, None],
            generation: 0,
            up: up_tx,
            stopped: stopped.clone(),
        }));
        lock(&shared).pump(&shared);
        tokio::spawn(run_timers(shared.clone(), stopped));
        (ScNode { shared, _stop: Arc::new(stop) }, up_rx)
    }

    /// Send an NPDU to `destination` (a VMAC, or the broadcast VMAC): on
    /// the connected hub's queue at once. An NPDU with no hub connected,
    /// or with its queue full, is counted and dropped.
    pub async fn send(&self, destination: ScVmac, npdu: Vec<u8>) -> std::io::Result<()> {
        let mut s = lock(&self.shared);
        s.connector.send_npdu(destination, &npdu);
        s.pump(&self.shared);
        Ok(())
    }

    /// Its state now.
    pub fn status(&self) -> NodeStatus {
        lock(&self.shared).status
    }
}

/// The connector's timers, at most [`TIMER_GRANULARITY`] late.
async fn run_timers(shared: Shared, mut stopped: watch::Receiver<()>) {
    loop {
        let wait = {
            let s = lock(&shared);
            let now = s.now();
            s.connector.poll_timeout().map_or(TIMER_GRANULARITY, |d| d.saturating_sub(now).min(TIMER_GRANULARITY))
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => return,
        }
        let mut s = lock(&shared);
        let now = s.now();
        s.connector.handle_timeout(now);
        s.pump(&shared);
    }
}

/// One attempt at one hub: what it reports goes to the node's state, and
/// counts only while it is the current attempt.
struct Link {
    shared: Shared,
    hub: HubChoice,
    this: u64,
    stopped: watch::Receiver<()>,
}

impl Link {
    /// Report to the connector, if this attempt is still the current one.
    fn report(&self, what: impl FnOnce(&mut NodeState, Duration)) -> bool {
        let mut s = lock(&self.shared);
        if s.attempt[slot(self.hub)] != self.this {
            return false;
        }
        let now = s.now();
        what(&mut s, now);
        s.pump(&self.shared);
        true
    }

    /// Connect, then frames both ways until either side ends.
    async fn run(mut self, uri: Option<String>, tls: Arc<rustls::ClientConfig>) {
        let h = self.hub;
        let Some(uri) = uri else {
            self.report(|s, now| {
                tracing::warn!(hub = ?h, "BACnet/SC node: cannot reach the hub: no failover hub configured");
                s.connector.open_failed(now, h);
            });
            return;
        };
        let connecting = tokio::time::timeout(crate::hub::HANDSHAKE_LIMIT, connect(&uri, tls));
        let outcome = tokio::select! {
            o = connecting => o,
            _ = self.stopped.changed() => return,
        };
        let ws = match outcome {
            Ok(Ok(ws)) => ws,
            outcome => {
                let why = match outcome {
                    Ok(Err(why)) => why,
                    _ => "no answer within the handshake limit".into(),
                };
                self.report(|s, now| {
                    tracing::warn!(hub = ?h, "BACnet/SC node: cannot reach the hub: {uri}: {why}");
                    s.writers[slot(h)] = None;
                    s.connector.open_failed(now, h);
                });
                return;
            }
        };
        let (writer, mut outbound) = mpsc::channel::<Vec<u8>>(crate::hub::CONNECTION_QUEUE);
        if !self.report(|s, now| {
            s.writers[slot(h)] = Some(writer);
            s.connector.opened(now, h);
        }) {
            return;
        }
        let (mut write, mut read) = ws.split();
        loop {
            tokio::select! {
                f = outbound.recv() => match f {
                    Some(f) => if crate::write_burst(&mut write, f, &mut outbound).await.is_err() { break },
                    // The connector let this hub go: close it.
                    None => { let _ = tokio::time::timeout(crate::WRITE_LIMIT, write.close()).await; return }
                },
                m = read.next() => match m {
                    Some(Ok(Message::Binary(d))) => {
                        if !self.report(|s, now| s.connector.handle_frame(now, h, &d)) {
                            let _ = tokio::time::timeout(crate::WRITE_LIMIT, write.close()).await;
                            return;
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    _ => break,
                },
                _ = self.stopped.changed() => {
                    let _ = tokio::time::timeout(crate::WRITE_LIMIT, write.close()).await;
                    return
                }
            }
        }
        self.report(|s, now| {
            s.writers[slot(h)] = None;
            s.connector.closed(now, h);
        });
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>;

/// Whether `uri` is one a node can connect to: `wss://`, a host, a port
/// (443 if none, never 0); the reason if not.
pub fn check_hub_uri(uri: &str) -> Result<(), String> {
    let parsed: Uri = uri.parse().map_err(|e| format!("not a URI: {e}"))?;
    if parsed.scheme_str() != Some("wss") {
        return Err("BACnet/SC hubs are wss:// URIs (TLS is never optional)".into());
    }
    if parsed.host().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    if parsed.port_u16() == Some(0) {
        return Err("port 0".into());
    }
    Ok(())
}

/// TCP, TLS 1.3 with our certificate, then the WebSocket upgrade with the
/// hub subprotocol (refused if the hub does not agree to it).
async fn connect(uri: &str, tls: Arc<rustls::ClientConfig>) -> Result<Ws, String> {
    let parsed: Uri = uri.parse().map_err(|e| format!("not a URI: {e}"))?;
    if parsed.scheme_str() != Some("wss") {
        return Err("BACnet/SC hubs are wss:// URIs (TLS is never optional)".into());
    }
    let host = parsed.host().ok_or("no host")?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = parsed.port_u16().unwrap_or(443);
    let tcp = TcpStream::connect((host.as_str(), port)).await.map_err(|e| format!("TCP: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| format!("server name {host}: {e}"))?;
    let stream = TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
    let mut request = uri.into_client_request().map_err(|e| format!("request: {e}"))?;
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static(HUB_SUBPROTOCOL));
    let (ws, response) = tokio_tungstenite::client_async_with_config(request, stream, Some(crate::ws_config()))
        .await
        .map_err(|e| format!("WebSocket upgrade: {e}"))?;
    let agreed = response.headers().get("Sec-WebSocket-Protocol").and_then(|v| v.to_str().ok());
    if agreed != Some(HUB_SUBPROTOCOL) {
        return Err(format!("the hub did not agree to the {HUB_SUBPROTOCOL} subprotocol ({agreed:?})"));
    }
    Ok(ws)
}

fn hex(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}
