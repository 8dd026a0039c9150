//! Stations on a line in virtual time.

use super::line::{Line, LineConfig};
use super::port::SimPort;
use crate::config::BindError;
use crate::engine::{Engine, engine};
use crate::handle::MstpHandle;
use bacnet::mstp::{MasterConfig, Micros};

/// Turns at one instant before time is pushed on by 1 µs: a bound that
/// only a bug would reach.
const MAX_TURNS_PER_INSTANT: u32 = 10_000;

/// Stations on a [`Line`] in virtual time. Each station is the driver's
/// own per-turn code with a [`MstpHandle`] like a real port's; the
/// simulation gives each its turns at the instants it is due, in order.
///
/// The host is the caller: between calls to [`Simulation::step`] or
/// [`Simulation::run_until`] it takes NPDUs from the handles and sends or
/// answers; what it sends is taken at the current virtual instant.
pub struct Simulation {
    line: Line,
    stations: Vec<Option<Engine<SimPort>>>,
    channel_bound: usize,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation").field("now", &self.now()).field("stations", &self.stations.len()).finish()
    }
}

impl Simulation {
    /// An empty line in virtual time, at instant 0.
    pub fn new(config: LineConfig) -> Simulation {
        Simulation { line: Line::new_virtual(config), stations: Vec::new(), channel_bound: 64 }
    }

    /// The line (its log, stats and capture).
    pub fn line(&self) -> &Line {
        &self.line
    }

    /// Now, µs of virtual time.
    pub fn now(&self) -> Micros {
        self.line.now()
    }

    /// A master node powered on now. Its index is the station index in the
    /// line's log.
    pub fn add_station(&mut self, node: MasterConfig) -> Result<MstpHandle, BindError> {
        self.add_station_with(node, super::DriverTiming::default())
    }

    /// [`Simulation::add_station`] with the station's RS-485 driver
    /// switched with `driver`'s timing.
    pub fn add_station_with(
        &mut self,
        node: MasterConfig,
        driver: super::DriverTiming,
    ) -> Result<MstpHandle, BindError> {
        if node.baud != self.line.baud() {
            return Err(BindError::BaudMismatch { line: self.line.baud(), node: node.baud });
        }
        let port = self.line.attach_with(driver);
        let (handle, engine) = engine(port, node, self.channel_bound, self.now())?;
        self.stations.push(Some(engine));
        Ok(handle)
    }

    /// Take station `index` off the line (powered off).
    pub fn remove_station(&mut self, index: usize) {
        if let Some(s) = self.stations.get_mut(index) {
            *s = None;
        }
    }

    fn turn_all(&mut self) {
        let now = self.now();
        for s in self.stations.iter_mut() {
            if let Some(e) = s {
                e.turn(now);
                if e.is_stopped() {
                    *s = None;
                }
            }
        }
    }

    /// The next instant a station is due.
    fn next_instant(&self) -> Option<Micros> {
        self.stations.iter().flatten().flat_map(|e| [e.next(), e.port.next_arrival()]).flatten().min()
    }

    fn advance(&mut self, to: Micros) {
        self.line.advance_to(to);
        let now = self.now();
        for s in self.stations.iter_mut() {
            if let Some(e) = s {
                let due = e.next().is_some_and(|t| t <= now) || e.port.next_arrival().is_some_and(|t| t <= now);
                if due {
                    e.turn(now);
                }
                if e.is_stopped() {
                    *s = None;
                }
            }
        }
    }

    /// Give every station a turn now (taking what the host sent), then go
    /// to the next instant something is due and run it. Returns that
    /// instant, or `None` when no station has anything scheduled.
    pub fn step(&mut self) -> Option<Micros> {
        self.turn_all();
        let next = self.next_instant()?;
        self.advance(next.max(self.now()));
        Some(self.now())
    }

    /// Run every instant up to `until`, then stop the clock there.
    pub fn run_until(&mut self, until: Micros) {
        self.turn_all();
        let mut same = 0;
        let mut last = self.now();
        while let Some(next) = self.next_instant().filter(|&t| t <= until) {
            let mut to = next.max(self.now());
            if to == last {
                same += 1;
                if same >= MAX_TURNS_PER_INSTANT {
                    to += 1;
                    same = 0;
                }
            } else {
                same = 0;
            }
            last = to;
            self.advance(to);
        }
        self.line.advance_to(until);
        self.turn_all();
    }

    /// Run for `duration` µs of virtual time.
    pub fn run_for(&mut self, duration: Micros) {
        self.run_until(self.now().saturating_add(duration));
    }
}
