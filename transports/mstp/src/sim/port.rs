//! A station's UART on a [`Line`]: reading what arrived, writing frames, and
//! waiting in real time for the next frame's last octet or a deadline.

use super::line::Line;
use crate::port::{Port, RxOctet, Waker, instant_at};
use bacnet::mstp::Micros;
use std::io;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A station's connection to a [`Line`]: its UART. Dropping it takes the
/// station off the line.
#[derive(Debug)]
pub struct SimPort {
    line: Line,
    station: usize,
}

impl SimPort {
    pub(super) fn new(line: Line, station: usize) -> SimPort {
        SimPort { line, station }
    }

    /// This station's index on the line (as [`LineFrame::station`](super::LineFrame::station) names it).
    pub fn station(&self) -> usize {
        self.station
    }

    /// The line.
    pub fn line(&self) -> &Line {
        &self.line
    }

    /// When the last octet of the next transmission reaches this station.
    pub(crate) fn next_arrival(&self) -> Option<Micros> {
        self.line.next_arrival(self.station)
    }

    /// When the next octet reaches this station.
    pub(crate) fn next_octet(&self) -> Option<Micros> {
        self.line.lock().slots.get(self.station)?.queue.front().map(|p| p.at)
    }
}

impl Drop for SimPort {
    fn drop(&mut self) {
        let mut st = self.line.lock();
        let slot = &mut st.slots[self.station];
        slot.attached = false;
        slot.queue.clear();
    }
}

impl Port for SimPort {
    fn name(&self) -> String {
        format!("sim:{}", self.station)
    }

    fn epoch(&self) -> Instant {
        self.line.shared.epoch
    }

    fn read(&mut self, now: Micros, out: &mut Vec<RxOctet>) -> io::Result<()> {
        let mut st = self.line.lock();
        let line_now = self.line.now_locked(&st);
        st.retire(line_now);
        let queue = &mut st.slots[self.station].queue;
        while queue.front().is_some_and(|p| p.at <= now) {
            if let Some(p) = queue.pop_front() {
                out.push(RxOctet { at: p.at, rx: p.rx });
            }
        }
        Ok(())
    }

    fn write(&mut self, now: Micros, frame: &[u8]) -> io::Result<()> {
        let mut st = self.line.lock();
        // In real time the frame starts when it is written, not when it
        // was due: a late driver is late on the line too.
        let now = if self.line.shared.virtual_time { now } else { now.max(self.line.now_locked(&st)) };
        st.retire(now);
        st.transmit(self.station, now, frame);
        drop(st);
        self.line.notify();
        Ok(())
    }

    fn wait(&mut self, until: Instant, spin: Duration) -> io::Result<()> {
        if self.line.shared.virtual_time {
            return Ok(());
        }
        let shared = &self.line.shared;
        let mut st = self.line.lock();
        loop {
            let slot = &mut st.slots[self.station];
            if slot.woken {
                slot.woken = false;
                return Ok(());
            }
            let target = match st.next_wake(self.station) {
                Some(at) => until.min(instant_at(shared.epoch, at)),
                None => until,
            };
            let left = target.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            if left > spin {
                st = shared.cond.wait_timeout(st, left - spin).unwrap_or_else(PoisonError::into_inner).0;
                continue;
            }
            let generation = shared.generation.load(Ordering::Acquire);
            drop(st);
            while Instant::now() < target && shared.generation.load(Ordering::Acquire) == generation {
                std::hint::spin_loop();
            }
            return Ok(());
        }
    }

    fn waker(&self) -> Waker {
        let line = self.line.clone();
        let station = self.station;
        Waker::new(move || line.wake(station))
    }
}
