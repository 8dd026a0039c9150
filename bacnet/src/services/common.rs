//! Productions shared by several services: property references and
//! `BACnetPropertyValue`.

use super::ServiceCodec;
use crate::codec::{
    Reader, expect_closing, expect_opening, read_ctx, read_opt_ctx, write_constructed, write_ctx, write_opt_ctx,
};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;

/// `BACnetPropertyReference ::= SEQUENCE { property-identifier [0], property-array-index [1] Unsigned OPTIONAL }`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertyReference {
    /// The property.
    pub property: PropertyIdentifier,
    /// An array index (0 = the array's length), or the whole property.
    pub array_index: Option<u32>,
}

impl PropertyReference {
    /// A reference to the whole property.
    pub fn new(property: PropertyIdentifier) -> Self {
        PropertyReference { property, array_index: None }
    }
}

impl ServiceCodec for PropertyReference {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.property);
        write_opt_ctx(out, 1, &self.array_index);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(PropertyReference {
            property: read_ctx(r, 0, "property-identifier")?,
            array_index: read_opt_ctx(r, 1, "property-array-index")?,
        })
    }
}

/// ```text
/// BACnetPropertyValue ::= SEQUENCE {
///     property-identifier [0] BACnetPropertyIdentifier,
///     property-array-index [1] Unsigned OPTIONAL,
///     property-value [2] ABSTRACT-SYNTAX.&Type,
///     priority [3] Unsigned (1..16) OPTIONAL }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyValue {
    /// The property.
    pub property: PropertyIdentifier,
    /// An array index, or the whole property.
    pub array_index: Option<u32>,
    /// The value.
    pub value: AnyValue,
    /// The command priority (1..=16), for writes to commandable properties.
    pub priority: Option<u8>,
}

impl ServiceCodec for PropertyValue {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.property);
        write_opt_ctx(out, 1, &self.array_index);
        write_constructed(out, 2, |o| self.value.encode(o));
        write_opt_ctx(out, 3, &self.priority);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let property = read_ctx(r, 0, "property-identifier")?;
        let array_index = read_opt_ctx(r, 1, "property-array-index")?;
        expect_opening(r, 2, "property-value")?;
        let value = AnyValue::decode(r)?;
        expect_closing(r, 2, "end of property-value")?;
        let at = r.position();
        let priority = read_opt_ctx::<u8>(r, 3, "priority")?;
        check_priority(priority, at)?;
        Ok(PropertyValue { property, array_index, value, priority })
    }
}

/// Reject a command priority outside 1..=16.
pub fn check_priority(p: Option<u8>, at: usize) -> Result<(), DecodeError> {
    match p {
        Some(1..=16) | None => Ok(()),
        Some(_) => Err(DecodeError::OutOfRange { at, what: "priority (1..16)" }),
    }
}

// ---------------------------------------------------------------------------
// BACnetObjectPropertyReference, and field readers that name the field in
// every error (service group A: who-is … write-property-multiple).
// ---------------------------------------------------------------------------

use crate::codec::tag::{self, TagClass, TagKind};
use crate::codec::{ObjectIdentifier, Primitive, read_app};

/// ```text
/// BACnetObjectPropertyReference ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     property-identifier [1] BACnetPropertyIdentifier,
///     property-array-index [2] Unsigned OPTIONAL -- used only with array datatype
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectPropertyReference {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// An array index (0 = the array's length), or the whole property.
    pub array_index: Option<u32>,
}

impl ServiceCodec for ObjectPropertyReference {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ObjectPropertyReference {
            object: ctx_field(r, 0, "object-identifier")?,
            property: ctx_field(r, 1, "property-identifier")?,
            array_index: opt_ctx_field(r, 2, "property-array-index")?,
        })
    }
}

/// The same error with `what` replaced by the name of the field being read,
/// so a content error ("an Unsigned16") reads as the field ("vendor-id").
pub(crate) fn name_field(e: DecodeError, what: &'static str) -> DecodeError {
    use DecodeError::*;
    match e {
        Truncated { at, .. } => Truncated { at, what },
        InvalidTag { at, .. } => InvalidTag { at, what },
        WrongDataType { at, .. } => WrongDataType { at, what },
        OutOfRange { at, .. } => OutOfRange { at, what },
        other => other,
    }
}

/// [`read_app`] with the field's name in every error.
pub(crate) fn app_field<T: Primitive>(r: &mut Reader<'_>, what: &'static str) -> Result<T, DecodeError> {
    read_app(r, what).map_err(|e| name_field(e, what))
}

/// [`read_ctx`] for a required field, with the field's name in every error.
///
/// When another tag stands where the field belongs, the error tells a
/// missing field (`Truncated`, missing-required-parameter) from a misplaced
/// one (`InvalidTag`, invalid-tag) with [`absent_from_sequence`].
pub(crate) fn ctx_field<T: Primitive>(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<T, DecodeError> {
    let start = r.clone();
    read_ctx(r, n, what).map_err(|e| match e {
        DecodeError::InvalidTag { at, .. } if at == start.position() && absent_from_sequence(&start, n) => {
            DecodeError::Truncated { at, what }
        }
        other => name_field(other, what),
    })
}

/// [`expect_opening`] for a required constructed field, telling a missing
/// field from a misplaced one as [`ctx_field`] does.
pub(crate) fn opening_field(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<(), DecodeError> {
    let start = r.clone();
    expect_opening(r, n, what).map_err(|e| match e {
        DecodeError::InvalidTag { at, .. } if absent_from_sequence(&start, n) => DecodeError::Truncated { at, what },
        other => other,
    })
}

/// Decide, after a required context tag `n` was not found at `r`, whether it
/// is missing (true) or misplaced (false).
///
/// It is missing when the tag in its place is a closing tag (the enclosing
/// sequence ended) or a context tag numbered above `n` (a later field), and
/// no context tag `n` (primitive or opening) follows at this nesting level before the
/// enclosing sequence ends. An application tag, a lower context number, a
/// malformed tag, or a tag `n` further on is a misplaced field: the Reject
/// reason for those is invalid-tag. Only called on the error path; it reads
/// each remaining octet at most once and does not recurse.
fn absent_from_sequence(r: &Reader<'_>, n: u8) -> bool {
    let mut probe = r.clone();
    let mut depth = 0usize;
    let mut first = true;
    loop {
        if probe.is_empty() {
            return true;
        }
        let Ok(t) = tag::read_tag(&mut probe) else { return false };
        if first {
            first = false;
            let later_field = t.class == TagClass::Context && t.number > n;
            if t.kind != TagKind::Closing && !later_field {
                return false;
            }
        }
        if depth == 0 && t.is_context(n) && t.kind != TagKind::Closing {
            return false;
        }
        match t.kind {
            TagKind::Opening => depth += 1,
            TagKind::Closing if depth == 0 => return true,
            TagKind::Closing => depth -= 1,
            TagKind::Primitive(_) => {
                if probe.take(t.content_len(), "tag content").is_err() {
                    return false;
                }
            }
        }
    }
}

/// [`read_opt_ctx`] with the field's name in every error.
pub(crate) fn opt_ctx_field<T: Primitive>(
    r: &mut Reader<'_>,
    n: u8,
    what: &'static str,
) -> Result<Option<T>, DecodeError> {
    read_opt_ctx(r, n, what).map_err(|e| name_field(e, what))
}

impl core::fmt::Display for ObjectPropertyReference {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} {}", self.object, self.property)?;
        if let Some(i) = self.array_index {
            write!(f, "[{i}]")?;
        }
        Ok(())
    }
}
