//! Schedule: an occupancy schedule that writes setpoints. Each minute it
//! works out whether the building is occupied (a weekly schedule in local
//! time, holidays unoccupied) and, at each transition and at start, writes
//! every setpoint's occupied or unoccupied value at its priority (16, the
//! lowest, by default: any operator command wins) and publishes the
//! occupancy if a topic is given.
//!
//! ```toml
//! utc_offset_min = 60                  # local time = UTC + this (fixed: no daylight-saving rules)
//! holidays = ["2026-12-25", "2027-01-01"]
//! topic = "building/occupancy"         # optional: {"occupied": true, "time": …} (retained)
//! check_every_s = 60                   # how often the schedule is looked at (default 60)
//!
//! [week]                               # local times, HH:MM-HH:MM, several per day allowed
//! monday = ["07:00-19:00"]
//! tuesday = ["07:00-19:00"]
//! wednesday = ["07:00-19:00"]
//! thursday = ["07:00-19:00"]
//! friday = ["07:00-17:00"]
//!
//! [[setpoint]]
//! point = "1001/analog-value,1"        # or a configured point name
//! occupied = 21.0
//! unoccupied = 17.0
//! priority = 16
//! ```
//!
//! A day missing from `[week]` is unoccupied all day. A period's end is
//! exclusive; `00:00-24:00` is the whole day.

use serde::Deserialize;
use std::collections::BTreeMap;
use trellis_app_sdk::{App, AppInfo, Gateway, LogLevel, Point, Value};

/// The re-evaluation timer.
const TICK: u32 = 1;
const DAYS: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default)]
    utc_offset_min: i64,
    #[serde(default)]
    holidays: Vec<String>,
    topic: Option<String>,
    #[serde(default = "minute")]
    check_every_s: u64,
    #[serde(default)]
    week: BTreeMap<String, Vec<String>>,
    #[serde(default, rename = "setpoint")]
    setpoints: Vec<Setpoint>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Setpoint {
    point: String,
    occupied: f64,
    unoccupied: f64,
    #[serde(default = "lowest")]
    priority: u8,
}

fn minute() -> u64 {
    60
}

fn lowest() -> u8 {
    16
}

/// Minutes of the day, `[start, end)`.
type Period = (u32, u32);

/// The application.
pub struct Schedule {
    settings: Settings,
    /// Per weekday (0 = Sunday), the occupied periods.
    week: [Vec<Period>; 7],
    /// Holidays as days since 1970-01-01.
    holidays: Vec<i64>,
    occupied: Option<bool>,
}

fn minutes(hhmm: &str) -> Option<u32> {
    let (h, m) = hhmm.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h < 24 && m < 60 || h == 24 && m == 0).then_some(h * 60 + m)
}

fn period(text: &str) -> Result<Period, String> {
    let bad = || format!("`{text}` is not a period (HH:MM-HH:MM)");
    let (a, b) = text.split_once('-').ok_or_else(bad)?;
    let (a, b) = (minutes(a.trim()).ok_or_else(bad)?, minutes(b.trim()).ok_or_else(bad)?);
    if a >= b {
        return Err(format!("`{text}`: the end must come after the start"));
    }
    Ok((a, b))
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn date(text: &str) -> Result<i64, String> {
    let bad = || format!("`{text}` is not a date (YYYY-MM-DD)");
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next(), parts.next(), parts.next());
    let (Some(y), Some(m), Some(d), None) = (y, m, d, parts.next()) else { return Err(bad()) };
    let (y, m, d): (i64, u32, u32) =
        (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?, d.parse().map_err(|_| bad())?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d))
}

impl Schedule {
    /// Occupied at `now_ms` (UTC milliseconds since the epoch)?
    pub fn occupied_at(&self, now_ms: u64) -> bool {
        let local_min = (now_ms / 60_000) as i64 + self.settings.utc_offset_min;
        let day = local_min.div_euclid(1440);
        let minute = local_min.rem_euclid(1440) as u32;
        if self.holidays.contains(&day) {
            return false;
        }
        // 1970-01-01 was a Thursday (4).
        let weekday = (day + 4).rem_euclid(7) as usize;
        self.week[weekday].iter().any(|(a, b)| (*a..*b).contains(&minute))
    }

    fn evaluate(&mut self, gw: &mut dyn Gateway) {
        let now = gw.now_ms();
        let occupied = self.occupied_at(now);
        if self.occupied == Some(occupied) {
            return;
        }
        self.occupied = Some(occupied);
        for s in &self.settings.setpoints {
            let point = Point::parse(&s.point);
            let value = if occupied { s.occupied } else { s.unoccupied };
            if let Err(e) = gw.write(&point, Value::Real(value as f32), Some(s.priority)) {
                gw.log(LogLevel::Error, &format!("writing {} := {value} failed: {e}", s.point));
            }
        }
        if let Some(topic) = &self.settings.topic {
            let message = format!("{{\"occupied\": {occupied}, \"time\": {now}}}");
            if let Err(e) = gw.publish(topic, message.as_bytes(), 1, true) {
                gw.log(LogLevel::Error, &format!("publishing on {topic} failed: {e}"));
            }
        }
        let state = if occupied { "occupied" } else { "unoccupied" };
        gw.log(LogLevel::Info, &format!("{state}: {} setpoints written", self.settings.setpoints.len()));
    }
}

impl App for Schedule {
    fn start(settings: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
        let settings: Settings = basic_toml::from_str(settings).map_err(|e| format!("settings: {e}"))?;
        if !(-14 * 60..=14 * 60).contains(&settings.utc_offset_min) {
            return Err("settings: utc_offset_min must be within ±840".into());
        }
        let mut week: [Vec<Period>; 7] = Default::default();
        for (day, periods) in &settings.week {
            let i = DAYS.iter().position(|d| d == day).ok_or_else(|| format!("settings: week.{day} is not a day"))?;
            week[i] = periods
                .iter()
                .map(|p| period(p).map_err(|e| format!("settings: week.{day}: {e}")))
                .collect::<Result<_, _>>()?;
        }
        let holidays = settings
            .holidays
            .iter()
            .map(|d| date(d).map_err(|e| format!("settings: holidays: {e}")))
            .collect::<Result<_, _>>()?;
        if let Some(s) = settings.setpoints.iter().find(|s| !(1..=16).contains(&s.priority)) {
            return Err(format!("settings: setpoint {}: priority must be 1..=16", s.point));
        }
        if !(1..=3600).contains(&settings.check_every_s) {
            return Err("settings: check_every_s must be 1..=3600".into());
        }
        let every = settings.check_every_s * 1000;
        let mut app = Schedule { settings, week, holidays, occupied: None };
        app.evaluate(gw);
        gw.set_timer(TICK, every, Some(every));
        Ok(app)
    }

    fn info(&self) -> AppInfo {
        let days = self.week.iter().filter(|d| !d.is_empty()).count();
        AppInfo {
            name: "schedule".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!(
                "occupied {days} days a week, {} holidays; {} setpoints; now {}",
                self.holidays.len(),
                self.settings.setpoints.len(),
                match self.occupied {
                    Some(true) => "occupied",
                    Some(false) => "unoccupied",
                    None => "unknown",
                }
            ),
        }
    }

    fn on_timer(&mut self, gw: &mut dyn Gateway, id: u32) {
        if id == TICK {
            self.evaluate(gw);
        }
    }
}

trellis_app_sdk::register_app!(Schedule);

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_app_sdk::testing::FakeGateway;

    const SETTINGS: &str = r#"
        utc_offset_min = 60
        holidays = ["2026-12-25"]
        topic = "building/occupancy"
        [week]
        monday = ["07:00-19:00"]
        friday = ["07:00-12:00", "13:00-17:00"]
        [[setpoint]]
        point = "1001/analog-value,1"
        occupied = 21.0
        unoccupied = 17.0
    "#;

    /// UTC milliseconds of a local (UTC+1) time.
    fn local(y: i64, m: u32, d: u32, hh: u64, mm: u64) -> u64 {
        (days_from_civil(y, m, d) as u64 * 1440 + hh * 60 + mm - 60) * 60_000
    }

    #[test]
    fn the_week_in_local_time_and_the_holidays() {
        let mut gw = FakeGateway::new();
        gw.now_ms = local(2026, 11, 30, 6, 59); // a Monday
        let app = Schedule::start(SETTINGS, &mut gw).unwrap();
        assert!(!app.occupied_at(local(2026, 11, 30, 6, 59)));
        assert!(app.occupied_at(local(2026, 11, 30, 7, 0)));
        assert!(app.occupied_at(local(2026, 11, 30, 18, 59)) && !app.occupied_at(local(2026, 11, 30, 19, 0)));
        assert!(!app.occupied_at(local(2026, 12, 1, 10, 0)), "Tuesday is not in the week");
        assert!(app.occupied_at(local(2026, 12, 4, 11, 0)) && !app.occupied_at(local(2026, 12, 4, 12, 30)));
        assert!(!app.occupied_at(local(2026, 12, 25, 10, 0)), "a holiday (a Friday)");
    }

    #[test]
    fn setpoints_are_written_at_start_and_at_each_transition_at_priority_16() {
        let mut gw = FakeGateway::new();
        gw.now_ms = local(2026, 11, 30, 6, 58);
        let mut app = Schedule::start(SETTINGS, &mut gw).unwrap();
        let av1 = Point::parse("1001/analog-value,1");
        assert_eq!(gw.writes, [(av1.clone(), Value::Real(17.0), Some(16))]);
        assert_eq!(gw.timers.get(&TICK), Some(&(60_000, Some(60_000))));
        gw.now_ms += 60_000;
        app.on_timer(&mut gw, TICK);
        assert_eq!(gw.writes.len(), 1, "no transition, no write");
        gw.now_ms += 60_000;
        app.on_timer(&mut gw, TICK);
        assert_eq!(gw.writes[1], (av1, Value::Real(21.0), Some(16)));
        let sent = gw.published_on("building/occupancy");
        assert!(sent[0].contains("\"occupied\": false") && sent[1].contains("\"occupied\": true"), "{sent:?}");
    }

    #[test]
    fn bad_settings_are_named() {
        let mut gw = FakeGateway::new();
        let mut err = |s: &str| Schedule::start(s, &mut gw).err().unwrap();
        assert!(err("[week]\nmonday = [\"19:00-07:00\"]").contains("end must come after"));
        assert!(err("[week]\nmondy = [\"07:00-19:00\"]").contains("not a day"));
        assert!(err("holidays = [\"2026-13-01\"]").contains("not a date"));
        assert!(err("[[setpoint]]\npoint = \"p\"\noccupied = 1\nunoccupied = 0\npriority = 0").contains("1..=16"));
    }
}
