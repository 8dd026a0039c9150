//! `trellis run`: the gateway. Without `--config` it serves the built-in
//! `demo-building` plugin as one BACnet/IP device on 127.0.0.1:47808; flags
//! override the bind address, port, device instance and plugin of that
//! single device. With `--config FILE` it serves every `[[device]]` in it.

use super::Failure;
use crate::config::{Config, DeviceSection, PluginRef};
use crate::model::ObjectModel;
use crate::plugin::{PluginConfig, PluginEngine, PluginModel, builtin};
use crate::server::{DeviceConfig, build, serve};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
}

/// Run `trellis run` until Ctrl-C. `bind` and `port` come from the global
/// options and apply in single-device mode.
pub async fn run(bind: Option<String>, port: Option<u16>, a: RunArgs) -> Result<(), Failure> {
    let (config, base) = match &a.config {
        Some(path) => (Config::load(path)?, path.parent().unwrap_or(Path::new(".")).to_path_buf()),
        None => {
            let mut c = Config::embedded();
            let d = &mut c.devices[0];
            if let Some(b) = bind {
                d.bind = b;
            }
            if let Some(p) = port {
                d.port = p;
            }
            d.instance = a.device_id.or(d.instance);
            if let Some(p) = a.plugin {
                d.plugin = p;
            }
            d.data_dir = a.data_dir.or(d.data_dir.take());
            (c, std::env::current_dir().unwrap_or_default())
        }
    };
    let engine_config = crate::plugin::EngineConfig {
        cache_dir: config.engine.cache_dir.clone().or(crate::plugin::EngineConfig::default().cache_dir),
        ..Default::default()
    };
    let engine = tokio::task::spawn_blocking(move || PluginEngine::new(&engine_config))
        .await
        .map_err(anyhow::Error::from)?
        .map_err(|e| anyhow::anyhow!("cannot start the WebAssembly engine: {e:#}"))?;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, d) in config.devices.iter().enumerate() {
        let (model, bip, server_config) = start_device(&engine, d, i, &base).await?;
        let info = model.describe();
        let objects = model.objects().await.map(|o| o.len()).unwrap_or(0);
        let server = build(model.clone(), server_config, d.vendor_id).await?;
        eprintln!(
            "trellis: device {} on BACnet/IP {}:{} — plugin {} {} ({objects} objects)",
            server.device_id().instance,
            d.bind,
            d.port,
            info.name,
            info.version
        );
        tasks.spawn(async move { serve(bip, server).await });
        tasks.spawn(tick(model, Duration::from_millis(d.tick_ms)));
    }
    eprintln!("trellis: serving; Ctrl-C to stop");
    tokio::select! {
        Some(done) = tasks.join_next() => {
            match done {
                Ok(Ok(())) => Err(Failure::from(anyhow::anyhow!("a device stopped serving"))),
                Ok(Err(e)) => Err(Failure::from(e)),
                Err(e) => Err(Failure::from(anyhow::Error::from(e))),
            }
        }
        _ = tokio::signal::ctrl_c() => {
            tasks.shutdown().await;
            eprintln!("trellis: stopped");
            Ok(())
        }
    }
}

async fn start_device(
    engine: &PluginEngine,
    d: &DeviceSection,
    index: usize,
    base: &Path,
) -> anyhow::Result<(PluginModel, trellis_bip::BipConfig, DeviceConfig)> {
    let bip = trellis_bip::BipConfig::from_cidr(&d.bind, d.port).map_err(|e| anyhow::anyhow!("bind: {e}"))?;
    let mut pc = PluginConfig::new(format!("device{}:{}", index + 1, d.plugin));
    pc.data_dir = d.data_dir.clone();
    pc.limits.memory_bytes = (d.memory_mb as usize) << 20;
    pc.deadline = Duration::from_millis(d.deadline_ms);
    let plugin = d.plugin_ref(base)?;
    let engine = engine.clone();
    let model = tokio::task::spawn_blocking(move || match plugin {
        PluginRef::Builtin("demo-building") => PluginModel::load(&engine, builtin::DEMO_BUILDING, pc),
        PluginRef::Builtin(_) => PluginModel::load(&engine, Path::new(builtin::BULK_OBJECTS_PATH), pc),
        PluginRef::File(path) => PluginModel::load(&engine, path.as_path(), pc),
    })
    .await?
    .context("loading the plugin")?;
    Ok((model, bip, DeviceConfig { instance: d.instance, ..Default::default() }))
}

/// Drive the model's time-based behaviour.
async fn tick(model: PluginModel, every: Duration) -> anyhow::Result<()> {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let clock = crate::plugin::HostClock::default();
    loop {
        interval.tick().await;
        if let Err(e) = model.tick(clock.now()).await {
            tracing::warn!(plugin = model.name(), error = %e, "tick failed");
        }
    }
}
