//! The Trellis application SDK: what an application-logic plugin is
//! written against.
//!
//! An application is a WebAssembly component (`wasm32-wasip2`) exporting
//! `trellis:app/app@0.1.0`. It runs next to the gateway's points: it reads
//! and writes them, is told of their changes, keeps timers, publishes and
//! subscribes through the gateway's MQTT connection, and keeps a small
//! persisted state — each point and topic only as far as the operator
//! granted it.
//!
//! A plugin implements [`App`] and exports it with [`register_app!`]. Every
//! call gets the [`Gateway`]: on `wasm32` the host's imports, in a unit test
//! a [`testing::FakeGateway`] that records what the application did, so an
//! application's logic is tested with `cargo test` and no WebAssembly. The
//! README is the author's guide.

extern crate self as trellis_app_sdk;

#[doc(hidden)]
pub mod runtime;
pub mod testing;
mod types;
#[cfg(target_arch = "wasm32")]
mod wasm;

pub use bacnet;
pub use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier};
pub use types::{AppInfo, LogLevel, Point, PointError, Value, json_string};

/// What the gateway offers an application during a call.
pub trait Gateway {
    /// Write a line to the gateway's log, tagged with the plugin's name.
    fn log(&mut self, level: LogLevel, message: &str);
    /// Milliseconds since the Unix epoch, the gateway's clock.
    fn now_ms(&mut self) -> u64;
    /// A device's objects and their names.
    fn objects(&mut self, device: u32) -> Result<Vec<(ObjectIdentifier, String)>, PointError>;
    /// Read a point now.
    fn read(&mut self, point: &Point) -> Result<Value, PointError>;
    /// Write a point at a priority (1..=16; `None`: the property's
    /// default). [`Value::Null`] relinquishes.
    fn write(&mut self, point: &Point, value: Value, priority: Option<u8>) -> Result<(), PointError>;
    /// Have [`App::on_change`] called with the point's value now and at
    /// each change.
    fn watch(&mut self, point: &Point) -> Result<(), PointError>;
    /// Stop watching a point.
    fn unwatch(&mut self, point: &Point);
    /// Call [`App::on_timer`] with `id` after `after_ms`, then every
    /// `every_ms` if given; setting an id again replaces its timer.
    fn set_timer(&mut self, id: u32, after_ms: u64, every_ms: Option<u64>);
    /// Cancel a timer.
    fn cancel_timer(&mut self, id: u32);
    /// Publish through the gateway's broker connection (spooled).
    fn publish(&mut self, topic: &str, payload: &[u8], qos: u8, retain: bool) -> Result<(), String>;
    /// Have [`App::on_message`] called for topics matching `filter`.
    fn subscribe(&mut self, filter: &str) -> Result<(), String>;
    /// A value of the persisted state.
    fn state_get(&mut self, key: &str) -> Option<Vec<u8>>;
    /// Set (`None`: remove) a value of the persisted state.
    fn state_set(&mut self, key: &str, value: Option<&[u8]>) -> Result<(), String>;
}

/// An application.
///
/// The host calls [`App::start`] once per instance, then the event calls
/// one at a time, and the state calls around restarts and hot swaps. Each
/// call runs under a deadline (point reads and writes included): an
/// application that loops is stopped there and restarted.
pub trait App: Sized + 'static {
    /// Build the application from the operator's settings (TOML text,
    /// maybe empty) and make its watches, timers and subscriptions. An
    /// error names what is wrong; the host refuses to load.
    fn start(settings: &str, gateway: &mut dyn Gateway) -> Result<Self, String>;

    /// What this application is and does.
    fn info(&self) -> AppInfo;

    /// A watched point's value (the point as it was named to `watch`).
    fn on_change(&mut self, _gateway: &mut dyn Gateway, _point: &Point, _value: &Value) {}

    /// A timer fired.
    fn on_timer(&mut self, _gateway: &mut dyn Gateway, _id: u32) {}

    /// A message arrived on a subscribed topic.
    fn on_message(&mut self, _gateway: &mut dyn Gateway, _topic: &str, _payload: &[u8]) {}

    /// The in-memory state worth handing to a successor.
    fn export_state(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Take over an exported state (maybe an earlier version's); an error
    /// refuses it.
    fn import_state(&mut self, _state: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Export an [`App`] as this component's `app`.
///
/// Use it once, at the crate root of a `cdylib` built for `wasm32-wasip2`:
///
/// ```
/// use trellis_app_sdk::{App, AppInfo, Gateway, Point, Value};
///
/// struct Echo;
///
/// impl App for Echo {
///     fn start(_: &str, gw: &mut dyn Gateway) -> Result<Self, String> {
///         gw.watch(&Point::named("zone-temp")).map_err(|e| e.to_string())?;
///         Ok(Echo)
///     }
///     fn info(&self) -> AppInfo {
///         AppInfo { name: "echo".into(), version: "1.0.0".into(), summary: "logs zone-temp".into() }
///     }
///     fn on_change(&mut self, gw: &mut dyn Gateway, point: &Point, value: &Value) {
///         gw.log(trellis_app_sdk::LogLevel::Info, &format!("{point} = {value:?}"));
///     }
/// }
///
/// trellis_app_sdk::register_app!(Echo);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! register_app {
    ($app:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            ::std::thread_local! {
                static RUNTIME: $crate::runtime::Slot<$app> = const { $crate::runtime::Slot::new() };
            }

            struct TrellisAppExport;

            impl $crate::__private::Guest for TrellisAppExport {
                fn start(
                    settings: ::std::string::String,
                ) -> ::core::result::Result<$crate::__private::wit::AppInfo, ::std::string::String> {
                    RUNTIME.with(|slot| slot.start(&settings))
                }
                fn on_change(point: $crate::__private::wit::Point, value: $crate::__private::wit::Value) {
                    RUNTIME.with(|slot| slot.on_change(point, value))
                }
                fn on_timer(id: u32) {
                    RUNTIME.with(|slot| slot.on_timer(id))
                }
                fn on_message(topic: ::std::string::String, payload: ::std::vec::Vec<u8>) {
                    RUNTIME.with(|slot| slot.on_message(&topic, &payload))
                }
                fn export_state() -> ::std::vec::Vec<u8> {
                    RUNTIME.with(|slot| slot.export_state())
                }
                fn import_state(state: ::std::vec::Vec<u8>) -> ::core::result::Result<(), ::std::string::String> {
                    RUNTIME.with(|slot| slot.import_state(&state))
                }
            }

    $crate::__private::bindings::export!(TrellisAppExport with_types_in $crate::__private::bindings);
        };
    };
}

/// The README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// What `register_app!` expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    /// The generated bindings of `trellis:app/application@0.1.0`.
    #[allow(unsafe_code, missing_docs, dead_code, clippy::all)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "../wit/app",
            world: "application",
            pub_export_macro: true,
            export_macro_name: "export",
            default_bindings_module: "::trellis_app_sdk::__private::bindings",
            runtime_path: "::trellis_app_sdk::__private::wit_bindgen::rt",
        });
    }

    pub use bindings::exports::trellis::app::app::Guest;
    pub use wit_bindgen;

    /// The interface's types, as `register_app!` names them.
    pub mod wit {
        pub use super::bindings::trellis::app::types::{
            AppInfo, ObjectEntry, ObjectId, Point, PointAddress, PointError, Value,
        };
    }
}
