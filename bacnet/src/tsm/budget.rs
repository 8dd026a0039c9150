//! A budget of segmented-answer octets per origin: how much a peer that has
//! proved nothing can make this device send.
//!
//! A confirmed request is a few octets; its segmented answer may be hundreds
//! of kilobytes, and a UDP source address can be spoofed, so without a bound
//! a server is a reflection amplifier aimed at whatever address a request
//! names. Each origin (for B/IP: the requester's IP address, whatever its
//! port — the owner of the state machine decides, see
//! [`ServerTsm::with_origin`](super::ServerTsm::with_origin)) has a token
//! bucket of [`AnswerBudget::burst_octets`] refilled at
//! [`AnswerBudget::octets_per_second`]. Every segment of a segmented answer —
//! the first, each window, each resend — spends from it; when it is empty, a
//! new segmented answer is refused and one in progress ends, both with Abort
//! out-of-resources, and counted. A window is never cut: the bucket may go
//! below zero by at most one window, which is part of the stated bound.
//!
//! Unsegmented answers do not spend: each is one datagram for one request.
//!
//! Memory is bounded: a bucket exists only while it is not full, and the
//! table holds at most `capacity` of them; at the cap, new origins are
//! refused until buckets refill.
//!
//! Must never: read a clock (time comes in as `now`), or refuse an origin
//! whose bucket has room.

use alloc::collections::BTreeMap;
use core::time::Duration;

/// The per-origin bound on segmented-answer octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerBudget {
    /// Sustained rate at which an origin's bucket refills.
    pub octets_per_second: u32,
    /// The bucket's size: what an origin may draw at once after a quiet
    /// spell.
    pub burst_octets: u32,
}

impl Default for AnswerBudget {
    /// 256 KiB/s with a burst of 512 KiB: twice the largest answer this
    /// device builds (`max_response_octets`, 256 KiB) in one go, and far
    /// above what a supervisory front end reads from one device.
    fn default() -> Self {
        AnswerBudget { octets_per_second: 256 * 1024, burst_octets: 512 * 1024 }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Octets available; below zero after a window larger than what was
    /// left.
    level: i64,
    /// When `level` was last brought up to date.
    at: Duration,
}

/// Buckets per origin.
#[derive(Debug)]
pub(crate) struct Budgets<K> {
    budget: Option<AnswerBudget>,
    buckets: BTreeMap<K, Bucket>,
    capacity: usize,
}

impl<K: Ord + Clone> Budgets<K> {
    /// Buckets for `budget` (`None`: unlimited), at most `capacity` origins
    /// drawing at once.
    pub(crate) fn new(budget: Option<AnswerBudget>, capacity: usize) -> Self {
        Budgets { budget, buckets: BTreeMap::new(), capacity: capacity.max(1) }
    }

    /// Spend `octets` for `origin` if its bucket has anything left; false
    /// (nothing spent) when it is empty or no bucket can be made for it.
    pub(crate) fn try_spend(&mut self, now: Duration, origin: &K, octets: usize) -> bool {
        let Some(budget) = self.budget else { return true };
        let burst = i64::from(budget.burst_octets);
        let bucket = match self.buckets.get_mut(origin) {
            Some(bucket) => {
                refill(bucket, now, budget);
                bucket
            }
            None => {
                if self.buckets.len() >= self.capacity {
                    self.sweep_full(now, budget);
                    if self.buckets.len() >= self.capacity {
                        return false;
                    }
                }
                self.buckets.entry(origin.clone()).or_insert(Bucket { level: burst, at: now })
            }
        };
        if bucket.level <= 0 {
            return false;
        }
        bucket.level -= i64::try_from(octets).unwrap_or(i64::MAX);
        true
    }

    /// Forget buckets that have refilled: they hold no information.
    fn sweep_full(&mut self, now: Duration, budget: AnswerBudget) {
        let burst = i64::from(budget.burst_octets);
        self.buckets.retain(|_, bucket| {
            refill(bucket, now, budget);
            bucket.level < burst
        });
    }

    /// Origins with a bucket that is not full.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.buckets.len()
    }
}

fn refill(bucket: &mut Bucket, now: Duration, budget: AnswerBudget) {
    let elapsed = now.saturating_sub(bucket.at);
    let earned = elapsed.as_nanos().saturating_mul(u128::from(budget.octets_per_second)) / 1_000_000_000;
    let burst = i64::from(budget.burst_octets);
    let earned = i64::try_from(earned).unwrap_or(i64::MAX);
    bucket.level = bucket.level.saturating_add(earned).min(burst);
    bucket.at = now.max(bucket.at);
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: AnswerBudget = AnswerBudget { octets_per_second: 1000, burst_octets: 2000 };

    fn s(secs: f64) -> Duration {
        Duration::from_secs_f64(secs)
    }

    #[test]
    fn a_burst_then_the_rate() {
        let mut b = Budgets::new(Some(BUDGET), 8);
        assert!(b.try_spend(s(0.0), &1u8, 1500));
        assert!(b.try_spend(s(0.0), &1u8, 1500), "500 left: a window may overdraw");
        assert!(!b.try_spend(s(0.0), &1u8, 1), "-1000: empty");
        assert!(!b.try_spend(s(1.0), &1u8, 1), "refilled to 0: still empty");
        assert!(b.try_spend(s(1.5), &1u8, 1), "refilled to 500");
        assert!(b.try_spend(s(0.0), &2u8, 2000), "another origin has its own bucket");
    }

    #[test]
    fn full_buckets_are_forgotten_and_the_table_is_bounded() {
        let mut b = Budgets::new(Some(BUDGET), 2);
        assert!(b.try_spend(s(0.0), &1u8, 100));
        assert!(b.try_spend(s(0.0), &2u8, 100));
        assert!(!b.try_spend(s(0.0), &3u8, 100), "at the cap, no bucket is full yet");
        assert!(b.try_spend(s(1.0), &3u8, 100), "a second later both are full again and swept");
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn unlimited_without_a_budget() {
        let mut b = Budgets::<u8>::new(None, 1);
        for _ in 0..1000 {
            assert!(b.try_spend(Duration::ZERO, &1, usize::MAX));
        }
    }
}
