//! Wall-clock time as the host hands it over, and its BACnet Date and Time.

use bacnet::{Date, Time};

const MS_PER_DAY: i64 = 86_400_000;

/// Wall-clock time as the host knows it (after TimeSynchronization).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DateTime {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    pub unix_ms: u64,
    /// Minutes to add to UTC for local time (BACnet UTC_Offset is the negation).
    pub utc_offset_minutes: i16,
}

impl DateTime {
    /// UTC time `unix_ms`, local time `utc_offset_minutes` ahead of it.
    pub const fn new(unix_ms: u64, utc_offset_minutes: i16) -> Self {
        DateTime { unix_ms, utc_offset_minutes }
    }

    /// Seconds since the Unix epoch, UTC, as a float (for simulations).
    pub fn unix_secs_f64(&self) -> f64 {
        self.unix_ms as f64 / 1000.0
    }

    /// Milliseconds since the Unix epoch in local time.
    fn local_ms(&self) -> i64 {
        self.unix_ms as i64 + self.utc_offset_minutes as i64 * 60_000
    }

    /// Seconds since local midnight, 0.0 ≤ s < 86400.0.
    pub fn local_seconds_of_day(&self) -> f64 {
        self.local_ms().rem_euclid(MS_PER_DAY) as f64 / 1000.0
    }

    /// The local BACnet Date (Local_Date): year, month, day and weekday
    /// (1 = Monday). A year outside 1900..=2154 is unspecified (255).
    pub fn local_date(&self) -> Date {
        bacnet::civil::local_date_time(self.unix_ms as i64, self.utc_offset_minutes).0
    }

    /// The local BACnet Time (Local_Time), to the hundredth of a second.
    pub fn local_time(&self) -> Time {
        bacnet::civil::local_date_time(self.unix_ms as i64, self.utc_offset_minutes).1
    }

    /// UTC_Offset: minutes to add to local time for UTC (the negation of
    /// `utc_offset_minutes`).
    pub fn bacnet_utc_offset(&self) -> i64 {
        -(self.utc_offset_minutes as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_is_thursday_1970_01_01_at_midnight() {
        let t = DateTime::new(0, 0);
        assert_eq!(t.local_date(), Date { year: 70, month: 1, day: 1, weekday: 4 });
        assert_eq!(t.local_time(), Time { hour: 0, minute: 0, second: 0, hundredths: 0 });
    }

    #[test]
    fn local_date_and_time_apply_the_offset_across_midnight() {
        // 2024-02-29T23:30:15.250Z, a leap day (Thursday), seen from UTC+01:00.
        let t = DateTime::new(1_709_249_415_250, 60);
        assert_eq!(t.local_date(), Date { year: 124, month: 3, day: 1, weekday: 5 });
        assert_eq!(t.local_time(), Time { hour: 0, minute: 30, second: 15, hundredths: 25 });
        assert_eq!(t.bacnet_utc_offset(), -60);
        // And from UTC-05:00 it is still the 29th.
        let t = DateTime::new(1_709_249_415_250, -300);
        assert_eq!(t.local_date(), Date { year: 124, month: 2, day: 29, weekday: 4 });
        assert_eq!(t.local_time().hour, 18);
    }

    #[test]
    fn a_local_time_before_the_epoch_is_still_a_valid_date() {
        let t = DateTime::new(0, -60);
        assert_eq!(t.local_date(), Date { year: 69, month: 12, day: 31, weekday: 3 });
        assert_eq!(t.local_time().hour, 23);
    }
}
