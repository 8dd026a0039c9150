//! The servers `opcua` measures that run in this binary (as a child
//! process, `stress-test opcua-serve`), each printing
//! `{"ready": true, "url": …, "nodes": […]}` and serving until killed:
//!
//! - `async-opcua`: the library alone, 100 Int32 variables held in its
//!   in-memory address space (what the stack itself costs);
//! - `async-opcua-points`: Trellis's OPC UA server (`trellis_opcua`) over
//!   the gateway's point source — a bulk-objects device of 100 commandable
//!   Analog Values in WebAssembly, every Read of a value going to the
//!   plugin — as `trellis run` serves it, in this process;
//! - `open62541` (feature `open62541`): the C reference stack through the
//!   `open62541` crate, 100 Int32 variables in its address space;
//! - `open62541-points` (feature `open62541`): the same point source behind
//!   open62541, each value a DataSource whose read goes to the plugin.
//!
//! The two `-points` servers are the library comparison of issue 17: the
//! same values, the same plugin, the same point source, only the OPC UA
//! stack differs.
//!
//! Must never: listen beyond 127.0.0.1.

use anyhow::Context;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, PluginSource};
use trellis_opcua::opcua;
use trellis_opcua::source::PointRef;

/// Variables served.
pub const COUNT: u32 = 100;

/// The stacks this binary serves.
pub const STACKS: &[&str] = &["async-opcua", "async-opcua-points", "open62541", "open62541-points"];

fn ready(url: &str, nodes: &[String]) {
    println!("{}", serde_json::json!({"ready": true, "url": url, "nodes": nodes}));
}

/// Serve `stack` on 127.0.0.1:`port` until the process is killed.
pub fn serve(stack: &str, port: u16, work_dir: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match stack {
        "async-opcua" => runtime.block_on(async_opcua_plain(port, work_dir)),
        "async-opcua-points" => runtime.block_on(async_opcua_points(port, work_dir)),
        #[cfg(feature = "open62541")]
        "open62541" => open62541_side::plain(port),
        #[cfg(feature = "open62541")]
        "open62541-points" => {
            let (source, points) = runtime.block_on(gateway_points(work_dir))?;
            open62541_side::points(port, runtime.handle().clone(), source, points)
        }
        other => anyhow::bail!(
            "{other}: not a stack this binary serves ({}; open62541 ones need `--features open62541`)",
            STACKS.join(", ")
        ),
    }
}

async fn async_opcua_plain(port: u16, work_dir: &Path) -> anyhow::Result<()> {
    use opcua::server::ServerBuilder;
    use opcua::server::address_space::VariableBuilder;
    use opcua::server::diagnostics::NamespaceMetadata;
    use opcua::server::node_manager::memory::{SimpleNodeManager, simple_node_manager};
    use opcua::types::{DataTypeId, NodeId, ObjectId};
    const NS: &str = "urn:trellis:bench";
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
    let (server, handle) = ServerBuilder::new_anonymous("bench")
        .host("127.0.0.1")
        .port(port)
        .pki_dir(work_dir.join("async-opcua-pki"))
        .diagnostics_enabled(false)
        .with_node_manager(simple_node_manager(
            NamespaceMetadata { namespace_uri: NS.into(), ..Default::default() },
            "bench",
        ))
        .build()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let manager = handle.node_managers().get_of_type::<SimpleNodeManager>().context("the bench node manager")?;
    let ns = handle.get_namespace_index(NS).context("the bench namespace")?;
    let mut nodes = Vec::new();
    {
        let mut space = manager.address_space().write();
        for i in 1..=COUNT {
            let id = NodeId::new(ns, 1000 + i);
            VariableBuilder::new(&id, format!("V{i}").as_str(), format!("V{i}").as_str())
                .data_type(DataTypeId::Int32)
                .value(i as i32)
                .organized_by(NodeId::from(ObjectId::ObjectsFolder))
                .insert(&mut *space);
            nodes.push(format!("ns={ns};i={}", 1000 + i));
        }
    }
    let url = format!("opc.tcp://127.0.0.1:{port}/");
    let task = tokio::spawn(server.run_with(listener));
    ready(&url, &nodes);
    task.await?.map_err(|e| anyhow::anyhow!("{e}"))
}

/// A bulk-objects device with 100 commandable Analog Values (no inputs), as
/// `trellis run` serves one, and the point source over it.
async fn gateway_points(work_dir: &Path) -> anyhow::Result<(Arc<trellis::opcua_bridge::GatewayPoints>, Vec<PointRef>)> {
    let data = work_dir.join("bulk-data");
    std::fs::create_dir_all(&data)?;
    std::fs::write(data.join("bulk.toml"), format!("count = 0\nvalues = {COUNT}\ndevice_instance = 389002\n"))?;
    let engine =
        PluginEngine::new(&EngineConfig { cache_dir: Some(work_dir.join("cache")), ..EngineConfig::default() })
            .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    let mut pc = PluginConfig::new("bench");
    pc.data_dir = Some(data);
    let model =
        PluginModel::load(&engine, PluginSource::File(Path::new(trellis::plugin::builtin::BULK_OBJECTS_PATH)), pc)
            .context("load the bulk-objects plugin")?;
    let server = trellis::server::build(model, trellis::server::DeviceConfig::default(), 999).await?;
    let device = server.device_id().instance;
    // The engine must outlive the model's instances.
    std::mem::forget(engine);
    let source = Arc::new(trellis::opcua_bridge::GatewayPoints::new(&[Arc::new(server)], None));
    let points = (1..=COUNT)
        .map(|i| PointRef {
            device,
            object: bacnet::ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: i },
            property: bacnet::enums::PropertyIdentifier::PRESENT_VALUE,
        })
        .collect();
    Ok((source, points))
}

async fn async_opcua_points(port: u16, work_dir: &Path) -> anyhow::Result<()> {
    use trellis_opcua::auth::Access;
    use trellis_opcua::server::{Security, Settings};
    let (source, points) = gateway_points(work_dir).await?;
    let settings = Settings {
        bind: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        host_name: "127.0.0.1".into(),
        application_name: "bench".into(),
        application_uri: "urn:trellis:bench".into(),
        security: vec![Security::None],
        anonymous: Access::Read,
        users: Vec::new(),
        pki_dir: work_dir.join("points-pki"),
        trust_client_certs: false,
        node_ids: None,
        write_priority: 8,
        max_sessions: 100,
        min_publishing_interval_ms: 1,
    };
    let running = trellis_opcua::server::start(settings, source).await?;
    let nodes = points
        .iter()
        .map(|p| running.updater.node_of(*p).map(|n| n.to_string()).context("a point without a node"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let url = format!("opc.tcp://127.0.0.1:{port}/");
    ready(&url, &nodes);
    running.ended.await?.map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(feature = "open62541")]
mod open62541_side {
    //! The open62541 servers (C, through the `open62541` crate).
    use super::{COUNT, ready};
    use open62541::{DataSource, DataSourceReadContext, DataSourceResult, ObjectNode, Server, VariableNode, ua};
    use open62541_sys::{
        UA_NS0ID_BASEDATAVARIABLETYPE, UA_NS0ID_BASEOBJECTTYPE, UA_NS0ID_FLOAT, UA_NS0ID_INT32, UA_NS0ID_OBJECTSFOLDER,
        UA_NS0ID_ORGANIZES,
    };
    use std::sync::Arc;
    use trellis_opcua::source::{PointRef, PointSource};

    fn server(port: u16) -> anyhow::Result<(Server, open62541::ServerRunner, u16, ua::NodeId)> {
        let (server, runner) = open62541::ServerBuilder::minimal(port, None)
            .server_urls(&[&format!("opc.tcp://127.0.0.1:{port}/")])
            .build();
        let ns = server.add_namespace("urn:trellis:bench");
        let bench = server.add_object_node(ObjectNode {
            requested_new_node_id: Some(ua::NodeId::numeric(ns, 1000)),
            parent_node_id: ua::NodeId::ns0(UA_NS0ID_OBJECTSFOLDER),
            reference_type_id: ua::NodeId::ns0(UA_NS0ID_ORGANIZES),
            browse_name: ua::QualifiedName::new(ns, "Bench"),
            type_definition: ua::NodeId::ns0(UA_NS0ID_BASEOBJECTTYPE),
            attributes: ua::ObjectAttributes::default(),
        })?;
        Ok((server, runner, ns, bench))
    }

    fn variable(ns: u16, i: u32, parent: &ua::NodeId, data_type: u32) -> VariableNode {
        VariableNode {
            requested_new_node_id: Some(ua::NodeId::numeric(ns, 1000 + i)),
            parent_node_id: parent.clone(),
            reference_type_id: ua::NodeId::ns0(UA_NS0ID_ORGANIZES),
            browse_name: ua::QualifiedName::new(ns, &format!("V{i}")),
            type_definition: ua::NodeId::ns0(UA_NS0ID_BASEDATAVARIABLETYPE),
            attributes: ua::VariableAttributes::default().with_data_type(&ua::NodeId::ns0(data_type)),
        }
    }

    fn run(port: u16, runner: open62541::ServerRunner, ns: u16) -> anyhow::Result<()> {
        let nodes: Vec<String> = (1..=COUNT).map(|i| format!("ns={ns};i={}", 1000 + i)).collect();
        ready(&format!("opc.tcp://127.0.0.1:{port}/"), &nodes);
        runner.run_until_cancelled(|| false)?;
        Ok(())
    }

    /// 100 Int32 variables in open62541's own address space.
    pub fn plain(port: u16) -> anyhow::Result<()> {
        let (server, runner, ns, bench) = server(port)?;
        for i in 1..=COUNT {
            let id = server.add_variable_node(variable(ns, i, &bench, UA_NS0ID_INT32))?;
            server.write_value(&id, &ua::Variant::scalar(ua::Int32::new(i as i32)))?;
        }
        run(port, runner, ns)
    }

    struct PointValue<S> {
        source: Arc<S>,
        point: PointRef,
        runtime: tokio::runtime::Handle,
    }

    impl<S: PointSource> DataSource for PointValue<S> {
        fn read(&mut self, ctx: &mut DataSourceReadContext) -> DataSourceResult {
            // open62541 calls this from its server thread: wait for the
            // point source there (the gateway's runtime does the work).
            let read = self.runtime.block_on(self.source.read(&[self.point]));
            match read.into_iter().next() {
                Some(Ok(v)) => match v.as_primitive().and_then(bacnet::Value::as_f64) {
                    Some(x) => {
                        ctx.set_variant(ua::Variant::scalar(ua::Float::new(x as f32)));
                        Ok(())
                    }
                    None => Err(open62541::DataSourceError::from_status_code(ua::StatusCode::BADTYPEMISMATCH)),
                },
                _ => Err(open62541::DataSourceError::from_status_code(ua::StatusCode::BADNOCOMMUNICATION)),
            }
        }
    }

    /// The gateway's point source behind open62541: each value a DataSource.
    pub fn points<S: PointSource>(
        port: u16,
        runtime: tokio::runtime::Handle,
        source: Arc<S>,
        points: Vec<PointRef>,
    ) -> anyhow::Result<()> {
        let (server, runner, ns, bench) = server(port)?;
        for (i, point) in (1..=COUNT).zip(points) {
            let value = PointValue { source: source.clone(), point, runtime: runtime.clone() };
            server.add_data_source_variable_node(variable(ns, i, &bench, UA_NS0ID_FLOAT), value)?;
        }
        run(port, runner, ns)
    }
}
