//! Device management and ReadRange through our client against real servers:
//! DeviceCommunicationControl, ReinitializeDevice, TimeSynchronization,
//! UTCTimeSynchronization and ReadRange. Where a peer lacks a service, the
//! test pins the refusal it answers with (host/tests/peers/README.md lists
//! what each peer supports).

use crate::peers::{Kind, Peer};
use bacnet::enums::{EnableDisable, ErrorClass, ErrorCode, PropertyIdentifier as P, ReinitializedState};
use bacnet::services::{Range, ReadRangeAck};
use bacnet::{AnyValue, Date, Element, ObjectIdentifier, ObjectType, RejectReason, Time, Value};
use std::num::NonZeroI16;
use std::time::{Duration, Instant};
use trellis::client::{Client, ClientConfig, ClientError, Destination, DeviceAddress};
use trellis_bip::BipConfig;

/// The password both peer scripts give their devices.
const PASSWORD: &str = "trellis";

/// A client on a free port whose broadcasts go to `peer`'s port, with a
/// short APDU timeout (some steps expect silence).
async fn client_for(peer: &Peer) -> Client {
    let mut config = ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() };
    config.bip.broadcast_port = Some(peer.address.ip().unwrap().port());
    config.tsm.apdu_timeout = Duration::from_millis(700);
    config.tsm.retries = 1;
    Client::bind(config).await.unwrap()
}

fn oid(t: ObjectType, instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, instance).unwrap()
}

fn date(year: u16, month: u8, day: u8, weekday: u8) -> Date {
    Date { year: (year - 1900) as u8, month, day, weekday }
}

fn time(hour: u8, minute: u8, second: u8) -> Time {
    Time { hour, minute, second, hundredths: 0 }
}

/// Read `property` until it satisfies `ok` (an unconfirmed request takes
/// effect some time after it is sent), or give up after 3 s with the last value.
async fn read_until(
    c: &Client,
    device: &DeviceAddress,
    object: ObjectIdentifier,
    property: P,
    ok: impl Fn(&AnyValue) -> bool,
) -> AnyValue {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let v = c.read_property(device, object, property, None).await.unwrap();
        if ok(&v) || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn bacnet_error(r: Result<impl std::fmt::Debug, ClientError>) -> (ErrorClass, ErrorCode) {
    match r {
        Err(e) => e.bacnet_error().unwrap_or_else(|| panic!("expected a BACnet Error, got {e:?}")),
        Ok(v) => panic!("expected a BACnet Error, got {v:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_communication_control_checks_the_password_and_each_peer_answers_as_documented() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3111);
        let c = client_for(&peer).await;
        let dev = &peer.address;
        let dcc = |state, duration, password| c.device_communication_control(dev, duration, state, password);

        let wrong = dcc(EnableDisable::DISABLE_INITIATION, None, Some("wrong")).await;
        assert_eq!(bacnet_error(wrong), (ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE), "{kind:?}");
        dcc(EnableDisable::DISABLE_INITIATION, Some(5), Some(PASSWORD)).await.unwrap();
        dcc(EnableDisable::ENABLE, None, Some(PASSWORD)).await.unwrap();

        match kind {
            // bacpypes3 honours `disable`: silence until `enable`.
            Kind::Bacpypes3 => {
                dcc(EnableDisable::DISABLE, Some(5), Some(PASSWORD)).await.unwrap();
                let silent = c.read_property(dev, oid(ObjectType::ANALOG_VALUE, 1), P::PRESENT_VALUE, None).await;
                assert!(matches!(silent, Err(ClientError::Timeout { .. })), "{kind:?} while disabled: {silent:?}");
                dcc(EnableDisable::ENABLE, None, Some(PASSWORD)).await.unwrap();
                c.read_property(dev, oid(ObjectType::ANALOG_VALUE, 1), P::PRESENT_VALUE, None).await.unwrap();
            }
            // rusty-bacnet refuses the deprecated `disable`.
            Kind::RustyBacnet => {
                let refused = dcc(EnableDisable::DISABLE, None, Some(PASSWORD)).await;
                assert_eq!(bacnet_error(refused), (ErrorClass::SERVICES, ErrorCode::SERVICE_REQUEST_DENIED));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_longer_than_20_characters_is_refused_before_sending() {
    let _timing = crate::peers::shared().await;
    // Nothing listens at this address: the request must fail without a send.
    let port = crate::peers::free_port();
    let _silent = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let c = Client::bind(ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() })
        .await
        .unwrap();
    let dev: DeviceAddress = format!("127.0.0.1:{port}").parse().unwrap();
    let long = "x".repeat(21);
    let e = c.device_communication_control(&dev, None, EnableDisable::ENABLE, Some(&long)).await.unwrap_err();
    assert!(matches!(e, ClientError::Encode(_)), "{e:?}");
    let e = c.reinitialize_device(&dev, ReinitializedState::WARMSTART, Some("")).await.unwrap_err();
    assert!(matches!(e, ClientError::Encode(_)), "an empty password is out of range too: {e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reinitialize_device_needs_the_password_on_rusty_and_is_rejected_by_bacpypes3() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3112);
        let c = client_for(&peer).await;
        let dev = &peer.address;
        match kind {
            Kind::RustyBacnet => {
                let e = c.reinitialize_device(dev, ReinitializedState::COLDSTART, Some("wrong")).await;
                assert_eq!(bacnet_error(e), (ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE));
                let e = c.reinitialize_device(dev, ReinitializedState::COLDSTART, None).await;
                assert_eq!(bacnet_error(e), (ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE), "no password");
                c.reinitialize_device(dev, ReinitializedState::WARMSTART, Some(PASSWORD)).await.unwrap();
                c.reinitialize_device(dev, ReinitializedState::ACTIVATE_CHANGES, Some(PASSWORD)).await.unwrap();
            }
            Kind::Bacpypes3 => {
                let e = c.reinitialize_device(dev, ReinitializedState::WARMSTART, Some(PASSWORD)).await.unwrap_err();
                assert!(matches!(e, ClientError::Reject(RejectReason::UNRECOGNIZED_SERVICE)), "{e:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_synchronization_sets_rusty_clock_directed_and_broadcast() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start(Kind::RustyBacnet, 3113);
    let c = client_for(&peer).await;
    let dev = &peer.address;
    let device = oid(ObjectType::DEVICE, 3113);
    let local_date = |c: &Client, want: Date| {
        let (c, dev) = (c.clone(), dev.clone());
        async move {
            let v = read_until(&c, &dev, device, P::LOCAL_DATE, |v| v.as_primitive() == Some(&Value::Date(want))).await;
            assert_eq!(v.as_primitive(), Some(&Value::Date(want)));
        }
    };
    // Its UTC offset is 0, so UTC and local time agree below.
    let offset = c.read_property(dev, device, P::UTC_OFFSET, None).await.unwrap();
    assert_eq!(offset.as_primitive(), Some(&Value::Signed(0)));

    c.time_synchronization(Destination::Device(dev.clone()), date(2001, 2, 3, 6), time(4, 5, 6)).await.unwrap();
    local_date(&c, date(2001, 2, 3, 6)).await;
    let t = c.read_property(dev, device, P::LOCAL_TIME, None).await.unwrap();
    match t.as_primitive() {
        Some(Value::Time(t)) => assert!((t.hour, t.minute) == (4, 5) && t.second >= 6, "{t}"),
        other => panic!("Local_Time: {other:?}"),
    }

    c.utc_time_synchronization(Destination::Device(dev.clone()), date(2002, 3, 4, 1), time(5, 6, 7)).await.unwrap();
    local_date(&c, date(2002, 3, 4, 1)).await;

    // Broadcast on the local network (the peer's port on 127.255.255.255).
    c.time_synchronization(Destination::LocalBroadcast, date(2003, 4, 5, 6), time(6, 7, 8)).await.unwrap();
    local_date(&c, date(2003, 4, 5, 6)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bacpypes3_decodes_our_time_synchronization_requests() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start(Kind::Bacpypes3, 3114);
    let c = client_for(&peer).await;
    let dev = &peer.address;
    // bacpypes3_server.py records what bacpypes3 decoded here.
    let log = oid(ObjectType::CHARACTERSTRING_VALUE, 2);
    let recorded = |want: &'static str| {
        let (c, dev) = (c.clone(), dev.clone());
        async move {
            let v = read_until(&c, &dev, log, P::PRESENT_VALUE, |v| v.to_string() == format!("{want:?}")).await;
            assert_eq!(v.to_string(), format!("{want:?}"));
        }
    };
    recorded("none").await;
    c.time_synchronization(Destination::Device(dev.clone()), date(2001, 2, 3, 6), time(4, 5, 6)).await.unwrap();
    recorded("timeSynchronization 2001-02-03 6 04:05:06.00").await;
    let noon = Time { hour: 12, minute: 0, second: 0, hundredths: 99 };
    c.utc_time_synchronization(Destination::Device(dev.clone()), date(2025, 6, 1, 7), noon).await.unwrap();
    recorded("utcTimeSynchronization 2025-06-01 7 12:00:00.99").await;
    c.time_synchronization(Destination::LocalBroadcast, date(2154, 12, 31, 255), time(23, 59, 59)).await.unwrap();
    recorded("timeSynchronization 2154-12-31 255 23:59:59.00").await;
}

/// The records of a Log_Buffer answer: (timestamp, logged real).
fn log_records(ack: &ReadRangeAck) -> Vec<((Date, Time), f32)> {
    let mut records = Vec::new();
    let mut elements = ack.item_data.0.iter().peekable();
    while let Some(e) = elements.next() {
        let timestamp = match e {
            Element::Constructed { tag: 0, elements } => match elements.as_slice() {
                [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))] => (*d, *t),
                other => panic!("timestamp: {other:?}"),
            },
            other => panic!("a BACnetLogRecord starts with its timestamp [0], got {other:?}"),
        };
        let value = match elements.next() {
            Some(Element::Constructed { tag: 1, elements }) => match elements.as_slice() {
                [Element::Context { tag: 2, data }] => f32::from_be_bytes(data.as_slice().try_into().unwrap()),
                other => panic!("log-datum: {other:?}"),
            },
            other => panic!("log-datum [1]: {other:?}"),
        };
        elements.next_if(|e| matches!(e, Element::Context { tag: 2, .. })); // status flags, optional
        records.push((timestamp, value));
    }
    assert_eq!(records.len() as u32, ack.item_count, "item-count agrees with the items");
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_range_reads_rusty_trend_log_by_position_sequence_and_time() {
    let _timing = crate::peers::shared().await;
    let peer = Peer::start(Kind::RustyBacnet, 3115);
    let c = client_for(&peer).await;
    let dev = &peer.address;
    let tl1 = oid(ObjectType::TREND_LOG, 1);
    let count = |n: i16| NonZeroI16::new(n).unwrap();
    let read = |range| c.read_range(dev, tl1, P::LOG_BUFFER, None, range);

    // tl1 logs Zone Temp (72.5) once a second: wait for three records.
    let deadline = Instant::now() + Duration::from_secs(10);
    let all = loop {
        let all = read(None).await.unwrap();
        if all.item_count >= 3 || Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let records = log_records(&all);
    assert!(records.len() >= 3, "{all:?}");
    assert!(records.iter().all(|(_, v)| *v == 72.5), "{records:?}");
    assert!(records.windows(2).all(|w| w[0].0 <= w[1].0), "oldest first: {records:?}");
    assert!(all.result_flags.first_item && all.result_flags.last_item && !all.result_flags.more_items);
    assert_eq!((all.object, all.property, all.first_sequence_number), (tl1, P::LOG_BUFFER, None));

    let first_two = read(Some(Range::ByPosition { reference_index: 1, count: count(2) })).await.unwrap();
    assert_eq!(log_records(&first_two), records[..2]);
    assert!(first_two.result_flags.first_item && !first_two.result_flags.last_item);
    assert_eq!(first_two.first_sequence_number, None, "not sent for a read by position");

    let backward = read(Some(Range::ByPosition { reference_index: 2, count: count(-5) })).await.unwrap();
    assert_eq!(log_records(&backward), records[..2], "backward from position 2: positions 1 and 2");

    let by_sequence = read(Some(Range::BySequenceNumber { reference_sequence: 2, count: count(2) })).await.unwrap();
    assert_eq!(by_sequence.first_sequence_number, Some(2));
    assert_eq!(log_records(&by_sequence), records[1..3]);

    let since_2000 = (date(2000, 1, 1, 6), time(0, 0, 0));
    let by_time = read(Some(Range::ByTime { reference_time: since_2000, count: count(1) })).await.unwrap();
    assert_eq!((by_time.first_sequence_number, log_records(&by_time)), (Some(1), records[..1].to_vec()));

    let future = (date(2150, 1, 1, 4), time(0, 0, 0));
    let none = read(Some(Range::ByTime { reference_time: future, count: count(3) })).await.unwrap();
    assert_eq!((none.item_count, none.first_sequence_number), (0, None), "{none:?}");
    // The standard wants a specific reference time: an unspecified weekday is refused.
    let unspecified = (date(2150, 1, 1, 255), time(0, 0, 0));
    let e = read(Some(Range::ByTime { reference_time: unspecified, count: count(3) })).await.unwrap_err();
    assert!(matches!(e, ClientError::Reject(RejectReason::INVALID_DATA_ENCODING)), "{e:?}");

    let not_a_list = c.read_range(dev, oid(ObjectType::ANALOG_INPUT, 1), P::PRESENT_VALUE, None, None).await;
    assert_eq!(bacnet_error(not_a_list), (ErrorClass::SERVICES, ErrorCode::PROPERTY_IS_NOT_A_LIST));
    let missing = c.read_range(dev, oid(ObjectType::TREND_LOG, 9), P::LOG_BUFFER, None, None).await;
    assert_eq!(bacnet_error(missing), (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_range_on_bacpypes3_is_its_operational_problem_error() {
    let _timing = crate::peers::shared().await;
    // bacpypes3 0.0.110's ReadRange handler raises NotImplementedError.
    let peer = Peer::start(Kind::Bacpypes3, 3116);
    let c = client_for(&peer).await;
    let device = oid(ObjectType::DEVICE, 3116);
    let range = Range::ByPosition { reference_index: 1, count: NonZeroI16::new(2).unwrap() };
    let e = c.read_range(&peer.address, device, P::OBJECT_LIST, None, Some(range)).await;
    assert_eq!(bacnet_error(e), (ErrorClass::DEVICE, ErrorCode::OPERATIONAL_PROBLEM));
}
