//! The object-model boundary as the server sees it: what a device's model
//! answers, in the core's types.
//!
//! The server talks to an [`ObjectModel`]; the plugin runtime implements it
//! over a WASM component (`trellis_plugin::PluginModel`), and tests
//! implement it in plain Rust. What crosses the boundary besides calls is
//! here too: a model's change notifications ([`ChangeFeed`], which drive
//! COV) and the wall clock it reads ([`HostClock`], which time
//! synchronization sets).
//!
//! Must never: know wasmtime or WIT (the one module that converts WIT types
//! to these is `trellis_plugin`'s `convert`), the server or the client, or
//! do I/O.

mod changes;
mod clock;
pub mod latency;
mod record;

pub use changes::{AckRequired, ChangeFeed, Changes, EventTransition, MAX_PENDING_EVENTS};
pub use clock::HostClock;

use bacnet::services::{BacnetError, CreateObjectError, ObjectSpecifier};
use bacnet::{AnyValue, ObjectIdentifier, PropertyIdentifier};
use std::future::Future;

/// One property of one object (`array_index` 0 is the array's length).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertyTarget {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property (8 = all, 105 = required, 80 = optional expand on read).
    pub property: PropertyIdentifier,
    /// An array element, or the whole property.
    pub array_index: Option<u32>,
}

/// The answer for one property.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyRead {
    /// Which property was answered.
    pub target: PropertyTarget,
    /// Its value or its BACnet Error.
    pub outcome: Result<AnyValue, BacnetError>,
}

/// One write.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyWrite {
    /// Which property.
    pub target: PropertyTarget,
    /// The value (`Null` relinquishes a commandable property).
    pub value: AnyValue,
    /// Command priority 1..=16.
    pub priority: Option<u8>,
}

/// An object the model serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Its identifier.
    pub id: ObjectIdentifier,
    /// Its Object_Name.
    pub name: String,
}

/// What a plugin says it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Free text.
    pub description: String,
}

/// Wall-clock time handed to models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    /// Milliseconds since the Unix epoch, UTC.
    pub unix_ms: u64,
    /// Minutes to add to UTC for local time.
    pub utc_offset_minutes: i16,
}

impl DateTime {
    /// The local BACnet Date and Time of this instant.
    pub fn local_date_time(&self) -> (bacnet::Date, bacnet::Time) {
        bacnet::civil::local_date_time(i64::try_from(self.unix_ms).unwrap_or(i64::MAX), self.utc_offset_minutes)
    }
}

/// Why a model could not answer at all (as opposed to answering with a
/// BACnet Error for one property).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The plugin trapped; it is being restarted.
    #[error("plugin {plugin} trapped: {detail}")]
    Trapped {
        /// Plugin name.
        plugin: String,
        /// The trap, as wasmtime described it.
        detail: String,
    },
    /// The call ran past its epoch deadline (a runaway loop); restarting.
    #[error("plugin {plugin} exceeded its time limit of {limit_ms} ms")]
    DeadlineExceeded {
        /// Plugin name.
        plugin: String,
        /// The limit.
        limit_ms: u64,
    },
    /// The plugin tried to grow past its memory limit; restarting.
    #[error("plugin {plugin} exceeded its memory limit of {limit_bytes} bytes")]
    MemoryExceeded {
        /// Plugin name.
        plugin: String,
        /// The limit.
        limit_bytes: usize,
    },
    /// The plugin failed too often and is disabled.
    #[error("plugin {plugin} is disabled after repeated failures")]
    Disabled {
        /// Plugin name.
        plugin: String,
    },
    /// A restart (ReinitializeDevice) could not start a new instance; the
    /// old one keeps serving.
    #[error("plugin {plugin} could not be restarted: {detail}")]
    RestartFailed {
        /// Plugin name.
        plugin: String,
        /// Why.
        detail: String,
    },
    /// The plugin has no instance to answer with and no failure to name
    /// (answered like admission control: Abort out-of-resources).
    #[error("plugin {plugin} is busy")]
    Busy {
        /// Plugin name.
        plugin: String,
    },
    /// The plugin failed and waits out a back-off before it restarts; calls
    /// meanwhile fail at once, with the failure that started it.
    #[error("{cause}; waiting to restart")]
    Restarting {
        /// Plugin name.
        plugin: String,
        /// The failure it is restarting from.
        cause: Box<ModelError>,
    },
    /// The plugin returned something that breaks the interface contract
    /// (e.g. a value that does not decode).
    #[error("plugin {plugin} broke the interface contract: {detail}")]
    Contract {
        /// Plugin name.
        plugin: String,
        /// What was wrong.
        detail: String,
    },
}

/// How a model answered [`ObjectModel::read_encoded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodedRead {
    /// The value's encoding was appended to the buffer.
    Value,
    /// The property's BACnet Error; nothing was appended.
    Error(BacnetError),
    /// This model has no encoded reads: the server uses [`ObjectModel::read`].
    Unsupported,
}

/// A device's object model, as the server calls it. Implementations must
/// answer every read target with its own list of results (ALL, REQUIRED and
/// OPTIONAL expanded), and every write with one result per write; the
/// server treats a wrong count as a broken contract.
pub trait ObjectModel: Send + Sync + 'static {
    /// Every object served, Device object included.
    fn objects(&self) -> impl Future<Output = Result<Vec<ObjectInfo>, ModelError>> + Send;
    /// Read properties (one ReadProperty, or a whole ReadPropertyMultiple):
    /// one inner list per target, in order; ALL/REQUIRED/OPTIONAL expand
    /// within their inner list, every other target has exactly one result.
    fn read(
        &self,
        targets: &[PropertyTarget],
    ) -> impl Future<Output = Result<Vec<Vec<PropertyRead>>, ModelError>> + Send;
    /// Read one property (never ALL, REQUIRED or OPTIONAL) and append its
    /// value's application-tagged encoding to `out`, checked well-formed:
    /// the ReadProperty fast path, which builds no [`AnyValue`]. A model
    /// without it answers [`EncodedRead::Unsupported`] (the default) and the
    /// server falls back to [`ObjectModel::read`]. On an error `out` is
    /// left as it was.
    fn read_encoded(
        &self,
        target: PropertyTarget,
        out: &mut Vec<u8>,
    ) -> impl Future<Output = Result<EncodedRead, ModelError>> + Send {
        let _ = (target, out);
        async { Ok(EncodedRead::Unsupported) }
    }
    /// Apply writes in order.
    fn write(
        &self,
        writes: Vec<PropertyWrite>,
    ) -> impl Future<Output = Result<Vec<Result<(), BacnetError>>, ModelError>> + Send;
    /// The model's change notifications (values changed, objects created or
    /// deleted), which drive COV reporting; `None` for a model whose values
    /// change only by writes through the server.
    fn changes(&self) -> Option<ChangeFeed> {
        None
    }
    /// The clock the model reads, which time synchronization sets; `None`
    /// for a model that reads no clock.
    fn clock(&self) -> Option<HostClock> {
        None
    }
    /// Take an AcknowledgeAlarm the server checked (time stamp, state) for
    /// one transition of `object` (0 to-offnormal, 1 to-fault, 2
    /// to-normal): the model sets its Acked_Transitions bit. A model
    /// without intrinsic reporting answers object/no-alarm-configured (the
    /// default).
    fn acknowledge(
        &self,
        object: ObjectIdentifier,
        transition: u8,
    ) -> impl Future<Output = Result<Result<(), BacnetError>, ModelError>> + Send {
        let _ = (object, transition);
        async {
            Ok(Err(BacnetError {
                class: bacnet::enums::ErrorClass::OBJECT,
                code: bacnet::enums::ErrorCode::NO_ALARM_CONFIGURED,
            }))
        }
    }
    /// Execute a CreateObject the server let through (the operator allows
    /// the type on this device): create an object of `object`'s type (at
    /// its instance when an identifier is given, else at a free one) with
    /// the `initial` values applied in order, all or nothing; the new
    /// object's identifier, or the CreateObject-Error (the refused initial
    /// value's position from 1, or 0). A model that creates nothing
    /// answers object/dynamic-creation-not-supported (the default).
    fn create_object(
        &self,
        object: ObjectSpecifier,
        initial: Vec<PropertyWrite>,
    ) -> impl Future<Output = Result<Result<ObjectIdentifier, CreateObjectError>, ModelError>> + Send {
        let _ = (object, initial);
        async {
            Ok(Err(CreateObjectError {
                error: BacnetError {
                    class: bacnet::enums::ErrorClass::OBJECT,
                    code: bacnet::enums::ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED,
                },
                first_failed: 0,
            }))
        }
    }
    /// Execute a DeleteObject the server let through. A model that deletes
    /// nothing answers object/object-deletion-not-permitted (the default;
    /// the server answers object/unknown-object for an object the model
    /// does not have).
    fn delete_object(
        &self,
        object: ObjectIdentifier,
    ) -> impl Future<Output = Result<Result<(), BacnetError>, ModelError>> + Send {
        let _ = object;
        async {
            Ok(Err(BacnetError {
                class: bacnet::enums::ErrorClass::OBJECT,
                code: bacnet::enums::ErrorCode::OBJECT_DELETION_NOT_PERMITTED,
            }))
        }
    }
    /// Restart for ReinitializeDevice: a warm start keeps the model's state,
    /// a cold start begins from scratch.
    fn reinitialize(&self, cold: bool) -> impl Future<Output = Result<(), ModelError>> + Send {
        let _ = cold;
        async { Ok(()) }
    }
}
