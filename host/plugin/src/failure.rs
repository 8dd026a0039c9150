//! What a failed plugin call was, in one line for the log and the status:
//! a limit (memory or table growth refused, the deadline's interrupt) or a
//! trap with the plugin's last words. Shared by every plugin kind that runs
//! calls under a deadline and a memory limit.

use super::limits::LimitHits;
use super::log::PluginLog;
use std::time::Duration;
use wasmtime::Trap;

/// One line on why `plugin`'s call failed with `e`.
pub(crate) fn describe(
    plugin: &str,
    memory_bytes: usize,
    deadline: Duration,
    log: &PluginLog,
    e: &wasmtime::Error,
    hits: LimitHits,
) -> String {
    if hits.memory || hits.table {
        return format!("plugin {plugin} exceeded its memory limit of {memory_bytes} bytes");
    }
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return format!("plugin {plugin} exceeded its time limit of {} ms", deadline.as_millis());
    }
    tracing::debug!(plugin, "call failed: {e:?}");
    let trap = match e.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => e.root_cause().to_string(),
    };
    let detail = match log.last_words() {
        Some(said) => format!("{said} ({trap})"),
        None => trap,
    };
    let detail = detail.replace(['\r', '\n'], " ");
    format!("plugin {plugin} trapped: {}", super::log::truncate(&detail, 1024))
}

/// The component of `source`, compiled (or taken from the engine's cache)
/// after `limits` are checked against the engine's.
pub(crate) fn compile(
    engine: &super::engine::PluginEngine,
    source: super::PluginSource<'_>,
    limits: &super::limits::Limits,
) -> Result<(wasmtime::component::Component, super::cache::CacheOutcome), String> {
    let file;
    let bytes = match source {
        super::PluginSource::Bytes(b) => b,
        super::PluginSource::File(path) => {
            file = super::read_component(path)?;
            &file[..]
        }
    };
    engine.check_limits(limits)?;
    match engine.cache() {
        Some(c) => c.load(engine.engine(), bytes),
        None => super::cache::compile_uncached(engine.engine(), bytes),
    }
    .map_err(|e| format!("not a valid component: {e:#}"))
}
