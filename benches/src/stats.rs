//! Outcome counters and latency percentiles.
//!
//! Latencies are stored, not bucketed: one `u32` of nanoseconds per answered
//! request (a 3-second step at 200k requests/s is 2.4 MB), so percentiles are
//! exact (nearest rank) rather than histogram estimates.

use crate::request::Answer;
use std::time::Duration;

/// What became of the measured requests of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Answered with the value (ComplexACK; the echo's copy for the echo server).
    pub ok: u64,
    /// Refused by admission control: Abort out-of-resources from the server.
    pub admission: u64,
    /// No answer within the timeout.
    pub timeout: u64,
    /// Any other Abort.
    pub abort: u64,
    /// Reject.
    pub reject: u64,
    /// Error.
    pub error: u64,
    /// An answer of the wrong kind (see [`Answer::Unexpected`]).
    pub unexpected: u64,
    /// Answers to requests already counted as timed out, or duplicates; not
    /// failures, but a sign that the timeout is too short for the target.
    pub late: u64,
    /// Sends or receives the operating system refused (e.g. ICMP port
    /// unreachable when the server is gone); those requests time out.
    pub io_errors: u64,
}

impl Outcomes {
    /// Count one answer.
    pub fn count(&mut self, answer: Answer) {
        match answer {
            Answer::Ack => self.ok += 1,
            Answer::Admission => self.admission += 1,
            Answer::Abort => self.abort += 1,
            Answer::Reject => self.reject += 1,
            Answer::Error => self.error += 1,
            Answer::Unexpected => self.unexpected += 1,
        }
    }

    /// Failures that are neither admission refusals nor timeouts.
    pub fn other(&self) -> u64 {
        self.abort + self.reject + self.error + self.unexpected
    }

    /// Every measured request: answered, refused, failed or timed out.
    pub fn requests(&self) -> u64 {
        self.ok + self.admission + self.timeout + self.other()
    }

    /// Add another client's counts.
    pub fn merge(&mut self, o: &Outcomes) {
        self.ok += o.ok;
        self.admission += o.admission;
        self.timeout += o.timeout;
        self.abort += o.abort;
        self.reject += o.reject;
        self.error += o.error;
        self.unexpected += o.unexpected;
        self.late += o.late;
        self.io_errors += o.io_errors;
    }
}

/// Round-trip times of answered requests, in nanoseconds.
#[derive(Debug, Clone, Default)]
pub struct Latencies(Vec<u32>);

/// Percentiles of a step's latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest.
    pub max: Duration,
    /// Arithmetic mean.
    pub mean: Duration,
}

impl Latencies {
    /// Record one round trip (saturating at 4.29 s).
    pub fn record(&mut self, d: Duration) {
        self.0.push(u32::try_from(d.as_nanos()).unwrap_or(u32::MAX));
    }

    /// Add another client's samples.
    pub fn merge(&mut self, o: Latencies) {
        if self.0.is_empty() {
            self.0 = o.0;
        } else {
            self.0.extend_from_slice(&o.0);
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Nearest-rank percentiles; `None` without samples. Sorts the samples.
    pub fn summary(&mut self) -> Option<Summary> {
        if self.0.is_empty() {
            return None;
        }
        self.0.sort_unstable();
        let n = self.0.len();
        let rank = |q: f64| self.0[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        let ns = |v: u32| Duration::from_nanos(v as u64);
        let mean = self.0.iter().map(|&v| v as u64).sum::<u64>() / n as u64;
        Some(Summary {
            p50: ns(rank(0.50)),
            p99: ns(rank(0.99)),
            max: ns(self.0[n - 1]),
            mean: Duration::from_nanos(mean),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut l = Latencies::default();
        for us in 1..=100u64 {
            l.record(Duration::from_micros(us));
        }
        let s = l.summary().unwrap();
        assert_eq!(s.p50, Duration::from_micros(50));
        assert_eq!(s.p99, Duration::from_micros(99));
        assert_eq!(s.max, Duration::from_micros(100));
        assert_eq!(s.mean, Duration::from_nanos(50_500));
    }

    #[test]
    fn one_sample_is_every_percentile_and_none_is_none() {
        let mut l = Latencies::default();
        assert_eq!(l.summary(), None);
        l.record(Duration::from_micros(7));
        let s = l.summary().unwrap();
        assert_eq!(
            (s.p50, s.p99, s.max),
            (Duration::from_micros(7), Duration::from_micros(7), Duration::from_micros(7))
        );
    }

    #[test]
    fn other_failures_are_aborts_rejects_errors_and_unexpected_answers() {
        let mut o = Outcomes::default();
        for a in [Answer::Ack, Answer::Admission, Answer::Abort, Answer::Reject, Answer::Error, Answer::Unexpected] {
            o.count(a);
        }
        o.timeout = 2;
        o.late = 5;
        assert_eq!(o.other(), 4);
        assert_eq!(o.requests(), 8, "late answers are not requests");
    }
}
