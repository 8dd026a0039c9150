//! Transaction state machines (Clause 5.4): the client side
//! ([`ClientTsm`]), the server side ([`ServerTsm`]), and the segmentation
//! of one message both use ([`segment`]).
//!
//! All of it is sans-IO: APDUs in through `handle_*`, APDUs out through
//! `poll_transmit`, time in as a `Duration` and the next deadline out through
//! `poll_timeout`. Nothing here reads a clock or touches a socket.

mod budget;
mod client;
pub mod segment;
mod server;

pub use budget::AnswerBudget;
pub use client::{ClientTsm, Completed, Outcome, PeerLimits, StartError, TransactionId, Transmit, TsmConfig};
pub use server::{
    Indication, MAX_REQUEST_SEGMENTS, Response, SPARE_BUFFER_MIN_OCTETS, SPARE_BUFFER_OCTETS, SPARE_BUFFERS, ServerTsm,
    ServerTsmConfig, ServerTsmCounters, TransactionKey,
};
