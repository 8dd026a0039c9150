//! The glue between the interface's exports and an [`ObjectModel`]: the one
//! module (with `value::wit`) that knows the generated types.
//!
//! `register_plugin!` keeps a [`Slot`] in a thread-local (a component
//! instance is single-threaded and never re-entered) and forwards every
//! export to it. The model is built on first use; changes are reported to
//! the host once at the end of every call that may make them.

use crate::__private::wit as t;
use crate::errors;
use crate::host::{self, LogLevel};
use crate::model::{Config, ObjectModel, PropertyRef, Write};
use crate::state;
use crate::store::Store;
use crate::value::wit::{
    datetime_from_wit, error_to_wit, object_id_from_wit, object_id_to_wit, value_from_wit, value_to_wit,
};
use bacnet::PropertyIdentifier;
use std::cell::RefCell;

/// `describe` needs no instance.
pub fn describe<M: ObjectModel>() -> t::PluginInfo {
    let info = M::describe();
    t::PluginInfo { name: info.name, version: info.version, description: info.description }
}

/// A model and its store, built on first use.
pub struct Runtime<M> {
    store: Store,
    model: M,
}

impl<M: ObjectModel> Runtime<M> {
    /// Build the model against `config` with the host's clock.
    pub fn start(config: &Config) -> Result<Self, String> {
        let mut store = Store::new();
        store.set_clock(host::now);
        let model = M::new(&mut store, config)?;
        // Creation is not a change the host needs to hear about: it calls
        // `objects` after instantiation anyway.
        store.take_objects_changed();
        store.take_changes();
        Ok(Runtime { store, model })
    }

    fn report(&mut self) {
        let changed = self.store.take_changes();
        if !changed.is_empty() {
            host::values_changed(&changed);
        }
        if self.store.take_objects_changed() {
            host::objects_changed();
        }
    }

    fn objects(&self) -> Vec<t::ObjectInfo> {
        self.store
            .object_names()
            .map(|(id, name)| t::ObjectInfo { id: object_id_to_wit(&id), name: name.to_owned() })
            .collect()
    }

    /// One inner list per requested ref, in request order: ALL, REQUIRED and
    /// OPTIONAL expand to one result per property, anything else is one
    /// result (an unknown object's error included).
    fn read_properties(&self, refs: Vec<t::PropertyRef>) -> Vec<Vec<t::ReadResult>> {
        refs.into_iter()
            .map(|r| {
                let target = property_ref_from_wit(&r);
                match self.store.expand(&target) {
                    Ok(expanded) => {
                        expanded.iter().map(|p| read_result(p, self.model.read_property(&self.store, p))).collect()
                    }
                    Err(e) => vec![t::ReadResult { target: r, outcome: Err(error_to_wit(&e)) }],
                }
            })
            .collect()
    }

    /// Writes apply in order; after the first failure the rest are not
    /// attempted (WritePropertyMultiple stops there, Clause 15.10.1.3.2) and
    /// answer services/other.
    fn write_properties(&mut self, writes: Vec<t::WriteRequest>) -> Vec<Result<(), t::BacnetError>> {
        let mut out = Vec::with_capacity(writes.len());
        let mut failed = false;
        for w in writes {
            if failed {
                out.push(Err(error_to_wit(&errors::NOT_ATTEMPTED)));
                continue;
            }
            let result = match value_from_wit(&w.value) {
                Ok(value) => {
                    let write = Write { target: property_ref_from_wit(&w.target), value, priority: w.priority };
                    self.model.write_property(&mut self.store, &write)
                }
                Err(_) => Err(errors::INVALID_DATA_TYPE),
            };
            failed = result.is_err();
            out.push(result.map_err(|e| error_to_wit(&e)));
        }
        self.report();
        out
    }

    fn tick(&mut self, now: t::Datetime) {
        let now = datetime_from_wit(now);
        self.store.set_tick_time(now);
        self.model.tick(&mut self.store, now);
        self.report();
    }

    fn export_state(&self) -> Vec<u8> {
        state::export(&self.store, &self.model.export_state(&self.store))
    }

    fn import_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let decoded = state::decode(bytes)?;
        state::apply(&mut self.store, &decoded);
        self.model.import_state(&mut self.store, &decoded.model)?;
        self.store.settle();
        // Names may differ from what the host cached from `objects`.
        if self.store.take_objects_changed() {
            host::objects_changed();
        }
        Ok(())
    }
}

fn property_ref_from_wit(r: &t::PropertyRef) -> PropertyRef {
    PropertyRef {
        object: object_id_from_wit(&r.object),
        property: PropertyIdentifier(r.property),
        array_index: r.array_index,
    }
}

fn property_ref_to_wit(r: &PropertyRef) -> t::PropertyRef {
    t::PropertyRef { object: object_id_to_wit(&r.object), property: r.property.0, array_index: r.array_index }
}

fn read_result(p: &PropertyRef, result: Result<bacnet::AnyValue, bacnet::services::BacnetError>) -> t::ReadResult {
    t::ReadResult {
        target: property_ref_to_wit(p),
        outcome: match result {
            Ok(v) => Ok(value_to_wit(&v)),
            Err(e) => Err(error_to_wit(&e)),
        },
    }
}

/// The per-instance slot `register_plugin!` keeps in a thread-local.
pub struct Slot<M>(RefCell<Option<Runtime<M>>>);

impl<M> Slot<M> {
    /// An empty slot (the model is built on first use).
    pub const fn new() -> Self {
        Slot(RefCell::new(None))
    }
}

impl<M> Default for Slot<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: ObjectModel> Slot<M> {
    fn with<R>(&self, f: impl FnOnce(&mut Runtime<M>) -> R) -> R {
        let mut slot = self.0.borrow_mut();
        let rt = slot.get_or_insert_with(|| match Runtime::start(&Config::data_dir()) {
            Ok(rt) => rt,
            Err(e) => {
                let message = format!("{}: cannot start: {e}", M::describe().name);
                host::log(LogLevel::Error, &message);
                panic!("{message}");
            }
        });
        f(rt)
    }

    /// `objects`.
    pub fn objects(&self) -> Vec<t::ObjectInfo> {
        self.with(|rt| rt.objects())
    }

    /// `read-properties`.
    pub fn read_properties(&self, refs: Vec<t::PropertyRef>) -> Vec<Vec<t::ReadResult>> {
        self.with(|rt| rt.read_properties(refs))
    }

    /// `write-properties`.
    pub fn write_properties(&self, writes: Vec<t::WriteRequest>) -> Vec<Result<(), t::BacnetError>> {
        self.with(|rt| rt.write_properties(writes))
    }

    /// `tick`.
    pub fn tick(&self, now: t::Datetime) {
        self.with(|rt| rt.tick(now))
    }

    /// `export-state`.
    pub fn export_state(&self) -> Vec<u8> {
        self.with(|rt| rt.export_state())
    }

    /// `import-state`.
    pub fn import_state(&self, state: Vec<u8>) -> Result<(), String> {
        self.with(|rt| rt.import_state(&state))
    }
}
