//! The value a schedule has at a local date and time (135-2016 Clause
//! 12.24.4, Present_Value):
//!
//! 1. Of the Exception_Schedule elements whose period includes the day,
//!    the one with the highest priority (lowest number; the first in the
//!    array among equals) whose current value is not NULL gives the value.
//! 2. Otherwise the day's Weekly_Schedule entry, if its current value is
//!    not NULL.
//! 3. Otherwise Schedule_Default.
//!
//! A list's current value is that of its latest time-value at or before
//! the time of day; before the first one of the day there is none (nothing
//! carries over from the day before).

use super::calendar::is_fully_specified;
use super::{SpecialEvent, SpecialEventPeriod, TimeValue};
use crate::codec::{Date, ObjectIdentifier, Time, UNSPECIFIED};
use crate::value::Value;
use alloc::vec::Vec;

/// Which part of the schedule gave the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Exception_Schedule element `index` (0-based), at its priority.
    Exception {
        /// Its position in the array, from 0.
        index: usize,
        /// Its event priority.
        priority: u8,
    },
    /// The day's Weekly_Schedule entry.
    Weekly,
    /// Schedule_Default.
    Default,
}

/// A schedule's value at a moment and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// What Present_Value is.
    pub value: Value,
    /// Where it came from.
    pub source: Source,
}

/// Hundredths of a second since midnight, or `None` for a time with an
/// unspecified hour, minute or second (it never applies). Unspecified
/// hundredths count as 0.
fn hundredths(t: Time) -> Option<u32> {
    if [t.hour, t.minute, t.second].contains(&UNSPECIFIED) {
        return None;
    }
    let h = if t.hundredths == UNSPECIFIED { 0 } else { u32::from(t.hundredths) };
    Some(((u32::from(t.hour) * 60 + u32::from(t.minute)) * 60 + u32::from(t.second)) * 100 + h)
}

/// The current value of a day's time-values at `now`: the latest at or
/// before it (the later in the list among equal times), unless NULL.
fn current(list: &[TimeValue], now: u32) -> Option<&Value> {
    let mut best: Option<(u32, &Value)> = None;
    for tv in list {
        let Some(at) = hundredths(tv.time) else { continue };
        if at <= now && best.is_none_or(|(b, _)| at >= b) {
            best = Some((at, &tv.value));
        }
    }
    best.map(|(_, v)| v).filter(|v| **v != Value::Null)
}

/// The day of the week of a fully specified date, 1 (Monday) … 7.
fn weekday_of(date: Date) -> Option<usize> {
    use super::CalendarEntry;
    (1..=7).find(|w| {
        CalendarEntry::Date(Date { year: UNSPECIFIED, month: UNSPECIFIED, day: UNSPECIFIED, weekday: *w as u8 })
            .matches(date)
    })
}

/// Evaluate a schedule at local `date` (fully specified) and `time`.
/// `weekly` is Weekly_Schedule (Monday first; empty when the object has
/// none); `calendar(id)` tells whether Calendar `id` names `date` (false
/// for a Calendar that does not exist).
pub fn evaluate(
    date: Date,
    time: Time,
    weekly: &[Vec<TimeValue>],
    exceptions: &[SpecialEvent],
    default: &Value,
    calendar: impl Fn(ObjectIdentifier) -> bool,
) -> Evaluation {
    let fallback = Evaluation { value: default.clone(), source: Source::Default };
    let Some(now) = hundredths(time) else { return fallback };
    if !is_fully_specified(date) {
        return fallback;
    }
    let mut chosen: Option<(u8, usize, &Value)> = None;
    for (index, event) in exceptions.iter().enumerate() {
        if chosen.is_some_and(|(p, _, _)| p <= event.priority) {
            continue;
        }
        let today = match event.period {
            SpecialEventPeriod::CalendarEntry(entry) => entry.matches(date),
            SpecialEventPeriod::CalendarReference(id) => calendar(id),
        };
        if !today {
            continue;
        }
        if let Some(v) = current(&event.time_values, now) {
            chosen = Some((event.priority, index, v));
        }
    }
    if let Some((priority, index, v)) = chosen {
        return Evaluation { value: v.clone(), source: Source::Exception { index, priority } };
    }
    let day = weekday_of(date).and_then(|w| weekly.get(w - 1));
    if let Some(v) = day.and_then(|list| current(list, now)) {
        return Evaluation { value: v.clone(), source: Source::Weekly };
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::super::CalendarEntry;
    use super::*;
    use crate::enums::ObjectType;
    use alloc::vec;

    fn date(y: u16, m: u8, d: u8) -> Date {
        Date { year: (y - 1900) as u8, month: m, day: d, weekday: UNSPECIFIED }
    }
    fn at(hour: u8, minute: u8) -> Time {
        Time { hour, minute, second: 0, hundredths: 0 }
    }
    fn tv(hour: u8, minute: u8, value: Value) -> TimeValue {
        TimeValue { time: at(hour, minute), value }
    }
    /// Occupied 07:00–18:00 on weekdays (21.0), relinquished after; nothing at weekends.
    fn office_week() -> Vec<Vec<TimeValue>> {
        let day = vec![tv(7, 0, Value::Real(21.0)), tv(18, 0, Value::Null)];
        vec![day.clone(), day.clone(), day.clone(), day.clone(), day, vec![], vec![]]
    }
    const DEFAULT: Value = Value::Real(16.0);
    fn no_calendar(_: ObjectIdentifier) -> bool {
        false
    }

    #[test]
    fn a_weekday_follows_its_time_values_and_falls_back_to_the_default() {
        let thursday = date(2026, 12, 3);
        let week = office_week();
        let eval = |h, m| evaluate(thursday, at(h, m), &week, &[], &DEFAULT, no_calendar);
        assert_eq!(eval(6, 59), Evaluation { value: DEFAULT, source: Source::Default });
        assert_eq!(eval(7, 0), Evaluation { value: Value::Real(21.0), source: Source::Weekly });
        assert_eq!(eval(17, 59).value, Value::Real(21.0));
        // NULL relinquishes to Schedule_Default.
        assert_eq!(eval(18, 0), Evaluation { value: DEFAULT, source: Source::Default });
        let saturday = date(2026, 12, 5);
        assert_eq!(evaluate(saturday, at(12, 0), &week, &[], &DEFAULT, no_calendar).source, Source::Default);
    }

    #[test]
    fn nothing_carries_over_from_the_day_before() {
        let week = vec![vec![tv(22, 0, Value::Real(1.0))]; 7];
        let e = evaluate(date(2026, 12, 3), at(0, 30), &week, &[], &DEFAULT, no_calendar);
        assert_eq!(e.source, Source::Default);
    }

    #[test]
    fn a_holiday_from_a_calendar_overrides_the_week_and_its_null_falls_through() {
        let holidays = ObjectIdentifier { object_type: ObjectType::CALENDAR, instance: 1 };
        let closed = SpecialEvent {
            period: SpecialEventPeriod::CalendarReference(holidays),
            time_values: vec![tv(0, 0, Value::Real(12.0)), tv(10, 0, Value::Null)],
            priority: 10,
        };
        let week = office_week();
        let is_holiday = |id: ObjectIdentifier| id == holidays;
        let thursday = date(2026, 12, 3);
        let e = evaluate(thursday, at(8, 0), &week, core::slice::from_ref(&closed), &DEFAULT, is_holiday);
        assert_eq!(e, Evaluation { value: Value::Real(12.0), source: Source::Exception { index: 0, priority: 10 } });
        // After its NULL, the weekly schedule applies again.
        let e = evaluate(thursday, at(11, 0), &week, core::slice::from_ref(&closed), &DEFAULT, is_holiday);
        assert_eq!(e, Evaluation { value: Value::Real(21.0), source: Source::Weekly });
        // Not a holiday: the week.
        let e = evaluate(thursday, at(8, 0), &week, &[closed], &DEFAULT, no_calendar);
        assert_eq!(e.source, Source::Weekly);
    }

    #[test]
    fn the_highest_priority_wins_and_the_first_among_equals() {
        let today = date(2026, 12, 24);
        let every_day = SpecialEventPeriod::CalendarEntry(CalendarEntry::Date(Date {
            year: UNSPECIFIED,
            month: UNSPECIFIED,
            day: UNSPECIFIED,
            weekday: UNSPECIFIED,
        }));
        let event = |priority, value| SpecialEvent { period: every_day, time_values: vec![tv(0, 0, value)], priority };
        let events = [event(8, Value::Real(1.0)), event(3, Value::Real(2.0)), event(3, Value::Real(3.0))];
        let e = evaluate(today, at(9, 0), &[], &events, &DEFAULT, no_calendar);
        assert_eq!(e, Evaluation { value: Value::Real(2.0), source: Source::Exception { index: 1, priority: 3 } });
    }

    #[test]
    fn a_time_value_with_a_wildcard_never_applies() {
        let week = vec![
            vec![TimeValue {
                time: Time { hour: UNSPECIFIED, minute: 0, second: 0, hundredths: 0 },
                value: Value::Real(5.0)
            }];
            7
        ];
        let e = evaluate(date(2026, 12, 3), at(12, 0), &week, &[], &DEFAULT, no_calendar);
        assert_eq!(e.source, Source::Default);
    }
}
