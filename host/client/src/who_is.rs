//! Collecting I-Am answers to a Who-Is.

use super::actor::UnconfirmedReceived;
use bacnet::enums::UnconfirmedServiceChoice;
use bacnet::services::{IAm, ServiceCodec};
use std::collections::HashSet;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::Instant;
use trellis_net::DeviceAddress;

/// A device that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Where it is.
    pub address: DeviceAddress,
    /// What it said.
    pub i_am: IAm,
}

/// The I-Am answers to one Who-Is, each device once, until the wait ends.
#[derive(Debug)]
pub struct WhoIsScan {
    rx: broadcast::Receiver<UnconfirmedReceived>,
    range: Option<(u32, u32)>,
    deadline: Instant,
    seen: HashSet<(u32, DeviceAddress)>,
}

impl WhoIsScan {
    pub(crate) fn new(rx: broadcast::Receiver<UnconfirmedReceived>, range: Option<(u32, u32)>, wait: Duration) -> Self {
        WhoIsScan { rx, range, deadline: Instant::now() + wait, seen: HashSet::new() }
    }

    /// The next device to answer, or `None` when the wait is over.
    pub async fn next(&mut self) -> Option<Discovered> {
        loop {
            let msg = match tokio::time::timeout_at(self.deadline, self.rx.recv()).await {
                Err(_) => return None,
                Ok(Err(broadcast::error::RecvError::Lagged(n))) => {
                    tracing::warn!(missed = n, "too many I-Am at once; some were missed");
                    continue;
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                Ok(Ok(m)) => m,
            };
            if msg.service != UnconfirmedServiceChoice::I_AM {
                continue;
            }
            let i_am = match IAm::decode(&msg.body) {
                Ok(i) => i,
                Err(e) => {
                    tracing::debug!(from = %msg.source, error = %e, "malformed I-Am");
                    continue;
                }
            };
            let instance = i_am.device.instance;
            if self.range.is_some_and(|(lo, hi)| instance < lo || instance > hi) {
                continue;
            }
            if self.seen.iter().any(|(i, a)| *i == instance && *a != msg.source) {
                tracing::warn!(device = instance, address = %msg.source, "duplicate device instance on the network");
            }
            if self.seen.insert((instance, msg.source.clone())) {
                return Some(Discovered { address: msg.source, i_am });
            }
        }
    }

    /// Every device that answers before the wait ends.
    pub async fn collect(mut self) -> Vec<Discovered> {
        let mut all = Vec::new();
        while let Some(d) = self.next().await {
            all.push(d);
        }
        all
    }
}
