//! GetEnrollmentSummary (Clause 13.11): the objects that report events,
//! filtered by acknowledgment, recipient, state, type, priority and
//! Notification Class.

use super::ServiceCodec;
use super::common::{app_field, ctx_field, opening_field, opt_ctx_field};
use crate::codec::{
    ObjectIdentifier, Reader, expect_closing, next_is_application, next_is_opening, write_app, write_constructed,
    write_ctx, write_opt_ctx,
};
use crate::cov::RecipientProcess;
use crate::enums::{AcknowledgmentFilter, EventState, EventStateFilter, EventType};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A GetEnrollmentSummary request.
///
/// ```text
/// GetEnrollmentSummary-Request ::= SEQUENCE {
///     acknowledgmentFilter [0] ENUMERATED { all (0), acked (1), not-acked (2) },
///     enrollmentFilter [1] BACnetRecipientProcess OPTIONAL,
///     eventStateFilter [2] ENUMERATED { offnormal (0), fault (1), normal (2), all (3), active (4) } OPTIONAL,
///     eventTypeFilter [3] BACnetEventType OPTIONAL,
///     priorityFilter [4] SEQUENCE { minPriority [0] Unsigned8, maxPriority [1] Unsigned8 } OPTIONAL,
///     notificationClassFilter [5] Unsigned OPTIONAL
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetEnrollmentSummaryRequest {
    /// All, acknowledged or not acknowledged transitions.
    pub acknowledgment_filter: AcknowledgmentFilter,
    /// Only objects reporting to this recipient and process.
    pub enrollment_filter: Option<RecipientProcess>,
    /// Only objects in these states.
    pub event_state_filter: Option<EventStateFilter>,
    /// Only objects with this algorithm.
    pub event_type_filter: Option<EventType>,
    /// Only objects whose notification priority lies in this range.
    pub priority_filter: Option<(u8, u8)>,
    /// Only objects of this Notification Class.
    pub notification_class_filter: Option<u32>,
}

impl ServiceCodec for GetEnrollmentSummaryRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.acknowledgment_filter);
        if let Some(f) = &self.enrollment_filter {
            write_constructed(out, 1, |o| f.encode(o));
        }
        write_opt_ctx(out, 2, &self.event_state_filter);
        write_opt_ctx(out, 3, &self.event_type_filter);
        if let Some((min, max)) = self.priority_filter {
            write_constructed(out, 4, |o| {
                write_ctx(o, 0, &min);
                write_ctx(o, 1, &max);
            });
        }
        write_opt_ctx(out, 5, &self.notification_class_filter);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let acknowledgment_filter = ctx_field(r, 0, "acknowledgment-filter")?;
        let enrollment_filter = if next_is_opening(r, 1) {
            opening_field(r, 1, "enrollment-filter")?;
            let f = RecipientProcess::decode_from(r)?;
            expect_closing(r, 1, "end of enrollment-filter")?;
            Some(f)
        } else {
            None
        };
        let event_state_filter = opt_ctx_field(r, 2, "event-state-filter")?;
        let event_type_filter = opt_ctx_field(r, 3, "event-type-filter")?;
        let priority_filter = if next_is_opening(r, 4) {
            opening_field(r, 4, "priority-filter")?;
            let min = ctx_field(r, 0, "min-priority")?;
            let max = ctx_field(r, 1, "max-priority")?;
            expect_closing(r, 4, "end of priority-filter")?;
            Some((min, max))
        } else {
            None
        };
        let notification_class_filter = opt_ctx_field(r, 5, "notification-class-filter")?;
        Ok(GetEnrollmentSummaryRequest {
            acknowledgment_filter,
            enrollment_filter,
            event_state_filter,
            event_type_filter,
            priority_filter,
            notification_class_filter,
        })
    }
}

/// ```text
/// GetEnrollmentSummary-ACK ::= SEQUENCE OF SEQUENCE {
///     objectIdentifier BACnetObjectIdentifier,
///     eventType BACnetEventType,
///     eventState BACnetEventState,
///     priority Unsigned8,
///     notificationClass Unsigned OPTIONAL
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetEnrollmentSummaryAck(pub Vec<EnrollmentSummary>);

/// One object of a [`GetEnrollmentSummaryAck`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnrollmentSummary {
    /// The object that reports events.
    pub object: ObjectIdentifier,
    /// Its algorithm.
    pub event_type: EventType,
    /// Its Event_State.
    pub event_state: EventState,
    /// The priority of its current state's transition.
    pub priority: u8,
    /// Its Notification Class.
    pub notification_class: Option<u32>,
}

impl ServiceCodec for GetEnrollmentSummaryAck {
    fn encode(&self, out: &mut Vec<u8>) {
        for s in &self.0 {
            write_app(out, &s.object);
            write_app(out, &s.event_type);
            write_app(out, &s.event_state);
            write_app(out, &s.priority);
            if let Some(nc) = &s.notification_class {
                write_app(out, nc);
            }
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        // Each entry consumes at least one octet or fails.
        let mut entries = Vec::new();
        while !r.is_empty() {
            let object = app_field(r, "object-identifier")?;
            let event_type = app_field(r, "event-type")?;
            let event_state = app_field(r, "event-state")?;
            let priority = app_field(r, "priority")?;
            // The next entry starts with an Object Identifier (tag 12); an
            // Unsigned (tag 2) here is this entry's notification class.
            let notification_class = match crate::codec::tag::peek_tag(r) {
                Some(Ok(t)) if next_is_application(r) && t.number == crate::codec::tag::app::UNSIGNED => {
                    Some(app_field(r, "notification-class")?)
                }
                _ => None,
            };
            entries.push(EnrollmentSummary { object, event_type, event_state, priority, notification_class });
        }
        Ok(GetEnrollmentSummaryAck(entries))
    }
}
