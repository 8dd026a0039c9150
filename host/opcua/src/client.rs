//! The gateway as an OPC UA client: a session to one server that monitors
//! a list of nodes (a subscription: the server pushes their changes, the
//! client never polls) and writes values back.
//!
//! The session is kept by async-opcua's event loop: a lost connection is
//! retried with back-off for as long as the client runs. A reactivated
//! session keeps its subscription; on a new one (the server restarted) the
//! subscription and its monitored items are made again here. Every
//! (re)connection reads the nodes' DataTypes, so a value written back has
//! the type the server expects.
//!
//! Must never: block the notification callback (values go to a bounded
//! channel; a full channel drops and counts), or give up reconnecting.

use crate::server::Security;
use opcua::client::{ClientBuilder, DataChangeCallback, IdentityToken, Password, Session, SessionPollResult};
use opcua::crypto::SecurityPolicy;
use opcua::types::{
    AttributeId, DataTypeId, DataValue, MessageSecurityMode, MonitoredItemCreateRequest, MonitoringMode,
    MonitoringParameters, NodeId, ReadValueId, StatusCode, TimestampsToReturn, Variant, WriteValue,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// How to reach the server and what to monitor.
#[derive(Debug, Clone)]
pub struct PullSettings {
    /// The server's endpoint URL (`opc.tcp://host:port/path`).
    pub url: String,
    /// The endpoint's security.
    pub security: Security,
    /// A user name and password, or anonymous.
    pub user: Option<(String, String)>,
    /// The client's certificate store (own certificate, trusted/rejected server certificates).
    pub pki_dir: PathBuf,
    /// Trust any server certificate (commissioning only).
    pub trust_server_certs: bool,
    /// The client's application URI.
    pub application_uri: String,
    /// The subscription's publishing interval.
    pub publishing: Duration,
    /// The nodes monitored, in the order events name them.
    pub nodes: Vec<NodeId>,
}

/// What the client tells its owner.
#[derive(Debug, Clone, PartialEq)]
pub enum PullEvent {
    /// A monitored node's value (its index in [`PullSettings::nodes`]).
    Value {
        /// Index of the node.
        index: usize,
        /// What the server reported (a Bad status without a value included).
        value: DataValue,
    },
    /// A session is up (first connection or a recovery).
    Connected,
    /// The connection was lost; the client is reconnecting.
    Lost(StatusCode),
}

/// Counters of a client.
#[derive(Debug, Default)]
pub struct PullStats {
    /// Notifications handed on.
    pub values: AtomicU64,
    /// Notifications dropped because the owner was behind.
    pub dropped: AtomicU64,
    /// Sessions made (1 + recoveries).
    pub sessions: AtomicU64,
}

/// A running client.
pub struct Puller {
    session: Arc<Session>,
    nodes: Vec<NodeId>,
    types: Arc<std::sync::RwLock<Vec<Option<DataTypeId>>>>,
    /// Its counters.
    pub stats: Arc<PullStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Puller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn endpoint(security: Security) -> (&'static str, MessageSecurityMode) {
    match security {
        Security::None => (SecurityPolicy::None.to_str(), MessageSecurityMode::None),
        Security::Basic256Sha256Sign => (SecurityPolicy::Basic256Sha256.to_str(), MessageSecurityMode::Sign),
        Security::Basic256Sha256SignAndEncrypt => {
            (SecurityPolicy::Basic256Sha256.to_str(), MessageSecurityMode::SignAndEncrypt)
        }
    }
}

/// The DataType of a value read from a DataType attribute, if it is one
/// of the built-in scalar types written back.
fn data_type(v: &DataValue) -> Option<DataTypeId> {
    let Some(Variant::NodeId(id)) = &v.value else { return None };
    if id.namespace != 0 {
        return None;
    }
    DataTypeId::try_from(id.as_u32()?).ok()
}

impl Puller {
    /// Connect (retrying until the server answers) and monitor the nodes;
    /// events go to the returned channel.
    pub async fn start(settings: PullSettings) -> Result<(Puller, mpsc::Receiver<PullEvent>), String> {
        let mut client = ClientBuilder::new()
            .application_name("Trellis gateway (OPC UA client)")
            .application_uri(settings.application_uri.clone())
            .product_uri("urn:trellis")
            .pki_dir(settings.pki_dir.clone())
            .create_sample_keypair(true)
            .trust_server_certs(settings.trust_server_certs)
            .session_retry_limit(-1)
            .session_retry_initial(Duration::from_millis(500))
            .session_retry_max(Duration::from_secs(10))
            .session_timeout(60_000)
            // Subscriptions are made again here on a new session: the ones
            // async-opcua 0.19 remakes while reconnecting never publish.
            .recreate_subscriptions(false)
            .client()
            .map_err(|e| e.join("; "))?;
        // async-opcua made the client's certificate if there was none:
        // its key is the owner's only.
        let key = opcua::crypto::CertificateStore::new(&settings.pki_dir).own_private_key_path();
        if key.exists() {
            crate::certs::keep_private(&key)?;
        }
        let identity = match &settings.user {
            Some((user, password)) => IdentityToken::UserName(user.clone(), Password::new(password.clone())),
            None => IdentityToken::Anonymous,
        };
        let (policy, mode) = endpoint(settings.security);
        // The endpoint list comes from the server: wait for it to answer.
        let mut wait = Duration::from_millis(250);
        let (session, event_loop) = loop {
            match client.connect_to_matching_endpoint((settings.url.as_str(), policy, mode), identity.clone()).await {
                Ok(s) => break s,
                Err(e) => {
                    tracing::warn!(url = settings.url, "OPC UA client: cannot reach the server yet ({e}); retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(10));
                }
            }
        };
        let (tx, rx) = mpsc::channel(4096);
        let stats = Arc::new(PullStats::default());
        let types = Arc::new(std::sync::RwLock::new(vec![None; settings.nodes.len()]));
        let mut by_node: HashMap<NodeId, Vec<usize>> = HashMap::new();
        for (i, n) in settings.nodes.iter().enumerate() {
            by_node.entry(n.clone()).or_default().push(i);
        }
        let by_node = Arc::new(by_node);
        let nodes = settings.nodes.clone();
        let task = tokio::spawn(run(session.clone(), event_loop, settings, tx, stats.clone(), types.clone(), by_node));
        Ok((Puller { session, nodes, types, stats, task }, rx))
    }

    /// Write `value` to node `index`, converted to the node's DataType
    /// (read at the last connection) when it is a number or a boolean.
    pub async fn write(&self, index: usize, value: Variant) -> Result<(), StatusCode> {
        let node = self.nodes.get(index).ok_or(StatusCode::BadNodeIdUnknown)?;
        let target = self.types.read().ok().and_then(|t| t.get(index).copied().flatten());
        let value = match target {
            Some(t) => cast(&value, t).ok_or(StatusCode::BadTypeMismatch)?,
            None => value,
        };
        let write = WriteValue {
            node_id: node.clone(),
            attribute_id: AttributeId::Value as u32,
            index_range: Default::default(),
            // The value alone: servers may refuse timestamps they did not
            // make (open62541 answers BadWriteNotSupported).
            value: DataValue { value: Some(value), ..Default::default() },
        };
        let results = self.session.write(&[write]).await.map_err(|e| e.status())?;
        match results.first() {
            Some(s) if s.is_good() => Ok(()),
            Some(s) => Err(*s),
            None => Err(StatusCode::BadUnexpectedError),
        }
    }
}

/// `v` as a Variant of DataType `t`, for the built-in numeric and boolean
/// types; `None` when it does not fit.
pub fn cast(v: &Variant, t: DataTypeId) -> Option<Variant> {
    let n = match v {
        Variant::Boolean(b) => f64::from(u8::from(*b)),
        other => match crate::convert::numeric(other) {
            Some(n) => n,
            None => return Some(other.clone()),
        },
    };
    let whole = n.fract() == 0.0;
    let fits = |lo: f64, hi: f64| whole && n >= lo && n <= hi;
    Some(match t {
        DataTypeId::Boolean if n == 0.0 || n == 1.0 => Variant::Boolean(n == 1.0),
        DataTypeId::Float if n.abs() <= f64::from(f32::MAX) => Variant::Float(n as f32),
        DataTypeId::Double => Variant::Double(n),
        DataTypeId::SByte if fits(-128.0, 127.0) => Variant::SByte(n as i8),
        DataTypeId::Byte if fits(0.0, 255.0) => Variant::Byte(n as u8),
        DataTypeId::Int16 if fits(-32768.0, 32767.0) => Variant::Int16(n as i16),
        DataTypeId::UInt16 if fits(0.0, 65535.0) => Variant::UInt16(n as u16),
        DataTypeId::Int32 if fits(f64::from(i32::MIN), f64::from(i32::MAX)) => Variant::Int32(n as i32),
        DataTypeId::UInt32 if fits(0.0, f64::from(u32::MAX)) => Variant::UInt32(n as u32),
        DataTypeId::Int64 if fits(i64::MIN as f64, i64::MAX as f64) => Variant::Int64(n as i64),
        DataTypeId::UInt64 if fits(0.0, u64::MAX as f64) => Variant::UInt64(n as u64),
        _ => return None,
    })
}

/// Drive the session: on each (re)connection read the DataTypes and make
/// the subscription; report values and connection changes.
async fn run<C: opcua::client::transport::Connector + Send + Sync + 'static>(
    session: Arc<Session>,
    event_loop: opcua::client::SessionEventLoop<C>,
    settings: PullSettings,
    tx: mpsc::Sender<PullEvent>,
    stats: Arc<PullStats>,
    types: Arc<std::sync::RwLock<Vec<Option<DataTypeId>>>>,
    by_node: Arc<HashMap<NodeId, Vec<usize>>>,
) {
    use futures_util::StreamExt;
    let stream = event_loop.enter();
    tokio::pin!(stream);
    // Our subscription: kept by a reactivated session, made again on a new
    // one (the old one's client-side state deleted first).
    let current: Arc<tokio::sync::Mutex<Option<u32>>> = Arc::default();
    while let Some(event) = stream.next().await {
        match event {
            Ok(SessionPollResult::Reconnected(mode)) => {
                stats.sessions.fetch_add(1, Ordering::Relaxed);
                tracing::info!(url = settings.url, ?mode, "OPC UA client: session up");
                let session = session.clone();
                let current = current.clone();
                let fresh = matches!(mode, opcua::client::SessionConnectMode::NewSession(_));
                let (settings, tx, stats, types, by_node) =
                    (settings.clone(), tx.clone(), stats.clone(), types.clone(), by_node.clone());
                // The subscription is made by requests that need the event
                // loop running: off this task.
                tokio::spawn(async move {
                    read_types(&session, &settings.nodes, &types).await;
                    let mut current = current.lock().await;
                    if fresh || current.is_none() {
                        if let Some(old) = current.take() {
                            let _ = session.delete_subscription(old).await;
                        }
                        match subscribe(&session, &settings, tx.clone(), stats, by_node).await {
                            Ok(id) => *current = Some(id),
                            Err(e) => {
                                tracing::warn!(
                                    url = settings.url,
                                    "OPC UA client: the subscription could not be made: {e}"
                                )
                            }
                        }
                    }
                    drop(current);
                    let _ = tx.send(PullEvent::Connected).await;
                });
            }
            Ok(SessionPollResult::ConnectionLost(status)) => {
                tracing::warn!(url = settings.url, "OPC UA client: connection lost ({status}); reconnecting");
                let _ = tx.try_send(PullEvent::Lost(status));
            }
            Ok(_) => {}
            Err(status) => {
                tracing::error!(url = settings.url, "OPC UA client: the session ended ({status})");
                let _ = tx.try_send(PullEvent::Lost(status));
                return;
            }
        }
    }
}

async fn read_types(session: &Session, nodes: &[NodeId], types: &std::sync::RwLock<Vec<Option<DataTypeId>>>) {
    let ids: Vec<ReadValueId> = nodes.iter().map(|n| ReadValueId::new(n.clone(), AttributeId::DataType)).collect();
    match session.read(&ids, TimestampsToReturn::Neither, 0.0).await {
        Ok(values) => {
            if let Ok(mut t) = types.write() {
                *t = values.iter().map(data_type).collect();
                t.resize(nodes.len(), None);
            }
        }
        Err(e) => tracing::warn!("OPC UA client: the nodes' DataTypes could not be read: {e}"),
    }
}

async fn subscribe(
    session: &Session,
    settings: &PullSettings,
    tx: mpsc::Sender<PullEvent>,
    stats: Arc<PullStats>,
    by_node: Arc<HashMap<NodeId, Vec<usize>>>,
) -> Result<u32, String> {
    let callback = DataChangeCallback::new(move |value: DataValue, item| {
        let Some(indexes) = by_node.get(&item.item_to_monitor().node_id) else { return };
        for &index in indexes {
            match tx.try_send(PullEvent::Value { index, value: value.clone() }) {
                Ok(()) => stats.values.fetch_add(1, Ordering::Relaxed),
                Err(_) => stats.dropped.fetch_add(1, Ordering::Relaxed),
            };
        }
    });
    let id = session
        .create_subscription(settings.publishing, 60, 10, 0, 0, true, callback)
        .await
        .map_err(|e| e.to_string())?;
    let items: Vec<MonitoredItemCreateRequest> = settings
        .nodes
        .iter()
        .map(|n| {
            MonitoredItemCreateRequest::new(
                n.clone().into(),
                MonitoringMode::Reporting,
                MonitoringParameters {
                    sampling_interval: settings.publishing.as_secs_f64() * 1000.0 / 2.0,
                    queue_size: 10,
                    discard_oldest: true,
                    ..Default::default()
                },
            )
        })
        .collect();
    let created =
        session.create_monitored_items(id, TimestampsToReturn::Both, items).await.map_err(|e| e.to_string())?;
    for (node, item) in settings.nodes.iter().zip(&created) {
        if !item.result.status_code.is_good() {
            tracing::warn!(url = settings.url, %node, "OPC UA client: the server refused to monitor a node ({})", item.result.status_code);
        }
    }
    Ok(id)
}
