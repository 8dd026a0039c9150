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

extern crate alloc;

pub mod apdu;
pub mod bbmd;
pub mod bbmd6;
pub mod bvlc_sc;
pub mod bvll;
pub mod bvll6;
pub mod civil;
pub mod codec;
pub mod cov;
pub mod enums;
pub mod error;
pub mod ethernet;
pub mod event;
pub mod mstp;
pub mod npdu;
pub mod read_records;
pub mod router;
pub mod sc;
pub mod schedule;
pub mod services;
pub mod tsm;
pub mod value;

pub use codec::{BitString, CharacterSet, CharacterString, Date, ObjectIdentifier, Time};
pub use enums::*;
pub use error::{DecodeError, EncodeError};
pub use value::{AnyValue, Element, Value};
