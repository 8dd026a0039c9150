//! Per-store resource limits: linear memory, table elements and instance
//! counts, enforced by a [`ResourceLimiter`] that remembers when a limit was
//! hit so the worker can tell a memory bomb from any other trap.
//!
//! The limiter must never allow growth past its limits and must never trap
//! by itself: a refused `memory.grow` returns -1 to the guest (the standard
//! semantics), and a guest that cannot cope traps on its own. The flag set
//! here is what turns that trap into `ModelError::MemoryExceeded`.

use wasmtime::ResourceLimiter;

/// Limits for one plugin instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Total linear memory, in bytes (default 64 MiB).
    pub memory_bytes: usize,
    /// Elements per table (default 20,000).
    pub table_elements: usize,
    /// Core instances, memories and tables a component may create
    /// (default 16 each).
    pub instances: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: 64 << 20, table_elements: 20_000, instances: 16 }
    }
}

/// What the limiter refused during the current call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitHits {
    /// A memory growth was refused.
    pub memory: bool,
    /// A table growth was refused.
    pub table: bool,
}

/// The [`ResourceLimiter`] of one store.
#[derive(Debug)]
pub struct StoreLimiter {
    limits: Limits,
    hits: LimitHits,
}

impl StoreLimiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        StoreLimiter { limits, hits: LimitHits::default() }
    }

    /// Refusals since the last [`reset`](Self::reset).
    pub fn hits(&self) -> LimitHits {
        self.hits
    }

    /// Forget earlier refusals (called before every export call).
    pub fn reset(&mut self) {
        self.hits = LimitHits::default();
    }
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let ok = desired <= self.limits.memory_bytes && maximum.is_none_or(|m| desired <= m);
        if !ok {
            self.hits.memory = true;
        }
        Ok(ok)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let ok = desired <= self.limits.table_elements && maximum.is_none_or(|m| desired <= m);
        if !ok {
            self.hits.table = true;
        }
        Ok(ok)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // The pool or the OS refused what we allowed: still out of memory.
        self.hits.memory = true;
        Ok(())
    }

    fn instances(&self) -> usize {
        self.limits.instances
    }

    fn memories(&self) -> usize {
        self.limits.instances
    }

    fn tables(&self) -> usize {
        self.limits.instances
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_limit_is_refused_and_remembered_until_reset() {
        let mut l = StoreLimiter::new(Limits { memory_bytes: 1 << 20, ..Limits::default() });
        assert!(l.memory_growing(0, 1 << 20, None).unwrap());
        assert_eq!(l.hits(), LimitHits::default());
        assert!(!l.memory_growing(1 << 20, 2 << 20, None).unwrap());
        assert!(l.hits().memory);
        l.reset();
        assert!(!l.hits().memory);
        assert!(!l.table_growing(0, 20_001, None).unwrap());
        assert!(l.hits().table);
    }

    #[test]
    fn a_module_declared_maximum_also_bounds_growth() {
        let mut l = StoreLimiter::new(Limits::default());
        assert!(!l.memory_growing(0, 2 << 16, Some(1 << 16)).unwrap());
    }
}
