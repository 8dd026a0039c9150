//! A heap-less BACnet MS/TP master node for microcontrollers.
//!
//! What a field controller with no operating system needs to sit on an
//! MS/TP segment beside the gateway: the Receive Frame state machine
//! (Clause 9.5.4), the Master Node state machine (Clause 9.5.6: token
//! passing, Poll For Master, lost-token recovery) and a device that answers
//! Who-Is, ReadProperty and WriteProperty for a handful of objects from a
//! table the application owns ([`Device`]). The application implements
//! [`Uart`] for its serial port and calls [`Node::poll`] from its main loop
//! with the time in µs; nothing here allocates, blocks or reads a clock.
//!
//! - [`receive`]: octets to frames, with Tframe_abort.
//! - [`master`]: the token ring.
//! - [`device`]: the object table and its properties.
//! - [`server`]: NPDUs and APDUs in, answers out.
//! - [`node`]: the three joined over a [`Uart`].
//!
//! The gateway's own MS/TP node (`bacnet::mstp::MasterNode`) is the full
//! one: a queue of NPDUs to send, extended (COBS) frames, requests it sends
//! and waits for, answers that come later than Treply_delay, slaves. It
//! needs a heap; this node does not, because it only serves: the one frame
//! it may send unasked is an I-Am, and every answer is computed at once from
//! the table. So it has no WAIT_FOR_REPLY state; Reply Postponed only tells
//! a requester that a request needing a reply (a network-layer message, an
//! NPDU for another network) will get none; a Test_Request is answered with
//! a Test_Response. It ignores extended frames and takes a frame to it
//! longer than [`receive::MAX_DATA`] octets as FrameTooLong.
//!
//! It shares the core's MS/TP frame codec (header and data CRCs, frame
//! encoding), timing constants and enumerations — the core's `alloc`-free
//! part — so the wire format has one implementation in the project.
//!
//! Must never: panic on any octet from the line, write outside its
//! buffers, or answer for a station address but its own.

#![no_std]
#![forbid(unsafe_code)]

pub mod device;
pub mod master;
pub mod node;
pub mod receive;
pub mod server;
mod uart;
mod write;

pub use device::{Device, Point, PointKind};
pub use master::{MasterState, Ring, RingConfig};
pub use node::{Node, NodeConfig};
pub use uart::{LineError, Uart};

/// The core, for its enumerations (`bacnet::enums::EngineeringUnits`…).
pub use bacnet;

/// Microseconds on the application's clock. It may wrap (a `u32` of µs
/// wraps every 71 minutes); the node only ever compares two instants less
/// than 35 minutes apart.
pub type Micros = u32;

/// How long from `since` to `now`, negative when `since` is later.
pub(crate) fn elapsed(now: Micros, since: Micros) -> i32 {
    now.wrapping_sub(since) as i32
}
