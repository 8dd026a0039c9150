//! Evaluating the schedules and making their writes: to the device's own
//! objects through the same path a WriteProperty takes, to other devices'
//! objects with a confirmed WriteProperty through the station's client
//! state machine (retried; the device found by a Who-Is for its instance
//! and its I-Am, as event recipients are).
//!
//! Must never: let one failed write stop the others (Clause 12.24.9), or
//! wait for an I-Am more than [`BINDING_TIMEOUT`] (the write is dropped and
//! counted).

use super::{Schedules, lock};
use crate::alarms::EventSink;
use crate::dispatch::Server;
use bacnet::enums::{ConfirmedServiceChoice, Reliability, UnconfirmedServiceChoice};
use bacnet::schedule::{DeviceObjectPropertyReference, evaluate};
use bacnet::services::{ServiceCodec, WritePropertyRequest};
use bacnet::{Date, ObjectIdentifier, Time, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use trellis_model::ObjectModel;

/// How long a write to another device waits for that device's I-Am.
pub const BINDING_TIMEOUT: Duration = Duration::from_secs(10);
/// Writes to other devices that may wait at once; more are dropped.
pub const MAX_PENDING: usize = 256;

/// How often a schedule writes its value to its references again, in case
/// a write was lost (a device restarting, a request that failed).
pub const REFRESH: Duration = Duration::from_secs(300);

/// The same value, NaN included (a REAL written as NaN is the same NaN).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// A write one evaluation asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScheduledWrite {
    /// The schedule that writes.
    pub schedule: ObjectIdentifier,
    /// Where.
    pub reference: DeviceObjectPropertyReference,
    /// What (NULL relinquishes).
    pub value: Value,
    /// At which priority.
    pub priority: u8,
}

/// A write to another device waiting for its I-Am.
#[derive(Debug)]
pub(crate) struct PendingWrite {
    device: u32,
    body: Vec<u8>,
    since: Instant,
}

impl Schedules {
    /// Evaluate every schedule at the local `date` and `time`: update
    /// Present_Value and return the writes due (see the module docs of
    /// [`super`] for when they are).
    pub(crate) fn evaluate(&self, date: Date, time: Time, now: Instant) -> Vec<ScheduledWrite> {
        let mut writes = std::mem::take(&mut *lock(&self.orphans));
        for s in self.all_schedules() {
            let mut s = lock(&s);
            let schedule = super::schedule_id(s.config.instance);
            for (reference, priority) in std::mem::take(&mut s.relinquish) {
                writes.push(ScheduledWrite { schedule, reference, value: Value::Null, priority });
            }
            if !s.config.effective_period.contains(date) || !bacnet::schedule::is_fully_specified(date) {
                s.active = false;
                continue;
            }
            let entering = !s.active;
            s.active = true;
            if !s.out_of_service {
                let c = &s.config;
                let e =
                    evaluate(date, time, &c.weekly, &c.exceptions, &c.default, |id| self.calendar_includes(id, date));
                s.present_value = e.value;
            }
            if s.reliability() != Reliability::NO_FAULT_DETECTED {
                continue;
            }
            let changed = !s.last_written.as_ref().is_some_and(|w| same(w, &s.present_value));
            let refresh = s.written_at.is_none_or(|at| now.saturating_duration_since(at) >= REFRESH);
            if !(changed || entering || s.rewrite || refresh) {
                continue;
            }
            s.rewrite = false;
            s.last_written = Some(s.present_value.clone());
            s.written_at = Some(now);
            for reference in &s.config.references {
                writes.push(ScheduledWrite {
                    schedule,
                    reference: *reference,
                    value: s.present_value.clone(),
                    priority: s.config.priority_for_writing,
                });
            }
        }
        writes
    }

    fn park(&self, device: u32, body: Vec<u8>) -> Option<bool> {
        let mut pending = lock(&self.pending);
        if pending.len() >= MAX_PENDING {
            return None;
        }
        let asked = pending.iter().any(|p| p.device == device && p.since.elapsed() < Duration::from_secs(1));
        pending.push(PendingWrite { device, body, since: Instant::now() });
        Some(!asked)
    }
}

/// Evaluate `server`'s schedules now and make the writes due, then send the
/// writes whose device has answered.
pub(crate) async fn run<M: ObjectModel, S: EventSink>(server: &Server<M>, sink: &S) {
    let schedules = &server.host().schedules;
    let (date, time) = server.model().clock().unwrap_or_default().now().local_date_time();
    let ours = server.device_id();
    for w in schedules.evaluate(date, time, Instant::now()) {
        let request = WritePropertyRequest {
            object: w.reference.object,
            property: w.reference.property,
            array_index: w.reference.array_index,
            value: w.value.clone().into(),
            priority: Some(w.priority),
        };
        match w.reference.device {
            Some(device) if device != ours => {
                // DeviceCommunicationControl: nothing initiated; the refresh writes it later.
                if server.communication().initiates() {
                    write_remote(server, sink, device.instance, request).await;
                } else {
                    tracing::debug!(schedule = %w.schedule, "scheduled write to another device held back (DeviceCommunicationControl)");
                }
            }
            _ => match server.write_as_device(request).await {
                Ok(()) => {
                    schedules.stats.local_written.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(schedule = %w.schedule, object = %w.reference.object, property = %w.reference.property, value = ?w.value, "scheduled write");
                }
                Err(e) => {
                    schedules.stats.local_failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(schedule = %w.schedule, object = %w.reference.object, property = %w.reference.property, error = %e, "scheduled write refused");
                }
            },
        }
    }
    send_pending(server, sink).await;
}

/// Queue a confirmed WriteProperty to device `instance`, or park it until
/// the device's I-Am tells its address.
async fn write_remote<M: ObjectModel, S: EventSink>(
    server: &Server<M>,
    sink: &S,
    instance: u32,
    w: WritePropertyRequest,
) {
    let schedules = &server.host().schedules;
    let body = w.to_vec();
    if let Some(to) = server.alarms().binding(instance) {
        queue(server, sink, to, body);
        return;
    }
    server.alarms().want(instance);
    match schedules.park(instance, body) {
        Some(true) => {
            let who_is = bacnet::services::WhoIs { range: Some((instance, instance)) }.to_vec();
            if let Err(e) = sink.broadcast(UnconfirmedServiceChoice::WHO_IS, who_is).await {
                tracing::warn!(device = instance, error = %e, "Who-Is for a scheduled write's device not sent");
            }
        }
        Some(false) => {}
        None => {
            schedules.stats.unreachable.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(device = instance, "too many scheduled writes wait for their device: write dropped");
        }
    }
}

fn queue<M: ObjectModel, S: EventSink>(server: &Server<M>, sink: &S, to: trellis_net::DeviceAddress, body: Vec<u8>) {
    let stats = &server.host().schedules.stats;
    if sink.confirmed(to, ConfirmedServiceChoice::WRITE_PROPERTY, body) {
        stats.remote_queued.fetch_add(1, Ordering::Relaxed);
    } else {
        stats.remote_failed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("scheduled write to another device not queued: the confirmed queue is full");
    }
}

/// Send the parked writes whose device is now known; drop (and count) those
/// that waited too long.
async fn send_pending<M: ObjectModel, S: EventSink>(server: &Server<M>, sink: &S) {
    let schedules = &server.host().schedules;
    let mut ready = Vec::new();
    let mut expired = 0u64;
    lock(&schedules.pending).retain_mut(|p| {
        if let Some(to) = server.alarms().binding(p.device) {
            ready.push((to, std::mem::take(&mut p.body)));
            return false;
        }
        if p.since.elapsed() >= BINDING_TIMEOUT {
            expired += 1;
            return false;
        }
        true
    });
    if expired > 0 {
        schedules.stats.unreachable.fetch_add(expired, Ordering::Relaxed);
        tracing::warn!(writes = expired, "no I-Am from a scheduled write's device in time: writes dropped");
    }
    for (to, body) in ready {
        queue(server, sink, to, body);
    }
}

#[cfg(test)]
mod tests {
    use super::super::ScheduleConfig;
    use super::*;
    use bacnet::codec::UNSPECIFIED;
    use bacnet::enums::{ObjectType, PropertyIdentifier as P};
    use bacnet::schedule::{DateRange, TimeValue};

    fn date(d: u8) -> Date {
        Date { year: 126, month: 12, day: d, weekday: UNSPECIFIED }
    }
    fn at(hour: u8) -> Time {
        Time { hour, minute: 0, second: 0, hundredths: 0 }
    }
    const SETPOINT: DeviceObjectPropertyReference = DeviceObjectPropertyReference {
        object: ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 },
        property: P::PRESENT_VALUE,
        array_index: None,
        device: None,
    };

    /// Occupied (21.0) 07:00–18:00 every day, 16.0 otherwise, from 1 to 20 December 2026.
    fn schedules() -> Schedules {
        let day =
            vec![TimeValue { time: at(7), value: Value::Real(21.0) }, TimeValue { time: at(18), value: Value::Null }];
        Schedules::new(
            vec![ScheduleConfig {
                instance: 1,
                name: "Occupancy".into(),
                description: None,
                effective_period: DateRange { start: date(1), end: date(20) },
                weekly: vec![day; 7],
                exceptions: vec![],
                default: Value::Real(16.0),
                references: vec![SETPOINT],
                priority_for_writing: 12,
                writable: true,
            }],
            vec![],
        )
    }
    /// One instant for a whole test: no refresh falls due unless a test moves it.
    fn start() -> Instant {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *START.get_or_init(Instant::now)
    }
    fn values(writes: &[ScheduledWrite]) -> Vec<Value> {
        writes.iter().map(|w| w.value.clone()).collect()
    }

    #[test]
    fn a_schedule_writes_at_start_then_only_when_its_value_changes() {
        let s = schedules();
        let first = s.evaluate(date(3), at(6), start());
        assert_eq!(
            first,
            vec![ScheduledWrite {
                schedule: ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 },
                reference: SETPOINT,
                value: Value::Real(16.0),
                priority: 12,
            }]
        );
        assert!(s.evaluate(date(3), Time { minute: 30, ..at(6) }, start()).is_empty(), "no change, no write");
        assert_eq!(values(&s.evaluate(date(3), at(7), start())), [Value::Real(21.0)]);
        assert!(s.evaluate(date(3), at(12), start()).is_empty());
        assert_eq!(values(&s.evaluate(date(3), at(18), start())), [Value::Real(16.0)]);
    }

    #[test]
    fn out_of_its_effective_period_it_neither_evaluates_nor_writes_and_it_writes_on_entering() {
        let s = schedules();
        assert_eq!(values(&s.evaluate(date(20), at(8), start())), [Value::Real(21.0)]);
        assert!(s.evaluate(date(21), at(20), start()).is_empty());
        let id = ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 };
        let today = date(21);
        assert_eq!(s.read(id, P::PRESENT_VALUE, None, today).unwrap(), Value::Real(21.0).into(), "kept");
        // Back in the period (the clock set back): written again even though the value is the same.
        assert_eq!(values(&s.evaluate(date(20), at(9), start())), [Value::Real(21.0)]);
    }

    #[test]
    fn new_references_are_written_at_once_the_removed_relinquished_and_a_configuration_error_writes_nothing() {
        let s = schedules();
        s.evaluate(date(3), at(8), start());
        let id = ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 };
        let other = DeviceObjectPropertyReference {
            object: ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 2 },
            ..SETPOINT
        };
        let mut list = Vec::new();
        other.encode(&mut list);
        let list = bacnet::AnyValue::decode(&mut bacnet::codec::Reader::new(&list)).unwrap();
        s.write(id, P::LIST_OF_OBJECT_PROPERTY_REFERENCES, None, &list).unwrap();
        let again = s.evaluate(date(3), at(8), start());
        let got: Vec<_> = again.iter().map(|w| (w.reference.object.instance, w.value.clone())).collect();
        assert_eq!(got, [(1, Value::Null), (2, Value::Real(21.0))]);
        s.write(id, P::SCHEDULE_DEFAULT, None, &Value::Boolean(true).into()).unwrap();
        assert!(s.evaluate(date(3), at(19), start()).is_empty(), "REAL and BOOLEAN values: nothing written");
    }

    #[test]
    fn the_value_is_written_again_every_refresh_period() {
        let s = schedules();
        assert_eq!(s.evaluate(date(3), at(8), start()).len(), 1);
        assert!(s.evaluate(date(3), at(8), start() + REFRESH / 2).is_empty());
        assert_eq!(values(&s.evaluate(date(3), at(8), start() + REFRESH)), [Value::Real(21.0)]);
    }

    #[test]
    fn a_new_priority_relinquishes_the_old_command_first() {
        let s = schedules();
        s.evaluate(date(3), at(8), start());
        let id = ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 };
        s.write(id, P::PRIORITY_FOR_WRITING, None, &Value::Unsigned(9).into()).unwrap();
        let writes = s.evaluate(date(3), at(8), start());
        let got: Vec<(Value, u8)> = writes.iter().map(|w| (w.value.clone(), w.priority)).collect();
        assert_eq!(got, [(Value::Null, 12), (Value::Real(21.0), 9)]);
    }

    #[test]
    fn a_nan_is_written_once_not_every_second() {
        let s = schedules();
        let id = ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 };
        s.write(id, P::SCHEDULE_DEFAULT, None, &Value::Real(f32::NAN).into()).unwrap();
        assert_eq!(s.evaluate(date(3), at(20), start()).len(), 1);
        assert!(s.evaluate(date(3), at(21), start()).is_empty());
    }
}
