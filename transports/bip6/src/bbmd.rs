//! A B/IPv6 port's BBMD (Annex U.4): the core's [`Bbmd6`] behind a lock,
//! shared by the port's receiving side (which hands it every BVLL message)
//! and its sending side (which has it forward the node's own broadcasts).
//! What the BBMD sends goes at once, without waiting: when the socket's
//! buffer is full the datagram is dropped (and counted), as a broadcast
//! may be.
//!
//! Must never: hold the lock across a wait, or wait on the socket.

use bacnet::bbmd6::{Bbmd6, Bbmd6Config, Bbmd6Counters, Fdt6Entry};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// The BBMD of one B/IPv6 port.
#[derive(Debug)]
pub struct PortBbmd6 {
    bbmd: Mutex<Bbmd6>,
    epoch: Instant,
    /// Datagrams dropped because the socket's buffer was full.
    pub dropped: AtomicU64,
}

impl PortBbmd6 {
    pub(crate) fn new(config: Bbmd6Config) -> Self {
        PortBbmd6 { bbmd: Mutex::new(Bbmd6::new(config)), epoch: Instant::now(), dropped: AtomicU64::new(0) }
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Run `f` on the BBMD, then send what it queued on `socket`.
    pub(crate) fn with<R>(&self, socket: &UdpSocket, f: impl FnOnce(&mut Bbmd6, Duration) -> R) -> R {
        let mut b = self.bbmd.lock().unwrap_or_else(PoisonError::into_inner);
        let r = f(&mut b, self.now());
        while let Some(d) = b.poll_transmit() {
            if socket.try_send_to(&d.bvll, d.to.into()).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    /// The foreign-device table now.
    pub fn fdt(&self) -> Vec<Fdt6Entry> {
        let now = self.now();
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).fdt(now)
    }

    /// The peer BBMDs.
    pub fn peers(&self) -> Vec<std::net::SocketAddrV6> {
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).config().peers.clone()
    }

    /// What the BBMD refused and forwarded.
    pub fn counters(&self) -> Bbmd6Counters {
        self.bbmd.lock().unwrap_or_else(PoisonError::into_inner).counters()
    }
}
