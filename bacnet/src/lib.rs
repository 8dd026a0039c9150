//! Sans-IO BACnet core for Trellis.
//!
//! This crate is the protocol and nothing else: encoding rules, enumerations,
//! the PDU layers (BVLL for BACnet/IP, NPDU, APDU), service codecs, the
//! client transaction state machine, and MS/TP's frames and node state
//! machines ([`mstp`]). It does no I/O, reads no clock and
//! depends on no runtime: time comes in as a `now` argument and deadlines go
//! out through `poll_timeout()`. It builds with `no_std` + `alloc`, for
//! `wasm32-wasip2` plugins as well as for the host.
//!
//! Architecture invariant: decoding untrusted bytes never panics, never
//! allocates more than a bounded multiple of its input, and every failure maps
//! to one protocol answer via [`DecodeError::reject_reason`].

#![no_std]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;

// Without `alloc`: what a heap-less MS/TP node uses (see Cargo.toml).
pub mod codec;
pub mod enums;
pub mod error;
pub mod mstp;

#[cfg(feature = "alloc")]
pub use codec::{BitString, CharacterSet, CharacterString, Date, ObjectIdentifier, Time};
#[cfg(feature = "alloc")]
pub use value::{AnyValue, Element, Value};

#[cfg(feature = "alloc")]
pub mod apdu;
#[cfg(feature = "alloc")]
pub mod bbmd;
#[cfg(feature = "alloc")]
pub mod bbmd6;
#[cfg(feature = "alloc")]
pub mod bvlc_sc;
#[cfg(feature = "alloc")]
pub mod bvll;
#[cfg(feature = "alloc")]
pub mod bvll6;
#[cfg(feature = "alloc")]
pub mod civil;
#[cfg(feature = "alloc")]
pub mod cov;
#[cfg(feature = "alloc")]
pub mod ethernet;
#[cfg(feature = "alloc")]
pub mod event;
#[cfg(feature = "alloc")]
pub mod npdu;
#[cfg(feature = "alloc")]
pub mod read_records;
#[cfg(feature = "alloc")]
pub mod router;
#[cfg(feature = "alloc")]
pub mod sc;
#[cfg(feature = "alloc")]
pub mod schedule;
#[cfg(feature = "alloc")]
pub mod services;
#[cfg(feature = "alloc")]
pub mod tsm;
#[cfg(feature = "alloc")]
pub mod value;

pub use enums::*;
pub use error::{DecodeError, EncodeError};
