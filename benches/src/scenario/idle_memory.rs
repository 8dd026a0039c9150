//! `idle-memory`: what one more idle plugin instance costs in memory
//! (issue 38, item 4), per kind. The plugin runtime runs in this process,
//! as `trellis run` uses it: one engine, the component loaded once per
//! instance (from the compiled-component cache), then left idle.
//!
//! - object model: the demo building, as for each served device, each
//!   instance called once (its state exported) so that what a first call
//!   touches is counted;
//! - routing policy: broadcast-guard with its default settings, as for each
//!   configured policy, configured (a guest call) and asked nothing else.
//!
//! ```text
//! engine started ─▶ 1 instance ─▶ 1 + N instances       (pooling on, then off)
//!                   RSS₁, PSS₁     RSS₁₊ₙ, PSS₁₊ₙ        per extra: (·₁₊ₙ − ·₁) / N
//! ```
//!
//! Resident set (`VmRSS`) and proportional set (`Pss` of
//! `/proc/self/smaps_rollup`: a page shared by k mappings counts 1/k) are
//! read after a settle; the first instance's cost (the compiled code, the
//! engine's first allocations) is reported apart. The target is 256 KiB
//! per extra instance; the scenario reports, it does not judge.
//!
//! Not measured: application plugins (one per configured application,
//! loaded with their grants and points).

use crate::json_line::JsonLine;
use anyhow::Context;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use trellis::plugin::routing::{PolicyConfig, PolicyPlugin};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, PluginSource, PoolConfig, builtin};

/// The target per extra idle instance (issue 38), KiB.
const TARGET_KIB: u64 = 256;

/// This process's resident and proportional set sizes, KiB.
fn rss_pss_kib() -> anyhow::Result<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").context("read /proc/self/smaps_rollup")?;
    let field = |name: &str| -> anyhow::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {name} in smaps_rollup"))
    };
    Ok((field("Rss")?, field("Pss")?))
}

/// The kinds measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ObjectModel,
    RoutingPolicy,
}

impl Kind {
    const ALL: [Kind; 2] = [Kind::ObjectModel, Kind::RoutingPolicy];

    fn name(self) -> &'static str {
        match self {
            Kind::ObjectModel => "object-model",
            Kind::RoutingPolicy => "routing-policy",
        }
    }

    fn plugin(self) -> &'static str {
        match self {
            Kind::ObjectModel => "demo-building",
            Kind::RoutingPolicy => "broadcast-guard",
        }
    }
}

/// A loaded instance of either kind, held (not used) until the measurement ends.
type Loaded = Box<dyn std::any::Any>;

/// Load one instance of `kind` and call it as the module says.
fn load_one(engine: &PluginEngine, runtime: &tokio::runtime::Runtime, kind: Kind, i: usize) -> anyhow::Result<Loaded> {
    match kind {
        Kind::ObjectModel => {
            let config = PluginConfig::new(format!("demo-{i}"));
            let model = PluginModel::load(engine, PluginSource::Bytes(builtin::DEMO_BUILDING), config)
                .with_context(|| format!("load demo-building instance {i}"))?;
            runtime.block_on(model.export_state()).map_err(|e| anyhow::anyhow!("instance {i}: export_state: {e}"))?;
            Ok(Box::new(model))
        }
        Kind::RoutingPolicy => {
            let config = PolicyConfig::new(format!("guard-{i}"), "");
            let policy = PolicyPlugin::load(engine, PluginSource::Bytes(builtin::BROADCAST_GUARD), config)
                .with_context(|| format!("load broadcast-guard instance {i}"))?;
            Ok(Box::new(policy))
        }
    }
}

fn settled() -> anyhow::Result<(u64, u64)> {
    std::thread::sleep(Duration::from_millis(300));
    rss_pss_kib()
}

/// One measurement: `extra` instances of `kind` after the first, pooling on or off.
fn measure(cache_dir: &Path, kind: Kind, extra: usize, pooling: bool) -> anyhow::Result<JsonLine> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let before = settled()?;
    let config = EngineConfig {
        cache_dir: Some(cache_dir.to_path_buf()),
        pooling: pooling.then(|| PoolConfig {
            max_instances: u32::try_from(extra * 2 + 4).unwrap_or(u32::MAX),
            ..PoolConfig::default()
        }),
        ..EngineConfig::default()
    };
    let engine = PluginEngine::new(&config).map_err(|e| anyhow::anyhow!("start the engine: {e:#}"))?;
    let engine_started = settled()?;
    let mut loaded = vec![load_one(&engine, &runtime, kind, 0)?];
    let first = settled()?;
    for i in 1..=extra {
        loaded.push(load_one(&engine, &runtime, kind, i)?);
    }
    let all = settled()?;
    let per = |a: u64, b: u64| (a.saturating_sub(b) as f64 / extra.max(1) as f64).round() as u64;
    let (rss_per, pss_per) = (per(all.0, first.0), per(all.1, first.1));
    drop(loaded);
    Ok(JsonLine::new()
        .put("scenario", json!("idle-memory"))
        .put("kind", json!(kind.name()))
        .put("plugin", json!(kind.plugin()))
        .put("pooling", json!(pooling))
        .put("extra_instances", json!(extra))
        .put("engine_rss_kib", json!(engine_started.0.saturating_sub(before.0)))
        .put("first_instance_rss_kib", json!(first.0.saturating_sub(engine_started.0)))
        .put("first_instance_pss_kib", json!(first.1.saturating_sub(engine_started.1)))
        .put("per_extra_rss_kib", json!(rss_per))
        .put("per_extra_pss_kib", json!(pss_per))
        .put("target_kib", json!(TARGET_KIB)))
}

/// Run the scenario: per kind, pooling on, then off; one JSON line each,
/// a table on stderr.
pub fn run(extra: usize, cache_dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(extra >= 1, "--instances: at least 1");
    // Compile once into the cache: a load here is a restart's, not a first start's.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let engine = EngineConfig { cache_dir: Some(cache_dir.to_path_buf()), ..EngineConfig::default() };
    let engine = PluginEngine::new(&engine).map_err(|e| anyhow::anyhow!("start the engine: {e:#}"))?;
    for kind in Kind::ALL {
        drop(load_one(&engine, &runtime, kind, 0)?);
    }
    drop(engine);
    let mut rows = Vec::new();
    for kind in Kind::ALL {
        for pooling in [true, false] {
            let line = measure(cache_dir, kind, extra, pooling)?.finish();
            println!("{line}");
            rows.push(serde_json::from_str::<serde_json::Value>(&line)?);
        }
    }
    eprintln!(
        "| kind (plugin) | allocator | extra instances | engine (KiB RSS) | first instance (KiB RSS / PSS) | per extra instance (KiB RSS / PSS) | target |"
    );
    eprintln!("|---|---|---|---|---|---|---|");
    for r in &rows {
        eprintln!(
            "| {} ({}) | {} | {} | {} | {} / {} | {} / {} | ≤ {} |",
            r["kind"].as_str().unwrap_or("?"),
            r["plugin"].as_str().unwrap_or("?"),
            if r["pooling"].as_bool() == Some(true) { "pooling" } else { "on demand" },
            r["extra_instances"],
            r["engine_rss_kib"],
            r["first_instance_rss_kib"],
            r["first_instance_pss_kib"],
            r["per_extra_rss_kib"],
            r["per_extra_pss_kib"],
            r["target_kib"]
        );
    }
    Ok(())
}
