//! What a driver needs from a line: the [`Port`] trait, with two
//! implementations, [`SerialLine`](crate::SerialLine) (a real serial port)
//! and [`SimPort`](crate::sim::SimPort) (a station on a simulated line).

use bacnet::mstp::Micros;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the line delivered at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rx {
    /// An octet.
    Octet(u8),
    /// A UART error (framing error: on the simulated line, two stations
    /// drove the line at once).
    Error,
}

/// An octet (or UART error) and when it arrived, in µs since
/// [`Port::epoch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxOctet {
    /// When its stop bit ended (or, from a port that cannot tell, when it
    /// was read).
    pub at: Micros,
    /// What arrived.
    pub rx: Rx,
}

/// Interrupts a [`Port::wait`] from another thread: the handle calls it
/// after each command so the driver takes the command at once.
#[derive(Clone)]
pub struct Waker(Arc<dyn Fn() + Send + Sync>);

impl Waker {
    /// A waker that runs `wake`.
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> Waker {
        Waker(Arc::new(wake))
    }

    /// Wake the driver.
    pub fn wake(&self) {
        (self.0)()
    }
}

impl fmt::Debug for Waker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Waker")
    }
}

/// A line the driver thread owns.
///
/// Time is [`Micros`] since [`Port::epoch`]; every station of one simulated
/// line shares the line's epoch, so their instants compare. The driver
/// calls, in a loop: [`Port::read`] with the current instant,
/// [`Port::write`] for each frame whose instant has come, then
/// [`Port::wait`] until its next deadline.
pub trait Port: Send {
    /// A name for logs (the device path, or `sim:N`).
    fn name(&self) -> String;

    /// The instant µs are counted from.
    fn epoch(&self) -> Instant;

    /// Append to `out` everything received by `now`, without blocking, in
    /// the order it arrived.
    fn read(&mut self, now: Micros, out: &mut Vec<RxOctet>) -> io::Result<()>;

    /// Start sending `frame` now (after this station's earlier frames). The
    /// driver calls it at the instant the master node named.
    fn write(&mut self, now: Micros, frame: &[u8]) -> io::Result<()>;

    /// Block until input may be waiting, the [`Waker`] woke, or `until`,
    /// whichever comes first. The last `spin` before `until` is spent
    /// spinning rather than asleep, so the return is on time to a few µs.
    /// Returning early is allowed.
    fn wait(&mut self, until: Instant, spin: Duration) -> io::Result<()>;

    /// What interrupts [`Port::wait`].
    fn waker(&self) -> Waker;
}

impl<P: Port + ?Sized> Port for Box<P> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn epoch(&self) -> Instant {
        (**self).epoch()
    }
    fn read(&mut self, now: Micros, out: &mut Vec<RxOctet>) -> io::Result<()> {
        (**self).read(now, out)
    }
    fn write(&mut self, now: Micros, frame: &[u8]) -> io::Result<()> {
        (**self).write(now, frame)
    }
    fn wait(&mut self, until: Instant, spin: Duration) -> io::Result<()> {
        (**self).wait(until, spin)
    }
    fn waker(&self) -> Waker {
        (**self).waker()
    }
}

/// µs from `epoch` to now.
pub(crate) fn micros_since(epoch: Instant) -> Micros {
    u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// The instant `t` µs after `epoch`.
pub(crate) fn instant_at(epoch: Instant, t: Micros) -> Instant {
    epoch + Duration::from_micros(t)
}
