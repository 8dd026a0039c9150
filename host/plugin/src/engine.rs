//! The one wasmtime [`Engine`] every plugin runs on, and the epoch ticker
//! that gives each call its deadline.
//!
//! Configuration, in one place: components only, synchronous calls
//! (`concurrency_support(false)`: no async machinery in the store, the
//! cheapest host→guest crossing), epoch interruption driven by a ticker
//! thread, and the pooling allocator sized for a handful of instances so
//! restarts and hot swaps instantiate in microseconds.
//!
//! On a 32-bit host (armv7) there is no pool: its slots reserve their
//! memories' whole address space up front (16 instances × 2 memories × 64
//! MiB would be most of a 32-bit process's), so instances are allocated on
//! demand there, memories growing (and moving) as plugins ask, still within
//! each plugin's limits (the store's limiter enforces them either way).
//! wasmtime runs plugins there with Pulley, its interpreter: Cranelift
//! targets no 32-bit ARM.
//!
//! This module must never run guest code, and must never let a plugin
//! outlive the ticker: every [`PluginModel`](super::PluginModel) holds a clone
//! of [`PluginEngine`], and the ticker stops only when the last clone is
//! dropped. Without ticks no deadline ever fires.

use super::cache::ComponentCache;
use super::limits::Limits;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How the engine is built.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Period of the epoch ticker; deadlines are whole ticks (default 10 ms).
    pub epoch_tick: Duration,
    /// Pre-allocate instance slots (`Some`) or allocate on demand (`None`).
    pub pooling: Option<PoolConfig>,
    /// Where compiled components are cached; `None` compiles every load.
    pub cache_dir: Option<std::path::PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            epoch_tick: Duration::from_millis(10),
            pooling: Some(PoolConfig::default()),
            cache_dir: Some(ComponentCache::default_dir()),
        }
    }
}

/// Sizing of the pooling allocator. Every slot reserves address space (not
/// memory) up front; a plugin whose limits exceed the pool's fails to load
/// with a clear error.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Component instances alive at once across all plugins. Restarts reuse
    /// a slot; a hot swap needs two for a moment.
    pub max_instances: u32,
    /// The largest per-instance limits any plugin may ask for.
    pub limits: Limits,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig { max_instances: 16, limits: Limits::default() }
    }
}

/// Core modules, memories and tables one component may contain. A Rust
/// `wasm32-wasip2` component has one main module plus a few adapter shims.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 2;
const TABLES_PER_COMPONENT: u32 = 4;

/// A cheap, clonable handle to the engine and its ticker.
#[derive(Clone)]
pub struct PluginEngine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    tick: Duration,
    pool_limits: Option<Limits>,
    cache: Option<ComponentCache>,
    _ticker: Ticker,
}

impl PluginEngine {
    /// Build the engine and start its ticker thread.
    pub fn new(config: &EngineConfig) -> wasmtime::Result<Self> {
        let mut c = Config::new();
        // No `parallel-compilation` feature: compiling would compete with the
        // server for our two cores, and compiled components are cached.
        c.wasm_component_model(true).concurrency_support(false).epoch_interruption(true);
        let pooling = if cfg!(target_pointer_width = "32") { None } else { config.pooling.as_ref() };
        if let Some(pool) = pooling {
            let mut p = PoolingAllocationConfig::new();
            let instances = pool.max_instances.max(1);
            p.total_component_instances(instances)
                .total_core_instances(instances * CORE_INSTANCES_PER_COMPONENT)
                .total_memories(instances * MEMORIES_PER_COMPONENT)
                // One fiber stack per call in progress (async calls, see
                // `instance`): at most one per instance.
                .total_stacks(instances)
                .total_tables(instances * TABLES_PER_COMPONENT)
                .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
                .max_memories_per_component(MEMORIES_PER_COMPONENT)
                .max_tables_per_component(TABLES_PER_COMPONENT)
                .max_memory_size(pool.limits.memory_bytes)
                .table_elements(pool.limits.table_elements);
            c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
        }
        let engine = Engine::new(&c)?;
        let cache = match &config.cache_dir {
            Some(dir) => match ComponentCache::new(dir) {
                Ok(cache) => Some(cache),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), "plugin cache disabled: {e}");
                    None
                }
            },
            None => None,
        };
        let tick = config.epoch_tick.max(Duration::from_millis(1));
        let ticker = Ticker::start(engine.clone(), tick)?;
        Ok(PluginEngine {
            inner: Arc::new(Inner {
                engine,
                tick,
                pool_limits: pooling.map(|p| p.limits.clone()),
                cache,
                _ticker: ticker,
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The compiled-component cache, when enabled.
    pub fn cache(&self) -> Option<&ComponentCache> {
        self.inner.cache.as_ref()
    }

    /// The ticker period.
    pub fn epoch_tick(&self) -> Duration {
        self.inner.tick
    }

    /// Epoch ticks for a deadline of `d`: rounded up, plus one because the
    /// tick in progress may be about to end.
    pub fn ticks_for(&self, d: Duration) -> u64 {
        let tick = self.inner.tick.as_nanos().max(1);
        (d.as_nanos().div_ceil(tick) as u64).max(1) + 1
    }

    /// Check that per-plugin limits fit the pool's slots.
    pub(crate) fn check_limits(&self, limits: &Limits) -> Result<(), String> {
        match &self.inner.pool_limits {
            Some(pool) if limits.memory_bytes > pool.memory_bytes => Err(format!(
                "memory limit {} bytes exceeds the engine pool's {} bytes",
                limits.memory_bytes, pool.memory_bytes
            )),
            Some(pool) if limits.table_elements > pool.table_elements => Err(format!(
                "table limit {} elements exceeds the engine pool's {}",
                limits.table_elements, pool.table_elements
            )),
            _ => Ok(()),
        }
    }

    #[cfg(test)]
    pub(crate) fn ticker_running(&self) -> bool {
        !self.inner._ticker.stop.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine").field("epoch_tick", &self.inner.tick).finish_non_exhaustive()
    }
}

/// The thread that advances the engine's epoch.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: Engine, tick: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name("trellis-epoch".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })?;
        Ok(Ticker { stop, thread: Some(thread) })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_round_up_to_whole_ticks_plus_the_tick_in_progress() {
        let e = PluginEngine::new(&EngineConfig { pooling: None, cache_dir: None, ..Default::default() }).unwrap();
        assert!(e.ticker_running());
        assert_eq!(e.ticks_for(Duration::from_millis(100)), 11);
        assert_eq!(e.ticks_for(Duration::from_millis(101)), 12);
        assert_eq!(e.ticks_for(Duration::ZERO), 2);
    }
}
