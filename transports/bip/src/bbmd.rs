//! A port's BBMD (Annex J.4, J.5): the core's [`Bbmd`] behind a lock,
//! shared by the port's receiving side (which hands it every BVLL message)
//! and its sending side (which has it forward the node's own broadcasts).
//! What the BBMD sends goes at once, without waiting: when the socket's
//! buffer is full the datagram is dropped (and counted), as a broadcast
//! may be.
//!
//! Must never: hold the lock across a wait, or wait on the socket.

use bacnet::bbmd::{Bbmd, BbmdConfig, BbmdCounters};
use bacnet::bvll::{BdtEntry, FdtEntry};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// The BBMD of one port.
#[derive(Debug)]
pub struct PortBbmd {
    bbmd: Mutex<Bbmd>,
    epoch: Instant,
    /// Datagrams dropped because the socket's buffer was full.
    pub dropped: AtomicU64,
}

impl PortBbmd {
    pub(crate) fn new(config: BbmdConfig) -> Self {
        PortBbmd { bbmd: Mutex::new(Bbmd::new(config)), epoch: Instant::now(), dropped: AtomicU64::new(0) }
    }

    pub(crate) fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Run `f` on the BBMD, then send what it queued on `socket`.
    pub(crate) fn with<R>(&self, socket: &UdpSocket, f: impl FnOnce(&mut Bbmd, Duration) -> R) -> R {
        let mut b = self.bbmd.lock().unwrap_or_else(PoisonError::into_inner);
        let r = f(&mut b, self.now());
        while let Some(d) = b.poll_transmit() {
            if socket.try_send_to(&d.bvll, d.to.into()).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    /// The broadcast distribution table.
    pub fn bdt(&self) -> Vec<BdtEntry> {
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).bdt().to_vec()
    }

    /// The foreign-device table now.
    pub fn fdt(&self) -> Vec<FdtEntry> {
        let now = self.now();
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).fdt(now)
    }

    /// Whether foreign devices may register from anywhere at all.
    pub fn accepts_foreign_devices(&self) -> bool {
        !self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).config().foreign_devices.is_empty()
    }

    /// What the BBMD refused and forwarded.
    pub fn counters(&self) -> BbmdCounters {
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).counters()
    }
}
