//! Alarm threshold: watches one point and raises an alarm when it leaves
//! its limits for longer than a delay — an MQTT message and, optionally, a
//! BACnet write — and clears it when the point has been back inside the
//! limits (less the deadband) for as long. The states and their rules are
//! those of BACnet's OUT_OF_RANGE event algorithm (Clause 13.3.6).
//!
//! ```toml
//! point = "zone-temp"                    # a configured point name, or 1001/analog-input,1
//! high_limit = 26.0                      # at least one of the two limits
//! low_limit = 16.0
//! deadband = 0.5                         # back to normal below high - deadband (above low + deadband)
//! delay_s = 10                           # how long a condition must hold before the state changes
//! topic = "building/alarms/zone-temp"    # the alarm message (retained, QoS 1)
//!
//! [write]                                # optional: a BACnet write at each change of state
//! point = "1001/binary-value,1"
//! alarm = 1                              # the value written on high or low (the point's own type)
//! normal = 0                             # the value written back to normal (null: relinquish)
//! priority = 8
//! ```
//!
//! The message is JSON: `{"state": "high", "value": 27.1, "limit": 26.0,
//! "point": "zone-temp", "time": 1733100000000}` (`state` is `normal`,
//! `high` or `low`). The state in effect is kept in the persisted state, so
//! a restarted gateway or a swapped plugin does not raise the same alarm
//! twice.

use serde::Deserialize;
use trellis_app_sdk::{App, AppInfo, Gateway, LogLevel, Point, Value, json_string};

/// The delay timer's id.
const DELAY: u32 = 1;
/// The persisted state's key.
const STATE_KEY: &str = "state";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    point: String,
    high_limit: Option<f64>,
    low_limit: Option<f64>,
    #[serde(default)]
    deadband: f64,
    #[serde(default)]
    delay_s: u64,
    topic: String,
    write: Option<WriteSettings>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteSettings {
    point: String,
    alarm: f64,
    normal: Option<f64>,
    #[serde(default = "default_priority")]
    priority: u8,
}

fn default_priority() -> u8 {
    8
}

/// The alarm states (BACnetEventState's offnormal ones, and normal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Inside the limits.
    Normal,
    /// Above High_Limit.
    High,
    /// Below Low_Limit.
    Low,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Normal => "normal",
            State::High => "high",
            State::Low => "low",
        }
    }

    fn from_name(s: &[u8]) -> Option<State> {
        match s {
            b"normal" => Some(State::Normal),
            b"high" => Some(State::High),
            b"low" => Some(State::Low),
            _ => None,
        }
    }
}

/// The application.
pub struct AlarmThreshold {
    settings: Settings,
    point: Point,
    state: State,
    /// A state the point's value asks for, and since when.
    pending: Option<(State, u64)>,
    last_value: Option<f64>,
}

impl AlarmThreshold {
    /// The state the value `v` asks for, given the state in effect.
    fn target(&self, v: f64) -> State {
        let s = &self.settings;
        match (s.high_limit, s.low_limit) {
            (Some(high), _) if v > high => State::High,
            (_, Some(low)) if v < low => State::Low,
            (Some(high), _) if self.state == State::High && v > high - s.deadband => State::High,
            (_, Some(low)) if self.state == State::Low && v < low + s.deadband => State::Low,
            _ => State::Normal,
        }
    }

    fn transition(&mut self, gw: &mut dyn Gateway, to: State) {
        self.state = to;
        self.pending = None;
        let limit = match to {
            State::High => self.settings.high_limit,
            State::Low => self.settings.low_limit,
            State::Normal => None,
        };
        let value = self.last_value.map_or("null".to_string(), |v| Value::Double(v).to_json());
        let limit = limit.map_or("null".to_string(), |l| Value::Double(l).to_json());
        let message = format!(
            "{{\"state\": {}, \"value\": {value}, \"limit\": {limit}, \"point\": {}, \"time\": {}}}",
            json_string(to.name()),
            json_string(&self.settings.point),
            gw.now_ms()
        );
        if let Err(e) = gw.publish(&self.settings.topic, message.as_bytes(), 1, true) {
            gw.log(LogLevel::Error, &format!("the alarm message could not be published: {e}"));
        }
        if let Some(w) = &self.settings.write {
            let target = Point::parse(&w.point);
            let number = if to == State::Normal { w.normal } else { Some(w.alarm) };
            let value = match number {
                None => Value::Null,
                Some(n) => like(gw.read(&target).ok().as_ref(), n),
            };
            if let Err(e) = gw.write(&target, value, Some(w.priority)) {
                gw.log(LogLevel::Error, &format!("writing {} failed: {e}", w.point));
            }
        }
        if let Err(e) = gw.state_set(STATE_KEY, Some(to.name().as_bytes())) {
            gw.log(LogLevel::Warn, &format!("the alarm state could not be kept: {e}"));
        }
        gw.log(LogLevel::Info, &format!("{} is {}", self.settings.point, to.name()));
    }
}

/// `n` in the type of `current` (a binary point's Enumerated, a
/// multi-state's Unsigned…); Real when the type is not known.
fn like(current: Option<&Value>, n: f64) -> Value {
    match current {
        Some(Value::Enumerated(_)) => Value::Enumerated(n as u32),
        Some(Value::Unsigned(_)) => Value::Unsigned(n as u64),
        Some(Value::Signed(_)) => Value::Signed(n as i64),
        Some(Value::Boolean(_)) => Value::Boolean(n != 0.0),
        Some(Value::Double(_)) => Value::Double(n),
        _ => Value::Real(n as f32),
    }
}

impl App for AlarmThreshold {
    fn start(settings: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
        let settings: Settings = basic_toml::from_str(settings).map_err(|e| format!("settings: {e}"))?;
        if settings.high_limit.is_none() && settings.low_limit.is_none() {
            return Err("settings: give high_limit, low_limit or both".into());
        }
        if let (Some(h), Some(l)) = (settings.high_limit, settings.low_limit)
            && l >= h
        {
            return Err(format!("settings: low_limit {l} must be below high_limit {h}"));
        }
        if settings.deadband < 0.0 {
            return Err("settings: deadband must not be negative".into());
        }
        if let Some(w) = &settings.write
            && !(1..=16).contains(&w.priority)
        {
            return Err("settings: write.priority must be 1..=16".into());
        }
        let point = Point::parse(&settings.point);
        gw.watch(&point).map_err(|e| format!("watching {}: {e}", settings.point))?;
        let state = gw.state_get(STATE_KEY).and_then(|s| State::from_name(&s)).unwrap_or(State::Normal);
        Ok(AlarmThreshold { settings, point, state, pending: None, last_value: None })
    }

    fn info(&self) -> AppInfo {
        let s = &self.settings;
        let limits = match (s.low_limit, s.high_limit) {
            (Some(l), Some(h)) => format!("outside {l}..{h}"),
            (None, Some(h)) => format!("above {h}"),
            (Some(l), None) => format!("below {l}"),
            (None, None) => String::new(),
        };
        AppInfo {
            name: "alarm-threshold".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!("{} {limits} for {} s → {}", s.point, s.delay_s, s.topic),
        }
    }

    fn on_change(&mut self, gw: &mut dyn Gateway, point: &Point, value: &Value) {
        if point != &self.point {
            return;
        }
        let Some(v) = value.as_f64() else { return };
        self.last_value = Some(v);
        let target = self.target(v);
        if target == self.state {
            if self.pending.take().is_some() {
                gw.cancel_timer(DELAY);
            }
            return;
        }
        if self.pending.is_some_and(|(p, _)| p == target) {
            return;
        }
        if self.settings.delay_s == 0 {
            return self.transition(gw, target);
        }
        self.pending = Some((target, gw.now_ms()));
        gw.set_timer(DELAY, self.settings.delay_s * 1000, None);
    }

    fn on_timer(&mut self, gw: &mut dyn Gateway, id: u32) {
        if id != DELAY {
            return;
        }
        if let Some((target, _)) = self.pending
            && self.last_value.is_some_and(|v| self.target(v) == target)
        {
            self.transition(gw, target);
        }
    }

    fn export_state(&self) -> Vec<u8> {
        self.state.name().as_bytes().to_vec()
    }

    fn import_state(&mut self, state: &[u8]) -> Result<(), String> {
        if state.is_empty() {
            return Ok(());
        }
        self.state = State::from_name(state).ok_or("not an alarm state")?;
        Ok(())
    }
}

trellis_app_sdk::register_app!(AlarmThreshold);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_app_sdk::testing::FakeGateway;

    const SETTINGS: &str = r#"
        point = "zone-temp"
        high_limit = 26.0
        low_limit = 16.0
        deadband = 0.5
        delay_s = 10
        topic = "building/alarms/zone-temp"
        [write]
        point = "1001/binary-value,1"
        alarm = 1
        normal = 0
    "#;

    fn zone() -> Point {
        Point::named("zone-temp")
    }

    fn started() -> (AlarmThreshold, FakeGateway) {
        let mut gw = FakeGateway::new();
        gw.set(Point::parse("1001/binary-value,1"), Value::Enumerated(0));
        let app = AlarmThreshold::start(SETTINGS, &mut gw).unwrap();
        assert_eq!(gw.watched, [zone()]);
        (app, gw)
    }

    fn change(app: &mut AlarmThreshold, gw: &mut FakeGateway, at_s: u64, v: f32) {
        gw.now_ms = at_s * 1000;
        app.on_change(gw, &zone(), &Value::Real(v));
    }

    #[test]
    fn a_high_value_held_for_the_delay_raises_the_alarm_and_the_deadband_clears_it() {
        let (mut app, mut gw) = started();
        change(&mut app, &mut gw, 0, 25.0);
        assert!(gw.timers.is_empty() && gw.published.is_empty());
        change(&mut app, &mut gw, 1, 27.0);
        assert_eq!(gw.timers.get(&DELAY), Some(&(10_000, None)), "the delay starts");
        gw.now_ms = 11_000;
        app.on_timer(&mut gw, DELAY);
        let sent = gw.published_on("building/alarms/zone-temp");
        assert_eq!(sent.len(), 1);
        assert!(sent[0].contains("\"state\": \"high\"") && sent[0].contains("\"limit\": 26"), "{}", sent[0]);
        assert_eq!((gw.published[0].2, gw.published[0].3), (1, true), "QoS 1, retained");
        assert_eq!(gw.writes, [(Point::parse("1001/binary-value,1"), Value::Enumerated(1), Some(8))]);
        assert_eq!(gw.state.get(STATE_KEY).map(Vec::as_slice), Some(&b"high"[..]));

        // Inside the deadband it stays high; below it, normal after the delay.
        change(&mut app, &mut gw, 20, 25.8);
        assert_eq!(app.pending, None);
        change(&mut app, &mut gw, 21, 25.0);
        gw.now_ms = 31_000;
        app.on_timer(&mut gw, DELAY);
        assert!(gw.published_on("building/alarms/zone-temp")[1].contains("\"state\": \"normal\""));
        assert_eq!(gw.writes[1].1, Value::Enumerated(0));
    }

    #[test]
    fn a_value_that_returns_before_the_delay_raises_nothing() {
        let (mut app, mut gw) = started();
        change(&mut app, &mut gw, 0, 27.0);
        change(&mut app, &mut gw, 5, 25.0);
        assert!(gw.timers.is_empty(), "the delay is cancelled");
        app.on_timer(&mut gw, DELAY);
        assert!(gw.published.is_empty() && gw.writes.is_empty());
    }

    #[test]
    fn a_restart_in_alarm_does_not_raise_it_again() {
        let (mut app, mut gw) = started();
        change(&mut app, &mut gw, 0, 10.0);
        app.on_timer(&mut gw, DELAY);
        assert_eq!(gw.published.len(), 1);
        let mut again = AlarmThreshold::start(SETTINGS, &mut gw).unwrap();
        assert_eq!(again.state, State::Low, "from the persisted state");
        change(&mut again, &mut gw, 30, 10.5);
        assert!(again.pending.is_none() && gw.published.len() == 1);
    }

    #[test]
    fn bad_settings_are_named() {
        let mut gw = FakeGateway::new();
        let mut err = |s: &str| AlarmThreshold::start(s, &mut gw).err().unwrap();
        assert!(err("point = \"p\"\ntopic = \"t\"").contains("high_limit, low_limit"));
        assert!(err("point = \"p\"\ntopic = \"t\"\nhigh_limit = 1\nlow_limit = 2").contains("below"));
        assert!(err("point = \"p\"\ntopic = \"t\"\nhigh_limit = 1\nlimit = 2").contains("settings"));
    }
}
