//! The host's imports: log and clock.
//!
//! On `wasm32` these call the host. Built natively (unit tests of a model),
//! `log` writes to stderr and `now` reads the system clock, so model code
//! runs unchanged outside a component.
//!
//! The change notifications (`values-changed`, `objects-changed`) are not
//! here: the [`Store`](crate::Store) records changes and the runtime reports
//! them once per call.

use crate::DateTime;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something is off but the model carries on.
    Warn,
    /// Something failed.
    Error,
}

/// Write a line to the gateway's log, tagged with the plugin's name.
/// The host rate-limits it.
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message)
}

/// Wall-clock time as set by TimeSynchronization (or the host's OS).
pub fn now() -> DateTime {
    imp::now()
}

pub(crate) fn values_changed(objects: &[bacnet::ObjectIdentifier]) {
    imp::values_changed(objects)
}

pub(crate) fn objects_changed() {
    imp::objects_changed()
}

/// Hand event transitions to the host; per transition, whether it waits
/// for an acknowledgment.
pub(crate) fn event_transitions(reports: &[crate::EventReport]) -> Vec<bool> {
    imp::event_transitions(reports)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::LogLevel;
    use crate::__private::bindings::trellis::bacnet::host;
    use crate::DateTime;
    use crate::value::wit;

    pub fn log(level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => host::LogLevel::Trace,
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        };
        host::log(level, message)
    }

    pub fn now() -> DateTime {
        wit::datetime_from_wit(host::now())
    }

    pub fn values_changed(objects: &[bacnet::ObjectIdentifier]) {
        let ids: Vec<_> = objects.iter().map(wit::object_id_to_wit).collect();
        host::values_changed(&ids)
    }

    pub fn objects_changed() {
        host::objects_changed()
    }

    pub fn event_transitions(reports: &[crate::EventReport]) -> Vec<bool> {
        let transitions: Vec<host::EventTransition> = reports
            .iter()
            .map(|r| host::EventTransition {
                object: wit::object_id_to_wit(&r.object),
                event_type: r.event_type.0,
                from_state: r.from.0,
                to_state: r.to.0,
                notify_type: r.notify_type.0,
                notification_class: r.notification_class,
                message_text: r.message_text.clone(),
                time: wit::datetime_to_wit(r.time),
                event_values: r.event_values.clone(),
            })
            .collect();
        host::event_transitions(&transitions)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::LogLevel;
    use crate::DateTime;

    pub fn log(level: LogLevel, message: &str) {
        std::eprintln!("[{level:?}] {message}");
    }

    pub fn now() -> DateTime {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        DateTime::new(unix_ms, 0)
    }

    pub fn values_changed(_: &[bacnet::ObjectIdentifier]) {}

    pub fn objects_changed() {}

    /// Natively no class requires an acknowledgment.
    pub fn event_transitions(reports: &[crate::EventReport]) -> Vec<bool> {
        vec![false; reports.len()]
    }
}
