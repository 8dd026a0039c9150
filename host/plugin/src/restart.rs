//! When a failed plugin instance is started again: at once the first time,
//! then with exponential back-off, and after too many consecutive failures
//! not at all (the plugin is disabled).
//!
//! A success resets the count, so a plugin that fails once a day restarts at
//! once every time, while one that fails on every call is disabled within a
//! few seconds. Pure logic: time comes in as an argument. It must never sleep
//! or read a clock.

use std::time::{Duration, Instant};

/// The restart policy of one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Consecutive failures restarted without delay (default 1).
    pub immediate: u32,
    /// Delay before the first delayed restart; doubles each time (default 100 ms).
    pub base_delay: Duration,
    /// Longest delay (default 5 s).
    pub max_delay: Duration,
    /// Consecutive failures after which the plugin is disabled (default 6).
    pub max_failures: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            immediate: 1,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            max_failures: 6,
        }
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Re-instantiate now.
    RestartNow,
    /// Re-instantiate at this instant; until then calls fail fast.
    RestartAt(Instant),
    /// Give up: calls fail with `Disabled` from now on.
    Disable,
}

/// Failure bookkeeping for one plugin.
#[derive(Debug, Clone)]
pub struct Restarts {
    policy: RestartPolicy,
    consecutive: u32,
}

impl Restarts {
    /// No failures yet.
    pub fn new(policy: RestartPolicy) -> Self {
        Restarts { policy, consecutive: 0 }
    }

    /// A call (or a restart) failed at `now`.
    pub fn failed(&mut self, now: Instant) -> Verdict {
        self.consecutive = self.consecutive.saturating_add(1);
        let p = &self.policy;
        if self.consecutive >= p.max_failures.max(1) {
            Verdict::Disable
        } else if self.consecutive <= p.immediate {
            Verdict::RestartNow
        } else {
            let doublings = (self.consecutive - p.immediate - 1).min(20);
            let delay = p.base_delay.saturating_mul(1 << doublings).min(p.max_delay);
            Verdict::RestartAt(now + delay)
        }
    }

    /// A call succeeded.
    pub fn succeeded(&mut self) {
        self.consecutive = 0;
    }

    /// Failures since the last success.
    pub fn consecutive(&self) -> u32 {
        self.consecutive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_failure_restarts_at_once_then_backs_off_doubling_then_disables() {
        let mut r = Restarts::new(RestartPolicy::default());
        let t = Instant::now();
        assert_eq!(r.failed(t), Verdict::RestartNow);
        assert_eq!(r.failed(t), Verdict::RestartAt(t + Duration::from_millis(100)));
        assert_eq!(r.failed(t), Verdict::RestartAt(t + Duration::from_millis(200)));
        assert_eq!(r.failed(t), Verdict::RestartAt(t + Duration::from_millis(400)));
        assert_eq!(r.failed(t), Verdict::RestartAt(t + Duration::from_millis(800)));
        assert_eq!(r.failed(t), Verdict::Disable);
    }

    #[test]
    fn a_success_forgives_earlier_failures() {
        let mut r = Restarts::new(RestartPolicy::default());
        let t = Instant::now();
        r.failed(t);
        r.failed(t);
        r.succeeded();
        assert_eq!(r.consecutive(), 0);
        assert_eq!(r.failed(t), Verdict::RestartNow);
    }

    #[test]
    fn delays_are_capped() {
        let policy = RestartPolicy { max_failures: 100, ..RestartPolicy::default() };
        let mut r = Restarts::new(policy);
        let t = Instant::now();
        let mut last = Verdict::RestartNow;
        for _ in 0..50 {
            last = r.failed(t);
        }
        assert_eq!(last, Verdict::RestartAt(t + Duration::from_secs(5)));
    }
}
