//! The gateway as the host's imports (`trellis:app/host`), on `wasm32`.

use crate::__private::bindings::trellis::app::host;
use crate::__private::bindings::trellis::app::types::LogLevel as WitLevel;
use crate::runtime::{error_from_wit, object_from_wit, point_to_wit, value_from_wit, value_to_wit};
use crate::{Gateway, LogLevel, ObjectIdentifier, Point, PointError, Value};

/// The host's imports.
pub struct WasmGateway;

impl Gateway for WasmGateway {
    fn log(&mut self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Trace => WitLevel::Trace,
            LogLevel::Debug => WitLevel::Debug,
            LogLevel::Info => WitLevel::Info,
            LogLevel::Warn => WitLevel::Warn,
            LogLevel::Error => WitLevel::Error,
        };
        host::log(level, message)
    }

    fn now_ms(&mut self) -> u64 {
        host::now_ms()
    }

    fn objects(&mut self, device: u32) -> Result<Vec<(ObjectIdentifier, String)>, PointError> {
        host::objects(device)
            .map(|list| list.into_iter().map(|e| (object_from_wit(e.id), e.name)).collect())
            .map_err(error_from_wit)
    }

    fn read(&mut self, point: &Point) -> Result<Value, PointError> {
        host::read(&point_to_wit(point)).map(value_from_wit).map_err(error_from_wit)
    }

    fn write(&mut self, point: &Point, value: Value, priority: Option<u8>) -> Result<(), PointError> {
        host::write(&point_to_wit(point), &value_to_wit(value), priority).map_err(error_from_wit)
    }

    fn watch(&mut self, point: &Point) -> Result<(), PointError> {
        host::watch(&point_to_wit(point)).map_err(error_from_wit)
    }

    fn unwatch(&mut self, point: &Point) {
        host::unwatch(&point_to_wit(point))
    }

    fn set_timer(&mut self, id: u32, after_ms: u64, every_ms: Option<u64>) {
        host::set_timer(id, after_ms, every_ms)
    }

    fn cancel_timer(&mut self, id: u32) {
        host::cancel_timer(id)
    }

    fn publish(&mut self, topic: &str, payload: &[u8], qos: u8, retain: bool) -> Result<(), String> {
        host::publish(topic, payload, qos, retain)
    }

    fn subscribe(&mut self, filter: &str) -> Result<(), String> {
        host::subscribe(filter)
    }

    fn state_get(&mut self, key: &str) -> Option<Vec<u8>> {
        host::state_get(key)
    }

    fn state_set(&mut self, key: &str, value: Option<&[u8]>) -> Result<(), String> {
        host::state_set(key, value)
    }
}
