//! Alarms and events (Clause 13) from the operator's side:
//! GetEventInformation (every page), GetAlarmSummary, GetEnrollmentSummary
//! and AcknowledgeAlarm, and the event notifications a device sends this
//! client as a Notification Class recipient (a confirmed one is
//! acknowledged when it decodes, rejected when it does not).

use super::{Client, ClientError, DeviceAddress};
use bacnet::ObjectIdentifier;
use bacnet::enums::ConfirmedServiceChoice as Service;
use bacnet::enums::EventState;
use bacnet::services::{
    AcknowledgeAlarmRequest, AlarmSummary, EnrollmentSummary, EventNotification, EventSummary, GetAlarmSummaryAck,
    GetEnrollmentSummaryAck, GetEnrollmentSummaryRequest, GetEventInformationAck, GetEventInformationRequest,
    ServiceCodec, TimeStamp,
};

/// An event notification received from a device.
#[derive(Debug, Clone)]
pub struct EventNotificationReceived {
    /// Who sent it.
    pub source: DeviceAddress,
    /// It came as a ConfirmedEventNotification (and was acknowledged).
    pub confirmed: bool,
    /// What it says.
    pub notification: EventNotification,
}

/// The most GetEventInformation pages read for one answer (a device that
/// keeps saying "more events" past this is answering in circles).
pub const MAX_EVENT_PAGES: usize = 1000;

impl Client {
    /// Every event notification this client receives, from any device.
    pub fn event_notifications(&self) -> tokio::sync::broadcast::Receiver<EventNotificationReceived> {
        self.events.subscribe()
    }

    /// GetEventInformation, every page: the objects in an offnormal or
    /// fault state or with a transition not acknowledged.
    pub async fn get_event_information(&self, device: &DeviceAddress) -> Result<Vec<EventSummary>, ClientError> {
        let mut out: Vec<EventSummary> = Vec::new();
        let mut last_received_object = None;
        for _ in 0..MAX_EVENT_PAGES {
            let req = GetEventInformationRequest { last_received_object };
            let body = self.confirmed_ack(device, Service::GET_EVENT_INFORMATION, req.to_vec()).await?;
            let ack = GetEventInformationAck::decode(&body).map_err(ClientError::MalformedReply)?;
            let more = ack.more_events;
            let next = ack.summaries.last().map(|s| s.object);
            out.extend(ack.summaries);
            match (more, next) {
                (true, Some(next)) if Some(next) != last_received_object => last_received_object = Some(next),
                (true, _) => return Err(ClientError::UnexpectedReply("more events, but no progress")),
                (false, _) => return Ok(out),
            }
        }
        Err(ClientError::UnexpectedReply("more GetEventInformation pages than a device has objects"))
    }

    /// GetAlarmSummary.
    pub async fn get_alarm_summary(&self, device: &DeviceAddress) -> Result<Vec<AlarmSummary>, ClientError> {
        let body = self.confirmed_ack(device, Service::GET_ALARM_SUMMARY, Vec::new()).await?;
        Ok(GetAlarmSummaryAck::decode(&body).map_err(ClientError::MalformedReply)?.0)
    }

    /// GetEnrollmentSummary with `filter`.
    pub async fn get_enrollment_summary(
        &self,
        device: &DeviceAddress,
        filter: &GetEnrollmentSummaryRequest,
    ) -> Result<Vec<EnrollmentSummary>, ClientError> {
        let body = self.confirmed_ack(device, Service::GET_ENROLLMENT_SUMMARY, filter.to_vec()).await?;
        Ok(GetEnrollmentSummaryAck::decode(&body).map_err(ClientError::MalformedReply)?.0)
    }

    /// AcknowledgeAlarm of `object`'s transition into `state`, stamped
    /// `time_stamp` (its Event_Time_Stamps entry, as GetEventInformation
    /// gives it), by `source` (process `process`) at `now`.
    #[allow(clippy::too_many_arguments)]
    pub async fn acknowledge_alarm(
        &self,
        device: &DeviceAddress,
        process: u32,
        object: ObjectIdentifier,
        state: EventState,
        time_stamp: TimeStamp,
        source: &str,
        now: TimeStamp,
    ) -> Result<(), ClientError> {
        let req = AcknowledgeAlarmRequest {
            acknowledging_process_identifier: process,
            event_object: object,
            event_state_acknowledged: state,
            time_stamp,
            acknowledgment_source: bacnet::CharacterString::utf8(source),
            time_of_acknowledgment: now,
        };
        self.confirmed_simple(device, Service::ACKNOWLEDGE_ALARM, req.to_vec()).await
    }
}
