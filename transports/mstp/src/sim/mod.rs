//! A simulated RS-485 multi-drop line.
//!
//! A [`Line`] carries octets between any number of stations in one process
//! no faster than a UART at the baud rate: 10 bit times per octet (start, 8
//! data, stop), so a frame of `n` octets occupies the line for `n × 10 /
//! baud` seconds and its k-th octet reaches every other station when its
//! stop bit ends, `start + (k + 1) × 10 / baud`. A station's frames go out
//! one after another, never overlapping each other.
//!
//! - **Collisions**: when two stations drive the line at once, every octet
//!   of either that overlaps the other in time arrives as a UART error
//!   ([`crate::Rx::Error`], the node's `handle_receive_error`) and both
//!   frames are marked in the log; [`LineStats::collisions`] counts them.
//! - **Driver enable** ([`DriverTiming`], [`Line::attach_with`]): a
//!   station's RS-485 driver switched on before its first bit and off after
//!   its last, as a port's direction control does; its frames start that
//!   much later and it holds the line that much longer (another station's
//!   bits in that time collide).
//! - **Noise** ([`Noise`]): an octet loses a bit (one flipped) or is lost
//!   altogether, each with a probability, from a seeded generator.
//! - **Log and capture**: once a frame has left the line it goes to the log
//!   ([`Line::frames`], for timing analysis in [`timing`]) and, if asked, to
//!   a pcap capture (linktype 165) as a listener heard it.
//!
//! # Virtual time and real time
//!
//! The line never reads a clock of its own while deciding anything: each
//! call says when it happens, and the line's state is a pure function of
//! those calls. The same line therefore runs two ways:
//!
//! - **Virtual time** ([`Simulation`]): the simulation owns the clock and
//!   jumps from one instant something is due to the next, giving every
//!   station a turn with the same code the driver thread runs. Runs are
//!   deterministic (same stations, same commands, same seed: same octets at
//!   the same µs) and as fast as the CPU allows, so a minute of line time
//!   takes milliseconds. Use it for protocol tests and for measuring
//!   throughput against the line's capacity: the host answers at the
//!   instant it is asked, so what is measured is the protocol and the node,
//!   not the OS.
//! - **Real time** ([`Line::new`] with [`crate::PortConfig::Sim`]): each
//!   station is a driver thread; a frame starts when its driver writes it
//!   (a late driver is late on the line too), octets arrive on the
//!   monotonic clock, and a station's thread sleeps until the last octet of
//!   the next frame reaches it or its own deadline, whichever is first.
//!   Use it to test and measure the driver itself: its sleeps, its
//!   channels, the host's reply path. [`timing`] reads the achieved
//!   Tturnaround, reply delay and Tusage_delay off the log.
//!
//! **Across processes** ([`PtyLine`]): each station is a pseudo-terminal
//! that any program opens as its serial port; a relay thread puts what it
//! writes on the line and writes what the line delivers, paced.

mod line;
mod port;
#[cfg(unix)]
mod pty;
mod simulation;
pub mod timing;

pub use line::{DriverTiming, Line, LineConfig, LineFrame, LineStats, Noise};
pub use port::SimPort;
#[cfg(unix)]
pub use pty::{PIECE_WAIT, PtyLine, PtyLineStats};
pub use simulation::Simulation;
