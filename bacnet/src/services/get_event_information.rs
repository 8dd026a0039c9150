//! GetEventInformation (Clause 13.12): the objects with an active event
//! state or a transition not yet acknowledged, in pages: a client asks
//! again from the last object it received while `more_events` is true.

use super::ServiceCodec;
use super::common::{app_field, ctx_field, opening_field, opt_ctx_field};
use super::event_common::TimeStamp;
use crate::codec::{
    BitString, ObjectIdentifier, Reader, expect_closing, next_is_closing, write_app, write_constructed, write_ctx,
    write_opt_ctx,
};
use crate::enums::{EventState, NotifyType};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// ```text
/// GetEventInformation-Request ::= SEQUENCE {
///     lastReceivedObjectIdentifier [0] BACnetObjectIdentifier OPTIONAL
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GetEventInformationRequest {
    /// The last object of the previous page; `None` for the first page.
    pub last_received_object: Option<ObjectIdentifier>,
}

impl ServiceCodec for GetEventInformationRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_opt_ctx(out, 0, &self.last_received_object);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(GetEventInformationRequest { last_received_object: opt_ctx_field(r, 0, "last-received-object-identifier")? })
    }
}

/// ```text
/// GetEventInformation-ACK ::= SEQUENCE {
///     listOfEventSummaries [0] SEQUENCE OF SEQUENCE {
///         objectIdentifier [0] BACnetObjectIdentifier,
///         eventState [1] BACnetEventState,
///         acknowledgedTransitions [2] BACnetEventTransitionBits,
///         eventTimeStamps [3] SEQUENCE SIZE (3) OF BACnetTimeStamp,
///         notifyType [4] BACnetNotifyType,
///         eventEnable [5] BACnetEventTransitionBits,
///         eventPriorities [6] SEQUENCE SIZE (3) OF Unsigned
///     },
///     moreEvents [1] BOOLEAN
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GetEventInformationAck {
    /// One page of summaries, in Object_List order.
    pub summaries: Vec<EventSummary>,
    /// More summaries follow the last of this page.
    pub more_events: bool,
}

/// One object of a [`GetEventInformationAck`].
#[derive(Debug, Clone, PartialEq)]
pub struct EventSummary {
    /// The object.
    pub object: ObjectIdentifier,
    /// Its Event_State.
    pub event_state: EventState,
    /// Its Acked_Transitions.
    pub acknowledged_transitions: BitString,
    /// Its Event_Time_Stamps (to-offnormal, to-fault, to-normal).
    pub event_time_stamps: [TimeStamp; 3],
    /// Its Notify_Type.
    pub notify_type: NotifyType,
    /// Its Event_Enable.
    pub event_enable: BitString,
    /// Its Notification Class's Priority (to-offnormal, to-fault, to-normal).
    pub event_priorities: [u32; 3],
}

impl ServiceCodec for EventSummary {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.object);
        write_ctx(out, 1, &self.event_state);
        write_ctx(out, 2, &self.acknowledged_transitions);
        write_constructed(out, 3, |o| {
            for ts in &self.event_time_stamps {
                ts.encode(o);
            }
        });
        write_ctx(out, 4, &self.notify_type);
        write_ctx(out, 5, &self.event_enable);
        write_constructed(out, 6, |o| {
            for p in &self.event_priorities {
                write_app(o, p);
            }
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let object = ctx_field(r, 0, "object-identifier")?;
        let event_state = ctx_field(r, 1, "event-state")?;
        let acknowledged_transitions = ctx_field(r, 2, "acknowledged-transitions")?;
        opening_field(r, 3, "event-time-stamps")?;
        let event_time_stamps = [TimeStamp::decode_from(r)?, TimeStamp::decode_from(r)?, TimeStamp::decode_from(r)?];
        expect_closing(r, 3, "end of event-time-stamps (three of them)")?;
        let notify_type = ctx_field(r, 4, "notify-type")?;
        let event_enable = ctx_field(r, 5, "event-enable")?;
        opening_field(r, 6, "event-priorities")?;
        let event_priorities =
            [app_field(r, "event-priorities")?, app_field(r, "event-priorities")?, app_field(r, "event-priorities")?];
        expect_closing(r, 6, "end of event-priorities (three of them)")?;
        Ok(EventSummary {
            object,
            event_state,
            acknowledged_transitions,
            event_time_stamps,
            notify_type,
            event_enable,
            event_priorities,
        })
    }
}

impl ServiceCodec for GetEventInformationAck {
    fn encode(&self, out: &mut Vec<u8>) {
        write_constructed(out, 0, |o| {
            for s in &self.summaries {
                s.encode(o);
            }
        });
        write_ctx(out, 1, &self.more_events);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        opening_field(r, 0, "list-of-event-summaries")?;
        // Each summary consumes at least one octet or fails.
        let mut summaries = Vec::new();
        while !r.is_empty() && !next_is_closing(r, 0) {
            summaries.push(EventSummary::decode_from(r)?);
        }
        expect_closing(r, 0, "end of list-of-event-summaries")?;
        Ok(GetEventInformationAck { summaries, more_events: ctx_field(r, 1, "more-events")? })
    }
}
