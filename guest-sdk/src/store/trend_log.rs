//! Trend Log objects (Clause 12.25): polled logging of one property of an
//! object of this device into a ring buffer of `BACnetLogRecord`s.
//!
//! A record is taken at the first tick after the log is enabled and then
//! every Log_Interval, at the time the host hands to `tick` (the store reads
//! no clock for it). When the buffer holds Buffer_Size records the oldest is
//! dropped, or, with Stop_When_Full, logging stops and Enable becomes FALSE.
//! Every record added counts in Total_Record_Count, which wraps from
//! 2^32 - 1 to 1 (Clause 12.25.16); the newest record's sequence number is
//! Total_Record_Count and the others count down from it.
//!
//! ```text
//! BACnetLogRecord ::= SEQUENCE {
//!     timestamp [0] BACnetDateTime,
//!     logDatum [1] CHOICE {
//!         log-status [0] BACnetLogStatus, boolean-value [1] BOOLEAN,
//!         real-value [2] REAL, enumerated-value [3] ENUMERATED,
//!         unsigned-value [4] Unsigned, integer-value [5] INTEGER,
//!         bitstring-value [6] BIT STRING, null-value [7] NULL,
//!         failure [8] Error, time-change [9] REAL,
//!         any-value [10] ABSTRACT-SYNTAX.&Type
//!     },
//!     statusFlags [2] BACnetStatusFlags OPTIONAL
//! }
//! BACnetLogStatus ::= BIT STRING { log-disabled (0), buffer-purged (1), log-interrupted (2) }
//! ```
//!
//! Memory is bounded: Buffer_Size is at most [`MAX_BUFFER_SIZE`], and a
//! logged value that is not one of the primitive choices takes at most
//! [`MAX_ANY_VALUE_OCTETS`] encoded (a longer one is logged as a failure,
//! property/value-too-long).

use super::{StoreError, Written};
use crate::DateTime;
use crate::model::PropertyRef;
use bacnet::codec::{BitString, Date, Enumerated, Primitive, Time};
use bacnet::services::BacnetError;
use bacnet::{
    AnyValue, Element, ErrorClass, ErrorCode, ObjectIdentifier, ObjectType, PropertyIdentifier as P, Reliability, Value,
};
use std::collections::VecDeque;

/// The largest Buffer_Size a Trend Log may have: 10,000 records, a few
/// hundred KiB of plugin memory (about 22 octets a record on the wire).
pub const MAX_BUFFER_SIZE: u32 = 10_000;

/// Buffer_Size of a Trend Log that sets none.
pub const DEFAULT_BUFFER_SIZE: u32 = 1000;

/// Log_Interval of a Trend Log that sets none: 60 s, in centiseconds.
pub const DEFAULT_LOG_INTERVAL: u32 = 6000;

/// The most octets a logged value takes as `any-value`; a longer value is
/// logged as the failure property/value-too-long.
pub const MAX_ANY_VALUE_OCTETS: usize = 128;

/// `BACnetLoggingType` polled (0): the only logging this store does.
const LOGGING_TYPE_POLLED: u32 = 0;

/// The declaration of a Trend Log, for
/// [`Store::add_trend_log`](crate::Store::add_trend_log).
///
/// The log's rules (Clause 12.25):
/// - polled logging (Logging_Type polled): a record at the first tick after
///   the log is enabled, then every Log_Interval, stamped with the local
///   date and time the host hands to `tick`; missed intervals are skipped;
/// - each record holds the logged value as its `logDatum` choice (REAL as
///   real-value, Enumerated, Unsigned, INTEGER, BOOLEAN, BIT STRING, NULL;
///   anything else as any-value up to [`MAX_ANY_VALUE_OCTETS`]; a failed
///   read as failure with its Error) and the logged object's Status_Flags
///   when it has them;
/// - a full buffer drops its oldest record, or with Stop_When_Full stops
///   logging and sets Enable to FALSE; Buffer_Size is 1..=[`MAX_BUFFER_SIZE`];
/// - Total_Record_Count counts every record added and wraps from
///   2^32 - 1 to 1; the newest record's sequence number is its value;
/// - clients write Enable (a log-status record marks each change) and
///   Record_Count = 0 (the buffer is emptied, a buffer-purged log-status
///   record added); Buffer_Size, Log_Interval and Stop_When_Full are the
///   model's;
/// - the buffer, Enable, Total_Record_Count and the schedule are handed
///   across hot swaps with the store's state.
///
/// ```
/// use trellis_guest_sdk::bacnet::{ObjectType, PropertyIdentifier as P};
/// use trellis_guest_sdk::{ObjectIdentifier, TrendLogSpec};
///
/// const ZONE_TEMP: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 1 };
/// // Present_Value of analog-input,1 every 5 minutes, the last 2,000 records.
/// let log = TrendLogSpec::new(1, "Zone Temperature Log", ZONE_TEMP).interval_secs(300).buffer_size(2000);
/// // Another property, logged until the buffer is full.
/// let flags = TrendLogSpec::new(2, "Zone Status Log", ZONE_TEMP).property(P::STATUS_FLAGS).stop_when_full(true);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TrendLogSpec {
    pub(crate) instance: u32,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) logged: PropertyRef,
    pub(crate) log_interval: u32,
    pub(crate) buffer_size: u32,
    pub(crate) stop_when_full: bool,
    pub(crate) enable: bool,
}

impl TrendLogSpec {
    /// A Trend Log logging Present_Value of `object` (an object of this
    /// device) every 60 s into a buffer of 1,000 records, enabled.
    pub fn new(instance: u32, name: &str, object: ObjectIdentifier) -> Self {
        TrendLogSpec {
            instance,
            name: name.into(),
            description: String::new(),
            logged: PropertyRef::new(object, P::PRESENT_VALUE),
            log_interval: DEFAULT_LOG_INTERVAL,
            buffer_size: DEFAULT_BUFFER_SIZE,
            stop_when_full: false,
            enable: true,
        }
    }

    /// The identifier this spec will have.
    pub fn id(&self) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::TREND_LOG, instance: self.instance }
    }

    /// Description.
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.into();
        self
    }

    /// Log another property of the object than Present_Value.
    pub fn property(mut self, property: P) -> Self {
        self.logged.property = property;
        self
    }

    /// Log one element of an array property.
    pub fn array_index(mut self, index: u32) -> Self {
        self.logged.array_index = Some(index);
        self
    }

    /// Log_Interval in centiseconds (hundredths of a second), at least 1.
    /// Records are taken at the ticks, so an interval shorter than the
    /// host's tick interval logs once a tick.
    pub fn log_interval(mut self, centiseconds: u32) -> Self {
        self.log_interval = centiseconds;
        self
    }

    /// Log_Interval in seconds.
    pub fn interval_secs(self, seconds: u32) -> Self {
        self.log_interval(seconds.saturating_mul(100))
    }

    /// Buffer_Size: records kept, 1..=[`MAX_BUFFER_SIZE`].
    pub fn buffer_size(mut self, records: u32) -> Self {
        self.buffer_size = records;
        self
    }

    /// Stop_When_Full: stop logging (Enable becomes FALSE) when the buffer
    /// is full, instead of dropping the oldest record.
    pub fn stop_when_full(mut self, stop: bool) -> Self {
        self.stop_when_full = stop;
        self
    }

    /// Start enabled (the default) or disabled; clients write Enable.
    pub fn enabled(mut self, enable: bool) -> Self {
        self.enable = enable;
        self
    }

    /// Check the spec and make the object.
    pub(crate) fn build(self) -> Result<TrendLog, StoreError> {
        let id = self.id();
        if self.buffer_size == 0 || self.buffer_size > MAX_BUFFER_SIZE || self.log_interval == 0 {
            return Err(StoreError::OutOfRange { object: id });
        }
        if matches!(self.logged.property, P::ALL | P::REQUIRED | P::OPTIONAL) {
            return Err(StoreError::OutOfRange { object: id });
        }
        Ok(TrendLog {
            id,
            name: self.name,
            description: self.description,
            logged: self.logged,
            log_interval: self.log_interval,
            buffer_size: self.buffer_size,
            stop_when_full: self.stop_when_full,
            enable: self.enable,
            reliability: Reliability::NO_FAULT_DETECTED,
            records: VecDeque::new(),
            total_record_count: 0,
            next_due_ms: None,
            written: Written::default(),
        })
    }
}

/// The `logDatum` of a record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LogDatum {
    /// `log-status [0]`: log-disabled, buffer-purged, log-interrupted.
    Status([bool; 3]),
    Boolean(bool),
    Real(f32),
    Enumerated(u32),
    Unsigned(u64),
    Signed(i64),
    BitString(BitString),
    Null,
    Failure(BacnetError),
    TimeChange(f32),
    /// `any-value [10]`: the value's elements.
    Any(Vec<Element>),
}

impl LogDatum {
    /// What a read of the logged property gives.
    pub(crate) fn from_read(read: Result<AnyValue, BacnetError>) -> LogDatum {
        let v = match read {
            Ok(v) => v,
            Err(e) => return LogDatum::Failure(e),
        };
        match v.as_primitive() {
            Some(Value::Boolean(b)) => return LogDatum::Boolean(*b),
            Some(Value::Real(x)) => return LogDatum::Real(*x),
            Some(Value::Enumerated(n)) => return LogDatum::Enumerated(*n),
            Some(Value::Unsigned(n)) => return LogDatum::Unsigned(*n),
            Some(Value::Signed(n)) => return LogDatum::Signed(*n),
            Some(Value::BitString(b)) => return LogDatum::BitString(b.clone()),
            Some(Value::Null) => return LogDatum::Null,
            _ => {}
        }
        let mut encoded = Vec::new();
        v.encode(&mut encoded);
        if encoded.len() > MAX_ANY_VALUE_OCTETS {
            return LogDatum::Failure(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::VALUE_TOO_LONG });
        }
        LogDatum::Any(v.0)
    }

    fn to_element(&self) -> Element {
        fn ctx(tag: u8, v: &impl Primitive) -> Element {
            let mut data = Vec::new();
            v.encode_content(&mut data);
            Element::Context { tag, data }
        }
        match self {
            LogDatum::Status(bits) => ctx(0, &BitString::from_bits(bits)),
            LogDatum::Boolean(b) => ctx(1, b),
            LogDatum::Real(x) => ctx(2, x),
            LogDatum::Enumerated(n) => ctx(3, &Enumerated(*n)),
            LogDatum::Unsigned(n) => ctx(4, n),
            LogDatum::Signed(n) => ctx(5, n),
            LogDatum::BitString(b) => ctx(6, b),
            LogDatum::Null => Element::Context { tag: 7, data: Vec::new() },
            LogDatum::Failure(e) => Element::Constructed {
                tag: 8,
                elements: vec![
                    Element::Application(Value::Enumerated(e.class.0)),
                    Element::Application(Value::Enumerated(e.code.0)),
                ],
            },
            LogDatum::TimeChange(x) => ctx(9, x),
            LogDatum::Any(elements) => Element::Constructed { tag: 10, elements: elements.clone() },
        }
    }

    fn from_element(e: &Element) -> Option<LogDatum> {
        fn prim<T: Primitive>(data: &[u8]) -> Option<T> {
            T::decode_content(data, 0).ok()
        }
        Some(match e {
            Element::Context { tag: 0, data } => {
                let b: BitString = prim(data)?;
                LogDatum::Status([b.get(0), b.get(1), b.get(2)])
            }
            Element::Context { tag: 1, data } => LogDatum::Boolean(prim(data)?),
            Element::Context { tag: 2, data } => LogDatum::Real(prim(data)?),
            Element::Context { tag: 3, data } => LogDatum::Enumerated(prim::<Enumerated>(data)?.0),
            Element::Context { tag: 4, data } => LogDatum::Unsigned(prim(data)?),
            Element::Context { tag: 5, data } => LogDatum::Signed(prim(data)?),
            Element::Context { tag: 6, data } => LogDatum::BitString(prim(data)?),
            Element::Context { tag: 7, data } if data.is_empty() => LogDatum::Null,
            Element::Constructed { tag: 8, elements } => match elements.as_slice() {
                [Element::Application(Value::Enumerated(class)), Element::Application(Value::Enumerated(code))] => {
                    LogDatum::Failure(BacnetError { class: ErrorClass(*class), code: ErrorCode(*code) })
                }
                _ => return None,
            },
            Element::Context { tag: 9, data } => LogDatum::TimeChange(prim(data)?),
            Element::Constructed { tag: 10, elements } => LogDatum::Any(elements.clone()),
            _ => return None,
        })
    }
}

/// One `BACnetLogRecord`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogRecord {
    pub(crate) date: Date,
    pub(crate) time: Time,
    pub(crate) datum: LogDatum,
    pub(crate) status_flags: Option<BitString>,
}

impl LogRecord {
    /// A record stamped with the local date and time of `now`.
    pub(crate) fn new(now: DateTime, datum: LogDatum, status_flags: Option<BitString>) -> Self {
        LogRecord { date: now.local_date(), time: now.local_time(), datum, status_flags }
    }

    /// Append the record's elements.
    pub(crate) fn encode(&self, out: &mut Vec<Element>) {
        out.push(Element::Constructed {
            tag: 0,
            elements: vec![Element::Application(Value::Date(self.date)), Element::Application(Value::Time(self.time))],
        });
        out.push(Element::Constructed { tag: 1, elements: vec![self.datum.to_element()] });
        if let Some(flags) = &self.status_flags {
            let mut data = Vec::new();
            flags.encode_content(&mut data);
            out.push(Element::Context { tag: 2, data });
        }
    }

    /// Records from the elements of a Log_Buffer; `None` if they are not
    /// a sequence of `BACnetLogRecord`s.
    pub(crate) fn decode_all(mut elements: &[Element]) -> Option<Vec<LogRecord>> {
        let mut out = Vec::new();
        while !elements.is_empty() {
            let [
                Element::Constructed { tag: 0, elements: ts },
                Element::Constructed { tag: 1, elements: datum },
                rest @ ..,
            ] = elements
            else {
                return None;
            };
            let [Element::Application(Value::Date(date)), Element::Application(Value::Time(time))] = ts.as_slice()
            else {
                return None;
            };
            let [datum] = datum.as_slice() else { return None };
            let datum = LogDatum::from_element(datum)?;
            elements = rest;
            let mut status_flags = None;
            if let [Element::Context { tag: 2, data }, rest @ ..] = elements {
                status_flags = Some(BitString::decode_content(data, 0).ok()?);
                elements = rest;
            }
            out.push(LogRecord { date: *date, time: *time, datum, status_flags });
        }
        Some(out)
    }
}

/// A Trend Log as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrendLog {
    pub(crate) id: ObjectIdentifier,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) logged: PropertyRef,
    /// Log_Interval, centiseconds.
    pub(crate) log_interval: u32,
    pub(crate) buffer_size: u32,
    pub(crate) stop_when_full: bool,
    pub(crate) enable: bool,
    pub(crate) reliability: Reliability,
    /// Log_Buffer, oldest first.
    pub(crate) records: VecDeque<LogRecord>,
    pub(crate) total_record_count: u32,
    /// When the next record is due (Unix ms); `None`: at the next tick.
    pub(crate) next_due_ms: Option<u64>,
    pub(crate) written: Written,
}

impl TrendLog {
    /// True when the buffer holds Buffer_Size records.
    pub(crate) fn is_full(&self) -> bool {
        self.records.len() >= self.buffer_size as usize
    }

    /// Add a record: the oldest is dropped when the buffer is full, unless
    /// Stop_When_Full, where nothing is added and logging stops (as it does
    /// when this record fills the buffer). False when nothing was added.
    pub(crate) fn push(&mut self, record: LogRecord) -> bool {
        if self.is_full() {
            if self.stop_when_full {
                self.enable = false;
                return false;
            }
            while self.is_full() {
                self.records.pop_front();
            }
        }
        self.records.push_back(record);
        self.total_record_count = if self.total_record_count == u32::MAX { 1 } else { self.total_record_count + 1 };
        if self.stop_when_full && self.is_full() {
            self.enable = false;
        }
        true
    }

    /// Whether a polled record is due at `now_ms`, advancing the schedule
    /// when it is. The first record after enabling is due at once; later
    /// ones every Log_Interval, in phase with the first (missed intervals
    /// are skipped, not caught up). A clock set back by more than an
    /// interval restarts the schedule.
    pub(crate) fn take_due(&mut self, now_ms: u64) -> bool {
        if !self.enable {
            return false;
        }
        let interval = u64::from(self.log_interval) * 10;
        let next = match self.next_due_ms {
            Some(due) if now_ms < due && due - now_ms <= interval => return false,
            Some(due) if now_ms >= due => {
                let next = due.saturating_add(interval);
                if next > now_ms { next } else { now_ms.saturating_add(interval) }
            }
            _ => now_ms.saturating_add(interval),
        };
        self.next_due_ms = Some(next);
        true
    }

    /// Log_Buffer as it is read.
    pub(crate) fn log_buffer(&self) -> AnyValue {
        let mut elements = Vec::with_capacity(3 * self.records.len());
        for r in &self.records {
            r.encode(&mut elements);
        }
        AnyValue(elements)
    }

    /// Log_DeviceObjectProperty: a `BACnetDeviceObjectPropertyReference`
    /// without a device identifier (the object is in this device).
    pub(crate) fn log_device_object_property(&self) -> AnyValue {
        fn ctx(tag: u8, v: &impl Primitive) -> Element {
            let mut data = Vec::new();
            v.encode_content(&mut data);
            Element::Context { tag, data }
        }
        let mut elements = vec![ctx(0, &self.logged.object), ctx(1, &self.logged.property)];
        if let Some(i) = self.logged.array_index {
            elements.push(ctx(2, &u64::from(i)));
        }
        AnyValue(elements)
    }

    /// Status_Flags: FAULT from Reliability; never in alarm, overridden or
    /// out of service.
    pub(crate) fn status_flags(&self) -> Value {
        Value::BitString(BitString::from_bits(&[
            false,
            self.reliability != Reliability::NO_FAULT_DETECTED,
            false,
            false,
        ]))
    }

    /// Logging_Type.
    pub(crate) fn logging_type() -> Value {
        Value::Enumerated(LOGGING_TYPE_POLLED)
    }
}

/// A `log-status` datum.
pub(crate) fn status(log_disabled: bool, buffer_purged: bool) -> LogDatum {
    LogDatum::Status([log_disabled, buffer_purged, false])
}
