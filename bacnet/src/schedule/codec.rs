//! Encoding of the Schedule and Calendar productions (Clause 21), as they
//! stand in property values.

use super::{
    CalendarEntry, DateRange, DeviceObjectPropertyReference, SpecialEvent, SpecialEventPeriod, TimeValue, WeekNDay,
};
use crate::codec::{
    Reader, expect_closing, expect_opening, next_is_closing, next_is_opening, next_is_primitive_ctx, read_app,
    read_ctx, read_opt_ctx, tag, write_app, write_ctx, write_opt_ctx,
};
use crate::error::DecodeError;
use crate::services::ServiceCodec;
use crate::value::Value;
use alloc::vec::Vec;

impl ServiceCodec for DateRange {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.start);
        write_app(out, &self.end);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(DateRange { start: read_app(r, "start-date")?, end: read_app(r, "end-date")? })
    }
}

impl ServiceCodec for CalendarEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            CalendarEntry::Date(d) => write_ctx(out, 0, d),
            CalendarEntry::DateRange(range) => {
                tag::write_opening(out, 1);
                range.encode(out);
                tag::write_closing(out, 1);
            }
            CalendarEntry::WeekNDay(w) => write_ctx(out, 2, &alloc::vec![w.month, w.week_of_month, w.day_of_week]),
        }
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if next_is_primitive_ctx(r, 0) {
            return Ok(CalendarEntry::Date(read_ctx(r, 0, "date")?));
        }
        if next_is_opening(r, 1) {
            expect_opening(r, 1, "date-range")?;
            let range = DateRange::decode_from(r)?;
            expect_closing(r, 1, "end of date-range")?;
            return Ok(CalendarEntry::DateRange(range));
        }
        let at = r.position();
        let octets: Vec<u8> = read_ctx(r, 2, "a BACnetCalendarEntry (date, date-range or weekNDay)")?;
        match octets.as_slice() {
            [month, week_of_month, day_of_week] => Ok(CalendarEntry::WeekNDay(WeekNDay {
                month: *month,
                week_of_month: *week_of_month,
                day_of_week: *day_of_week,
            })),
            _ => Err(DecodeError::OutOfRange { at, what: "weekNDay (3 octets)" }),
        }
    }
}

impl ServiceCodec for TimeValue {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.time);
        self.value.encode(out);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(TimeValue { time: read_app(r, "time")?, value: Value::decode(r)? })
    }
}

/// Append time-values between opening and closing tag `n` (a
/// BACnetDailySchedule is `[0]` of them; a special event's list is `[2]`).
pub fn encode_time_values(out: &mut Vec<u8>, n: u8, list: &[TimeValue]) {
    tag::write_opening(out, n);
    for tv in list {
        tv.encode(out);
    }
    tag::write_closing(out, n);
}

/// Read time-values between opening and closing tag `n`.
pub fn decode_time_values(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<Vec<TimeValue>, DecodeError> {
    expect_opening(r, n, what)?;
    let mut list = Vec::new();
    while !next_is_closing(r, n) {
        if r.is_empty() {
            return Err(DecodeError::Truncated { at: r.position(), what });
        }
        list.push(TimeValue::decode_from(r)?);
    }
    expect_closing(r, n, what)?;
    Ok(list)
}

impl ServiceCodec for SpecialEvent {
    fn encode(&self, out: &mut Vec<u8>) {
        match &self.period {
            SpecialEventPeriod::CalendarEntry(entry) => {
                tag::write_opening(out, 0);
                entry.encode(out);
                tag::write_closing(out, 0);
            }
            SpecialEventPeriod::CalendarReference(id) => write_ctx(out, 1, id),
        }
        encode_time_values(out, 2, &self.time_values);
        write_ctx(out, 3, &u64::from(self.priority));
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let period = if next_is_opening(r, 0) {
            expect_opening(r, 0, "calendar-entry")?;
            let entry = CalendarEntry::decode_from(r)?;
            expect_closing(r, 0, "end of calendar-entry")?;
            SpecialEventPeriod::CalendarEntry(entry)
        } else {
            SpecialEventPeriod::CalendarReference(read_ctx(r, 1, "calendar-entry or calendar-reference")?)
        };
        let time_values = decode_time_values(r, 2, "list-of-time-values")?;
        let at = r.position();
        let priority: u64 = read_ctx(r, 3, "event-priority")?;
        let priority = u8::try_from(priority)
            .ok()
            .filter(|p| (1..=16).contains(p))
            .ok_or(DecodeError::OutOfRange { at, what: "event-priority (1..16)" })?;
        Ok(SpecialEvent { period, time_values, priority })
    }
}

impl ServiceCodec for DeviceObjectPropertyReference {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.property);
        write_opt_ctx(out, 2, &self.array_index);
        write_opt_ctx(out, 3, &self.device);
    }
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(DeviceObjectPropertyReference {
            object: read_ctx(r, 0, "object-identifier")?,
            property: read_ctx(r, 1, "property-identifier")?,
            array_index: read_opt_ctx(r, 2, "property-array-index")?,
            device: read_opt_ctx(r, 3, "device-identifier")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Date, ObjectIdentifier, Time, UNSPECIFIED};
    use crate::enums::{ObjectType, PropertyIdentifier};
    use alloc::vec;

    fn round_trip<T: ServiceCodec + PartialEq + core::fmt::Debug>(v: T, octets: &[u8]) {
        assert_eq!(v.to_vec(), octets, "{v:?}");
        assert_eq!(T::decode(octets).unwrap(), v);
    }

    #[test]
    fn calendar_entries_as_the_standard_encodes_them() {
        let christmas = Date { year: UNSPECIFIED, month: 12, day: 25, weekday: UNSPECIFIED };
        round_trip(CalendarEntry::Date(christmas), &[0x0c, 0xff, 0x0c, 0x19, 0xff]);
        let d = |y: u8, m, d| Date { year: y, month: m, day: d, weekday: UNSPECIFIED };
        round_trip(
            CalendarEntry::DateRange(DateRange { start: d(126, 12, 24), end: d(127, 1, 1) }),
            &[0x1e, 0xa4, 126, 12, 24, 0xff, 0xa4, 127, 1, 1, 0xff, 0x1f],
        );
        round_trip(CalendarEntry::WeekNDay(WeekNDay { month: 9, week_of_month: 1, day_of_week: 1 }), &[0x2b, 9, 1, 1]);
        assert!(CalendarEntry::decode(&[0x2a, 9, 1]).is_err());
    }

    #[test]
    fn a_special_event_with_a_calendar_reference_and_its_time_values() {
        let event = SpecialEvent {
            period: SpecialEventPeriod::CalendarReference(ObjectIdentifier {
                object_type: ObjectType::CALENDAR,
                instance: 1,
            }),
            time_values: vec![
                TimeValue { time: Time { hour: 0, minute: 0, second: 0, hundredths: 0 }, value: Value::Real(12.0) },
                TimeValue { time: Time { hour: 10, minute: 0, second: 0, hundredths: 0 }, value: Value::Null },
            ],
            priority: 10,
        };
        let octets = [
            0x1c, 0x01, 0x80, 0x00, 0x01, // calendar-reference calendar,1
            0x2e, // [2]
            0xb4, 0, 0, 0, 0, 0x44, 0x41, 0x40, 0, 0, // 00:00 → 12.0
            0xb4, 10, 0, 0, 0, 0x00, // 10:00 → NULL
            0x2f, 0x39, 10, // priority 10
        ];
        round_trip(event.clone(), &octets);
        let mut bad = octets;
        bad[octets.len() - 1] = 17;
        assert!(SpecialEvent::decode(&bad).is_err(), "priority 17");
    }

    #[test]
    fn a_device_object_property_reference_with_and_without_its_device() {
        let local = DeviceObjectPropertyReference {
            object: ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 },
            property: PropertyIdentifier::PRESENT_VALUE,
            array_index: None,
            device: None,
        };
        round_trip(local, &[0x0c, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55]);
        let remote = DeviceObjectPropertyReference {
            device: Some(ObjectIdentifier::new(ObjectType::DEVICE, 7).unwrap()),
            ..local
        };
        round_trip(remote, &[0x0c, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55, 0x3c, 0x02, 0x00, 0x00, 0x07]);
    }

    #[test]
    fn an_unterminated_list_of_time_values_is_an_error_not_a_loop() {
        let mut r = Reader::new(&[0x0e, 0xb4, 1, 0, 0, 0, 0x91, 0x01]);
        assert!(decode_time_values(&mut r, 0, "day-schedule").is_err());
    }
}
