//! The gateway's wall clock as plugins see it: the OS clock plus an offset
//! that TimeSynchronization (or an operator) may set, shared by every plugin
//! and by WASI's `wall-clock` (the plugin runtime adapts it) so a model's two
//! views of time agree.
//!
//! This module must never move the OS clock, and never block.

use crate::DateTime;
use std::sync::Arc;
use std::sync::atomic::{AtomicI16, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A shared, adjustable wall clock (cheap to clone; clones share the offset).
#[derive(Debug, Clone, Default)]
pub struct HostClock {
    inner: Arc<Offsets>,
}

#[derive(Debug, Default)]
struct Offsets {
    /// Milliseconds added to the OS clock.
    skew_ms: AtomicI64,
    /// Minutes to add to UTC for local time.
    utc_offset_minutes: AtomicI16,
}

impl HostClock {
    /// The OS clock, unadjusted, with local time equal to UTC.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current time.
    pub fn now(&self) -> DateTime {
        let skew = self.inner.skew_ms.load(Ordering::Relaxed);
        DateTime {
            unix_ms: os_unix_ms().saturating_add_signed(skew),
            utc_offset_minutes: self.inner.utc_offset_minutes.load(Ordering::Relaxed),
        }
    }

    /// Make [`now`](Self::now) report `t` from this instant on (what a
    /// TimeSynchronization request does).
    pub fn set(&self, t: DateTime) {
        let skew = t.unix_ms as i128 - os_unix_ms() as i128;
        self.inner.skew_ms.store(skew.clamp(i64::MIN as i128, i64::MAX as i128) as i64, Ordering::Relaxed);
        self.inner.utc_offset_minutes.store(t.utc_offset_minutes, Ordering::Relaxed);
    }

    /// The current adjustment relative to the OS clock, in milliseconds.
    pub fn skew_ms(&self) -> i64 {
        self.inner.skew_ms.load(Ordering::Relaxed)
    }
}

fn os_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_the_clock_shifts_every_clone() {
        let a = HostClock::new();
        let b = a.clone();
        let target = DateTime { unix_ms: 1_000_000_000_000, utc_offset_minutes: 60 };
        a.set(target);
        let seen = b.now();
        assert!(seen.unix_ms >= target.unix_ms && seen.unix_ms < target.unix_ms + 60_000, "{seen:?}");
        assert_eq!(seen.utc_offset_minutes, 60);
        assert!(b.skew_ms() < 0);
    }
}
