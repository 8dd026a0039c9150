//! WriteProperty (Clause 15.9): write one property of one object.

use super::ServiceCodec;
use super::common::{check_priority, ctx_field, opening_field, opt_ctx_field};
use crate::codec::{ObjectIdentifier, Reader, expect_closing, write_constructed, write_ctx, write_opt_ctx};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;

/// A WriteProperty request.
///
/// ```text
/// WriteProperty-Request ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     property-identifier [1] BACnetPropertyIdentifier,
///     property-array-index [2] Unsigned OPTIONAL, -- used only with array datatypes
///                                                 -- if omitted with an array the entire
///                                                 -- array is referenced
///     property-value [3] ABSTRACT-SYNTAX.&Type,
///     priority [4] Unsigned (1..16) OPTIONAL -- used only when property is commandable
/// }
/// ```
///
/// Decoding: a priority outside 1..=16 is `OutOfRange`
/// (parameter-out-of-range). Whether the value suits the property is the
/// server's question, answered with an Error PDU, not a Reject.
#[derive(Debug, Clone, PartialEq)]
pub struct WritePropertyRequest {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// An array index, or the whole property.
    pub array_index: Option<u32>,
    /// The value to write.
    pub value: AnyValue,
    /// The command priority (1..=16), for commandable properties.
    pub priority: Option<u8>,
}

impl ServiceCodec for WritePropertyRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
        write_constructed(out, 3, |o| self.value.encode(o));
        write_opt_ctx(out, 4, &self.priority);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let property = ctx_field(r, 1, "property-identifier")?;
        let array_index = opt_ctx_field(r, 2, "property-array-index")?;
        opening_field(r, 3, "property-value")?;
        let value = AnyValue::decode(r)?;
        expect_closing(r, 3, "end of property-value")?;
        let at = r.position();
        let priority = opt_ctx_field::<u8>(r, 4, "priority (1..16)")?;
        check_priority(priority, at)?;
        Ok(WritePropertyRequest { object, property, array_index, value, priority })
    }
}
