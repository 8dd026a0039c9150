//! The Trellis guest SDK: what an object-model plugin is written against.
//!
//! A plugin is a WebAssembly component (`wasm32-wasip2`) exporting
//! `trellis:bacnet/object-model@0.4.0`. The host owns the network, the Device
//! object's protocol properties and every timer; the plugin owns its objects.
//! This crate lets the plugin be only what is special about its device:
//!
//! - [`Store`]: the objects, with ASHRAE 135's property semantics already in
//!   place — Device, Analog/Binary/Multi-state Input/Output/Value, Trend Log
//!   (polled, with its Log_Buffer for ReadRange), priority
//!   arrays and Relinquish_Default for commandable objects, Status_Flags,
//!   Out_Of_Service, Reliability, Units, COV_Increment, Property_List, the
//!   array rules, ALL/REQUIRED/OPTIONAL expansion, and every Error the
//!   standard names for a refused read or write.
//! - [`ObjectModel`]: the trait a plugin implements (build objects from its
//!   configuration, move values in [`ObjectModel::tick`], optionally
//!   intercept reads and writes), and [`register_plugin!`], which exports it.
//! - [`value`]: typed helpers over the `bacnet` core's [`AnyValue`] and
//!   [`Value`], and the conversion to and from the interface's flat `value`.
//! - [`host`]: the host's imports (log, clock).
//! - [`Instance`]: a model with its store, driven the way the host drives a
//!   component. Everything runs natively too (host imports fall back to
//!   stderr and the system clock), so a model's logic is unit-tested with
//!   `cargo test` and no WebAssembly.
//!
//! The guide with a complete example is this crate's README.

extern crate self as trellis_guest_sdk;

pub mod host;
mod instance;
mod model;
mod runtime;
mod state;
pub mod store;
mod time;
pub mod value;

pub use bacnet;
pub use bacnet::services::BacnetError;
pub use bacnet::{AnyValue, ObjectIdentifier, ObjectType, PropertyIdentifier, Value};
pub use instance::{Instance, Notifications, ReadResult};
pub use model::{Config, ObjectModel, PluginInfo, PropertyRef, Write};
pub use store::{AlarmSpec, Device, EventReport, ObjectSpec, PresentValue, Store, StoreError, TrendLogSpec};
pub use time::DateTime;

/// The BACnet Errors the object store answers with, by the standard's names.
pub mod errors {
    use bacnet::services::BacnetError;
    use bacnet::{ErrorClass, ErrorCode};

    const fn e(class: ErrorClass, code: ErrorCode) -> BacnetError {
        BacnetError { class, code }
    }

    /// object / unknown-object.
    pub const UNKNOWN_OBJECT: BacnetError = e(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT);
    /// property / unknown-property.
    pub const UNKNOWN_PROPERTY: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY);
    /// property / invalid-array-index.
    pub const INVALID_ARRAY_INDEX: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX);
    /// property / property-is-not-an-array.
    pub const PROPERTY_IS_NOT_AN_ARRAY: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY);
    /// property / write-access-denied.
    pub const WRITE_ACCESS_DENIED: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED);
    /// property / invalid-data-type.
    pub const INVALID_DATA_TYPE: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE);
    /// property / value-out-of-range.
    pub const VALUE_OUT_OF_RANGE: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE);
    /// object / log-buffer-full (enabling a full Trend Log that stops when full).
    pub const LOG_BUFFER_FULL: BacnetError = e(ErrorClass::OBJECT, ErrorCode::LOG_BUFFER_FULL);
    /// property / duplicate-name (Object_Name must be unique in the device).
    pub const DUPLICATE_NAME: BacnetError = e(ErrorClass::PROPERTY, ErrorCode::DUPLICATE_NAME);
    /// property / character-set-not-supported.
    pub const CHARACTER_SET_NOT_SUPPORTED: BacnetError =
        e(ErrorClass::PROPERTY, ErrorCode::CHARACTER_SET_NOT_SUPPORTED);
    /// services / other: the answer for the writes of a WritePropertyMultiple
    /// after the first failure, which are not attempted.
    pub const NOT_ATTEMPTED: BacnetError = e(ErrorClass::SERVICES, ErrorCode::OTHER);
    /// object / no-alarm-configured: an acknowledgment for an object without intrinsic reporting.
    pub const NO_ALARM_CONFIGURED: BacnetError = e(ErrorClass::OBJECT, ErrorCode::NO_ALARM_CONFIGURED);
    /// services / invalid-event-state.
    pub const INVALID_EVENT_STATE: BacnetError = e(ErrorClass::SERVICES, ErrorCode::INVALID_EVENT_STATE);
}

/// Export an [`ObjectModel`] as this component's `object-model`.
///
/// Use it once, at the crate root of a `cdylib` built for `wasm32-wasip2`:
///
/// ```
/// use trellis_guest_sdk::{Config, ObjectModel, ObjectSpec, PluginInfo, Store};
///
/// struct Boiler;
///
/// impl ObjectModel for Boiler {
///     fn describe() -> PluginInfo {
///         PluginInfo::new("boiler", "1.0.0", "One boiler")
///     }
///     fn new(store: &mut Store, _: &Config) -> Result<Self, String> {
///         store.add(ObjectSpec::binary_output(1, "Boiler Enable"))?;
///         Ok(Boiler)
///     }
/// }
///
/// trellis_guest_sdk::register_plugin!(Boiler);
/// # fn main() {}
/// ```
///
/// The model is built lazily, by the first call after `describe`, with
/// [`Config::data_dir`]; if [`ObjectModel::new`] fails the error is logged
/// and the call traps, so the host restarts (and eventually disables) the
/// plugin rather than serve a half-built device.
#[macro_export]
macro_rules! register_plugin {
    ($model:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            ::std::thread_local! {
                static RUNTIME: $crate::__private::Slot<$model> = const { $crate::__private::Slot::new() };
            }

            struct TrellisObjectModelExport;

            impl $crate::__private::Guest for TrellisObjectModelExport {
                fn describe() -> $crate::__private::wit::PluginInfo {
                    $crate::__private::describe::<$model>()
                }
                fn objects() -> ::std::vec::Vec<$crate::__private::wit::ObjectInfo> {
                    RUNTIME.with(|slot| slot.objects())
                }
                fn read_properties(
                    refs: ::std::vec::Vec<$crate::__private::wit::PropertyRef>,
                ) -> ::std::vec::Vec<::std::vec::Vec<$crate::__private::wit::ReadResult>> {
                    RUNTIME.with(|slot| slot.read_properties(refs))
                }
                fn read_encoded(refs: ::std::vec::Vec<$crate::__private::wit::PropertyRef>) -> ::std::vec::Vec<u8> {
                    RUNTIME.with(|slot| slot.read_encoded(refs))
                }
                fn write_properties(
                    writes: ::std::vec::Vec<$crate::__private::wit::WriteRequest>,
                ) -> ::std::vec::Vec<::core::result::Result<(), $crate::__private::wit::BacnetError>> {
                    RUNTIME.with(|slot| slot.write_properties(writes))
                }
                fn acknowledge(
                    object: $crate::__private::wit::ObjectId,
                    transition: u8,
                ) -> ::core::result::Result<(), $crate::__private::wit::BacnetError> {
                    RUNTIME.with(|slot| slot.acknowledge(object, transition))
                }
                fn tick(now: $crate::__private::wit::Datetime) {
                    RUNTIME.with(|slot| slot.tick(now))
                }
                fn create_object(
                    object_type: u16,
                    instance: ::core::option::Option<u32>,
                    initial: ::std::vec::Vec<$crate::__private::wit::WriteRequest>,
                ) -> ::core::result::Result<
                    $crate::__private::wit::ObjectId,
                    ($crate::__private::wit::BacnetError, u32),
                > {
                    RUNTIME.with(|slot| slot.create_object(object_type, instance, initial))
                }
                fn delete_object(
                    object: $crate::__private::wit::ObjectId,
                ) -> ::core::result::Result<(), $crate::__private::wit::BacnetError> {
                    RUNTIME.with(|slot| slot.delete_object(object))
                }
                fn export_state() -> ::std::vec::Vec<u8> {
                    RUNTIME.with(|slot| slot.export_state())
                }
                fn import_state(state: ::std::vec::Vec<u8>) -> ::core::result::Result<(), ::std::string::String> {
                    RUNTIME.with(|slot| slot.import_state(state))
                }
            }

            $crate::__private::bindings::export!(
                TrellisObjectModelExport with_types_in $crate::__private::bindings
            );
        };
    };
}

/// The README's example compiles (and links) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// What `register_plugin!` expands to needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    /// The generated bindings of `trellis:bacnet/object-model-plugin@0.4.0`.
    /// Only `runtime` and `value::wit` (and `register_plugin!`) use them.
    #[allow(unsafe_code, missing_docs, dead_code, clippy::all)]
    pub mod bindings {
        wit_bindgen::generate!({
            path: "../wit/bacnet",
            world: "object-model-plugin",
            pub_export_macro: true,
            export_macro_name: "export",
            default_bindings_module: "::trellis_guest_sdk::__private::bindings",
            runtime_path: "::trellis_guest_sdk::__private::wit_bindgen::rt",
            additional_derives: [PartialEq],
        });
    }

    pub use crate::runtime::{Slot, describe};
    pub use bindings::exports::trellis::bacnet::object_model::Guest;
    pub use wit_bindgen;

    /// The interface's types, as `register_plugin!` names them.
    pub mod wit {
        pub use super::bindings::trellis::bacnet::types::{
            BacnetError, Datetime, ObjectId, ObjectInfo, PluginInfo, PropertyRef, ReadResult, WriteRequest,
        };
    }
}
