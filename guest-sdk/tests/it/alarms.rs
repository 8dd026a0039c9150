//! Intrinsic reporting (Clause 13.2) as the store keeps it: transitions by
//! the algorithms, Time_Delay at the ticks, Event_Enable, Acked_Transitions,
//! Event_Time_Stamps, fault first, and the properties a client reads and
//! writes.

use super::*;
use trellis_guest_sdk::bacnet::services::{NotificationParameters, ServiceCodec};
use trellis_guest_sdk::bacnet::{BitString, Element, EventState, EventType, Reliability};
use trellis_guest_sdk::{AlarmSpec, DateTime, EventReport, PropertyIdentifier as P, StoreError, Write};

const ZONE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 7 };
const FILTER: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::BINARY_INPUT, instance: 7 };
const PUMP: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::MULTI_STATE_INPUT, instance: 7 };

/// 2026-12-03 12:00:00 UTC plus `s` seconds.
fn at(s: u64) -> DateTime {
    DateTime::new(1_796_299_200_000 + s * 1000, 0)
}

fn alarmed() -> Store {
    let mut s = store();
    s.add(ObjectSpec::analog_input(7, "Zone 7 Temperature").value(21.0).alarm(
        AlarmSpec::out_of_range(16.0, 28.0, 1.0).notification_class(3).time_delay(10).message_texts(
            "too hot or cold",
            "sensor fault",
            "back to normal",
        ),
    ))
    .unwrap();
    s.add(ObjectSpec::binary_input(7, "Filter Dirty").alarm(AlarmSpec::alarm_value(true).as_event())).unwrap();
    s.add(
        ObjectSpec::multi_state_input(7, "Pump", ["Off", "On", "Tripped", "Lost"])
            .alarm(AlarmSpec::alarm_values([3]).fault_values([4]).event_enable(true, true, false)),
    )
    .unwrap();
    settle(&mut s, at(0));
    s
}

/// The end of a call: detection, then the changes.
fn settle(s: &mut Store, now: DateTime) -> Vec<EventReport> {
    s.detect_events(now);
    s.take_changes();
    s.take_events()
}

fn bits(s: &Store, o: ObjectIdentifier, p: P) -> Vec<bool> {
    match read(s, o, p).unwrap().as_primitive() {
        Some(Value::BitString(b)) => (0..b.len()).map(|i| b.get(i)).collect(),
        other => panic!("{p} of {o}: {other:?}"),
    }
}

fn state(s: &Store, o: ObjectIdentifier) -> EventState {
    match read(s, o, P::EVENT_STATE).unwrap().as_primitive() {
        Some(Value::Enumerated(n)) => EventState(*n),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_value_beyond_high_limit_alarms_only_after_time_delay_and_comes_back_inside_the_deadband() {
    let mut s = alarmed();
    s.update(ZONE, 29.0).unwrap();
    assert_eq!(settle(&mut s, at(1)), [], "Time_Delay 10 s has not run");
    assert_eq!(state(&s, ZONE), EventState::NORMAL);
    s.detect_events(at(5));
    assert_eq!(s.take_events(), [], "still running at the tick 4 s later");

    s.detect_events(at(11));
    let events = s.take_events();
    assert_eq!(events.len(), 1, "due at the tick after the delay");
    let e = &events[0];
    assert_eq!((e.object, e.from, e.to), (ZONE, EventState::NORMAL, EventState::HIGH_LIMIT));
    assert_eq!((e.event_type, e.notification_class), (EventType::OUT_OF_RANGE, 3));
    assert_eq!(e.message_text.as_deref(), Some("too hot or cold"));
    match NotificationParameters::decode(&e.event_values).unwrap() {
        NotificationParameters::OutOfRange { exceeding_value, status_flags, deadband, exceeded_limit } => {
            assert_eq!((exceeding_value, deadband, exceeded_limit), (29.0, 1.0, 28.0));
            assert_eq!(status_flags, BitString::from_bits(&[true, false, false, false]), "IN_ALARM");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(state(&s, ZONE), EventState::HIGH_LIMIT);
    assert_eq!(s.take_changes(), [ZONE], "Status_Flags changed: COV subscribers hear of it");

    // 27.5 is below High_Limit but inside the deadband: still HIGH_LIMIT.
    s.update(ZONE, 27.5).unwrap();
    assert_eq!(settle(&mut s, at(30)), []);
    s.update(ZONE, 26.0).unwrap();
    settle(&mut s, at(31));
    s.detect_events(at(41));
    let back = s.take_events();
    assert_eq!(back.len(), 1);
    assert_eq!((back[0].from, back[0].to), (EventState::HIGH_LIMIT, EventState::NORMAL));
    assert_eq!(back[0].message_text.as_deref(), Some("back to normal"));
}

#[test]
fn a_condition_that_breaks_during_its_delay_is_never_reported() {
    let mut s = alarmed();
    s.update(ZONE, 15.0).unwrap();
    settle(&mut s, at(1));
    s.update(ZONE, 20.0).unwrap();
    assert_eq!(settle(&mut s, at(4)), []);
    s.detect_events(at(30));
    assert_eq!(s.take_events(), []);
    assert_eq!(state(&s, ZONE), EventState::NORMAL);
}

#[test]
fn transitions_are_time_stamped_and_wait_for_an_acknowledgment_when_the_class_says_so() {
    let mut s = alarmed();
    s.update(FILTER, true).unwrap();
    let events = settle(&mut s, at(60));
    assert_eq!(events.len(), 1);
    assert_eq!(bits(&s, FILTER, P::ACKED_TRANSITIONS), [true, true, true], "before the host's answer");
    s.set_ack_required(&events, &[true]);
    assert_eq!(bits(&s, FILTER, P::ACKED_TRANSITIONS), [false, true, true]);

    let stamps = read(&s, FILTER, P::EVENT_TIME_STAMPS).unwrap();
    assert_eq!(stamps.0.len(), 3);
    let offnormal = read_index(&s, FILTER, P::EVENT_TIME_STAMPS, 1).unwrap();
    let (date, time) = (at(60).local_date(), at(60).local_time());
    assert_eq!(
        offnormal.0,
        [Element::Constructed {
            tag: 2,
            elements: vec![Element::Application(Value::Date(date)), Element::Application(Value::Time(time))]
        }]
    );
    assert!(
        matches!(&read_index(&s, FILTER, P::EVENT_TIME_STAMPS, 3).unwrap().0[..],
            [Element::Constructed { tag: 2, elements }] if elements[0] == Element::Application(Value::Date(trellis_guest_sdk::bacnet::Date { year: 255, month: 255, day: 255, weekday: 255 }))),
        "to-normal has not happened: unspecified"
    );

    s.acknowledge(FILTER, 0).unwrap();
    assert_eq!(bits(&s, FILTER, P::ACKED_TRANSITIONS), [true, true, true]);
    assert_eq!(
        s.acknowledge(ZONE_TEMP, 0).unwrap_err().code,
        trellis_guest_sdk::bacnet::ErrorCode::NO_ALARM_CONFIGURED
    );
}

#[test]
fn a_binary_change_of_state_reports_the_new_state_as_an_event() {
    let mut s = alarmed();
    s.update(FILTER, true).unwrap();
    let e = settle(&mut s, at(1)).remove(0);
    assert_eq!((e.event_type, e.notify_type.0), (EventType::CHANGE_OF_STATE, 1), "Notify_Type EVENT");
    match NotificationParameters::decode(&e.event_values).unwrap() {
        NotificationParameters::ChangeOfState { new_state, .. } => {
            assert_eq!((new_state.choice, new_state.value), (1, 1))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fault_value_is_fault_first_and_its_transitions_are_change_of_reliability() {
    let mut s = alarmed();
    s.update(PUMP, 4u32).unwrap();
    let events = settle(&mut s, at(1));
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].to, events[0].event_type), (EventState::FAULT, EventType::CHANGE_OF_RELIABILITY));
    match NotificationParameters::decode(&events[0].event_values).unwrap() {
        NotificationParameters::ChangeOfReliability { reliability, .. } => {
            assert_eq!(reliability, Reliability::MULTI_STATE_FAULT)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read(&s, PUMP, P::RELIABILITY).unwrap(), prim(Value::Enumerated(Reliability::MULTI_STATE_FAULT.0)));
    assert_eq!(bits(&s, PUMP, P::STATUS_FLAGS)[..2], [true, true], "IN_ALARM and FAULT");

    // Back to "On": FAULT → NORMAL is not enabled (Event_Enable F,T,F): no
    // notification, but the time stamp and the state move.
    s.update(PUMP, 2u32).unwrap();
    assert_eq!(settle(&mut s, at(2)), []);
    assert_eq!(state(&s, PUMP), EventState::NORMAL);
    assert_eq!(bits(&s, PUMP, P::ACKED_TRANSITIONS), [true, true, true], "nothing to acknowledge");
}

#[test]
fn a_client_rewrites_the_limits_and_the_new_ones_apply_at_once() {
    let mut s = alarmed();
    s.update(ZONE, 25.0).unwrap();
    settle(&mut s, at(1));
    s.write(&Write::new(ZONE, P::HIGH_LIMIT, Value::Real(24.0))).unwrap();
    s.write(&Write::new(ZONE, P::TIME_DELAY, Value::Unsigned(0))).unwrap();
    let events = settle(&mut s, at(2));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].to, EventState::HIGH_LIMIT);

    let code = |r: Result<(), trellis_guest_sdk::BacnetError>| r.unwrap_err().code.0;
    assert_eq!(code(s.write(&Write::new(ZONE, P::DEADBAND, Value::Real(-1.0)))), 37, "value-out-of-range");
    assert_eq!(code(s.write(&Write::new(ZONE, P::ACKED_TRANSITIONS, Value::Boolean(true)))), 40, "write-access-denied");
    assert_eq!(code(s.write(&Write::new(ZONE, P::NOTIFY_TYPE, Value::Enumerated(2)))), 37);
    assert_eq!(
        code(s.write(&Write::new(ZONE_TEMP, P::HIGH_LIMIT, Value::Real(1.0)))),
        32,
        "no reporting: unknown-property"
    );

    s.write(&Write::new(ZONE, P::EVENT_DETECTION_ENABLE, Value::Boolean(false))).unwrap();
    assert_eq!(settle(&mut s, at(3)), [], "detection off: NORMAL, nothing reported");
    assert_eq!(state(&s, ZONE), EventState::NORMAL);
}

#[test]
fn the_alarm_properties_are_listed_and_read_with_their_datatypes() {
    let s = alarmed();
    let list = s.property_list(ZONE).unwrap();
    for p in [
        P::HIGH_LIMIT,
        P::LOW_LIMIT,
        P::DEADBAND,
        P::LIMIT_ENABLE,
        P::EVENT_ENABLE,
        P::ACKED_TRANSITIONS,
        P::NOTIFY_TYPE,
        P::EVENT_TIME_STAMPS,
        P::EVENT_DETECTION_ENABLE,
        P::NOTIFICATION_CLASS,
        P::TIME_DELAY,
    ] {
        assert!(list.contains(&p), "{p} in Property_List");
    }
    assert!(!s.property_list(ZONE_TEMP).unwrap().contains(&P::HIGH_LIMIT), "an object without reporting");
    assert!(s.property_list(PUMP).unwrap().contains(&P::FAULT_VALUES));
    assert_eq!(read(&s, ZONE, P::LIMIT_ENABLE).unwrap(), prim(Value::BitString(BitString::from_bits(&[true, true]))));
    assert_eq!(read(&s, ZONE, P::NOTIFICATION_CLASS).unwrap(), prim(Value::Unsigned(3)));
    assert_eq!(read(&s, FILTER, P::ALARM_VALUE).unwrap(), prim(Value::Enumerated(1)));
    assert_eq!(read(&s, PUMP, P::ALARM_VALUES).unwrap(), AnyValue(vec![Element::Application(Value::Unsigned(3))]));
    assert_eq!(
        read_index(&s, ZONE, P::EVENT_MESSAGE_TEXTS_CONFIG, 2).unwrap(),
        prim(trellis_guest_sdk::value::text("sensor fault"))
    );
    assert_eq!(read_index(&s, ZONE, P::EVENT_TIME_STAMPS, 0).unwrap(), prim(Value::Unsigned(3)));
}

#[test]
fn an_alarm_spec_that_does_not_fit_the_object_is_refused() {
    let mut s = store();
    let bad = [
        ObjectSpec::binary_input(9, "a").alarm(AlarmSpec::out_of_range(0.0, 1.0, 0.0)),
        ObjectSpec::analog_input(9, "b").alarm(AlarmSpec::out_of_range(0.0, f32::NAN, 0.0)),
        ObjectSpec::binary_output(9, "c").alarm(AlarmSpec::alarm_value(true)),
    ];
    for spec in bad {
        let id = spec.id();
        assert_eq!(s.add(spec), Err(StoreError::AlarmDoesNotFit(id)));
    }
    let mut s = alarmed();
    assert_eq!(s.set_event_state(ZONE, EventState::FAULT), Err(StoreError::EventStateIsReported(ZONE)));
}

#[test]
fn the_alarm_state_and_written_limits_survive_a_hot_swap() {
    use trellis_guest_sdk::{Config, Instance, ObjectModel, PluginInfo};
    struct Zone;
    impl ObjectModel for Zone {
        fn describe() -> PluginInfo {
            PluginInfo::new("zone", "1", "")
        }
        fn new(store: &mut Store, _: &Config) -> Result<Self, String> {
            store.add(ObjectSpec::analog_value(7, "Zone").alarm(AlarmSpec::out_of_range(16.0, 28.0, 1.0)))?;
            Ok(Zone)
        }
    }
    let av7 = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 7 };
    let mut a = Instance::<Zone>::start(&Config::none()).unwrap();
    a.write(&[Write::new(av7, P::HIGH_LIMIT, Value::Real(25.0)), Write::new(av7, P::PRESENT_VALUE, Value::Real(26.0))]);
    let n = a.take_notifications();
    assert_eq!(n.events.len(), 1, "{n:?}");
    a.store_mut().set_ack_required(&n.events, &[true]);

    let mut b = Instance::<Zone>::start(&Config::none()).unwrap();
    b.import_state(&a.export_state()).unwrap();
    assert_eq!(state(b.store(), av7), EventState::HIGH_LIMIT);
    assert_eq!(bits(b.store(), av7, P::ACKED_TRANSITIONS), [false, true, true]);
    assert_eq!(read(b.store(), av7, P::HIGH_LIMIT).unwrap(), prim(Value::Real(25.0)));
    assert_eq!(
        read(b.store(), av7, P::EVENT_TIME_STAMPS).unwrap(),
        read(a.store(), av7, P::EVENT_TIME_STAMPS).unwrap()
    );
    assert!(b.take_notifications().events.is_empty(), "the taken-over alarm is not reported again");
}

#[test]
fn an_object_that_starts_beyond_its_limit_alarms_at_the_first_call() {
    use trellis_guest_sdk::{Config, Instance, ObjectModel, PluginInfo};
    struct Hot;
    impl ObjectModel for Hot {
        fn describe() -> PluginInfo {
            PluginInfo::new("hot", "1", "")
        }
        fn new(store: &mut Store, _: &Config) -> Result<Self, String> {
            store
                .add(ObjectSpec::analog_input(7, "Hot").value(40.0).alarm(AlarmSpec::out_of_range(16.0, 28.0, 1.0)))?;
            Ok(Hot)
        }
    }
    let mut i = Instance::<Hot>::start(&Config::none()).unwrap();
    let n = i.take_notifications();
    assert_eq!(n.events.len(), 1, "{n:?}");
    assert_eq!(n.events[0].to, EventState::HIGH_LIMIT);
    assert!(i.take_notifications().events.is_empty(), "once");
}

#[test]
fn when_a_fault_clears_a_value_still_beyond_its_limit_alarms_at_once() {
    let mut s = alarmed();
    s.write(&Write::new(ZONE, P::TIME_DELAY, Value::Unsigned(0))).unwrap();
    s.set_reliability(ZONE, Reliability::OVER_RANGE).unwrap();
    s.update(ZONE, 35.0).unwrap();
    let events = settle(&mut s, at(1));
    assert_eq!(events.iter().map(|e| e.to).collect::<Vec<_>>(), [EventState::FAULT]);
    s.set_reliability(ZONE, Reliability::NO_FAULT_DETECTED).unwrap();
    let events = settle(&mut s, at(2));
    let seen: Vec<_> = events.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(
        seen,
        [(EventState::FAULT, EventState::NORMAL), (EventState::NORMAL, EventState::HIGH_LIMIT)],
        "the algorithm applies again in the same evaluation"
    );
}

#[test]
fn another_fault_reliability_is_a_fault_to_fault_transition() {
    let mut s = alarmed();
    s.set_reliability(ZONE, Reliability::OVER_RANGE).unwrap();
    assert_eq!(settle(&mut s, at(1)).len(), 1);
    s.set_reliability(ZONE, Reliability::OVER_RANGE).unwrap();
    assert_eq!(settle(&mut s, at(2)), [], "the same fault again: nothing");
    s.set_reliability(ZONE, Reliability::OPEN_LOOP).unwrap();
    let events = settle(&mut s, at(3));
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].from, events[0].to), (EventState::FAULT, EventState::FAULT));
    assert_eq!(events[0].event_type, EventType::CHANGE_OF_RELIABILITY);
}

#[test]
fn with_detection_disabled_nothing_waits_for_an_acknowledgment() {
    let mut s = alarmed();
    s.update(FILTER, true).unwrap();
    let events = settle(&mut s, at(1));
    s.set_ack_required(&events, &[true]);
    assert_eq!(bits(&s, FILTER, P::ACKED_TRANSITIONS), [false, true, true]);
    s.write(&Write::new(FILTER, P::EVENT_DETECTION_ENABLE, Value::Boolean(false))).unwrap();
    assert_eq!(settle(&mut s, at(2)), []);
    assert_eq!(state(&s, FILTER), EventState::NORMAL);
    assert_eq!(bits(&s, FILTER, P::ACKED_TRANSITIONS), [true, true, true]);
}
