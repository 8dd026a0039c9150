//! Dates and times on the command line: ISO 8601 in, a BACnet Date and Time
//! (a `BACnetDateTime`) out, for `timesync` and `readrange --time`.
//!
//! A time with an offset (`2025-06-01T12:30:00Z`, `…+02:00`) is an instant:
//! it is converted to the zone the service wants (this machine's local zone,
//! or UTC). A time without one (`2025-06-01T14:30:00`) is a wall-clock time
//! and goes out as written. Fractions of a second are kept to hundredths.

use bacnet::{Date, Time};
use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// The zone a service's date and time are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Zone {
    /// This machine's local zone (TimeSynchronization, ReadRange by time).
    Local,
    /// UTC (UTCTimeSynchronization).
    Utc,
}

impl Zone {
    fn tz(self) -> TimeZone {
        match self {
            Zone::Local => TimeZone::system(),
            Zone::Utc => TimeZone::UTC,
        }
    }
}

/// The current date and time in `zone`.
pub(crate) fn now(zone: Zone) -> Result<(Date, Time), String> {
    to_bacnet(Timestamp::now().to_zoned_datetime(zone.tz()).datetime())
}

/// Parse an ISO 8601 date and time (see the module doc) for `zone`.
pub(crate) fn parse(text: &str, zone: Zone) -> Result<(Date, Time), String> {
    let t = text.trim();
    let civil = if let Ok(instant) = t.parse::<Timestamp>() {
        instant.to_zoned_datetime(zone.tz()).datetime()
    } else {
        t.parse::<DateTime>().map_err(|_| {
            format!(
                "invalid time `{t}`: expected ISO 8601, e.g. 2025-06-01T14:30:00 (sent as written) \
                 or 2025-06-01T12:30:00Z / 2025-06-01T14:30:00+02:00 (converted)"
            )
        })?
    };
    to_bacnet(civil)
}

/// A civil date and time as BACnet's Date and Time, weekday included.
fn to_bacnet(dt: DateTime) -> Result<(Date, Time), String> {
    let year = dt.year();
    // The Date's year octet is year - 1900; 255 means "unspecified".
    if !(1900..=2154).contains(&year) {
        return Err(format!("year {year} cannot be sent: a BACnet Date holds 1900 to 2154"));
    }
    let date = Date {
        year: (year - 1900) as u8,
        month: dt.month() as u8,
        day: dt.day() as u8,
        weekday: dt.weekday().to_monday_one_offset() as u8,
    };
    let time = Time {
        hour: dt.hour() as u8,
        minute: dt.minute() as u8,
        second: dt.second() as u8,
        hundredths: (dt.subsec_nanosecond() / 10_000_000) as u8,
    };
    Ok((date, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_times_go_out_as_written_with_their_weekday() {
        let (d, t) = parse("2025-06-01T14:30:05.678", Zone::Utc).unwrap();
        assert_eq!(d, Date { year: 125, month: 6, day: 1, weekday: 7 }, "1 June 2025 is a Sunday");
        assert_eq!(t, Time { hour: 14, minute: 30, second: 5, hundredths: 67 });
        assert_eq!(parse("2025-06-01T14:30:05", Zone::Local).unwrap().1.hour, 14, "no offset: no conversion");
    }

    #[test]
    fn instants_are_converted_to_the_zone() {
        let (d, t) = parse("2025-06-01T00:30:00+02:00", Zone::Utc).unwrap();
        assert_eq!((d.day, d.weekday, t.hour, t.minute), (31, 6, 22, 30), "Saturday 31 May, 22:30 UTC");
        assert_eq!(parse("2025-06-01T12:00:00Z", Zone::Utc).unwrap().1.hour, 12);
    }

    #[test]
    fn times_a_bacnet_date_cannot_hold_are_refused() {
        assert!(parse("1899-12-31T23:59:59", Zone::Utc).unwrap_err().contains("1900 to 2154"));
        assert!(parse("2155-01-01T00:00:00", Zone::Utc).is_err());
        assert!(parse("yesterday", Zone::Utc).unwrap_err().contains("ISO 8601"));
        assert!(now(Zone::Utc).is_ok());
    }
}
