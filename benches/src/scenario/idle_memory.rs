//! `idle-memory`: what one more idle object-model instance of the demo
//! plugin costs in memory (issue 38, item 4). The plugin runtime runs in
//! this process, as `trellis run` uses it for each served device: one
//! engine, the demo-building component loaded once per device (from the
//! compiled-component cache), each instance called once (its state
//! exported) so that what a first call touches is counted, then left idle.
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
//! Only the object-model kind: routing-policy and application plugins
//! load one instance per configured policy or application, not per
//! device, and are not measured here.

use crate::json_line::JsonLine;
use anyhow::Context;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
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

/// Load one demo-building instance and call it once.
fn load_one(engine: &PluginEngine, runtime: &tokio::runtime::Runtime, i: usize) -> anyhow::Result<PluginModel> {
    let model =
        PluginModel::load(engine, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new(format!("demo-{i}")))
            .with_context(|| format!("load demo-building instance {i}"))?;
    runtime.block_on(model.export_state()).map_err(|e| anyhow::anyhow!("instance {i}: export_state: {e}"))?;
    Ok(model)
}

fn settled() -> anyhow::Result<(u64, u64)> {
    std::thread::sleep(Duration::from_millis(300));
    rss_pss_kib()
}

/// One measurement: `extra` instances after the first, pooling on or off.
fn measure(cache_dir: &Path, extra: usize, pooling: bool) -> anyhow::Result<JsonLine> {
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
    let mut models = vec![load_one(&engine, &runtime, 0)?];
    let first = settled()?;
    for i in 1..=extra {
        models.push(load_one(&engine, &runtime, i)?);
    }
    let all = settled()?;
    let per = |a: u64, b: u64| (a.saturating_sub(b) as f64 / extra.max(1) as f64).round() as u64;
    let (rss_per, pss_per) = (per(all.0, first.0), per(all.1, first.1));
    drop(models);
    Ok(JsonLine::new()
        .put("scenario", json!("idle-memory"))
        .put("kind", json!("object-model"))
        .put("plugin", json!("demo-building"))
        .put("pooling", json!(pooling))
        .put("extra_instances", json!(extra))
        .put("engine_rss_kib", json!(engine_started.0.saturating_sub(before.0)))
        .put("first_instance_rss_kib", json!(first.0.saturating_sub(engine_started.0)))
        .put("first_instance_pss_kib", json!(first.1.saturating_sub(engine_started.1)))
        .put("per_extra_rss_kib", json!(rss_per))
        .put("per_extra_pss_kib", json!(pss_per))
        .put("target_kib", json!(TARGET_KIB)))
}

/// Run the scenario: pooling on, then off; one JSON line each, a table on stderr.
pub fn run(extra: usize, cache_dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(extra >= 1, "--instances: at least 1");
    // Compile once into the cache: a device's load is a restart's, not a first start's.
    PluginEngine::new(&EngineConfig { cache_dir: Some(cache_dir.to_path_buf()), ..EngineConfig::default() })
        .ok()
        .and_then(|e| {
            PluginModel::load(&e, PluginSource::Bytes(builtin::DEMO_BUILDING), PluginConfig::new("prime")).ok()
        });
    let mut rows = Vec::new();
    for pooling in [true, false] {
        let line = measure(cache_dir, extra, pooling)?.finish();
        println!("{line}");
        rows.push(serde_json::from_str::<serde_json::Value>(&line)?);
    }
    eprintln!(
        "| allocator | extra instances | engine (KiB RSS) | first instance (KiB RSS / PSS) | per extra instance (KiB RSS / PSS) | target |"
    );
    eprintln!("|---|---|---|---|---|---|");
    for r in &rows {
        eprintln!(
            "| {} | {} | {} | {} / {} | {} / {} | ≤ {} |",
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
