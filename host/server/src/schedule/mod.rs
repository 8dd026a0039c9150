//! Schedule and Calendar objects (Clauses 12.24 and 12.9): what value a
//! schedule has now, and the writes it makes to the properties it controls.
//!
//! The host owns them, not the object model: a schedule writes to objects
//! of the model and of other devices (through the host's client side), on
//! the device clock that Time/UTCTimeSynchronization sets, and a Calendar
//! is what a schedule's exceptions refer to. The operator configures them
//! (`[[device.schedule]]`, `[[device.calendar]]`); where the operator
//! allows it (`writable`), a front end rewrites Weekly_Schedule,
//! Exception_Schedule, Schedule_Default, Effective_Period,
//! List_Of_Object_Property_References, Priority_For_Writing,
//! Out_Of_Service (and Present_Value while out of service) and Date_List
//! with WriteProperty. They are appended to the model's Object_List.
//!
//! Evaluation ([`bacnet::schedule::evaluate`]) runs once a second, at
//! once after a write to a schedule or a calendar and after a time
//! synchronization (`runner`). A schedule writes its Present_Value, at
//! Priority_For_Writing, to every reference when the value changes, when
//! it starts, when it enters its Effective_Period, and when its references
//! or priority are written. Out of its Effective_Period it neither
//! evaluates nor writes (Present_Value keeps its last value).
//!
//! A failed or lost write is made again by the refresh: every five
//! minutes a schedule writes its value to every reference again. When
//! Priority_For_Writing or the references change, the old commands are
//! relinquished (NULL at the old priority) first.
//!
//! Written values last until the gateway restarts, as for Notification
//! Class objects (persisting a front end's writes is not built yet).
//!
//! Must never: write to a reference while its values' datatypes disagree
//! (Reliability CONFIGURATION_ERROR), accept more than the bounds below, or
//! hold a lock across an await.

mod lifecycle;
pub use lifecycle::{HOST_CREATABLE, MAX_CREATED};
mod objects;
pub(crate) mod runner;

use bacnet::schedule::{CalendarEntry, DateRange, DeviceObjectPropertyReference, SpecialEvent, TimeValue};
use bacnet::{Date, ObjectIdentifier, Value};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

/// The most time-values one day (or one special event) may hold.
pub const MAX_TIME_VALUES: usize = 64;
/// The most elements Exception_Schedule may hold.
pub const MAX_EXCEPTIONS: usize = 64;
/// The most references a schedule may write to.
pub const MAX_REFERENCES: usize = 32;
/// The most entries a Date_List may hold.
pub const MAX_DATES: usize = 256;

/// One configured Schedule object.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleConfig {
    /// Its instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description, if any.
    pub description: Option<String>,
    /// Effective_Period.
    pub effective_period: DateRange,
    /// Weekly_Schedule, Monday first: 7 days, or none (empty).
    pub weekly: Vec<Vec<TimeValue>>,
    /// Exception_Schedule.
    pub exceptions: Vec<SpecialEvent>,
    /// Schedule_Default.
    pub default: Value,
    /// List_Of_Object_Property_References.
    pub references: Vec<DeviceObjectPropertyReference>,
    /// Priority_For_Writing (1..=16).
    pub priority_for_writing: u8,
    /// Let WriteProperty change the schedule (whoever writes it drives the
    /// properties it controls).
    pub writable: bool,
}

/// One configured Calendar object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarConfig {
    /// Its instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description, if any.
    pub description: Option<String>,
    /// Date_List.
    pub dates: Vec<CalendarEntry>,
    /// Let WriteProperty change Date_List.
    pub writable: bool,
}

impl CalendarConfig {
    /// Present_Value on local date `today`: true when an entry names it.
    pub fn includes(&self, today: Date) -> bool {
        self.dates.iter().any(|e| e.matches(today))
    }
}

/// A schedule as it runs.
#[derive(Debug)]
struct ScheduleObject {
    config: ScheduleConfig,
    present_value: Value,
    out_of_service: bool,
    /// Write Present_Value to every reference at the next evaluation,
    /// changed or not (start, references or priority written).
    rewrite: bool,
    /// In its Effective_Period at the last evaluation.
    active: bool,
    /// The value last handed to the references.
    last_written: Option<Value>,
    /// When it was (the references are written again every
    /// [`runner::REFRESH`], in case a write was lost).
    written_at: Option<std::time::Instant>,
    /// Commands to relinquish (NULL) at their old priority: references
    /// removed, or all of them after Priority_For_Writing changed.
    relinquish: Vec<(DeviceObjectPropertyReference, u8)>,
}

/// What schedules did, for an operator.
#[derive(Debug, Default)]
pub struct ScheduleStats {
    /// Writes to the model's objects that it accepted.
    pub local_written: AtomicU64,
    /// Writes to the model's objects that it refused (logged).
    pub local_failed: AtomicU64,
    /// Confirmed WriteProperty requests to other devices queued.
    pub remote_queued: AtomicU64,
    /// … acknowledged.
    pub remote_acknowledged: AtomicU64,
    /// … failed after their retries, or not queued.
    pub remote_failed: AtomicU64,
    /// Writes to other devices dropped: no I-Am in time.
    pub unreachable: AtomicU64,
}

/// The Schedule and Calendar objects of one device.
#[derive(Debug)]
pub struct Schedules {
    schedules: Mutex<Vec<Arc<Mutex<ScheduleObject>>>>,
    calendars: Mutex<Vec<Arc<Mutex<CalendarConfig>>>>,
    /// The object types a CreateObject may create (Schedule, Calendar).
    creatable: Vec<bacnet::ObjectType>,
    /// The objects CreateObject made (only those may be deleted).
    created: Mutex<std::collections::BTreeSet<ObjectIdentifier>>,
    /// Commands of deleted schedules to relinquish at the next evaluation.
    orphans: Mutex<Vec<runner::ScheduledWrite>>,
    /// Told when a write or a time synchronization calls for an evaluation.
    pub(crate) wake: tokio::sync::Notify,
    /// Writes to other devices waiting for their I-Am.
    pending: Mutex<Vec<runner::PendingWrite>>,
    /// Counters.
    pub stats: ScheduleStats,
}

impl Schedules {
    /// The configured objects.
    pub fn new(schedules: Vec<ScheduleConfig>, calendars: Vec<CalendarConfig>) -> Self {
        Self::with_creatable(schedules, calendars, Vec::new())
    }

    /// The configured objects, and the types (Schedule, Calendar) a front
    /// end may create with CreateObject (and delete once created).
    pub fn with_creatable(
        schedules: Vec<ScheduleConfig>,
        calendars: Vec<CalendarConfig>,
        creatable: Vec<bacnet::ObjectType>,
    ) -> Self {
        let schedules = schedules.into_iter().map(|c| Arc::new(Mutex::new(ScheduleObject::new(c)))).collect();
        Schedules {
            schedules: Mutex::new(schedules),
            calendars: Mutex::new(calendars.into_iter().map(|c| Arc::new(Mutex::new(c))).collect()),
            creatable,
            created: Mutex::default(),
            orphans: Mutex::default(),
            wake: tokio::sync::Notify::new(),
            pending: Mutex::new(Vec::new()),
            stats: ScheduleStats::default(),
        }
    }

    /// True when there is no Schedule and no Calendar.
    pub fn is_empty(&self) -> bool {
        !self.has_schedules() && !self.has_calendars()
    }

    /// True when the device has a Schedule object or may create one.
    pub fn has_schedules(&self) -> bool {
        !lock(&self.schedules).is_empty() || self.creatable.contains(&bacnet::ObjectType::SCHEDULE)
    }

    /// True when the device has a Calendar object or may create one.
    pub fn has_calendars(&self) -> bool {
        !lock(&self.calendars).is_empty() || self.creatable.contains(&bacnet::ObjectType::CALENDAR)
    }

    /// True when CreateObject and DeleteObject are executed.
    pub fn creates(&self) -> bool {
        !self.creatable.is_empty()
    }

    /// Their object identifiers, in Object_List order (schedules, then calendars).
    pub fn ids(&self) -> Vec<ObjectIdentifier> {
        let schedules: Vec<_> = lock(&self.schedules).iter().map(|s| schedule_id(lock(s).config.instance)).collect();
        let calendars = lock(&self.calendars).iter().map(|c| calendar_id(lock(c).instance)).collect::<Vec<_>>();
        schedules.into_iter().chain(calendars).collect()
    }

    /// The schedules, for an evaluation (the list's lock is not held).
    fn all_schedules(&self) -> Vec<Arc<Mutex<ScheduleObject>>> {
        lock(&self.schedules).clone()
    }

    /// True when `o` is one of them.
    pub fn has(&self, o: ObjectIdentifier) -> bool {
        self.schedule(o).is_some() || self.calendar(o).is_some()
    }

    fn schedule(&self, o: ObjectIdentifier) -> Option<Arc<Mutex<ScheduleObject>>> {
        if o.object_type != bacnet::ObjectType::SCHEDULE {
            return None;
        }
        lock(&self.schedules).iter().find(|s| lock(s).config.instance == o.instance).cloned()
    }

    fn calendar(&self, o: ObjectIdentifier) -> Option<Arc<Mutex<CalendarConfig>>> {
        if o.object_type != bacnet::ObjectType::CALENDAR {
            return None;
        }
        lock(&self.calendars).iter().find(|c| lock(c).instance == o.instance).cloned()
    }

    /// True when Calendar `o` exists and names `today`.
    fn calendar_includes(&self, o: ObjectIdentifier, today: Date) -> bool {
        self.calendar(o).is_some_and(|c| lock(&c).includes(today))
    }
}

impl ScheduleObject {
    fn new(config: ScheduleConfig) -> Self {
        ScheduleObject {
            present_value: config.default.clone(),
            config,
            out_of_service: false,
            rewrite: true,
            active: false,
            last_written: None,
            written_at: None,
            relinquish: Vec::new(),
        }
    }
}

fn schedule_id(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: bacnet::ObjectType::SCHEDULE, instance }
}

fn calendar_id(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: bacnet::ObjectType::CALENDAR, instance }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
