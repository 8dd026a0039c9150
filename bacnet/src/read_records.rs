//! Read results as flat records: the format an object model answers reads
//! in through `trellis:bacnet/object-model@0.2.0`'s `read-encoded`.
//!
//! One buffer answers a whole list of targets. Per target, in request
//! order: a `u32` count of its results, then that many results (one, or
//! one per property for ALL/REQUIRED/OPTIONAL). Per result:
//!
//! ```text
//! u16 object type, u32 instance, u32 property,
//! u32 array index (0xFFFF_FFFF: none),
//! u8 kind: 0 value, then u32 length and the value's application-tagged
//!            encoding (what lies between a ReadProperty-ACK's opening and
//!            closing tags [3]);
//!          1 error, then u32 error class and u32 error code.
//! ```
//!
//! Every integer is little-endian. The format exists so that a read crosses
//! the plugin boundary as one `list<u8>` the host lifts with one allocation
//! and copies straight into the answer, instead of nested lists of WIT
//! values it must convert.
//!
//! [`ReadRecords`] parses it from untrusted bytes (a plugin's answer): every
//! length is checked against the buffer, every value with
//! [`check_encoded`], every identifier against its range, and nothing is
//! allocated. Must never: panic, read past the buffer, or hand out a value
//! that [`AnyValue::from_bytes`](crate::AnyValue::from_bytes) would refuse.

use crate::codec::ObjectIdentifier;
use crate::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier};
use crate::error::DecodeError;
use crate::services::BacnetError;
use crate::value::{AnyValue, check_encoded};
use alloc::vec::Vec;

/// `array index` when the whole property was read.
pub const NO_INDEX: u32 = u32::MAX;
const KIND_VALUE: u8 = 0;
const KIND_ERROR: u8 = 1;
/// The smallest result: an empty value (the header and its length).
const MIN_RESULT: usize = HEADER + 4;
/// Object type, instance, property, array index, kind.
const HEADER: usize = 2 + 4 + 4 + 4 + 1;

/// Append the count of results the next target has.
pub fn write_count(out: &mut Vec<u8>, count: u32) {
    out.extend_from_slice(&count.to_le_bytes());
}

/// Append one result: the property read and its value or error.
pub fn write_result(
    out: &mut Vec<u8>,
    object: ObjectIdentifier,
    property: PropertyIdentifier,
    array_index: Option<u32>,
    outcome: Result<&AnyValue, &BacnetError>,
) {
    out.extend_from_slice(&(object.object_type.0 as u16).to_le_bytes());
    out.extend_from_slice(&object.instance.to_le_bytes());
    out.extend_from_slice(&property.0.to_le_bytes());
    out.extend_from_slice(&array_index.unwrap_or(NO_INDEX).to_le_bytes());
    match outcome {
        Ok(value) => {
            out.push(KIND_VALUE);
            let len_at = out.len();
            out.extend_from_slice(&[0; 4]);
            value.encode(out);
            let len = (out.len() - len_at - 4) as u32;
            out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
        }
        Err(e) => {
            out.push(KIND_ERROR);
            out.extend_from_slice(&e.class.0.to_le_bytes());
            out.extend_from_slice(&e.code.0.to_le_bytes());
        }
    }
}

/// One result, borrowed from the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRecord<'a> {
    /// The object read.
    pub object: ObjectIdentifier,
    /// The property read.
    pub property: PropertyIdentifier,
    /// The array element read, or the whole property.
    pub array_index: Option<u32>,
    /// The value's application-tagged encoding (checked well-formed), or the
    /// BACnet Error the read was answered with.
    pub outcome: Result<&'a [u8], BacnetError>,
}

/// A parser over a buffer of records; see the module documentation.
#[derive(Debug, Clone)]
pub struct ReadRecords<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> ReadRecords<'a> {
    /// Parse `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        ReadRecords { buf, at: 0 }
    }

    /// The count of results of the next target. A count that the rest of the
    /// buffer cannot hold is refused here, before any result is read.
    pub fn count(&mut self) -> Result<u32, DecodeError> {
        let at = self.at;
        let n = self.u32("a target's result count")?;
        if (n as usize).saturating_mul(MIN_RESULT) > self.buf.len() - self.at {
            return Err(DecodeError::OutOfRange { at, what: "a result count the records can hold" });
        }
        Ok(n)
    }

    /// The next result.
    pub fn result(&mut self) -> Result<ReadRecord<'a>, DecodeError> {
        let type_at = self.at;
        let object_type = self.take::<2>("an object type").map(u16::from_le_bytes)?;
        let instance_at = self.at;
        let instance = self.u32("an instance")?;
        if u32::from(object_type) > ObjectIdentifier::MAX_TYPE {
            return Err(DecodeError::OutOfRange { at: type_at, what: "object type (0..=1023)" });
        }
        if instance > ObjectIdentifier::MAX_INSTANCE {
            return Err(DecodeError::OutOfRange { at: instance_at, what: "instance (0..=4194303)" });
        }
        let property = PropertyIdentifier(self.u32("a property identifier")?);
        let array_index = match self.u32("an array index")? {
            NO_INDEX => None,
            i => Some(i),
        };
        let kind_at = self.at;
        let outcome = match self.take::<1>("a result kind")?[0] {
            KIND_VALUE => {
                let len = self.u32("a value length")? as usize;
                let value_at = self.at;
                let value = self
                    .buf
                    .get(value_at..)
                    .and_then(|rest| rest.get(..len))
                    .ok_or(DecodeError::Truncated { at: self.buf.len(), what: "a value of the length given" })?;
                check_encoded(value).map_err(|e| e.offset_by(value_at))?;
                self.at += len;
                Ok(value)
            }
            KIND_ERROR => {
                let class = ErrorClass(self.u32("an error class")?);
                let code = ErrorCode(self.u32("an error code")?);
                Err(BacnetError { class, code })
            }
            _ => return Err(DecodeError::OutOfRange { at: kind_at, what: "a result kind (0 value, 1 error)" }),
        };
        let object = ObjectIdentifier { object_type: ObjectType(u32::from(object_type)), instance };
        Ok(ReadRecord { object, property, array_index, outcome })
    }

    /// Refuse octets after the last record.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.at == self.buf.len() { Ok(()) } else { Err(DecodeError::TrailingData { at: self.at }) }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.take::<4>(what).map(u32::from_le_bytes)
    }

    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.buf.get(self.at..self.at + N).ok_or(DecodeError::Truncated { at: self.buf.len(), what })?;
        self.at += N;
        Ok(bytes.try_into().unwrap_or([0; N]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    fn av(instance: u32) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance }
    }

    const UNKNOWN_OBJECT: BacnetError = BacnetError { class: ErrorClass::OBJECT, code: ErrorCode::UNKNOWN_OBJECT };

    #[test]
    fn records_written_are_the_records_read() {
        let mut out = Vec::new();
        write_count(&mut out, 1);
        write_result(&mut out, av(1), PropertyIdentifier::PRESENT_VALUE, None, Ok(&Value::Real(21.5).into()));
        write_count(&mut out, 1);
        write_result(&mut out, av(9), PropertyIdentifier::PRESENT_VALUE, Some(3), Err(&UNKNOWN_OBJECT));

        let mut r = ReadRecords::new(&out);
        assert_eq!(r.count(), Ok(1));
        let first = r.result().unwrap();
        assert_eq!((first.object, first.property, first.array_index), (av(1), PropertyIdentifier::PRESENT_VALUE, None));
        assert_eq!(first.outcome, Ok(&[0x44, 0x41, 0xAC, 0x00, 0x00][..]));
        assert_eq!(r.count(), Ok(1));
        let second = r.result().unwrap();
        assert_eq!((second.object, second.array_index, second.outcome), (av(9), Some(3), Err(UNKNOWN_OBJECT)));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn a_value_that_does_not_decode_is_refused_where_it_starts() {
        let mut out = Vec::new();
        write_count(&mut out, 1);
        write_result(&mut out, av(1), PropertyIdentifier::PRESENT_VALUE, None, Ok(&AnyValue::default()));
        // The value's length says 2 and the octets are a REAL's tag cut short.
        let len_at = out.len() - 4;
        out[len_at..].copy_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&[0x44, 0x41]);
        let mut r = ReadRecords::new(&out);
        r.count().unwrap();
        let err = r.result().unwrap_err();
        assert!(matches!(err, DecodeError::Truncated { at, .. } if at >= len_at + 4), "{err:?}");
    }

    #[test]
    fn lengths_and_counts_beyond_the_buffer_are_refused() {
        let mut out = Vec::new();
        write_count(&mut out, 1000);
        assert!(matches!(ReadRecords::new(&out).count(), Err(DecodeError::OutOfRange { at: 0, .. })));

        let mut out = Vec::new();
        write_result(&mut out, av(1), PropertyIdentifier::PRESENT_VALUE, None, Ok(&Value::Null.into()));
        let len_at = out.len() - 5;
        out[len_at..len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(ReadRecords::new(&out).result(), Err(DecodeError::Truncated { .. })));
    }

    #[test]
    fn identifiers_out_of_range_and_unknown_kinds_are_refused() {
        let mut out = Vec::new();
        write_result(&mut out, av(1), PropertyIdentifier::PRESENT_VALUE, None, Err(&UNKNOWN_OBJECT));
        let mut bad_instance = out.clone();
        bad_instance[2..6].copy_from_slice(&0x40_0000u32.to_le_bytes());
        assert!(matches!(ReadRecords::new(&bad_instance).result(), Err(DecodeError::OutOfRange { at: 2, .. })));
        let mut bad_type = out.clone();
        bad_type[0..2].copy_from_slice(&1024u16.to_le_bytes());
        assert!(matches!(ReadRecords::new(&bad_type).result(), Err(DecodeError::OutOfRange { at: 0, .. })));
        let mut bad_kind = out;
        bad_kind[HEADER - 1] = 7;
        assert!(matches!(ReadRecords::new(&bad_kind).result(), Err(DecodeError::OutOfRange { .. })));
    }
}
