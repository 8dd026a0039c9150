//! A [`PropertyWrite`] as octets, for the journals that keep acknowledged
//! writes across a restart (`trellis_persist`): the plugin runtime's of a
//! model's writes and the server's of its own objects'.
//!
//! ```text
//! object (u32 LE, type << 22 | instance) | property (u32 LE)
//! | array index (u32 LE, 0xFFFF_FFFF: none) | priority (u8, 0: none)
//! | value (application-tagged, Clause 20.2)
//! ```
//!
//! Must never: panic on any input (a record comes from a disk that may
//! have been damaged).

use super::{PropertyTarget, PropertyWrite};
use bacnet::{AnyValue, ObjectIdentifier, PropertyIdentifier};

const NO_INDEX: u32 = u32::MAX;
const FIXED: usize = 13;

impl PropertyWrite {
    /// Append this write as a record.
    pub fn to_record(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.target.object.to_u32().to_le_bytes());
        out.extend_from_slice(&self.target.property.0.to_le_bytes());
        out.extend_from_slice(&self.target.array_index.unwrap_or(NO_INDEX).to_le_bytes());
        out.push(self.priority.unwrap_or(0));
        self.value.encode(out);
    }

    /// A write back from [`to_record`](Self::to_record)'s octets; what is
    /// wrong with them otherwise.
    pub fn from_record(b: &[u8]) -> Result<PropertyWrite, String> {
        let (fixed, value) = b.split_at_checked(FIXED).ok_or("a write record shorter than its header")?;
        let u32_at = |i: usize| u32::from_le_bytes(fixed[i..i + 4].try_into().expect("4 octets"));
        let array_index = match u32_at(8) {
            NO_INDEX => None,
            i => Some(i),
        };
        let priority = match fixed[12] {
            0 => None,
            p @ 1..=16 => Some(p),
            p => return Err(format!("a write record with priority {p}")),
        };
        let value = AnyValue::from_bytes(value).map_err(|e| format!("a write record's value does not decode: {e}"))?;
        Ok(PropertyWrite {
            target: PropertyTarget {
                object: ObjectIdentifier::from_u32(u32_at(0)),
                property: PropertyIdentifier(u32_at(4)),
                array_index,
            },
            value,
            priority,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::{ObjectType, Value};

    #[test]
    fn a_write_comes_back_from_its_record() {
        let w = PropertyWrite {
            target: PropertyTarget {
                object: ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 4_194_302 },
                property: PropertyIdentifier::PRESENT_VALUE,
                array_index: Some(3),
            },
            value: Value::Real(36.0).into(),
            priority: Some(8),
        };
        let mut b = Vec::new();
        w.to_record(&mut b);
        assert_eq!(PropertyWrite::from_record(&b).unwrap(), w);
        let relinquish = PropertyWrite { value: Value::Null.into(), priority: None, ..w };
        b.clear();
        relinquish.to_record(&mut b);
        assert_eq!(PropertyWrite::from_record(&b).unwrap(), relinquish);
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        assert!(PropertyWrite::from_record(&[]).is_err());
        assert!(PropertyWrite::from_record(&[0; 12]).is_err());
        let mut bad_priority = vec![0; 12];
        bad_priority.push(17);
        bad_priority.push(0); // Null
        assert!(PropertyWrite::from_record(&bad_priority).unwrap_err().contains("priority 17"));
        for n in 0..64u8 {
            let junk: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37).wrapping_add(n)).collect();
            let _ = PropertyWrite::from_record(&junk);
        }
    }
}
