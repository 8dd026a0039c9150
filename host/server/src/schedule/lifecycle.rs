//! CreateObject and DeleteObject (Clauses 15.3, 15.4) for Schedule and
//! Calendar objects, where the operator allows it (`create_objects`): a
//! front end creates one by type (the lowest free instance from 1) or by
//! identifier, with initial values applied in order before the object
//! appears (a refused one names its position, and nothing is created), and
//! deletes the ones it created. Configured objects are the operator's:
//! they cannot be deleted. A deleted schedule's commands are relinquished
//! at the next evaluation.
//!
//! Created objects last until the gateway restarts (as written values do).
//!
//! Must never: create more than [`MAX_CREATED`] objects, give an instance
//! that exists, or leave half an object behind when an initial value is
//! refused.

use super::objects::write_calendar;
use super::runner::ScheduledWrite;
use super::{CalendarConfig, ScheduleConfig, ScheduleObject, Schedules, calendar_id, lock, schedule_id};
use bacnet::codec::UNSPECIFIED;
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::schedule::DateRange;
use bacnet::services::{BacnetError, CreateObjectError, ObjectSpecifier, PropertyValue};
use bacnet::{Date, ObjectIdentifier, Value};
use std::sync::{Arc, Mutex};

/// The object types the host itself creates; a device's other creatable
/// types are its model's.
pub const HOST_CREATABLE: [ObjectType; 2] = [ObjectType::SCHEDULE, ObjectType::CALENDAR];

/// The most objects CreateObject may make on one device.
pub const MAX_CREATED: usize = 64;

fn error(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError { class, code }
}

fn refused(error: BacnetError) -> CreateObjectError {
    CreateObjectError { error, first_failed: 0 }
}

/// A created object before it is in the device.
enum NewObject {
    Schedule(Box<ScheduleObject>),
    Calendar(CalendarConfig),
}

impl NewObject {
    fn blank(id: ObjectIdentifier) -> Self {
        let any = Date { year: UNSPECIFIED, month: UNSPECIFIED, day: UNSPECIFIED, weekday: UNSPECIFIED };
        if id.object_type == ObjectType::SCHEDULE {
            NewObject::Schedule(Box::new(ScheduleObject::new(ScheduleConfig {
                instance: id.instance,
                name: format!("schedule-{}", id.instance),
                description: None,
                effective_period: DateRange { start: any, end: any },
                weekly: vec![Vec::new(); 7],
                exceptions: Vec::new(),
                default: Value::Null,
                references: Vec::new(),
                priority_for_writing: 16,
                writable: true,
            })))
        } else {
            NewObject::Calendar(CalendarConfig {
                instance: id.instance,
                name: format!("calendar-{}", id.instance),
                description: None,
                dates: Vec::new(),
                writable: true,
            })
        }
    }

    fn name_mut(&mut self) -> &mut String {
        match self {
            NewObject::Schedule(s) => &mut s.config.name,
            NewObject::Calendar(c) => &mut c.name,
        }
    }

    /// Apply one initial value.
    fn apply(&mut self, id: ObjectIdentifier, v: &PropertyValue, names: &[String]) -> Result<(), BacnetError> {
        match v.property {
            P::OBJECT_NAME => {
                let Some(Value::CharacterString(name)) = v.value.as_primitive() else {
                    return Err(error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE));
                };
                let name =
                    name.to_text().map_err(|_| error(ErrorClass::PROPERTY, ErrorCode::CHARACTER_SET_NOT_SUPPORTED))?;
                if name.is_empty() || name.len() > 255 {
                    return Err(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE));
                }
                if names.contains(&name) {
                    return Err(error(ErrorClass::PROPERTY, ErrorCode::DUPLICATE_NAME));
                }
                *self.name_mut() = name;
                Ok(())
            }
            // Given again as what they are: nothing to do.
            P::OBJECT_IDENTIFIER if v.value.as_primitive() == Some(&Value::ObjectIdentifier(id)) => Ok(()),
            P::OBJECT_TYPE if v.value.as_primitive() == Some(&Value::Enumerated(id.object_type.0)) => Ok(()),
            p => match self {
                NewObject::Schedule(s) => s.write_property(p, v.array_index, &v.value),
                NewObject::Calendar(c) => write_calendar(c, p, v.array_index, &v.value),
            },
        }
    }
}

impl Schedules {
    /// The object types CreateObject may make here.
    pub fn creatable(&self) -> &[ObjectType] {
        &self.creatable
    }

    /// Execute a CreateObject for a Schedule or a Calendar; the new
    /// object's identifier.
    pub fn create(
        &self,
        object: ObjectSpecifier,
        initial: &[PropertyValue],
    ) -> Result<ObjectIdentifier, CreateObjectError> {
        let object_type = match object {
            ObjectSpecifier::Type(t) => t,
            ObjectSpecifier::Identifier(id) => id.object_type,
        };
        if !self.creatable.contains(&object_type) {
            return Err(refused(error(ErrorClass::OBJECT, ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED)));
        }
        if lock(&self.created).len() >= MAX_CREATED {
            return Err(refused(error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_FOR_OBJECT)));
        }
        // Both lists stay locked (schedules first, as everywhere) from the
        // instance chosen to the object inserted.
        let mut schedules = lock(&self.schedules);
        let mut calendars = lock(&self.calendars);
        let taken: Vec<ObjectIdentifier> = schedules
            .iter()
            .map(|s| schedule_id(lock(s).config.instance))
            .chain(calendars.iter().map(|c| calendar_id(lock(c).instance)))
            .collect();
        let id = match object {
            ObjectSpecifier::Identifier(id) if taken.contains(&id) => {
                return Err(refused(error(ErrorClass::OBJECT, ErrorCode::OBJECT_IDENTIFIER_ALREADY_EXISTS)));
            }
            ObjectSpecifier::Identifier(id) => id,
            ObjectSpecifier::Type(t) => (1..ObjectIdentifier::MAX_INSTANCE)
                .map(|instance| ObjectIdentifier { object_type: t, instance })
                .find(|id| !taken.contains(id))
                .ok_or_else(|| refused(error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_FOR_OBJECT)))?,
        };
        let names: Vec<String> = schedules
            .iter()
            .map(|s| lock(s).config.name.clone())
            .chain(calendars.iter().map(|c| lock(c).name.clone()))
            .collect();
        let mut new = NewObject::blank(id);
        for (i, v) in initial.iter().enumerate() {
            new.apply(id, v, &names).map_err(|error| CreateObjectError { error, first_failed: i as u32 + 1 })?;
        }
        match new {
            NewObject::Schedule(s) => schedules.push(Arc::new(Mutex::new(*s))),
            NewObject::Calendar(c) => calendars.push(Arc::new(Mutex::new(c))),
        }
        drop((schedules, calendars));
        lock(&self.created).insert(id);
        tracing::info!(object = %id, "created by CreateObject");
        self.wake.notify_one();
        Ok(id)
    }

    /// Execute a DeleteObject of a Schedule or Calendar this device serves.
    pub fn delete(&self, o: ObjectIdentifier) -> Result<(), BacnetError> {
        if !self.has(o) {
            return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
        }
        if !lock(&self.created).contains(&o) {
            return Err(error(ErrorClass::OBJECT, ErrorCode::OBJECT_DELETION_NOT_PERMITTED));
        }
        if o.object_type == ObjectType::SCHEDULE {
            let mut schedules = lock(&self.schedules);
            if let Some(at) = schedules.iter().position(|s| lock(s).config.instance == o.instance) {
                let gone = schedules.remove(at);
                let gone = lock(&gone);
                if gone.last_written.is_some() {
                    lock(&self.orphans).extend(gone.config.references.iter().map(|r| ScheduledWrite {
                        schedule: o,
                        reference: *r,
                        value: Value::Null,
                        priority: gone.config.priority_for_writing,
                    }));
                }
            }
        } else {
            lock(&self.calendars).retain(|c| lock(c).instance != o.instance);
        }
        lock(&self.created).remove(&o);
        tracing::info!(object = %o, "deleted by DeleteObject");
        self.wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::CharacterString;

    fn schedules() -> Schedules {
        Schedules::with_creatable(vec![], vec![], vec![ObjectType::SCHEDULE, ObjectType::CALENDAR])
    }
    fn name(text: &str) -> PropertyValue {
        PropertyValue {
            property: P::OBJECT_NAME,
            array_index: None,
            value: Value::CharacterString(CharacterString::utf8(text)).into(),
            priority: None,
        }
    }

    #[test]
    fn created_by_type_then_by_identifier_then_deleted() {
        let s = schedules();
        let first = s.create(ObjectSpecifier::Type(ObjectType::SCHEDULE), &[name("lobby")]).unwrap();
        assert_eq!(first, schedule_id(1));
        let chosen = ObjectIdentifier { object_type: ObjectType::CALENDAR, instance: 9 };
        assert_eq!(s.create(ObjectSpecifier::Identifier(chosen), &[]).unwrap(), chosen);
        assert_eq!(s.ids(), [first, chosen]);
        let again = s.create(ObjectSpecifier::Identifier(chosen), &[]).unwrap_err();
        assert_eq!(again.error.code, ErrorCode::OBJECT_IDENTIFIER_ALREADY_EXISTS);
        s.delete(chosen).unwrap();
        assert_eq!(s.ids(), [first]);
        assert_eq!(s.delete(chosen).unwrap_err().code, ErrorCode::UNKNOWN_OBJECT);
    }

    #[test]
    fn a_refused_initial_value_names_its_position_and_creates_nothing() {
        let s = schedules();
        let bad_priority = PropertyValue {
            property: P::PRIORITY_FOR_WRITING,
            array_index: None,
            value: Value::Unsigned(17).into(),
            priority: None,
        };
        let e = s.create(ObjectSpecifier::Type(ObjectType::SCHEDULE), &[name("a"), bad_priority]).unwrap_err();
        assert_eq!((e.error.code, e.first_failed), (ErrorCode::VALUE_OUT_OF_RANGE, 2));
        assert!(s.ids().is_empty());
        s.create(ObjectSpecifier::Type(ObjectType::SCHEDULE), &[name("a")]).unwrap();
        let e = s.create(ObjectSpecifier::Type(ObjectType::CALENDAR), &[name("a")]).unwrap_err();
        assert_eq!((e.error.code, e.first_failed), (ErrorCode::DUPLICATE_NAME, 1));
    }

    #[test]
    fn configured_objects_and_other_types_are_refused() {
        let configured =
            CalendarConfig { instance: 1, name: "h".into(), description: None, dates: vec![], writable: false };
        let s = Schedules::with_creatable(vec![], vec![configured], vec![ObjectType::CALENDAR]);
        assert_eq!(s.delete(calendar_id(1)).unwrap_err().code, ErrorCode::OBJECT_DELETION_NOT_PERMITTED);
        let e = s.create(ObjectSpecifier::Type(ObjectType::SCHEDULE), &[]).unwrap_err();
        assert_eq!(e.error.code, ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED);
        assert_eq!(s.create(ObjectSpecifier::Type(ObjectType::CALENDAR), &[]).unwrap(), calendar_id(2));
    }
}
