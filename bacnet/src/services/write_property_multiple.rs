//! WritePropertyMultiple (Clause 15.10): write several properties of several
//! objects in one transaction, and the error that names the first failed
//! write.

use super::ServiceCodec;
use super::common::{ObjectPropertyReference, PropertyValue, ctx_field, opening_field};
use super::error::BacnetError;
use crate::codec::{ObjectIdentifier, Reader, expect_closing, next_is_closing, write_constructed, write_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// The properties to write on one object.
///
/// ```text
/// WriteAccessSpecification ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     list-of-properties [1] SEQUENCE OF BACnetPropertyValue
/// }
/// ```
///
/// Decoding: an empty `list-of-properties` is `Truncated`
/// (missing-required-parameter), reported at its closing tag; a priority
/// outside 1..=16 is `OutOfRange`.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteAccessSpecification {
    /// The object.
    pub object: ObjectIdentifier,
    /// The values to write; at least one.
    pub values: Vec<PropertyValue>,
}

impl ServiceCodec for WriteAccessSpecification {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_constructed(out, 1, |o| {
            for v in &self.values {
                v.encode(o);
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        opening_field(r, 1, "list-of-properties")?;
        let mut values = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 1) {
            values.push(PropertyValue::decode_from(r)?);
        }
        if values.is_empty() {
            return Err(DecodeError::Truncated { at: r.position(), what: "a property value" });
        }
        expect_closing(r, 1, "end of list-of-properties")?;
        Ok(WriteAccessSpecification { object, values })
    }
}

/// A WritePropertyMultiple request.
///
/// ```text
/// WritePropertyMultiple-Request ::= SEQUENCE {
///     list-of-write-access-specifications SEQUENCE OF WriteAccessSpecification
/// }
/// ```
///
/// Decoding: an empty body is `Truncated` (missing-required-parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct WritePropertyMultipleRequest(pub Vec<WriteAccessSpecification>);

impl ServiceCodec for WritePropertyMultipleRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        for spec in &self.0 {
            spec.encode(out);
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut specs = Vec::new();
        loop {
            specs.push(WriteAccessSpecification::decode_from(r)?);
            if r.is_empty() {
                return Ok(WritePropertyMultipleRequest(specs));
            }
        }
    }
}

/// The body of the Error PDU a server answers a failed WritePropertyMultiple
/// with.
///
/// ```text
/// WritePropertyMultiple-Error ::= SEQUENCE {
///     error-type [0] Error,
///     first-failed-write-attempt [1] BACnetObjectPropertyReference
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WritePropertyMultipleError {
    /// Why the write failed.
    pub error: BacnetError,
    /// The first write that failed; the writes before it took effect.
    pub first_failed: ObjectPropertyReference,
}

impl ServiceCodec for WritePropertyMultipleError {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.error.encode(o));
        write_constructed(out, 1, |o| self.first_failed.encode(o));
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "error-type")?;
        let error = BacnetError::decode_from(r)?;
        expect_closing(r, 0, "end of error-type")?;
        opening_field(r, 1, "first-failed-write-attempt")?;
        let first_failed = ObjectPropertyReference::decode_from(r)?;
        expect_closing(r, 1, "end of first-failed-write-attempt")?;
        Ok(WritePropertyMultipleError { error, first_failed })
    }
}
