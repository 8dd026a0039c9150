//! ReadRange (Clause 15.8): read a range of items from a list property, such
//! as a Trend Log's Log_Buffer.

use super::ServiceCodec;
use super::common::{app_field, ctx_field, opening_field, opt_ctx_field};
use super::time_synchronization::{read_date_time, write_date_time};
use crate::codec::tag::{self, TagClass};
use crate::codec::{
    BitString, Date, ObjectIdentifier, Reader, Time, expect_closing, expect_opening, next_is_opening, write_app,
    write_constructed, write_ctx, write_opt_ctx,
};
use crate::enums::PropertyIdentifier;
use crate::error::DecodeError;
use crate::value::AnyValue;
use alloc::vec::Vec;
use core::num::NonZeroI16;

/// A ReadRange request.
///
/// ```text
/// ReadRange-Request ::= SEQUENCE {
///     objectIdentifier [0] BACnetObjectIdentifier,
///     propertyIdentifier [1] BACnetPropertyIdentifier,
///     propertyArrayIndex [2] Unsigned OPTIONAL, -- used only with array datatype
///     range CHOICE {
///         byPosition [3] SEQUENCE {
///             referenceIndex Unsigned,
///             count INTEGER16
///         },
///         -- context tag 4 is deprecated
///         -- context tag 5 is deprecated
///         bySequenceNumber [6] SEQUENCE {
///             referenceSequenceNumber Unsigned32,
///             count INTEGER16
///         },
///         byTime [7] SEQUENCE {
///             referenceTime BACnetDateTime,
///             count INTEGER16
///         }
///     } OPTIONAL
/// }
/// ```
///
/// Without a range the whole list is read. Decoding: a count of zero or
/// outside -32,768..=32,767 is `OutOfRange` (the standard says the count
/// "shall not be zero"); a context tag 3 to 7 in the range's position that
/// is not one of the three choices (the deprecated 4 and 5 among them) is
/// `InvalidTag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadRangeRequest {
    /// The object.
    pub object: ObjectIdentifier,
    /// The list property (or array of lists).
    pub property: PropertyIdentifier,
    /// The array element, for an array of lists.
    pub array_index: Option<u32>,
    /// Which items; `None` reads them all.
    pub range: Option<Range>,
}

/// The `range` CHOICE of a ReadRange request. `count`'s sign gives the
/// direction: positive reads forward from the reference (which is the first
/// item returned), negative reads backward (the reference is the last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Range {
    /// `byPosition [3]`: by index, 1 being the oldest item.
    ByPosition {
        /// Index of the first (count > 0) or last (count < 0) item.
        reference_index: u32,
        /// Number of items, signed by direction.
        count: NonZeroI16,
    },
    /// `bySequenceNumber [6]`: by the sequence number a log assigns each record.
    BySequenceNumber {
        /// Sequence number of the first (count > 0) or last (count < 0) record.
        reference_sequence: u32,
        /// Number of records, signed by direction.
        count: NonZeroI16,
    },
    /// `byTime [7]`: records newer (count > 0) or older (count < 0) than a
    /// date and time.
    ByTime {
        /// The reference date and time; the standard requires a specific
        /// one (no unspecified fields), which is left to the server to check.
        reference_time: (Date, Time),
        /// Number of records, signed by direction.
        count: NonZeroI16,
    },
}

fn write_count(out: &mut Vec<u8>, count: NonZeroI16) {
    write_app(out, &i64::from(count.get()));
}

fn read_count(r: &mut Reader<'_>) -> Result<NonZeroI16, DecodeError> {
    let at = r.position();
    let v: i64 = app_field(r, "count")?;
    i16::try_from(v)
        .ok()
        .and_then(NonZeroI16::new)
        .ok_or(DecodeError::OutOfRange { at, what: "count (INTEGER16, not zero)" })
}

impl Range {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Range::ByPosition { reference_index, count } => write_constructed(out, 3, |o| {
                write_app(o, reference_index);
                write_count(o, *count);
            }),
            Range::BySequenceNumber { reference_sequence, count } => write_constructed(out, 6, |o| {
                write_app(o, reference_sequence);
                write_count(o, *count);
            }),
            Range::ByTime { reference_time: (date, time), count } => write_constructed(out, 7, |o| {
                write_date_time(o, date, time);
                write_count(o, *count);
            }),
        }
    }

    /// Decode the range if one is next; `None` when the data ends or another
    /// tag follows (which the caller reports as trailing data).
    fn decode_opt(r: &mut Reader<'_>) -> Result<Option<Range>, DecodeError> {
        let range = if next_is_opening(r, 3) {
            expect_opening(r, 3, "by-position")?;
            let reference_index = app_field(r, "reference-index")?;
            let count = read_count(r)?;
            expect_closing(r, 3, "end of by-position")?;
            Range::ByPosition { reference_index, count }
        } else if next_is_opening(r, 6) {
            expect_opening(r, 6, "by-sequence-number")?;
            let reference_sequence = app_field(r, "reference-sequence-number")?;
            let count = read_count(r)?;
            expect_closing(r, 6, "end of by-sequence-number")?;
            Range::BySequenceNumber { reference_sequence, count }
        } else if next_is_opening(r, 7) {
            expect_opening(r, 7, "by-time")?;
            let reference_time = read_date_time(r, "reference-time date", "reference-time time")?;
            let count = read_count(r)?;
            expect_closing(r, 7, "end of by-time")?;
            Range::ByTime { reference_time, count }
        } else {
            if let Some(Ok(t)) = tag::peek_tag(r)
                && t.class == TagClass::Context
                && (3..=7).contains(&t.number)
            {
                return Err(DecodeError::InvalidTag {
                    at: r.position(),
                    what: "range (by-position [3], by-sequence-number [6] or by-time [7])",
                });
            }
            return Ok(None);
        };
        Ok(Some(range))
    }
}

impl ServiceCodec for ReadRangeRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
        if let Some(range) = &self.range {
            range.encode(out);
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let property = ctx_field(r, 1, "property-identifier")?;
        let array_index = opt_ctx_field(r, 2, "property-array-index")?;
        let range = Range::decode_opt(r)?;
        Ok(ReadRangeRequest { object, property, array_index, range })
    }
}

/// `BACnetResultFlags ::= BIT STRING { first-item (0), last-item (1), more-items (2) }`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResultFlags {
    /// The first item returned is the first in the list.
    pub first_item: bool,
    /// The last item returned is the last in the list.
    pub last_item: bool,
    /// More items matched than the response could carry.
    pub more_items: bool,
}

impl ResultFlags {
    /// The three-bit string.
    pub fn to_bit_string(self) -> BitString {
        BitString::from_bits(&[self.first_item, self.last_item, self.more_items])
    }

    /// From a bit string; missing bits read as false, bits beyond the third
    /// (from a later revision) are ignored.
    pub fn from_bit_string(bits: &BitString) -> Self {
        ResultFlags { first_item: bits.get(0), last_item: bits.get(1), more_items: bits.get(2) }
    }
}

/// A ReadRange acknowledgement.
///
/// ```text
/// ReadRange-ACK ::= SEQUENCE {
///     objectIdentifier [0] BACnetObjectIdentifier,
///     propertyIdentifier [1] BACnetPropertyIdentifier,
///     propertyArrayIndex [2] Unsigned OPTIONAL, -- used only with array datatype
///     resultFlags [3] BACnetResultFlags,
///     itemCount [4] Unsigned,
///     itemData [5] SEQUENCE OF ABSTRACT-SYNTAX.&TYPE,
///     firstSequenceNumber [6] Unsigned32 OPTIONAL
///         -- used only if 'Item Count' > 0 and the request was either of
///         -- type 'By Sequence Number' or 'By Time'
/// }
/// ```
///
/// The items are kept as one generic [`AnyValue`]: their datatype (for a
/// Log_Buffer, `BACnetLogRecord`) depends on the property. The decoder does
/// not cross-check `item_count` against the items (an item may span several
/// elements) nor refuse a `first_sequence_number` sent with a count of 0:
/// both are the sender's obligations, and refusing a usable answer helps no one.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRangeAck {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// The array element, for an array of lists.
    pub array_index: Option<u32>,
    /// Where the returned items sit in the list.
    pub result_flags: ResultFlags,
    /// Number of items returned.
    pub item_count: u32,
    /// The items.
    pub item_data: AnyValue,
    /// Sequence number of the first item, for by-sequence-number and by-time reads.
    pub first_sequence_number: Option<u32>,
}

impl ServiceCodec for ReadRangeAck {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
        write_ctx(out, 3, &self.result_flags.to_bit_string());
        write_ctx(out, 4, &self.item_count);
        write_constructed(out, 5, |o| self.item_data.encode(o));
        write_opt_ctx(out, 6, &self.first_sequence_number);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let property = ctx_field(r, 1, "property-identifier")?;
        let array_index = opt_ctx_field(r, 2, "property-array-index")?;
        let flags: BitString = ctx_field(r, 3, "result-flags")?;
        let item_count = ctx_field(r, 4, "item-count")?;
        opening_field(r, 5, "item-data")?;
        let item_data = AnyValue::decode(r)?;
        expect_closing(r, 5, "end of item-data")?;
        let first_sequence_number = opt_ctx_field(r, 6, "first-sequence-number")?;
        Ok(ReadRangeAck {
            object,
            property,
            array_index,
            result_flags: ResultFlags::from_bit_string(&flags),
            item_count,
            item_data,
            first_sequence_number,
        })
    }
}
