//! A simulated line shared across processes: each station is a
//! pseudo-terminal whose slave end any program opens as a serial port (our
//! `trellis`, another stack, a bus monitor), while this side relays its
//! octets through a [`Line`] in real time.
//!
//! ```text
//! program A ─ /dev/pts/5 ═ master ─┐                     ┌─ master ═ /dev/pts/6 ─ program B
//!                                  └── PtyLine thread ──┘
//!                                      Line (10 bits per octet, collisions, noise, log, pcap)
//! ```
//!
//! What a program writes to its pty becomes a transmission on the line at
//! the instant this side has read a whole frame of it: a frame that comes
//! in pieces (an emulated UART writes octet by octet, a pty may hand a
//! write over in two reads) is put together first, by its header's Length,
//! so that the line, its log and its capture hold it as one transmission,
//! as a bus monitor that frames by the header would. Octets that are not a
//! frame go as they are read, and so does the start of a frame whose
//! writer pauses longer than [`PIECE_WAIT`] before writing more of it (its
//! receivers then see it cut short, as on a real line, and
//! [`PtyLineStats::cut_short`] counts it: on a loaded machine an emulated
//! UART's writer can pause that long). Before a piece is given up on, its
//! pty is read until it is empty, so a relay thread that was itself kept
//! waiting does not cut a frame whose rest is already there. Every
//! octet the line delivers is written to the other stations' ptys at the
//! instant its stop bit ends, so a program reading its pty sees the line's
//! pacing, give or take the pty's own latency and this thread's wake-up.
//!
//! What a pty cannot carry: a UART error. An octet garbled by a collision
//! is left out (the frame then fails its CRC or Tframe_abort), and counted.
//! A pty whose program does not read fills its buffer; what cannot be
//! written is dropped and counted, and the stale input is flushed, so a
//! program that opens its port late does not read old frames.
//!
//! The relay keeps each slave end open itself (so the master never sees a
//! hang-up between programs) and therefore clears the terminal's exclusive
//! flag every [`IDLE_WAIT`]: a program that opened its port exclusively
//! (as `trellis` does) and exited must not lock the next one out.
//!
//! Must never: block on one pty (every write is non-blocking), or hold the
//! line's lock while doing I/O.

use super::{Line, SimPort};
use crate::os::{self, Readiness};
use crate::port::{Port, Rx, RxOctet};
use serialport::{ClearBuffer, SerialPort, TTYPort};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest this side sleeps with nothing due (it also wakes for input).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// How long the start of a frame waits for more of it (the longest pause
/// between two writes of one frame) before it goes on the line as it is. A pause in a program's writes is not a gap on the line
/// (an emulated UART starved of CPU writes its octets late), so this is
/// generous: a UART that is not starved writes an octet every 1.04 ms at
/// 9,600 baud, and a receiver gives up on a gap of at most 100 ms
/// (Tframe_abort's upper bound).
pub const PIECE_WAIT: Duration = Duration::from_millis(20);

/// What the relay did, for the log and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PtyLineStats {
    /// Octets read from the ptys and put on the line.
    pub octets_in: u64,
    /// Octets the line delivered and this side wrote to a pty.
    pub octets_out: u64,
    /// Octets garbled by a collision (a UART error), not written.
    pub garbled: u64,
    /// Octets a pty had no room for (its program is not reading).
    pub overflowed: u64,
    /// Frames whose start went on the line without their rest, because
    /// their writer paused longer than [`PIECE_WAIT`] between two writes
    /// mid-frame.
    pub cut_short: u64,
    /// Transmissions that are pieces of those frames: each start, and each
    /// run of octets of its rest up to the next preamble (the rest of a cut
    /// frame goes as it is read). A capture holds each as a damaged frame.
    pub cut_pieces: u64,
}

struct Station {
    master: TTYPort,
    /// Kept open so the master never sees a hang-up while no program has
    /// the port open; never read.
    slave: TTYPort,
    path: String,
    port: SimPort,
    /// The start of a frame, read but not yet on the line, and when its
    /// program last wrote (the pause [`PIECE_WAIT`] bounds is between
    /// writes, not over the whole frame).
    piece: Vec<u8>,
    piece_last_read: Instant,
    /// The last frame start was cut short and its rest is still coming.
    after_cut: bool,
}

impl Station {
    /// Put on the line what of [`Station::piece`] is ready: whole frames,
    /// octets before a preamble, and everything once `flush` (a frame's
    /// start cut short).
    fn send_ready(&mut self, now: bacnet::mstp::Micros, flush: bool, stats: &mut PtyLineStats) -> io::Result<()> {
        loop {
            let ready = if flush { self.piece.len() } else { ready_len(&self.piece) };
            if ready == 0 {
                return Ok(());
            }
            let chunk = &self.piece[..ready];
            if flush {
                stats.cut_short += 1;
                stats.cut_pieces += 1;
                self.after_cut = true;
            } else if is_whole_frame(chunk) {
                self.after_cut = false;
            } else if self.after_cut {
                stats.cut_pieces += 1;
            }
            self.port.write(now, chunk)?;
            self.piece.drain(..ready);
            self.piece_last_read = Instant::now();
        }
    }
}

/// Whether `chunk` is one frame as its header describes it.
fn is_whole_frame(chunk: &[u8]) -> bool {
    use bacnet::mstp::frame::{HEADER_LEN, Header};
    chunk.len() >= HEADER_LEN
        && Header::decode(chunk).is_ok_and(|header| chunk.len() == HEADER_LEN + header.data_field_len())
}

/// How many leading octets of `piece` can go on the line now: a whole
/// frame, or what comes before the next preamble; 0 while a frame's rest
/// is still to come.
fn ready_len(piece: &[u8]) -> usize {
    use bacnet::mstp::frame::{HEADER_LEN, Header, PREAMBLE};
    if piece.is_empty() {
        return 0;
    }
    if !piece.starts_with(&PREAMBLE[..piece.len().min(2)]) {
        // Not a frame: up to the next possible preamble.
        return piece[1..].iter().position(|&b| b == PREAMBLE[0]).map_or(piece.len(), |i| i + 1);
    }
    if piece.len() < HEADER_LEN {
        return 0;
    }
    match Header::decode(piece) {
        Ok(header) => {
            let whole = HEADER_LEN + header.data_field_len();
            if piece.len() >= whole { whole } else { 0 }
        }
        // A damaged header: its receivers drop it; send the header as is.
        Err(_) => HEADER_LEN,
    }
}

/// A [`Line`] whose stations are pseudo-terminals.
pub struct PtyLine {
    line: Line,
    stations: Vec<Station>,
}

impl PtyLine {
    /// `count` new stations on `line` (in real time), each a pty pair.
    pub fn open(line: &Line, count: usize) -> io::Result<PtyLine> {
        if line.is_virtual() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a pty line runs in real time"));
        }
        let mut stations = Vec::with_capacity(count);
        for _ in 0..count {
            let (mut master, slave) = TTYPort::pair().map_err(io::Error::from)?;
            // Other programs must be able to open the slave end.
            os::clear_terminal_exclusive(slave.as_raw_fd())?;
            master.set_timeout(Duration::ZERO).map_err(io::Error::from)?;
            let path = slave.name().ok_or_else(|| io::Error::other("the pty's slave end has no path"))?;
            stations.push(Station {
                master,
                slave,
                path,
                port: line.attach(),
                piece: Vec::new(),
                piece_last_read: Instant::now(),
                after_cut: false,
            });
        }
        Ok(PtyLine { line: line.clone(), stations })
    }

    /// The path of each station's port (the pty's slave end), in station
    /// order ([`LineFrame::station`](super::LineFrame::station)).
    pub fn paths(&self) -> Vec<String> {
        self.stations.iter().map(|s| s.path.clone()).collect()
    }

    /// The line.
    pub fn line(&self) -> &Line {
        &self.line
    }

    /// Relay on a thread of its own until `stop` is set; the thread
    /// returns what it did.
    pub fn spawn(self, stop: Arc<AtomicBool>) -> io::Result<JoinHandle<io::Result<PtyLineStats>>> {
        std::thread::Builder::new().name("mstp pty line".into()).spawn(move || self.run(&stop))
    }

    /// Relay until `stop` is set.
    pub fn run(mut self, stop: &AtomicBool) -> io::Result<PtyLineStats> {
        // Wake-ups are what pace the octets: ask for the least slack.
        let _ = os::set_timer_slack_min();
        let mut stats = PtyLineStats::default();
        let fds: Vec<_> = self.stations.iter().map(|s| s.master.as_raw_fd()).collect();
        let mut ready = Vec::with_capacity(fds.len());
        let mut delivered: Vec<RxOctet> = Vec::new();
        let mut out = Vec::new();
        let mut buf = [0u8; 1024];
        let mut unlocked = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if unlocked.elapsed() >= IDLE_WAIT {
                for s in &self.stations {
                    let _ = os::clear_terminal_exclusive(s.slave.as_raw_fd());
                }
                unlocked = Instant::now();
            }
            let now = self.line.now();
            for s in &mut self.stations {
                delivered.clear();
                s.port.read(now, &mut delivered)?;
                out.clear();
                for o in &delivered {
                    match o.rx {
                        Rx::Octet(b) => out.push(b),
                        Rx::Error => stats.garbled += 1,
                    }
                }
                if !out.is_empty() {
                    write_some(s, &out, &mut stats);
                }
            }
            for s in &mut self.stations {
                if !s.piece.is_empty() && s.piece_last_read.elapsed() >= PIECE_WAIT {
                    // The rest may have come while this thread was not
                    // running: what a read brings restarts the wait.
                    while read_input(s, self.line.now(), &mut buf, &mut stats)? {}
                    if !s.piece.is_empty() && s.piece_last_read.elapsed() >= PIECE_WAIT {
                        s.send_ready(self.line.now(), true, &mut stats)?;
                    }
                }
            }
            let next = self.stations.iter().filter_map(|s| s.port.next_octet()).min();
            let mut wait =
                next.map_or(IDLE_WAIT, |at| Duration::from_micros(at.saturating_sub(self.line.now())).min(IDLE_WAIT));
            for s in self.stations.iter().filter(|s| !s.piece.is_empty()) {
                wait = wait.min(PIECE_WAIT.saturating_sub(s.piece_last_read.elapsed()));
            }
            os::poll_readable_into(&fds, wait, &mut ready)?;
            for (s, r) in self.stations.iter_mut().zip(&ready) {
                if *r != Readiness::Readable {
                    continue;
                }
                read_input(s, self.line.now(), &mut buf, &mut stats)?;
            }
        }
        Ok(stats)
    }
}

/// Read what a station's program wrote (without blocking) and put on the
/// line what of it is ready; whether anything was read.
fn read_input(
    s: &mut Station,
    now: bacnet::mstp::Micros,
    buf: &mut [u8],
    stats: &mut PtyLineStats,
) -> io::Result<bool> {
    match s.master.read(buf) {
        Ok(0) => Ok(false),
        Ok(n) => {
            s.piece_last_read = Instant::now();
            s.piece.extend_from_slice(&buf[..n]);
            stats.octets_in += n as u64;
            s.send_ready(now, false, stats)?;
            Ok(true)
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(io::Error::new(e.kind(), format!("reading the pty of {}: {e}", s.path))),
    }
}

/// Write what the line delivered to a station's pty, without blocking.
fn write_some(s: &mut Station, octets: &[u8], stats: &mut PtyLineStats) {
    let mut rest = octets;
    while !rest.is_empty() {
        match s.master.write(rest) {
            Ok(0) => break,
            Ok(n) => {
                stats.octets_out += n as u64;
                rest = &rest[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if !rest.is_empty() {
        // Its program is not reading: drop the backlog so that it does not
        // read stale frames when it does.
        stats.overflowed += rest.len() as u64;
        let _ = s.slave.clear(ClearBuffer::Input);
    }
}
