//! A BACnet/SC node's link to its hubs: the core's hub connector
//! ([`HubConnector`]: primary, failover, back-off) driven over real
//! WebSockets with TLS 1.3.
//!
//! One task owns the connector. For each hub it says to open, a task
//! connects (TCP, TLS with our certificate, the WebSocket upgrade with the
//! `hub.bsc.bacnet.org` subprotocol) and carries frames both ways; what it
//! learns comes back to the owner as link events. NPDUs to send go in
//! through [`ScNode::send`]; NPDUs received come out of the receiver
//! [`ScNode::start`] returns.
//!
//! A hub that refuses our VMAC as a duplicate gets a new random one
//! (Random-48, Clause H.7.3: the low nibble of the first octet 0x2).
//!
//! Must never: send an NPDU to a hub it is not connected to, or wait on a
//! hub's socket from the owner task.

use crate::HUB_SUBPROTOCOL;
use bacnet::bvlc_sc::{HubConnectionStatus, ScVmac};
use bacnet::sc::connector::{Action, ConnectorConfig, HubChoice, HubConnector, Up};
use futures_util::{SinkExt, StreamExt};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
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

/// What a hub link reports to the owner.
#[derive(Debug)]
enum LinkEvent {
    Opened(mpsc::Sender<Vec<u8>>),
    Failed(String),
    Frame(Vec<u8>),
    Closed,
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
}

/// A running node (cheap to clone).
#[derive(Debug, Clone)]
pub struct ScNode {
    outbound: mpsc::Sender<(ScVmac, Vec<u8>)>,
    status: Arc<Mutex<NodeStatus>>,
}

impl ScNode {
    /// Start the node's task; NPDUs received arrive on the receiver.
    pub fn start(config: NodeConfig) -> (ScNode, mpsc::Receiver<Up>) {
        let (outbound, commands) = mpsc::channel(1024);
        let (up_tx, up_rx) = mpsc::channel(1024);
        let status = Arc::new(Mutex::new(NodeStatus {
            hub: HubConnectionStatus::NO_HUB_CONNECTION,
            vmac: config.connector.connection.local.vmac,
            counters: Default::default(),
        }));
        tokio::spawn(run(config, commands, up_tx, status.clone()));
        (ScNode { outbound, status }, up_rx)
    }

    /// Send an NPDU to `destination` (a VMAC, or the broadcast VMAC).
    /// Fails when the node's task is gone; an NPDU with no hub connected
    /// is counted and dropped by the connector.
    pub async fn send(&self, destination: ScVmac, npdu: Vec<u8>) -> std::io::Result<()> {
        self.outbound
            .send((destination, npdu))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the BACnet/SC node has stopped"))
    }

    /// Its state now.
    pub fn status(&self) -> NodeStatus {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn run(
    config: NodeConfig,
    mut commands: mpsc::Receiver<(ScVmac, Vec<u8>)>,
    up: mpsc::Sender<Up>,
    status: Arc<Mutex<NodeStatus>>,
) {
    let epoch = Instant::now();
    let mut connector = HubConnector::new(config.connector);
    let (events_tx, mut events) = mpsc::channel::<(HubChoice, u64, LinkEvent)>(1024);
    // Per hub: the current attempt (older attempts' events are ignored)
    // and, once open, its writer.
    let mut attempt = [0u64; 2];
    let mut writers: [Option<mpsc::Sender<Vec<u8>>>; 2] = [None, None];
    let mut generation = 0u64;
    let slot = |h: HubChoice| match h {
        HubChoice::Primary => 0,
        HubChoice::Failover => 1,
    };
    loop {
        // Carry out what the connector asks.
        while let Some(action) = connector.poll_action() {
            match action {
                Action::Open(h) => {
                    generation += 1;
                    attempt[slot(h)] = generation;
                    writers[slot(h)] = None;
                    let uri = match h {
                        HubChoice::Primary => Some(config.primary.clone()),
                        HubChoice::Failover => config.failover.clone(),
                    };
                    let (tls, events) = (config.tls.clone(), events_tx.clone());
                    let this = generation;
                    tokio::spawn(async move {
                        match uri {
                            Some(uri) => link(uri, tls, h, this, events).await,
                            None => {
                                let _ = events
                                    .send((h, this, LinkEvent::Failed("no failover hub configured".into())))
                                    .await;
                            }
                        }
                    });
                }
                Action::Close(h) => {
                    attempt[slot(h)] = 0;
                    writers[slot(h)] = None;
                }
                Action::Send(h, frame) => {
                    if let Some(w) = &writers[slot(h)]
                        && w.try_send(frame).is_err()
                    {
                        tracing::debug!("BACnet/SC node: a frame for the hub was dropped (queue full or closed)");
                    }
                }
            }
        }
        while let Some(u) = connector.poll_up() {
            let _ = up.try_send(u);
        }
        if connector.duplicate_vmac() {
            let vmac = crate::identity::random_vmac();
            tracing::warn!("BACnet/SC node: the hub refused our VMAC as a duplicate; trying {}", hex(&vmac));
            status.lock().unwrap_or_else(PoisonError::into_inner).vmac = vmac;
            connector.set_vmac(vmac);
            continue;
        }
        {
            let mut s = status.lock().unwrap_or_else(PoisonError::into_inner);
            s.hub = connector.status();
            s.counters = connector.counters();
        }
        let deadline = connector.poll_timeout().map(|d| epoch + d);
        tokio::select! {
            c = commands.recv() => match c {
                Some((destination, npdu)) => { connector.send_npdu(destination, &npdu); }
                None => return,
            },
            e = events.recv() => {
                let Some((h, this, event)) = e else { return };
                // Only the current attempt's events count.
                if attempt[slot(h)] != this {
                    continue;
                }
                let now = epoch.elapsed();
                match event {
                    LinkEvent::Opened(w) => {
                        writers[slot(h)] = Some(w);
                        connector.opened(now, h);
                    }
                    LinkEvent::Failed(why) => {
                        tracing::warn!(hub = ?h, "BACnet/SC node: cannot reach the hub: {why}");
                        writers[slot(h)] = None;
                        connector.open_failed(now, h);
                    }
                    LinkEvent::Frame(f) => connector.handle_frame(now, h, &f),
                    LinkEvent::Closed => {
                        writers[slot(h)] = None;
                        connector.closed(now, h);
                    }
                }
            },
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                connector.handle_timeout(epoch.elapsed());
            }
        }
    }
}

/// One hub link: connect, then frames both ways until either side ends.
async fn link(
    uri: String,
    tls: Arc<rustls::ClientConfig>,
    hub: HubChoice,
    this: u64,
    events: mpsc::Sender<(HubChoice, u64, LinkEvent)>,
) {
    let ws = match tokio::time::timeout(crate::hub::HANDSHAKE_LIMIT, connect(&uri, tls)).await {
        Ok(Ok(ws)) => ws,
        Ok(Err(why)) => {
            let _ = events.send((hub, this, LinkEvent::Failed(format!("{uri}: {why}")))).await;
            return;
        }
        Err(_) => {
            let _ = events
                .send((hub, this, LinkEvent::Failed(format!("{uri}: no answer within the handshake limit"))))
                .await;
            return;
        }
    };
    let (writer, mut outbound) = mpsc::channel::<Vec<u8>>(crate::hub::CONNECTION_QUEUE);
    if events.send((hub, this, LinkEvent::Opened(writer))).await.is_err() {
        return;
    }
    let (mut write, mut read) = ws.split();
    loop {
        tokio::select! {
            f = outbound.recv() => match f {
                Some(f) => if write.send(Message::Binary(f.into())).await.is_err() { break },
                None => { let _ = write.close().await; break }
            },
            m = read.next() => match m {
                Some(Ok(Message::Binary(d))) => {
                    if events.send((hub, this, LinkEvent::Frame(d.to_vec()))).await.is_err() { return }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                _ => break,
            },
        }
    }
    let _ = events.send((hub, this, LinkEvent::Closed)).await;
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>;

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
    let (ws, response) =
        tokio_tungstenite::client_async(request, stream).await.map_err(|e| format!("WebSocket upgrade: {e}"))?;
    let agreed = response.headers().get("Sec-WebSocket-Protocol").and_then(|v| v.to_str().ok());
    if agreed != Some(HUB_SUBPROTOCOL) {
        return Err(format!("the hub did not agree to the {HUB_SUBPROTOCOL} subprotocol ({agreed:?})"));
    }
    Ok(ws)
}

fn hex(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}
