//! AcknowledgeAlarm (Clause 13.5): an operator acknowledges a transition
//! whose notification asked for it.

use super::ServiceCodec;
use super::common::ctx_field;
use super::event_common::TimeStamp;
use crate::codec::{CharacterString, ObjectIdentifier, Reader, write_ctx};
use crate::enums::EventState;
use crate::error::DecodeError;
use alloc::vec::Vec;

/// An AcknowledgeAlarm request; the answer is a SimpleACK or an Error.
///
/// ```text
/// AcknowledgeAlarm-Request ::= SEQUENCE {
///     acknowledgingProcessIdentifier [0] Unsigned32,
///     eventObjectIdentifier [1] BACnetObjectIdentifier,
///     eventStateAcknowledged [2] BACnetEventState,
///     timeStamp [3] BACnetTimeStamp,
///     acknowledgmentSource [4] CharacterString,
///     timeOfAcknowledgment [5] BACnetTimeStamp
/// }
/// ```
///
/// `time_stamp` must be the one of the transition acknowledged (the
/// notification's): a mismatch is services/invalid-time-stamp.
#[derive(Debug, Clone, PartialEq)]
pub struct AcknowledgeAlarmRequest {
    /// The acknowledging operator's process.
    pub acknowledging_process_identifier: u32,
    /// The object whose transition is acknowledged.
    pub event_object: ObjectIdentifier,
    /// The state the acknowledged transition entered.
    pub event_state_acknowledged: EventState,
    /// The time stamp of that transition.
    pub time_stamp: TimeStamp,
    /// Who acknowledges (an operator's name).
    pub acknowledgment_source: CharacterString,
    /// When.
    pub time_of_acknowledgment: TimeStamp,
}

impl ServiceCodec for AcknowledgeAlarmRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.acknowledging_process_identifier);
        write_ctx(out, 1, &self.event_object);
        write_ctx(out, 2, &self.event_state_acknowledged);
        self.time_stamp.encode_field(out, 3);
        write_ctx(out, 4, &self.acknowledgment_source);
        self.time_of_acknowledgment.encode_field(out, 5);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(AcknowledgeAlarmRequest {
            acknowledging_process_identifier: ctx_field(r, 0, "acknowledging-process-identifier")?,
            event_object: ctx_field(r, 1, "event-object-identifier")?,
            event_state_acknowledged: ctx_field(r, 2, "event-state-acknowledged")?,
            time_stamp: TimeStamp::decode_field(r, 3, "time-stamp")?,
            acknowledgment_source: ctx_field(r, 4, "acknowledgment-source")?,
            time_of_acknowledgment: TimeStamp::decode_field(r, 5, "time-of-acknowledgment")?,
        })
    }
}
