//! CreateObject (Clause 15.3) and DeleteObject (15.4): a client adds an
//! object, by type or by identifier, with initial values, or removes one.

use super::ServiceCodec;
use super::common::{PropertyValue, app_field, ctx_field, opening_field};
use super::error::BacnetError;
use crate::codec::{
    ObjectIdentifier, Reader, expect_closing, expect_opening, next_is_closing, next_is_opening, next_is_primitive_ctx,
    read_ctx, write_app, write_constructed, write_ctx,
};
use crate::enums::ObjectType;
use crate::error::DecodeError;
use alloc::vec::Vec;

/// What a CreateObject asks for: an object of a type (the device picks
/// the instance) or a given identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectSpecifier {
    /// `object-type [0]`.
    Type(ObjectType),
    /// `object-identifier [1]`.
    Identifier(ObjectIdentifier),
}

/// A CreateObject request; the answer is a CreateObject-ACK (the new
/// object's identifier) or a [`CreateObjectError`].
///
/// ```text
/// CreateObject-Request ::= SEQUENCE {
///     object-specifier [0] CHOICE {
///         object-type [0] BACnetObjectType,
///         object-identifier [1] BACnetObjectIdentifier },
///     list-of-initial-values [1] SEQUENCE OF BACnetPropertyValue OPTIONAL
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CreateObjectRequest {
    /// By type or by identifier.
    pub object: ObjectSpecifier,
    /// Initial values, written in order; empty when the list is absent.
    pub initial_values: Vec<PropertyValue>,
}

impl ServiceCodec for CreateObjectRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| match self.object {
            ObjectSpecifier::Type(t) => write_ctx(o, 0, &t),
            ObjectSpecifier::Identifier(id) => write_ctx(o, 1, &id),
        });
        if !self.initial_values.is_empty() {
            write_constructed(out, 1, |o| self.initial_values.iter().for_each(|v| v.encode(o)));
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "object-specifier")?;
        let object = if next_is_primitive_ctx(r, 0) {
            ObjectSpecifier::Type(read_ctx(r, 0, "object-type")?)
        } else {
            ObjectSpecifier::Identifier(ctx_field(r, 1, "object-type or object-identifier")?)
        };
        expect_closing(r, 0, "end of object-specifier")?;
        let mut initial_values = Vec::new();
        if next_is_opening(r, 1) {
            expect_opening(r, 1, "list-of-initial-values")?;
            while !next_is_closing(r, 1) {
                if r.is_empty() {
                    return Err(DecodeError::Truncated { at: r.position(), what: "end of list-of-initial-values" });
                }
                initial_values.push(PropertyValue::decode_from(r)?);
            }
            expect_closing(r, 1, "end of list-of-initial-values")?;
        }
        Ok(CreateObjectRequest { object, initial_values })
    }
}

/// `CreateObject-ACK ::= BACnetObjectIdentifier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreateObjectAck(pub ObjectIdentifier);

impl ServiceCodec for CreateObjectAck {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.0);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(CreateObjectAck(app_field(r, "object-identifier")?))
    }
}

/// The body of the Error PDU a failed CreateObject is answered with.
///
/// ```text
/// CreateObject-Error ::= SEQUENCE {
///     error-type [0] Error,
///     first-failed-element-number [1] Unsigned
/// }
/// ```
/// `first_failed` is the position (from 1) of the initial value that was
/// refused, or 0 when the refusal is not about an initial value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreateObjectError {
    /// Why.
    pub error: BacnetError,
    /// Which initial value, from 1; 0 for none.
    pub first_failed: u32,
}

impl ServiceCodec for CreateObjectError {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| self.error.encode(o));
        write_ctx(out, 1, &self.first_failed);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "error-type")?;
        let error = BacnetError::decode_from(r)?;
        expect_closing(r, 0, "end of error-type")?;
        Ok(CreateObjectError { error, first_failed: ctx_field(r, 1, "first-failed-element-number")? })
    }
}

/// `DeleteObject-Request ::= SEQUENCE { object-identifier BACnetObjectIdentifier }`;
/// the answer is a SimpleACK or an Error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeleteObjectRequest(pub ObjectIdentifier);

impl ServiceCodec for DeleteObjectRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.0);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(DeleteObjectRequest(app_field(r, "object-identifier")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
    use crate::value::Value;
    use alloc::vec;

    fn round_trip<T: ServiceCodec + PartialEq + core::fmt::Debug>(v: T, octets: &[u8]) {
        assert_eq!(v.to_vec(), octets, "{v:?}");
        assert_eq!(T::decode(octets).unwrap(), v);
    }

    #[test]
    fn create_by_type_with_a_name_and_by_identifier_without_values() {
        let by_type = CreateObjectRequest {
            object: ObjectSpecifier::Type(ObjectType::ANALOG_VALUE),
            initial_values: vec![PropertyValue {
                property: P::OBJECT_NAME,
                array_index: None,
                value: Value::CharacterString(crate::CharacterString::utf8("av")).into(),
                priority: None,
            }],
        };
        round_trip(by_type, &[0x0e, 0x09, 0x02, 0x0f, 0x1e, 0x09, 0x4d, 0x2e, 0x73, 0x00, b'a', b'v', 0x2f, 0x1f]);
        let by_id = CreateObjectRequest {
            object: ObjectSpecifier::Identifier(ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 7).unwrap()),
            initial_values: vec![],
        };
        round_trip(by_id, &[0x0e, 0x1c, 0x00, 0x80, 0x00, 0x07, 0x0f]);
        assert!(CreateObjectRequest::decode(&[0x0e, 0x09, 0x02, 0x0f, 0x1e, 0x09, 0x4d]).is_err(), "unterminated list");
    }

    #[test]
    fn the_ack_the_error_and_delete() {
        let av7 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 7).unwrap();
        round_trip(CreateObjectAck(av7), &[0xc4, 0x00, 0x80, 0x00, 0x07]);
        let error = CreateObjectError {
            error: BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::WRITE_ACCESS_DENIED },
            first_failed: 2,
        };
        round_trip(error, &[0x0e, 0x91, 0x02, 0x91, 0x28, 0x0f, 0x19, 0x02]);
        round_trip(DeleteObjectRequest(av7), &[0xc4, 0x00, 0x80, 0x00, 0x07]);
    }
}
