//! Schedule and Calendar (Clauses 12.9 and 12.24): the productions their
//! properties are made of, which dates a calendar entry names, and which
//! value a schedule has at a given local date and time.
//!
//! This module is pure: it reads no clock and writes to no object. The
//! host owns the Schedule and Calendar objects, the clock and the writes a
//! schedule makes (`trellis_server::schedule`).
//!
//! Must never: treat a wildcard (255, or the odd/even/last codes) as a
//! number, or carry a time-value over from one day to the next (each day
//! starts from Schedule_Default, 135-2016 Clause 12.24.4).

mod calendar;
mod codec;
mod evaluate;

pub use calendar::{days_in_month, is_fully_specified};
pub use codec::{decode_time_values, encode_time_values};
pub use evaluate::{Evaluation, Source, evaluate};

use crate::codec::{Date, ObjectIdentifier, Time};
use crate::enums::PropertyIdentifier;
use crate::value::Value;
use alloc::vec::Vec;

/// `BACnetDateRange ::= SEQUENCE { start-date Date, end-date Date }`: both
/// ends included; an end with an unspecified year, month or day is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateRange {
    /// The first day.
    pub start: Date,
    /// The last day.
    pub end: Date,
}

/// `BACnetWeekNDay ::= OCTET STRING (SIZE (3))`: month (1..12, 13 odd, 14
/// even, 255 any), week of month (1 = days 1–7 … 5 = days 29–31, 6 = the
/// last 7 days, 7 = the 7 days before those, 8 and 9 the weeks before,
/// 255 any), day of week (1 = Monday … 7, 255 any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeekNDay {
    /// Month code.
    pub month: u8,
    /// Week-of-month code.
    pub week_of_month: u8,
    /// Day-of-week code.
    pub day_of_week: u8,
}

/// `BACnetCalendarEntry ::= CHOICE { date [0], date-range [1], weekNDay [2] }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarEntry {
    /// A date, possibly with wildcards (every 25 December: year 255).
    Date(Date),
    /// A range of dates.
    DateRange(DateRange),
    /// A month/week/day pattern (every Monday of the first week).
    WeekNDay(WeekNDay),
}

/// `BACnetTimeValue ::= SEQUENCE { time Time, value (any primitive) }`.
/// A NULL value relinquishes: the schedule falls back to what is below.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeValue {
    /// From when (local time of day).
    pub time: Time,
    /// The value from then on.
    pub value: Value,
}

/// The days a [`SpecialEvent`] applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialEventPeriod {
    /// `calendar-entry [0]`: the days the entry names.
    CalendarEntry(CalendarEntry),
    /// `calendar-reference [1]`: the days a Calendar object names.
    CalendarReference(ObjectIdentifier),
}

/// `BACnetSpecialEvent ::= SEQUENCE { period CHOICE {…}, list-of-time-values
/// [2], event-priority [3] Unsigned (1..16) }`: one element of
/// Exception_Schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecialEvent {
    /// Which days.
    pub period: SpecialEventPeriod,
    /// The day's time-values, in time order.
    pub time_values: Vec<TimeValue>,
    /// 1 (highest) … 16 (lowest).
    pub priority: u8,
}

/// ```text
/// BACnetDeviceObjectPropertyReference ::= SEQUENCE {
///     object-identifier [0], property-identifier [1],
///     property-array-index [2] Unsigned OPTIONAL,
///     device-identifier [3] BACnetObjectIdentifier OPTIONAL }
/// ```
/// Without a device, the object is in the device that holds the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceObjectPropertyReference {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property.
    pub property: PropertyIdentifier,
    /// An array element, or the whole property.
    pub array_index: Option<u32>,
    /// The device that holds the object, when it is another one.
    pub device: Option<ObjectIdentifier>,
}
