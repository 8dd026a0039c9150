//! What the host's server and client share about the network, so that
//! neither depends on the other: how a peer is named ([`DeviceAddress`],
//! [`RemoteStation`]), waiting for a state machine's next deadline
//! ([`sleep_until`]), and the MS/TP side of a port ([`mstp`]: the thread
//! that carries a driver's NPDUs into the runtime, a refused send as an I/O
//! error).
//!
//! Must never: decode an NPDU or an APDU, hold any server or client state,
//! or block a runtime thread (the bridge thread is the one that waits on
//! the driver's channel).

mod address;
mod deadline;
pub mod mstp;

pub use address::{DeviceAddress, LinkAddress, ParseAddressError, RemoteStation, parse_hex};
pub use deadline::sleep_until;
