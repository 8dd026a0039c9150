//! The in-guest object store: a device's objects with ASHRAE 135's property
//! semantics.
//!
//! Two sides use it. The model, through the methods here ([`Store::add`],
//! [`Store::update`], [`Store::command`], …), which are typed and answer
//! [`StoreError`] for programming mistakes. And BACnet clients, through
//! [`Store::read`] and [`Store::write`] (the runtime calls them for the
//! host), which follow the standard and answer [`BacnetError`]s:
//!
//! | request | answer |
//! |---|---|
//! | an object the device does not have | object / unknown-object |
//! | a property the object does not have | property / unknown-property |
//! | an array index on a property that is not a BACnetARRAY | property / property-is-not-an-array |
//! | index 0 of an array | its length (Unsigned) |
//! | an index past the end | property / invalid-array-index |
//! | ALL (8), REQUIRED (105), OPTIONAL (80) | one result per property, in Property_List order after Object_Identifier, Object_Name, Object_Type |
//! | write Present_Value of an input in service | property / write-access-denied |
//! | write of the wrong datatype | property / invalid-data-type |
//! | a state outside 1..=Number_Of_States, a priority outside 1..=16 | property / value-out-of-range |
//! | a command at priority 6 (reserved for Minimum On/Off, Clause 19.2.3) | property / write-access-denied |
//! | a name another object has | property / duplicate-name |
//! | write Record_Count of a Trend Log other than 0 | property / value-out-of-range |
//! | enable a full Trend Log that stops when full | object / log-buffer-full |
//! | any other property | property / write-access-denied |
//!
//! Changes of Present_Value and Status_Flags are recorded and handed to the
//! host once per call ([`Store::take_changes`]); an analog Present_Value
//! counts as changed when it moved by COV_Increment or more since it was
//! last reported.
//!
//! Trend Logs ([`Store::add_trend_log`], Clause 12.25) log a property of
//! another object of the store at the ticks into a bounded ring buffer
//! (see [`TrendLogSpec`] for the rules); their
//! Log_Buffer is a list the host reads in ranges with ReadRange.

mod alarm;
mod lifecycle;
mod object;
pub(crate) mod props;
mod trend_log;
mod write;

pub use alarm::{AlarmSpec, EventReport};
pub(crate) use lifecycle::{CREATION_ONLY, creation_props};
pub(crate) use object::{Class, Command, Kind, Object, Role, Written};
pub use object::{Device, ObjectSpec, PresentValue, StoreError};
pub use trend_log::{DEFAULT_BUFFER_SIZE, DEFAULT_LOG_INTERVAL, MAX_ANY_VALUE_OCTETS, MAX_BUFFER_SIZE, TrendLogSpec};
pub(crate) use trend_log::{LogDatum, LogRecord, TrendLog};
pub use write::{DEFAULT_PRIORITY, MINIMUM_ON_OFF_PRIORITY};

use crate::DateTime;
use crate::model::PropertyRef;
use bacnet::services::BacnetError;
use bacnet::{AnyValue, EventState, ObjectIdentifier, ObjectType, PropertyIdentifier, Reliability, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A device's objects. See the [module documentation](self) for the rules.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) device: Device,
    pub(crate) device_written: Written,
    pub(crate) objects: BTreeMap<ObjectIdentifier, Object>,
    pub(crate) trend_logs: BTreeMap<ObjectIdentifier, TrendLog>,
    /// Object_Name → object (Device object aside), for uniqueness checks and `find`.
    names: BTreeMap<String, ObjectIdentifier>,
    dirty: BTreeSet<ObjectIdentifier>,
    /// Objects with intrinsic reporting whose Time_Delay runs.
    waiting: BTreeSet<ObjectIdentifier>,
    /// Transitions found and not yet handed to the host.
    events: Vec<EventReport>,
    objects_changed: bool,
    /// What a client may create, by type (see `lifecycle`).
    templates: BTreeMap<ObjectType, ObjectSpec>,
    /// The objects clients created (and may delete).
    created: BTreeSet<ObjectIdentifier>,
    clock: Option<fn() -> DateTime>,
    now: DateTime,
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl Store {
    /// An empty store with the default [`Device`].
    pub fn new() -> Self {
        Store {
            device: Device::default(),
            device_written: Written::default(),
            objects: BTreeMap::new(),
            trend_logs: BTreeMap::new(),
            names: BTreeMap::new(),
            dirty: BTreeSet::new(),
            waiting: BTreeSet::new(),
            events: Vec::new(),
            objects_changed: false,
            templates: BTreeMap::new(),
            created: BTreeSet::new(),
            clock: None,
            now: DateTime::default(),
        }
    }

    // ---- time ----

    /// Read the time from `clock` (Local_Date, Local_Time). The runtime sets
    /// the host's clock; without one the store uses the last tick's time.
    pub fn set_clock(&mut self, clock: fn() -> DateTime) {
        self.clock = Some(clock);
    }

    /// The current time: the clock's, or the last tick's.
    pub fn now(&self) -> DateTime {
        self.clock.map(|c| c()).unwrap_or(self.now)
    }

    pub(crate) fn set_tick_time(&mut self, now: DateTime) {
        self.now = now;
    }

    // ---- the Device object ----

    /// The Device object.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The Device object's identifier.
    pub fn device_id(&self) -> ObjectIdentifier {
        self.device.id()
    }

    /// Replace the Device object's properties.
    pub fn set_device(&mut self, device: Device) -> Result<(), StoreError> {
        check_instance(device.instance)?;
        if device.name.is_empty() {
            return Err(StoreError::EmptyName);
        }
        if self.names.contains_key(&device.name) {
            return Err(StoreError::DuplicateName(device.name));
        }
        self.device = device;
        self.objects_changed = true;
        Ok(())
    }

    // ---- objects ----

    /// Create an object.
    pub fn add(&mut self, spec: ObjectSpec) -> Result<ObjectIdentifier, StoreError> {
        let id = spec.id();
        let (role, kind) =
            object::classify(spec.object_type).ok_or(StoreError::UnsupportedObjectType(spec.object_type))?;
        check_instance(spec.instance)?;
        if self.contains(id) {
            return Err(StoreError::DuplicateObject(id));
        }
        if spec.name.is_empty() {
            return Err(StoreError::EmptyName);
        }
        if self.find(&spec.name).is_some() {
            return Err(StoreError::DuplicateName(spec.name));
        }
        if role == Role::Input && spec.commandable {
            return Err(StoreError::InputNotCommandable(id));
        }
        let class = match kind {
            Kind::Analog => {
                if !(spec.cov_increment.is_finite() && spec.cov_increment >= 0.0) {
                    return Err(StoreError::OutOfRange { object: id });
                }
                Class::Analog { units: spec.units, cov_increment: spec.cov_increment }
            }
            Kind::Binary => Class::Binary {
                active_text: spec.active_text,
                inactive_text: spec.inactive_text,
                polarity: (role != Role::Value).then_some(spec.polarity),
            },
            Kind::MultiState => {
                if spec.states.is_empty() {
                    return Err(StoreError::NoStates(id));
                }
                Class::MultiState { states: spec.states }
            }
        };
        let default = match kind {
            Kind::Analog => PresentValue::Analog(0.0),
            Kind::Binary => PresentValue::Binary(false),
            Kind::MultiState => PresentValue::MultiState(1),
        };
        let mut object = Object {
            id,
            name: spec.name,
            description: spec.description,
            role,
            class,
            value: default,
            command: None,
            event_state: EventState::NORMAL,
            reliability: spec.reliability,
            out_of_service: spec.out_of_service,
            overridden: false,
            written: Written::default(),
            reported: (default, [false; 4]),
            reporting: None,
        };
        if let Some(alarm) = spec.alarm {
            if !alarm.fits(kind, role == Role::Output) {
                return Err(StoreError::AlarmDoesNotFit(id));
            }
            object.reporting = Some(Box::new(alarm::Reporting::new(alarm)));
        }
        let value = spec.value.map(|v| object.coerce(v)).transpose()?;
        let relinquish = spec.relinquish_default.map(|v| object.coerce(v)).transpose()?;
        if spec.commandable {
            let relinquish_default = relinquish.or(value).unwrap_or(default);
            object.command = Some(Command { slots: [None; 16], relinquish_default });
        } else if let Some(v) = value {
            object.value = v;
        }
        object.reported = (object.present_value(), object.status_flags());
        if object.reporting.is_some() {
            // Evaluated at the end of the call that created it.
            self.dirty.insert(id);
        }
        self.names.insert(object.name.clone(), id);
        self.objects.insert(id, object);
        self.objects_changed = true;
        Ok(id)
    }

    /// Create a Trend Log (Clause 12.25) logging a property of an object
    /// this store has (create that object first). Records are taken at the
    /// ticks (see [`log_trends`](Self::log_trends)).
    pub fn add_trend_log(&mut self, spec: TrendLogSpec) -> Result<ObjectIdentifier, StoreError> {
        let id = spec.id();
        check_instance(spec.instance)?;
        if self.contains(id) {
            return Err(StoreError::DuplicateObject(id));
        }
        if spec.name.is_empty() {
            return Err(StoreError::EmptyName);
        }
        if self.find(&spec.name).is_some() {
            return Err(StoreError::DuplicateName(spec.name));
        }
        if !self.contains(spec.logged.object) {
            return Err(StoreError::UnknownObject(spec.logged.object));
        }
        let log = spec.build()?;
        self.names.insert(log.name.clone(), id);
        self.trend_logs.insert(id, log);
        self.objects_changed = true;
        Ok(id)
    }

    /// Delete an object; false when there was none.
    pub fn remove(&mut self, id: ObjectIdentifier) -> bool {
        let name = match (self.objects.remove(&id), self.trend_logs.remove(&id)) {
            (Some(o), _) => Some(o.name),
            (_, Some(t)) => Some(t.name),
            (None, None) => None,
        };
        let removed = name.is_some();
        if let Some(name) = name {
            self.names.remove(&name);
        }
        self.dirty.remove(&id);
        self.waiting.remove(&id);
        self.created.remove(&id);
        self.objects_changed |= removed;
        removed
    }

    /// True when the device has this object (the Device object included).
    pub fn contains(&self, id: ObjectIdentifier) -> bool {
        id == self.device.id() || self.objects.contains_key(&id) || self.trend_logs.contains_key(&id)
    }

    /// The objects' identifiers (point objects and Trend Logs, the Device
    /// object aside), in (type, instance) order.
    pub fn ids(&self) -> impl Iterator<Item = ObjectIdentifier> + '_ {
        let mut ids: Vec<ObjectIdentifier> = self.objects.keys().chain(self.trend_logs.keys()).copied().collect();
        ids.sort_unstable();
        ids.into_iter()
    }

    /// Number of objects, point objects and Trend Logs (the Device object
    /// not counted).
    pub fn len(&self) -> usize {
        self.objects.len() + self.trend_logs.len()
    }

    /// True when there are no objects besides the Device object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The object named `name` (the Device object included).
    pub fn find(&self, name: &str) -> Option<ObjectIdentifier> {
        if self.device.name == name {
            return Some(self.device.id());
        }
        self.names.get(name).copied()
    }

    /// Give an object (the Device object included) a new Object_Name; false
    /// when another object has it or it is empty.
    pub(crate) fn rename(&mut self, id: ObjectIdentifier, name: String) -> bool {
        if name.is_empty() || self.find(&name).is_some_and(|other| other != id) {
            return false;
        }
        if id == self.device.id() {
            self.device.name = name;
        } else {
            let slot = match (self.objects.get_mut(&id), self.trend_logs.get_mut(&id)) {
                (Some(o), _) => &mut o.name,
                (_, Some(t)) => &mut t.name,
                (None, None) => return false,
            };
            self.names.remove(slot);
            self.names.insert(name.clone(), id);
            *slot = name;
        }
        self.objects_changed = true;
        true
    }

    /// Object_Name of an object (the Device object included).
    pub fn name(&self, id: ObjectIdentifier) -> Option<&str> {
        if id == self.device.id() {
            return Some(&self.device.name);
        }
        match self.trend_logs.get(&id) {
            Some(t) => Some(&t.name),
            None => self.objects.get(&id).map(|o| o.name.as_str()),
        }
    }

    // ---- values, for the model ----

    /// Present_Value of a point object.
    pub fn present_value(&self, id: ObjectIdentifier) -> Option<PresentValue> {
        self.objects.get(&id).map(Object::present_value)
    }

    /// Present_Value of an analog object.
    pub fn analog(&self, id: ObjectIdentifier) -> Option<f32> {
        match self.present_value(id)? {
            PresentValue::Analog(x) => Some(x),
            _ => None,
        }
    }

    /// Present_Value of a binary object (`true` = active).
    pub fn binary(&self, id: ObjectIdentifier) -> Option<bool> {
        match self.present_value(id)? {
            PresentValue::Binary(b) => Some(b),
            _ => None,
        }
    }

    /// Present_Value of a multi-state object.
    pub fn multi_state(&self, id: ObjectIdentifier) -> Option<u32> {
        match self.present_value(id)? {
            PresentValue::MultiState(n) => Some(n),
            _ => None,
        }
    }

    /// Out_Of_Service of a point object.
    pub fn out_of_service(&self, id: ObjectIdentifier) -> Option<bool> {
        self.objects.get(&id).map(|o| o.out_of_service)
    }

    /// True for an object with a Priority_Array.
    pub fn is_commandable(&self, id: ObjectIdentifier) -> bool {
        self.objects.get(&id).is_some_and(|o| o.command.is_some())
    }

    /// The priority (1..=16) of the command in effect on a commandable
    /// object, `None` when Relinquish_Default is in effect or the object is
    /// not commandable.
    pub fn command_priority(&self, id: ObjectIdentifier) -> Option<u8> {
        self.objects.get(&id)?.command.as_ref()?.active().map(|(p, _)| p)
    }

    /// The model's value for an input or a non-commandable Value object.
    /// While the object is out of service its Present_Value is decoupled
    /// from the model (Clause 12): the update is ignored and `Ok(false)`
    /// returned.
    pub fn update(&mut self, id: ObjectIdentifier, value: impl Into<PresentValue>) -> Result<bool, StoreError> {
        let o = self.objects.get_mut(&id).ok_or(StoreError::UnknownObject(id))?;
        if o.command.is_some() {
            return Err(StoreError::Commandable(id));
        }
        let v = o.coerce(value.into())?;
        if o.out_of_service {
            return Ok(false);
        }
        o.value = v;
        self.dirty.insert(id);
        Ok(true)
    }

    /// Command a commandable object at `priority` (1..=16) as a program in
    /// the device would; `None` relinquishes. (Priority 6 is accepted here:
    /// a model implementing Minimum On/Off time is the one that may use it.)
    pub fn command(
        &mut self,
        id: ObjectIdentifier,
        priority: u8,
        value: Option<PresentValue>,
    ) -> Result<(), StoreError> {
        let o = self.objects.get_mut(&id).ok_or(StoreError::UnknownObject(id))?;
        if !(1..=16).contains(&priority) {
            return Err(StoreError::InvalidPriority(priority));
        }
        let value = value.map(|v| o.coerce(v)).transpose()?;
        let c = o.command.as_mut().ok_or(StoreError::NotCommandable(id))?;
        c.slots[priority as usize - 1] = value;
        self.dirty.insert(id);
        Ok(())
    }

    /// Set Reliability (FAULT in Status_Flags follows it), of a point
    /// object or a Trend Log.
    pub fn set_reliability(&mut self, id: ObjectIdentifier, reliability: Reliability) -> Result<(), StoreError> {
        if let Some(t) = self.trend_logs.get_mut(&id) {
            t.reliability = reliability;
            return Ok(());
        }
        self.with_object(id, |o| o.reliability = reliability)
    }

    /// Set Event_State (IN_ALARM in Status_Flags follows it) of an object
    /// without intrinsic reporting (one with it is refused: its state is
    /// its algorithm's).
    pub fn set_event_state(&mut self, id: ObjectIdentifier, state: EventState) -> Result<(), StoreError> {
        if self.objects.get(&id).is_some_and(|o| o.reporting.is_some()) {
            return Err(StoreError::EventStateIsReported(id));
        }
        self.with_object(id, |o| o.event_state = state)
    }

    /// Set the OVERRIDDEN flag of Status_Flags (a local override of the
    /// point, e.g. a hand switch).
    pub fn set_overridden(&mut self, id: ObjectIdentifier, overridden: bool) -> Result<(), StoreError> {
        self.with_object(id, |o| o.overridden = overridden)
    }

    /// Set Out_Of_Service.
    pub fn set_out_of_service(&mut self, id: ObjectIdentifier, oos: bool) -> Result<(), StoreError> {
        self.with_object(id, |o| o.out_of_service = oos)
    }

    /// Set Description.
    pub fn set_description(&mut self, id: ObjectIdentifier, text: &str) -> Result<(), StoreError> {
        if id == self.device.id() {
            self.device.description = text.into();
            return Ok(());
        }
        if let Some(t) = self.trend_logs.get_mut(&id) {
            t.description = text.into();
            return Ok(());
        }
        self.with_object(id, |o| o.description = text.into())
    }

    fn with_object(&mut self, id: ObjectIdentifier, f: impl FnOnce(&mut Object)) -> Result<(), StoreError> {
        let o = self.objects.get_mut(&id).ok_or(StoreError::UnknownObject(id))?;
        f(o);
        self.dirty.insert(id);
        Ok(())
    }

    pub(crate) fn mark_dirty(&mut self, id: ObjectIdentifier) {
        self.dirty.insert(id);
    }

    // ---- intrinsic reporting ----

    /// Run event-state detection on the objects with intrinsic reporting
    /// that changed since the last call or whose Time_Delay runs, at
    /// `now`; the transitions to notify wait for [`take_events`](Self::take_events).
    /// The runtime calls this at the end of every call, before
    /// [`take_changes`](Self::take_changes) (a transition changes
    /// Status_Flags).
    pub fn detect_events(&mut self, now: DateTime) {
        let due: BTreeSet<ObjectIdentifier> = self.dirty.union(&self.waiting).copied().collect();
        for id in due {
            let Some(o) = self.objects.get_mut(&id) else { continue };
            let Some(_) = &o.reporting else { continue };
            let before = o.event_state;
            if let Some(report) = o.detect(now) {
                self.events.push(report);
            }
            // Out of FAULT, the algorithm applies again at once: a value
            // still beyond its limit starts its Time_Delay now.
            if before == EventState::FAULT
                && o.event_state == EventState::NORMAL
                && let Some(report) = o.detect(now)
            {
                self.events.push(report);
            }
            if o.event_state != before {
                self.dirty.insert(id);
            }
            if o.reporting.as_ref().is_some_and(|r| r.waiting()) {
                self.waiting.insert(id);
            } else {
                self.waiting.remove(&id);
            }
        }
    }

    /// Evaluate every object with intrinsic reporting at the next
    /// [`detect_events`](Self::detect_events), changed or not (after the
    /// model built its objects: one may start beyond its limits).
    pub fn defer_detection(&mut self) {
        let reporting = self.objects.values().filter(|o| o.reporting.is_some()).map(|o| o.id);
        self.waiting.extend(reporting);
    }

    /// The transitions found since the last call, to notify, in order.
    pub fn take_events(&mut self) -> Vec<EventReport> {
        core::mem::take(&mut self.events)
    }

    /// The host's answer for reported transitions: those that wait for an
    /// acknowledgment clear their Acked_Transitions bit.
    pub fn set_ack_required(&mut self, reports: &[EventReport], required: &[bool]) {
        for (report, required) in reports.iter().zip(required) {
            if let Some(r) = self.objects.get_mut(&report.object).and_then(|o| o.reporting.as_mut()) {
                r.acked[alarm::transition_index(report.to)] = !required;
            }
        }
    }

    /// An acknowledgment of the transition `transition` (0 to-offnormal, 1
    /// to-fault, 2 to-normal) of `id`: object/unknown-object,
    /// object/no-alarm-configured for an object without intrinsic
    /// reporting.
    pub fn acknowledge(&mut self, id: ObjectIdentifier, transition: u8) -> Result<(), BacnetError> {
        let o = self.objects.get_mut(&id).ok_or(crate::errors::UNKNOWN_OBJECT)?;
        let r = o.reporting.as_mut().ok_or(crate::errors::NO_ALARM_CONFIGURED)?;
        let slot = r.acked.get_mut(usize::from(transition)).ok_or(crate::errors::INVALID_EVENT_STATE)?;
        *slot = true;
        Ok(())
    }

    // ---- change reporting ----

    /// The objects whose Present_Value or Status_Flags changed since the last
    /// call, for the host's `values-changed` (the runtime calls this after
    /// every export that may change values). An analog Present_Value counts
    /// when it moved by at least COV_Increment since it was last reported.
    pub fn take_changes(&mut self) -> Vec<ObjectIdentifier> {
        let mut out = Vec::new();
        for id in core::mem::take(&mut self.dirty) {
            let Some(o) = self.objects.get_mut(&id) else { continue };
            let now = (o.present_value(), o.status_flags());
            let moved = match (&o.class, now.0, o.reported.0) {
                (Class::Analog { cov_increment, .. }, PresentValue::Analog(a), PresentValue::Analog(b)) => {
                    let d = (a - b).abs();
                    if *cov_increment > 0.0 { d >= *cov_increment } else { a != b }
                }
                _ => now.0 != o.reported.0,
            };
            if moved || now.1 != o.reported.1 {
                o.reported = now;
                out.push(id);
            }
        }
        out
    }

    /// True once after objects were created, deleted or renamed (the host
    /// then calls `objects` again and bumps Database_Revision).
    pub fn take_objects_changed(&mut self) -> bool {
        core::mem::take(&mut self.objects_changed)
    }

    /// Forget pending changes and take the current values as reported (after
    /// `import-state`: the host saw these values from the old instance).
    pub(crate) fn settle(&mut self) {
        self.dirty.clear();
        for o in self.objects.values_mut() {
            o.reported = (o.present_value(), o.status_flags());
        }
    }

    /// Every object, the Device object first, then in (type, instance)
    /// order, with its name.
    pub fn object_names(&self) -> impl Iterator<Item = (ObjectIdentifier, &str)> + '_ {
        core::iter::once((self.device.id(), self.device.name.as_str()))
            .chain(self.ids().map(|id| (id, self.name(id).unwrap_or_default())))
    }

    // ---- trend logs ----

    /// Take the Trend Log records due at `now` (each enabled log's first
    /// record, then one every Log_Interval), reading the logged properties
    /// from the store. Inside a plugin the runtime does this after every
    /// [`ObjectModel::tick`](crate::ObjectModel::tick), through the model's
    /// [`read_property`](crate::ObjectModel::read_property) hook; a model
    /// driving a bare `Store` calls it itself.
    pub fn log_trends(&mut self, now: DateTime) {
        self.log_trends_with(now, |s, r| s.read(r));
    }

    /// [`log_trends`](Self::log_trends) with the reads through `read`.
    pub(crate) fn log_trends_with(
        &mut self,
        now: DateTime,
        read: impl Fn(&Store, &PropertyRef) -> Result<AnyValue, BacnetError>,
    ) {
        let due: Vec<(ObjectIdentifier, PropertyRef)> =
            self.trend_logs.values_mut().filter_map(|t| t.take_due(now.unix_ms).then_some((t.id, t.logged))).collect();
        for (id, logged) in due {
            let datum = LogDatum::from_read(read(self, &logged));
            // The logged object's Status_Flags go with the value, when it has them.
            let flags = match read(self, &PropertyRef::new(logged.object, PropertyIdentifier::STATUS_FLAGS)) {
                Ok(v) => match v.as_primitive() {
                    Some(Value::BitString(b)) => Some(b.clone()),
                    _ => None,
                },
                Err(_) => None,
            };
            if let Some(t) = self.trend_logs.get_mut(&id) {
                t.push(LogRecord::new(now, datum, flags));
            }
        }
    }

    /// Number of records in a Trend Log's buffer (Record_Count), `None`
    /// when `id` is not a Trend Log.
    pub fn record_count(&self, id: ObjectIdentifier) -> Option<usize> {
        self.trend_logs.get(&id).map(|t| t.records.len())
    }
}

impl Object {
    /// `v` as this object's Present_Value datatype; an integer is accepted
    /// for an analog object.
    fn coerce(&self, v: PresentValue) -> Result<PresentValue, StoreError> {
        let v = match (&self.class, v) {
            (Class::Analog { .. }, PresentValue::MultiState(n)) => PresentValue::Analog(n as f32),
            _ => v,
        };
        match self.check_value(v) {
            Ok(()) => Ok(v),
            Err(object::ValueProblem::WrongDatatype) => {
                Err(StoreError::WrongDatatype { object: self.id, expected: self.expected_datatype() })
            }
            Err(object::ValueProblem::OutOfRange) => Err(StoreError::OutOfRange { object: self.id }),
        }
    }
}

fn check_instance(instance: u32) -> Result<(), StoreError> {
    if instance >= ObjectIdentifier::MAX_INSTANCE {
        return Err(StoreError::InvalidInstance(instance));
    }
    Ok(())
}

/// True for the object types the store implements (besides Device).
pub fn is_supported(object_type: ObjectType) -> bool {
    object::classify(object_type).is_some()
}
