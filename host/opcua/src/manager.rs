//! The node manager behind the gateway's namespace: every node lives in
//! async-opcua's in-memory address space (so Browse, TranslateBrowsePaths
//! and every attribute but a point's Value are answered from memory), and a
//! point's Value goes to the device:
//! - Read: a `maxAge` of 0 (what clients send unless told otherwise) reads
//!   the device — all the points of one Read request in one call of the
//!   [`PointSource`]; a larger `maxAge` is answered from the value COV keeps
//!   in the address space while it is young enough;
//! - Write: WriteProperty at the configured priority; a BACnet error comes
//!   back as its status code ([`crate::convert::status_of`]), and the value
//!   read back afterwards goes to the subscriptions;
//! - MonitoredItems: their first value is read from the device; after that
//!   they hear only what [`crate::server::Updater`] pushes (BACnet COV and
//!   the plugins' change reports) — nothing samples.
//!
//! Must never: hold the address-space lock across a device's answer, or
//! accept a write from a user whose access level lacks CurrentWrite.

use crate::convert::status_of;
use crate::source::{PointRef, PointSource};
use crate::space::{Registry, data_value};
use async_trait::async_trait;
use bacnet::AnyValue;
use opcua::server::address_space::{AddressSpace, user_access_level};
use opcua::server::diagnostics::NamespaceMetadata;
use opcua::server::node_manager::memory::InMemoryNodeManagerImpl;
use opcua::server::node_manager::{ParsedReadValueId, RequestContext, ServerContext, WriteNode};
use opcua::sync::RwLock;
use opcua::types::{AttributeId, DataValue, DateTime, NumericRange, StatusCode, TimestampsToReturn};
use std::sync::Arc;

/// Our namespace's URI.
pub const NAMESPACE_URI: &str = "urn:trellis:bacnet";

/// The gateway's node manager (wrapped in async-opcua's `InMemoryNodeManager`).
pub struct GatewayNodes<S> {
    pub(crate) source: Arc<S>,
    pub(crate) registry: Arc<std::sync::RwLock<Registry>>,
    pub(crate) write_priority: u8,
    pub(crate) namespace: NamespaceMetadata,
    /// OPC 30030's namespace, for its object types.
    pub(crate) types_namespace: NamespaceMetadata,
    /// Told when `init` has made the address space.
    pub(crate) ready: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

fn stamped(mut dv: DataValue, timestamps: TimestampsToReturn) -> DataValue {
    match timestamps {
        TimestampsToReturn::Source => dv.server_timestamp = None,
        TimestampsToReturn::Server => dv.source_timestamp = None,
        TimestampsToReturn::Neither => {
            dv.source_timestamp = None;
            dv.server_timestamp = None;
        }
        _ => {}
    }
    dv
}

fn failed(status: StatusCode) -> DataValue {
    DataValue { status: Some(status), ..Default::default() }
}

impl<S: PointSource> GatewayNodes<S> {
    fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl<S: PointSource> InMemoryNodeManagerImpl for GatewayNodes<S> {
    async fn init(&self, address_space: &mut AddressSpace, _context: ServerContext) {
        crate::types::add_types(address_space, self.types_namespace.namespace_index);
        crate::space::add_fixed_nodes(
            address_space,
            self.namespace.namespace_index,
            self.types_namespace.namespace_index,
        );
        let devices = self.source.devices().await;
        let mut registry = self.registry.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = registry.sync(address_space, &devices) {
            tracing::error!("OPC UA: node ids could not be saved ({e}): they may change at the next start");
        }
        tracing::info!(devices = devices.len(), points = registry.point_count(), "OPC UA: address space ready");
        if let Some(ready) = self.ready.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = ready.send(());
        }
    }

    fn name(&self) -> &str {
        "trellis-bacnet"
    }

    fn namespaces(&self) -> Vec<NamespaceMetadata> {
        vec![self.namespace.clone(), self.types_namespace.clone()]
    }

    async fn read_values(
        &self,
        context: &RequestContext,
        address_space: &RwLock<AddressSpace>,
        nodes: &[&ParsedReadValueId],
        max_age: f64,
        timestamps: TimestampsToReturn,
    ) -> Vec<DataValue> {
        let mut results = Vec::with_capacity(nodes.len());
        let mut fetch: Vec<(usize, PointRef, crate::convert::Kind)> = Vec::new();
        {
            let space = address_space.read();
            let registry = self.registry();
            let now = DateTime::now();
            for (i, n) in nodes.iter().enumerate() {
                let point = registry.point(&n.node_id).filter(|_| n.index_range == NumericRange::None);
                let Some(point) = point else {
                    results.push(space.read(context, n, max_age, timestamps));
                    continue;
                };
                if let Err(e) = space.validate_node_read(context, n) {
                    results.push(failed(e));
                    continue;
                }
                if max_age > 0.0 {
                    let cached = space.read(context, n, max_age, TimestampsToReturn::Both);
                    let age_ms = cached
                        .server_timestamp
                        .map(|t| (now.ticks() - t.ticks()) as f64 / 10_000.0)
                        .unwrap_or(f64::INFINITY);
                    if cached.status.is_none_or(|s| s.is_good()) && age_ms <= max_age {
                        results.push(stamped(cached, timestamps));
                        continue;
                    }
                }
                fetch.push((i, point.point, point.kind));
                results.push(DataValue::null());
            }
        }
        if !fetch.is_empty() {
            let points: Vec<PointRef> = fetch.iter().map(|(_, p, _)| *p).collect();
            let values = self.source.read(&points).await;
            for ((i, _, kind), value) in fetch.into_iter().zip(values) {
                results[i] = match value {
                    Ok(v) => stamped(data_value(kind, &v), timestamps),
                    Err(fault) => failed(status_of(&fault)),
                };
            }
        }
        results
    }

    async fn write(
        &self,
        context: &RequestContext,
        address_space: &RwLock<AddressSpace>,
        nodes_to_write: &mut [&mut WriteNode],
    ) -> Result<(), StatusCode> {
        let mut jobs = Vec::new();
        {
            let space = address_space.read();
            let registry = self.registry();
            for (i, w) in nodes_to_write.iter_mut().enumerate() {
                let target = w.value();
                let Some(point) = registry.point(&target.node_id).copied() else {
                    let known = space.find(&target.node_id).is_some();
                    w.set_status(if known { StatusCode::BadNotWritable } else { StatusCode::BadNodeIdUnknown });
                    continue;
                };
                if target.attribute_id != AttributeId::Value {
                    w.set_status(StatusCode::BadNotWritable);
                    continue;
                }
                if target.index_range.has_range() {
                    w.set_status(StatusCode::BadWriteNotSupported);
                    continue;
                }
                let Some(node) = space.find(&target.node_id) else {
                    w.set_status(StatusCode::BadNodeIdUnknown);
                    continue;
                };
                if !user_access_level(context, node).contains(opcua::server::address_space::AccessLevel::CURRENT_WRITE)
                {
                    w.set_status(if node_writable(node) {
                        StatusCode::BadUserAccessDenied
                    } else {
                        StatusCode::BadNotWritable
                    });
                    continue;
                }
                let variant = target.value.value.clone().unwrap_or_default();
                match point.kind.bacnet(&variant) {
                    Ok(v) => jobs.push((i, point, AnyValue::primitive(v))),
                    Err(status) => w.set_status(status),
                }
            }
        }
        let mut written = Vec::new();
        for (i, point, value) in jobs {
            match self.source.write(point.point, value, self.write_priority).await {
                Ok(()) => {
                    nodes_to_write[i].set_status(StatusCode::Good);
                    written.push(point);
                }
                Err(fault) => {
                    tracing::debug!(point = ?point.point, "OPC UA write refused: {fault}");
                    nodes_to_write[i].set_status(status_of(&fault));
                }
            }
        }
        if !written.is_empty() {
            // What the device holds now (a write at a low priority may not
            // change it) goes to the address space and its subscribers.
            let points: Vec<PointRef> = written.iter().map(|p| p.point).collect();
            let values = self.source.read(&points).await;
            let updates: Vec<_> =
                written.iter().zip(values).filter_map(|(p, v)| v.ok().map(|v| (p, data_value(p.kind, &v)))).collect();
            let registry = self.registry();
            let updates: Vec<_> = updates
                .into_iter()
                .filter_map(|(p, dv)| registry.node_of(&p.point).map(|(id, _)| (id.clone(), dv)))
                .collect();
            drop(registry);
            context
                .subscriptions
                .notify_data_change(updates.iter().map(|(id, dv)| (dv.clone(), id, AttributeId::Value)));
            let mut space = address_space.write();
            for (id, dv) in updates {
                if let Some(opcua::server::address_space::NodeType::Variable(v)) = space.find_mut(&id) {
                    v.set_data_value(dv);
                }
            }
        }
        Ok(())
    }
}

fn node_writable(node: &opcua::server::address_space::NodeType) -> bool {
    match node {
        opcua::server::address_space::NodeType::Variable(v) => v.is_writable(),
        _ => false,
    }
}
