//! The properties of Schedule and Calendar objects: what a read answers
//! and what a write may change.

use super::{
    CalendarConfig, MAX_DATES, MAX_EXCEPTIONS, MAX_REFERENCES, MAX_TIME_VALUES, ScheduleObject, Schedules, lock,
};
use crate::host_object::{encoded, octets};
use bacnet::codec::Reader;
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P, Reliability};
use bacnet::schedule::{
    CalendarEntry, DateRange, DeviceObjectPropertyReference, SpecialEvent, SpecialEventPeriod, TimeValue,
    decode_time_values, encode_time_values,
};
use bacnet::services::{BacnetError, ServiceCodec};
use bacnet::{AnyValue, BitString, CharacterString, Date, ObjectIdentifier, Value};

fn error(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError { class, code }
}
fn invalid() -> BacnetError {
    error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE)
}
fn denied() -> BacnetError {
    error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)
}
fn no_space() -> BacnetError {
    error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_WRITE_PROPERTY)
}
fn bad_index() -> BacnetError {
    error(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)
}

/// Decode exactly one production of type `T` from a written value.
fn decode_one<T: ServiceCodec>(value: &AnyValue) -> Result<T, BacnetError> {
    let octets = octets(value);
    let mut r = Reader::new(&octets);
    let one = T::decode_from(&mut r).map_err(|_| invalid())?;
    if !r.is_empty() {
        return Err(invalid());
    }
    Ok(one)
}

fn out_of_range() -> BacnetError {
    error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE)
}

/// A calendar entry a device can match: a date range's ends each a whole
/// date or entirely unspecified.
fn check_entry(e: &CalendarEntry) -> Result<(), BacnetError> {
    match e {
        CalendarEntry::DateRange(r) if !r.is_valid() => Err(out_of_range()),
        _ => Ok(()),
    }
}

/// Decode every production of type `T` in a written value, at most `max`.
fn decode_all<T: ServiceCodec>(value: &AnyValue, max: usize) -> Result<Vec<T>, BacnetError> {
    let octets = octets(value);
    let mut r = Reader::new(&octets);
    let mut list = Vec::new();
    while !r.is_empty() {
        if list.len() == max {
            return Err(no_space());
        }
        list.push(T::decode_from(&mut r).map_err(|_| invalid())?);
    }
    Ok(list)
}

/// One BACnetDailySchedule (`[0]` time-values) from a written value.
fn daily(r: &mut Reader<'_>) -> Result<Vec<TimeValue>, BacnetError> {
    let list = decode_time_values(r, 0, "day-schedule").map_err(|_| invalid())?;
    if list.len() > MAX_TIME_VALUES {
        return Err(no_space());
    }
    Ok(list)
}

/// An array property's answer: the whole array, its length, or element `index`.
fn array<T>(items: &[T], index: Option<u32>, encode: impl Fn(&T, &mut Vec<u8>)) -> Result<AnyValue, BacnetError> {
    match index {
        None => encoded(|o| items.iter().for_each(|i| encode(i, o))),
        Some(0) => Ok(Value::Unsigned(items.len() as u64).into()),
        Some(i) => items.get(i as usize - 1).map_or(Err(bad_index()), |item| encoded(|o| encode(item, o))),
    }
}

fn text(s: &str) -> AnyValue {
    Value::CharacterString(CharacterString::utf8(s)).into()
}

/// The datatypes of a schedule's values agree: every value that is not
/// NULL has the same application tag.
fn consistent(o: &ScheduleObject) -> bool {
    let c = &o.config;
    let values = std::iter::once(&c.default)
        .chain(c.weekly.iter().flatten().map(|tv| &tv.value))
        .chain(c.exceptions.iter().flat_map(|e| e.time_values.iter().map(|tv| &tv.value)))
        .filter(|v| **v != Value::Null);
    let mut tags = values.map(Value::app_tag);
    let Some(first) = tags.next() else { return true };
    tags.all(|t| t == first)
}

impl ScheduleObject {
    /// The application tag of the schedule's values: Schedule_Default's, or
    /// the first time-value's that is not NULL; `None` when all are NULL.
    fn datatype(&self) -> Option<u8> {
        let c = &self.config;
        std::iter::once(&c.default)
            .chain(c.weekly.iter().flatten().map(|tv| &tv.value))
            .chain(c.exceptions.iter().flat_map(|e| e.time_values.iter().map(|tv| &tv.value)))
            .find(|v| **v != Value::Null)
            .map(Value::app_tag)
    }

    /// Reliability: CONFIGURATION_ERROR when the values' datatypes disagree.
    pub(super) fn reliability(&self) -> Reliability {
        if consistent(self) { Reliability::NO_FAULT_DETECTED } else { Reliability::CONFIGURATION_ERROR }
    }

    fn properties(&self) -> Vec<P> {
        let mut list =
            vec![P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE, P::PRESENT_VALUE, P::EFFECTIVE_PERIOD];
        if !self.config.weekly.is_empty() {
            list.push(P::WEEKLY_SCHEDULE);
        }
        list.extend([
            P::EXCEPTION_SCHEDULE,
            P::SCHEDULE_DEFAULT,
            P::LIST_OF_OBJECT_PROPERTY_REFERENCES,
            P::PRIORITY_FOR_WRITING,
            P::STATUS_FLAGS,
            P::RELIABILITY,
            P::OUT_OF_SERVICE,
            P::PROPERTY_LIST,
        ]);
        if self.config.description.is_some() {
            list.push(P::DESCRIPTION);
        }
        list
    }

    fn read(&self, o: ObjectIdentifier, p: P, index: Option<u32>) -> Result<AnyValue, BacnetError> {
        let c = &self.config;
        match p {
            P::PROPERTY_LIST => return crate::host_object::property_list(&self.properties(), index),
            P::WEEKLY_SCHEDULE => return array(&c.weekly, index, |day, out| encode_time_values(out, 0, day)),
            P::EXCEPTION_SCHEDULE => return array(&c.exceptions, index, |e, out| e.encode(out)),
            _ if index.is_some() => return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)),
            _ => {}
        }
        Ok(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(o).into(),
            P::OBJECT_NAME => text(&c.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::SCHEDULE.0).into(),
            P::DESCRIPTION => text(c.description.as_deref().unwrap_or_default()),
            P::PRESENT_VALUE => self.present_value.clone().into(),
            P::EFFECTIVE_PERIOD => encoded(|out| c.effective_period.encode(out))?,
            P::SCHEDULE_DEFAULT => c.default.clone().into(),
            P::LIST_OF_OBJECT_PROPERTY_REFERENCES => encoded(|out| c.references.iter().for_each(|r| r.encode(out)))?,
            P::PRIORITY_FOR_WRITING => Value::Unsigned(u64::from(c.priority_for_writing)).into(),
            P::STATUS_FLAGS => {
                let fault = self.reliability() != Reliability::NO_FAULT_DETECTED;
                Value::BitString(BitString::from_bits(&[false, fault, false, self.out_of_service])).into()
            }
            P::RELIABILITY => Value::Enumerated(self.reliability().0).into(),
            P::OUT_OF_SERVICE => Value::Boolean(self.out_of_service).into(),
            _ => return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)),
        })
    }

    fn write(&mut self, p: P, index: Option<u32>, value: &AnyValue) -> Result<(), BacnetError> {
        if !self.config.writable {
            return Err(denied());
        }
        let c = &mut self.config;
        let array_property = matches!(p, P::WEEKLY_SCHEDULE | P::EXCEPTION_SCHEDULE);
        if index.is_some() && !array_property {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        match (p, index) {
            (P::WEEKLY_SCHEDULE, None) => {
                let octets = octets(value);
                let mut r = Reader::new(&octets);
                let mut week = Vec::with_capacity(7);
                while !r.is_empty() && week.len() < 8 {
                    week.push(daily(&mut r)?);
                }
                if week.len() != 7 || !r.is_empty() {
                    return Err(invalid());
                }
                c.weekly = week;
            }
            (P::WEEKLY_SCHEDULE, Some(i @ 1..=7)) => {
                let octets = octets(value);
                let mut r = Reader::new(&octets);
                let day = daily(&mut r)?;
                if !r.is_empty() {
                    return Err(invalid());
                }
                *c.weekly.get_mut(i as usize - 1).ok_or_else(bad_index)? = day;
            }
            (P::EXCEPTION_SCHEDULE, None) => c.exceptions = decode_exceptions(value, MAX_EXCEPTIONS)?,
            (P::EXCEPTION_SCHEDULE, Some(i)) if i >= 1 && (i as usize) <= c.exceptions.len() => {
                let event: SpecialEvent = decode_one(value)?;
                check_exception(&event)?;
                c.exceptions[i as usize - 1] = event;
            }
            // The length of an array is not written here.
            (P::WEEKLY_SCHEDULE | P::EXCEPTION_SCHEDULE, Some(0)) => return Err(denied()),
            (P::WEEKLY_SCHEDULE | P::EXCEPTION_SCHEDULE, Some(_)) => return Err(bad_index()),
            (P::SCHEDULE_DEFAULT, _) => c.default = value.as_primitive().ok_or_else(invalid)?.clone(),
            (P::EFFECTIVE_PERIOD, _) => {
                let range: DateRange = decode_one(value)?;
                if !range.is_valid() {
                    return Err(out_of_range());
                }
                c.effective_period = range;
            }
            (P::LIST_OF_OBJECT_PROPERTY_REFERENCES, _) => {
                let references = decode_all::<DeviceObjectPropertyReference>(value, MAX_REFERENCES)?;
                if references.iter().any(|r| r.device.is_some_and(|d| d.object_type != ObjectType::DEVICE)) {
                    return Err(out_of_range());
                }
                if self.last_written.is_some() {
                    let gone = c.references.iter().filter(|r| !references.contains(r));
                    let priority = c.priority_for_writing;
                    self.relinquish.extend(gone.map(|r| (*r, priority)));
                }
                c.references = references;
                self.rewrite = true;
            }
            (P::PRIORITY_FOR_WRITING, _) => match value.as_primitive() {
                Some(Value::Unsigned(p @ 1..=16)) => {
                    let p = *p as u8;
                    if p != c.priority_for_writing && self.last_written.is_some() {
                        let old = c.priority_for_writing;
                        self.relinquish.extend(c.references.iter().map(|r| (*r, old)));
                    }
                    c.priority_for_writing = p;
                    self.rewrite = true;
                }
                Some(Value::Unsigned(_)) => return Err(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE)),
                _ => return Err(invalid()),
            },
            (P::OUT_OF_SERVICE, _) => match value.as_primitive() {
                Some(Value::Boolean(b)) => self.out_of_service = *b,
                _ => return Err(invalid()),
            },
            // Present_Value follows the schedule unless it is out of service.
            (P::PRESENT_VALUE, _) if self.out_of_service => {
                let v = value.as_primitive().ok_or_else(invalid)?;
                if *v != Value::Null && self.datatype().is_some_and(|tag| tag != v.app_tag()) {
                    return Err(invalid());
                }
                self.present_value = v.clone();
            }
            (P::PRESENT_VALUE, _) => return Err(denied()),
            _ if self.properties().contains(&p) => return Err(denied()),
            _ => return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)),
        }
        Ok(())
    }
}

/// An exception a device can apply: its time-values bounded, its date range
/// valid, its calendar reference a Calendar.
fn check_exception(e: &SpecialEvent) -> Result<(), BacnetError> {
    if e.time_values.len() > MAX_TIME_VALUES {
        return Err(no_space());
    }
    match &e.period {
        SpecialEventPeriod::CalendarEntry(entry) => check_entry(entry),
        SpecialEventPeriod::CalendarReference(id) if id.object_type != ObjectType::CALENDAR => Err(out_of_range()),
        SpecialEventPeriod::CalendarReference(_) => Ok(()),
    }
}

fn decode_exceptions(value: &AnyValue, max: usize) -> Result<Vec<SpecialEvent>, BacnetError> {
    let events = decode_all::<SpecialEvent>(value, max)?;
    events.iter().try_for_each(check_exception)?;
    Ok(events)
}

fn calendar_properties(c: &CalendarConfig) -> Vec<P> {
    let mut list =
        vec![P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE, P::PRESENT_VALUE, P::DATE_LIST, P::PROPERTY_LIST];
    if c.description.is_some() {
        list.push(P::DESCRIPTION);
    }
    list
}

impl Schedules {
    /// The properties ALL, REQUIRED or OPTIONAL names for `o`.
    pub fn expand(&self, o: ObjectIdentifier, which: P) -> Vec<P> {
        if let Some(s) = self.schedule(o) {
            let optional = [P::DESCRIPTION, P::WEEKLY_SCHEDULE, P::EXCEPTION_SCHEDULE];
            return crate::host_object::expand(&lock(&s).properties(), &optional, which);
        }
        let Some(c) = self.calendar(o) else { return Vec::new() };
        crate::host_object::expand(&calendar_properties(&lock(&c)), &[P::DESCRIPTION], which)
    }

    /// Read property `p` (element `index` of an array) of `o`; `today` is
    /// the device's local date (a Calendar's Present_Value).
    pub fn read(&self, o: ObjectIdentifier, p: P, index: Option<u32>, today: Date) -> Result<AnyValue, BacnetError> {
        if let Some(s) = self.schedule(o) {
            let s = lock(&s);
            if !s.properties().contains(&p) {
                return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
            }
            return s.read(o, p, index);
        }
        let Some(c) = self.calendar(o) else { return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)) };
        let c = lock(&c);
        let properties = calendar_properties(&c);
        if !properties.contains(&p) {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
        }
        if p == P::PROPERTY_LIST {
            return crate::host_object::property_list(&properties, index);
        }
        if index.is_some() {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        Ok(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(o).into(),
            P::OBJECT_NAME => text(&c.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::CALENDAR.0).into(),
            P::DESCRIPTION => text(c.description.as_deref().unwrap_or_default()),
            P::PRESENT_VALUE => Value::Boolean(c.includes(today)).into(),
            _ => encoded(|out| c.dates.iter().for_each(|e| e.encode(out)))?,
        })
    }

    /// Write property `p` of `o` (see the module's list of what is
    /// writable); a write that changes the schedule wakes its evaluation.
    pub fn write(&self, o: ObjectIdentifier, p: P, index: Option<u32>, value: &AnyValue) -> Result<(), BacnetError> {
        if let Some(s) = self.schedule(o) {
            lock(&s).write_property(p, index, value)?;
            tracing::info!(object = %o, property = %p, "Schedule written");
        } else {
            let Some(c) = self.calendar(o) else { return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)) };
            write_calendar(&mut lock(&c), p, index, value)?;
            tracing::info!(object = %o, "Calendar Date_List written");
        }
        self.wake.notify_one();
        Ok(())
    }
}

impl ScheduleObject {
    /// A WriteProperty of `p` (after checking the object has it).
    pub(super) fn write_property(&mut self, p: P, index: Option<u32>, value: &AnyValue) -> Result<(), BacnetError> {
        if !self.properties().contains(&p) {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
        }
        self.write(p, index, value)
    }
}

/// A WriteProperty of Calendar `c`'s property `p`: Date_List, where writable.
pub(super) fn write_calendar(
    c: &mut CalendarConfig,
    p: P,
    index: Option<u32>,
    value: &AnyValue,
) -> Result<(), BacnetError> {
    if !calendar_properties(c).contains(&p) {
        return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
    }
    if p != P::DATE_LIST || !c.writable {
        return Err(denied());
    }
    if index.is_some() {
        return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
    }
    let dates = decode_all::<CalendarEntry>(value, MAX_DATES)?;
    dates.iter().try_for_each(check_entry)?;
    c.dates = dates;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{CalendarConfig, ScheduleConfig};
    use super::*;
    use bacnet::Element;
    use bacnet::Time;
    use bacnet::codec::UNSPECIFIED;

    fn any_date() -> Date {
        Date { year: UNSPECIFIED, month: UNSPECIFIED, day: UNSPECIFIED, weekday: UNSPECIFIED }
    }
    fn config() -> ScheduleConfig {
        let tv = |h, v| TimeValue { time: Time { hour: h, minute: 0, second: 0, hundredths: 0 }, value: v };
        ScheduleConfig {
            instance: 1,
            name: "Occupancy".into(),
            description: None,
            effective_period: DateRange { start: any_date(), end: any_date() },
            weekly: vec![vec![tv(7, Value::Real(21.0)), tv(18, Value::Null)]; 7],
            exceptions: vec![],
            default: Value::Real(16.0),
            references: vec![],
            priority_for_writing: 16,
            writable: true,
        }
    }
    const SCHEDULE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::SCHEDULE, instance: 1 };
    const CALENDAR: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::CALENDAR, instance: 2 };
    fn today() -> Date {
        Date { year: 126, month: 12, day: 25, weekday: 5 }
    }

    #[test]
    fn the_weekly_schedule_reads_back_as_it_is_written_whole_and_by_day() {
        let s = Schedules::new(vec![config()], vec![]);
        let week = s.read(SCHEDULE, P::WEEKLY_SCHEDULE, None, today()).unwrap();
        assert_eq!(s.read(SCHEDULE, P::WEEKLY_SCHEDULE, Some(0), today()).unwrap(), Value::Unsigned(7).into());
        s.write(SCHEDULE, P::WEEKLY_SCHEDULE, None, &week).unwrap();
        assert_eq!(s.read(SCHEDULE, P::WEEKLY_SCHEDULE, None, today()).unwrap(), week);
        let sunday = s.read(SCHEDULE, P::WEEKLY_SCHEDULE, Some(1), today()).unwrap();
        let empty_day = AnyValue(vec![Element::Constructed { tag: 0, elements: vec![] }]);
        s.write(SCHEDULE, P::WEEKLY_SCHEDULE, Some(7), &empty_day).unwrap();
        assert_eq!(s.read(SCHEDULE, P::WEEKLY_SCHEDULE, Some(7), today()).unwrap(), empty_day);
        assert_eq!(s.read(SCHEDULE, P::WEEKLY_SCHEDULE, Some(1), today()).unwrap(), sunday);
        assert_eq!(s.write(SCHEDULE, P::WEEKLY_SCHEDULE, Some(8), &empty_day), Err(bad_index()));
        // Six days are not a week.
        let mut six = week.clone();
        six.0.pop();
        assert_eq!(s.write(SCHEDULE, P::WEEKLY_SCHEDULE, None, &six), Err(invalid()));
    }

    #[test]
    fn a_default_of_another_datatype_is_a_configuration_error() {
        let s = Schedules::new(vec![config()], vec![]);
        s.write(SCHEDULE, P::SCHEDULE_DEFAULT, None, &Value::Enumerated(1).into()).unwrap();
        let reliability = s.read(SCHEDULE, P::RELIABILITY, None, today()).unwrap();
        assert_eq!(reliability, Value::Enumerated(Reliability::CONFIGURATION_ERROR.0).into());
        let flags = s.read(SCHEDULE, P::STATUS_FLAGS, None, today()).unwrap();
        assert_eq!(flags, Value::BitString(BitString::from_bits(&[false, true, false, false])).into());
    }

    #[test]
    fn present_value_is_written_only_out_of_service_and_priority_is_1_to_16() {
        let s = Schedules::new(vec![config()], vec![]);
        let v: AnyValue = Value::Real(30.0).into();
        assert_eq!(s.write(SCHEDULE, P::PRESENT_VALUE, None, &v), Err(denied()));
        s.write(SCHEDULE, P::OUT_OF_SERVICE, None, &Value::Boolean(true).into()).unwrap();
        s.write(SCHEDULE, P::PRESENT_VALUE, None, &v).unwrap();
        assert_eq!(s.read(SCHEDULE, P::PRESENT_VALUE, None, today()).unwrap(), v);
        let p17: AnyValue = Value::Unsigned(17).into();
        assert_eq!(
            s.write(SCHEDULE, P::PRIORITY_FOR_WRITING, None, &p17),
            Err(error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE))
        );
    }

    #[test]
    fn a_calendar_is_true_on_the_dates_its_list_names() {
        let christmas = CalendarEntry::Date(Date { year: UNSPECIFIED, month: 12, day: 25, weekday: UNSPECIFIED });
        let c =
            CalendarConfig { instance: 2, name: "Holidays".into(), description: None, dates: vec![], writable: true };
        let s = Schedules::new(vec![], vec![c]);
        assert_eq!(s.read(CALENDAR, P::PRESENT_VALUE, None, today()).unwrap(), Value::Boolean(false).into());
        let list = encoded(|o| christmas.encode(o)).unwrap();
        s.write(CALENDAR, P::DATE_LIST, None, &list).unwrap();
        assert_eq!(s.read(CALENDAR, P::PRESENT_VALUE, None, today()).unwrap(), Value::Boolean(true).into());
        assert_eq!(s.read(CALENDAR, P::DATE_LIST, None, today()).unwrap(), list);
        let garbage = AnyValue(vec![Element::Application(Value::Unsigned(3))]);
        assert_eq!(s.write(CALENDAR, P::DATE_LIST, None, &garbage), Err(invalid()));
        assert_eq!(s.write(CALENDAR, P::PRESENT_VALUE, None, &Value::Boolean(true).into()), Err(denied()));
    }

    #[test]
    fn exception_schedule_elements_are_replaced_by_index_and_bounded() {
        let s = Schedules::new(vec![config()], vec![]);
        let event =
            SpecialEvent { period: SpecialEventPeriod::CalendarReference(CALENDAR), time_values: vec![], priority: 5 };
        let one = encoded(|o| event.encode(o)).unwrap();
        s.write(SCHEDULE, P::EXCEPTION_SCHEDULE, None, &one).unwrap();
        assert_eq!(s.read(SCHEDULE, P::EXCEPTION_SCHEDULE, Some(0), today()).unwrap(), Value::Unsigned(1).into());
        let other = SpecialEvent { priority: 6, ..event.clone() };
        s.write(SCHEDULE, P::EXCEPTION_SCHEDULE, Some(1), &encoded(|o| other.encode(o)).unwrap()).unwrap();
        assert_eq!(
            s.read(SCHEDULE, P::EXCEPTION_SCHEDULE, Some(1), today()).unwrap(),
            encoded(|o| other.encode(o)).unwrap()
        );
        assert_eq!(s.write(SCHEDULE, P::EXCEPTION_SCHEDULE, Some(2), &one), Err(bad_index()));
        let too_many = encoded(|o| (0..=MAX_EXCEPTIONS).for_each(|_| event.encode(o))).unwrap();
        assert_eq!(s.write(SCHEDULE, P::EXCEPTION_SCHEDULE, None, &too_many), Err(no_space()));
    }
}
