//! {{name}}: a Trellis application — logic next to the points, running in
//! the gateway's sandbox.
//!
//! It watches one point and logs each change; every minute it logs the
//! last value it saw. Its settings (TOML from the operator's `[[app]]`):
//! `point = "DEVICE/analog-input,1"`.

use trellis_app_sdk::{App, AppInfo, Gateway, LogLevel, Point, Value};

/// The application.
pub struct Watcher {
    point: String,
    last: Option<Value>,
}

impl App for Watcher {
    fn start(settings: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
        let point = settings
            .lines()
            .find_map(|l| l.trim().strip_prefix("point").map(|v| v.trim_start_matches([' ', '=']).trim().trim_matches('"').to_string()))
            .ok_or("{{name}}: settings need point = \"DEVICE/TYPE,INSTANCE\"")?;
        gw.watch(&Point::parse(&point)).map_err(|e| e.to_string())?;
        gw.set_timer(1, 60_000, Some(60_000));
        gw.log(LogLevel::Info, &format!("{{name}}: watching {point}"));
        Ok(Watcher { point, last: None })
    }

    fn info(&self) -> AppInfo {
        AppInfo {
            name: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!("logs {}", self.point),
        }
    }

    fn on_change(&mut self, gw: &mut dyn Gateway, point: &Point, value: &Value) {
        gw.log(LogLevel::Info, &format!("{point} = {value:?}"));
        self.last = Some(value.clone());
    }

    fn on_timer(&mut self, gw: &mut dyn Gateway, _id: u32) {
        gw.log(LogLevel::Info, &format!("{} was {:?} a minute on", self.point, self.last));
    }
}

trellis_app_sdk::register_app!(Watcher);
