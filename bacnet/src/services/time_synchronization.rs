//! TimeSynchronization (Clause 16.7) and UTCTimeSynchronization (Clause
//! 16.8): a time master sets the clocks of other devices.

use super::ServiceCodec;
use super::common::app_field;
use crate::codec::{Date, Reader, Time, write_app};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A TimeSynchronization request: the sender's *local* date and time.
///
/// ```text
/// TimeSynchronization-Request ::= SEQUENCE {
///     time BACnetDateTime
/// }
///
/// BACnetDateTime ::= SEQUENCE {
///     date Date,  -- application tagged
///     time Time   -- application tagged
/// }
/// ```
///
/// TimeSynchronization and UTCTimeSynchronization have the same body but
/// different meanings, so they are two types: a receiver cannot apply a UTC
/// time as local time by accident. Fields may hold "unspecified" (255) octets
/// on the wire; the codec keeps them and leaves it to the application to
/// refuse a time that is not a specific one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeSynchronizationRequest {
    /// The local date.
    pub date: Date,
    /// The local time.
    pub time: Time,
}

/// A UTCTimeSynchronization request: the sender's date and time in UTC.
///
/// ```text
/// UTCTimeSynchronization-Request ::= SEQUENCE {
///     time BACnetDateTime
/// }
/// ```
///
/// Same encoding as [`TimeSynchronizationRequest`]; see there for why it is
/// a separate type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UTCTimeSynchronizationRequest {
    /// The UTC date.
    pub date: Date,
    /// The UTC time.
    pub time: Time,
}

/// Append an application-tagged `BACnetDateTime` (Date then Time).
pub(crate) fn write_date_time(out: &mut Vec<u8>, date: &Date, time: &Time) {
    write_app(out, date);
    write_app(out, time);
}

/// Read an application-tagged `BACnetDateTime`; `date_what` and `time_what`
/// name the two halves in errors.
pub(crate) fn read_date_time(
    r: &mut Reader<'_>,
    date_what: &'static str,
    time_what: &'static str,
) -> Result<(Date, Time), DecodeError> {
    Ok((app_field(r, date_what)?, app_field(r, time_what)?))
}

impl ServiceCodec for TimeSynchronizationRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_date_time(out, &self.date, &self.time);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let (date, time) = read_date_time(r, "date", "time")?;
        Ok(TimeSynchronizationRequest { date, time })
    }
}

impl ServiceCodec for UTCTimeSynchronizationRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_date_time(out, &self.date, &self.time);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let (date, time) = read_date_time(r, "date", "time")?;
        Ok(UTCTimeSynchronizationRequest { date, time })
    }
}
