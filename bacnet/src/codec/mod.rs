//! The BACnet encoding rules (Clause 20.2): tags, primitive contents, and
//! typed helpers that service codecs use to read and write their productions.
//!
//! Contract: no function here panics on any input. Decoders take a
//! [`Reader`] and return [`DecodeError`](crate::error::DecodeError)s with
//! octet offsets; encoders append to a `Vec<u8>`.

#[cfg(feature = "alloc")]
mod field;
#[cfg(feature = "alloc")]
mod primitive;
mod reader;
pub mod tag;

#[cfg(feature = "alloc")]
pub use field::*;
#[cfg(feature = "alloc")]
pub use primitive::{
    BitString, CharacterSet, CharacterString, CharsetError, Date, Enumerated, ObjectIdentifier, ParseObjectIdError,
    Primitive, Time, UNSPECIFIED,
};
pub use reader::Reader;
pub use tag::{Tag, TagClass, TagKind};
