//! Device management a served device executes: DeviceCommunicationControl
//! (Clause 16.1), ReinitializeDevice (16.4) and Time/UTCTimeSynchronization
//! (16.7, 16.8).
//!
//! - DCC sets [`CommunicationControl`], which the endpoint consults for
//!   every message: under `disable` the device answers only DCC and
//!   ReinitializeDevice and sends nothing else; under `disable-initiation`
//!   it answers requests (I-Am to Who-Is included) but initiates nothing
//!   (no COV notification, no I-Have). A duration ends it by itself.
//! - ReinitializeDevice is acknowledged first; then a warm start restarts
//!   the object model with its state (export → fresh instance → import),
//!   a cold start restarts it from scratch and drops the COV subscriptions.
//!   Both end a DCC. Backup and restore are not supported.
//! - Time synchronization sets the clock plugins read (`host.now`, WASI's
//!   wall clock, and `tick(now)`), never the OS clock.
//!
//! Passwords: when the device has one configured, DCC and
//! ReinitializeDevice must carry it (else Error security/password-failure);
//! without one configured, any password or none is accepted, as the
//! standard allows.
//!
//! Must never: block the endpoint while a model restarts, or move the OS
//! clock.

use super::dispatch::{Failure, Server};
use bacnet::enums::{EnableDisable, ErrorClass, ErrorCode, ReinitializedState, RestartReason};
use bacnet::services::{BacnetError, DeviceCommunicationControlRequest, ReinitializeDeviceRequest};
use bacnet::{CharacterString, Date, Time};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use trellis_model::{DateTime, ObjectModel};

/// The state DeviceCommunicationControl leaves a device in.
#[derive(Debug, Default)]
pub struct CommunicationControl {
    state: Mutex<Option<(EnableDisable, Option<Instant>)>>,
}

impl CommunicationControl {
    /// The state in force (a duration that ran out is `enable`).
    pub fn current(&self) -> EnableDisable {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match *s {
            Some((state, until)) if until.is_none_or(|u| Instant::now() < u) => state,
            Some(_) => {
                tracing::info!("DeviceCommunicationControl: the duration ended, communication enabled");
                *s = None;
                EnableDisable::ENABLE
            }
            None => EnableDisable::ENABLE,
        }
    }

    fn set(&self, state: EnableDisable, minutes: Option<u16>) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        *s = (state != EnableDisable::ENABLE)
            .then(|| (state, minutes.map(|m| Instant::now() + Duration::from_secs(m as u64 * 60))));
    }

    /// Whether a received request of this service is answered at all.
    pub fn answers(&self, confirmed_service: Option<bacnet::enums::ConfirmedServiceChoice>) -> bool {
        use bacnet::enums::ConfirmedServiceChoice as S;
        self.current() != EnableDisable::DISABLE
            || matches!(confirmed_service, Some(S::DEVICE_COMMUNICATION_CONTROL | S::REINITIALIZE_DEVICE))
    }

    /// Whether the device may initiate messages (notifications, I-Have,
    /// the startup I-Am).
    pub fn initiates(&self) -> bool {
        self.current() == EnableDisable::ENABLE
    }
}

fn password_failure() -> Failure {
    Failure::Error(BacnetError { class: ErrorClass::SECURITY, code: ErrorCode::PASSWORD_FAILURE })
}

/// Check a request's password against the configured one.
fn check_password(configured: Option<&str>, given: Option<&CharacterString>) -> Result<(), Failure> {
    let Some(expected) = configured else { return Ok(()) };
    match given.map(|g| g.to_text()) {
        Some(Ok(g)) if g == expected => Ok(()),
        _ => Err(password_failure()),
    }
}

impl<M: ObjectModel> Server<M> {
    pub(super) fn device_communication_control(&self, r: DeviceCommunicationControlRequest) -> Result<(), Failure> {
        check_password(self.config().password.as_deref(), r.password.as_ref())?;
        if !matches!(
            r.enable_disable,
            EnableDisable::ENABLE | EnableDisable::DISABLE | EnableDisable::DISABLE_INITIATION
        ) {
            return Err(Failure::Error(BacnetError {
                class: ErrorClass::SERVICES,
                code: ErrorCode::PARAMETER_OUT_OF_RANGE,
            }));
        }
        tracing::warn!(state = %r.enable_disable, minutes = ?r.time_duration, "DeviceCommunicationControl");
        self.communication().set(r.enable_disable, r.time_duration);
        Ok(())
    }

    /// Execute ReinitializeDevice: the checks now; the restart is left
    /// pending for [`Server::perform_pending_restart`], which the endpoint
    /// runs once the SimpleACK has left.
    pub(super) fn reinitialize_device(&self, r: ReinitializeDeviceRequest) -> Result<(), Failure> {
        check_password(self.config().password.as_deref(), r.password.as_ref())?;
        let cold = match r.reinitialized_state {
            ReinitializedState::COLDSTART => true,
            ReinitializedState::WARMSTART => false,
            // Nothing is ever pending: there is nothing to activate.
            ReinitializedState::ACTIVATE_CHANGES => return Ok(()),
            _ => {
                return Err(Failure::Error(BacnetError {
                    class: ErrorClass::SERVICES,
                    code: ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED,
                }));
            }
        };
        let mut pending = self.pending_restart().lock().unwrap_or_else(PoisonError::into_inner);
        // A cold start asked for after a warm one wins.
        *pending = Some(pending.unwrap_or(false) || cold);
        Ok(())
    }

    /// Whether an acknowledged ReinitializeDevice waits to be carried out
    /// (cheap: the endpoint asks after every answer it sends).
    pub fn restart_pending(&self) -> bool {
        self.pending_restart().lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Carry out an acknowledged ReinitializeDevice, if one is pending.
    pub async fn perform_pending_restart(&self) {
        let Some(cold) = self.pending_restart().lock().unwrap_or_else(PoisonError::into_inner).take() else { return };
        tracing::warn!(cold, "ReinitializeDevice: restarting the object model");
        self.communication().set(EnableDisable::ENABLE, None);
        if cold {
            let dropped = self.cov().with_table(|t, _| {
                let objects: Vec<_> = t.monitored_objects().collect();
                objects.into_iter().map(|o| t.remove_object(o)).sum::<usize>()
            });
            tracing::info!(dropped, "cold start: COV subscriptions dropped");
        }
        match self.model().reinitialize(cold).await {
            Ok(()) => {
                tracing::info!(cold, "ReinitializeDevice: object model restarted");
                let reason = if cold { RestartReason::COLDSTART } else { RestartReason::WARMSTART };
                let now = self.model().clock().unwrap_or_default().now().local_date_time();
                self.host().restart.restarted(reason, now);
            }
            Err(e) => tracing::error!(error = %e, "ReinitializeDevice: restarting the object model failed"),
        }
    }

    /// Time/UTCTimeSynchronization: set the clock the model reads.
    pub(super) fn synchronize_time(&self, date: Date, time: Time, utc: bool) {
        if !self.config().accept_time_sync {
            tracing::debug!("time synchronization ignored (accept_time_sync = false)");
            return;
        }
        let Some(clock) = self.model().clock() else { return };
        let offset = clock.now().utc_offset_minutes;
        let Some(ms) = unix_ms(date, time) else {
            tracing::warn!(%date, %time, "time synchronization with unspecified fields ignored");
            return;
        };
        let unix_ms = if utc { ms } else { ms - offset as i64 * 60_000 };
        let Ok(unix_ms) = u64::try_from(unix_ms) else { return };
        tracing::info!(%date, %time, utc, "time synchronized");
        clock.set(DateTime { unix_ms, utc_offset_minutes: offset });
        // The schedules see the new time at once.
        self.host().schedules.wake.notify_one();
    }
}

/// Milliseconds since the Unix epoch of a fully specified date and time,
/// read as UTC; `None` for an unspecified field or a date that does not
/// exist. Unspecified hundredths count as 0.
fn unix_ms(date: Date, time: Time) -> Option<i64> {
    let unspecified = 255;
    if [date.year, date.month, date.day, time.hour, time.minute, time.second].contains(&unspecified) {
        return None;
    }
    let hundredths = if time.hundredths == unspecified { 0 } else { time.hundredths.min(99) as i32 };
    let field = |v: u8| i8::try_from(v).ok();
    let civil = jiff::civil::DateTime::new(
        1900 + date.year as i16,
        field(date.month)?,
        field(date.day)?,
        field(time.hour)?,
        field(time.minute)?,
        field(time.second)?,
        hundredths * 10_000_000,
    )
    .ok()?;
    Some(civil.to_zoned_datetime(jiff::tz::TimeZone::UTC).ok()?.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: u16, m: u8, d: u8) -> Date {
        Date { year: (y - 1900) as u8, month: m, day: d, weekday: 255 }
    }

    fn time(h: u8, mi: u8, s: u8, c: u8) -> Time {
        Time { hour: h, minute: mi, second: s, hundredths: c }
    }

    #[test]
    fn civil_dates_convert_to_unix_milliseconds() {
        assert_eq!(unix_ms(date(1970, 1, 1), time(0, 0, 0, 0)), Some(0));
        assert_eq!(unix_ms(date(2000, 3, 1), time(0, 0, 0, 0)), Some(951_868_800_000));
        assert_eq!(unix_ms(date(2026, 11, 30), time(12, 34, 56, 78)), Some(1_796_042_096_780));
        assert_eq!(unix_ms(date(2024, 2, 29), time(23, 59, 59, 99)), Some(1_709_251_199_990));
    }

    #[test]
    fn unspecified_or_impossible_fields_are_refused() {
        assert_eq!(unix_ms(Date { year: 255, ..date(2000, 1, 1) }, time(0, 0, 0, 0)), None);
        assert_eq!(unix_ms(date(2000, 13, 1), time(0, 0, 0, 0)), None);
        assert_eq!(unix_ms(date(2000, 1, 1), time(24, 0, 0, 0)), None);
        assert_eq!(unix_ms(date(2000, 1, 1), time(12, 0, 0, 255)), Some(946_728_000_000));
    }

    #[test]
    fn a_configured_password_must_match() {
        let pw = CharacterString::utf8("trellis");
        assert!(check_password(None, None).is_ok());
        assert!(check_password(None, Some(&pw)).is_ok());
        assert!(check_password(Some("trellis"), Some(&pw)).is_ok());
        assert!(check_password(Some("trellis"), None).is_err());
        assert!(check_password(Some("other"), Some(&pw)).is_err());
    }

    #[test]
    fn disable_answers_only_dcc_and_reinitialize_and_a_duration_ends_it() {
        use bacnet::enums::ConfirmedServiceChoice as S;
        let c = CommunicationControl::default();
        assert!(c.answers(Some(S::READ_PROPERTY)) && c.initiates());
        c.set(EnableDisable::DISABLE, None);
        assert!(!c.answers(Some(S::READ_PROPERTY)) && !c.answers(None) && !c.initiates());
        assert!(c.answers(Some(S::DEVICE_COMMUNICATION_CONTROL)) && c.answers(Some(S::REINITIALIZE_DEVICE)));
        c.set(EnableDisable::DISABLE_INITIATION, None);
        assert!(c.answers(Some(S::READ_PROPERTY)) && c.answers(None) && !c.initiates());
        c.set(EnableDisable::DISABLE, Some(0));
        assert_eq!(c.current(), EnableDisable::ENABLE, "a duration of 0 minutes has already ended");
        c.set(EnableDisable::ENABLE, None);
        assert!(c.initiates());
    }
}
