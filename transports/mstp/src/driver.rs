//! The driver thread: owns the port, runs the master node, sleeps to the
//! µs between turns.

use crate::config::DriverOptions;
use crate::engine::Engine;
use crate::handle::PortStatus;
use crate::os;
use crate::port::{Port, instant_at, micros_since};
use std::io;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest the thread sleeps without a deadline (the node always has
/// one; this only bounds the unexpected).
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// After a port error, the pause before the next try.
const ERROR_PAUSE: Duration = Duration::from_millis(10);

/// Runs one port. Give it a thread of its own: [`MstpDriver::spawn`], or
/// [`MstpDriver::run`] on a thread the host made. It never touches tokio
/// and never calls into the host: NPDUs leave over a bounded channel, and
/// the host's answers come back the same way.
pub struct MstpDriver {
    engine: Engine<Box<dyn Port>>,
    options: DriverOptions,
}

impl std::fmt::Debug for MstpDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MstpDriver").field("port", &self.engine.name()).finish_non_exhaustive()
    }
}

/// How a driver ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverReport {
    /// The port's state and counters when it stopped.
    pub status: PortStatus,
    /// The thread ran with SCHED_FIFO.
    pub realtime: bool,
}

impl MstpDriver {
    pub(crate) fn new(engine: Engine<Box<dyn Port>>, options: DriverOptions) -> MstpDriver {
        MstpDriver { engine, options }
    }

    /// The port's name.
    pub fn name(&self) -> &str {
        self.engine.name()
    }

    /// Start a thread named after the port running [`MstpDriver::run`].
    pub fn spawn(self) -> io::Result<JoinHandle<DriverReport>> {
        let name = format!("mstp {}", self.name());
        std::thread::Builder::new().name(name).spawn(move || self.run())
    }

    /// Run on the calling thread until [`crate::MstpSender::shutdown`] or
    /// until every sender is dropped.
    pub fn run(mut self) -> DriverReport {
        let name = self.engine.name().to_owned();
        if let Err(e) = os::set_timer_slack_min() {
            tracing::debug!(port = %name, error = %e, "could not lower the timer slack");
        }
        let realtime = match self.options.realtime_priority {
            Some(priority) => match os::try_realtime(priority) {
                Ok(()) => {
                    tracing::info!(port = %name, priority, "MS/TP driver thread runs with SCHED_FIFO");
                    true
                }
                Err(e) => {
                    tracing::info!(port = %name, error = %e, "real-time priority not permitted: MS/TP driver thread runs at normal priority");
                    false
                }
            },
            None => {
                tracing::info!(port = %name, "real-time priority not requested: MS/TP driver thread runs at normal priority");
                false
            }
        };
        let epoch = self.engine.port.epoch();
        let mut wait_errors = 0u64;
        loop {
            let next = self.engine.turn(micros_since(epoch));
            if self.engine.is_stopped() {
                break;
            }
            let cap = Instant::now() + MAX_SLEEP;
            let until = next.map_or(cap, |t| instant_at(epoch, t).min(cap));
            if let Err(e) = self.engine.port.wait(until, self.options.spin) {
                wait_errors += 1;
                if wait_errors.is_power_of_two() {
                    tracing::warn!(port = %name, error = %e, count = wait_errors, "MS/TP port wait failed; pausing");
                }
                std::thread::sleep(ERROR_PAUSE);
            }
        }
        let status = self.engine.finish();
        tracing::info!(port = %name, "MS/TP driver stopped");
        DriverReport { status, realtime }
    }
}
