//! CreateObject and DeleteObject (Clauses 15.3, 15.4) in the store.
//!
//! A model lets clients create objects of a type by giving a template
//! ([`Store::allow_creation`]): a created object is the template's object
//! (commandable or not, its units, states, texts, intrinsic reporting)
//! under a new identifier and name. The host asks only for the types the
//! operator allows on the device (`create_objects`) and only when the
//! plugin's manifest asks for `create_objects`.
//!
//! | request | answer |
//! |---|---|
//! | a type without a template | object / dynamic-creation-not-supported |
//! | an identifier the device has | object / object-identifier-already-exists |
//! | an instance out of range | object / dynamic-creation-not-supported (no such object can exist) |
//! | only a type | the lowest free instance from 1, named `TYPE-INSTANCE` |
//! | an initial value refused | that value's error and position (from 1); nothing is created |
//! | delete an object a client created | done: gone from Object_List with its state |
//! | delete any other object | object / object-deletion-not-permitted |
//! | delete an object the device does not have | object / unknown-object |
//!
//! Initial values are applied in order, each as a write from the network
//! (through the model's write hook, so its vetoes hold), except what only
//! creation may set: Units of an analog object, State_Text of a
//! multi-state one (which sets Number_Of_States), Active_Text and
//! Inactive_Text of a binary one. Object_Identifier and Object_Type may be
//! given as what they are.
//!
//! Created objects are part of the exported state, so they survive a
//! restart and a hot swap to a version that still has the template.
//!
//! Must never: give an identifier that exists, leave half an object behind
//! when an initial value is refused, or delete an object the model made.

use super::object::{Class, PresentValue};
use super::{ObjectSpec, Store, StoreError};
use crate::model::Write;
use bacnet::services::BacnetError;
use bacnet::{
    Element, EngineeringUnits, ErrorClass, ErrorCode, ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value,
};

const fn object_error(code: ErrorCode) -> BacnetError {
    BacnetError { class: ErrorClass::OBJECT, code }
}

const fn property_error(code: ErrorCode) -> BacnetError {
    BacnetError { class: ErrorClass::PROPERTY, code }
}

impl Store {
    /// Let BACnet clients create objects like `template` (its instance and
    /// name are replaced by the new object's): one template per type, the
    /// last one given wins. The template is checked as [`Store::add`]
    /// checks an object.
    pub fn allow_creation(&mut self, template: ObjectSpec) -> Result<(), StoreError> {
        // Checked by building it into an empty store.
        let mut probe = Store::new();
        let mut check = template.clone();
        check.instance = 1;
        check.name = "template".into();
        probe.add(check)?;
        self.templates.insert(template.object_type, template);
        Ok(())
    }

    /// The types clients may create.
    pub fn creatable(&self) -> impl Iterator<Item = ObjectType> + '_ {
        self.templates.keys().copied()
    }

    /// True for an object a client created (and may delete).
    pub fn is_created(&self, id: ObjectIdentifier) -> bool {
        self.created.contains(&id)
    }

    /// Execute a CreateObject: a new object of `object_type` (at `instance`,
    /// or the lowest free one from 1) with `initial` applied in order by
    /// `write` (a write from the network: the model's hook), all or
    /// nothing. The new identifier, or the error with the refused initial
    /// value's position (from 1; 0 for the creation itself).
    pub fn create(
        &mut self,
        object_type: ObjectType,
        instance: Option<u32>,
        initial: &[Write],
        mut write: impl FnMut(&mut Store, &Write) -> Result<(), BacnetError>,
    ) -> Result<ObjectIdentifier, (BacnetError, u32)> {
        let refused = |code| (object_error(code), 0);
        let Some(template) = self.templates.get(&object_type) else {
            return Err(refused(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED));
        };
        let id = match instance {
            Some(i) if i >= ObjectIdentifier::MAX_INSTANCE => {
                return Err(refused(ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED));
            }
            Some(i) => ObjectIdentifier { object_type, instance: i },
            None => (1..ObjectIdentifier::MAX_INSTANCE)
                .map(|instance| ObjectIdentifier { object_type, instance })
                .find(|id| !self.contains(*id))
                .ok_or((BacnetError { class: ErrorClass::RESOURCES, code: ErrorCode::NO_SPACE_FOR_OBJECT }, 0))?,
        };
        if self.contains(id) {
            return Err(refused(ErrorCode::OBJECT_IDENTIFIER_ALREADY_EXISTS));
        }
        let mut spec = template.clone();
        spec.instance = id.instance;
        spec.name = self.free_name(id);
        self.add(spec).map_err(|_| (BacnetError { class: ErrorClass::RESOURCES, code: ErrorCode::OTHER }, 0))?;
        self.created.insert(id);
        for (i, w) in initial.iter().enumerate() {
            let w = Write { target: crate::PropertyRef { object: id, ..w.target }, ..w.clone() };
            let applied = match self.initialize(&w) {
                Some(r) => r,
                None => write(self, &w),
            };
            if let Err(e) = applied {
                self.remove(id);
                return Err((e, i as u32 + 1));
            }
        }
        Ok(id)
    }

    /// Execute a DeleteObject: only an object a client created goes.
    pub fn delete(&mut self, id: ObjectIdentifier) -> Result<(), BacnetError> {
        if !self.contains(id) {
            return Err(object_error(ErrorCode::UNKNOWN_OBJECT));
        }
        if !self.created.contains(&id) {
            return Err(object_error(ErrorCode::OBJECT_DELETION_NOT_PERMITTED));
        }
        self.remove(id);
        Ok(())
    }

    /// Re-create an object a client had created, from the exported state
    /// (a restart, a hot swap): false when this version has no template
    /// for its type or the identifier or name is taken.
    pub(crate) fn recreate(&mut self, id: ObjectIdentifier, name: String) -> bool {
        let Some(template) = self.templates.get(&id.object_type) else { return false };
        if self.contains(id) {
            return false;
        }
        let mut spec = template.clone();
        spec.instance = id.instance;
        spec.name = name;
        if self.add(spec).is_err() {
            return false;
        }
        self.created.insert(id);
        true
    }

    /// The created objects and their names, for the exported state.
    pub(crate) fn created_objects(&self) -> impl Iterator<Item = (ObjectIdentifier, &str)> + '_ {
        self.created.iter().filter_map(|id| Some((*id, self.name(*id)?)))
    }

    /// `TYPE-INSTANCE`, or with a suffix when another object has that name.
    fn free_name(&self, id: ObjectIdentifier) -> String {
        let base = format!("{}-{}", id.object_type, id.instance);
        (1..)
            .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
            .find(|name| self.find(name).is_none())
            .unwrap_or(base)
    }

    /// A property only creation sets (`None` for the others, which are
    /// written as from the network); also how an import restores them.
    pub(crate) fn initialize(&mut self, w: &Write) -> Option<Result<(), BacnetError>> {
        let id = w.target.object;
        let p = w.target.property;
        if w.target.array_index.is_some() && matches!(p, P::OBJECT_IDENTIFIER | P::OBJECT_TYPE | P::UNITS) {
            return Some(Err(property_error(ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)));
        }
        let denied = || Some(Err(property_error(ErrorCode::WRITE_ACCESS_DENIED)));
        let wrong_type = || Some(Err(property_error(ErrorCode::INVALID_DATA_TYPE)));
        match p {
            P::OBJECT_IDENTIFIER => {
                return match w.value.as_primitive() {
                    Some(Value::ObjectIdentifier(given)) if *given == id => Some(Ok(())),
                    Some(Value::ObjectIdentifier(_)) => denied(),
                    _ => wrong_type(),
                };
            }
            P::OBJECT_TYPE => {
                return match w.value.as_primitive() {
                    Some(Value::Enumerated(t)) if *t == id.object_type.0 => Some(Ok(())),
                    Some(Value::Enumerated(_)) => denied(),
                    _ => wrong_type(),
                };
            }
            _ => {}
        }
        let o = self.objects.get_mut(&id)?;
        match (p, &mut o.class) {
            (P::UNITS, Class::Analog { units, .. }) => match w.value.as_primitive() {
                Some(Value::Enumerated(u)) => {
                    *units = EngineeringUnits(*u);
                    Some(Ok(()))
                }
                _ => wrong_type(),
            },
            (P::ACTIVE_TEXT | P::INACTIVE_TEXT, Class::Binary { active_text, inactive_text, .. }) => {
                if w.target.array_index.is_some() {
                    return Some(Err(property_error(ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)));
                }
                let Some(text) = w.value.as_primitive().and_then(text_of) else { return wrong_type() };
                *(if p == P::ACTIVE_TEXT { active_text } else { inactive_text }) = text;
                Some(Ok(()))
            }
            (P::STATE_TEXT, Class::MultiState { states }) => {
                if w.target.array_index.is_some() {
                    // Elements are the template's; the whole array sets the states.
                    return None;
                }
                let texts: Option<Vec<String>> = w
                    .value
                    .0
                    .iter()
                    .map(|e| match e {
                        Element::Application(v) => text_of(v),
                        _ => None,
                    })
                    .collect();
                let Some(texts) = texts else { return wrong_type() };
                if texts.is_empty() {
                    return Some(Err(property_error(ErrorCode::VALUE_OUT_OF_RANGE)));
                }
                // A value beyond the new Number_Of_States would be left dangling.
                let highest = |v: PresentValue| match v {
                    PresentValue::MultiState(n) => n as usize,
                    _ => 1,
                };
                let used = std::iter::once(o.value)
                    .chain(o.command.iter().flat_map(|c| c.slots.iter().flatten().copied()))
                    .chain(o.command.iter().map(|c| c.relinquish_default))
                    .map(highest)
                    .max()
                    .unwrap_or(1);
                if used > texts.len() {
                    return Some(Err(property_error(ErrorCode::VALUE_OUT_OF_RANGE)));
                }
                *states = texts;
                Some(Ok(()))
            }
            _ => None,
        }
    }
}

/// The properties only creation sets, which the exported state keeps for
/// a created object.
pub(crate) const CREATION_ONLY: [P; 4] = [P::UNITS, P::STATE_TEXT, P::ACTIVE_TEXT, P::INACTIVE_TEXT];

/// A created object's creation-only properties, as the state keeps them.
pub(crate) fn creation_props(o: &super::Object) -> Vec<(P, bacnet::AnyValue)> {
    match &o.class {
        Class::Analog { units, .. } => vec![(P::UNITS, Value::Enumerated(units.0).into())],
        Class::Binary { active_text, inactive_text, .. } => vec![
            (P::ACTIVE_TEXT, crate::value::text(active_text).into()),
            (P::INACTIVE_TEXT, crate::value::text(inactive_text).into()),
        ],
        Class::MultiState { states } => {
            vec![(P::STATE_TEXT, crate::value::array(states.iter().map(|s| crate::value::text(s))))]
        }
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::CharacterString(s) => crate::value::decode_text(s),
        _ => None,
    }
}
