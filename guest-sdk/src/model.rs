//! The trait a plugin implements, and what it is handed.

use crate::{DateTime, Store};
use bacnet::services::BacnetError;
use bacnet::{AnyValue, ObjectIdentifier, PropertyIdentifier};
use std::path::PathBuf;

/// A device's object model: what a plugin implements.
///
/// The [`Store`] does the standard's work (property semantics, priority
/// arrays, errors, change reporting, state for hot swap); a model builds its
/// objects in [`new`](Self::new), moves values in [`tick`](Self::tick), and
/// overrides the read and write hooks only where its device is special.
///
/// Calling rules (the interface's): one call at a time, never re-entrant,
/// under a deadline and a memory limit. Never loop waiting for something —
/// nothing changes while the model runs.
pub trait ObjectModel: Sized + 'static {
    /// Name, version and description. Must not fail and must not depend on
    /// state: the host calls it before anything else.
    fn describe() -> PluginInfo;

    /// Build the model: read configuration from `config`, set up the Device
    /// object and create objects in `store`. An error is logged and makes
    /// the call trap: the host restarts the plugin and, if it keeps failing,
    /// disables it.
    fn new(store: &mut Store, config: &Config) -> Result<Self, String>;

    /// Time-driven behaviour, called at the host's tick interval (1 s by
    /// default). Update inputs with [`Store::update`] and command outputs
    /// with [`Store::command`]; changes are reported to the host after the
    /// call.
    fn tick(&mut self, store: &mut Store, now: DateTime) {
        let _ = (store, now);
    }

    /// Answer one property. ALL, REQUIRED and OPTIONAL have already been
    /// expanded by the store; unknown objects never reach this hook. The
    /// default asks the store. Override to serve a proprietary property or
    /// compute a value on demand. Must not change anything.
    fn read_property(&self, store: &Store, target: &PropertyRef) -> Result<AnyValue, BacnetError> {
        store.read(target)
    }

    /// Apply one write. The default lets the store apply the standard's
    /// rules; override to veto a write, accept a proprietary property, or
    /// react to a command (call `store.write(write)` for the standard part).
    fn write_property(&mut self, store: &mut Store, write: &Write) -> Result<(), BacnetError> {
        store.write(write)
    }

    /// Model state beyond the store (the store's own state — present values,
    /// priority arrays, Out_Of_Service, written names — is exported already).
    /// Must be deterministic and must not change anything.
    fn export_state(&self, store: &Store) -> Vec<u8> {
        let _ = store;
        Vec::new()
    }

    /// Take over what [`export_state`](Self::export_state) of this or an
    /// earlier version returned (empty when it exported nothing). The store
    /// has already been restored. An error keeps the old instance in service.
    fn import_state(&mut self, store: &mut Store, state: &[u8]) -> Result<(), String> {
        let _ = (store, state);
        Ok(())
    }
}

/// What a plugin is, for logs, the admin API and capability checks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Free text for operators.
    pub description: String,
}

impl PluginInfo {
    /// Name, version and description. `PluginInfo::new(env!("CARGO_PKG_NAME"),
    /// env!("CARGO_PKG_VERSION"), "…")` is the usual call.
    pub fn new(name: &str, version: &str, description: &str) -> Self {
        PluginInfo { name: name.into(), version: version.into(), description: description.into() }
    }
}

/// One property of one object; `array_index` `None` means the whole
/// property, `Some(0)` the array's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertyRef {
    /// The object.
    pub object: ObjectIdentifier,
    /// The property (ALL, REQUIRED and OPTIONAL expand on read).
    pub property: PropertyIdentifier,
    /// An array element, or the whole property.
    pub array_index: Option<u32>,
}

impl PropertyRef {
    /// The whole property.
    pub const fn new(object: ObjectIdentifier, property: PropertyIdentifier) -> Self {
        PropertyRef { object, property, array_index: None }
    }

    /// One element of an array property (0 is its length).
    pub const fn element(object: ObjectIdentifier, property: PropertyIdentifier, index: u32) -> Self {
        PropertyRef { object, property, array_index: Some(index) }
    }
}

/// One write of a WriteProperty or WritePropertyMultiple.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// Which property.
    pub target: PropertyRef,
    /// The value (Null relinquishes a commandable property).
    pub value: AnyValue,
    /// Command priority; the store applies 16 when it is absent.
    pub priority: Option<u8>,
}

impl Write {
    /// A write of the whole property without a priority.
    pub fn new(object: ObjectIdentifier, property: PropertyIdentifier, value: impl Into<AnyValue>) -> Self {
        Write { target: PropertyRef::new(object, property), value: value.into(), priority: None }
    }

    /// The same write at command `priority`.
    pub fn at_priority(mut self, priority: u8) -> Self {
        self.priority = Some(priority);
        self
    }
}

/// The plugin's configuration files: its data directory, which the host
/// preopens at `/data` (and nothing else of the file system).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    dir: Option<PathBuf>,
}

impl Config {
    /// Where the host preopens the plugin's data directory, as the guest sees it.
    pub const DATA_DIR: &'static str = "/data";

    /// The plugin's data directory ([`DATA_DIR`](Self::DATA_DIR)); this is
    /// what [`ObjectModel::new`] is given inside a component.
    pub fn data_dir() -> Self {
        Config { dir: Some(PathBuf::from(Self::DATA_DIR)) }
    }

    /// Configuration files from another directory (native tests).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Config { dir: Some(dir.into()) }
    }

    /// No configuration files at all: every model falls back to its defaults.
    pub fn none() -> Self {
        Config { dir: None }
    }

    /// The text of `name` in the data directory: `Ok(None)` when there is no
    /// such file (or no data directory), an error when it exists but cannot
    /// be read.
    pub fn read_to_string(&self, name: &str) -> Result<Option<String>, String> {
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        if !dir.is_dir() {
            return Ok(None);
        }
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }
}
