//! A model and its store, driven the way the host drives a plugin.
//!
//! Inside a component `register_plugin!` runs an [`Instance`] behind the
//! interface's exports; natively, a test drives one directly with the SDK's
//! types — the same calls, the same answers, no WebAssembly needed.

use crate::DateTime;
use crate::errors;
use crate::model::{Config, ObjectModel, PropertyRef, Write};
use crate::state;
use crate::store::Store;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, ObjectIdentifier};

/// The answer for one property of a read.
pub type ReadResult = (PropertyRef, Result<AnyValue, BacnetError>);

/// What the host is told after a call: the `values-changed` batch and
/// whether `objects-changed` fires.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notifications {
    /// Objects whose Present_Value or Status_Flags changed (COV rules applied).
    pub values_changed: Vec<ObjectIdentifier>,
    /// Objects were created, deleted or renamed.
    pub objects_changed: bool,
    /// Event transitions to notify (intrinsic reporting), in order.
    pub events: Vec<crate::EventReport>,
}

/// A model with its store.
pub struct Instance<M> {
    store: Store,
    model: M,
}

impl<M: ObjectModel> Instance<M> {
    /// Build the model against `config` (what the first call after
    /// `describe` does in a component). Building is not reported as a change.
    pub fn start(config: &Config) -> Result<Self, String> {
        let mut store = Store::new();
        let model = M::new(&mut store, config)?;
        store.take_objects_changed();
        // Objects with intrinsic reporting are evaluated at the end of the
        // first call, when the host's clock is there to stamp a transition.
        store.defer_detection();
        store.take_changes();
        Ok(Instance { store, model })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, to change it as the model would.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The model, to change it directly.
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// `read-properties`: one list per ref, in order; ALL, REQUIRED and
    /// OPTIONAL expand to one result per property, anything else is one
    /// result (an unknown object's error included). Each property goes
    /// through [`ObjectModel::read_property`].
    pub fn read(&self, refs: &[PropertyRef]) -> Vec<Vec<ReadResult>> {
        refs.iter()
            .map(|r| match self.store.expand(r) {
                Ok(expanded) => expanded.into_iter().map(|p| (p, self.model.read_property(&self.store, &p))).collect(),
                Err(e) => vec![(*r, Err(e))],
            })
            .collect()
    }

    /// `write-properties`: in order through [`ObjectModel::write_property`].
    /// After the first failure the rest are not attempted
    /// (WritePropertyMultiple stops there, Clause 15.10.1.3.2) and answer
    /// [`errors::NOT_ATTEMPTED`].
    pub fn write(&mut self, writes: &[Write]) -> Vec<Result<(), BacnetError>> {
        let mut failed = false;
        writes
            .iter()
            .map(|w| {
                if failed {
                    return Err(errors::NOT_ATTEMPTED);
                }
                let result = self.model.write_property(&mut self.store, w);
                failed = result.is_err();
                result
            })
            .collect()
    }

    /// `tick`: the model's [`ObjectModel::tick`], then the Trend Log
    /// records due at `now`, read through [`ObjectModel::read_property`].
    pub fn tick(&mut self, now: DateTime) {
        self.store.set_tick_time(now);
        self.model.tick(&mut self.store, now);
        let model = &self.model;
        self.store.log_trends_with(now, |store, r| model.read_property(store, r));
    }

    /// `export-state`: the store's state and the model's own bytes.
    pub fn export_state(&self) -> Vec<u8> {
        state::export(&self.store, &self.model.export_state(&self.store))
    }

    /// `import-state`: decode everything first, then restore what fits and
    /// hand the model its bytes. The values taken over are not reported as
    /// changes (the host saw them from the exporting instance); renamed
    /// objects are.
    pub fn import_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let decoded = state::decode(bytes)?;
        state::apply(&mut self.store, &decoded);
        self.model.import_state(&mut self.store, &decoded.model)?;
        self.store.settle();
        Ok(())
    }

    /// `acknowledge`: an AcknowledgeAlarm the host checked, for one
    /// transition (0 to-offnormal, 1 to-fault, 2 to-normal).
    pub fn acknowledge(&mut self, object: ObjectIdentifier, transition: u8) -> Result<(), BacnetError> {
        self.store.acknowledge(object, transition)
    }

    /// `create-object`: a CreateObject the host let through (see
    /// [`Store::create`]); each initial value goes through
    /// [`ObjectModel::write_property`] unless only creation sets it.
    pub fn create_object(
        &mut self,
        object_type: bacnet::ObjectType,
        instance: Option<u32>,
        initial: &[Write],
    ) -> Result<ObjectIdentifier, (BacnetError, u32)> {
        let model = &mut self.model;
        self.store.create(object_type, instance, initial, |store, w| model.write_property(store, w))
    }

    /// `delete-object`: a DeleteObject the host let through (see
    /// [`Store::delete`]).
    pub fn delete_object(&mut self, object: ObjectIdentifier) -> Result<(), BacnetError> {
        self.store.delete(object)
    }

    /// What to tell the host after a call: event-state detection runs
    /// first (a transition changes Status_Flags).
    pub fn take_notifications(&mut self) -> Notifications {
        let now = self.store.now();
        self.store.detect_events(now);
        Notifications {
            values_changed: self.store.take_changes(),
            objects_changed: self.store.take_objects_changed(),
            events: self.store.take_events(),
        }
    }
}
