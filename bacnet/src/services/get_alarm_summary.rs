//! GetAlarmSummary (Clause 13.10): the objects in an alarm state whose
//! Notify_Type is ALARM. The request has no parameters; the standard keeps
//! it for older clients and points newer ones to GetEventInformation.

use super::ServiceCodec;
use super::common::app_field;
use crate::codec::{BitString, ObjectIdentifier, Reader, write_app};
use crate::enums::EventState;
use crate::error::DecodeError;
use alloc::vec::Vec;

/// ```text
/// GetAlarmSummary-ACK ::= SEQUENCE OF SEQUENCE {
///     objectIdentifier BACnetObjectIdentifier,
///     alarmState BACnetEventState,
///     acknowledgedTransitions BACnetEventTransitionBits
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetAlarmSummaryAck(pub Vec<AlarmSummary>);

/// One object of a [`GetAlarmSummaryAck`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlarmSummary {
    /// The object in alarm.
    pub object: ObjectIdentifier,
    /// Its Event_State.
    pub alarm_state: EventState,
    /// Its Acked_Transitions (to-offnormal, to-fault, to-normal).
    pub acknowledged_transitions: BitString,
}

impl ServiceCodec for GetAlarmSummaryAck {
    fn encode(&self, out: &mut Vec<u8>) {
        for s in &self.0 {
            write_app(out, &s.object);
            write_app(out, &s.alarm_state);
            write_app(out, &s.acknowledged_transitions);
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        // Each entry consumes at least one octet or fails.
        let mut entries = Vec::new();
        while !r.is_empty() {
            entries.push(AlarmSummary {
                object: app_field(r, "object-identifier")?,
                alarm_state: app_field(r, "alarm-state")?,
                acknowledged_transitions: app_field(r, "acknowledged-transitions")?,
            });
        }
        Ok(GetAlarmSummaryAck(entries))
    }
}
