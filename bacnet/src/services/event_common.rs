//! Productions the alarm and event services share (Clauses 13.2–13.9,
//! 21): time stamps, property states and notification parameters (the
//! recipients are [`crate::cov`]'s, shared with Active_COV_Subscriptions).
//!
//! Every CHOICE here is an enum whose variants carry the standard's fields;
//! choices this crate does not interpret (the rarer notification parameter
//! kinds) are kept as their tag number and raw octets, so they decode,
//! re-encode unchanged and never make a notification unreadable.

use super::ServiceCodec;
use super::common::{PropertyValue, ctx_field, opening_field};
use super::time_synchronization::{read_date_time, write_date_time};
use crate::codec::tag::{self, TagClass, TagKind};
use crate::codec::{
    BitString, Date, Primitive, Reader, Time, expect_closing, next_is_closing, read_constructed, write_constructed,
    write_ctx,
};
use crate::enums::{EventState, Reliability};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// ```text
/// BACnetTimeStamp ::= CHOICE {
///     time [0] Time,
///     sequenceNumber [1] Unsigned (0..65535),
///     dateTime [2] BACnetDateTime
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeStamp {
    /// `time [0]`: the time of day alone.
    Time(Time),
    /// `sequenceNumber [1]`: a counter, for devices without a clock.
    SequenceNumber(u16),
    /// `dateTime [2]`: a date and a time.
    DateTime(Date, Time),
}

impl TimeStamp {
    /// The time stamp of a transition that has not happened: a date and
    /// time with every field unspecified (Clause 12, Event_Time_Stamps).
    pub const UNSPECIFIED: TimeStamp = TimeStamp::DateTime(
        Date { year: 255, month: 255, day: 255, weekday: 255 },
        Time { hour: 255, minute: 255, second: 255, hundredths: 255 },
    );

    /// Encode as the field `[n]` of a sequence (the CHOICE wrapped in an
    /// opening and closing tag `n`).
    pub fn encode_field(&self, out: &mut Vec<u8>, n: u8) {
        write_constructed(out, n, |o| self.encode(o));
    }

    /// Decode the field `[n]` of a sequence.
    pub fn decode_field(r: &mut Reader<'_>, n: u8, what: &'static str) -> Result<TimeStamp, DecodeError> {
        opening_field(r, n, what)?;
        let ts = TimeStamp::decode_from(r)?;
        expect_closing(r, n, what)?;
        Ok(ts)
    }
}

impl ServiceCodec for TimeStamp {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            TimeStamp::Time(t) => write_ctx(out, 0, t),
            TimeStamp::SequenceNumber(n) => write_ctx(out, 1, n),
            TimeStamp::DateTime(d, t) => write_constructed(out, 2, |o| write_date_time(o, d, t)),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        match tag::peek_tag(r) {
            Some(Ok(t)) if t.is_context(0) && matches!(t.kind, TagKind::Primitive(_)) => {
                Ok(TimeStamp::Time(ctx_field(r, 0, "time-stamp time")?))
            }
            Some(Ok(t)) if t.is_context(1) && matches!(t.kind, TagKind::Primitive(_)) => {
                Ok(TimeStamp::SequenceNumber(ctx_field(r, 1, "time-stamp sequence-number")?))
            }
            Some(Ok(t)) if t.is_opening(2) => {
                opening_field(r, 2, "time-stamp date-time")?;
                let (d, t) = read_date_time(r, "time-stamp date", "time-stamp time")?;
                expect_closing(r, 2, "end of time-stamp date-time")?;
                Ok(TimeStamp::DateTime(d, t))
            }
            None => Err(DecodeError::Truncated { at, what: "a time-stamp" }),
            Some(Err(e)) => Err(e),
            Some(Ok(_)) => {
                Err(DecodeError::InvalidTag { at, what: "a time-stamp (time [0], sequence [1], date-time [2])" })
            }
        }
    }
}

/// One value of `BACnetPropertyStates`: a CHOICE whose every alternative
/// this crate meets is a BOOLEAN, an enumeration or an Unsigned, kept as
/// the choice's tag number and the value.
///
/// ```text
/// BACnetPropertyStates ::= CHOICE {
///     boolean-value [0] BOOLEAN, binary-value [1] BACnetBinaryPV,
///     event-type [2] BACnetEventType, polarity [3] BACnetPolarity,
///     …, reliability [7] BACnetReliability, state [8] BACnetEventState,
///     …, unsigned-value [11] Unsigned32, …
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertyStates {
    /// The alternative's context tag number.
    pub choice: u8,
    /// The value (a BOOLEAN as 0 or 1).
    pub value: u32,
}

impl PropertyStates {
    /// `boolean-value [0]`.
    pub const BOOLEAN_VALUE: u8 = 0;
    /// `binary-value [1]`: a binary object's state.
    pub const BINARY_VALUE: u8 = 1;
    /// `reliability [7]`.
    pub const RELIABILITY: u8 = 7;
    /// `state [8]`: an event state.
    pub const STATE: u8 = 8;
    /// `unsigned-value [11]`: a multi-state object's state.
    pub const UNSIGNED_VALUE: u8 = 11;

    /// A binary object's state.
    pub fn binary(active: bool) -> Self {
        PropertyStates { choice: Self::BINARY_VALUE, value: u32::from(active) }
    }

    /// A multi-state object's state.
    pub fn unsigned(state: u32) -> Self {
        PropertyStates { choice: Self::UNSIGNED_VALUE, value: state }
    }
}

impl ServiceCodec for PropertyStates {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, self.choice, &self.value);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        let (t, content) = tag::read_tagged(r)?;
        if t.class != TagClass::Context || !matches!(t.kind, TagKind::Primitive(_)) {
            return Err(DecodeError::InvalidTag { at, what: "a property state (a context-tagged value)" });
        }
        let value = u32::decode_content(content, at).map_err(|_| DecodeError::OutOfRange {
            at,
            what: "a property state (a BOOLEAN, enumeration or Unsigned32)",
        })?;
        Ok(PropertyStates { choice: t.number, value })
    }
}

/// `eventValues` of an event notification: the algorithm's own report.
///
/// ```text
/// BACnetNotificationParameters ::= CHOICE {
///     change-of-bitstring [0] SEQUENCE { referenced-bitstring [0] BIT STRING, status-flags [1] BACnetStatusFlags },
///     change-of-state [1] SEQUENCE { new-state [0] BACnetPropertyStates, status-flags [1] BACnetStatusFlags },
///     change-of-value [2] SEQUENCE { new-value [0] CHOICE { changed-bits [0] BIT STRING, changed-value [1] REAL },
///                                    status-flags [1] BACnetStatusFlags },
///     floating-limit [4] SEQUENCE { reference-value [0] REAL, status-flags [1] BACnetStatusFlags,
///                                   setpoint-value [2] REAL, error-limit [3] REAL },
///     out-of-range [5] SEQUENCE { exceeding-value [0] REAL, status-flags [1] BACnetStatusFlags,
///                                 deadband [2] REAL, exceeded-limit [3] REAL },
///     change-of-reliability [19] SEQUENCE { reliability [0] BACnetReliability, status-flags [1] BACnetStatusFlags,
///                                           property-values [2] SEQUENCE OF BACnetPropertyValue },
///     …
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum NotificationParameters {
    /// `change-of-bitstring [0]`.
    ChangeOfBitstring {
        /// The monitored bit string, masked.
        referenced_bitstring: BitString,
        /// The object's Status_Flags.
        status_flags: BitString,
    },
    /// `change-of-state [1]`: the CHANGE_OF_STATE algorithm (binary and
    /// multi-state objects).
    ChangeOfState {
        /// The state entered.
        new_state: PropertyStates,
        /// The object's Status_Flags.
        status_flags: BitString,
    },
    /// `change-of-value [2]` with a REAL: the value changed by at least the
    /// increment.
    ChangeOfValue {
        /// The new value.
        changed_value: f32,
        /// The object's Status_Flags.
        status_flags: BitString,
    },
    /// `floating-limit [4]`.
    FloatingLimit {
        /// The monitored value.
        reference_value: f32,
        /// The object's Status_Flags.
        status_flags: BitString,
        /// The setpoint the limits float around.
        setpoint_value: f32,
        /// The error limit crossed.
        error_limit: f32,
    },
    /// `out-of-range [5]`: the OUT_OF_RANGE algorithm (analog objects).
    OutOfRange {
        /// The value that crossed the limit, or came back.
        exceeding_value: f32,
        /// The object's Status_Flags.
        status_flags: BitString,
        /// The object's Deadband.
        deadband: f32,
        /// The limit crossed (High_Limit or Low_Limit).
        exceeded_limit: f32,
    },
    /// `change-of-reliability [19]`: a fault, or its end.
    ChangeOfReliability {
        /// The object's Reliability.
        reliability: Reliability,
        /// The object's Status_Flags.
        status_flags: BitString,
        /// Properties the object type adds (Present_Value …).
        property_values: Vec<PropertyValue>,
    },
    /// Any other alternative: its tag number and the octets between its
    /// opening and closing tags.
    Other {
        /// The alternative's tag number.
        choice: u8,
        /// Its encoded fields.
        body: Vec<u8>,
    },
}

impl ServiceCodec for NotificationParameters {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            NotificationParameters::ChangeOfBitstring { referenced_bitstring, status_flags } => {
                write_constructed(out, 0, |o| {
                    write_ctx(o, 0, referenced_bitstring);
                    write_ctx(o, 1, status_flags);
                })
            }
            NotificationParameters::ChangeOfState { new_state, status_flags } => write_constructed(out, 1, |o| {
                write_constructed(o, 0, |o| new_state.encode(o));
                write_ctx(o, 1, status_flags);
            }),
            NotificationParameters::ChangeOfValue { changed_value, status_flags } => write_constructed(out, 2, |o| {
                write_constructed(o, 0, |o| write_ctx(o, 1, changed_value));
                write_ctx(o, 1, status_flags);
            }),
            NotificationParameters::FloatingLimit { reference_value, status_flags, setpoint_value, error_limit } => {
                write_constructed(out, 4, |o| {
                    write_ctx(o, 0, reference_value);
                    write_ctx(o, 1, status_flags);
                    write_ctx(o, 2, setpoint_value);
                    write_ctx(o, 3, error_limit);
                })
            }
            NotificationParameters::OutOfRange { exceeding_value, status_flags, deadband, exceeded_limit } => {
                write_constructed(out, 5, |o| {
                    write_ctx(o, 0, exceeding_value);
                    write_ctx(o, 1, status_flags);
                    write_ctx(o, 2, deadband);
                    write_ctx(o, 3, exceeded_limit);
                })
            }
            NotificationParameters::ChangeOfReliability { reliability, status_flags, property_values } => {
                write_constructed(out, 19, |o| {
                    write_ctx(o, 0, reliability);
                    write_ctx(o, 1, status_flags);
                    write_constructed(o, 2, |o| {
                        for v in property_values {
                            v.encode(o);
                        }
                    });
                })
            }
            NotificationParameters::Other { choice, body } => write_constructed(out, *choice, |o| {
                o.extend_from_slice(body);
            }),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        let choice = match tag::peek_tag(r) {
            Some(Ok(t)) if t.class == TagClass::Context && t.kind == TagKind::Opening => t.number,
            None => return Err(DecodeError::Truncated { at, what: "event-values" }),
            Some(Err(e)) => return Err(e),
            Some(Ok(_)) => return Err(DecodeError::InvalidTag { at, what: "event-values (a constructed choice)" }),
        };
        // The choice's octets, balanced; the kinds this crate types are
        // decoded from them, and a kind it types but whose fields take an
        // alternative it does not (change-of-value's changed-bits) is kept
        // as octets like the kinds it does not type.
        let start = r.clone();
        let body = read_constructed(r, choice, "event-values")?;
        if matches!(choice, 0 | 1 | 2 | 4 | 5 | 19) {
            let mut typed = start;
            if let Ok(params) = Self::decode_typed(&mut typed, choice) {
                return Ok(params);
            }
        }
        Ok(NotificationParameters::Other { choice, body: body.to_vec() })
    }
}

impl NotificationParameters {
    /// One of the typed choices, from its opening tag to its closing tag.
    fn decode_typed(r: &mut Reader<'_>, choice: u8) -> Result<Self, DecodeError> {
        opening_field(r, choice, "event-values")?;
        let params = match choice {
            0 => NotificationParameters::ChangeOfBitstring {
                referenced_bitstring: ctx_field(r, 0, "referenced-bitstring")?,
                status_flags: ctx_field(r, 1, "status-flags")?,
            },
            1 => {
                opening_field(r, 0, "new-state")?;
                let new_state = PropertyStates::decode_from(r)?;
                expect_closing(r, 0, "end of new-state")?;
                NotificationParameters::ChangeOfState { new_state, status_flags: ctx_field(r, 1, "status-flags")? }
            }
            2 => {
                opening_field(r, 0, "new-value")?;
                let changed_value = ctx_field(r, 1, "changed-value")?;
                expect_closing(r, 0, "end of new-value")?;
                NotificationParameters::ChangeOfValue { changed_value, status_flags: ctx_field(r, 1, "status-flags")? }
            }
            4 => NotificationParameters::FloatingLimit {
                reference_value: ctx_field(r, 0, "reference-value")?,
                status_flags: ctx_field(r, 1, "status-flags")?,
                setpoint_value: ctx_field(r, 2, "setpoint-value")?,
                error_limit: ctx_field(r, 3, "error-limit")?,
            },
            5 => NotificationParameters::OutOfRange {
                exceeding_value: ctx_field(r, 0, "exceeding-value")?,
                status_flags: ctx_field(r, 1, "status-flags")?,
                deadband: ctx_field(r, 2, "deadband")?,
                exceeded_limit: ctx_field(r, 3, "exceeded-limit")?,
            },
            _ => {
                let reliability = ctx_field(r, 0, "reliability")?;
                let status_flags = ctx_field(r, 1, "status-flags")?;
                opening_field(r, 2, "property-values")?;
                // Each value consumes at least one octet or fails.
                let mut property_values = Vec::new();
                while !r.is_empty() && !next_is_closing(r, 2) {
                    property_values.push(PropertyValue::decode_from(r)?);
                }
                expect_closing(r, 2, "end of property-values")?;
                NotificationParameters::ChangeOfReliability { reliability, status_flags, property_values }
            }
        };
        expect_closing(r, choice, "end of event-values")?;
        Ok(params)
    }
}

/// The three transitions of `BACnetEventTransitionBits` and the three
/// entries of Event_Time_Stamps, Event_Message_Texts and Priority, in the
/// standard's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transition {
    /// Into OFFNORMAL (or HIGH_LIMIT, LOW_LIMIT …).
    ToOffnormal = 0,
    /// Into FAULT.
    ToFault = 1,
    /// Into NORMAL.
    ToNormal = 2,
}

impl Transition {
    /// The transition that enters `state`.
    pub fn into_state(state: EventState) -> Transition {
        match state {
            EventState::NORMAL => Transition::ToNormal,
            EventState::FAULT => Transition::ToFault,
            _ => Transition::ToOffnormal,
        }
    }

    /// Its bit and array position (0, 1, 2).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A `BACnetEventTransitionBits` (to-offnormal, to-fault, to-normal).
pub fn transition_bits(bits: [bool; 3]) -> BitString {
    BitString::from_bits(&bits)
}

/// One entry of a Notification Class's Recipient_List: who is told of
/// which transitions, on which days and hours, how.
///
/// ```text
/// BACnetDestination ::= SEQUENCE {
///     validDays BACnetDaysOfWeek,
///     fromTime Time,
///     toTime Time,
///     recipient BACnetRecipient,
///     processIdentifier Unsigned32,
///     issueConfirmedNotifications BOOLEAN,
///     transitions BACnetEventTransitionBits
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// Monday first, seven bits.
    pub valid_days: BitString,
    /// The first time of day it applies (inclusive).
    pub from_time: Time,
    /// The last time of day it applies (inclusive).
    pub to_time: Time,
    /// Who.
    pub recipient: crate::cov::Recipient,
    /// The recipient's process, echoed in each notification.
    pub process_identifier: u32,
    /// ConfirmedEventNotification (true) or Unconfirmed.
    pub issue_confirmed_notifications: bool,
    /// Which transitions (to-offnormal, to-fault, to-normal).
    pub transitions: BitString,
}

impl ServiceCodec for Destination {
    fn encode(&self, out: &mut Vec<u8>) {
        crate::codec::write_app(out, &self.valid_days);
        crate::codec::write_app(out, &self.from_time);
        crate::codec::write_app(out, &self.to_time);
        self.recipient.encode(out);
        crate::codec::write_app(out, &self.process_identifier);
        crate::codec::write_app(out, &self.issue_confirmed_notifications);
        crate::codec::write_app(out, &self.transitions);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        use super::common::app_field;
        Ok(Destination {
            valid_days: app_field(r, "valid-days")?,
            from_time: app_field(r, "from-time")?,
            to_time: app_field(r, "to-time")?,
            recipient: crate::cov::Recipient::decode_from(r)?,
            process_identifier: app_field(r, "process-identifier")?,
            issue_confirmed_notifications: app_field(r, "issue-confirmed-notifications")?,
            transitions: app_field(r, "transitions")?,
        })
    }
}
