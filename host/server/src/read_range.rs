//! ReadRange (Clause 15.8) on list properties: executed by the host over a
//! read of the whole list through the model (one crossing, the path
//! ReadPropertyMultiple takes), so every list a model or the host serves —
//! a Trend Log's Log_Buffer, the Device object's Active_COV_Subscriptions —
//! is read in ranges without the object-model interface knowing ReadRange.
//!
//! Which properties are lists, and how their items lie in the encoded value,
//! is the standard's datatype of the property ([`list_shape`]); any other
//! property is Error services/property-is-not-a-list (property-is-not-a-list
//! is a code of the services class; bacnet-stack and rusty-bacnet answer
//! the same). Sequence numbers and timestamps exist for Log_Buffer only: the
//! newest record's sequence number is the log's Total_Record_Count, read in
//! the same crossing (Clause 12.25.14.1), and the others count down from it
//! through the wrap from 1 back to 2^32 - 1.
//!
//! The answer, as the standard and the reference implementations have it:
//! - no range: every item; by position: from the 1-based reference forward
//!   (count > 0) or back to it (count < 0); a reference that is no item
//!   (0, or past the end) selects nothing;
//! - by sequence number: the same around the record with that number;
//!   a list whose items have no numbers is property/list-item-not-numbered;
//! - by time: from the oldest record newer than the reference forward, or
//!   back from the newest record older than it (strictly newer and older,
//!   as the standard words the Reference Time; a record stamped exactly at
//!   the reference is not returned); a list of untimestamped items is
//!   property/list-item-not-timestamped. The reference must be a specific
//!   date and time: an unspecified year, month, day, hour, minute, second
//!   or hundredths is Error services/parameter-out-of-range (a Reject would
//!   fit too, but the decode has passed; the weekday is ignored: it follows
//!   from the date);
//! - a count of 0 never gets here: the codec refuses it (`OutOfRange`, so
//!   Reject parameter-out-of-range);
//! - an array index on a list is property/property-is-not-an-array (no
//!   property this host serves is an array of lists);
//! - FIRST_ITEM and LAST_ITEM tell whether the returned items include the
//!   list's first and last; MORE_ITEMS that items matched but did not fit;
//!   all three are clear when nothing is returned because nothing matched;
//! - firstSequenceNumber is present exactly when the range was by sequence
//!   number or by time and at least one item is returned.
//!
//! Size: when the selected items do not fit what the answer may take (the
//! requester's Max-APDU, or its segments), as many as fit are returned, the
//! ones nearest the reference (the first ones reading forward, the last ones
//! reading backward), with MORE_ITEMS set; only an answer whose header
//! alone does not fit is aborted.

use super::dispatch::{AnswerRoom, Failure, Server, contract};
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::{BacnetError, Range, ReadRangeAck, ReadRangeRequest, ResultFlags, ServiceCodec};
use bacnet::{AnyValue, Date, Element, ObjectIdentifier, Time, Value};
use trellis_model::{ObjectModel, PropertyTarget};

/// How a list's items lie in the elements of its encoded value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One element per item: an application-tagged primitive, or a CHOICE
    /// whose every alternative is one element.
    One,
    /// A SEQUENCE of context-tagged fields: an item starts at an element
    /// whose tag number is not above the one before (within an item the
    /// tags increase).
    Sequence,
    /// A SEQUENCE of this many application-tagged elements.
    Fixed(usize),
}

/// The shape of the items of list property `p` (a BACnetLIST in the
/// standard's property tables), or `None` when `p` is not a list.
fn list_shape(p: P) -> Option<Shape> {
    Some(match p {
        // BACnetLogRecord, BACnetCOVSubscription, BACnetCOVMultipleSubscription,
        // BACnetDeviceObjectPropertyReference, BACnetDeviceObjectReference.
        P::LOG_BUFFER
        | P::ACTIVE_COV_SUBSCRIPTIONS
        | P::ACTIVE_COV_MULTIPLE_SUBSCRIPTIONS
        | P::LIST_OF_OBJECT_PROPERTY_REFERENCES
        | P::MEMBER_OF
        | P::ZONE_MEMBERS => Shape::Sequence,
        // BACnetRecipient and BACnetCalendarEntry are CHOICEs; VT classes are enumerated.
        P::TIME_SYNCHRONIZATION_RECIPIENTS
        | P::UTC_TIME_SYNCHRONIZATION_RECIPIENTS
        | P::RESTART_NOTIFICATION_RECIPIENTS
        | P::DATE_LIST
        | P::VT_CLASSES_SUPPORTED => Shape::One,
        // BACnetAddressBinding: device identifier, network number, MAC address.
        P::DEVICE_ADDRESS_BINDING | P::MANUAL_SLAVE_ADDRESS_BINDING | P::SLAVE_ADDRESS_BINDING => Shape::Fixed(3),
        // BACnetDestination: valid days, from, to, recipient, process, confirmed, transitions.
        P::RECIPIENT_LIST => Shape::Fixed(7),
        _ => return None,
    })
}

/// The items of a list, or `None` when its elements do not have `shape`.
fn split(elements: Vec<Element>, shape: Shape) -> Option<Vec<Vec<Element>>> {
    let mut items: Vec<Vec<Element>> = Vec::new();
    match shape {
        Shape::One => items.extend(elements.into_iter().map(|e| vec![e])),
        Shape::Fixed(n) => {
            if !elements.len().is_multiple_of(n) {
                return None;
            }
            let mut it = elements.into_iter();
            while it.len() > 0 {
                items.push(it.by_ref().take(n).collect());
            }
        }
        Shape::Sequence => {
            let mut last = None;
            for e in elements {
                let tag = match &e {
                    Element::Context { tag, .. } | Element::Constructed { tag, .. } => *tag,
                    Element::Application(_) => return None,
                };
                match (items.last_mut(), last) {
                    (Some(item), Some(prev)) if tag > prev => item.push(e),
                    _ => items.push(vec![e]),
                }
                last = Some(tag);
            }
        }
    }
    Some(items)
}

/// Sequence numbers run 1..=2^32 - 1 and wrap to 1 (Clause 12.25.16).
const SEQUENCE_NUMBERS: u64 = u32::MAX as u64;

/// The sequence numbers of a log's `n` records, the newest numbered `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Numbering {
    total: u32,
    n: usize,
}

impl Numbering {
    /// Sequence number of the record at position `pos` (0 = oldest).
    fn at(self, pos: usize) -> u32 {
        let back = (self.n - 1 - pos) as u64 % SEQUENCE_NUMBERS;
        let zero_based = (u64::from(self.total) - 1 + SEQUENCE_NUMBERS - back) % SEQUENCE_NUMBERS;
        (zero_based + 1) as u32
    }

    /// Position of the record numbered `seq`, if the buffer holds it.
    fn position(self, seq: u32) -> Option<usize> {
        if seq == 0 || self.n == 0 {
            return None;
        }
        let back = (u64::from(self.total) + SEQUENCE_NUMBERS - u64::from(seq)) % SEQUENCE_NUMBERS;
        (back < self.n as u64).then(|| self.n - 1 - back as usize)
    }
}

/// The items selected around the item at `reference` (which must exist):
/// `count` items forward from it, or back to it.
fn around(n: usize, reference: Option<usize>, count: i16) -> std::ops::Range<usize> {
    let Some(r) = reference.filter(|r| *r < n) else { return 0..0 };
    let k = usize::from(count.unsigned_abs());
    if count > 0 { r..r.saturating_add(k).min(n) } else { (r + 1).saturating_sub(k)..r + 1 }
}

/// A timestamp as comparable fields: year, month, day, hour, minute,
/// second, hundredths (the weekday follows from the date).
type Stamp = [u8; 7];

fn stamp(d: &Date, t: &Time) -> Stamp {
    [d.year, d.month, d.day, t.hour, t.minute, t.second, t.hundredths]
}

/// The reference time of a by-time read, if it is a specific date and time.
fn reference_stamp(d: &Date, t: &Time) -> Option<Stamp> {
    let specific = d.year != 255
        && (1..=12).contains(&d.month)
        && (1..=31).contains(&d.day)
        && t.hour < 24
        && t.minute < 60
        && t.second < 60
        && t.hundredths < 100;
    specific.then(|| stamp(d, t))
}

/// The timestamp of a log record: `[0] { Date Time }` first.
fn record_stamp(item: &[Element]) -> Option<Stamp> {
    match item.first()? {
        Element::Constructed { tag: 0, elements } => match elements.as_slice() {
            [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))] => Some(stamp(d, t)),
            _ => None,
        },
        _ => None,
    }
}

fn error(class: ErrorClass, code: ErrorCode) -> Failure {
    Failure::Error(BacnetError { class, code })
}

impl<M: ObjectModel> Server<M> {
    /// Execute ReadRange; the body of the ReadRange-ACK.
    pub(super) async fn read_range(&self, r: ReadRangeRequest, room: AnswerRoom) -> Result<Vec<u8>, Failure> {
        let target = PropertyTarget { object: r.object, property: r.property, array_index: r.array_index };
        let numbered = r.property == P::LOG_BUFFER && r.array_index.is_none();
        let mut targets = vec![target];
        if matches!(r.property, P::ALL | P::REQUIRED | P::OPTIONAL) {
            // Not properties at all, let alone lists: only the object's existence is asked.
            targets[0].property = P::OBJECT_IDENTIFIER;
        } else if numbered {
            targets.push(PropertyTarget { property: P::TOTAL_RECORD_COUNT, ..target });
        }
        let mut reads = self.read_targets(&targets).await?.into_iter();
        let mut list = reads.next().unwrap_or_default();
        if list.len() != 1 {
            return Err(contract("a read of one property answered with several results"));
        }
        let value = list.remove(0).outcome.map_err(Failure::Error)?;
        let shape = list_shape(targets[0].property)
            .ok_or_else(|| error(ErrorClass::SERVICES, ErrorCode::PROPERTY_IS_NOT_A_LIST))?;
        if r.array_index.is_some() {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        let items = split(value.0, shape).ok_or_else(|| contract("a list property whose items do not decode"))?;
        let n = items.len();
        // Sequence numbers, for the ranges that need them.
        let total = reads.next().and_then(|mut l| l.pop()).map(|read| read.outcome);
        let numbering = || match &total {
            Some(Ok(v)) => match v.as_primitive() {
                Some(Value::Unsigned(total)) if n == 0 || *total > 0 => u32::try_from(*total)
                    .map(|total| Numbering { total, n })
                    .map_err(|_| contract("Total_Record_Count above 2^32 - 1")),
                _ => Err(contract("Total_Record_Count is not an Unsigned that numbers the records")),
            },
            // Not a Log_Buffer, or an object without Total_Record_Count.
            _ => Err(error(ErrorClass::PROPERTY, ErrorCode::LIST_ITEM_NOT_NUMBERED)),
        };

        let (selected, backward, numbering) = match r.range {
            None => (0..n, false, None),
            Some(Range::ByPosition { reference_index, count }) => {
                let reference = (reference_index as usize).checked_sub(1);
                (around(n, reference, count.get()), count.get() < 0, None)
            }
            Some(Range::BySequenceNumber { reference_sequence, count }) => {
                let numbering = numbering()?;
                let reference = numbering.position(reference_sequence);
                (around(n, reference, count.get()), count.get() < 0, Some(numbering))
            }
            Some(Range::ByTime { reference_time: (date, time), count }) => {
                if r.property != P::LOG_BUFFER {
                    return Err(error(ErrorClass::PROPERTY, ErrorCode::LIST_ITEM_NOT_TIMESTAMPED));
                }
                let reference = reference_stamp(&date, &time)
                    .ok_or_else(|| error(ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE))?;
                let numbering = numbering()?;
                let stamps = items
                    .iter()
                    .map(|i| record_stamp(i))
                    .collect::<Option<Vec<Stamp>>>()
                    .ok_or_else(|| contract("a Log_Buffer record without a BACnetDateTime timestamp"))?;
                let anchor = if count.get() > 0 {
                    stamps.iter().position(|s| *s > reference)
                } else {
                    stamps.iter().rposition(|s| *s < reference)
                };
                (around(n, anchor, count.get()), count.get() < 0, Some(numbering))
            }
        };

        let object = if self.is_this_device(r.object) { self.device_id() } else { r.object };
        let ack = fit(
            ReadRangeAck {
                object,
                property: r.property,
                array_index: r.array_index,
                result_flags: ResultFlags::default(),
                item_count: 0,
                item_data: AnyValue(Vec::new()),
                first_sequence_number: None,
            },
            items,
            selected,
            backward,
            numbering,
            room,
        )?;
        Ok(ack.to_vec())
    }

    /// True for the identifiers that address this Device object (its own,
    /// and the wildcard instance).
    fn is_this_device(&self, o: ObjectIdentifier) -> bool {
        o == self.device_id() || (o.object_type == ObjectType::DEVICE && o.instance == ObjectIdentifier::MAX_INSTANCE)
    }
}

/// The acknowledgement carrying as many of the `selected` items as fit
/// `room`, nearest the reference first; `numbering` when the answer
/// carries the first item's sequence number.
fn fit(
    mut ack: ReadRangeAck,
    items: Vec<Vec<Element>>,
    selected: std::ops::Range<usize>,
    backward: bool,
    numbering: Option<Numbering>,
    room: AnswerRoom,
) -> Result<ReadRangeAck, Failure> {
    let n = items.len();
    // The header at its largest: item-count and firstSequenceNumber take
    // at most four content octets each.
    ack.item_count = u32::MAX;
    ack.first_sequence_number = numbering.map(|_| u32::MAX);
    let header = ack.to_vec().len();
    if header > room.octets {
        return Err(Failure::Abort(room.too_long()));
    }
    let mut budget = room.octets - header;
    let mut sizes = Vec::with_capacity(selected.len());
    let mut scratch = Vec::new();
    for item in &items[selected.clone()] {
        scratch.clear();
        for e in item {
            e.encode(&mut scratch);
        }
        sizes.push(scratch.len());
    }
    let mut taken = 0;
    while taken < sizes.len() {
        let size = sizes[if backward { sizes.len() - 1 - taken } else { taken }];
        if size > budget {
            break;
        }
        budget -= size;
        taken += 1;
    }
    let returned = if backward { selected.end - taken..selected.end } else { selected.start..selected.start + taken };
    ack.result_flags = ResultFlags {
        first_item: !returned.is_empty() && returned.start == 0,
        last_item: !returned.is_empty() && returned.end == n,
        more_items: returned.len() < selected.len(),
    };
    ack.item_count = returned.len() as u32;
    ack.first_sequence_number = numbering.filter(|_| !returned.is_empty()).map(|s| s.at(returned.start));
    ack.item_data = AnyValue(items.into_iter().skip(returned.start).take(returned.len()).flatten().collect());
    Ok(ack)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(tag: u8) -> Element {
        Element::Context { tag, data: vec![tag] }
    }

    #[test]
    fn sequences_split_where_the_context_tags_start_again() {
        // Log records: [0] [1] [2], then [0] [1] without status flags, then [0] [1] [2].
        let es = vec![ctx(0), ctx(1), ctx(2), ctx(0), ctx(1), ctx(0), ctx(1), ctx(2)];
        let items = split(es, Shape::Sequence).unwrap();
        assert_eq!(items.iter().map(Vec::len).collect::<Vec<_>>(), [3, 2, 3]);
        // A first field that is optional: [1] alone is an item too.
        let items = split(vec![ctx(1), ctx(0), ctx(1), ctx(1)], Shape::Sequence).unwrap();
        assert_eq!(items.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2, 1]);
        assert_eq!(split(vec![Element::Application(Value::Null)], Shape::Sequence), None);
        assert_eq!(split(vec![ctx(0); 4], Shape::Fixed(3)), None);
        assert_eq!(split(vec![ctx(0); 6], Shape::Fixed(3)).unwrap().len(), 2);
        assert_eq!(split(vec![ctx(0), ctx(1), ctx(0)], Shape::One).unwrap().len(), 3);
        assert_eq!(split(vec![], Shape::Sequence), Some(vec![]));
    }

    #[test]
    fn sequence_numbers_count_down_from_total_record_count_through_the_wrap() {
        let plain = Numbering { total: 10, n: 4 };
        assert_eq!((0..4).map(|p| plain.at(p)).collect::<Vec<_>>(), [7, 8, 9, 10]);
        assert_eq!([6, 7, 10, 11, 0].map(|s| plain.position(s)), [None, Some(0), Some(3), None, None]);
        // Total_Record_Count wrapped from 2^32 - 1 to 1, then 2.
        let wrapped = Numbering { total: 2, n: 4 };
        assert_eq!((0..4).map(|p| wrapped.at(p)).collect::<Vec<_>>(), [u32::MAX - 1, u32::MAX, 1, 2]);
        assert_eq!(wrapped.position(u32::MAX), Some(1));
        assert_eq!(wrapped.position(1), Some(2));
        assert_eq!(wrapped.position(u32::MAX - 2), None);
        assert_eq!(Numbering { total: 0, n: 0 }.position(1), None);
    }

    #[test]
    fn a_range_is_counted_from_its_reference_forward_or_back() {
        assert_eq!(around(5, Some(1), 2), 1..3);
        assert_eq!(around(5, Some(3), 10), 3..5, "clipped at the end");
        assert_eq!(around(5, Some(1), -3), 0..2, "clipped at the start");
        assert_eq!(around(5, Some(4), -2), 3..5);
        assert_eq!(around(5, Some(5), 1), 0..0, "no such item");
        assert_eq!(around(5, None, -1), 0..0);
        assert_eq!(around(5, Some(0), i16::MIN), 0..1);
    }

    #[test]
    fn a_reference_time_must_be_specific_but_its_weekday_is_ignored() {
        let d = Date { year: 124, month: 3, day: 5, weekday: 255 };
        let t = Time { hour: 10, minute: 0, second: 0, hundredths: 0 };
        assert_eq!(reference_stamp(&d, &t), Some([124, 3, 5, 10, 0, 0, 0]));
        assert_eq!(reference_stamp(&Date { month: 13, ..d }, &t), None, "odd months are no date");
        assert_eq!(reference_stamp(&Date { year: 255, ..d }, &t), None);
        assert_eq!(reference_stamp(&d, &Time { hundredths: 255, ..t }), None);
    }

    fn ack(items: usize) -> (ReadRangeAck, Vec<Vec<Element>>) {
        let ack = ReadRangeAck {
            object: ObjectIdentifier::new(ObjectType::TREND_LOG, 1).unwrap(),
            property: P::LOG_BUFFER,
            array_index: None,
            result_flags: ResultFlags::default(),
            item_count: 0,
            item_data: AnyValue(vec![]),
            first_sequence_number: None,
        };
        // Items of 10 octets: an OctetString of 8.
        let items = (0..items).map(|i| vec![Element::Application(Value::OctetString(vec![i as u8; 8]))]).collect();
        (ack, items)
    }

    fn ok(r: Result<ReadRangeAck, Failure>) -> ReadRangeAck {
        match r {
            Ok(a) => a,
            Err(_) => panic!("the answer failed"),
        }
    }

    #[test]
    fn what_does_not_fit_is_left_out_from_the_far_end_with_more_items() {
        let room = |octets| AnswerRoom { octets, segmented: false };
        let numbering = Some(Numbering { total: 100, n: 10 });
        let (a, items) = ack(10);
        let header = ReadRangeAck { item_count: u32::MAX, first_sequence_number: Some(u32::MAX), ..a.clone() };
        let header = header.to_vec().len();
        let fwd = ok(fit(a.clone(), items.clone(), 2..8, false, numbering, room(header + 35)));
        assert_eq!((fwd.item_count, fwd.first_sequence_number), (3, Some(93)));
        assert_eq!(fwd.result_flags, ResultFlags { first_item: false, last_item: false, more_items: true });
        assert!(fwd.to_vec().len() <= header + 35);
        let back = ok(fit(a.clone(), items.clone(), 2..10, true, numbering, room(header + 30)));
        assert_eq!(
            (back.item_count, back.first_sequence_number),
            (3, Some(98)),
            "the last three, nearest the reference"
        );
        assert_eq!(back.result_flags, ResultFlags { first_item: false, last_item: true, more_items: true });
        let none_fit = ok(fit(a.clone(), items.clone(), 0..10, false, numbering, room(header + 9)));
        assert_eq!((none_fit.item_count, none_fit.first_sequence_number), (0, None));
        assert_eq!(none_fit.result_flags, ResultFlags { first_item: false, last_item: false, more_items: true });
        let all = ok(fit(a.clone(), items.clone(), 0..10, false, None, room(1476)));
        assert_eq!(all.result_flags, ResultFlags { first_item: true, last_item: true, more_items: false });
        assert_eq!((all.item_count, all.item_data.0.len()), (10, 10));
        let nothing = ok(fit(a.clone(), items, 0..0, false, numbering, room(1476)));
        assert_eq!((nothing.result_flags, nothing.first_sequence_number), (ResultFlags::default(), None));
        let (a, items) = ack(1);
        assert!(matches!(fit(a, items, 0..1, false, None, room(5)), Err(Failure::Abort(_))), "not even the header");
    }
}
