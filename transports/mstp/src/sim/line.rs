//! The line itself: transmissions, octet timing, noise, collisions, the log
//! and the capture. Stations reach it through [`SimPort`](super::SimPort).

use super::port::SimPort;
use crate::pcap::PcapWriter;
use crate::port::{Rx, micros_since};
use bacnet::mstp::{Header, Micros, bit_times};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Octets that may wait for one station before the oldest is lost (a UART
/// overrun, counted in [`LineStats::overruns`]).
const QUEUE_LIMIT: usize = 1 << 16;

/// Settings of a simulated line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineConfig {
    /// Bits per second; every octet takes 10 bit times (start, 8 data,
    /// stop).
    pub baud: u32,
    /// Line noise.
    pub noise: Noise,
    /// Frames the log keeps ([`Line::frames`]); the oldest go first.
    pub log_limit: usize,
}

impl LineConfig {
    /// A clean line at `baud` keeping the last 100,000 frames.
    pub fn new(baud: u32) -> LineConfig {
        LineConfig { baud, noise: Noise::default(), log_limit: 100_000 }
    }
}

/// Line noise, decided octet by octet from a seeded generator (the same
/// seed and the same traffic give the same damage).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Noise {
    /// Probability that an octet arrives with one bit flipped.
    pub flip: f64,
    /// Probability that an octet is lost (no receiver sees it).
    pub drop: f64,
    /// The generator's seed.
    pub seed: u64,
}

/// What the line has carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Frames (transmissions) started.
    pub transmissions: u64,
    /// Octets sent.
    pub octets: u64,
    /// Time at least one station drove the line, µs.
    pub busy: Micros,
    /// Transmissions that overlapped another (each pair counted once).
    pub collisions: u64,
    /// Octets garbled by collisions (received as UART errors).
    pub garbled: u64,
    /// Octets that arrived with a bit flipped.
    pub flipped: u64,
    /// Octets lost to noise.
    pub dropped: u64,
    /// Octets lost because a station fell 65,536 octets behind (a UART
    /// overrun).
    pub overruns: u64,
}

/// One transmission, as the line's log and capture keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFrame {
    /// Its first octet's start, µs on the line's clock.
    pub start: Micros,
    /// Its last octet's stop bit's end.
    pub end: Micros,
    /// The station index ([`SimPort::station`]) that sent it.
    pub station: usize,
    /// The octets as sent.
    pub sent: Vec<u8>,
    /// The octets as the other stations received them: flipped bits kept,
    /// lost and garbled octets left out (what the capture holds).
    pub heard: Vec<u8>,
    /// Another transmission overlapped it.
    pub collided: bool,
}

impl LineFrame {
    /// Its header, if the octets sent begin with a valid one.
    pub fn header(&self) -> Option<Header> {
        Header::decode(&self.sent).ok()
    }

    /// Heard exactly as sent.
    pub fn is_clean(&self) -> bool {
        !self.collided && self.heard == self.sent
    }
}

/// One octet as the listeners get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnLine {
    Octet(u8),
    Dropped,
    Garbled,
}

/// A transmission still on the line (a later one may still collide with it).
#[derive(Debug)]
struct Flight {
    seq: u64,
    station: usize,
    start: Micros,
    end: Micros,
    /// When the station's driver was enabled and released: around its
    /// bits by its [`DriverTiming`]; another station's bits in between
    /// collide with it.
    drive_from: Micros,
    drive_to: Micros,
    sent: Vec<u8>,
    line: Vec<OnLine>,
    collided: bool,
}

#[derive(Debug)]
pub(super) struct Pending {
    pub(super) at: Micros,
    seq: u64,
    index: u32,
    pub(super) rx: Rx,
    /// The last octet of its transmission: the receiving station wakes.
    last: bool,
}

#[derive(Debug, Default)]
pub(super) struct Slot {
    pub(super) attached: bool,
    pub(super) queue: VecDeque<Pending>,
    /// The end of this station's last transmission (its driver released).
    tx_free_at: Micros,
    pub(super) woken: bool,
    driver: DriverTiming,
}

/// How a station's RS-485 driver is switched around its frames: enabled
/// `enable` µs before the first bit and released `release` µs after the
/// last. Zero both (the default) is an adapter that switches with the bits;
/// the kernel's RS-485 delays, or a GPIO's ioctl and `tcdrain` latency,
/// are what a real port adds. While enabled the driver holds the line: a
/// frame from another station in that time collides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverTiming {
    /// Driver enabled this long before the first start bit, µs.
    pub enable: Micros,
    /// Driver held this long after the last stop bit, µs.
    pub release: Micros,
}

pub(super) struct State {
    baud: u32,
    noise: Noise,
    rng: u64,
    /// Virtual time: the simulation's now.
    now: Micros,
    pub(super) slots: Vec<Slot>,
    flights: VecDeque<Flight>,
    next_seq: u64,
    busy_until: Micros,
    stats: LineStats,
    log: VecDeque<LineFrame>,
    log_limit: usize,
    capture: Option<PcapWriter<Box<dyn Write + Send>>>,
    capture_error: Option<io::Error>,
    /// µs since 1970 at the line's epoch (0 in virtual time).
    unix_base: u64,
}

pub(super) struct Shared {
    state: Mutex<State>,
    pub(super) cond: Condvar,
    /// Bumped at every transmission and wake, for spinning waiters.
    pub(super) generation: AtomicU64,
    pub(super) epoch: Instant,
    pub(super) virtual_time: bool,
}

/// A simulated RS-485 multi-drop line, shared by any number of stations in
/// one process. Cheap to clone (a handle on the same line).
///
/// Time on the line is µs since its epoch: in real time the monotonic
/// clock's, in virtual time the [`Simulation`](super::Simulation)'s.
#[derive(Clone)]
pub struct Line {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Line")
            .field("baud", &self.baud())
            .field("virtual_time", &self.shared.virtual_time)
            .finish_non_exhaustive()
    }
}

impl Line {
    /// A line in real time: stations are driver threads
    /// ([`crate::bind`] with [`crate::PortConfig::Sim`]).
    pub fn new(config: LineConfig) -> Line {
        let unix_base = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        Line::build(config, false, unix_base)
    }

    /// A line in virtual time, at instant 0, that only moves when told
    /// ([`Line::advance_to`]). A [`Simulation`](super::Simulation) makes
    /// and drives its own; this one is for driving stations' ports by hand.
    pub fn new_virtual(config: LineConfig) -> Line {
        Line::build(config, true, 0)
    }

    fn build(config: LineConfig, virtual_time: bool, unix_base: u64) -> Line {
        let state = State {
            baud: config.baud.max(1),
            noise: config.noise,
            // xorshift64 must not start at 0.
            rng: config.noise.seed ^ 0x9E37_79B9_7F4A_7C15,
            now: 0,
            slots: Vec::new(),
            flights: VecDeque::new(),
            next_seq: 0,
            busy_until: 0,
            stats: LineStats::default(),
            log: VecDeque::new(),
            log_limit: config.log_limit,
            capture: None,
            capture_error: None,
            unix_base,
        };
        Line {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                cond: Condvar::new(),
                generation: AtomicU64::new(0),
                epoch: Instant::now(),
                virtual_time,
            }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The baud rate.
    pub fn baud(&self) -> u32 {
        self.lock().baud
    }

    /// Driven by a [`Simulation`](super::Simulation) rather than the clock.
    pub fn is_virtual(&self) -> bool {
        self.shared.virtual_time
    }

    /// Now on the line's clock, µs.
    pub fn now(&self) -> Micros {
        let st = self.lock();
        self.now_locked(&st)
    }

    pub(super) fn now_locked(&self, st: &State) -> Micros {
        if self.shared.virtual_time { st.now } else { micros_since(self.shared.epoch) }
    }

    /// Move virtual time on to `now` (never backwards; nothing happens on
    /// a line in real time).
    pub fn advance_to(&self, now: Micros) {
        if !self.shared.virtual_time {
            return;
        }
        let mut st = self.lock();
        st.now = st.now.max(now);
        let now = st.now;
        st.retire(now);
    }

    /// A new station on the line.
    pub fn attach(&self) -> SimPort {
        self.attach_with(DriverTiming::default())
    }

    /// A new station whose driver is switched with `driver`'s timing.
    pub fn attach_with(&self, driver: DriverTiming) -> SimPort {
        let mut st = self.lock();
        let now = self.now_locked(&st);
        st.slots.push(Slot { attached: true, tx_free_at: now, driver, ..Slot::default() });
        SimPort::new(self.clone(), st.slots.len() - 1)
    }

    /// Write every frame from now on to a pcap capture (linktype 165) on
    /// `out`, as a listener on the line hears it, once the frame has left
    /// the line.
    pub fn capture(&self, out: impl Write + Send + 'static) -> io::Result<()> {
        let writer = PcapWriter::new(Box::new(out) as Box<dyn Write + Send>)?;
        self.lock().capture = Some(writer);
        Ok(())
    }

    /// [`Line::capture`] to a new file at `path`.
    pub fn capture_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.capture(BufWriter::new(File::create(path)?))
    }

    /// Log every frame still on the line, flush the capture and report its
    /// first write error, if any. Frames that start later are still logged
    /// and captured.
    pub fn flush(&self) -> io::Result<()> {
        let mut st = self.lock();
        st.retire(Micros::MAX);
        if let Some(c) = st.capture.as_mut()
            && let Err(e) = c.flush()
        {
            st.capture_error.get_or_insert(e);
        }
        match st.capture_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The frames that have left the line, oldest first (at most
    /// [`LineConfig::log_limit`]).
    pub fn frames(&self) -> Vec<LineFrame> {
        let mut st = self.lock();
        let now = self.now_locked(&st);
        st.retire(now);
        st.log.iter().cloned().collect()
    }

    /// [`Line::frames`], emptying the log.
    pub fn take_frames(&self) -> Vec<LineFrame> {
        let mut st = self.lock();
        let now = self.now_locked(&st);
        st.retire(now);
        st.log.drain(..).collect()
    }

    /// The counters.
    pub fn stats(&self) -> LineStats {
        self.lock().stats
    }

    /// When the next transmission's last octet reaches `station`.
    pub(crate) fn next_arrival(&self, station: usize) -> Option<Micros> {
        self.lock().next_wake(station)
    }

    pub(super) fn notify(&self) {
        self.shared.generation.fetch_add(1, Ordering::Release);
        self.shared.cond.notify_all();
    }

    pub(super) fn wake(&self, station: usize) {
        self.lock().slots[station].woken = true;
        self.notify();
    }
}

impl State {
    fn octet_end(&self, start: Micros, k: usize) -> Micros {
        start + bit_times(10 * (k as u64 + 1), self.baud)
    }

    fn octet_start(&self, start: Micros, k: usize) -> Micros {
        if k == 0 { start } else { self.octet_end(start, k - 1) }
    }

    /// The octets of a transmission at `start` of `len` octets that overlap
    /// `[from, to)`.
    fn overlapping(&self, start: Micros, len: usize, from: Micros, to: Micros) -> std::ops::Range<usize> {
        let lo = (0..len).find(|&k| self.octet_end(start, k) > from).unwrap_or(len);
        let hi = (lo..len).find(|&k| self.octet_start(start, k) >= to).unwrap_or(len);
        lo..hi
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.random() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    pub(super) fn next_wake(&self, station: usize) -> Option<Micros> {
        self.slots.get(station)?.queue.iter().find(|p| p.last).map(|p| p.at)
    }

    /// `station` drives the line from `now` (or the end of its previous
    /// frame) with `frame`: its driver enabled first, its bits after the
    /// driver's enable time, the driver released after their end.
    pub(super) fn transmit(&mut self, station: usize, now: Micros, frame: &[u8]) {
        let n = frame.len();
        if n == 0 {
            return;
        }
        let driver = self.slots[station].driver;
        let drive_from = now.max(self.slots[station].tx_free_at);
        let start = drive_from + driver.enable;
        let end = self.octet_end(start, n - 1);
        let drive_to = end + driver.release;
        self.slots[station].tx_free_at = drive_to;
        self.stats.transmissions += 1;
        self.stats.octets += n as u64;
        let from = drive_from.max(self.busy_until);
        self.stats.busy += drive_to.saturating_sub(from);
        self.busy_until = self.busy_until.max(drive_to);

        let mut line = Vec::with_capacity(n);
        for &octet in frame {
            let noise = self.noise;
            if self.chance(noise.drop) {
                self.stats.dropped += 1;
                line.push(OnLine::Dropped);
            } else if self.chance(noise.flip) {
                self.stats.flipped += 1;
                line.push(OnLine::Octet(octet ^ (1 << (self.random() % 8))));
            } else {
                line.push(OnLine::Octet(octet));
            }
        }

        // Collisions: two drivers enabled at once garble whatever bits of
        // either fall in the other's driving time.
        let mut collided = false;
        for i in 0..self.flights.len() {
            let (f_start, f_len, f_seq, f_from, f_to) = {
                let f = &self.flights[i];
                (f.start, f.sent.len(), f.seq, f.drive_from, f.drive_to)
            };
            if f_to <= drive_from || f_from >= drive_to {
                continue;
            }
            collided = true;
            self.stats.collisions += 1;
            let theirs = self.overlapping(f_start, f_len, drive_from, drive_to);
            for k in theirs.clone() {
                if self.flights[i].line[k] != OnLine::Garbled {
                    self.flights[i].line[k] = OnLine::Garbled;
                    self.stats.garbled += 1;
                }
            }
            self.flights[i].collided = true;
            for slot in &mut self.slots {
                for p in slot.queue.iter_mut().filter(|p| p.seq == f_seq && theirs.contains(&(p.index as usize))) {
                    p.rx = Rx::Error;
                }
            }
            for k in self.overlapping(start, n, f_from, f_to) {
                if line[k] != OnLine::Garbled {
                    line[k] = OnLine::Garbled;
                    self.stats.garbled += 1;
                }
            }
        }

        let seq = self.next_seq;
        self.next_seq += 1;
        let arrivals: Vec<(usize, Micros, Rx)> = line
            .iter()
            .enumerate()
            .filter_map(|(k, o)| {
                let rx = match *o {
                    OnLine::Octet(v) => Rx::Octet(v),
                    OnLine::Garbled => Rx::Error,
                    OnLine::Dropped => return None,
                };
                Some((k, self.octet_end(start, k), rx))
            })
            .collect();
        for (s, slot) in self.slots.iter_mut().enumerate() {
            if s == station || !slot.attached {
                continue;
            }
            for (j, &(k, at, rx)) in arrivals.iter().enumerate() {
                if slot.queue.len() >= QUEUE_LIMIT {
                    slot.queue.pop_front();
                    self.stats.overruns += 1;
                }
                slot.queue.push_back(Pending { at, seq, index: k as u32, rx, last: j + 1 == arrivals.len() });
            }
        }
        self.flights.push_back(Flight {
            seq,
            station,
            start,
            end,
            drive_from,
            drive_to,
            sent: frame.to_vec(),
            line,
            collided,
        });
    }

    /// Log (and capture) the transmissions that ended by `now`: nothing
    /// starting from now on can collide with them.
    pub(super) fn retire(&mut self, now: Micros) {
        while self.flights.front().is_some_and(|f| f.drive_to <= now) {
            let Some(f) = self.flights.pop_front() else { break };
            let heard: Vec<u8> =
                f.line.iter().filter_map(|o| if let OnLine::Octet(v) = o { Some(*v) } else { None }).collect();
            if let Some(c) = self.capture.as_mut()
                && !heard.is_empty()
                && let Err(e) = c.write_frame(self.unix_base + f.start, &heard)
            {
                tracing::warn!(error = %e, "simulated MS/TP line: capture stopped");
                self.capture = None;
                self.capture_error.get_or_insert(e);
            }
            if self.log_limit > 0 {
                if self.log.len() >= self.log_limit {
                    self.log.pop_front();
                }
                self.log.push_back(LineFrame {
                    start: f.start,
                    end: f.end,
                    station: f.station,
                    sent: f.sent,
                    heard,
                    collided: f.collided,
                });
            }
        }
    }
}
