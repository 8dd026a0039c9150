//! The interface's exports over an [`Instance`]: the one module (with
//! `value::wit`) that knows the generated types.
//!
//! `register_plugin!` keeps a [`Slot`] in a thread-local (a component
//! instance is single-threaded and never re-entered) and forwards every
//! export to it. The model is built on first use; the host is told about
//! changes once at the end of every call that may make them.

use crate::__private::wit as t;
use crate::errors;
use crate::host::{self, LogLevel};
use crate::instance::{Instance, ReadResult};
use crate::model::{Config, ObjectModel, PropertyRef, Write};
use crate::value::wit::{
    datetime_from_wit, error_to_wit, object_id_from_wit, object_id_to_wit, value_from_wit, value_to_wit,
};
use bacnet::PropertyIdentifier;
use bacnet::read_records;
use std::cell::RefCell;

/// `describe` needs no instance.
pub fn describe<M: ObjectModel>() -> t::PluginInfo {
    let info = M::describe();
    t::PluginInfo { name: info.name, version: info.version, description: info.description }
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

fn read_result_to_wit((target, result): &ReadResult) -> t::ReadResult {
    t::ReadResult {
        target: property_ref_to_wit(target),
        outcome: match result {
            Ok(v) => Ok(value_to_wit(v)),
            Err(e) => Err(error_to_wit(e)),
        },
    }
}

/// The export calls over WIT types; each is one host → guest crossing.
struct Exports<M>(Instance<M>);

impl<M: ObjectModel> Exports<M> {
    fn report(&mut self) {
        let n = self.0.take_notifications();
        if !n.values_changed.is_empty() {
            host::values_changed(&n.values_changed);
        }
        if n.objects_changed {
            host::objects_changed();
        }
        if !n.events.is_empty() {
            let required = host::event_transitions(&n.events);
            self.0.store_mut().set_ack_required(&n.events, &required);
        }
    }

    fn acknowledge(&mut self, object: t::ObjectId, transition: u8) -> Result<(), t::BacnetError> {
        let result = self.0.acknowledge(object_id_from_wit(&object), transition);
        self.report();
        result.map_err(|e| error_to_wit(&e))
    }

    /// A value that does not decode is property/invalid-data-type at its
    /// position, like a refused one.
    fn create_object(
        &mut self,
        object_type: u16,
        instance: Option<u32>,
        initial: Vec<t::WriteRequest>,
    ) -> Result<t::ObjectId, (t::BacnetError, u32)> {
        let mut writes = Vec::with_capacity(initial.len());
        for (i, w) in initial.iter().enumerate() {
            match value_from_wit(&w.value) {
                Ok(value) => {
                    writes.push(Write { target: property_ref_from_wit(&w.target), value, priority: w.priority })
                }
                Err(_) => return Err((error_to_wit(&errors::INVALID_DATA_TYPE), i as u32 + 1)),
            }
        }
        let result = self.0.create_object(bacnet::ObjectType(object_type.into()), instance, &writes);
        self.report();
        result.map(|id| object_id_to_wit(&id)).map_err(|(e, at)| (error_to_wit(&e), at))
    }

    fn delete_object(&mut self, object: t::ObjectId) -> Result<(), t::BacnetError> {
        let result = self.0.delete_object(object_id_from_wit(&object));
        self.report();
        result.map_err(|e| error_to_wit(&e))
    }

    fn objects(&self) -> Vec<t::ObjectInfo> {
        self.0
            .store()
            .object_names()
            .map(|(id, name)| t::ObjectInfo { id: object_id_to_wit(&id), name: name.to_owned() })
            .collect()
    }

    fn read_properties(&self, refs: Vec<t::PropertyRef>) -> Vec<Vec<t::ReadResult>> {
        let refs: Vec<PropertyRef> = refs.iter().map(property_ref_from_wit).collect();
        self.0.read(&refs).iter().map(|results| results.iter().map(read_result_to_wit).collect()).collect()
    }

    /// The same answer as `read_properties`, as records (see
    /// `bacnet::read_records`): the value encoded once, here, with the core.
    fn read_encoded(&self, refs: Vec<t::PropertyRef>) -> Vec<u8> {
        let refs: Vec<PropertyRef> = refs.iter().map(property_ref_from_wit).collect();
        let mut out = Vec::with_capacity(32 * refs.len());
        for results in self.0.read(&refs) {
            read_records::write_count(&mut out, results.len() as u32);
            for (target, result) in &results {
                read_records::write_result(
                    &mut out,
                    target.object,
                    target.property,
                    target.array_index,
                    result.as_ref(),
                );
            }
        }
        out
    }

    /// A value that does not decode is property/invalid-data-type and, like
    /// any failure, stops the rest of the list (see [`Instance::write`]).
    fn write_properties(&mut self, writes: Vec<t::WriteRequest>) -> Vec<Result<(), t::BacnetError>> {
        let mut failed = false;
        let out = writes
            .iter()
            .map(|w| {
                if failed {
                    return Err(error_to_wit(&errors::NOT_ATTEMPTED));
                }
                let result = match value_from_wit(&w.value) {
                    Ok(value) => {
                        let write = Write { target: property_ref_from_wit(&w.target), value, priority: w.priority };
                        self.0.write(core::slice::from_ref(&write)).remove(0)
                    }
                    Err(_) => Err(errors::INVALID_DATA_TYPE),
                };
                failed = result.is_err();
                result.map_err(|e| error_to_wit(&e))
            })
            .collect();
        self.report();
        out
    }

    fn tick(&mut self, now: t::Datetime) {
        self.0.tick(datetime_from_wit(now));
        self.report();
    }

    fn import_state(&mut self, bytes: &[u8]) -> Result<(), String> {
        let result = self.0.import_state(bytes);
        self.report();
        result
    }
}

/// The per-instance slot `register_plugin!` keeps in a thread-local.
pub struct Slot<M>(RefCell<Option<Exports<M>>>);

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
    fn with<R>(&self, f: impl FnOnce(&mut Exports<M>) -> R) -> R {
        let mut slot = self.0.borrow_mut();
        let exports = slot.get_or_insert_with(|| match Instance::start(&Config::data_dir()) {
            Ok(mut instance) => {
                instance.store_mut().set_clock(host::now);
                Exports(instance)
            }
            Err(e) => {
                let message = format!("{}: cannot start: {e}", M::describe().name);
                host::log(LogLevel::Error, &message);
                panic!("{message}");
            }
        });
        f(exports)
    }

    /// `objects`.
    pub fn objects(&self) -> Vec<t::ObjectInfo> {
        self.with(|e| e.objects())
    }

    /// `read-properties`.
    pub fn read_properties(&self, refs: Vec<t::PropertyRef>) -> Vec<Vec<t::ReadResult>> {
        self.with(|e| e.read_properties(refs))
    }

    /// `read-encoded`.
    pub fn read_encoded(&self, refs: Vec<t::PropertyRef>) -> Vec<u8> {
        self.with(|e| e.read_encoded(refs))
    }

    /// `write-properties`.
    pub fn write_properties(&self, writes: Vec<t::WriteRequest>) -> Vec<Result<(), t::BacnetError>> {
        self.with(|e| e.write_properties(writes))
    }

    /// `acknowledge`.
    pub fn acknowledge(&self, object: t::ObjectId, transition: u8) -> Result<(), t::BacnetError> {
        self.with(|e| e.acknowledge(object, transition))
    }

    /// `create-object`.
    pub fn create_object(
        &self,
        object_type: u16,
        instance: Option<u32>,
        initial: Vec<t::WriteRequest>,
    ) -> Result<t::ObjectId, (t::BacnetError, u32)> {
        self.with(|e| e.create_object(object_type, instance, initial))
    }

    /// `delete-object`.
    pub fn delete_object(&self, object: t::ObjectId) -> Result<(), t::BacnetError> {
        self.with(|e| e.delete_object(object))
    }

    /// `tick`.
    pub fn tick(&self, now: t::Datetime) {
        self.with(|e| e.tick(now))
    }

    /// `export-state`.
    pub fn export_state(&self) -> Vec<u8> {
        self.with(|e| e.0.export_state())
    }

    /// `import-state`.
    pub fn import_state(&self, state: Vec<u8>) -> Result<(), String> {
        self.with(|e| e.import_state(&state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::__private::bindings::trellis::bacnet::types as t;
    use crate::{ObjectSpec, PluginInfo, Store};
    use bacnet::{ObjectIdentifier, ObjectType};

    struct Two;

    impl ObjectModel for Two {
        fn describe() -> PluginInfo {
            PluginInfo::new("two", "0.0.1", "two analog values")
        }
        fn new(store: &mut Store, _: &Config) -> Result<Self, String> {
            store.add(ObjectSpec::analog_value(1, "One").relinquish_default(1.0))?;
            store.add(ObjectSpec::analog_value(2, "Two"))?;
            Ok(Two)
        }
    }

    fn exports() -> Exports<Two> {
        Exports(Instance::start(&Config::none()).unwrap())
    }

    fn av(instance: u32) -> t::ObjectId {
        t::ObjectId { object_type: ObjectType::ANALOG_VALUE.0 as u16, instance }
    }

    fn pref(object: t::ObjectId, property: u32, array_index: Option<u32>) -> t::PropertyRef {
        t::PropertyRef { object, property, array_index }
    }

    fn write(object: t::ObjectId, value: t::Value, priority: Option<u8>) -> t::WriteRequest {
        t::WriteRequest { target: pref(object, 85, None), value, priority }
    }

    #[test]
    fn describe_and_objects_list_the_device_first() {
        assert_eq!(describe::<Two>().name, "two");
        let objects = exports().objects();
        assert_eq!(objects.len(), 3);
        assert_eq!(objects[0].id.object_type, 8);
        assert_eq!(objects[0].id.instance, 389_001);
        assert_eq!(objects[1].name, "One");
    }

    #[test]
    fn a_read_answers_one_list_per_ref_with_all_expanded() {
        let e = exports();
        let answer = e.read_properties(vec![
            pref(av(1), 85, None),
            pref(av(1), 8, None),
            pref(av(9), 8, None),
            pref(av(1), 87, Some(0)),
        ]);
        assert_eq!(answer.len(), 4);
        assert!(matches!(answer[0][..], [t::ReadResult { outcome: Ok(t::Value::Real(x)), .. }] if x == 1.0));
        assert!(answer[1].len() > 10 && answer[1][0].target.property == 75);
        assert!(matches!(
            answer[2][..],
            [t::ReadResult { outcome: Err(t::BacnetError { error_class: 1, error_code: 31 }), .. }]
        ));
        assert!(matches!(answer[3][..], [t::ReadResult { outcome: Ok(t::Value::Unsigned(16)), .. }]));
        let whole = e.read_properties(vec![pref(av(1), 87, None)]);
        assert!(matches!(&whole[0][0].outcome, Ok(t::Value::Encoded(b)) if b == &[0u8; 16]), "16 Nulls");
    }

    #[test]
    fn read_encoded_answers_the_same_results_as_records() {
        let e = exports();
        let refs = vec![pref(av(1), 85, None), pref(av(1), 8, None), pref(av(9), 85, None)];
        let lists = e.read_properties(refs.clone());
        let records = e.read_encoded(refs);
        let mut r = read_records::ReadRecords::new(&records);
        for list in lists {
            assert_eq!(r.count().unwrap() as usize, list.len());
            for expected in list {
                let got = r.result().unwrap();
                assert_eq!(got.property.0, expected.target.property);
                assert_eq!(got.object.instance, expected.target.object.instance);
                match (got.outcome, expected.outcome) {
                    (Ok(octets), Ok(v)) => {
                        assert_eq!(bacnet::AnyValue::from_bytes(octets).unwrap(), value_from_wit(&v).unwrap())
                    }
                    (Err(a), Err(b)) => assert_eq!(error_to_wit(&a), b),
                    (a, b) => panic!("{a:?} against {b:?}"),
                }
            }
        }
        r.finish().unwrap();
    }

    #[test]
    fn a_write_list_stops_at_the_first_failure() {
        let mut e = exports();
        let results = e.write_properties(vec![
            write(av(1), t::Value::Real(5.0), Some(8)),
            write(av(1), t::Value::Unsigned(5), Some(8)),
            write(av(2), t::Value::Real(7.0), None),
        ]);
        assert_eq!(results[0], Ok(()));
        assert_eq!(results[1], Err(t::BacnetError { error_class: 2, error_code: 9 }), "invalid-data-type");
        assert_eq!(results[2], Err(t::BacnetError { error_class: 5, error_code: 0 }), "not attempted");
        let one = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
        let two = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 2 };
        assert_eq!(e.0.store().analog(one), Some(5.0));
        assert_eq!(e.0.store().analog(two), Some(0.0), "the write after the failure was not applied");
    }

    #[test]
    fn an_encoded_value_that_does_not_decode_is_invalid_data_type_and_stops_the_list() {
        let mut e = exports();
        let results = e.write_properties(vec![
            write(av(2), t::Value::Encoded(vec![0x44, 0x41]), None),
            write(av(2), t::Value::Real(7.0), None),
        ]);
        assert_eq!(results[0], Err(t::BacnetError { error_class: 2, error_code: 9 }));
        assert_eq!(results[1], Err(t::BacnetError { error_class: 5, error_code: 0 }));
    }

    #[test]
    fn an_encoded_primitive_is_the_primitive() {
        let mut e = exports();
        // Application-tagged REAL 2.5.
        let results = e.write_properties(vec![write(av(2), t::Value::Encoded(vec![0x44, 0x40, 0x20, 0, 0]), None)]);
        assert_eq!(results, [Ok(())]);
    }

    #[test]
    fn state_round_trips_through_the_exports() {
        let mut a = exports();
        a.write_properties(vec![write(av(1), t::Value::Real(9.0), Some(3))]);
        let mut b = exports();
        b.import_state(&a.0.export_state()).unwrap();
        let answer = b.read_properties(vec![pref(av(1), 85, None)]);
        assert!(matches!(answer[0][0].outcome, Ok(t::Value::Real(x)) if x == 9.0));
        assert!(b.import_state(b"bad").is_err());
    }
}
