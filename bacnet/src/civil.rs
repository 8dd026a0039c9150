//! Instants as BACnet sees them: a Unix time in milliseconds and a UTC
//! offset turned into the local Date (weekday included) and Time that
//! Local_Date, Local_Time and time stamps carry.
//!
//! Must never: read a clock (the instant comes in).

use crate::codec::{Date, Time};

const MS_PER_DAY: i64 = 86_400_000;

/// The local Date and Time of the instant `unix_ms` (milliseconds since
/// 1970-01-01T00:00:00Z) seen `utc_offset_minutes` ahead of UTC; to the
/// hundredth of a second. A year outside 1900..=2154 is unspecified (255).
pub fn local_date_time(unix_ms: i64, utc_offset_minutes: i16) -> (Date, Time) {
    let local = unix_ms.saturating_add(i64::from(utc_offset_minutes) * 60_000);
    let days = local.div_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday (4).
    let weekday = (days + 3).rem_euclid(7) as u8 + 1;
    let year = u8::try_from(year - 1900).ok().filter(|y| *y != 255).unwrap_or(255);
    let ms = local.rem_euclid(MS_PER_DAY);
    let time = Time {
        hour: (ms / 3_600_000) as u8,
        minute: (ms / 60_000 % 60) as u8,
        second: (ms / 1000 % 60) as u8,
        hundredths: (ms % 1000 / 10) as u8,
    };
    (Date { year, month, day, weekday }, time)
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_and_a_leap_day_seen_from_ahead_of_utc() {
        let (d, t) = local_date_time(0, 0);
        assert_eq!(d, Date { year: 70, month: 1, day: 1, weekday: 4 }, "a Thursday");
        assert_eq!(t, Time { hour: 0, minute: 0, second: 0, hundredths: 0 });
        // 2024-02-29T23:30:15.250Z from UTC+01:00: Friday 1 March, 00:30:15.25.
        let (d, t) = local_date_time(1_709_249_415_250, 60);
        assert_eq!(d, Date { year: 124, month: 3, day: 1, weekday: 5 });
        assert_eq!(t, Time { hour: 0, minute: 30, second: 15, hundredths: 25 });
    }
}
