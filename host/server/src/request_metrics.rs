//! Per-service counts and latencies of the confirmed requests a device
//! executes, for the operator's metrics (`/metrics`).
//!
//! One slot per confirmed service choice (0..=31; anything above shares the
//! last), each with a count per outcome and a latency histogram. Fed once
//! per request by [`Server::execute_into`](super::dispatch::Server::execute_into),
//! whoever asked (a peer on a port, or a bridge inside the gateway).
//!
//! Must never: lock or allocate on the request path (relaxed atomic adds
//! only), or name an object or a peer (labels stay bounded).

use bacnet::enums::ConfirmedServiceChoice;
use bacnet::tsm::Response;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use trellis_model::latency::{LatencyHistogram, LatencySnapshot};

/// How a request ended, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// SimpleACK or ComplexACK.
    Ack,
    /// Error.
    Error,
    /// Reject.
    Reject,
    /// Abort.
    Abort,
}

impl Outcome {
    /// Every outcome, in counter order.
    pub const ALL: [Outcome; 4] = [Outcome::Ack, Outcome::Error, Outcome::Reject, Outcome::Abort];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ack => "ack",
            Outcome::Error => "error",
            Outcome::Reject => "reject",
            Outcome::Abort => "abort",
        }
    }

    fn of(r: &Response) -> Outcome {
        match r {
            Response::SimpleAck | Response::ComplexAck(_) => Outcome::Ack,
            Response::Error(_) => Outcome::Error,
            Response::Reject(_) => Outcome::Reject,
            Response::Abort(_) => Outcome::Abort,
        }
    }
}

const SLOTS: usize = 32;

#[derive(Debug, Default)]
struct Slot {
    outcomes: [AtomicU64; 4],
    latency: LatencyHistogram,
}

/// Counts and latencies per confirmed service.
#[derive(Debug)]
pub struct RequestMetrics {
    slots: Box<[Slot; SLOTS]>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics { slots: Box::new(std::array::from_fn(|_| Slot::default())) }
    }
}

/// One service's counters, for a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceMetrics {
    /// The service.
    pub service: ConfirmedServiceChoice,
    /// Requests per [`Outcome::ALL`] entry.
    pub outcomes: [u64; 4],
    /// How long they took, request in to answer out.
    pub latency: LatencySnapshot,
}

impl RequestMetrics {
    /// Count one request of `service` that took `took` and was answered `r`.
    pub fn record(&self, service: ConfirmedServiceChoice, r: &Response, took: std::time::Duration) {
        let slot = &self.slots[usize::from(service.0).min(SLOTS - 1)];
        slot.outcomes[Outcome::of(r) as usize].fetch_add(1, Relaxed);
        slot.latency.record(took);
    }

    /// Every service that has had a request.
    pub fn snapshot(&self) -> Vec<ServiceMetrics> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let outcomes = std::array::from_fn(|o| s.outcomes[o].load(Relaxed));
                (outcomes.iter().sum::<u64>() > 0).then(|| ServiceMetrics {
                    service: ConfirmedServiceChoice(i as u8),
                    outcomes,
                    latency: s.latency.snapshot(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_request_is_counted_under_its_service_and_outcome() {
        let m = RequestMetrics::default();
        m.record(ConfirmedServiceChoice::READ_PROPERTY, &Response::ComplexAck(vec![]), Duration::from_micros(30));
        m.record(ConfirmedServiceChoice::READ_PROPERTY, &Response::Error(vec![]), Duration::from_micros(30));
        m.record(ConfirmedServiceChoice::WRITE_PROPERTY, &Response::SimpleAck, Duration::from_millis(2));
        let s = m.snapshot();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].service, ConfirmedServiceChoice::READ_PROPERTY);
        assert_eq!(s[0].outcomes, [1, 1, 0, 0]);
        assert_eq!(s[0].latency.count, 2);
        assert_eq!(s[1].outcomes, [1, 0, 0, 0]);
    }
}
