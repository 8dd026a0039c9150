//! The host's log. On `wasm32` a line goes to the gateway's log, tagged
//! with the plugin's name and rate-limited by the host; built natively (a
//! policy's unit tests) it goes to stderr.

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something is off but the policy carries on.
    Warn,
    /// Something failed.
    Error,
}

/// Write a line to the gateway's log.
pub fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::__private::bindings::trellis::routing::host;
        let level = match level {
            LogLevel::Trace => host::LogLevel::Trace,
            LogLevel::Debug => host::LogLevel::Debug,
            LogLevel::Info => host::LogLevel::Info,
            LogLevel::Warn => host::LogLevel::Warn,
            LogLevel::Error => host::LogLevel::Error,
        };
        host::log(level, message);
    }
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}
