//! BACnet values ↔ OPC UA Variants, and BACnet errors → OPC UA status codes.
//!
//! A variable's DataType is fixed when its node is made, from the first
//! value seen ([`Kind::of`]); every later value is converted to that kind
//! (a plugin that starts answering Double for a Real still reads as Float).
//! Follows OPC 30030: a binary Present_Value is a Boolean, Status_Flags an
//! option set whose bit *n* is BACnet's bit *n* (in-alarm, fault,
//! overridden, out-of-service), an Object_Identifier the packed UInt32.
//!
//! Must never: panic on any value, or turn a value it cannot represent into
//! a plausible-looking one (that is `None` / a Bad status).

use crate::source::PointFault;
use bacnet::Value;
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::{AnyValue, CharacterString, ObjectIdentifier};
use opcua::types::{DataTypeId, StatusCode, UAString, Variant};

/// What a variable holds, fixed at its creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// REAL → Float.
    Float,
    /// Double → Double.
    Double,
    /// BOOLEAN → Boolean.
    Boolean,
    /// BACnetBinaryPV (inactive/active) → Boolean.
    BinaryPv,
    /// Unsigned → UInt32.
    UInt32,
    /// Enumerated (other than a binary Present_Value) → UInt32, written
    /// back as Enumerated.
    Enumerated,
    /// Unsigned beyond 32 bits → UInt64.
    UInt64,
    /// Signed → Int32.
    Int32,
    /// Signed beyond 32 bits → Int64.
    Int64,
    /// CharacterString → String.
    String,
    /// BIT STRING of up to 32 bits → UInt32, bit *n* = BACnet bit *n*.
    Bits,
    /// BACnetObjectIdentifier → UInt32 (type << 22 | instance).
    ObjectId,
    /// OCTET STRING → ByteString.
    Bytes,
}

fn is_binary(t: ObjectType) -> bool {
    matches!(t, ObjectType::BINARY_INPUT | ObjectType::BINARY_OUTPUT | ObjectType::BINARY_VALUE)
}

impl Kind {
    /// The kind for `property` of an object of type `object`, from a value
    /// it has; `None` for values not shown (lists, constructed values).
    pub fn of(object: ObjectType, property: P, value: &AnyValue) -> Option<Kind> {
        let v = value.as_primitive()?;
        Some(match v {
            Value::Enumerated(_) if property == P::PRESENT_VALUE && is_binary(object) => Kind::BinaryPv,
            Value::Real(_) => Kind::Float,
            Value::Double(_) => Kind::Double,
            Value::Boolean(_) => Kind::Boolean,
            Value::Unsigned(u) if *u > u64::from(u32::MAX) => Kind::UInt64,
            Value::Unsigned(_) => Kind::UInt32,
            Value::Enumerated(_) => Kind::Enumerated,
            Value::Signed(i) if i32::try_from(*i).is_err() => Kind::Int64,
            Value::Signed(_) => Kind::Int32,
            Value::CharacterString(_) => Kind::String,
            Value::BitString(b) if b.len() <= 32 => Kind::Bits,
            Value::ObjectIdentifier(_) => Kind::ObjectId,
            Value::OctetString(_) => Kind::Bytes,
            Value::Null | Value::BitString(_) | Value::Date(_) | Value::Time(_) => return None,
        })
    }

    /// The OPC UA DataType of this kind.
    pub fn data_type(self) -> DataTypeId {
        match self {
            Kind::Float => DataTypeId::Float,
            Kind::Double => DataTypeId::Double,
            Kind::Boolean | Kind::BinaryPv => DataTypeId::Boolean,
            Kind::UInt32 | Kind::Enumerated | Kind::Bits | Kind::ObjectId => DataTypeId::UInt32,
            Kind::UInt64 => DataTypeId::UInt64,
            Kind::Int32 => DataTypeId::Int32,
            Kind::Int64 => DataTypeId::Int64,
            Kind::String => DataTypeId::String,
            Kind::Bytes => DataTypeId::ByteString,
        }
    }

    /// `value` as a Variant of this kind: `Ok(Empty)` for Null (a
    /// relinquished value with nothing below it), `Err` if it cannot be one.
    pub fn variant(self, value: &AnyValue) -> Result<Variant, StatusCode> {
        let v = value.as_primitive().ok_or(StatusCode::BadTypeMismatch)?;
        let number = v.as_f64();
        let mismatch = StatusCode::BadTypeMismatch;
        Ok(match (self, v) {
            (_, Value::Null) => Variant::Empty,
            (Kind::Float, _) => Variant::Float(number.ok_or(mismatch)? as f32),
            (Kind::Double, _) => Variant::Double(number.ok_or(mismatch)?),
            (Kind::Boolean | Kind::BinaryPv, Value::Boolean(b)) => Variant::Boolean(*b),
            (Kind::Boolean | Kind::BinaryPv, Value::Enumerated(e)) if *e <= 1 => Variant::Boolean(*e == 1),
            (Kind::UInt32, Value::Unsigned(u)) => Variant::UInt32(u32::try_from(*u).map_err(|_| mismatch)?),
            (Kind::UInt32 | Kind::Enumerated, Value::Enumerated(e)) => Variant::UInt32(*e),
            (Kind::Enumerated, Value::Unsigned(u)) => Variant::UInt32(u32::try_from(*u).map_err(|_| mismatch)?),
            (Kind::UInt64, Value::Unsigned(u)) => Variant::UInt64(*u),
            (Kind::Int32, Value::Signed(i)) => Variant::Int32(i32::try_from(*i).map_err(|_| mismatch)?),
            (Kind::Int64, Value::Signed(i)) => Variant::Int64(*i),
            (Kind::String, Value::CharacterString(s)) => {
                Variant::String(UAString::from(s.to_text().map_err(|_| StatusCode::BadDataEncodingUnsupported)?))
            }
            (Kind::Bits, Value::BitString(b)) if b.len() <= 32 => {
                Variant::UInt32(b.iter().enumerate().fold(0u32, |acc, (i, bit)| acc | (u32::from(bit) << i)))
            }
            (Kind::ObjectId, Value::ObjectIdentifier(o)) => Variant::UInt32(o.to_u32()),
            (Kind::Bytes, Value::OctetString(o)) => Variant::ByteString(o.clone().into()),
            _ => return Err(mismatch),
        })
    }

    /// The BACnet value a client's `variant` writes. The Variant must be of
    /// the variable's DataType (Part 4, Write: Bad_TypeMismatch otherwise;
    /// none of these types has a subtype with another encoding), so an
    /// Int32 or a Double written to a Float is refused, not converted.
    /// `Empty` relinquishes the client's priority (Null): the one
    /// exception, OPC 30030's way to relinquish a commandable value.
    pub fn bacnet(self, variant: &Variant) -> Result<Value, StatusCode> {
        Ok(match (self, variant) {
            (_, Variant::Empty) => Value::Null,
            (Kind::Float, Variant::Float(x)) => Value::Real(*x),
            (Kind::Double, Variant::Double(x)) => Value::Double(*x),
            (Kind::Boolean, Variant::Boolean(b)) => Value::Boolean(*b),
            (Kind::BinaryPv, Variant::Boolean(b)) => Value::Enumerated(u32::from(*b)),
            (Kind::UInt32, Variant::UInt32(x)) => Value::Unsigned(u64::from(*x)),
            (Kind::Enumerated, Variant::UInt32(x)) => Value::Enumerated(*x),
            (Kind::UInt64, Variant::UInt64(x)) => Value::Unsigned(*x),
            (Kind::Int32, Variant::Int32(x)) => Value::Signed(i64::from(*x)),
            (Kind::Int64, Variant::Int64(x)) => Value::Signed(*x),
            (Kind::String, Variant::String(s)) => Value::CharacterString(CharacterString::utf8(s.as_ref())),
            (Kind::ObjectId, Variant::UInt32(n)) => Value::ObjectIdentifier(ObjectIdentifier::from_u32(*n)),
            (Kind::Bits | Kind::Bytes, _) => return Err(StatusCode::BadNotWritable),
            _ => return Err(StatusCode::BadTypeMismatch),
        })
    }
}

/// A numeric Variant's value (any integer or float type; not Boolean).
pub fn numeric(v: &Variant) -> Option<f64> {
    Some(match v {
        Variant::SByte(x) => f64::from(*x),
        Variant::Byte(x) => f64::from(*x),
        Variant::Int16(x) => f64::from(*x),
        Variant::UInt16(x) => f64::from(*x),
        Variant::Int32(x) => f64::from(*x),
        Variant::UInt32(x) => f64::from(*x),
        Variant::Int64(x) => *x as f64,
        Variant::UInt64(x) => *x as f64,
        Variant::Float(x) => f64::from(*x),
        Variant::Double(x) => *x,
        _ => return None,
    })
}

/// The OPC UA status code for a failed read or write of a point.
pub fn status_of(fault: &PointFault) -> StatusCode {
    match fault {
        PointFault::Bacnet(e) => match (e.class, e.code) {
            (_, ErrorCode::UNKNOWN_OBJECT | ErrorCode::UNKNOWN_PROPERTY | ErrorCode::UNKNOWN_DEVICE) => {
                StatusCode::BadNodeIdUnknown
            }
            (_, ErrorCode::WRITE_ACCESS_DENIED) => StatusCode::BadNotWritable,
            (_, ErrorCode::READ_ACCESS_DENIED) => StatusCode::BadNotReadable,
            (_, ErrorCode::VALUE_OUT_OF_RANGE) => StatusCode::BadOutOfRange,
            (_, ErrorCode::INVALID_DATA_TYPE | ErrorCode::CHARACTER_SET_NOT_SUPPORTED) => StatusCode::BadTypeMismatch,
            (_, ErrorCode::INVALID_ARRAY_INDEX | ErrorCode::PROPERTY_IS_NOT_AN_ARRAY) => {
                StatusCode::BadIndexRangeInvalid
            }
            (_, ErrorCode::DEVICE_BUSY) => StatusCode::BadResourceUnavailable,
            (_, ErrorCode::TIMEOUT) => StatusCode::BadTimeout,
            (_, ErrorCode::COMMUNICATION_DISABLED) => StatusCode::BadNoCommunication,
            (_, ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED) => StatusCode::BadNotSupported,
            (ErrorClass::SECURITY, _) | (_, ErrorCode::PASSWORD_FAILURE) => StatusCode::BadUserAccessDenied,
            (ErrorClass::RESOURCES, _) => StatusCode::BadResourceUnavailable,
            (ErrorClass::COMMUNICATION, _) => StatusCode::BadCommunicationError,
            (ErrorClass::DEVICE, _) => StatusCode::BadDeviceFailure,
            _ => StatusCode::BadUnexpectedError,
        },
        PointFault::Refused(_) => StatusCode::BadRequestNotAllowed,
        PointFault::Timeout => StatusCode::BadTimeout,
        PointFault::Unavailable(_) => StatusCode::BadNoCommunication,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::services::BacnetError;

    fn any(v: Value) -> AnyValue {
        AnyValue::primitive(v)
    }

    #[test]
    fn kinds_follow_opc_30030() {
        let bv = ObjectType::BINARY_VALUE;
        assert_eq!(Kind::of(bv, P::PRESENT_VALUE, &any(Value::Enumerated(1))), Some(Kind::BinaryPv));
        assert_eq!(Kind::BinaryPv.variant(&any(Value::Enumerated(1))), Ok(Variant::Boolean(true)));
        assert_eq!(Kind::BinaryPv.bacnet(&Variant::Boolean(false)), Ok(Value::Enumerated(0)));
        let flags = bacnet::BitString::from_bits(&[false, true, false, true]);
        let k = Kind::of(ObjectType::ANALOG_INPUT, P::STATUS_FLAGS, &any(Value::BitString(flags.clone()))).unwrap();
        assert_eq!(k.variant(&any(Value::BitString(flags))), Ok(Variant::UInt32(0b1010)), "fault + out-of-service");
        let ai = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 3 };
        assert_eq!(Kind::ObjectId.variant(&any(Value::ObjectIdentifier(ai))), Ok(Variant::UInt32(3)));
    }

    #[test]
    fn writes_take_the_variables_data_type_only() {
        assert_eq!(Kind::Float.bacnet(&Variant::Float(21.5)), Ok(Value::Real(21.5)));
        assert_eq!(
            Kind::Float.bacnet(&Variant::Float(f32::NAN)).map(|v| matches!(v, Value::Real(x) if x.is_nan())),
            Ok(true)
        );
        for refused in [Variant::Double(21.5), Variant::Int32(21), Variant::Boolean(true), Variant::String("x".into())]
        {
            assert_eq!(Kind::Float.bacnet(&refused), Err(StatusCode::BadTypeMismatch), "{refused:?} to a Float");
        }
        assert_eq!(Kind::BinaryPv.bacnet(&Variant::Boolean(true)), Ok(Value::Enumerated(1)));
        for refused in [Variant::Float(1.0), Variant::Int32(1), Variant::UInt32(0)] {
            assert_eq!(Kind::BinaryPv.bacnet(&refused), Err(StatusCode::BadTypeMismatch), "{refused:?} to a Boolean");
        }
        assert_eq!(Kind::UInt32.bacnet(&Variant::UInt32(3)), Ok(Value::Unsigned(3)));
        assert_eq!(Kind::UInt32.bacnet(&Variant::Int32(3)), Err(StatusCode::BadTypeMismatch));
        assert_eq!(Kind::UInt32.bacnet(&Variant::UInt64(3)), Err(StatusCode::BadTypeMismatch));
        let event_state = Kind::of(ObjectType::ANALOG_INPUT, P::EVENT_STATE, &any(Value::Enumerated(0)));
        assert_eq!(event_state, Some(Kind::Enumerated), "an Enumerated goes back as one");
        assert_eq!(Kind::Enumerated.bacnet(&Variant::UInt32(2)), Ok(Value::Enumerated(2)));
        assert_eq!(Kind::Enumerated.variant(&any(Value::Enumerated(2))), Ok(Variant::UInt32(2)));
        assert_eq!(Kind::Int64.bacnet(&Variant::Int64(-3)), Ok(Value::Signed(-3)));
        assert_eq!(Kind::Double.bacnet(&Variant::Float(1.5)), Err(StatusCode::BadTypeMismatch));
        assert!(Kind::ObjectId.bacnet(&Variant::UInt32((2 << 22) | 1)).is_ok());
        assert_eq!(Kind::Bits.bacnet(&Variant::UInt32(1)), Err(StatusCode::BadNotWritable));
        assert_eq!(Kind::Float.bacnet(&Variant::Empty), Ok(Value::Null), "an empty write relinquishes");
        assert_eq!(Kind::Float.variant(&any(Value::Null)), Ok(Variant::Empty));
    }

    #[test]
    fn bacnet_errors_map_to_status_codes() {
        let e = |class, code| status_of(&PointFault::Bacnet(BacnetError::new(class, code)));
        assert_eq!(e(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED), StatusCode::BadNotWritable);
        assert_eq!(e(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE), StatusCode::BadOutOfRange);
        assert_eq!(e(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT), StatusCode::BadNodeIdUnknown);
        assert_eq!(e(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE), StatusCode::BadTypeMismatch);
        assert_eq!(status_of(&PointFault::Timeout), StatusCode::BadTimeout);
    }
}
