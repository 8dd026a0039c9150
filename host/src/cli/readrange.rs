//! `trellis readrange` (ReadRange): items of a list property, such as a
//! Trend Log's Log_Buffer, and how they are printed.

use super::datetime::{self, Zone};
use super::{Failure, device, format, object, property};
use crate::client::Client;
use bacnet::codec::Primitive;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier};
use bacnet::services::{Range, ReadRangeAck, ResultFlags};
use bacnet::{AnyValue, BitString, Element, ObjectType, Value};
use clap::Args;
use std::num::NonZeroI16;

/// Arguments of `trellis readrange`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("reference").args(["position", "sequence", "time"]).multiple(false)))]
pub struct ReadRangeArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    pub address: String,
    /// Object, e.g. trend-log,1.
    pub object: String,
    /// List property by its standard name, e.g. log-buffer.
    pub property: String,
    /// Array index, for an array of lists.
    #[arg(long)]
    pub index: Option<u32>,
    /// Read by position: the index (1 is the oldest item) of the first item
    /// returned, or of the last with a negative --count.
    #[arg(long, value_name = "REF", requires = "count")]
    pub position: Option<u32>,
    /// Read by sequence number: the sequence number of the first record
    /// returned, or of the last with a negative --count.
    #[arg(long, value_name = "SEQ", requires = "count")]
    pub sequence: Option<u32>,
    /// Read by time: records after this time, or before it with a negative
    /// --count. ISO 8601; with an offset (…Z, …+02:00) it is converted to
    /// this machine's local time, without one it is sent as written.
    #[arg(long, value_name = "ISO8601", requires = "count")]
    pub time: Option<String>,
    /// How many items: positive reads forward from the reference, negative
    /// backward (-32768..=32767, not 0).
    #[arg(long, value_name = "N", requires = "reference", allow_negative_numbers = true, value_parser = count)]
    pub count: Option<NonZeroI16>,
}

fn count(s: &str) -> Result<NonZeroI16, String> {
    s.parse::<i16>()
        .ok()
        .and_then(NonZeroI16::new)
        .ok_or_else(|| format!("`{s}` is not a count: give a number from -32768 to 32767 other than 0"))
}

impl ReadRangeArgs {
    fn range(&self) -> Result<Option<Range>, Failure> {
        let Some(count) = self.count else { return Ok(None) };
        Ok(Some(match (self.position, self.sequence, &self.time) {
            (Some(reference_index), _, _) => Range::ByPosition { reference_index, count },
            (_, Some(reference_sequence), _) => Range::BySequenceNumber { reference_sequence, count },
            (_, _, Some(t)) => {
                Range::ByTime { reference_time: datetime::parse(t, Zone::Local).map_err(Failure::usage)?, count }
            }
            // clap requires a reference with --count.
            (None, None, None) => return Err(Failure::usage("--count needs --position, --sequence or --time")),
        }))
    }
}

/// Run `trellis readrange`.
pub async fn run(client: &Client, a: ReadRangeArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = object(&a.object)?;
    let prop = property(&a.property)?;
    let range = a.range()?;
    let ack = client.read_range(&dev, obj, prop, a.index, range).await?;
    print!("{}", report(&ack, range));
    Ok(())
}

/// The acknowledgement as printed: result flags, item count, the first
/// sequence number when the device gave one, then one line per item led by
/// its sequence number or, without one, its position in the list.
fn report(ack: &ReadRangeAck, range: Option<Range>) -> String {
    let mut out = format!("result-flags: {}\nitem-count: {}\n", flags(ack.result_flags), ack.item_count);
    if let Some(first) = ack.first_sequence_number {
        out.push_str(&format!("first-sequence-number: {first}\n"));
    }
    let items = items(ack.object.object_type, ack.property, &ack.item_data, ack.item_count);
    let n = items.len() as i64;
    // Labels only when the lines are the items.
    let first_label = match (ack.first_sequence_number, range) {
        _ if n != i64::from(ack.item_count) => None,
        (Some(seq), _) => Some(i64::from(seq)),
        (None, None) => Some(1),
        (None, Some(Range::ByPosition { reference_index, count })) if count.get() > 0 => Some(reference_index.into()),
        (None, Some(Range::ByPosition { reference_index, .. })) => Some(i64::from(reference_index) - n + 1),
        (None, Some(_)) => None,
    };
    for (i, item) in items.iter().enumerate() {
        match first_label {
            Some(first) => out.push_str(&format!("{}: {item}\n", first + i as i64)),
            None => out.push_str(&format!("{item}\n")),
        }
    }
    out
}

/// `BACnetResultFlags` by name.
fn flags(f: ResultFlags) -> String {
    let set: Vec<&str> = [(f.first_item, "first-item"), (f.last_item, "last-item"), (f.more_items, "more-items")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    format!("{{{}}}", set.join(", "))
}

/// The items, one string each: Log_Buffer records field by field, other
/// lists element by element when there is one primitive per item, else the
/// whole value as one string.
fn items(object_type: ObjectType, property: PropertyIdentifier, data: &AnyValue, item_count: u32) -> Vec<String> {
    if property == PropertyIdentifier::LOG_BUFFER
        && let Some(records) = log_records(&data.0)
    {
        return records;
    }
    if data.0.is_empty() {
        return Vec::new();
    }
    if data.0.len() == item_count as usize && data.0.iter().all(|e| matches!(e, Element::Application(_))) {
        return data.0.iter().map(|e| format::value(object_type, property, &AnyValue(vec![e.clone()]))).collect();
    }
    vec![data.to_string()]
}

/// `BACnetLogRecord ::= SEQUENCE { timestamp [0] BACnetDateTime, logDatum [1]
/// CHOICE {…}, statusFlags [2] BACnetStatusFlags OPTIONAL }`, one string per
/// record; `None` when the elements are not log records.
fn log_records(elements: &[Element]) -> Option<Vec<String>> {
    let mut records = Vec::new();
    let mut rest = elements;
    while !rest.is_empty() {
        let (timestamp, datum, tail) = match rest {
            [
                Element::Constructed { tag: 0, elements: ts },
                Element::Constructed { tag: 1, elements: datum },
                tail @ ..,
            ] => (ts, datum, tail),
            _ => return None,
        };
        let [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))] = timestamp.as_slice() else {
            return None;
        };
        let mut line = format!("{d} {t}  {}", log_datum(datum)?);
        rest = tail;
        if let [Element::Context { tag: 2, data }, tail @ ..] = rest {
            let flags = BitString::decode_content(data, 0).ok()?;
            let flags = AnyValue::primitive(Value::BitString(flags));
            line.push_str(&format!(
                "  status-flags {}",
                format::value(ObjectType::TREND_LOG, PropertyIdentifier::STATUS_FLAGS, &flags)
            ));
            rest = tail;
        }
        records.push(line);
    }
    Some(records)
}

/// The `logDatum` CHOICE of a log record.
fn log_datum(datum: &[Element]) -> Option<String> {
    Some(match datum {
        [Element::Context { tag: 0, data }] => {
            const LOG_STATUS: [&str; 3] = ["log-disabled", "buffer-purged", "log-interrupted"];
            let bits = BitString::decode_content(data, 0).ok()?;
            let set: Vec<String> = bits
                .iter()
                .enumerate()
                .filter(|(_, on)| *on)
                .map(|(i, _)| LOG_STATUS.get(i).map_or_else(|| i.to_string(), |s| s.to_string()))
                .collect();
            format!("log-status {{{}}}", set.join(", "))
        }
        [Element::Context { tag: 1, data }] => bool::decode_content(data, 0).ok()?.to_string(),
        [Element::Context { tag: 2, data }] => f32::decode_content(data, 0).ok()?.to_string(),
        [Element::Context { tag: 3, data }] => format!("enumerated {}", u64::decode_content(data, 0).ok()?),
        [Element::Context { tag: 4, data }] => u64::decode_content(data, 0).ok()?.to_string(),
        [Element::Context { tag: 5, data }] => i64::decode_content(data, 0).ok()?.to_string(),
        [Element::Context { tag: 6, data }] => Value::BitString(BitString::decode_content(data, 0).ok()?).to_string(),
        [Element::Context { tag: 7, data }] if data.is_empty() => "null".to_string(),
        [Element::Constructed { tag: 8, elements }] => match elements.as_slice() {
            [Element::Application(Value::Enumerated(class)), Element::Application(Value::Enumerated(code))] => {
                format!("failure {}: {}", ErrorClass(*class), ErrorCode(*code))
            }
            _ => return None,
        },
        [Element::Context { tag: 9, data }] => format!("time-change {} s", f32::decode_content(data, 0).ok()?),
        [Element::Constructed { tag: 10, elements }] => AnyValue(elements.clone()).to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::services::ServiceCodec;
    use bacnet::{Date, ObjectIdentifier, Time};

    fn record(second: u8, datum: Element, flags: Option<[bool; 4]>) -> Vec<Element> {
        let date = Date { year: 125, month: 6, day: 1, weekday: 7 };
        let time = Time { hour: 10, minute: 0, second, hundredths: 0 };
        let mut r = vec![
            Element::Constructed {
                tag: 0,
                elements: vec![Element::Application(Value::Date(date)), Element::Application(Value::Time(time))],
            },
            Element::Constructed { tag: 1, elements: vec![datum] },
        ];
        if let Some(f) = flags {
            let mut data = Vec::new();
            BitString::from_bits(&f).encode_content(&mut data);
            r.push(Element::Context { tag: 2, data });
        }
        r
    }

    #[test]
    fn log_buffer_records_print_time_value_and_flags_after_their_sequence_number() {
        let mut data = record(
            1,
            Element::Context { tag: 2, data: 72.5f32.to_be_bytes().to_vec() },
            Some([false, true, false, false]),
        );
        data.extend(record(2, Element::Context { tag: 0, data: vec![0x05, 0x80] }, None));
        let ack = ReadRangeAck {
            object: ObjectIdentifier::new(ObjectType::TREND_LOG, 1).unwrap(),
            property: PropertyIdentifier::LOG_BUFFER,
            array_index: None,
            result_flags: ResultFlags { first_item: true, last_item: false, more_items: true },
            item_count: 2,
            item_data: AnyValue(data),
            first_sequence_number: Some(7),
        };
        // The printed form decodes what a device sends: round-trip the ack first.
        let ack = ReadRangeAck::decode(&ack.to_vec()).unwrap();
        let range = Range::BySequenceNumber { reference_sequence: 7, count: NonZeroI16::new(2).unwrap() };
        assert_eq!(
            report(&ack, Some(range)),
            "result-flags: {first-item, more-items}\nitem-count: 2\nfirst-sequence-number: 7\n\
             7: 2025-06-01 Sun 10:00:01.00  72.5  status-flags {fault}\n\
             8: 2025-06-01 Sun 10:00:02.00  log-status {log-disabled}\n"
        );
    }

    #[test]
    fn other_lists_print_element_by_element_at_their_positions() {
        let ack = ReadRangeAck {
            object: ObjectIdentifier::new(ObjectType::DEVICE, 1).unwrap(),
            property: PropertyIdentifier::OBJECT_LIST,
            array_index: None,
            result_flags: ResultFlags { first_item: false, last_item: true, more_items: false },
            item_count: 2,
            item_data: AnyValue(vec![
                Element::Application(Value::Unsigned(4)),
                Element::Application(Value::Unsigned(5)),
            ]),
            first_sequence_number: None,
        };
        let back = Range::ByPosition { reference_index: 5, count: NonZeroI16::new(-2).unwrap() };
        assert_eq!(report(&ack, Some(back)), "result-flags: {last-item}\nitem-count: 2\n4: 4\n5: 5\n");
        assert_eq!(flags(ResultFlags::default()), "{}");
    }
}
