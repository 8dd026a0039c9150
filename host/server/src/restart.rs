//! How the device last started (Clause 12.11: Last_Restart_Reason,
//! Time_Of_Device_Restart, Restart_Notification_Recipients) and the
//! restart notification (Clause 19.3): when the device starts and after
//! each ReinitializeDevice, an UnconfirmedCOVNotification from the Device
//! object (subscriber process 0, time remaining 0) with System_Status,
//! Time_Of_Device_Restart and Last_Restart_Reason goes to each recipient.
//!
//! The host owns these properties: it is the host that starts the device
//! and restarts its model. A start of the gateway process is reported as
//! `unknown` (the host keeps no record across runs of how the previous one
//! ended, so it cannot tell a power loss from an orderly stop); a
//! ReinitializeDevice as `coldstart` or `warmstart`.
//!
//! Recipients come from the configuration (`restart_notification_recipients`)
//! and a front end may rewrite the list (at most [`MAX_RECIPIENTS`]); a
//! device recipient is found by a Who-Is for its instance and its I-Am (as
//! event recipients are), an address recipient with an empty MAC is the
//! local broadcast. Recipients on other networks are not reached yet.
//!
//! Must never: send the notification while DeviceCommunicationControl
//! forbids initiating, or accept a list entry that is not a BACnetRecipient.

use bacnet::codec::Reader;
use bacnet::cov::Recipient;
use bacnet::enums::{ErrorClass, ErrorCode, RestartReason};
use bacnet::services::{BacnetError, ServiceCodec, TimeStamp};
use bacnet::{AnyValue, Date, Time, Value};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The most entries Restart_Notification_Recipients may hold.
pub const MAX_RECIPIENTS: usize = 16;

/// How long a restart notification waits for a device recipient's I-Am.
const BINDING_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug)]
struct State {
    reason: RestartReason,
    at: (Date, Time),
    recipients: Vec<Recipient>,
    /// A notification is due (the device started or restarted).
    pending: bool,
    /// Device recipients whose I-Am the due notification waits for.
    waiting: Vec<(u32, Instant)>,
}

/// The restart properties of one device.
#[derive(Debug)]
pub struct Restart {
    state: Mutex<State>,
    /// Told when a restart makes a notification due.
    pub(crate) wake: tokio::sync::Notify,
}

impl Restart {
    /// A device that started now (`at`, local) for `reason`, with the
    /// configured recipients.
    pub fn new(reason: RestartReason, at: (Date, Time), recipients: Vec<Recipient>) -> Self {
        let state = State { reason, at, recipients, pending: true, waiting: Vec::new() };
        Restart { state: Mutex::new(state), wake: tokio::sync::Notify::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The device restarted now (`at`) for `reason`: the properties change
    /// and a notification is due.
    pub(crate) fn restarted(&self, reason: RestartReason, at: (Date, Time)) {
        let mut s = self.lock();
        s.reason = reason;
        s.at = at;
        s.pending = true;
        s.waiting.clear();
        drop(s);
        self.wake.notify_one();
    }

    /// Last_Restart_Reason, Time_Of_Device_Restart or
    /// Restart_Notification_Recipients; `None` for another property.
    pub fn read(&self, p: bacnet::enums::PropertyIdentifier) -> Option<AnyValue> {
        use bacnet::enums::PropertyIdentifier as P;
        let s = self.lock();
        match p {
            P::LAST_RESTART_REASON => Some(Value::Enumerated(s.reason.0).into()),
            P::TIME_OF_DEVICE_RESTART => Some(encoded(|o| TimeStamp::DateTime(s.at.0, s.at.1).encode(o))),
            P::RESTART_NOTIFICATION_RECIPIENTS => Some(encoded(|o| s.recipients.iter().for_each(|r| r.encode(o)))),
            _ => None,
        }
    }

    /// Write Restart_Notification_Recipients: every entry a BACnetRecipient.
    pub fn write_recipients(&self, value: &AnyValue) -> Result<(), BacnetError> {
        let octets = crate::host_object::octets(value);
        let mut r = Reader::new(&octets);
        let mut list = Vec::new();
        while !r.is_empty() {
            if list.len() == MAX_RECIPIENTS {
                return Err(BacnetError { class: ErrorClass::RESOURCES, code: ErrorCode::NO_SPACE_TO_WRITE_PROPERTY });
            }
            let recipient = Recipient::decode_from(&mut r)
                .map_err(|_| BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::INVALID_DATA_TYPE })?;
            list.push(recipient);
        }
        tracing::info!(recipients = list.len(), "Restart_Notification_Recipients written");
        self.lock().recipients = list;
        Ok(())
    }

    /// The recipients of a due notification, once: `None` when none is due.
    pub(crate) fn take_due(&self) -> Option<Vec<Recipient>> {
        let mut s = self.lock();
        if !s.pending {
            return None;
        }
        s.pending = false;
        Some(s.recipients.clone())
    }

    /// Remember that the notification waits for device `instance`'s I-Am.
    pub(crate) fn wait_for(&self, instance: u32) {
        let mut s = self.lock();
        if s.waiting.len() < MAX_RECIPIENTS {
            s.waiting.push((instance, Instant::now()));
        }
    }

    /// The device recipients still waited for (those that waited too long
    /// are dropped and counted in the second value).
    pub(crate) fn waiting(&self) -> (Vec<u32>, usize) {
        let mut s = self.lock();
        let before = s.waiting.len();
        s.waiting.retain(|(_, since)| since.elapsed() < BINDING_TIMEOUT);
        let expired = before - s.waiting.len();
        (s.waiting.iter().map(|(i, _)| *i).collect(), expired)
    }

    /// Device recipient `instance` was reached.
    pub(crate) fn reached(&self, instance: u32) {
        self.lock().waiting.retain(|(i, _)| *i != instance);
    }
}

/// A value made of encoded productions (which always decode as one).
fn encoded(encode: impl FnOnce(&mut Vec<u8>)) -> AnyValue {
    crate::host_object::encoded(encode).unwrap_or_default()
}

/// Send the due restart notification to its recipients, and to the device
/// recipients whose I-Am has come since.
pub(crate) async fn notify<M: trellis_model::ObjectModel, S: crate::alarms::EventSink>(
    server: &crate::dispatch::Server<M>,
    sink: &S,
) {
    use bacnet::enums::UnconfirmedServiceChoice as U;
    let restart = &server.host().restart;
    let due = restart.take_due();
    let (waiting, expired) = restart.waiting();
    if expired > 0 {
        tracing::warn!(recipients = expired, "no I-Am from a restart notification's device recipient in time");
    }
    if due.is_none() && waiting.is_empty() {
        return;
    }
    if !server.communication().initiates() {
        if due.is_some() {
            tracing::info!("restart notification not sent: DeviceCommunicationControl forbids initiating");
        }
        return;
    }
    let body = notification(server).await;
    for recipient in due.unwrap_or_default() {
        let sent = match &recipient {
            Recipient::Address { network_number: 0, mac_address } if mac_address.is_empty() => {
                sink.broadcast(U::UNCONFIRMED_COV_NOTIFICATION, body.clone()).await
            }
            Recipient::Address { network_number: 0, mac_address } => match sink.local_station(mac_address) {
                Some(to) => sink.unconfirmed(&to, U::UNCONFIRMED_COV_NOTIFICATION, body.clone()).await,
                None => Err(std::io::Error::other("not an address on this port's network")),
            },
            Recipient::Address { network_number, .. } => {
                Err(std::io::Error::other(format!("network {network_number} is not reached yet")))
            }
            Recipient::Device(d) => match server.alarms().binding(d.instance) {
                Some(to) => sink.unconfirmed(&to, U::UNCONFIRMED_COV_NOTIFICATION, body.clone()).await,
                None => {
                    server.alarms().want(d.instance);
                    restart.wait_for(d.instance);
                    let who_is = bacnet::services::WhoIs { range: Some((d.instance, d.instance)) }.to_vec();
                    sink.broadcast(U::WHO_IS, who_is).await
                }
            },
        };
        if let Err(e) = sent {
            tracing::warn!(?recipient, error = %e, "restart notification not sent");
        }
    }
    for instance in waiting {
        if let Some(to) = server.alarms().binding(instance) {
            restart.reached(instance);
            if let Err(e) = sink.unconfirmed(&to, U::UNCONFIRMED_COV_NOTIFICATION, body.clone()).await {
                tracing::warn!(device = instance, error = %e, "restart notification not sent");
            }
        }
    }
}

/// The restart notification's body: System_Status (the model's),
/// Time_Of_Device_Restart and Last_Restart_Reason of the Device object.
async fn notification<M: trellis_model::ObjectModel>(server: &crate::dispatch::Server<M>) -> Vec<u8> {
    use bacnet::enums::PropertyIdentifier as P;
    use bacnet::services::{COVNotification, PropertyValue};
    let device = server.device_id();
    let properties = [P::SYSTEM_STATUS, P::TIME_OF_DEVICE_RESTART, P::LAST_RESTART_REASON];
    let targets: Vec<trellis_model::PropertyTarget> = properties
        .iter()
        .map(|p| trellis_model::PropertyTarget { object: device, property: *p, array_index: None })
        .collect();
    let mut values = Vec::new();
    if let Ok(reads) = server.read_targets(&targets).await {
        for read in reads.into_iter().flatten() {
            match read.outcome {
                Ok(value) => values.push(PropertyValue {
                    property: read.target.property,
                    array_index: None,
                    value,
                    priority: None,
                }),
                Err(e) => {
                    tracing::debug!(property = %read.target.property, error = ?e, "left out of the restart notification")
                }
            }
        }
    }
    COVNotification {
        subscriber_process_identifier: 0,
        initiating_device: device,
        monitored_object: device,
        time_remaining: 0,
        values,
    }
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::enums::PropertyIdentifier as P;

    fn start() -> Restart {
        let at =
            (Date { year: 126, month: 12, day: 3, weekday: 4 }, Time { hour: 10, minute: 0, second: 0, hundredths: 0 });
        Restart::new(RestartReason::UNKNOWN, at, vec![Recipient::Address { network_number: 0, mac_address: vec![] }])
    }

    #[test]
    fn a_start_is_notified_once_and_a_reinitialize_again_with_its_reason() {
        let r = start();
        assert_eq!(r.take_due().map(|l| l.len()), Some(1));
        assert_eq!(r.take_due(), None);
        let later =
            (Date { year: 126, month: 12, day: 3, weekday: 4 }, Time { hour: 11, minute: 0, second: 0, hundredths: 0 });
        r.restarted(RestartReason::WARMSTART, later);
        assert_eq!(r.read(P::LAST_RESTART_REASON), Some(Value::Enumerated(2).into()));
        let stamp = encoded(|o| TimeStamp::DateTime(later.0, later.1).encode(o));
        assert_eq!(r.read(P::TIME_OF_DEVICE_RESTART), Some(stamp));
        assert!(r.take_due().is_some());
    }

    #[test]
    fn the_recipients_are_written_as_bacnet_recipients_and_bounded() {
        let r = start();
        let device = Recipient::Device(bacnet::ObjectIdentifier::new(bacnet::ObjectType::DEVICE, 7).unwrap());
        let list = encoded(|o| device.encode(o));
        r.write_recipients(&list).unwrap();
        assert_eq!(r.read(P::RESTART_NOTIFICATION_RECIPIENTS), Some(list));
        let bad: AnyValue = Value::Unsigned(3).into();
        assert_eq!(r.write_recipients(&bad).unwrap_err().code, ErrorCode::INVALID_DATA_TYPE);
        let too_many = encoded(|o| (0..=MAX_RECIPIENTS).for_each(|_| device.encode(o)));
        assert_eq!(r.write_recipients(&too_many).unwrap_err().code, ErrorCode::NO_SPACE_TO_WRITE_PROPERTY);
    }
}
