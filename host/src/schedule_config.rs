//! `[[device.schedule]]` and `[[device.calendar]]`: Schedule and Calendar
//! objects (Clauses 12.24, 12.9) in the configuration file.
//!
//! ```toml
//! [[device.calendar]]
//! instance = 1
//! name = "holidays"
//! writable = true                          # a front end may rewrite Date_List (default false)
//! dates = [
//!   { date = "*-12-25" },                  # every 25 December (YYYY-MM-DD, * for any)
//!   { from = "2026-12-28", to = "2026-12-31" },
//!   { month = 9, week = 1, weekday = "mon" },   # the first Monday of September
//! ]
//!
//! [[device.schedule]]
//! instance = 1
//! name = "occupancy"
//! type = "real"                            # real, double, unsigned, signed, boolean, enumerated, binary
//! default = 16.0                           # Schedule_Default
//! priority = 12                            # Priority_For_Writing (default 16)
//! effective_from = "2026-01-01"            # Effective_Period (default: always)
//! effective_to = "2027-12-31"
//! writable = true                          # a front end may rewrite it (default false)
//! references = [{ object = "analog-value,1", property = "present-value" },
//!               { device = 1234, object = "analog-value,7", property = "present-value" }]
//! weekly.mon = [["07:00", 21.0], ["18:00", "null"]]   # "null" relinquishes to the default
//! weekly.tue = [["07:00", 21.0], ["18:00", "null"]]
//!
//! [[device.schedule.exception]]
//! calendar = 1                             # the days Calendar 1 names; or date/from+to/month+week+weekday
//! priority = 10                            # 1 (highest) … 16
//! values = [["00:00", 16.0]]
//! ```
//!
//! Must never: accept a value of another datatype than `type`, a priority
//! outside 1..16, a date or time that does not parse, or more entries than
//! the server's bounds.

use anyhow::{Context, bail, ensure};
use bacnet::codec::UNSPECIFIED;
use bacnet::enums::PropertyIdentifier;
use bacnet::schedule::{
    CalendarEntry, DateRange, DeviceObjectPropertyReference, SpecialEvent, SpecialEventPeriod, TimeValue, WeekNDay,
};
use bacnet::{Date, ObjectIdentifier, ObjectType, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use trellis_server::schedule::{
    CalendarConfig, MAX_DATES, MAX_EXCEPTIONS, MAX_REFERENCES, MAX_TIME_VALUES, ScheduleConfig,
};

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// One calendar entry: `date`, `from` + `to`, or `month`/`week`/`weekday`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EntrySection {
    /// `YYYY-MM-DD`, any field `*`; day also `last`, `odd`, `even`; month `odd`, `even`.
    pub date: Option<String>,
    /// First day of a range, `YYYY-MM-DD` (omitted: open).
    pub from: Option<String>,
    /// Last day of a range (omitted: open).
    pub to: Option<String>,
    /// WeekNDay month: 1..12, 13 odd, 14 even (omitted: any).
    pub month: Option<u8>,
    /// WeekNDay week of month: 1..5 (days 1–7 …), 6 the last 7 days, 7..9 the weeks before (omitted: any).
    pub week: Option<u8>,
    /// WeekNDay day of week, `mon` … `sun` (omitted: any).
    pub weekday: Option<String>,
}

/// One `[[device.calendar]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CalendarSection {
    /// Its instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Date_List.
    #[serde(default)]
    pub dates: Vec<EntrySection>,
    /// Let WriteProperty change Date_List.
    #[serde(default)]
    pub writable: bool,
}

/// One reference a schedule writes to.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ReferenceSection {
    /// Another device, by instance (omitted: this device).
    pub device: Option<u32>,
    /// `type,instance` (`analog-value,1`).
    pub object: String,
    /// Property name (`present-value`).
    pub property: String,
    /// An array element.
    pub index: Option<u32>,
}

/// One `[[device.schedule.exception]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExceptionSection {
    /// The days Calendar `calendar` names…
    pub calendar: Option<u32>,
    /// … or these (as a calendar entry).
    pub date: Option<String>,
    /// Range start.
    pub from: Option<String>,
    /// Range end.
    pub to: Option<String>,
    /// WeekNDay month.
    pub month: Option<u8>,
    /// WeekNDay week.
    pub week: Option<u8>,
    /// WeekNDay day of week.
    pub weekday: Option<String>,
    /// 1 (highest) … 16.
    pub priority: u8,
    /// `[["HH:MM", value], …]`.
    #[serde(default)]
    pub values: Vec<(String, toml::Value)>,
}

/// One `[[device.schedule]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSection {
    /// Its instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The datatype of its values.
    #[serde(rename = "type")]
    pub datatype: String,
    /// Schedule_Default.
    pub default: toml::Value,
    /// Priority_For_Writing.
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// Effective_Period start.
    pub effective_from: Option<String>,
    /// Effective_Period end.
    pub effective_to: Option<String>,
    /// List_Of_Object_Property_References.
    #[serde(default)]
    pub references: Vec<ReferenceSection>,
    /// Weekly_Schedule by day (`mon` … `sun`).
    #[serde(default)]
    pub weekly: BTreeMap<String, Vec<(String, toml::Value)>>,
    /// Exception_Schedule.
    #[serde(default, rename = "exception")]
    pub exceptions: Vec<ExceptionSection>,
    /// Let WriteProperty change it.
    #[serde(default)]
    pub writable: bool,
}

fn default_priority() -> u8 {
    16
}

fn any_date() -> Date {
    Date { year: UNSPECIFIED, month: UNSPECIFIED, day: UNSPECIFIED, weekday: UNSPECIFIED }
}

/// `YYYY-MM-DD` with `*` wildcards (and `last`/`odd`/`even` days, `odd`/`even` months).
pub fn date(text: &str) -> anyhow::Result<Date> {
    let bad = || anyhow::anyhow!("date {text:?}: expected YYYY-MM-DD (a field may be *)");
    let [y, m, d] = <[&str; 3]>::try_from(text.trim().split('-').collect::<Vec<_>>()).map_err(|_| bad())?;
    let year = match y {
        "*" => UNSPECIFIED,
        y => y.parse::<u16>().ok().filter(|y| (1900..2155).contains(y)).map(|y| (y - 1900) as u8).ok_or_else(bad)?,
    };
    let month = match m {
        "*" => UNSPECIFIED,
        "odd" => 13,
        "even" => 14,
        m => m.parse::<u8>().ok().filter(|m| (1..=12).contains(m)).ok_or_else(bad)?,
    };
    let day = match d {
        "*" => UNSPECIFIED,
        "last" => 32,
        "odd" => 33,
        "even" => 34,
        d => d.parse::<u8>().ok().filter(|d| (1..=31).contains(d)).ok_or_else(bad)?,
    };
    Ok(Date { year, month, day, weekday: UNSPECIFIED })
}

fn weekday(text: &str) -> anyhow::Result<u8> {
    DAYS.iter()
        .position(|d| d.eq_ignore_ascii_case(text.trim()))
        .map(|i| i as u8 + 1)
        .with_context(|| format!("weekday {text:?}: expected one of {}", DAYS.join(", ")))
}

fn entry(
    date_text: &Option<String>,
    from: &Option<String>,
    to: &Option<String>,
    week: (Option<u8>, Option<u8>, &Option<String>),
) -> anyhow::Result<Option<CalendarEntry>> {
    let (month, week_of_month, day_of_week) = week;
    let week_given = month.is_some() || week_of_month.is_some() || day_of_week.is_some();
    let given = [date_text.is_some(), from.is_some() || to.is_some(), week_given];
    ensure!(given.iter().filter(|g| **g).count() <= 1, "give one of date, from/to, or month/week/weekday");
    if let Some(d) = date_text {
        return Ok(Some(CalendarEntry::Date(date(d)?)));
    }
    if from.is_some() || to.is_some() {
        let end = |t: &Option<String>| t.as_deref().map(date).transpose().map(|d| d.unwrap_or_else(any_date));
        let range = DateRange { start: end(from)?, end: end(to)? };
        ensure!(range.is_valid(), "from and to are whole dates (YYYY-MM-DD, no *) or left out");
        return Ok(Some(CalendarEntry::DateRange(range)));
    }
    if week_given {
        ensure!(month.is_none_or(|m| (1..=14).contains(&m)), "month: 1..12, 13 odd, 14 even");
        ensure!(week_of_month.is_none_or(|w| (1..=9).contains(&w)), "week: 1..9");
        return Ok(Some(CalendarEntry::WeekNDay(WeekNDay {
            month: month.unwrap_or(UNSPECIFIED),
            week_of_month: week_of_month.unwrap_or(UNSPECIFIED),
            day_of_week: day_of_week.as_deref().map(weekday).transpose()?.unwrap_or(UNSPECIFIED),
        })));
    }
    Ok(None)
}

impl EntrySection {
    /// The Date_List entry.
    pub fn resolve(&self) -> anyhow::Result<CalendarEntry> {
        entry(&self.date, &self.from, &self.to, (self.month, self.week, &self.weekday))?
            .context("a calendar entry gives date, from/to, or month/week/weekday")
    }
}

impl CalendarSection {
    /// The server's Calendar configuration.
    pub fn resolve(&self) -> anyhow::Result<CalendarConfig> {
        let what = || format!("[[device.calendar]] instance {}", self.instance);
        ensure!(self.instance < (1 << 22), "{}: instance out of range (0..4194303)", what());
        ensure!(self.dates.len() <= MAX_DATES, "{}: at most {MAX_DATES} dates", what());
        let dates =
            self.dates.iter().map(EntrySection::resolve).collect::<anyhow::Result<Vec<_>>>().with_context(what)?;
        Ok(CalendarConfig {
            instance: self.instance,
            name: self.name.clone(),
            description: self.description.clone(),
            dates,
            writable: self.writable,
        })
    }
}

/// A TOML value as a value of `datatype`; the string `"null"` is NULL.
fn value(datatype: &str, v: &toml::Value) -> anyhow::Result<Value> {
    if v.as_str() == Some("null") {
        return Ok(Value::Null);
    }
    let wrong = || anyhow::anyhow!("value {v}: not a {datatype}");
    Ok(match datatype {
        "real" => Value::Real(v.as_float().or(v.as_integer().map(|i| i as f64)).ok_or_else(wrong)? as f32),
        "double" => Value::Double(v.as_float().or(v.as_integer().map(|i| i as f64)).ok_or_else(wrong)?),
        "unsigned" => Value::Unsigned(v.as_integer().and_then(|i| u64::try_from(i).ok()).ok_or_else(wrong)?),
        "signed" => Value::Signed(v.as_integer().ok_or_else(wrong)?),
        "boolean" => Value::Boolean(v.as_bool().ok_or_else(wrong)?),
        "enumerated" => Value::Enumerated(v.as_integer().and_then(|i| u32::try_from(i).ok()).ok_or_else(wrong)?),
        "binary" => match v.as_str() {
            Some("active") => Value::Enumerated(1),
            Some("inactive") => Value::Enumerated(0),
            _ => bail!("value {v}: a binary value is \"active\" or \"inactive\""),
        },
        other => bail!("type {other:?}: expected real, double, unsigned, signed, boolean, enumerated or binary"),
    })
}

fn time_values(datatype: &str, list: &[(String, toml::Value)]) -> anyhow::Result<Vec<TimeValue>> {
    ensure!(list.len() <= MAX_TIME_VALUES, "at most {MAX_TIME_VALUES} time-values a day");
    list.iter()
        .map(|(t, v)| Ok(TimeValue { time: crate::notification_config::time_of_day(t)?, value: value(datatype, v)? }))
        .collect()
}

impl ReferenceSection {
    fn resolve(&self) -> anyhow::Result<DeviceObjectPropertyReference> {
        let object: ObjectIdentifier =
            self.object.parse().map_err(|_| anyhow::anyhow!("object {:?}: expected TYPE,INSTANCE", self.object))?;
        let property = PropertyIdentifier::from_name(&self.property)
            .with_context(|| format!("property {:?}: not a property name", self.property))?;
        let device = self
            .device
            .map(|d| ObjectIdentifier::new(ObjectType::DEVICE, d).context("device instance out of range"))
            .transpose()?;
        Ok(DeviceObjectPropertyReference { object, property, array_index: self.index, device })
    }
}

impl ScheduleSection {
    /// The server's Schedule configuration.
    pub fn resolve(&self) -> anyhow::Result<ScheduleConfig> {
        let what = || format!("[[device.schedule]] instance {}", self.instance);
        ensure!(self.instance < (1 << 22), "{}: instance out of range (0..4194303)", what());
        ensure!((1..=16).contains(&self.priority), "{}: priority is 1..16", what());
        ensure!(self.references.len() <= MAX_REFERENCES, "{}: at most {MAX_REFERENCES} references", what());
        ensure!(self.exceptions.len() <= MAX_EXCEPTIONS, "{}: at most {MAX_EXCEPTIONS} exceptions", what());
        let t = self.datatype.as_str();
        let default = value(t, &self.default).with_context(|| format!("{}: default", what()))?;
        for day in self.weekly.keys() {
            ensure!(DAYS.contains(&day.as_str()), "{}: weekly.{day}: expected one of {}", what(), DAYS.join(", "));
        }
        let weekly = DAYS
            .iter()
            .map(|d| {
                time_values(t, self.weekly.get(*d).map_or(&[][..], Vec::as_slice))
                    .with_context(|| format!("{}: weekly.{d}", what()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let exceptions = self
            .exceptions
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let here = || format!("{}: exception {}", what(), i + 1);
                ensure!((1..=16).contains(&e.priority), "{}: priority is 1..16", here());
                let dates = entry(&e.date, &e.from, &e.to, (e.month, e.week, &e.weekday)).with_context(here)?;
                let period = match (e.calendar, dates) {
                    (Some(c), None) => SpecialEventPeriod::CalendarReference(
                        ObjectIdentifier::new(ObjectType::CALENDAR, c).context("calendar instance out of range")?,
                    ),
                    (None, Some(entry)) => SpecialEventPeriod::CalendarEntry(entry),
                    _ => bail!("{}: give either calendar or the days (date, from/to, month/week/weekday)", here()),
                };
                Ok(SpecialEvent {
                    period,
                    time_values: time_values(t, &e.values).with_context(here)?,
                    priority: e.priority,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let bound = |t: &Option<String>| t.as_deref().map(date).transpose().map(|d| d.unwrap_or_else(any_date));
        let period = DateRange {
            start: bound(&self.effective_from).with_context(what)?,
            end: bound(&self.effective_to).with_context(what)?,
        };
        ensure!(period.is_valid(), "{}: effective_from and effective_to are whole dates (no *) or left out", what());
        Ok(ScheduleConfig {
            instance: self.instance,
            name: self.name.clone(),
            description: self.description.clone(),
            effective_period: period,
            weekly,
            exceptions,
            default,
            references: self
                .references
                .iter()
                .map(ReferenceSection::resolve)
                .collect::<anyhow::Result<_>>()
                .with_context(what)?,
            priority_for_writing: self.priority,
            writable: self.writable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_example_resolves() {
        let text = include_str!("schedule_config.rs");
        let example: String = text
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.strip_prefix("//! ").unwrap_or("").to_string() + "\n")
            .collect();
        #[derive(Deserialize)]
        struct Device {
            calendar: Vec<CalendarSection>,
            schedule: Vec<ScheduleSection>,
        }
        #[derive(Deserialize)]
        struct File {
            device: Device,
        }
        let file: File = toml::from_str(&example).unwrap();
        let calendar = file.device.calendar[0].resolve().unwrap();
        assert_eq!(calendar.dates.len(), 3);
        let schedule = file.device.schedule[0].resolve().unwrap();
        assert_eq!(schedule.weekly[0][1].value, Value::Null);
        assert_eq!(schedule.weekly[6], vec![]);
        assert_eq!(schedule.references[1].device.map(|d| d.instance), Some(1234));
        assert_eq!(schedule.exceptions[0].priority, 10);
    }

    #[test]
    fn bad_values_dates_and_priorities_are_named() {
        assert!(value("real", &toml::Value::Boolean(true)).unwrap_err().to_string().contains("not a real"));
        assert!(date("2026-13-01").is_err());
        assert_eq!(date("*-12-last").unwrap().day, 32);
        let e = EntrySection { date: Some("*-12-25".into()), month: Some(12), ..Default::default() };
        assert!(e.resolve().is_err(), "two kinds of entry at once");
    }
}
