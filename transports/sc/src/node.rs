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
use bacnet::sc::switch::{DirectId, NodeSwitch, SwitchAction, SwitchConfig, SwitchCounters};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::http::Uri;

/// How a node reaches its hubs (and, with a node switch, its peers).
#[derive(Debug)]
pub struct NodeConfig {
    /// The primary hub, `wss://host:port/path`.
    pub primary: String,
    /// The failover hub, if any.
    pub failover: Option<String>,
    /// Our TLS (from [`crate::tls::ScCredentials::client_config`]).
    pub tls: Arc<rustls::ClientConfig>,
    /// The connector's settings (our VMAC, UUID, sizes, timers).
    pub connector: ConnectorConfig,
    /// Direct connections to other nodes (a node switch), if any.
    pub direct: Option<crate::direct::DirectConfig>,
}

/// The node's state and whoever reports to it. Shared by the node's
/// handles (which send NPDUs), its hub links (which hand it their frames)
/// and its timer: no task between a frame's arrival and the NPDU's
/// delivery, nor between a send and the link's queue.
pub(crate) struct NodeState {
    connector: HubConnector,
    /// The node switch, with direct connections configured.
    pub(crate) switch: Option<NodeSwitch>,
    /// Each open direct connection's writer queue.
    pub(crate) direct_writers: HashMap<DirectId, mpsc::Sender<Vec<u8>>>,
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

pub(crate) type Shared = Arc<Mutex<NodeState>>;

pub(crate) fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, NodeState> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn slot(h: HubChoice) -> usize {
    match h {
        HubChoice::Primary => 0,
        HubChoice::Failover => 1,
    }
}

impl NodeState {
    pub(crate) fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Carry out what the connector (and the switch) ask, hand up what
    /// they received, and take a new VMAC when a hub refused ours.
    pub(crate) fn pump(&mut self, shared: &Shared) {
        loop {
            if self.pump_switch(shared) {
                continue;
            }
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
                tracing::warn!(
                    "BACnet/SC node: the hub refused our VMAC as a duplicate; trying {}",
                    crate::identity::hex(&vmac)
                );
                self.status.vmac = vmac;
                self.connector.set_vmac(vmac);
                if let Some(sw) = self.switch.as_mut() {
                    sw.set_vmac(vmac);
                }
                continue;
            }
            if self.pump_switch(shared) {
                continue;
            }
            break;
        }
        self.status.hub = self.connector.status();
        self.status.counters = self.connector.counters();
        if let Some(sw) = &self.switch {
            self.status.direct_peers = sw.connected().count();
            self.status.direct = sw.counters();
        }
    }

    /// The switch's part: resolution messages from the hub to it, its
    /// actions carried out, its NPDUs handed up. True if anything moved
    /// (the connector may have more to do).
    fn pump_switch(&mut self, shared: &Shared) -> bool {
        let Some(sw) = self.switch.as_mut() else { return false };
        let now = self.epoch.elapsed();
        let mut moved = false;
        while let Some(m) = self.connector.poll_message() {
            sw.handle_hub_message(now, &m);
            moved = true;
        }
        while let Some(action) = sw.poll_action() {
            match action {
                SwitchAction::Open(_, _) if self.stopped.has_changed().is_err() => {}
                SwitchAction::Open(id, uris) => {
                    let task = crate::direct::open(shared.clone(), id, uris, self.tls.clone(), self.stopped.clone());
                    tokio::spawn(task);
                }
                SwitchAction::Close(id) => {
                    self.direct_writers.remove(&id);
                }
                SwitchAction::Send(id, frame) => {
                    if let Some(w) = self.direct_writers.get(&id)
                        && w.try_send(frame).is_err()
                    {
                        self.status.dropped += 1;
                    }
                }
                SwitchAction::ViaHub(frame) => {
                    self.connector.send_frame(frame);
                    moved = true;
                }
            }
        }
        while let Some(u) = sw.poll_up() {
            if self.up.try_send(u).is_err() {
                self.status.dropped += 1;
            }
        }
        moved
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
    /// Peers directly connected now (with a node switch).
    pub direct_peers: usize,
    /// The node switch's counters.
    pub direct: SwitchCounters,
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
        let mut accept = None;
        let switch = config.direct.map(|d| {
            let uris = d.accept.as_ref().map(|a| a.uris.clone()).unwrap_or_default();
            accept = d.accept;
            NodeSwitch::new(SwitchConfig::new(config.connector.connection, uris, d.initiate))
        });
        let shared = Arc::new(Mutex::new(NodeState {
            status: NodeStatus {
                hub: HubConnectionStatus::NO_HUB_CONNECTION,
                vmac: config.connector.connection.local.vmac,
                counters: Default::default(),
                dropped: 0,
                direct_peers: 0,
                direct: SwitchCounters::default(),
            },
            // Whether there is a failover is the URIs' to say; resolution
            // messages are the switch's when there is one.
            connector: HubConnector::new(ConnectorConfig {
                has_failover: config.failover.is_some(),
                node_switch: switch.is_some(),
                ..config.connector
            }),
            switch,
            direct_writers: HashMap::new(),
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
        if let Some(a) = accept {
            tokio::spawn(crate::direct::accept_loop(a.listener, a.tls, shared.clone(), stopped.clone()));
        }
        tokio::spawn(run_timers(shared.clone(), stopped));
        (ScNode { shared, _stop: Arc::new(stop) }, up_rx)
    }

    /// Send an NPDU to `destination` (a VMAC, or the broadcast VMAC): on
    /// the connected hub's queue at once. An NPDU with no hub connected,
    /// or with its queue full, is counted and dropped.
    pub async fn send(&self, destination: ScVmac, npdu: Vec<u8>) -> std::io::Result<()> {
        let mut s = lock(&self.shared);
        let now = s.now();
        let direct = s.switch.as_mut().is_some_and(|sw| sw.send_npdu(now, destination, &npdu));
        if !direct {
            s.connector.send_npdu(destination, &npdu);
        }
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
            let switch = s.switch.as_ref().and_then(NodeSwitch::poll_timeout);
            s.connector
                .poll_timeout()
                .into_iter()
                .chain(switch)
                .min()
                .map_or(TIMER_GRANULARITY, |d| d.saturating_sub(now).min(TIMER_GRANULARITY))
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => return,
        }
        let mut s = lock(&shared);
        let now = s.now();
        s.connector.handle_timeout(now);
        if let Some(sw) = s.switch.as_mut() {
            sw.handle_timeout(now);
        }
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
        let connecting =
            tokio::time::timeout(crate::hub::HANDSHAKE_LIMIT, crate::ws::connect(&uri, tls, HUB_SUBPROTOCOL));
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
        let ended = crate::ws::carry(ws, &mut outbound, &mut self.stopped.clone(), |d| {
            self.report(|s, now| s.connector.handle_frame(now, h, d))
        })
        .await;
        if ended == crate::ws::Ended::Ours {
            return;
        }
        self.report(|s, now| {
            s.writers[slot(h)] = None;
            s.connector.closed(now, h);
        });
    }
}

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
