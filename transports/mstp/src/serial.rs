//! A real serial port (`serialport` crate): 8 data bits, no parity, one
//! stop bit, no flow control. RS-485 direction control is the adapter's
//! (USB adapters switch the driver themselves), the kernel's RS-485 mode or
//! a GPIO line ([`DirectionControl`]); the port must not echo our own
//! transmissions back (the receiver disabled while driving).

use crate::direction::{Direction, DirectionControl};
use crate::os::{self, Readiness};
use crate::port::{Port, Rx, RxOctet, Waker};
use bacnet::mstp::Micros;
use serialport::{DataBits, FlowControl, Parity, SerialPort, StopBits, TTYPort};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The baud rates Clause 9 names; others the UART accepts work too (a
/// warning is logged).
pub const STANDARD_BAUD_RATES: [u32; 6] = [9600, 19200, 38400, 57600, 76800, 115_200];

/// How long a blocked write may wait for room in the kernel's buffer.
const WRITE_TIMEOUT: Duration = Duration::from_millis(500);

/// A serial port as a [`Port`].
#[derive(Debug)]
pub struct SerialLine {
    tty: TTYPort,
    name: String,
    epoch: Instant,
    wake_rx: UnixStream,
    wake_tx: Arc<UnixStream>,
    buf: Vec<u8>,
    direction: Direction,
}

impl SerialLine {
    /// Open `path` at `baud`, 8N1, no flow control, exclusively; octets
    /// that waited in its input buffer from before are discarded (stale
    /// frames must not be taken for the line's current state).
    pub fn open(path: &str, baud: u32) -> Result<SerialLine, serialport::Error> {
        Self::open_with(path, baud, &DirectionControl::Adapter)
    }

    /// [`SerialLine::open`] with RS-485 direction control set up as
    /// `direction` says (kernel mode asked of the driver and read back, or
    /// the GPIO line requested); a port that cannot do it is not opened.
    pub fn open_with(path: &str, baud: u32, direction: &DirectionControl) -> Result<SerialLine, serialport::Error> {
        if !STANDARD_BAUD_RATES.contains(&baud) {
            tracing::warn!(path, baud, "not one of Clause 9's baud rates (9600, 19200, 38400, 57600, 76800, 115200)");
        }
        let tty = serialport::new(path, baud)
            .data_bits(DataBits::Eight)
            .parity(Parity::None)
            .stop_bits(StopBits::One)
            .flow_control(FlowControl::None)
            .timeout(WRITE_TIMEOUT)
            .open_native()?;
        tty.clear(serialport::ClearBuffer::Input)?;
        let mut line = SerialLine::from_tty(tty, path)?;
        line.direction = Direction::set_up(direction, line.tty.as_raw_fd(), path, Box::new(crate::direction::Linux))?;
        Ok(line)
    }

    /// Use a terminal opened elsewhere (a pseudo-terminal from
    /// [`TTYPort::pair`] in tests), configured as it is.
    pub fn from_tty(mut tty: TTYPort, name: impl Into<String>) -> io::Result<SerialLine> {
        tty.set_timeout(WRITE_TIMEOUT).map_err(io::Error::from)?;
        let (wake_rx, wake_tx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        Ok(SerialLine {
            tty,
            name: name.into(),
            epoch: Instant::now(),
            wake_rx,
            wake_tx: Arc::new(wake_tx),
            buf: vec![0; 4096],
            direction: Direction::Passive,
        })
    }

    fn drain_wakes(&mut self) {
        let mut b = [0u8; 64];
        while matches!(self.wake_rx.read(&mut b), Ok(n) if n > 0) {}
    }

    /// Input or a wake is waiting, after at most `timeout`. A device that
    /// hung up (a USB adapter unplugged) is an error, so the driver pauses
    /// rather than spins.
    fn ready(&mut self, timeout: Duration) -> io::Result<bool> {
        let [tty, wake] = os::poll_readable([self.tty.as_raw_fd(), self.wake_rx.as_raw_fd()], timeout)?;
        if wake != Readiness::Idle {
            self.drain_wakes();
        }
        if tty == Readiness::Broken {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "serial device hung up"));
        }
        Ok(tty == Readiness::Readable || wake != Readiness::Idle)
    }
}

impl Port for SerialLine {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn epoch(&self) -> Instant {
        self.epoch
    }

    fn read(&mut self, now: Micros, out: &mut Vec<RxOctet>) -> io::Result<()> {
        // Read only what the kernel holds: the descriptor blocks.
        let waiting = self.tty.bytes_to_read().map_err(io::Error::from)? as usize;
        if waiting == 0 {
            return Ok(());
        }
        let n = self.tty.read(&mut self.buf[..waiting.min(4096)])?;
        // A USB adapter hands octets over in chunks: they all count as
        // arriving now (hence a Tframe_abort above the chunk gap).
        out.extend(self.buf[..n].iter().map(|&o| RxOctet { at: now, rx: Rx::Octet(o) }));
        Ok(())
    }

    fn write(&mut self, _now: Micros, frame: &[u8]) -> io::Result<()> {
        let fd = self.tty.as_raw_fd();
        let tty = &mut self.tty;
        self.direction.around_write(fd, frame, |f| tty.write_all(f))
    }

    fn wait(&mut self, until: Instant, spin: Duration) -> io::Result<()> {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            if left > spin {
                if self.ready(left - spin)? {
                    return Ok(());
                }
                continue;
            }
            // The last stretch: look without sleeping.
            while Instant::now() < until {
                if self.ready(Duration::ZERO)? {
                    return Ok(());
                }
                std::hint::spin_loop();
            }
            return Ok(());
        }
    }

    fn waker(&self) -> Waker {
        let tx = self.wake_tx.clone();
        Waker::new(move || {
            // Full means a wake is already pending.
            let _ = (&*tx).write(&[1]);
        })
    }
}
