//! A gateway for an application's unit tests: points hold values the test
//! sets, and everything the application does is recorded for the test to
//! check. No WebAssembly involved.
//!
//! ```
//! use trellis_app_sdk::testing::FakeGateway;
//! use trellis_app_sdk::{Gateway, Point, Value};
//!
//! let mut gw = FakeGateway::new();
//! gw.set(Point::named("zone-temp"), Value::Real(21.5));
//! assert_eq!(gw.read(&Point::named("zone-temp")), Ok(Value::Real(21.5)));
//! gw.write(&Point::named("fan"), Value::Enumerated(1), Some(8)).unwrap();
//! assert_eq!(gw.writes, [(Point::named("fan"), Value::Enumerated(1), Some(8))]);
//! ```

use crate::{Gateway, LogLevel, ObjectIdentifier, Point, PointError, Value};
use std::collections::{BTreeMap, HashMap};

/// A recording gateway.
#[derive(Debug, Default)]
pub struct FakeGateway {
    /// The clock, milliseconds since the epoch; tests move it.
    pub now_ms: u64,
    /// Point values reads answer (a point not here is unknown).
    pub values: HashMap<Point, Value>,
    /// Each device's objects.
    pub devices: BTreeMap<u32, Vec<(ObjectIdentifier, String)>>,
    /// Writes made: point, value, priority. Each also sets the value.
    pub writes: Vec<(Point, Value, Option<u8>)>,
    /// Points that refuse writes, with the error they answer.
    pub refuse_writes: HashMap<Point, PointError>,
    /// Points watched now.
    pub watched: Vec<Point>,
    /// Timers set now: id → (after, every).
    pub timers: BTreeMap<u32, (u64, Option<u64>)>,
    /// Messages published: topic, payload, QoS, retain.
    pub published: Vec<(String, Vec<u8>, u8, bool)>,
    /// Topic filters subscribed.
    pub subscribed: Vec<String>,
    /// The persisted state.
    pub state: BTreeMap<String, Vec<u8>>,
    /// Log lines.
    pub log: Vec<(LogLevel, String)>,
}

impl FakeGateway {
    /// An empty gateway at time 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Give a point a value.
    pub fn set(&mut self, point: Point, value: Value) {
        self.values.insert(point, value);
    }

    /// The payloads published on `topic`, as text.
    pub fn published_on(&self, topic: &str) -> Vec<String> {
        self.published
            .iter()
            .filter(|(t, ..)| t == topic)
            .map(|(_, p, ..)| String::from_utf8_lossy(p).into_owned())
            .collect()
    }
}

impl Gateway for FakeGateway {
    fn log(&mut self, level: LogLevel, message: &str) {
        self.log.push((level, message.to_string()));
    }

    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }

    fn objects(&mut self, device: u32) -> Result<Vec<(ObjectIdentifier, String)>, PointError> {
        self.devices.get(&device).cloned().ok_or_else(|| PointError::UnknownPoint(format!("device {device}")))
    }

    fn read(&mut self, point: &Point) -> Result<Value, PointError> {
        self.values.get(point).cloned().ok_or_else(|| PointError::UnknownPoint(point.to_string()))
    }

    fn write(&mut self, point: &Point, value: Value, priority: Option<u8>) -> Result<(), PointError> {
        if let Some(e) = self.refuse_writes.get(point) {
            return Err(e.clone());
        }
        self.writes.push((point.clone(), value.clone(), priority));
        self.values.insert(point.clone(), value);
        Ok(())
    }

    fn watch(&mut self, point: &Point) -> Result<(), PointError> {
        if !self.watched.contains(point) {
            self.watched.push(point.clone());
        }
        Ok(())
    }

    fn unwatch(&mut self, point: &Point) {
        self.watched.retain(|p| p != point);
    }

    fn set_timer(&mut self, id: u32, after_ms: u64, every_ms: Option<u64>) {
        self.timers.insert(id, (after_ms, every_ms));
    }

    fn cancel_timer(&mut self, id: u32) {
        self.timers.remove(&id);
    }

    fn publish(&mut self, topic: &str, payload: &[u8], qos: u8, retain: bool) -> Result<(), String> {
        self.published.push((topic.to_string(), payload.to_vec(), qos, retain));
        Ok(())
    }

    fn subscribe(&mut self, filter: &str) -> Result<(), String> {
        self.subscribed.push(filter.to_string());
        Ok(())
    }

    fn state_get(&mut self, key: &str) -> Option<Vec<u8>> {
        self.state.get(key).cloned()
    }

    fn state_set(&mut self, key: &str, value: Option<&[u8]>) -> Result<(), String> {
        match value {
            Some(v) => self.state.insert(key.to_string(), v.to_vec()),
            None => self.state.remove(key),
        };
        Ok(())
    }
}
