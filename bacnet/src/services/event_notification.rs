//! ConfirmedEventNotification (Clause 13.8) and UnconfirmedEventNotification
//! (Clause 13.9): a device reports an event state transition, or an
//! acknowledgment, to a recipient of a Notification Class.

use super::ServiceCodec;
use super::common::{ctx_field, opening_field, opt_ctx_field};
use super::event_common::{NotificationParameters, TimeStamp};
use crate::codec::{
    CharacterString, ObjectIdentifier, Reader, expect_closing, next_is_opening, write_ctx, write_opt_ctx,
};
use crate::enums::{EventState, EventType, NotifyType};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// The body of an event notification; the Confirmed and Unconfirmed
/// services share it.
///
/// ```text
/// ConfirmedEventNotification-Request ::= SEQUENCE {
///     processIdentifier [0] Unsigned32,
///     initiatingDeviceIdentifier [1] BACnetObjectIdentifier,
///     eventObjectIdentifier [2] BACnetObjectIdentifier,
///     timeStamp [3] BACnetTimeStamp,
///     notificationClass [4] Unsigned,
///     priority [5] Unsigned8,
///     eventType [6] BACnetEventType,
///     messageText [7] CharacterString OPTIONAL,
///     notifyType [8] BACnetNotifyType,
///     ackRequired [9] BOOLEAN OPTIONAL,
///     fromState [10] BACnetEventState OPTIONAL,
///     toState [11] BACnetEventState,
///     eventValues [12] BACnetNotificationParameters OPTIONAL
/// }
/// ```
///
/// `ack_required`, `from_state` and `event_values` are present in an alarm
/// or event notification and absent in an ack-notification (Clause
/// 13.8.1); the decoder takes what comes and leaves that rule to the
/// receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct EventNotification {
    /// The recipient's process, from the Recipient_List entry.
    pub process_identifier: u32,
    /// The Device object of the notifying device.
    pub initiating_device: ObjectIdentifier,
    /// The object whose event state changed.
    pub event_object: ObjectIdentifier,
    /// When the transition (or the acknowledgment) happened.
    pub time_stamp: TimeStamp,
    /// The Notification Class that routed it.
    pub notification_class: u32,
    /// Its priority (0 is the highest, 255 the lowest).
    pub priority: u8,
    /// The event algorithm.
    pub event_type: EventType,
    /// The object's Event_Message_Texts entry, if any.
    pub message_text: Option<CharacterString>,
    /// Alarm, event or ack-notification.
    pub notify_type: NotifyType,
    /// Whether the transition waits for an AcknowledgeAlarm.
    pub ack_required: Option<bool>,
    /// The state left.
    pub from_state: Option<EventState>,
    /// The state entered (for an ack-notification: the state acknowledged).
    pub to_state: EventState,
    /// The algorithm's report.
    pub event_values: Option<NotificationParameters>,
}

impl ServiceCodec for EventNotification {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.process_identifier);
        write_ctx(out, 1, &self.initiating_device);
        write_ctx(out, 2, &self.event_object);
        self.time_stamp.encode_field(out, 3);
        write_ctx(out, 4, &self.notification_class);
        write_ctx(out, 5, &self.priority);
        write_ctx(out, 6, &self.event_type);
        write_opt_ctx(out, 7, &self.message_text);
        write_ctx(out, 8, &self.notify_type);
        write_opt_ctx(out, 9, &self.ack_required);
        write_opt_ctx(out, 10, &self.from_state);
        write_ctx(out, 11, &self.to_state);
        if let Some(values) = &self.event_values {
            crate::codec::write_constructed(out, 12, |o| values.encode(o));
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let process_identifier = ctx_field(r, 0, "process-identifier")?;
        let initiating_device = ctx_field(r, 1, "initiating-device-identifier")?;
        let event_object = ctx_field(r, 2, "event-object-identifier")?;
        let time_stamp = TimeStamp::decode_field(r, 3, "time-stamp")?;
        let notification_class = ctx_field(r, 4, "notification-class")?;
        let priority = ctx_field(r, 5, "priority")?;
        let event_type = ctx_field(r, 6, "event-type")?;
        let message_text = opt_ctx_field(r, 7, "message-text")?;
        let notify_type = ctx_field(r, 8, "notify-type")?;
        let ack_required = opt_ctx_field(r, 9, "ack-required")?;
        let from_state = opt_ctx_field(r, 10, "from-state")?;
        let to_state = ctx_field(r, 11, "to-state")?;
        let event_values = if next_is_opening(r, 12) {
            opening_field(r, 12, "event-values")?;
            let values = NotificationParameters::decode_from(r)?;
            expect_closing(r, 12, "end of event-values")?;
            Some(values)
        } else {
            None
        };
        Ok(EventNotification {
            process_identifier,
            initiating_device,
            event_object,
            time_stamp,
            notification_class,
            priority,
            event_type,
            message_text,
            notify_type,
            ack_required,
            from_state,
            to_state,
            event_values,
        })
    }
}
