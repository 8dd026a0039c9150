//! ReadPropertyMultiple (Clause 15.7): read several properties of several
//! objects in one transaction.
//!
//! `all`, `required` and `optional` (property identifiers 8, 105 and 80) are
//! ordinary property identifiers here; expanding them is the server's job.

use super::ServiceCodec;
use super::common::{PropertyReference, ctx_field, opening_field, opt_ctx_field};
use super::error::BacnetError;
use crate::codec::{
    ObjectIdentifier, Reader, expect_closing, expect_opening, next_is_closing, next_is_opening, tag, write_constructed,
    write_ctx, write_opt_ctx,
};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;

/// The objects and properties to read.
///
/// ```text
/// ReadAccessSpecification ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     list-of-property-references [1] SEQUENCE OF BACnetPropertyReference
/// }
/// ```
///
/// Decoding: an empty `list-of-property-references` is `Truncated`
/// (missing-required-parameter), reported at its closing tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadAccessSpecification {
    /// The object.
    pub object: ObjectIdentifier,
    /// Its properties to read; at least one.
    pub properties: Vec<PropertyReference>,
}

impl ServiceCodec for ReadAccessSpecification {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_constructed(out, 1, |o| {
            for p in &self.properties {
                p.encode(o);
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        opening_field(r, 1, "list-of-property-references")?;
        let mut properties = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 1) {
            properties.push(PropertyReference::decode_from(r)?);
        }
        if properties.is_empty() {
            return Err(DecodeError::Truncated { at: r.position(), what: "a property reference" });
        }
        expect_closing(r, 1, "end of list-of-property-references")?;
        Ok(ReadAccessSpecification { object, properties })
    }
}

/// A ReadPropertyMultiple request.
///
/// ```text
/// ReadPropertyMultiple-Request ::= SEQUENCE {
///     list-of-read-access-specs SEQUENCE OF ReadAccessSpecification
/// }
/// ```
///
/// Decoding: an empty body is `Truncated` (missing-required-parameter).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadPropertyMultipleRequest(pub Vec<ReadAccessSpecification>);

impl ServiceCodec for ReadPropertyMultipleRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        for spec in &self.0 {
            spec.encode(out);
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut specs = Vec::new();
        loop {
            specs.push(ReadAccessSpecification::decode_from(r)?);
            if r.is_empty() {
                return Ok(ReadPropertyMultipleRequest(specs));
            }
        }
    }
}

/// The result of reading one property: its value or why it could not be read.
///
/// ```text
/// SEQUENCE {
///     property-identifier [2] BACnetPropertyIdentifier,
///     property-array-index [3] Unsigned OPTIONAL, -- used only with array datatype
///     read-result CHOICE {
///         property-value [4] ABSTRACT-SYNTAX.&Type,
///         property-access-error [5] Error
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResult {
    /// The property.
    pub property: PropertyIdentifier,
    /// The array index read, or the whole property.
    pub array_index: Option<u32>,
    /// The value (`[4]`) or the error (`[5]`).
    pub outcome: Result<AnyValue, BacnetError>,
}

impl ServiceCodec for ReadResult {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 2, &self.property);
        write_opt_ctx(out, 3, &self.array_index);
        match &self.outcome {
            Ok(value) => write_constructed(out, 4, |o| value.encode(o)),
            Err(error) => write_constructed(out, 5, |o| error.encode(o)),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let property = ctx_field(r, 2, "property-identifier")?;
        let array_index = opt_ctx_field(r, 3, "property-array-index")?;
        let outcome = if next_is_opening(r, 4) {
            expect_opening(r, 4, "property-value")?;
            let value = AnyValue::decode(r)?;
            expect_closing(r, 4, "end of property-value")?;
            Ok(value)
        } else if next_is_opening(r, 5) {
            expect_opening(r, 5, "property-access-error")?;
            let error = BacnetError::decode_from(r)?;
            expect_closing(r, 5, "end of property-access-error")?;
            Err(error)
        } else {
            let at = r.position();
            // Nothing, or the end of list-of-results: the result is missing.
            return Err(match tag::peek_tag(r) {
                None | Some(Ok(tag::Tag { kind: tag::TagKind::Closing, .. })) => {
                    DecodeError::Truncated { at, what: "read-result" }
                }
                Some(_) => DecodeError::InvalidTag { at, what: "property-value [4] or property-access-error [5]" },
            });
        };
        Ok(ReadResult { property, array_index, outcome })
    }
}

/// The results for one object.
///
/// ```text
/// ReadAccessResult ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     list-of-results [1] SEQUENCE OF SEQUENCE {
///         property-identifier [2] BACnetPropertyIdentifier,
///         property-array-index [3] Unsigned OPTIONAL, -- used only with array datatype
///         read-result CHOICE {
///             property-value [4] ABSTRACT-SYNTAX.&Type,
///             property-access-error [5] Error
///         }
///     } OPTIONAL
/// }
/// ```
///
/// An absent `list-of-results` decodes as an empty `results`; the encoder
/// always writes the list (empty or not), as ReadPropertyMultiple-ACK does.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadAccessResult {
    /// The object.
    pub object: ObjectIdentifier,
    /// One result per property read.
    pub results: Vec<ReadResult>,
}

impl ServiceCodec for ReadAccessResult {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_constructed(out, 1, |o| {
            for result in &self.results {
                result.encode(o);
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let mut results = Vec::new();
        if next_is_opening(r, 1) {
            expect_opening(r, 1, "list-of-results")?;
            while !r.is_empty() && !next_is_closing(r, 1) {
                results.push(ReadResult::decode_from(r)?);
            }
            expect_closing(r, 1, "end of list-of-results")?;
        }
        Ok(ReadAccessResult { object, results })
    }
}

/// A ReadPropertyMultiple acknowledgement.
///
/// ```text
/// ReadPropertyMultiple-ACK ::= SEQUENCE {
///     list-of-read-access-results SEQUENCE OF ReadAccessResult
/// }
/// ```
///
/// An empty body decodes as an empty list.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadPropertyMultipleAck(pub Vec<ReadAccessResult>);

impl ServiceCodec for ReadPropertyMultipleAck {
    fn encode(&self, out: &mut Vec<u8>) {
        for result in &self.0 {
            result.encode(out);
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut results = Vec::new();
        while !r.is_empty() {
            results.push(ReadAccessResult::decode_from(r)?);
        }
        Ok(ReadPropertyMultipleAck(results))
    }
}
