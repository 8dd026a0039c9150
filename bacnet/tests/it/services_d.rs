//! Service groups D and E: alarms and events (Clauses 13.5, 13.8–13.12) and
//! COV-multiple (Clauses 13.16–13.18, 135-2016).
//!
//! AcknowledgeAlarm, the GetAlarmSummary answer and the GetEventInformation
//! request are the ASHRAE 135 Annex F examples (`vectors/standard.txt`). The
//! others are hand-encoded, octet by octet from the Clause 20.2 rules and
//! commented field by field; what real stacks send and accept is checked
//! end to end by the host's interop tests with bacpypes3 and rusty-bacnet.

use bacnet::codec::{BitString, CharacterString, Date, ObjectIdentifier, Time};
use bacnet::cov::{Recipient, RecipientProcess};
use bacnet::enums::{
    AcknowledgmentFilter, ErrorClass, ErrorCode, EventState, EventStateFilter, EventType, NotifyType, ObjectType,
    PropertyIdentifier as P, RejectReason, Reliability,
};
use bacnet::services::{
    AcknowledgeAlarmRequest, AlarmSummary, BacnetError, COVNotificationMultiple, CovObjectValues, CovReference,
    CovSubscriptionSpecification, CovValue, EnrollmentSummary, EventNotification, EventSummary, GetAlarmSummaryAck,
    GetEnrollmentSummaryAck, GetEnrollmentSummaryRequest, GetEventInformationAck, GetEventInformationRequest,
    NotificationParameters, PropertyReference, PropertyStates, PropertyValue, ServiceCodec,
    SubscribeCOVPropertyMultipleError, SubscribeCOVPropertyMultipleRequest, TimeStamp,
};
use bacnet::{AnyValue, Value};
use proptest::prelude::*;
use std::fmt::Debug;

/// The octets of an annotated dump: on each line, the two-digit hex
/// tokens up to the first other word (the comment).
fn hex(s: &str) -> Vec<u8> {
    s.lines()
        .flat_map(|line| {
            line.split_whitespace()
                .take_while(|t| t.len() == 2 && t.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(|t| u8::from_str_radix(t, 16).unwrap())
        })
        .collect()
}

fn oid(t: ObjectType, i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, i).unwrap()
}

fn golden<T: ServiceCodec + PartialEq + Debug>(bytes: &[u8], want: &T) {
    assert_eq!(&T::decode(bytes).unwrap(), want, "decode {bytes:02x?}");
    assert_eq!(want.to_vec(), bytes, "encode {want:?}");
}

fn reject<T: ServiceCodec + Debug>(bytes: &[u8]) -> RejectReason {
    T::decode(bytes).unwrap_err().reject_reason()
}

/// Every proper prefix fails to decode, without panicking.
fn prefixes_fail<T: ServiceCodec + Debug>(bytes: &[u8]) {
    prefixes_fail_but::<T>(bytes, &[]);
}

/// Every proper prefix fails to decode but those of the lengths in
/// `complete` (which end where only OPTIONAL fields follow).
fn prefixes_fail_but<T: ServiceCodec + Debug>(bytes: &[u8], complete: &[usize]) {
    for n in 0..bytes.len() {
        let decoded = T::decode(&bytes[..n]);
        assert_eq!(decoded.is_ok(), complete.contains(&n), "prefix of {n} octets: {decoded:?}");
    }
}

/// The body of a standard example (after the APDU header of `header` octets).
fn standard_body(name: &str, header: usize) -> Vec<u8> {
    let f = crate::vectors::standard()
        .into_iter()
        .find(|f| f.name == format!("ashrae-135-annex-f-{name}"))
        .unwrap_or_else(|| panic!("no {name} in standard.txt"));
    f.bytes[header..].to_vec()
}

fn in_alarm() -> BitString {
    BitString::from_bits(&[true, false, false, false])
}

#[test]
fn the_standard_acknowledge_alarm() {
    // Annex F: operator "MDL" acknowledges analog-input,2's HIGH_LIMIT
    // transition of sequence number 16 on 1992-06-21 at 13:03:41.09.
    let body = standard_body("acknowledgealarm-request", 4);
    let want = AcknowledgeAlarmRequest {
        acknowledging_process_identifier: 1,
        event_object: oid(ObjectType::ANALOG_INPUT, 2),
        event_state_acknowledged: EventState::HIGH_LIMIT,
        time_stamp: TimeStamp::SequenceNumber(16),
        acknowledgment_source: CharacterString::utf8("MDL"),
        time_of_acknowledgment: TimeStamp::DateTime(
            Date { year: 92, month: 6, day: 21, weekday: 7 },
            Time { hour: 13, minute: 3, second: 41, hundredths: 9 },
        ),
    };
    golden(&body, &want);
    prefixes_fail::<AcknowledgeAlarmRequest>(&body);
}

#[test]
fn the_standard_alarm_summary() {
    // Annex F: analog-input,2 in HIGH_LIMIT (to-offnormal not acknowledged),
    // analog-input,3 in LOW_LIMIT (all acknowledged).
    let body = standard_body("getalarmsummary-ack", 3);
    golden(
        &body,
        &GetAlarmSummaryAck(vec![
            AlarmSummary {
                object: oid(ObjectType::ANALOG_INPUT, 2),
                alarm_state: EventState::HIGH_LIMIT,
                acknowledged_transitions: BitString::from_bits(&[false, true, true]),
            },
            AlarmSummary {
                object: oid(ObjectType::ANALOG_INPUT, 3),
                alarm_state: EventState::LOW_LIMIT,
                acknowledged_transitions: BitString::from_bits(&[true, true, true]),
            },
        ]),
    );
}

#[test]
fn the_standard_event_information_request_and_a_page_of_answers() {
    let body = standard_body("geteventinformation-request", 4);
    golden(&body, &GetEventInformationRequest { last_received_object: None });
    golden(
        &hex("0C 00 00 00 05"),
        &GetEventInformationRequest { last_received_object: Some(oid(ObjectType::ANALOG_INPUT, 5)) },
    );

    let ack = hex("0E
           0C 00 00 00 02                      object analog-input,2
           19 03                               event-state high-limit
           2A 05 60                            acknowledged-transitions: to-fault, to-normal
           3E                                  event-time-stamps
             19 10                               to-offnormal: sequence 16
             2E A4 FF FF FF FF B4 FF FF FF FF 2F to-fault: never
             19 00                               to-normal: sequence 0
           3F
           49 00                               notify-type alarm
           5A 05 E0                            event-enable: all three
           6E 21 0F 21 0F 21 14 6F             event-priorities 15, 15, 20
         0F
         19 00                                 more-events false");
    golden(
        &ack,
        &GetEventInformationAck {
            summaries: vec![EventSummary {
                object: oid(ObjectType::ANALOG_INPUT, 2),
                event_state: EventState::HIGH_LIMIT,
                acknowledged_transitions: BitString::from_bits(&[false, true, true]),
                event_time_stamps: [
                    TimeStamp::SequenceNumber(16),
                    TimeStamp::UNSPECIFIED,
                    TimeStamp::SequenceNumber(0),
                ],
                notify_type: NotifyType::ALARM,
                event_enable: BitString::from_bits(&[true, true, true]),
                event_priorities: [15, 15, 20],
            }],
            more_events: false,
        },
    );
    prefixes_fail::<GetEventInformationAck>(&ack);
    // Two time stamps where three belong.
    let short =
        hex("0E 0C 00 00 00 02 19 03 2A 05 60 3E 19 10 19 00 3F 49 00 5A 05 E0 6E 21 0F 21 0F 21 14 6F 0F 19 00");
    assert_eq!(reject::<GetEventInformationAck>(&short), RejectReason::INVALID_TAG);
}

/// analog-input,2 rose to 80.2 past its High_Limit of 80.0 (deadband 1.0).
const OUT_OF_RANGE: &str = "
    09 01                   process-identifier 1
    1C 02 00 00 04          initiating device,4
    2C 00 00 00 02          event object analog-input,2
    3E 19 10 3F             time-stamp: sequence 16
    49 04                   notification-class 4
    59 64                   priority 100
    69 05                   event-type out-of-range
    7D 09 00 47 6F 6F 64 62 79 65 21    message-text \"Goodbye!\"
    89 00                   notify-type alarm
    99 01                   ack-required true
    A9 00                   from-state normal
    B9 03                   to-state high-limit
    CE 5E                   event-values: out-of-range
      0C 42 A0 66 66          exceeding-value 80.2
      1A 04 80                status-flags in-alarm
      2C 3F 80 00 00          deadband 1.0
      3C 42 A0 00 00          exceeded-limit 80.0
    5F CF";

fn out_of_range() -> EventNotification {
    EventNotification {
        process_identifier: 1,
        initiating_device: oid(ObjectType::DEVICE, 4),
        event_object: oid(ObjectType::ANALOG_INPUT, 2),
        time_stamp: TimeStamp::SequenceNumber(16),
        notification_class: 4,
        priority: 100,
        event_type: EventType::OUT_OF_RANGE,
        message_text: Some(CharacterString::utf8("Goodbye!")),
        notify_type: NotifyType::ALARM,
        ack_required: Some(true),
        from_state: Some(EventState::NORMAL),
        to_state: EventState::HIGH_LIMIT,
        event_values: Some(NotificationParameters::OutOfRange {
            exceeding_value: 80.2,
            status_flags: in_alarm(),
            deadband: 1.0,
            exceeded_limit: 80.0,
        }),
    }
}

#[test]
fn an_out_of_range_alarm_notification() {
    golden(&hex(OUT_OF_RANGE), &out_of_range());
    // Cut after the to-state: a notification without event-values.
    prefixes_fail_but::<EventNotification>(&hex(OUT_OF_RANGE), &[41]);
}

#[test]
fn a_change_of_state_a_fault_and_an_acknowledgment_notification() {
    let mut n = out_of_range();
    n.event_object = oid(ObjectType::BINARY_INPUT, 1);
    n.event_type = EventType::CHANGE_OF_STATE;
    n.message_text = None;
    n.to_state = EventState::OFFNORMAL;
    n.event_values = Some(NotificationParameters::ChangeOfState {
        new_state: PropertyStates::binary(true),
        status_flags: in_alarm(),
    });
    let bytes = n.to_vec();
    // event-values [12] { change-of-state [1] { new-state [0] { binary-value [1] active } status-flags } }
    assert!(bytes.ends_with(&hex("CE 1E 0E 19 01 0F 1A 04 80 1F CF")), "{bytes:02x?}");
    assert_eq!(EventNotification::decode(&bytes).unwrap(), n);

    n.event_type = EventType::CHANGE_OF_RELIABILITY;
    n.to_state = EventState::FAULT;
    n.event_values = Some(NotificationParameters::ChangeOfReliability {
        reliability: Reliability::NO_SENSOR,
        status_flags: BitString::from_bits(&[false, true, false, false]),
        property_values: vec![PropertyValue {
            property: P::PRESENT_VALUE,
            array_index: None,
            value: AnyValue::primitive(Value::Enumerated(1)),
            priority: None,
        }],
    });
    assert_eq!(EventNotification::decode(&n.to_vec()).unwrap(), n);

    // An acknowledgment: no ack-required, from-state or event-values.
    let ack = EventNotification {
        notify_type: NotifyType::ACK_NOTIFICATION,
        ack_required: None,
        from_state: None,
        event_values: None,
        ..out_of_range()
    };
    let bytes = ack.to_vec();
    assert!(bytes.ends_with(&hex("89 02 B9 03")), "{bytes:02x?}");
    assert_eq!(EventNotification::decode(&bytes).unwrap(), ack);
}

#[test]
fn notification_parameters_this_crate_does_not_interpret_are_kept_as_octets() {
    // event-values: unsigned-range [11] { exceeding-value 7, status-flags, exceeded-limit 5 }
    let mut bytes = hex(OUT_OF_RANGE);
    let at = bytes.len() - hex("5E 0C 42 A0 66 66 1A 04 80 2C 3F 80 00 00 3C 42 A0 00 00 5F CF").len();
    bytes.truncate(at);
    bytes.extend(hex("BE 09 07 1A 04 80 29 05 BF CF"));
    let n = EventNotification::decode(&bytes).unwrap();
    assert_eq!(n.event_values, Some(NotificationParameters::Other { choice: 11, body: hex("09 07 1A 04 80 29 05") }));
    assert_eq!(n.to_vec(), bytes);

    // change-of-value [2] with changed-bits [0] (the bit-string alternative
    // this crate does not type): kept as octets, the notification readable.
    bytes.truncate(at);
    bytes.extend(hex("2E 0E 0A 04 C0 0F 1A 04 80 2F CF"));
    let n = EventNotification::decode(&bytes).unwrap();
    assert_eq!(n.event_values, Some(NotificationParameters::Other { choice: 2, body: hex("0E 0A 04 C0 0F 1A 04 80") }));
    assert_eq!(n.to_vec(), bytes);
}

#[test]
fn malformed_event_notifications_get_the_standard_reject_reasons() {
    let good = hex(OUT_OF_RANGE);
    // to-state [11] missing: the event values follow the from-state.
    let mut missing = good.clone();
    let to_state = good.windows(2).position(|w| w == [0xB9, 0x03]).unwrap();
    missing.drain(to_state..to_state + 2);
    assert_eq!(reject::<EventNotification>(&missing), RejectReason::MISSING_REQUIRED_PARAMETER);
    // A time stamp that is none of the three choices.
    let mut wrong = good.clone();
    wrong[13] = 0x49;
    assert_eq!(reject::<EventNotification>(&wrong), RejectReason::INVALID_TAG);
    let mut long = good;
    long.push(0x00);
    assert_eq!(reject::<EventNotification>(&long), RejectReason::TOO_MANY_ARGUMENTS);
}

#[test]
fn enrollment_summary_with_every_filter() {
    let request = hex("09 00                           acknowledgment-filter all
         1E                              enrollment-filter
           0E 0C 02 00 00 11 0F            recipient device,17
           19 07                           process-identifier 7
         1F
         29 02                           event-state-filter normal
         39 05                           event-type-filter out-of-range
         4E 09 06 19 0A 4F               priority-filter 6..10
         59 04                           notification-class-filter 4");
    golden(
        &request,
        &GetEnrollmentSummaryRequest {
            acknowledgment_filter: AcknowledgmentFilter::ALL,
            enrollment_filter: Some(RecipientProcess {
                recipient: Recipient::Device(oid(ObjectType::DEVICE, 17)),
                process_identifier: 7,
            }),
            event_state_filter: Some(EventStateFilter::NORMAL),
            event_type_filter: Some(EventType::OUT_OF_RANGE),
            priority_filter: Some((6, 10)),
            notification_class_filter: Some(4),
        },
    );
    // Each filter is OPTIONAL: a cut after any of them is a request.
    prefixes_fail_but::<GetEnrollmentSummaryRequest>(&request, &[2, 13, 15, 17, 23]);
    golden(
        &hex("09 02"),
        &GetEnrollmentSummaryRequest { acknowledgment_filter: AcknowledgmentFilter::NOT_ACKED, ..Default::default() },
    );
    // A recipient by address: network 0 (local), a B/IP MAC.
    let by_address = RecipientProcess {
        recipient: Recipient::Address { network_number: 0, mac_address: vec![127, 0, 0, 1, 0xBA, 0xC0] },
        process_identifier: 1,
    };
    assert_eq!(by_address.to_vec(), hex("0E 1E 21 00 65 06 7F 00 00 01 BA C0 1F 0F 19 01"));
    assert_eq!(RecipientProcess::decode(&by_address.to_vec()).unwrap(), by_address);

    let ack =
        hex("C4 00 00 00 02 91 05 91 03 21 64 21 04    analog-input,2 out-of-range high-limit priority 100 class 4
         C4 00 C0 00 01 91 01 91 00 21 C8          binary-input,1 change-of-state normal priority 200");
    golden(
        &ack,
        &GetEnrollmentSummaryAck(vec![
            EnrollmentSummary {
                object: oid(ObjectType::ANALOG_INPUT, 2),
                event_type: EventType::OUT_OF_RANGE,
                event_state: EventState::HIGH_LIMIT,
                priority: 100,
                notification_class: Some(4),
            },
            EnrollmentSummary {
                object: oid(ObjectType::BINARY_INPUT, 1),
                event_type: EventType::CHANGE_OF_STATE,
                event_state: EventState::NORMAL,
                priority: 200,
                notification_class: None,
            },
        ]),
    );
}

const SUBSCRIBE_MULTIPLE: &str = "
    09 12                   subscriber-process-identifier 18
    19 01                   issue-confirmed-notifications true
    29 3C                   lifetime 60
    4E                      list-of-cov-subscription-specifications
      0C 00 00 00 01          analog-input,1
      1E                      list-of-cov-references
        0E 09 55 0F             present-value
        1C 3F 80 00 00          cov-increment 1.0
        29 00                   timestamped false
        0E 09 6F 0F             status-flags
        29 01                   timestamped true
      1F
    4F";

#[test]
fn subscribe_cov_property_multiple_and_its_notification() {
    let want = SubscribeCOVPropertyMultipleRequest {
        subscriber_process_identifier: 18,
        issue_confirmed_notifications: Some(true),
        lifetime: Some(60),
        max_notification_delay: None,
        specifications: vec![CovSubscriptionSpecification {
            object: oid(ObjectType::ANALOG_INPUT, 1),
            references: vec![
                CovReference {
                    property: PropertyReference::new(P::PRESENT_VALUE),
                    cov_increment: Some(1.0),
                    timestamped: false,
                },
                CovReference {
                    property: PropertyReference::new(P::STATUS_FLAGS),
                    cov_increment: None,
                    timestamped: true,
                },
            ],
        }],
    };
    golden(&hex(SUBSCRIBE_MULTIPLE), &want);
    prefixes_fail::<SubscribeCOVPropertyMultipleRequest>(&hex(SUBSCRIBE_MULTIPLE));
    // A lifetime without issue-confirmed-notifications.
    let inconsistent = hex("09 12 29 3C 4E 4F");
    assert_eq!(reject::<SubscribeCOVPropertyMultipleRequest>(&inconsistent), RejectReason::INCONSISTENT_PARAMETERS);
    let cancel =
        SubscribeCOVPropertyMultipleRequest::decode(&hex("09 12 4E 0C 00 00 00 01 1E 0E 09 55 0F 29 00 1F 4F"));
    assert!(cancel.unwrap().is_cancellation());

    let notification = hex("09 12                   subscriber-process-identifier 18
         1C 02 00 00 04          initiating device,4
         29 00                   time-remaining 0
         3E A4 7E 0C 01 02 B4 0D 03 29 09 3F    timestamp 2026-12-01 Tue 13:03:41.09
         4E
           0C 00 00 00 01          analog-input,1
           1E
             09 55 2E 44 42 A0 66 66 2F            present-value 80.2
             09 6F 2E 82 04 80 2F 3C 0D 03 29 09   status-flags in-alarm, changed at 13:03:41.09
           1F
         4F");
    let time = Time { hour: 13, minute: 3, second: 41, hundredths: 9 };
    golden(
        &notification,
        &COVNotificationMultiple {
            subscriber_process_identifier: 18,
            initiating_device: oid(ObjectType::DEVICE, 4),
            time_remaining: 0,
            timestamp: Some((Date { year: 126, month: 12, day: 1, weekday: 2 }, time)),
            notifications: vec![CovObjectValues {
                object: oid(ObjectType::ANALOG_INPUT, 1),
                values: vec![
                    CovValue {
                        property: P::PRESENT_VALUE,
                        array_index: None,
                        value: AnyValue::primitive(Value::Real(80.2)),
                        time_of_change: None,
                    },
                    CovValue {
                        property: P::STATUS_FLAGS,
                        array_index: None,
                        value: AnyValue::primitive(Value::BitString(in_alarm())),
                        time_of_change: Some(time),
                    },
                ],
            }],
        },
    );
    prefixes_fail::<COVNotificationMultiple>(&notification);

    let refused = hex("0E 91 01 91 1F 0F                 error-type object unknown-object
         1E                                first-failed-subscription
           0C 00 00 00 09                    analog-input,9
           1E 09 55 1F                       present-value
           2E 91 01 91 1F 2F                 object unknown-object
         1F");
    let unknown = BacnetError::new(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT);
    golden(
        &refused,
        &SubscribeCOVPropertyMultipleError {
            error: unknown,
            first_failed_object: oid(ObjectType::ANALOG_INPUT, 9),
            first_failed_property: PropertyReference::new(P::PRESENT_VALUE),
            first_failed_error: unknown,
        },
    );
    prefixes_fail::<SubscribeCOVPropertyMultipleError>(&refused);
}

fn stable<T: ServiceCodec + Debug>(data: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(v) = T::decode(data) {
        let again = v.to_vec();
        prop_assert_eq!(T::decode(&again).unwrap().to_vec(), again);
    }
    Ok(())
}

fn time_stamp() -> impl Strategy<Value = TimeStamp> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|b| TimeStamp::Time(Time {
            hour: b[0],
            minute: b[1],
            second: b[2],
            hundredths: b[3]
        })),
        any::<u16>().prop_map(TimeStamp::SequenceNumber),
        any::<[u8; 8]>().prop_map(|b| TimeStamp::DateTime(
            Date { year: b[0], month: b[1], day: b[2], weekday: b[3] },
            Time { hour: b[4], minute: b[5], second: b[6], hundredths: b[7] }
        )),
    ]
}

proptest! {
    #[test]
    fn event_notifications_round_trip(
        ts in time_stamp(),
        class in any::<u32>(),
        priority in any::<u8>(),
        state in 0u32..6,
        value in -1e6f32..1e6,
        text in proptest::option::of("[ -~]{0,40}"),
        confirmed_ack in proptest::option::of(any::<bool>()),
    ) {
        let n = EventNotification {
            time_stamp: ts,
            notification_class: class,
            priority,
            message_text: text.as_deref().map(CharacterString::utf8),
            ack_required: confirmed_ack,
            to_state: EventState(state),
            event_values: Some(NotificationParameters::OutOfRange {
                exceeding_value: value,
                status_flags: in_alarm(),
                deadband: 0.5,
                exceeded_limit: value - 1.0,
            }),
            ..out_of_range()
        };
        prop_assert_eq!(EventNotification::decode(&n.to_vec()).unwrap(), n);
        let ack = AcknowledgeAlarmRequest {
            acknowledging_process_identifier: class,
            event_object: oid(ObjectType::ANALOG_VALUE, 3),
            event_state_acknowledged: EventState(state),
            time_stamp: ts,
            acknowledgment_source: CharacterString::utf8(text.as_deref().unwrap_or("")),
            time_of_acknowledgment: ts,
        };
        prop_assert_eq!(AcknowledgeAlarmRequest::decode(&ack.to_vec()).unwrap(), ack);
    }

    #[test]
    fn arbitrary_octets_never_panic_an_event_decoder(data in proptest::collection::vec(any::<u8>(), 0..96)) {
        stable::<EventNotification>(&data)?;
        stable::<AcknowledgeAlarmRequest>(&data)?;
        stable::<GetAlarmSummaryAck>(&data)?;
        stable::<GetEnrollmentSummaryRequest>(&data)?;
        stable::<GetEnrollmentSummaryAck>(&data)?;
        stable::<GetEventInformationRequest>(&data)?;
        stable::<GetEventInformationAck>(&data)?;
        stable::<SubscribeCOVPropertyMultipleRequest>(&data)?;
        stable::<COVNotificationMultiple>(&data)?;
        stable::<SubscribeCOVPropertyMultipleError>(&data)?;
    }
}
