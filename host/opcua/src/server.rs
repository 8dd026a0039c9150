//! Start the OPC UA server over a [`PointSource`]: endpoints for the chosen
//! security policies, the authenticator, the certificate store, the node
//! manager; and the [`Updater`] the gateway pushes changes through.
//!
//! Must never: start with an endpoint that has no way in (no anonymous
//! access and no user), or bind anything but what the settings name.

use crate::auth::{Access, GatewayAuth, User};
use crate::certs::CertificateRequest;
use crate::manager::{GatewayNodes, NAMESPACE_URI};
use crate::node_ids::NodeIdTable;
use crate::source::{DeviceView, PointRef, PointSource};
use crate::space::{Registry, data_value};
use bacnet::enums::PropertyIdentifier;
use bacnet::{AnyValue, ObjectIdentifier};
use opcua::crypto::SecurityPolicy;
use opcua::server::diagnostics::NamespaceMetadata;
use opcua::server::node_manager::memory::{InMemoryNodeManager, InMemoryNodeManagerBuilder};
use opcua::server::{ServerBuilder, ServerEndpoint, ServerHandle, SubscriptionCache};
use opcua::types::{MessageSecurityMode, NodeId};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// An endpoint's security.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// SecurityPolicy None.
    None,
    /// Basic256Sha256, Sign.
    Basic256Sha256Sign,
    /// Basic256Sha256, SignAndEncrypt.
    Basic256Sha256SignAndEncrypt,
}

impl Security {
    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Security::None => "none",
            Security::Basic256Sha256Sign => "basic256sha256-sign",
            Security::Basic256Sha256SignAndEncrypt => "basic256sha256-sign-encrypt",
        }
    }

    /// By its name in the configuration.
    pub fn from_name(name: &str) -> Option<Security> {
        [Security::None, Security::Basic256Sha256Sign, Security::Basic256Sha256SignAndEncrypt]
            .into_iter()
            .find(|s| s.name() == name)
    }

    fn endpoint(self, users: bool) -> ServerEndpoint {
        let ids = [opcua::server::ANONYMOUS_USER_TOKEN_ID.to_owned()];
        let (policy, mode) = match self {
            Security::None => (SecurityPolicy::None, MessageSecurityMode::None),
            Security::Basic256Sha256Sign => (SecurityPolicy::Basic256Sha256, MessageSecurityMode::Sign),
            Security::Basic256Sha256SignAndEncrypt => {
                (SecurityPolicy::Basic256Sha256, MessageSecurityMode::SignAndEncrypt)
            }
        };
        let mut e = ServerEndpoint::new("/", policy, mode, &ids);
        if users && self == Security::None {
            // Passwords never cross in clear: encrypted with the server's certificate.
            e.password_security_policy = Some(SecurityPolicy::Basic256Sha256.to_str().to_owned());
        }
        e
    }
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The host name in endpoint URLs (clients connect to what they are told).
    pub host_name: String,
    /// The application name.
    pub application_name: String,
    /// The application URI (also in the certificate).
    pub application_uri: String,
    /// Endpoints offered.
    pub security: Vec<Security>,
    /// What anonymous sessions may do.
    pub anonymous: Access,
    /// User-name identities.
    pub users: Vec<User>,
    /// The certificate store.
    pub pki_dir: PathBuf,
    /// Trust every client certificate (tests and commissioning only).
    pub trust_client_certs: bool,
    /// Where NodeIds are persisted (`None`: they may change at restart).
    pub node_ids: Option<PathBuf>,
    /// The BACnet priority OPC UA writes go at.
    pub write_priority: u8,
    /// Sessions at once.
    pub max_sessions: usize,
    /// The shortest publishing interval a subscription gets, in ms; also
    /// how often subscriptions are looked at (the floor of DataChange
    /// latency; each look is cheap, but it is a wake-up).
    pub min_publishing_interval_ms: u64,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The settings cannot work.
    #[error("{0}")]
    Settings(String),
    /// The NodeId table could not be read.
    #[error("node ids: {0}")]
    NodeIds(#[from] crate::node_ids::NodeIdError),
    /// The certificate could not be made.
    #[error("certificate: {0}")]
    Certificate(String),
    /// The port could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// async-opcua refused the configuration.
    #[error("OPC UA server: {0}")]
    Server(String),
}

/// The server, running.
pub struct Running<S: PointSource> {
    /// Where it listens.
    pub local_addr: SocketAddr,
    /// Its endpoint URL.
    pub url: String,
    /// Pushes changes into it.
    pub updater: Updater<S>,
    /// async-opcua's handle (sessions, subscriptions, shutdown).
    pub handle: ServerHandle,
    /// Says how the server ended (when the handle is cancelled, or it failed).
    pub ended: tokio::sync::oneshot::Receiver<Result<(), String>>,
}

/// Pushes the gateway's changes into the address space and its subscribers.
pub struct Updater<S: PointSource> {
    manager: Arc<InMemoryNodeManager<GatewayNodes<S>>>,
    subscriptions: Arc<SubscriptionCache>,
    registry: Arc<std::sync::RwLock<Registry>>,
}

impl<S: PointSource> Clone for Updater<S> {
    fn clone(&self) -> Self {
        Updater {
            manager: self.manager.clone(),
            subscriptions: self.subscriptions.clone(),
            registry: self.registry.clone(),
        }
    }
}

impl<S: PointSource> Updater<S> {
    /// `object` of `device` reported these values (a COV notification):
    /// the variables that stand for them change, their subscribers hear it.
    /// Returns how many variables changed.
    pub fn changed(
        &self,
        device: u32,
        object: ObjectIdentifier,
        values: impl IntoIterator<Item = (PropertyIdentifier, AnyValue)>,
    ) -> usize {
        let mut out_of_service = None;
        let (updates, follows): (Vec<(NodeId, opcua::types::DataValue)>, Option<NodeId>) = {
            let registry = self.registry.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            let updates = values
                .into_iter()
                .filter_map(|(property, value)| {
                    if let Some(oos) = crate::space::out_of_service_in(property, &value) {
                        out_of_service = Some(oos);
                    }
                    let (id, kind) = registry.node_of(&PointRef { device, object, property })?;
                    Some((id.clone(), data_value(kind, &value)))
                })
                .collect();
            (updates, registry.follows_out_of_service(device, object).cloned())
        };
        if let (Some(oos), Some(pv)) = (out_of_service, follows) {
            self.set_present_value_access(&pv, object, oos);
        }
        if updates.is_empty() {
            return 0;
        }
        let n = updates.len();
        let items = updates.iter().map(|(id, dv)| (id, None, dv.clone()));
        if let Err(e) = self.manager.set_values(&self.subscriptions, items) {
            tracing::debug!("OPC UA: a change could not be applied: {e}");
        }
        n
    }

    /// An input's (or schedule's…) Present_Value is writable exactly while
    /// its object is out of service: its AccessLevel follows.
    fn set_present_value_access(&self, pv: &NodeId, object: ObjectIdentifier, out_of_service: bool) {
        let level =
            crate::space::access_of(object.object_type, PropertyIdentifier::PRESENT_VALUE, false, out_of_service);
        let mut space = self.manager.address_space().write();
        if let Some(opcua::server::address_space::NodeType::Variable(v)) = space.find_mut(pv)
            && v.access_level().bits() != level.bits()
        {
            v.set_access_level(level);
            v.set_user_access_level(level);
        }
    }

    /// Show exactly `devices` (after a hot swap or a new object list):
    /// NodeIds of objects that stay do not change.
    pub fn sync(&self, devices: &[DeviceView]) -> Result<(), crate::node_ids::NodeIdError> {
        let mut space = self.manager.address_space().write();
        let mut registry = self.registry.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        registry.sync(&mut space, devices)
    }

    /// Variables standing for points now.
    pub fn points(&self) -> usize {
        self.registry.read().unwrap_or_else(std::sync::PoisonError::into_inner).point_count()
    }

    /// The NodeId of a point's variable, if it is shown.
    pub fn node_of(&self, point: PointRef) -> Option<NodeId> {
        let registry = self.registry.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        registry.node_of(&point).map(|(id, _)| id.clone())
    }
}

/// Start the server over `source`, on a thread of its own (call from
/// within a tokio runtime: the caller's tasks feed the [`Updater`]).
pub async fn start<S: PointSource>(settings: Settings, source: Arc<S>) -> Result<Running<S>, StartError> {
    if settings.security.is_empty() {
        return Err(StartError::Settings("no endpoint: `security` lists none".into()));
    }
    if settings.anonymous == Access::None && settings.users.is_empty() {
        return Err(StartError::Settings("nobody can connect: anonymous access is off and no user is set".into()));
    }
    if !(1..=16).contains(&settings.write_priority) {
        return Err(StartError::Settings(format!("write priority {} is not 1..=16", settings.write_priority)));
    }
    let mut hosts = vec![settings.host_name.clone()];
    let mut also = vec!["localhost".to_owned()];
    if !settings.bind.ip().is_unspecified() {
        also.push(settings.bind.ip().to_string());
    }
    for h in also {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    let request = CertificateRequest {
        application_uri: settings.application_uri.clone(),
        application_name: settings.application_name.clone(),
        hosts,
        days: 365 * 5,
    };
    if let Some(path) = crate::certs::ensure(&settings.pki_dir, &request).map_err(StartError::Certificate)? {
        tracing::info!("OPC UA: made a self-signed application certificate, {}", path.display());
    }
    let ids = match &settings.node_ids {
        Some(path) => NodeIdTable::open(path)?,
        None => NodeIdTable::in_memory(),
    };
    let registry: Arc<std::sync::RwLock<Registry>> = Arc::new(std::sync::RwLock::new(Registry::new(0, ids)));
    let listener = std::net::TcpListener::bind(settings.bind).map_err(|e| StartError::Bind(settings.bind, e))?;
    let local_addr = listener.local_addr().map_err(|e| StartError::Bind(settings.bind, e))?;
    listener.set_nonblocking(true).map_err(|e| StartError::Bind(settings.bind, e))?;

    let users = !settings.users.is_empty();
    let nodes_registry = registry.clone();
    let nodes_source = source.clone();
    let write_priority = settings.write_priority;
    let (ready_tx, ready) = tokio::sync::oneshot::channel();
    let manager = InMemoryNodeManagerBuilder::new(
        move |context: opcua::server::node_manager::ServerContext,
              space: &mut opcua::server::address_space::AddressSpace| {
            let index = context.type_tree.write().namespaces_mut().add_namespace(NAMESPACE_URI);
            space.add_namespace(NAMESPACE_URI, index);
            let types = context.type_tree.write().namespaces_mut().add_namespace(crate::types::NAMESPACE_URI);
            space.add_namespace(crate::types::NAMESPACE_URI, types);
            {
                let mut registry = nodes_registry.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                registry.namespace = index;
                registry.types_namespace = types;
            }
            GatewayNodes {
                source: nodes_source,
                registry: nodes_registry,
                write_priority,
                namespace: NamespaceMetadata {
                    namespace_uri: NAMESPACE_URI.to_owned(),
                    namespace_index: index,
                    ..Default::default()
                },
                types_namespace: NamespaceMetadata {
                    namespace_uri: crate::types::NAMESPACE_URI.to_owned(),
                    namespace_index: types,
                    ..Default::default()
                },
                ready: std::sync::Mutex::new(Some(ready_tx)),
            }
        },
    );
    let mut builder = ServerBuilder::new()
        .application_name(settings.application_name.clone())
        .application_uri(settings.application_uri.clone())
        .product_uri("urn:trellis")
        .host(settings.host_name.clone())
        .port(local_addr.port())
        .discovery_urls(vec![format!("opc.tcp://{}:{}/", settings.host_name, local_addr.port())])
        .pki_dir(settings.pki_dir.clone())
        .create_sample_keypair(false)
        .trust_client_certs(settings.trust_client_certs)
        .max_sessions(settings.max_sessions)
        .diagnostics_enabled(false)
        .with_authenticator(Arc::new(GatewayAuth::new(settings.anonymous, settings.users.clone())))
        .with_node_manager(manager);
    for s in &settings.security {
        builder = builder.add_endpoint(s.name(), s.endpoint(users));
    }
    builder = builder
        .default_endpoint(settings.security[0].name())
        .subscription_poll_interval_ms(settings.min_publishing_interval_ms.max(1));
    crate::limits::apply(builder.limits_mut());
    let limits = &mut builder.limits_mut().subscriptions;
    limits.min_publishing_interval_ms = settings.min_publishing_interval_ms.max(1) as f64;
    // Values are pushed (COV), not sampled: a monitored item may ask for 0
    // and hear every change as it comes.
    limits.min_sampling_interval_ms = 0.0;
    let (server, handle) = builder.build().map_err(StartError::Server)?;
    // The server runs on a thread of its own, every connection and session
    // task on it (a current-thread runtime): a request never crosses
    // threads on its way through the stack, the same execution model as a
    // device's BACnet requests (ARCHITECTURE.md; measured: 1.46× the Reads
    // per second of a two-thread runtime with one client, benches/README.md).
    let (ended_tx, mut ended) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("opcua".into())
        .spawn(move || {
            let outcome = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("cannot listen: {e}"))?;
                    server.run_with(listener).await
                }),
                Err(e) => Err(format!("cannot start the OPC UA thread's runtime: {e}")),
            };
            let _ = ended_tx.send(outcome);
        })
        .map_err(|e| StartError::Server(format!("cannot start the OPC UA thread: {e}")))?;
    // The node managers initialise when the server starts running.
    tokio::select! {
        _ = ready => {}
        outcome = &mut ended => {
            let why = match outcome {
                Ok(Ok(())) => "it stopped".to_owned(),
                Ok(Err(e)) => e,
                Err(_) => "its thread ended".to_owned(),
            };
            return Err(StartError::Server(format!("the server ended before serving: {why}")));
        }
    }
    let manager = handle
        .node_managers()
        .get_of_type::<InMemoryNodeManager<GatewayNodes<S>>>()
        .ok_or_else(|| StartError::Server("the gateway's node manager is missing".into()))?;
    let url = format!("opc.tcp://{}:{}/", settings.host_name, local_addr.port());
    let updater = Updater { manager, subscriptions: handle.subscriptions().clone(), registry };
    Ok(Running { local_addr, url, updater, handle, ended })
}
