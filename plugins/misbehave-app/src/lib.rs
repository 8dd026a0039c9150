//! Misbehave (app): an application that fails on purpose, for the host's
//! failure tests. It watches `point`, and each change makes `on-change`
//! fail as `failure` says; at start it tries what it is told to try and
//! logs what the host answered.
//!
//! ```toml
//! point = "1001/analog-value,1"    # watched; its changes trigger the failure
//! failure = "trap"                 # trap | loop | memory | none
//! try_write = "1001/analog-value,2"   # optional: written at start (logged: done or refused)
//! try_publish = "elsewhere/topic"     # optional: published at start (logged)
//! ```

use serde::Deserialize;
use trellis_app_sdk::{App, AppInfo, Gateway, LogLevel, Point, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    point: String,
    #[serde(default = "none")]
    failure: String,
    try_write: Option<String>,
    try_publish: Option<String>,
}

fn none() -> String {
    "none".into()
}

/// The application.
pub struct Misbehave {
    failure: String,
    changes: u64,
}

impl App for Misbehave {
    fn start(settings: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
        let s: Settings = basic_toml::from_str(settings).map_err(|e| format!("misbehave-app settings: {e}"))?;
        if !["trap", "loop", "memory", "none"].contains(&s.failure.as_str()) {
            return Err(format!("misbehave-app: unknown failure {:?}", s.failure));
        }
        gw.watch(&Point::parse(&s.point)).map_err(|e| e.to_string())?;
        if let Some(p) = &s.try_write {
            let said = match gw.write(&Point::parse(p), Value::Real(1.0), Some(16)) {
                Ok(()) => "done".to_string(),
                Err(e) => e.to_string(),
            };
            gw.log(LogLevel::Warn, &format!("misbehave-app: writing {p}: {said}"));
        }
        if let Some(t) = &s.try_publish {
            let said = gw.publish(t, b"x", 0, false).err().unwrap_or_else(|| "done".into());
            gw.log(LogLevel::Warn, &format!("misbehave-app: publishing on {t}: {said}"));
        }
        // At warn: the gateway's default log shows it (the failure tests count starts).
        gw.log(LogLevel::Warn, "misbehave-app: started");
        Ok(Misbehave { failure: s.failure, changes: 0 })
    }

    fn info(&self) -> AppInfo {
        AppInfo {
            name: "misbehave-app".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: self.failure.clone(),
        }
    }

    fn on_change(&mut self, _gw: &mut dyn Gateway, _point: &Point, _value: &Value) {
        self.changes += 1;
        // The first delivery is the current value at start: fail on the next.
        if self.changes < 2 {
            return;
        }
        match self.failure.as_str() {
            "trap" => panic!("misbehave-app: trapping on request"),
            "loop" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            _ => {}
        }
    }
}

trellis_app_sdk::register_app!(Misbehave);
