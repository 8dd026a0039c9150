//! BACnet MS/TP, Master-Slave/Token-Passing over EIA-485 (Clause 9): the
//! frame codec, the Receive Frame state machine and the Master Node state
//! machine.
//!
//! - [`crc`]: the header CRC-8, data CRC-16 and CRC-32K (Annex G).
//! - [`cobs`]: the COBS encoding of extended frames (Annex T).
//! - [`frame`]: [`FrameType`], [`Header`], [`Frame`] — every frame type by
//!   its Clause 9 name, encoded into a caller's buffer.
//! - [`receive`]: [`Receiver`], the Receive Frame state machine, octet by
//!   octet with Tframe_abort.
//! - [`master`]: [`MasterNode`], the Master Node state machine: token
//!   passing, polling for masters, lost-token recovery, replies and Reply
//!   Postponed.
//!
//! Sans-IO like the rest of the crate, with one difference: MS/TP's timers
//! are a few bit times long (Tframe_abort is 60 bit times, 0.5 ms at
//! 115,200 baud), so time enters as [`Micros`], microseconds on whatever
//! monotonic clock the driver reads, and deadlines leave through
//! `poll_timeout()` in the same unit.
//!
//! The timing constants below are the standard's (Clause 9.5.3), in µs; the
//! ones in bit times depend on the baud rate ([`bit_times`]).

pub mod cobs;
pub mod crc;
pub mod frame;
#[cfg(feature = "alloc")]
pub mod master;
#[cfg(feature = "alloc")]
pub mod receive;

pub use frame::{BROADCAST, Frame, FrameError, FrameType, Header};
#[cfg(feature = "alloc")]
pub use master::{MasterConfig, MasterCounters, MasterEvent, MasterNode, MasterState, Transmit};
#[cfg(feature = "alloc")]
pub use receive::{Invalid, ReceiveConfig, ReceiveCounters, ReceiveEvent, ReceiveState, Receiver};

/// Microseconds on the driver's monotonic clock (any epoch).
pub type Micros = u64;

/// Tno_token: silence after which a master decides the token is lost.
pub const T_NO_TOKEN: Micros = 500_000;
/// Tslot: the width of the slot in which a master may regenerate the token.
pub const T_SLOT: Micros = 10_000;
/// Treply_delay: the longest a node may take to answer a BACnet Data
/// Expecting Reply (with the reply, or Reply Postponed).
pub const T_REPLY_DELAY: Micros = 250_000;
/// Treply_timeout: the least a master waits for a reply before it gives up
/// (the standard allows up to 300 ms).
pub const T_REPLY_TIMEOUT: Micros = 255_000;
/// Tusage_delay: the longest a node may take, after receiving the token or a
/// Poll For Master, to send its first octet.
pub const T_USAGE_DELAY: Micros = 15_000;
/// Tusage_timeout: the least a master waits for a station it passed the
/// token or a Poll For Master to start using it (the standard allows up to
/// 35 ms).
pub const T_USAGE_TIMEOUT: Micros = 20_000;
/// The most Tframe_abort may be (the least is 60 bit times).
pub const T_FRAME_ABORT_MAX: Micros = 100_000;
/// Npoll: token passes between two Poll For Master cycles.
pub const N_POLL: u32 = 50;
/// Nretry_token: retries of a token pass that was not used.
pub const N_RETRY_TOKEN: u32 = 1;
/// Nmin_octets: octets seen before the line counts as active.
pub const N_MIN_OCTETS: u32 = 4;
/// Nmax_master: the highest master address.
pub const N_MAX_MASTER: u8 = 127;

/// The duration of `bits` bit times at `baud`, rounded up to whole µs
/// (at least 1 µs; a baud of 0 counts as 1).
pub const fn bit_times(bits: u64, baud: u32) -> Micros {
    let baud = if baud == 0 { 1 } else { baud as u64 };
    let us = (bits * 1_000_000).div_ceil(baud);
    if us == 0 { 1 } else { us }
}
