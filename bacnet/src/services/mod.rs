//! Service request and acknowledgement codecs (Clauses 13–16, 21).
//!
//! Each service lives in its own file with one struct per PDU body (request,
//! ack), each implementing [`ServiceCodec`]. The service's ASN.1 production
//! is quoted in the struct's doc. Bodies are the octets after the APDU header
//! (after the service choice); the APDU layer in [`crate::apdu`] carries the
//! choice.

use crate::codec::Reader;
use crate::error::DecodeError;
use alloc::vec::Vec;

pub mod common;

/// Encoding and decoding of one service body.
pub trait ServiceCodec: Sized {
    /// Append the encoded body.
    fn encode(&self, out: &mut Vec<u8>);

    /// Decode from a reader positioned at the body; must consume exactly the
    /// body's octets (callers check for trailing data).
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decode a whole buffer; trailing octets are `TrailingData`
    /// (too-many-arguments).
    fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let v = Self::decode_from(&mut r)?;
        r.expect_end()?;
        Ok(v)
    }

    /// The encoded body as a new vector.
    fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}
