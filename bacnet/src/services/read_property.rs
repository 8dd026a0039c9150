//! ReadProperty (Clause 15.5): read one property of one object.

use super::ServiceCodec;
use super::common::{ctx_field, opening_field, opt_ctx_field};
use crate::codec::{ObjectIdentifier, Reader, expect_closing, write_constructed, write_ctx, write_opt_ctx};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;

/// A ReadProperty request.
///
/// ```text
/// ReadProperty-Request ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     property-identifier [1] BACnetPropertyIdentifier,
///     property-array-index [2] Unsigned OPTIONAL -- used only with array datatype
///                                                -- if omitted with an array the entire array is referenced
/// }
/// ```
///
/// Decoding: a missing parameter is `Truncated` (missing-required-parameter),
/// a context tag other than the one the production expects next is
/// `InvalidTag` (invalid-tag), an array index above 2^32-1 is `OutOfRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadPropertyRequest {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// An array index (0 = the array's length), or the whole property.
    pub array_index: Option<u32>,
}

impl ServiceCodec for ReadPropertyRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ReadPropertyRequest {
            object: ctx_field(r, 0, "object-identifier")?,
            property: ctx_field(r, 1, "property-identifier")?,
            array_index: opt_ctx_field(r, 2, "property-array-index")?,
        })
    }
}

/// A ReadProperty acknowledgement.
///
/// ```text
/// ReadProperty-ACK ::= SEQUENCE {
///     object-identifier [0] BACnetObjectIdentifier,
///     property-identifier [1] BACnetPropertyIdentifier,
///     property-array-index [2] Unsigned OPTIONAL, -- used only with array datatype
///                                                 -- if omitted with an array the entire
///                                                 -- array is referenced
///     property-value [3] ABSTRACT-SYNTAX.&Type
/// }
/// ```
///
/// The value is kept as the generic [`AnyValue`]: its datatype depends on the
/// object type and property, which this layer does not interpret.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadPropertyAck {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// The array index read, or the whole property.
    pub array_index: Option<u32>,
    /// The value.
    pub value: AnyValue,
}

impl ReadPropertyAck {
    /// Append an acknowledgement's octets up to and including the opening
    /// tag of its value, for a value that arrives already encoded (a
    /// plugin's `read-encoded` answer): append the value's octets next,
    /// then [`ReadPropertyAck::encode_tail`]. The result is what
    /// [`ServiceCodec::encode`] writes for the same fields.
    pub fn encode_head(
        out: &mut Vec<u8>,
        object: ObjectIdentifier,
        property: PropertyIdentifier,
        array_index: Option<u32>,
    ) {
        write_ctx(out, 0, &object);
        write_ctx(out, 1, &property);
        write_opt_ctx(out, 2, &array_index);
        crate::codec::tag::write_opening(out, 3);
    }

    /// Close what [`ReadPropertyAck::encode_head`] opened.
    pub fn encode_tail(out: &mut Vec<u8>) {
        crate::codec::tag::write_closing(out, 3);
    }
}

impl ServiceCodec for ReadPropertyAck {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
        write_constructed(out, 3, |o| self.value.encode(o));
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let property = ctx_field(r, 1, "property-identifier")?;
        let array_index = opt_ctx_field(r, 2, "property-array-index")?;
        opening_field(r, 3, "property-value")?;
        let value = AnyValue::decode(r)?;
        expect_closing(r, 3, "end of property-value")?;
        Ok(ReadPropertyAck { object, property, array_index, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ObjectType, Value};

    #[test]
    fn an_ack_built_around_encoded_octets_is_the_ack_encoded_whole() {
        let object = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 7 };
        for array_index in [None, Some(3)] {
            let value = AnyValue::from(Value::Real(12.5));
            let whole =
                ReadPropertyAck { object, property: PropertyIdentifier::PRESENT_VALUE, array_index, value }.to_vec();
            let mut built = Vec::new();
            ReadPropertyAck::encode_head(&mut built, object, PropertyIdentifier::PRESENT_VALUE, array_index);
            Value::Real(12.5).encode(&mut built);
            ReadPropertyAck::encode_tail(&mut built);
            assert_eq!(built, whole);
        }
    }
}
