//! A latency histogram that costs a few relaxed atomic adds to feed: for
//! the request path and plugin calls, read by the operator's metrics.
//!
//! Fixed bucket bounds (50 µs … 1 s, then +Inf) chosen for a gateway: a
//! ReadProperty answers in tens of microseconds, a plugin call in a few,
//! a remote or segmented answer in milliseconds; anything past a second is
//! a problem whichever bucket it is in.
//!
//! Must never: lock, allocate, or make the recording thread wait for a
//! reader (a scrape reads the counters one by one, so it may see a record
//! half-counted — its count without its sum — which Prometheus tolerates).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds (the last bucket is +Inf).
pub const BOUNDS_SECONDS: [f64; 13] =
    [50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1.0];

/// The bounds in nanoseconds, compared on the recording path.
const BOUNDS_NANOS: [u64; 13] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    1_000_000_000,
];

/// Durations counted per bucket, with their sum.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Per bucket (not cumulative); the last one is above every bound.
    buckets: [AtomicU64; 14],
    sum_nanos: AtomicU64,
}

/// A copy of a histogram's counters, for a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySnapshot {
    /// Observations at or below each of [`BOUNDS_SECONDS`], cumulative.
    pub cumulative: [u64; 13],
    /// Every observation.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

impl LatencyHistogram {
    /// Count one observation.
    pub fn record(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS.iter().position(|b| nanos <= *b).unwrap_or(BOUNDS_NANOS.len());
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// The counters as they are now.
    pub fn snapshot(&self) -> LatencySnapshot {
        let mut cumulative = [0; 13];
        let mut running = 0;
        for (i, c) in cumulative.iter_mut().enumerate() {
            running += self.buckets[i].load(Relaxed);
            *c = running;
        }
        let count = running + self.buckets[13].load(Relaxed);
        LatencySnapshot { cumulative, count, sum_seconds: self.sum_nanos.load(Relaxed) as f64 / 1e9 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_whose_bound_holds_them() {
        let h = LatencyHistogram::default();
        h.record(Duration::from_micros(20));
        h.record(Duration::from_micros(50)); // on the bound: le="5e-05"
        h.record(Duration::from_micros(51));
        h.record(Duration::from_secs(3)); // +Inf only
        let s = h.snapshot();
        assert_eq!(s.cumulative[0], 2);
        assert_eq!(s.cumulative[1], 3);
        assert_eq!(s.cumulative[12], 3);
        assert_eq!(s.count, 4);
        assert!((s.sum_seconds - 3.000_121).abs() < 1e-9);
    }
}
