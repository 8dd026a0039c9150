//! Which days a calendar entry names (Clause 12.9.8 Date_List, Clause 21
//! BACnetCalendarEntry), for a fully specified local date.

use super::{CalendarEntry, DateRange, WeekNDay};
use crate::codec::{Date, UNSPECIFIED};

/// Days in `month` (1..=12) of `year` (Gregorian).
pub fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        _ => 31,
    }
}

/// True when `d` names one day: year, month (1..=12) and day (1..=31 and
/// within the month) given.
pub fn is_fully_specified(d: Date) -> bool {
    d.year().is_some_and(|y| (1..=12).contains(&d.month) && d.day >= 1 && d.day <= days_in_month(y, d.month))
}

/// The day of the week of a fully specified `d`: 1 (Monday) … 7.
fn weekday(d: Date) -> u8 {
    const OFFSETS: [u16; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let mut y = 1900 + d.year as u16;
    if d.month < 3 {
        y -= 1;
    }
    // Sakamoto's method: 0 = Sunday.
    let sunday_first = (y + y / 4 - y / 100 + y / 400 + OFFSETS[d.month as usize - 1] + d.day as u16) % 7;
    if sunday_first == 0 { 7 } else { sunday_first as u8 }
}

fn month_matches(code: u8, month: u8) -> bool {
    match code {
        UNSPECIFIED => true,
        13 => month % 2 == 1,
        14 => month.is_multiple_of(2),
        m => m == month,
    }
}

impl CalendarEntry {
    /// True when the entry names the fully specified local date `date`
    /// (its weekday field is recomputed, not trusted).
    pub fn matches(&self, date: Date) -> bool {
        if !is_fully_specified(date) {
            return false;
        }
        match self {
            CalendarEntry::Date(pattern) => date_pattern_matches(*pattern, date),
            CalendarEntry::DateRange(range) => range.is_valid() && range.contains(date),
            CalendarEntry::WeekNDay(w) => w.matches(date),
        }
    }
}

/// A Date with wildcards matched against a fully specified date: year 255
/// any; month 13 odd, 14 even; day 32 the month's last, 33 odd, 34 even;
/// weekday 255 any.
pub(super) fn date_pattern_matches(pattern: Date, date: Date) -> bool {
    if !is_fully_specified(date) {
        return false;
    }
    let last = days_in_month(1900 + date.year as u16, date.month);
    let day = match pattern.day {
        UNSPECIFIED => true,
        32 => date.day == last,
        33 => date.day % 2 == 1,
        34 => date.day.is_multiple_of(2),
        d => d == date.day,
    };
    (pattern.year == UNSPECIFIED || pattern.year == date.year)
        && month_matches(pattern.month, date.month)
        && day
        && (pattern.weekday == UNSPECIFIED || pattern.weekday == weekday(date))
}

impl DateRange {
    /// True when each end is a fully specified date or entirely
    /// unspecified (an open end): a range end with some fields given and
    /// others not names no day (Clause 21, BACnetDateRange).
    pub fn is_valid(&self) -> bool {
        let open = |d: Date| d.year == UNSPECIFIED && d.month == UNSPECIFIED && d.day == UNSPECIFIED;
        [self.start, self.end].iter().all(|d| is_fully_specified(*d) || open(*d))
    }

    /// True when `date` (fully specified) is within the range, ends
    /// included. An end that is not a fully specified date is open.
    pub fn contains(&self, date: Date) -> bool {
        if !is_fully_specified(date) {
            return false;
        }
        let key = |d: Date| (d.year, d.month, d.day);
        let after_start = !is_fully_specified(self.start) || key(date) >= key(self.start);
        let before_end = !is_fully_specified(self.end) || key(date) <= key(self.end);
        after_start && before_end
    }
}

impl WeekNDay {
    /// True when `date` (fully specified) is in the month, week and day
    /// the pattern names.
    pub fn matches(&self, date: Date) -> bool {
        if !is_fully_specified(date) {
            return false;
        }
        let last = days_in_month(1900 + date.year as u16, date.month);
        let week = match self.week_of_month {
            UNSPECIFIED => true,
            w @ 1..=5 => (date.day - 1) / 7 + 1 == w,
            // 6: the last 7 days; 7, 8, 9: each 7 days before the previous.
            w @ 6..=9 => {
                let from_end = last - date.day; // 0 on the last day
                from_end / 7 == w - 6
            }
            _ => false,
        };
        month_matches(self.month, date.month)
            && week
            && (self.day_of_week == UNSPECIFIED || self.day_of_week == weekday(date))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: u16, m: u8, d: u8) -> Date {
        Date { year: (y - 1900) as u8, month: m, day: d, weekday: UNSPECIFIED }
    }

    fn pattern(y: u8, m: u8, d: u8, w: u8) -> CalendarEntry {
        CalendarEntry::Date(Date { year: y, month: m, day: d, weekday: w })
    }

    #[test]
    fn weekdays_of_known_dates() {
        assert_eq!(weekday(date(2026, 12, 3)), 4); // a Thursday
        assert_eq!(weekday(date(2000, 2, 29)), 2); // a Tuesday
        assert_eq!(weekday(date(2026, 1, 4)), 7); // a Sunday
    }

    #[test]
    fn christmas_every_year_and_the_last_day_of_february() {
        let christmas = pattern(UNSPECIFIED, 12, 25, UNSPECIFIED);
        assert!(christmas.matches(date(2026, 12, 25)));
        assert!(christmas.matches(date(2031, 12, 25)));
        assert!(!christmas.matches(date(2026, 12, 24)));
        let last = pattern(UNSPECIFIED, 2, 32, UNSPECIFIED);
        assert!(last.matches(date(2028, 2, 29)));
        assert!(!last.matches(date(2028, 2, 28)));
        assert!(last.matches(date(2026, 2, 28)));
    }

    #[test]
    fn odd_and_even_months_and_days_and_a_weekday() {
        assert!(pattern(UNSPECIFIED, 13, 33, UNSPECIFIED).matches(date(2026, 1, 3)));
        assert!(!pattern(UNSPECIFIED, 14, 33, UNSPECIFIED).matches(date(2026, 1, 3)));
        assert!(pattern(UNSPECIFIED, 14, 34, UNSPECIFIED).matches(date(2026, 12, 4)));
        let fridays = pattern(UNSPECIFIED, UNSPECIFIED, UNSPECIFIED, 5);
        assert!(fridays.matches(date(2026, 12, 4)));
        assert!(!fridays.matches(date(2026, 12, 3)));
    }

    #[test]
    fn a_range_includes_both_ends_and_an_unspecified_end_is_open() {
        let range = DateRange { start: date(2026, 12, 24), end: date(2027, 1, 1) };
        assert!(CalendarEntry::DateRange(range).matches(date(2026, 12, 24)));
        assert!(CalendarEntry::DateRange(range).matches(date(2027, 1, 1)));
        assert!(!CalendarEntry::DateRange(range).matches(date(2027, 1, 2)));
        assert!(!CalendarEntry::DateRange(range).matches(date(2026, 12, 23)));
        let any = Date { year: UNSPECIFIED, month: UNSPECIFIED, day: UNSPECIFIED, weekday: UNSPECIFIED };
        let from = DateRange { start: date(2026, 6, 1), end: any };
        assert!(from.contains(date(2100, 1, 1)));
        assert!(!from.contains(date(2026, 5, 31)));
    }

    #[test]
    fn week_n_day_first_monday_and_last_friday() {
        // Labor day in the US: the first Monday of September.
        let first_monday = WeekNDay { month: 9, week_of_month: 1, day_of_week: 1 };
        assert!(first_monday.matches(date(2026, 9, 7)));
        assert!(!first_monday.matches(date(2026, 9, 14)));
        // The last Friday of any month: week 6 is the last seven days.
        let last_friday = WeekNDay { month: UNSPECIFIED, week_of_month: 6, day_of_week: 5 };
        assert!(last_friday.matches(date(2026, 12, 25)));
        assert!(!last_friday.matches(date(2026, 12, 18)));
        let second_to_last_week = WeekNDay { month: 12, week_of_month: 7, day_of_week: UNSPECIFIED };
        assert!(second_to_last_week.matches(date(2026, 12, 18)));
        assert!(!second_to_last_week.matches(date(2026, 12, 25)));
    }

    #[test]
    fn a_range_end_with_only_some_fields_is_not_valid_and_names_no_day() {
        let partial = Date { year: UNSPECIFIED, month: 12, day: 24, weekday: UNSPECIFIED };
        let range = DateRange { start: partial, end: date(2026, 12, 31) };
        assert!(!range.is_valid());
        assert!(!CalendarEntry::DateRange(range).matches(date(2026, 12, 25)));
    }

    #[test]
    fn the_matchers_take_any_octets_without_panicking() {
        for day in [0, 1, 31, 32, 255] {
            for month in [0, 1, 12, 13, 255] {
                let d = Date { year: 126, month, day, weekday: UNSPECIFIED };
                let _ = WeekNDay { month: 255, week_of_month: 6, day_of_week: 1 }.matches(d);
                let _ = date_pattern_matches(Date { year: 255, month: 255, day: 32, weekday: 1 }, d);
                let _ = DateRange { start: d, end: d }.contains(d);
            }
        }
    }

    #[test]
    fn a_date_that_is_not_fully_specified_matches_nothing() {
        let any = pattern(UNSPECIFIED, UNSPECIFIED, UNSPECIFIED, UNSPECIFIED);
        assert!(any.matches(date(2026, 12, 3)));
        assert!(!any.matches(Date { year: UNSPECIFIED, month: 12, day: 3, weekday: UNSPECIFIED }));
        assert!(!any.matches(date(2026, 2, 30)));
    }
}
