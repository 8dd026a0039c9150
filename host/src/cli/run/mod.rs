//! `trellis run`: the gateway. Without `--config` it serves the built-in
//! `demo-building` plugin as one BACnet/IP device on 127.0.0.1:47808; flags
//! override the bind address, port, device instance and plugin of that
//! single device. With `--config FILE` it serves every `[[device]]` in it.
//!
//! It says "serving" only once every port is bound, stops cleanly on Ctrl-C
//! or SIGTERM (removing its admin socket), and warns once per device that
//! takes DeviceCommunicationControl and ReinitializeDevice from the network
//! without a password.

use super::Failure;
use crate::config::{Config, DeviceSection, PluginRef, PolicySection, RoutingPolicySection};
use crate::model::ObjectModel;
use crate::network_port;
use crate::offload;
use crate::plugin::routing::{FailMode, PolicyConfig, PolicyPlugin};
use crate::plugin::{LOAD_TIME_LIMIT, PluginConfig, PluginEngine, PluginModel, VET_TIME_LIMIT, builtin, policy};
use crate::server::{DeviceConfig, bind as bind_bip, bind_mstp, build, serve_mstp_on, serve_on};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

mod plugins;
mod ports;

use plugins::{pool_for, start_device, start_policy, tick, watch};
use ports::{Port, enable_bbmd, enable_bbmd6, router_port};

/// Arguments of `trellis run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// A TOML configuration with one or more [[device]] sections.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Device instance (single-device mode; overrides the plugin's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=4_194_302))]
    pub device_id: Option<u32>,
    /// Plugin: builtin:demo-building, builtin:bulk-objects, or a .wasm path.
    #[arg(long)]
    pub plugin: Option<String>,
    /// Host directory the plugin sees as /data.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The local admin socket for `trellis plugin swap` [default: $TRELLIS_ADMIN_SOCKET, else
    /// /run/trellis/admin.sock for root, else $XDG_RUNTIME_DIR/trellis/admin.sock, else
    /// /tmp/trellis-UID/admin.sock]. Its directory must be ours and mode 0700 (created so if missing).
    #[arg(long)]
    pub admin_socket: Option<PathBuf>,
    /// Where the console, REST API and /metrics listen (IP:PORT), or `off`
    /// [default: [http] bind, else 127.0.0.1:47880].
    #[arg(long, value_name = "IP:PORT|off")]
    pub http: Option<String>,
}

/// Run `trellis run` until Ctrl-C or SIGTERM. `bind` and `port` come from
/// the global options and apply in single-device mode.
///
/// "serving" is said only once every device's port is bound and its plugin
/// answers; a failure before that is the run's one line of error. Whatever
/// ends the run, the admin socket is removed.
pub async fn run(bind: Option<String>, port: Option<u16>, a: RunArgs) -> Result<(), Failure> {
    let (config, base) = match &a.config {
        Some(path) => (Config::load(path)?, path.parent().unwrap_or(Path::new(".")).to_path_buf()),
        None => (
            single_device(bind, port, a.device_id, a.plugin.clone(), a.data_dir.clone()),
            std::env::current_dir().unwrap_or_default(),
        ),
    };
    let options = StartOptions {
        http: a.http.clone(),
        admin_socket: Some(a.admin_socket.clone().unwrap_or_else(crate::admin::default_socket)),
    };
    // Listening first: Ctrl-C and SIGTERM (systemd, `kill`) stop the run the
    // same way once it has started, which removes the admin socket; a
    // signal while it starts ends the run when start() returns.
    let listen = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|e| Failure::from(anyhow::anyhow!("cannot listen for {name}: {e}")))
    };
    let (mut interrupt, mut terminate) =
        (listen(SignalKind::interrupt(), "SIGINT")?, listen(SignalKind::terminate(), "SIGTERM")?);
    let mut started = start(config, base, options).await?;
    eprintln!("trellis: serving; Ctrl-C to stop");
    crate::http::logs::note("serving");
    let stop = tokio::select! {
        ended = started.stopped() => return ended.map_err(Failure::from),
        _ = interrupt.recv() => "Ctrl-C",
        _ = terminate.recv() => "SIGTERM",
    };
    tracing::info!("{stop}: stopping");
    started.stop().await;
    eprintln!("trellis: stopped");
    Ok(())
}

/// The embedded single-device configuration (the demo building on
/// 127.0.0.1:47808), with what the caller overrides.
pub fn single_device(
    bind: Option<String>,
    port: Option<u16>,
    device_id: Option<u32>,
    plugin: Option<String>,
    data_dir: Option<PathBuf>,
) -> Config {
    let mut c = Config::embedded();
    let d = &mut c.devices[0];
    if let Some(b) = bind {
        d.bind = b;
    }
    if let Some(p) = port {
        d.port = p;
    }
    d.instance = device_id.or(d.instance);
    if let Some(p) = plugin {
        d.plugin = p;
    }
    d.data_dir = data_dir.or(d.data_dir.take());
    c
}

/// How [`start`] runs what is not BACnet.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// `--http`: where the console listens, or `off` (else `[http]`, else
    /// the default loopback bind).
    pub http: Option<String>,
    /// The admin socket to listen on; `None` for none (hot swap then goes
    /// through [`Started::admin`] only).
    pub admin_socket: Option<PathBuf>,
}

/// A gateway that serves: its devices' tasks, the threads they run on and
/// what the operator reaches them through. Dropping it stops the devices'
/// threads; [`Started::stop`] also waits for the tasks to end.
pub struct Started {
    tasks: tokio::task::JoinSet<anyhow::Result<()>>,
    shards: crate::shard::Shards,
    admin: std::sync::Arc<crate::admin::Admin>,
    gateway: std::sync::Arc<crate::http::Gateway>,
    console: Option<crate::http::Running>,
    _socket_file: Option<RemoveOnDrop>,
    _mqtt: Option<crate::mqtt_bridge::Bridge>,
    _opcua: Option<trellis_opcua::server::Running<crate::opcua_bridge::GatewayPoints>>,
}

impl Started {
    /// Plugin status and hot swaps, as the admin socket offers them.
    pub fn admin(&self) -> &std::sync::Arc<crate::admin::Admin> {
        &self.admin
    }

    /// What the HTTP surface shows: the devices, the ports and their counters.
    pub fn gateway(&self) -> &std::sync::Arc<crate::http::Gateway> {
        &self.gateway
    }

    /// The console's URL, when it listens.
    pub fn console_url(&self) -> Option<&str> {
        self.console.as_ref().map(|r| r.url.as_str())
    }

    /// Wait until a device stops serving (which is always an error: they
    /// serve until stopped).
    pub async fn stopped(&mut self) -> anyhow::Result<()> {
        match self.tasks.join_next().await {
            Some(Ok(Ok(()))) | None => Err(anyhow::anyhow!("a device stopped serving")),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(e)) => Err(anyhow::Error::from(e)),
        }
    }

    /// Stop serving: snapshot the state of the devices that keep it on
    /// disk, end the tasks, then the devices' threads; the admin socket is
    /// removed.
    pub async fn stop(mut self) {
        for (device, model) in self.admin.devices() {
            if let Err(e) = model.save().await {
                tracing::warn!(device, "could not save the state at the stop: {e}");
            }
        }
        self.tasks.shutdown().await;
        drop(self.shards);
    }
}

/// Start every device, port, bridge and application of `config` (relative
/// paths in it are taken from `base`) on the runtime this is called on and
/// on the devices' threads. Returns once every port is bound and every
/// plugin answers.
pub async fn start(config: Config, base: PathBuf, options: StartOptions) -> anyhow::Result<Started> {
    crate::persistence_config::check_distinct(config.devices.iter().map(|d| d.persistence.as_ref()), &base)?;
    let engine_cache = config.engine.cache_dir.clone().or(crate::plugin::EngineConfig::default().cache_dir);
    let engine_config = crate::plugin::EngineConfig {
        cache_dir: engine_cache.clone(),
        pooling: Some(pool_for(&config)),
        ..Default::default()
    };
    let engine = tokio::task::spawn_blocking(move || PluginEngine::new(&engine_config))
        .await
        .map_err(anyhow::Error::from)?
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    // Every device runs on a shard: its port, its requests and its plugin on
    // one thread (crate::shard); this runtime keeps the admin socket. The
    // router, with every device behind it or on its ports, is one unit on
    // one shard.
    let router = config.router.clone();
    let routed: Vec<bool> = config
        .devices
        .iter()
        .map(|d| d.virtual_network.is_some() || router.as_ref().is_some_and(|r| r.port_of(d).is_some()))
        .collect();
    let units = routed.iter().filter(|r| !**r).count() + usize::from(router.is_some());
    let shards = crate::shard::Shards::start(config.engine.threads, units)
        .map_err(|e| anyhow::anyhow!("cannot start the device threads: {e}"))?;
    let mut next_unit = usize::from(router.is_some());
    let mut tasks = tokio::task::JoinSet::new();
    // Every served device, for the MQTT bridge.
    let mut served = Vec::new();
    let mut swappable = std::collections::BTreeMap::new();
    // For the HTTP surface: every served device and every port with its counters.
    let mut http_devices = std::collections::BTreeMap::new();
    let mut http_ports = Vec::new();
    let mut provenances = std::collections::BTreeMap::new();
    let mut watched = Vec::new();
    let router_ports = router.as_ref().map_or(0, |r| r.ports.len());
    let mut port_devices: Vec<Option<std::sync::Arc<crate::server::Server<PluginModel>>>> = vec![None; router_ports];
    let mut virtual_networks: std::collections::BTreeMap<u16, Vec<_>> = std::collections::BTreeMap::new();
    // Each router network's routing table, published by the router for the
    // Network Port objects of the device on its port (router ports first,
    // then virtual networks by number).
    let mut routes = network_port::Routes::new(router.as_ref(), &config.devices);
    // The router's BACnet/SC ports start first: the Network Port objects
    // of the device on a router port show them.
    let mut router_sc = std::collections::BTreeMap::new();
    for p in router.iter().flat_map(|r| r.ports.iter()) {
        if let Some(section) = &p.sc {
            let _in_shard = shards.for_device(0).enter();
            let started = crate::sc_port::start(section, 0x3F_0000 + u32::from(p.network), &base)
                .with_context(|| format!("router port (network {}): BACnet/SC", p.network))?;
            routes.set_sc_view(p.network, started.view.clone());
            router_sc.insert(p.network, started);
        }
    }
    // So do its Ethernet ports: their MAC addresses are the interfaces'.
    let mut router_ethernet = std::collections::BTreeMap::new();
    for p in router.iter().flat_map(|r| r.ports.iter()) {
        if let Some(e) = &p.ethernet {
            let _in_shard = shards.for_device(0).enter();
            let port = crate::server::bind_ethernet(&trellis_ethernet::EthernetConfig::new(&e.interface))
                .with_context(|| format!("router port (network {})", p.network))?;
            routes.set_ethernet_mac(p.network, port.interface(), port.mac());
            router_ethernet.insert(p.network, port);
        }
    }
    for (i, d) in config.devices.iter().enumerate() {
        let shard = if routed[i] {
            shards.for_device(0)
        } else {
            next_unit += 1;
            shards.for_device(next_unit - 1)
        };
        let (model, bip, mut server_config, base_config, provenance) =
            start_device(&engine, d, i, &base, &config.policy).await?;
        model.set_home(shard.handle().clone());
        // What clients wrote before the last stop comes back before the
        // device serves (the model's first: its objects may be created ones).
        let journals = match &d.persistence {
            Some(p) => Some(p.open(&base).with_context(|| format!("device {}", i + 1))?),
            None => None,
        };
        let (journals, host_journal) = match journals {
            Some(j) => {
                let (journal, recovered) = j.model;
                model.persist(journal, recovered).await;
                (Some(j.dir), Some(j.host))
            }
            None => (None, None),
        };
        let info = model.describe();
        let objects = model.objects().await.context("listing the plugin's objects")?.len();
        // The port is bound before the device is built: its Network Port
        // object says where it is (and shows its BBMD's tables).
        let own_bbmd = crate::server::network_port::BbmdView::default();
        let own_port = if routed[i] {
            None
        } else {
            Some(match (&d.mstp, &d.bip6) {
                _ if d.ethernet.is_some() => {
                    let section = d.ethernet.as_ref().expect("checked just above");
                    let _in_shard = shard.enter();
                    let port = crate::server::bind_ethernet(&trellis_ethernet::EthernetConfig::new(&section.interface))
                        .with_context(|| format!("device {}", i + 1))?;
                    Port::Ethernet(port)
                }
                _ if d.sc.is_some() => {
                    let section = d.sc.as_ref().expect("checked just above");
                    let _in_shard = shard.enter();
                    let started = crate::sc_port::start(section, d.instance.unwrap_or_default(), &base)
                        .with_context(|| format!("device {}: BACnet/SC", i + 1))?;
                    Port::Sc(Box::new(started))
                }
                (_, Some(b)) => {
                    let mut config = trellis_bip6::Bip6Config::new(b.bind, b.port, d.instance.unwrap_or_default());
                    config.interface = b.interface;
                    config.site_group = b.site_group;
                    let _in_shard = shard.enter();
                    let mut port = crate::server::bind_bip6(&config)
                        .with_context(|| format!("device {}: BACnet/IPv6 [{}]:{}", i + 1, b.bind, b.port))?;
                    if let Some(bbmd) = &b.bbmd {
                        enable_bbmd6(&mut port, bbmd).with_context(|| format!("device {}", i + 1))?;
                    }
                    Port::Bip6(port)
                }
                (Some(m), None) => {
                    Port::Mstp(Box::new(bind_mstp(m.port_config()).with_context(|| format!("device {}", i + 1))?))
                }
                // Bound inside the shard, so that its I/O driver polls the sockets.
                (None, None) => {
                    let mut port = {
                        let _in_shard = shard.enter();
                        bind_bip(&bip).with_context(|| format!("device {}", i + 1))?
                    };
                    if let Some(b) = &d.bbmd {
                        let _ = own_bbmd.0.set(enable_bbmd(&mut port, b)?);
                    }
                    Port::Bip(port)
                }
            })
        };
        server_config.network_ports = match (&own_port, d.virtual_network, router.as_ref().and_then(|r| r.port_of(d))) {
            (Some(Port::Bip(port)), _, _) => {
                let mut p = network_port::ip(1, port.local_addr(), &bip, None, None);
                p.bbmd = d.bbmd.is_some().then(|| own_bbmd.clone());
                vec![p]
            }
            (Some(Port::Mstp(_)), _, _) => d.mstp.as_ref().map(network_port::mstp).into_iter().collect(),
            (Some(Port::Bip6(port)), _, _) => {
                let group = d.bip6.as_ref().map_or(trellis_bip6::LINK_LOCAL_GROUP, network_port::group_of);
                let bbmd = d.bip6.as_ref().is_some_and(|b| b.bbmd.is_some());
                vec![network_port::ipv6(port.local_addr(), port.vmac(), group, bbmd)]
            }
            (Some(Port::Sc(sc)), _, _) => vec![network_port::sc(sc.view.clone())],
            (Some(Port::Ethernet(port)), _, _) => vec![network_port::ethernet(1, port.interface(), port.mac())],
            (None, Some(net), _) => vec![network_port::virtual_station(net, d.instance.unwrap_or_default())],
            (None, None, Some(p)) => router.as_ref().map(|r| network_port::router(r, p, &routes)).unwrap_or_default(),
            (None, None, None) => Vec::new(),
        };
        let server = std::sync::Arc::new(build(model.clone(), server_config, d.vendor_id).await?);
        if let Some((journal, recovered)) = host_journal {
            server.persist(journal, recovered).await;
            if let Some(dir) = &journals {
                tracing::info!(device = server.device_id().instance, "keeping what clients write in {}", dir.display());
            }
        }
        served.push(server.clone());
        let instance = server.device_id().instance;
        let (port, on) = if routed[i] {
            match (d.virtual_network, router.as_ref().and_then(|r| r.port_of(d))) {
                (Some(net), _) => {
                    virtual_networks.entry(net).or_default().push(server);
                    (None, format!("virtual network {net} behind the router"))
                }
                (None, Some(p)) => {
                    port_devices[p] = Some(server);
                    let network = router.as_ref().map_or(0, |r| r.ports[p].network);
                    (None, format!("BACnet/IP {}:{} (router port, network {network})", d.bind, d.port))
                }
                (None, None) => unreachable!("a routed device is on a virtual network or a router port"),
            }
        } else {
            match own_port {
                Some(Port::Mstp(port)) => {
                    let m = d.mstp.as_ref().expect("an MS/TP port comes from an mstp section");
                    let on = format!("MS/TP {} at {} baud, MAC {}", m.device, m.baud, m.mac);
                    (Some((Port::Mstp(port), server)), on)
                }
                Some(Port::Bip(port)) => {
                    let on = format!("BACnet/IP {}", port.local_addr());
                    (Some((Port::Bip(port), server)), on)
                }
                Some(Port::Sc(sc)) => {
                    let v = sc.view.node.status().vmac;
                    let hub = match &sc.view.hub_function {
                        Some(bind) => format!(", hub function on wss://{bind}/"),
                        None => String::new(),
                    };
                    let on = format!(
                        "BACnet/SC via {} (VMAC {}, UUID {}{hub})",
                        sc.view.primary_hub,
                        trellis_sc::identity::hex(&v),
                        trellis_sc::identity::format_uuid(&sc.uuid)
                    );
                    (Some((Port::Sc(sc), server)), on)
                }
                Some(Port::Ethernet(port)) => {
                    let on = format!(
                        "BACnet Ethernet {} (MAC {})",
                        port.interface(),
                        trellis_ethernet::format_mac(&port.mac())
                    );
                    (Some((Port::Ethernet(port), server)), on)
                }
                Some(Port::Bip6(port)) => {
                    let v = port.vmac();
                    let on = format!("BACnet/IPv6 {} (VMAC {:02x}{:02x}{:02x})", port.local_addr(), v[0], v[1], v[2]);
                    (Some((Port::Bip6(port), server)), on)
                }
                None => unreachable!("a device not behind the router has its own port"),
            }
        };
        let line = format!("device {instance} on {on} — plugin {} {} ({objects} objects)", info.name, info.version);
        eprintln!("trellis: {line}");
        crate::http::logs::note(line);
        http_devices.insert(instance, crate::http::DeviceEntry { server: served[i].clone(), on: on.clone() });
        provenances.insert(instance, provenance);
        if let Some((p, _)) = &port {
            http_ports.push(crate::http::PortEntry {
                kind: p.kind(),
                name: on.clone(),
                device: Some(instance),
                network: None,
                counters: p.counters(),
            });
        }
        if d.management_open_to_the_network() {
            tracing::warn!(
                "device {instance} on {on} has no `password`: DeviceCommunicationControl and ReinitializeDevice \
                 are accepted from anyone who can reach it; set `password` in its [[device]] section (--config)"
            );
        }
        swappable.insert(instance, (model.clone(), base_config));
        if d.watch
            && let PluginRef::File(path) = d.plugin_ref(&base)?
        {
            watched.push((instance, path));
        }
        if let Some((port, server)) = port {
            let serving = match port {
                Port::Mstp(port) => shard.spawn(async move { serve_mstp_on(*port, server).await }),
                Port::Bip(port) => shard.spawn(async move { serve_on(port, server).await }),
                Port::Bip6(port) => shard.spawn(async move { crate::server::serve_bip6_on(port, server).await }),
                Port::Sc(sc) => shard.spawn(async move { crate::server::serve_sc_on(sc.port, server).await }),
                Port::Ethernet(port) => {
                    shard.spawn(async move { crate::server::serve_ethernet_on(port, server).await })
                }
            };
            tasks.spawn(async move { serving.await? });
        }
        let ticking = shard.spawn(tick(model, Duration::from_millis(d.tick_ms)));
        tasks.spawn(async move { ticking.await? });
    }
    let mut swappable_policies = Vec::new();
    if let Some(router) = &router {
        let shard = shards.for_device(0);
        let mut ports = Vec::new();
        let mut mstp_ports = Vec::new();
        let mut bip6_ports = Vec::new();
        let mut sc_ports = Vec::new();
        let mut ethernet_ports = Vec::new();
        for (p, device) in router.ports.iter().zip(port_devices) {
            if let Some(started) = router_sc.remove(&p.network) {
                eprintln!(
                    "trellis: router: network {} on BACnet/SC via {} (VMAC {})",
                    p.network,
                    started.view.primary_hub,
                    trellis_sc::identity::hex(&started.view.node.status().vmac)
                );
                let routes = routes.for_network(p.network);
                http_ports.push(router_port(
                    "sc",
                    format!("BACnet/SC via {}", started.view.primary_hub),
                    p.network,
                    crate::http::PortCounters::None,
                ));
                sc_ports.push(crate::server::RouterScPort { port: started.port, network: p.network, routes });
                continue;
            }
            if let Some(port) = router_ethernet.remove(&p.network) {
                eprintln!(
                    "trellis: router: network {} on BACnet Ethernet {} (MAC {})",
                    p.network,
                    port.interface(),
                    trellis_ethernet::format_mac(&port.mac())
                );
                let routes = routes.for_network(p.network);
                http_ports.push(router_port(
                    "ethernet",
                    format!("BACnet Ethernet {}", port.interface()),
                    p.network,
                    crate::http::PortCounters::Ethernet(port.stats()),
                ));
                ethernet_ports.push(crate::server::RouterEthernetPort { port, network: p.network, routes });
                continue;
            }
            if let Some(b) = &p.bip6 {
                let instance = b.vmac_instance.unwrap_or(0x3F_0000 + u32::from(p.network));
                let mut config = trellis_bip6::Bip6Config::new(b.bind, b.port, instance);
                config.interface = b.interface;
                config.site_group = b.site_group;
                let mut port = {
                    let _in_shard = shard.enter();
                    crate::server::bind_bip6(&config).with_context(|| format!("router port [{}]:{}", b.bind, b.port))?
                };
                if let Some(bbmd) = &b.bbmd {
                    enable_bbmd6(&mut port, bbmd).with_context(|| format!("router port [{}]:{}", b.bind, b.port))?;
                }
                let v = port.vmac();
                eprintln!(
                    "trellis: router: network {} on BACnet/IPv6 {} (VMAC {:02x}{:02x}{:02x})",
                    p.network,
                    port.local_addr(),
                    v[0],
                    v[1],
                    v[2]
                );
                let routes = routes.for_network(p.network);
                http_ports.push(router_port(
                    "bip6",
                    format!("BACnet/IPv6 {}", port.local_addr()),
                    p.network,
                    crate::http::PortCounters::Bip6(port.stats()),
                ));
                bip6_ports.push(crate::server::RouterBip6Port { port, network: p.network, routes });
                continue;
            }
            if let Some(m) = &p.mstp {
                let port = bind_mstp(m.port_config()).with_context(|| format!("router port {}", m.device))?;
                eprintln!(
                    "trellis: router: network {} on MS/TP {} at {} baud, MAC {}",
                    p.network, m.device, m.baud, m.mac
                );
                let routes = routes.for_network(p.network);
                http_ports.push(router_port(
                    "mstp",
                    format!("MS/TP {}", m.device),
                    p.network,
                    crate::http::PortCounters::Mstp(port.status_source()),
                ));
                mstp_ports.push(crate::server::RouterMstpPort { port, network: p.network, routes });
                continue;
            }
            let bip = trellis_bip::BipConfig::from_cidr(&p.bind, p.port).map_err(|e| anyhow::anyhow!("bind: {e}"))?;
            let mut port = {
                let _in_shard = shard.enter();
                bind_bip(&bip).with_context(|| format!("router port {}:{}", p.bind, p.port))?
            };
            if let Some(b) = &p.bbmd {
                let _ = routes.bbmd_for(p.network).0.set(enable_bbmd(&mut port, b)?);
            }
            eprintln!("trellis: router: network {} on BACnet/IP {}", p.network, port.local_addr());
            let routes = routes.for_network(p.network);
            http_ports.push(router_port(
                "bip",
                format!("BACnet/IP {}", port.local_addr()),
                p.network,
                crate::http::PortCounters::Bip(port.stats()),
            ));
            ports.push(crate::server::RouterBipPort { port, network: p.network, device, routes });
        }
        let virtual_networks: Vec<_> = virtual_networks
            .into_iter()
            .map(|(network, devices)| {
                eprintln!("trellis: router: virtual network {network} with {} devices", devices.len());
                crate::server::VirtualNetwork { network, devices, routes: routes.for_network(network) }
            })
            .collect();
        let mut policies = Vec::new();
        for (i, p) in router.policies.iter().enumerate() {
            let (policy, pc) = start_policy(&engine, p, i, &base, &config.policy).await?;
            swappable_policies.push((policy.clone(), pc));
            policies.push(policy);
        }
        let policy: Option<Box<dyn bacnet::router::RoutingPolicy + Send>> =
            (!policies.is_empty()).then(|| Box::new(bacnet::router::Chain(policies)) as _);
        let node = crate::server::RouterNode {
            ports,
            mstp_ports,
            bip6_ports,
            sc_ports,
            ethernet_ports,
            virtual_networks,
            counters: Default::default(),
            policy,
        };
        let serving = shard.spawn(async move { crate::server::serve_router(node).await });
        tasks.spawn(async move { serving.await? });
    }
    let app_servers = served.clone();
    let mqtt = match &config.mqtt {
        Some(section) => {
            let cache = engine_cache.clone().unwrap_or_else(|| std::env::temp_dir().join("trellis"));
            let bridge = crate::mqtt_bridge::start(section, served, cache, &base).context("[mqtt]")?;
            match &section.sparkplug {
                Some(sp) => eprintln!(
                    "trellis: MQTT to {} as {}: Sparkplug B edge node {}/{} (spBv1.0/{}/…/{})",
                    section.broker, section.client_id, sp.group_id, sp.edge_node_id, sp.group_id, sp.edge_node_id
                ),
                None if !section.publish_points => eprintln!(
                    "trellis: MQTT to {} as {} (points published by the applications)",
                    section.broker, section.client_id
                ),
                None => eprintln!(
                    "trellis: MQTT to {} as {} (topics under {}/, writes {})",
                    section.broker,
                    section.client_id,
                    section.topic_prefix,
                    if section.commands { format!("on {}/+/+/set", section.topic_prefix) } else { "off".into() }
                ),
            }
            Some(bridge)
        }
        None => None,
    };
    // One BACnet client for the remote devices, shared by OPC UA and the applications.
    let remotes = crate::app::remotes(&config.remotes, &config.client)?;
    let opcua = match &config.opcua {
        Some(section) => {
            let cache = engine_cache.clone().unwrap_or_else(|| std::env::temp_dir().join("trellis"));
            let running =
                crate::opcua_bridge::start(section, app_servers.clone(), Some(remotes.clone()), &base, &cache)
                    .await
                    .context("[opcua]")?;
            eprintln!("trellis: OPC UA at {} ({} points)", running.url, running.updater.points());
            Some(running)
        }
        None => None,
    };
    for (i, section) in config.opcua_clients.iter().enumerate() {
        let cache = engine_cache.clone().unwrap_or_else(|| std::env::temp_dir().join("trellis"));
        crate::opcua_bridge::pull::start(section, &app_servers, &base, &cache)
            .await
            .with_context(|| format!("[[opcua_client]] {}", i + 1))?;
        eprintln!(
            "trellis: OPC UA client of {}: {} points into device {}",
            section.url,
            section.points.len(),
            section.device
        );
    }
    let mut apps = Vec::new();
    if !config.apps.is_empty() {
        let services = std::sync::Arc::new(crate::app::services::GatewayServices::new(
            &app_servers,
            mqtt.as_ref().map(|b| b.link.clone()),
            remotes,
        ));
        let state_dir = engine_cache.clone().unwrap_or_else(|| std::env::temp_dir().join("trellis")).join("apps");
        let messages = mqtt.as_ref().map(|b| &b.messages);
        apps = crate::app::start(&config.apps, &engine, services, messages, &base, state_dir, &config.policy).await?;
    }
    // Hot swap through the local admin socket; every component goes through
    // the same signature and capability policy as at start-up.
    let devices = swappable;
    let swap_policy = config.policy.clone();
    let vet: crate::admin::Vetting = std::sync::Arc::new(move |path: &Path, mut pc: PluginConfig| {
        let (component, caps) = policy::check_file(path, &swap_policy).map_err(|e| e.to_string())?;
        let device_memory_mb = (pc.limits.memory_bytes >> 20) as u64;
        caps.apply(&mut pc, device_memory_mb);
        let provenance = crate::admin::Provenance::of_file(path, &component, &caps);
        Ok((component, pc, provenance))
    });
    let admin = std::sync::Arc::new(
        crate::admin::Admin::new(engine.clone(), devices, vet)
            .with_policies(swappable_policies, config.policy.clone())
            .with_apps(apps, config.policy.clone())
            .with_provenance(provenances),
    );
    let uploads = engine_cache.clone().unwrap_or_else(|| std::env::temp_dir().join("trellis")).join("uploads");
    let gateway = crate::http::Gateway {
        devices: http_devices,
        admin: admin.clone(),
        ports: http_ports,
        config: crate::http::redacted(&config),
        uploads,
        watchers: std::sync::Arc::new(tokio::sync::Semaphore::new(crate::http::MAX_WATCHERS)),
        mqtt: mqtt.as_ref().map(|b| b.link.clone()),
        mqtt_commands: mqtt.as_ref().map(|b| b.commands.clone()),
    };
    let gateway = std::sync::Arc::new(gateway);
    let console = start_http(&config, options.http.as_deref(), gateway.clone()).await?;
    for (device, file) in &watched {
        tasks.spawn(watch(admin.clone(), *device, file.clone()));
    }
    // Without its admin socket the gateway still serves BACnet; it says so.
    let socket_file = match &options.admin_socket {
        Some(socket) => match crate::admin::bind(socket) {
            Ok(listener) => {
                let admin = admin.clone();
                tasks.spawn(async move { crate::admin::serve(listener, admin).await });
                eprintln!("trellis: admin socket {}", socket.display());
                Some(RemoveOnDrop(socket.clone()))
            }
            Err(e) => {
                eprintln!("trellis: no admin socket ({e:#}); hot swap is unavailable");
                None
            }
        },
        None => None,
    };
    if units > 1 {
        eprintln!(
            "trellis: {} devices on {} threads (one per core at most; [engine] threads{})",
            config.devices.len(),
            shards.len(),
            if router.is_some() { "; the router and the devices behind it share one" } else { "" }
        );
    }
    Ok(Started { tasks, shards, admin, gateway, console, _socket_file: socket_file, _mqtt: mqtt, _opcua: opcua })
}

/// Start the console, REST API and `/metrics`: `--http`, else `[http]`,
/// else the default loopback bind — where a taken default port is said and
/// passed over (the gateway serves BACnet without a console), while a bind
/// someone asked for must succeed.
async fn start_http(
    config: &Config,
    flag: Option<&str>,
    gateway: std::sync::Arc<crate::http::Gateway>,
) -> anyhow::Result<Option<crate::http::Running>> {
    let mut section = config.http.clone().unwrap_or_default();
    let asked = flag.is_some() || config.http.is_some();
    if let Some(bind) = flag {
        section.bind = bind.to_string();
    }
    match crate::http::start(&section, gateway).await {
        Ok(Some(running)) => {
            let line = format!(
                "console {} (API {}api/openapi.json, metrics {}metrics)",
                running.url, running.url, running.url
            );
            eprintln!("trellis: {line}");
            crate::http::logs::note(line);
            Ok(Some(running))
        }
        Ok(None) => Ok(None),
        Err(e) if !asked => {
            eprintln!("trellis: no console ({e:#}); set [http] bind or --http to move it, or --http off");
            Ok(None)
        }
        Err(e) => Err(e.context("[http]")),
    }
}

/// Removes the admin socket however the run ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
