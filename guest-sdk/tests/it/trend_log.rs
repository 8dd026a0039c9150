//! Trend Log (Clause 12.25): polled records on the ticks, the ring buffer,
//! Stop_When_Full, Enable and Record_Count writes, Total_Record_Count and
//! its wrap, and the log's state across a hot swap.

use super::*;
use trellis_guest_sdk::bacnet::codec::{BitString, Date, Primitive, Reader, Time};
use trellis_guest_sdk::bacnet::{Element, ErrorClass, ErrorCode, Reliability};
use trellis_guest_sdk::errors::*;
use trellis_guest_sdk::store::MAX_BUFFER_SIZE;
use trellis_guest_sdk::{
    BacnetError, Config, DateTime, Instance, ObjectModel, PluginInfo, PropertyIdentifier as P, StoreError,
    TrendLogSpec, Write,
};

const LOG: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::TREND_LOG, instance: 1 };

/// Tuesday 2024-03-05 10:00:00 UTC.
const T0: u64 = 1_709_632_800_000;

fn at(seconds: u64) -> DateTime {
    DateTime::new(T0 + seconds * 1000, 0)
}

/// One decoded `BACnetLogRecord`.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    date: Date,
    time: Time,
    datum: Element,
    flags: Option<[bool; 4]>,
}

impl Record {
    fn real(&self) -> Option<f32> {
        match &self.datum {
            Element::Context { tag: 2, data } => Some(f32::decode_content(data, 0).unwrap()),
            _ => None,
        }
    }

    /// The log-status bits (log-disabled, buffer-purged, log-interrupted).
    fn status(&self) -> Option<[bool; 3]> {
        match &self.datum {
            Element::Context { tag: 0, data } => {
                let b = BitString::decode_content(data, 0).unwrap();
                Some([b.get(0), b.get(1), b.get(2)])
            }
            _ => None,
        }
    }
}

/// Log_Buffer, record by record.
fn buffer(s: &Store, log: ObjectIdentifier) -> Vec<Record> {
    let v = read(s, log, P::LOG_BUFFER).unwrap();
    let mut out = Vec::new();
    let mut it = v.0.into_iter().peekable();
    while let Some(e) = it.next() {
        let Element::Constructed { tag: 0, elements: ts } = e else { panic!("a record starts with [0]: {e:?}") };
        let [Element::Application(Value::Date(date)), Element::Application(Value::Time(time))] = ts.as_slice() else {
            panic!("timestamp {ts:?}")
        };
        let Some(Element::Constructed { tag: 1, elements: mut datum }) = it.next() else { panic!("no log-datum [1]") };
        assert_eq!(datum.len(), 1, "one choice: {datum:?}");
        let flags = it.next_if(|e| matches!(e, Element::Context { tag: 2, .. })).map(|e| {
            let Element::Context { data, .. } = e else { unreachable!() };
            let b = BitString::decode_content(&data, 0).unwrap();
            [b.get(0), b.get(1), b.get(2), b.get(3)]
        });
        out.push(Record { date: *date, time: *time, datum: datum.remove(0), flags });
    }
    out
}

fn unsigned(s: &Store, object: ObjectIdentifier, p: P) -> u64 {
    match read(s, object, p).unwrap().as_primitive() {
        Some(Value::Unsigned(n)) => *n,
        other => panic!("{p}: {other:?}"),
    }
}

fn boolean(s: &Store, object: ObjectIdentifier, p: P) -> bool {
    match read(s, object, p).unwrap().as_primitive() {
        Some(Value::Boolean(b)) => *b,
        other => panic!("{p}: {other:?}"),
    }
}

/// The test device with a Trend Log of the zone temperature every 60 s.
fn logged(spec: impl FnOnce(TrendLogSpec) -> TrendLogSpec) -> Store {
    let mut s = store();
    s.add_trend_log(spec(TrendLogSpec::new(1, "Zone Temp Log", ZONE_TEMP).interval_secs(60))).unwrap();
    s.take_objects_changed();
    s
}

#[test]
fn a_trend_log_has_the_required_properties_of_table_12_27() {
    let s = logged(|t| t.description("every minute"));
    let required: Vec<P> =
        s.expand(&PropertyRef::new(LOG, P::REQUIRED)).unwrap().into_iter().map(|r| r.property).collect();
    for p in [
        P::OBJECT_IDENTIFIER,
        P::OBJECT_NAME,
        P::OBJECT_TYPE,
        P::ENABLE,
        P::STOP_WHEN_FULL,
        P::BUFFER_SIZE,
        P::LOG_BUFFER,
        P::RECORD_COUNT,
        P::TOTAL_RECORD_COUNT,
        P::LOGGING_TYPE,
        P::STATUS_FLAGS,
        P::EVENT_STATE,
        P::PROPERTY_LIST,
    ] {
        assert!(required.contains(&p), "REQUIRED lacks {p}: {required:?}");
    }
    assert!(!required.contains(&P::DESCRIPTION) && !required.contains(&P::RELIABILITY));
    let list = s.property_list(LOG).unwrap();
    assert!(list.contains(&P::LOG_DEVICE_OBJECT_PROPERTY) && list.contains(&P::DESCRIPTION));
    assert!(!list.contains(&P::OBJECT_NAME) && !list.contains(&P::PROPERTY_LIST), "Clause 12.1.1.4.1");

    assert_eq!(read(&s, LOG, P::OBJECT_TYPE), Ok(prim(Value::Enumerated(20))));
    assert_eq!(read(&s, LOG, P::OBJECT_NAME), Ok(text("Zone Temp Log")));
    assert_eq!(read(&s, LOG, P::DESCRIPTION), Ok(text("every minute")));
    assert!(boolean(&s, LOG, P::ENABLE));
    assert!(!boolean(&s, LOG, P::STOP_WHEN_FULL));
    assert_eq!(unsigned(&s, LOG, P::LOG_INTERVAL), 6000, "centiseconds");
    assert_eq!(unsigned(&s, LOG, P::BUFFER_SIZE), 1000);
    assert_eq!((unsigned(&s, LOG, P::RECORD_COUNT), unsigned(&s, LOG, P::TOTAL_RECORD_COUNT)), (0, 0));
    assert_eq!(read(&s, LOG, P::LOGGING_TYPE), Ok(prim(Value::Enumerated(0))), "polled");
    assert_eq!(read(&s, LOG, P::EVENT_STATE), Ok(prim(Value::Enumerated(0))));
    assert_eq!(read(&s, LOG, P::LOG_BUFFER), Ok(AnyValue(vec![])));
    // BACnetDeviceObjectPropertyReference: [0] analog-input,1, [1] present-value (85).
    assert_eq!(
        read(&s, LOG, P::LOG_DEVICE_OBJECT_PROPERTY),
        Ok(AnyValue(vec![
            Element::Context { tag: 0, data: vec![0, 0, 0, 1] },
            Element::Context { tag: 1, data: vec![85] },
        ]))
    );
    assert_eq!(read(&s, LOG, P::PRESENT_VALUE), Err(UNKNOWN_PROPERTY));
    assert_eq!(read_index(&s, LOG, P::LOG_BUFFER, 1), Err(PROPERTY_IS_NOT_AN_ARRAY), "a list, not an array");
    assert_eq!(read_index(&s, LOG, P::LOG_DEVICE_OBJECT_PROPERTY, 0), Err(PROPERTY_IS_NOT_AN_ARRAY));
    // The log is an object of the device like any other.
    assert!(s.contains(LOG) && s.ids().any(|i| i == LOG));
    assert_eq!(s.find("Zone Temp Log"), Some(LOG));
    let list = read(&s, DEVICE, P::OBJECT_LIST).unwrap();
    assert_eq!(list.0.last(), Some(&Element::Application(Value::ObjectIdentifier(LOG))), "type 20 sorts last");
}

#[test]
fn a_record_is_taken_at_the_first_tick_and_then_every_log_interval_at_the_ticks_time() {
    let mut s = logged(|t| t);
    s.update(ZONE_TEMP, 20.5).unwrap();
    s.log_trends(at(0));
    for sec in [1, 30, 59] {
        s.log_trends(at(sec));
    }
    s.update(ZONE_TEMP, 21.0).unwrap();
    s.log_trends(at(60));
    s.log_trends(at(61));
    s.update(ZONE_TEMP, 21.5).unwrap();
    s.log_trends(at(121)); // due at 120: in phase with the first record
    s.log_trends(at(179));
    s.log_trends(at(180));
    let records = buffer(&s, LOG);
    let values: Vec<f32> = records.iter().map(|r| r.real().unwrap()).collect();
    assert_eq!(values, [20.5, 21.0, 21.5, 21.5]);
    // Stamped with the local date and time of the tick (here UTC).
    assert_eq!(records[0].date, Date { year: 124, month: 3, day: 5, weekday: 2 });
    assert_eq!(records[0].time, Time { hour: 10, minute: 0, second: 0, hundredths: 0 });
    assert_eq!(records[2].time, Time { hour: 10, minute: 2, second: 1, hundredths: 0 });
    assert_eq!(records[3].time, Time { hour: 10, minute: 3, second: 0, hundredths: 0 });
    assert_eq!(records[0].flags, Some([false; 4]), "the logged object's Status_Flags go with each record");
    assert_eq!((unsigned(&s, LOG, P::RECORD_COUNT), unsigned(&s, LOG, P::TOTAL_RECORD_COUNT)), (4, 4));
    assert_eq!(s.record_count(LOG), Some(4));
    assert_eq!(s.take_changes(), [ZONE_TEMP], "logging reports no change of its own");
}

#[test]
fn missed_intervals_are_skipped_and_a_clock_set_back_restarts_the_schedule() {
    let mut s = logged(|t| t);
    s.log_trends(at(0));
    s.log_trends(at(600)); // ten intervals late: one record, the next a full interval later
    s.log_trends(at(630));
    s.log_trends(at(660));
    s.log_trends(at(10)); // the clock went back by ten minutes
    let times: Vec<u8> = buffer(&s, LOG).iter().map(|r| r.time.minute).collect();
    assert_eq!(times, [0, 10, 11, 0]);
}

#[test]
fn a_full_buffer_drops_its_oldest_record_and_total_record_count_goes_on() {
    let mut s = logged(|t| t.buffer_size(3));
    for i in 0..5u64 {
        s.update(ZONE_TEMP, i as f32).unwrap();
        s.log_trends(at(i * 60));
    }
    let values: Vec<f32> = buffer(&s, LOG).iter().map(|r| r.real().unwrap()).collect();
    assert_eq!(values, [2.0, 3.0, 4.0]);
    assert_eq!((unsigned(&s, LOG, P::RECORD_COUNT), unsigned(&s, LOG, P::TOTAL_RECORD_COUNT)), (3, 5));
    assert!(boolean(&s, LOG, P::ENABLE));
}

#[test]
fn stop_when_full_disables_the_log_and_it_cannot_be_enabled_until_cleared() {
    let mut s = logged(|t| t.buffer_size(2).stop_when_full(true));
    for i in 0..4u64 {
        s.log_trends(at(i * 60));
    }
    assert_eq!(unsigned(&s, LOG, P::RECORD_COUNT), 2);
    assert!(!boolean(&s, LOG, P::ENABLE), "Enable is FALSE once the buffer is full");
    let enable = Write::new(LOG, P::ENABLE, Value::Boolean(true));
    assert_eq!(s.write(&enable), Err(LOG_BUFFER_FULL));
    // Record_Count := 0 empties the buffer, leaving a buffer-purged status record.
    s.write(&Write::new(LOG, P::RECORD_COUNT, Value::Unsigned(0))).unwrap();
    let records = buffer(&s, LOG);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status(), Some([true, true, false]), "purged while disabled");
    assert_eq!(records[0].flags, None);
    assert_eq!(unsigned(&s, LOG, P::TOTAL_RECORD_COUNT), 3, "the purge record counts; the count is not reset");
    s.write(&enable).unwrap();
    s.log_trends(at(300));
    let records = buffer(&s, LOG);
    assert_eq!(records[1].status(), Some([false, false, false]), "enabled: a log-status record");
    assert_eq!(records.len(), 2, "full again");
    assert!(!boolean(&s, LOG, P::ENABLE));
}

#[test]
fn disabling_stops_the_records_and_enabling_logs_at_the_next_tick() {
    let mut s = logged(|t| t);
    s.log_trends(at(0));
    s.write(&Write::new(LOG, P::ENABLE, Value::Boolean(false))).unwrap();
    s.write(&Write::new(LOG, P::ENABLE, Value::Boolean(false))).unwrap(); // no change, no record
    for i in 1..5 {
        s.log_trends(at(i * 60));
    }
    s.write(&Write::new(LOG, P::ENABLE, Value::Boolean(true))).unwrap();
    s.log_trends(at(301));
    let records = buffer(&s, LOG);
    let kinds: Vec<Option<[bool; 3]>> = records.iter().map(Record::status).collect();
    assert_eq!(kinds, [None, Some([true, false, false]), Some([false, false, false]), None]);
    assert_eq!(records[3].time.second, 1, "at the first tick after enabling");
    assert_eq!(unsigned(&s, LOG, P::TOTAL_RECORD_COUNT), 4);
}

#[test]
fn writes_the_standard_allows_and_the_errors_of_the_rest() {
    let mut s = logged(|t| t);
    let w = |p: P, v: Value| Write::new(LOG, p, v);
    assert_eq!(s.write(&w(P::RECORD_COUNT, Value::Unsigned(5))), Err(VALUE_OUT_OF_RANGE), "only 0 may be written");
    assert_eq!(s.write(&w(P::RECORD_COUNT, Value::Real(0.0))), Err(INVALID_DATA_TYPE));
    assert_eq!(s.write(&w(P::ENABLE, Value::Unsigned(1))), Err(INVALID_DATA_TYPE));
    for p in [P::BUFFER_SIZE, P::LOG_BUFFER, P::TOTAL_RECORD_COUNT, P::LOG_INTERVAL, P::STATUS_FLAGS] {
        assert_eq!(s.write(&w(p, Value::Unsigned(1))), Err(WRITE_ACCESS_DENIED), "{p}");
    }
    assert_eq!(s.write(&w(P::PRESENT_VALUE, Value::Real(1.0))), Err(UNKNOWN_PROPERTY));
    let mut indexed = w(P::ENABLE, Value::Boolean(true));
    indexed.target.array_index = Some(1);
    assert_eq!(s.write(&indexed), Err(PROPERTY_IS_NOT_AN_ARRAY));
    s.write(&w(P::OBJECT_NAME, trellis_guest_sdk::value::text("Zone Log"))).unwrap();
    assert_eq!(s.find("Zone Log"), Some(LOG));
    assert_eq!(s.write(&w(P::OBJECT_NAME, trellis_guest_sdk::value::text("Valve"))), Err(DUPLICATE_NAME));
    s.write(&w(P::DESCRIPTION, trellis_guest_sdk::value::text("zone 1"))).unwrap();
    assert_eq!(read(&s, LOG, P::DESCRIPTION), Ok(text("zone 1")));
    assert!(s.take_objects_changed(), "a rename is reported");
}

#[test]
fn each_kind_of_value_is_logged_as_its_log_datum_choice() {
    let mut s = store();
    let specs = [
        TrendLogSpec::new(1, "Occupancy Log", OCCUPANCY),
        TrendLogSpec::new(2, "Mode Log", MODE),
        TrendLogSpec::new(3, "Flags Log", ZONE_TEMP).property(P::STATUS_FLAGS),
        TrendLogSpec::new(4, "Name Log", ZONE_TEMP).property(P::OBJECT_NAME),
        TrendLogSpec::new(5, "Missing Log", ZONE_TEMP).property(P::PRIORITY_ARRAY),
        TrendLogSpec::new(6, "Description Log", ZONE_TEMP).property(P::DESCRIPTION),
        TrendLogSpec::new(7, "Slot Log", SETPOINT).property(P::PRIORITY_ARRAY).array_index(16),
        TrendLogSpec::new(8, "Device Name Log", DEVICE).property(P::OBJECT_NAME),
    ];
    for spec in specs {
        s.add_trend_log(spec).unwrap();
    }
    s.set_description(ZONE_TEMP, &"x".repeat(200)).unwrap();
    s.log_trends(at(0));
    let log = |i: u32| buffer(&s, id(ObjectType::TREND_LOG, i)).remove(0);
    assert_eq!(log(1).datum, Element::Context { tag: 3, data: vec![0] }, "binary: enumerated-value");
    assert_eq!(log(2).datum, Element::Context { tag: 4, data: vec![4] }, "multi-state: unsigned-value");
    assert_eq!(log(3).datum, Element::Context { tag: 6, data: vec![4, 0] }, "bitstring-value");
    let name = Element::Application(trellis_guest_sdk::value::text("Zone Temp"));
    assert_eq!(log(4).datum, Element::Constructed { tag: 10, elements: vec![name] }, "any-value");
    let failure = |class: ErrorClass, code: ErrorCode| Element::Constructed {
        tag: 8,
        elements: vec![
            Element::Application(Value::Enumerated(class.0)),
            Element::Application(Value::Enumerated(code.0)),
        ],
    };
    assert_eq!(log(5).datum, failure(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY), "a failed read");
    assert_eq!(log(6).datum, failure(ErrorClass::PROPERTY, ErrorCode::VALUE_TOO_LONG), "200 octets of text");
    assert_eq!(log(7).datum, Element::Context { tag: 7, data: vec![] }, "null-value: an empty slot");
    assert_eq!(log(8).flags, None, "the Device object has no Status_Flags");
}

#[test]
fn a_spec_the_store_cannot_serve_is_refused() {
    let mut s = store();
    let spec = || TrendLogSpec::new(1, "Log", ZONE_TEMP);
    let oor = Err(StoreError::OutOfRange { object: LOG });
    assert_eq!(s.add_trend_log(spec().buffer_size(0)), oor);
    assert_eq!(s.add_trend_log(spec().buffer_size(MAX_BUFFER_SIZE + 1)), oor);
    assert_eq!(s.add_trend_log(spec().log_interval(0)), oor);
    assert_eq!(s.add_trend_log(spec().property(P::ALL)), oor);
    let nowhere = id(ObjectType::ANALOG_INPUT, 99);
    assert_eq!(s.add_trend_log(TrendLogSpec::new(1, "Log", nowhere)), Err(StoreError::UnknownObject(nowhere)));
    assert_eq!(
        s.add_trend_log(TrendLogSpec::new(1, "Zone Temp", ZONE_TEMP)),
        Err(StoreError::DuplicateName("Zone Temp".into()))
    );
    assert_eq!(
        s.add_trend_log(TrendLogSpec::new(4_194_303, "Log", ZONE_TEMP)),
        Err(StoreError::InvalidInstance(4_194_303))
    );
    s.add_trend_log(spec().buffer_size(MAX_BUFFER_SIZE)).unwrap();
    assert_eq!(s.add_trend_log(spec()), Err(StoreError::DuplicateObject(LOG)));
    assert!(s.remove(LOG) && !s.contains(LOG) && s.find("Log").is_none());
}

#[test]
fn the_fault_flag_follows_reliability() {
    let mut s = logged(|t| t);
    s.set_reliability(LOG, Reliability::CONFIGURATION_ERROR).unwrap();
    assert_eq!(
        read(&s, LOG, P::STATUS_FLAGS),
        Ok(prim(Value::BitString(BitString::from_bits(&[false, true, false, false]))))
    );
    assert_eq!(read(&s, LOG, P::RELIABILITY), Ok(prim(Value::Enumerated(Reliability::CONFIGURATION_ERROR.0))));
}

/// A model with a zone sensor and its log, and a proprietary property
/// (512 of analog-value,1) served by its read hook and logged too.
struct Logger;

const HOOKED: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::TREND_LOG, instance: 2 };

impl ObjectModel for Logger {
    fn describe() -> PluginInfo {
        PluginInfo::new("logger", "1.0.0", "a logged zone")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        s.add(ObjectSpec::analog_input(1, "Zone").value(20.0))?;
        s.add(ObjectSpec::analog_value(1, "Spare"))?;
        s.add_trend_log(TrendLogSpec::new(1, "Zone Log", ZONE_TEMP).interval_secs(60).buffer_size(5))?;
        s.add_trend_log(TrendLogSpec::new(2, "Hook Log", SETPOINT).property(P(512)).log_interval(100))?;
        Ok(Logger)
    }
    fn tick(&mut self, s: &mut Store, now: DateTime) {
        let _ = s.update(ZONE_TEMP, (now.unix_ms / 1000 % 100) as f32);
    }
    fn read_property(&self, s: &Store, target: &PropertyRef) -> Result<AnyValue, BacnetError> {
        if target.property == P(512) {
            return Ok(Value::Unsigned(7).into());
        }
        s.read(target)
    }
}

/// A later version with a smaller buffer.
struct SmallerLogger;

impl ObjectModel for SmallerLogger {
    fn describe() -> PluginInfo {
        PluginInfo::new("logger", "2.0.0", "a smaller log")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        s.add(ObjectSpec::analog_input(1, "Zone").value(20.0))?;
        s.add_trend_log(TrendLogSpec::new(1, "Zone Log", ZONE_TEMP).interval_secs(60).buffer_size(2))?;
        Ok(SmallerLogger)
    }
}

/// A version without trend logs.
struct NoLogs;

impl ObjectModel for NoLogs {
    fn describe() -> PluginInfo {
        PluginInfo::new("logger", "0.9.0", "before logs")
    }
    fn new(s: &mut Store, _: &Config) -> Result<Self, String> {
        s.add(ObjectSpec::analog_input(1, "Zone").value(20.0))?;
        Ok(NoLogs)
    }
}

#[test]
fn an_instance_logs_after_the_models_tick_through_its_read_hook() {
    let mut i = Instance::<Logger>::start(&Config::none()).unwrap();
    i.tick(at(42));
    let records = buffer(i.store(), LOG);
    assert_eq!(records[0].real(), Some(42.0), "the value the model's tick just set");
    assert_eq!(buffer(i.store(), HOOKED)[0].datum, Element::Context { tag: 4, data: vec![7] }, "from the read hook");
    let all = i.read(&[PropertyRef::new(LOG, P::ALL)]);
    assert!(all[0].iter().all(|(_, r)| r.is_ok()), "{:?}", all[0]);
    assert!(all[0].iter().any(|(r, _)| r.property == P::LOG_BUFFER));
}

#[test]
fn the_buffer_enable_and_sequence_numbers_survive_a_hot_swap() {
    let mut old = Instance::<Logger>::start(&Config::none()).unwrap();
    for m in 0..4 {
        old.tick(at(m * 60));
    }
    old.write(&[Write::new(LOG, P::OBJECT_NAME, trellis_guest_sdk::value::text("Renamed Log"))])[0].unwrap();
    old.write(&[Write::new(HOOKED, P::ENABLE, Value::Boolean(false))])[0].unwrap();
    let state = old.export_state();
    assert_eq!(state, old.export_state(), "deterministic");

    let mut new = Instance::<Logger>::start(&Config::none()).unwrap();
    new.import_state(&state).unwrap();
    assert_eq!(buffer(new.store(), LOG), buffer(old.store(), LOG));
    assert_eq!(unsigned(new.store(), LOG, P::TOTAL_RECORD_COUNT), 4);
    assert_eq!(new.store().name(LOG), Some("Renamed Log"));
    assert!(!boolean(new.store(), HOOKED, P::ENABLE));
    // The schedule came along: the next record is due at 240 s, not at once.
    new.tick(at(200));
    assert_eq!(unsigned(new.store(), LOG, P::RECORD_COUNT), 4);
    new.tick(at(240));
    assert_eq!(
        (unsigned(new.store(), LOG, P::RECORD_COUNT), unsigned(new.store(), LOG, P::TOTAL_RECORD_COUNT)),
        (5, 5)
    );
    assert_eq!(new.export_state(), {
        let mut again = Instance::<Logger>::start(&Config::none()).unwrap();
        again.import_state(&new.export_state()).unwrap();
        again.export_state()
    });

    let mut smaller = Instance::<SmallerLogger>::start(&Config::none()).unwrap();
    smaller.import_state(&state).unwrap();
    let kept = buffer(smaller.store(), LOG);
    assert_eq!(kept, buffer(old.store(), LOG)[2..], "the newest records fit the new Buffer_Size");
    assert_eq!(unsigned(smaller.store(), LOG, P::TOTAL_RECORD_COUNT), 4);

    // A version without logs takes the rest of the state; one with logs
    // takes a state without them with its logs empty.
    let mut before = Instance::<NoLogs>::start(&Config::none()).unwrap();
    before.import_state(&state).unwrap();
    let mut after = Instance::<Logger>::start(&Config::none()).unwrap();
    after.import_state(&before.export_state()).unwrap();
    assert_eq!(unsigned(after.store(), LOG, P::RECORD_COUNT), 0);
}

/// Rewrite Total_Record_Count in an exported state (the `[3]` record).
fn with_total_record_count(state: &[u8], total: u32) -> Vec<u8> {
    let mut r = Reader::new(&state[5..]);
    let mut body = AnyValue::decode(&mut r).unwrap();
    for e in &mut body.0 {
        if let Element::Constructed { tag: 3, elements } = e
            && elements[0] == Element::Application(Value::ObjectIdentifier(LOG))
        {
            elements[2] = Element::Application(Value::Unsigned(total.into()));
        }
    }
    let mut out = state[..5].to_vec();
    body.encode(&mut out);
    out
}

#[test]
fn total_record_count_wraps_from_its_maximum_to_one() {
    let mut i = Instance::<Logger>::start(&Config::none()).unwrap();
    i.tick(at(0));
    let state = with_total_record_count(&i.export_state(), u32::MAX - 1);
    let mut i = Instance::<Logger>::start(&Config::none()).unwrap();
    i.import_state(&state).unwrap();
    assert_eq!(unsigned(i.store(), LOG, P::TOTAL_RECORD_COUNT), u64::from(u32::MAX - 1));
    i.tick(at(60));
    assert_eq!(unsigned(i.store(), LOG, P::TOTAL_RECORD_COUNT), u64::from(u32::MAX));
    i.tick(at(120));
    assert_eq!(unsigned(i.store(), LOG, P::TOTAL_RECORD_COUNT), 1, "2^32 - 1 is followed by 1, never 0");
    assert_eq!(unsigned(i.store(), LOG, P::RECORD_COUNT), 3);
}

#[test]
fn a_trend_log_record_that_does_not_decode_refuses_the_state() {
    let i = Instance::<Logger>::start(&Config::none()).unwrap();
    let mut state = i.export_state();
    // A [3] record holding one Null.
    state.extend_from_slice(&[0x3e, 0x00, 0x3f]);
    let mut next = Instance::<Logger>::start(&Config::none()).unwrap();
    let e = next.import_state(&state).unwrap_err();
    assert!(e.contains("trend log"), "{e}");
}
