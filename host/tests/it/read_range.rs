//! ReadRange (Clause 15.8) served by the gateway: the demo building's
//! Trend Log of the zone temperature, read by our client and by the
//! `trellis readrange` CLI — whole, by position, by sequence number and by
//! time, past the ends, in pieces when the answer is limited — and the
//! errors for what is not a list. The device runs in this process and its
//! plugin is ticked on a simulated clock: a record a minute from
//! 2024-03-05T10:00:00 (local time = UTC), so every record's time is known.

use crate::peers::free_port;
use bacnet::apdu::MaxApdu;
use bacnet::cov::COVSubscription;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::{Range, ReadRangeAck, ResultFlags};
use bacnet::tsm::TsmConfig;
use bacnet::{Date, Element, ObjectIdentifier, ObjectType, Time, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::num::NonZeroI16;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, ClientError, CovSubscription, DeviceAddress};
use trellis::model::DateTime;
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, Server, build, serve};
use trellis_bip::BipConfig;

const DEVICE: u32 = 389_001;
/// Tuesday 2024-03-05 10:00:00 UTC.
const T0_MS: u64 = 1_709_632_800_000;
/// Records the tests take: one a minute, 10:00 to 10:29.
const RECORDS: u64 = 30;

fn oid(t: ObjectType, i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, i).unwrap()
}

fn trend_log() -> ObjectIdentifier {
    oid(ObjectType::TREND_LOG, 1)
}

fn count(n: i16) -> NonZeroI16 {
    NonZeroI16::new(n).unwrap()
}

/// The local date and time of minute `m` after 10:00.
fn at_minute(m: u8, second: u8) -> (Date, Time) {
    (Date { year: 124, month: 3, day: 5, weekday: 2 }, Time { hour: 10, minute: m, second, hundredths: 0 })
}

struct Served {
    address: DeviceAddress,
    port: u16,
    server: Arc<Server<PluginModel>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The demo building served in this process, its plugin ticked once a
/// minute from 10:00 for `minutes` minutes.
async fn serve_demo(minutes: u64) -> Served {
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("read-range-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo")).unwrap();
    for m in 0..minutes {
        model.tick(DateTime { unix_ms: T0_MS + m * 60_000, utc_offset_minutes: 0 }).await.unwrap();
    }
    let server = Arc::new(build(model, DeviceConfig::default(), 999).await.unwrap());
    let port = free_port();
    let task = tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    Served { address: DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)), port, server, task }
}

async fn client_with(tsm: TsmConfig) -> Client {
    Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), tsm, ..Default::default() }).await.unwrap()
}

async fn client() -> Client {
    client_with(TsmConfig::default()).await
}

/// The records of a Log_Buffer answer: (timestamp, logged REAL).
fn records(ack: &ReadRangeAck) -> Vec<((Date, Time), f32)> {
    let mut out = Vec::new();
    let mut elements = ack.item_data.0.iter().peekable();
    while let Some(e) = elements.next() {
        let Element::Constructed { tag: 0, elements: ts } = e else { panic!("a record starts with [0]: {e:?}") };
        let [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))] = ts.as_slice() else {
            panic!("timestamp: {ts:?}")
        };
        let Some(Element::Constructed { tag: 1, elements: datum }) = elements.next() else { panic!("no log-datum") };
        let [Element::Context { tag: 2, data }] = datum.as_slice() else { panic!("not a real-value: {datum:?}") };
        let flags = elements.next_if(|e| matches!(e, Element::Context { tag: 2, .. }));
        assert!(flags.is_some(), "analog-input,1 has Status_Flags: they go with each record");
        out.push(((*d, *t), f32::from_be_bytes(data.as_slice().try_into().unwrap())));
    }
    assert_eq!(out.len() as u32, ack.item_count, "item-count agrees with the items");
    out
}

/// The minutes (after 10:00) of the records of an answer.
fn minutes(ack: &ReadRangeAck) -> Vec<u8> {
    records(ack).iter().map(|((_, t), _)| t.minute).collect()
}

fn flags(first_item: bool, last_item: bool, more_items: bool) -> ResultFlags {
    ResultFlags { first_item, last_item, more_items }
}

fn bacnet_error<T: std::fmt::Debug>(r: Result<T, ClientError>) -> (ErrorClass, ErrorCode) {
    match r {
        Err(e) => e.bacnet_error().unwrap_or_else(|| panic!("expected a BACnet Error, got {e:?}")),
        Ok(v) => panic!("expected a BACnet Error, got {v:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trend_log_reads_whole_by_position_and_past_its_ends() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(RECORDS).await;
    let c = client().await;
    let read = |range| c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, range);

    let all = read(None).await.unwrap();
    assert_eq!(minutes(&all), (0..30).collect::<Vec<u8>>(), "oldest first, a minute apart");
    assert_eq!((all.result_flags, all.first_sequence_number), (flags(true, true, false), None));
    let (timestamp, last) = *records(&all).last().unwrap();
    assert_eq!(timestamp, at_minute(29, 0));
    let zone = c.read_property(&d.address, oid(ObjectType::ANALOG_INPUT, 1), P::PRESENT_VALUE, None).await.unwrap();
    assert_eq!(zone.as_primitive(), Some(&Value::Real(last)), "the last record is the zone temperature now");

    let forward = read(Some(Range::ByPosition { reference_index: 5, count: count(3) })).await.unwrap();
    assert_eq!((minutes(&forward), forward.result_flags), (vec![4, 5, 6], flags(false, false, false)));
    assert_eq!(forward.first_sequence_number, None, "not sent for a read by position");
    let backward = read(Some(Range::ByPosition { reference_index: 3, count: count(-5) })).await.unwrap();
    assert_eq!((minutes(&backward), backward.result_flags), (vec![0, 1, 2], flags(true, false, false)));
    let to_the_end = read(Some(Range::ByPosition { reference_index: 28, count: count(10) })).await.unwrap();
    assert_eq!((minutes(&to_the_end), to_the_end.result_flags), (vec![27, 28, 29], flags(false, true, false)));
    let beyond = read(Some(Range::ByPosition { reference_index: 31, count: count(5) })).await.unwrap();
    assert_eq!((beyond.item_count, beyond.result_flags), (0, flags(false, false, false)));
    let before = read(Some(Range::ByPosition { reference_index: 0, count: count(-5) })).await.unwrap();
    assert_eq!(before.item_count, 0, "there is no item 0");
    let max = read(Some(Range::ByPosition { reference_index: 30, count: count(i16::MIN) })).await.unwrap();
    assert_eq!((max.item_count, max.result_flags), (30, flags(true, true, false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trend_log_reads_by_sequence_number_and_by_time_with_the_first_sequence_number() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(RECORDS).await;
    let c = client().await;
    let read = |range| c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, range);
    let total = c.read_property(&d.address, trend_log(), P::TOTAL_RECORD_COUNT, None).await.unwrap();
    assert_eq!(total.as_primitive(), Some(&Value::Unsigned(RECORDS)), "the newest record is number 30");

    let by_seq = read(Some(Range::BySequenceNumber { reference_sequence: 10, count: count(2) })).await.unwrap();
    assert_eq!((minutes(&by_seq), by_seq.first_sequence_number), (vec![9, 10], Some(10)));
    let newest = read(Some(Range::BySequenceNumber { reference_sequence: 30, count: count(-3) })).await.unwrap();
    assert_eq!((minutes(&newest), newest.first_sequence_number), (vec![27, 28, 29], Some(28)));
    assert_eq!(newest.result_flags, flags(false, true, false));
    let gone = read(Some(Range::BySequenceNumber { reference_sequence: 31, count: count(3) })).await.unwrap();
    assert_eq!((gone.item_count, gone.first_sequence_number, gone.result_flags), (0, None, flags(false, false, false)));

    let by_time = |t, n| read(Some(Range::ByTime { reference_time: t, count: count(n) }));
    let after = by_time(at_minute(4, 30), 3).await.unwrap();
    assert_eq!((minutes(&after), after.first_sequence_number), (vec![5, 6, 7], Some(6)));
    let strictly_after = by_time(at_minute(5, 0), 2).await.unwrap();
    assert_eq!(minutes(&strictly_after), [6, 7], "a record at the reference time is not newer than it");
    let strictly_before = by_time(at_minute(5, 0), -2).await.unwrap();
    assert_eq!((minutes(&strictly_before), strictly_before.first_sequence_number), (vec![3, 4], Some(4)));
    let since_2000 =
        (Date { year: 100, month: 1, day: 1, weekday: 6 }, Time { hour: 0, minute: 0, second: 0, hundredths: 0 });
    let first = by_time(since_2000, 1).await.unwrap();
    assert_eq!(
        (minutes(&first), first.first_sequence_number, first.result_flags),
        (vec![0], Some(1), flags(true, false, false))
    );
    let future = by_time(at_minute(59, 0), 3).await.unwrap();
    assert_eq!((future.item_count, future.first_sequence_number), (0, None));
    let last_two = by_time(at_minute(59, 0), -2).await.unwrap();
    assert_eq!((minutes(&last_two), last_two.first_sequence_number), (vec![28, 29], Some(29)));

    // The reference must be a specific date and time (the weekday may be unspecified).
    let no_weekday = (Date { weekday: 255, ..at_minute(4, 30).0 }, at_minute(4, 30).1);
    assert_eq!(minutes(&by_time(no_weekday, 1).await.unwrap()), [5]);
    let any_hour = (at_minute(0, 0).0, Time { hour: 255, minute: 0, second: 0, hundredths: 0 });
    assert_eq!(bacnet_error(by_time(any_hour, 1).await), (ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_max_apdu_gets_the_records_that_fit_with_more_items_and_paging_reads_them_all() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(RECORDS).await;
    let tsm =
        TsmConfig { max_apdu_accepted: MaxApdu::UP_TO_206, segmented_response_accepted: false, ..TsmConfig::default() };
    let c = client_with(tsm).await;
    let whole = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, None).await.unwrap();
    assert!(whole.result_flags.more_items && whole.result_flags.first_item && !whole.result_flags.last_item);
    let per_answer = whole.item_count;
    assert!((4..30).contains(&per_answer), "{per_answer} records in 206 octets");

    // Forward by position from where the last answer ended, until the last item.
    let mut seen = minutes(&whole);
    while seen.len() < RECORDS as usize {
        let next = Range::ByPosition { reference_index: seen.len() as u32 + 1, count: count(100) };
        let ack = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, Some(next)).await.unwrap();
        assert!(ack.item_count > 0, "{ack:?}");
        assert_eq!(ack.result_flags.more_items, !ack.result_flags.last_item, "{ack:?}");
        seen.extend(minutes(&ack));
    }
    assert_eq!(seen, (0..30).collect::<Vec<u8>>(), "every record once, in order");

    // Backward by sequence number: the newest records, nearest the reference.
    let back = Range::BySequenceNumber { reference_sequence: 30, count: count(-30) };
    let ack = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, Some(back)).await.unwrap();
    assert_eq!(ack.item_count, per_answer);
    assert_eq!(ack.result_flags, flags(false, true, true));
    assert_eq!(ack.first_sequence_number, Some(31 - per_answer));
    assert_eq!(minutes(&ack).last(), Some(&29));

    // The same client reads it whole when it accepts segments.
    let segmented = client().await;
    let all = segmented.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, None).await.unwrap();
    assert_eq!((all.item_count, all.result_flags), (30, flags(true, true, false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_a_list_and_what_has_no_numbers_or_times_is_refused_as_the_standard_says() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(3).await;
    let c = client().await;
    let dev = &d.address;
    let rr = |object, property, index, range| c.read_range(dev, object, property, index, range);
    let ai1 = oid(ObjectType::ANALOG_INPUT, 1);
    let device = oid(ObjectType::DEVICE, DEVICE);
    let not_a_list = (ErrorClass::SERVICES, ErrorCode::PROPERTY_IS_NOT_A_LIST);

    assert_eq!(bacnet_error(rr(ai1, P::PRESENT_VALUE, None, None).await), not_a_list);
    assert_eq!(bacnet_error(rr(device, P::OBJECT_LIST, None, None).await), not_a_list, "an array is not a list");
    assert_eq!(bacnet_error(rr(device, P::OBJECT_LIST, Some(1), None).await), not_a_list, "nor its elements");
    assert_eq!(bacnet_error(rr(trend_log(), P::TOTAL_RECORD_COUNT, None, None).await), not_a_list);
    assert_eq!(bacnet_error(rr(ai1, P::ALL, None, None).await), not_a_list);
    assert_eq!(
        bacnet_error(rr(trend_log(), P::LOG_BUFFER, Some(1), None).await),
        (ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)
    );
    assert_eq!(
        bacnet_error(rr(oid(ObjectType::TREND_LOG, 9), P::LOG_BUFFER, None, None).await),
        (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)
    );
    assert_eq!(
        bacnet_error(rr(oid(ObjectType::TREND_LOG, 9), P::ALL, None, None).await),
        (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)
    );
    assert_eq!(
        bacnet_error(rr(trend_log(), P::PRESENT_VALUE, None, None).await),
        (ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)
    );

    // Active_COV_Subscriptions is a list the host owns: by position it is
    // read like any other; its items have neither numbers nor times.
    for process in 1..=3 {
        let sub = CovSubscription::new(process, oid(ObjectType::ANALOG_VALUE, 1)).lifetime(300);
        c.subscribe_cov(dev, &sub).await.unwrap();
    }
    let all = rr(device, P::ACTIVE_COV_SUBSCRIPTIONS, None, None).await.unwrap();
    assert_eq!((all.item_count, all.result_flags), (3, flags(true, true, false)));
    let middle =
        rr(device, P::ACTIVE_COV_SUBSCRIPTIONS, None, Some(Range::ByPosition { reference_index: 2, count: count(-1) }));
    let middle = middle.await.unwrap();
    assert_eq!((middle.item_count, middle.result_flags), (1, flags(false, false, false)));
    let mut bytes = Vec::new();
    middle.item_data.encode(&mut bytes);
    let subs = COVSubscription::decode_list(&bytes).unwrap();
    let listed = COVSubscription::decode_list(&{
        let mut b = Vec::new();
        all.item_data.encode(&mut b);
        b
    })
    .unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0], listed[1], "the second subscription of the list");
    let by_seq = Range::BySequenceNumber { reference_sequence: 1, count: count(1) };
    assert_eq!(
        bacnet_error(rr(device, P::ACTIVE_COV_SUBSCRIPTIONS, None, Some(by_seq)).await),
        (ErrorClass::PROPERTY, ErrorCode::LIST_ITEM_NOT_NUMBERED)
    );
    let by_time = Range::ByTime { reference_time: at_minute(0, 0), count: count(1) };
    assert_eq!(
        bacnet_error(rr(device, P::ACTIVE_COV_SUBSCRIPTIONS, None, Some(by_time)).await),
        (ErrorClass::PROPERTY, ErrorCode::LIST_ITEM_NOT_TIMESTAMPED)
    );
    let empty = rr(device, P::DEVICE_ADDRESS_BINDING, None, None).await.unwrap();
    assert_eq!((empty.item_count, empty.result_flags), (0, flags(false, false, false)), "an empty list");

    // Protocol_Services_Supported has readRange (35).
    let services = c.read_property(dev, device, P::PROTOCOL_SERVICES_SUPPORTED, None).await.unwrap();
    let Some(Value::BitString(bits)) = services.as_primitive() else { panic!("{services:?}") };
    assert!(bits.get(35), "readRange in {bits:?}");
    assert!(bits.get(12) && bits.get(14), "readProperty, readPropertyMultiple");
    assert!(
        bits.get(5) && bits.get(38) && bits.get(41),
        "subscribeCOV, subscribeCOVProperty, subscribeCOVPropertyMultiple"
    );
    assert!(!bits.get(28), "unconfirmedCOVNotification is sent, not executed: {bits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_swap_keeps_the_records_and_their_sequence_numbers() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(5).await;
    let c = client().await;
    let before = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, None).await.unwrap();
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("read-range-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let next = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo-next")).unwrap();
    d.server.model().swap(&next).await.unwrap();
    let after = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, None).await.unwrap();
    assert_eq!(records(&after), records(&before), "the new instance serves the old buffer");
    // The schedule came along too: the next record is due at 10:05, not at once.
    d.server.model().tick(DateTime { unix_ms: T0_MS + 4 * 60_000 + 30_000, utc_offset_minutes: 0 }).await.unwrap();
    d.server.model().tick(DateTime { unix_ms: T0_MS + 5 * 60_000, utc_offset_minutes: 0 }).await.unwrap();
    let newest = Range::BySequenceNumber { reference_sequence: 6, count: count(-2) };
    let ack = c.read_range(&d.address, trend_log(), P::LOG_BUFFER, None, Some(newest)).await.unwrap();
    assert_eq!((minutes(&ack), ack.first_sequence_number), (vec![4, 5], Some(5)));
    assert_eq!(ack.result_flags, flags(false, true, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_zero_is_rejected() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(1).await;
    // Our encoder cannot write a zero count: build the request by hand.
    // [0] trend-log,1, [1] log-buffer, [3] { Unsigned 1, INTEGER 0 }
    let body = [0x0C, 0x05, 0x00, 0x00, 0x01, 0x19, 0x83, 0x3E, 0x21, 0x01, 0x31, 0x00, 0x3F];
    let peer = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 47808));
    let room = trellis::server::AnswerRoom { octets: 1476, segmented: false };
    let answer = d.server.execute(&peer, bacnet::enums::ConfirmedServiceChoice::READ_RANGE, &body, room).await;
    assert_eq!(answer, bacnet::tsm::Response::Reject(bacnet::RejectReason::PARAMETER_OUT_OF_RANGE));
}

/// Run the `trellis` CLI (its own free port) off the runtime's threads.
async fn trellis(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(["--port", "0", "--timeout-ms", "3000", "--retries", "1"])
            .args(&args)
            .output()
            .expect("run trellis")
    })
    .await
    .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_the_served_trend_log_by_position_sequence_and_time() {
    let _timing = crate::peers::shared().await;
    let d = serve_demo(RECORDS).await;
    let addr = format!("127.0.0.1:{}", d.port);
    let rr = |extra: &[&str]| {
        let mut args = vec!["readrange", addr.as_str(), "trend-log,1", "log-buffer"];
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let run = |args: Vec<String>| async move { trellis(&args.iter().map(String::as_str).collect::<Vec<_>>()).await };

    let o = run(rr(&[])).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = text(&o);
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines[..2], ["result-flags: {first-item, last-item}", "item-count: 30"], "{all}");
    assert!(lines[2].starts_with("1: 2024-03-05 Tue 10:00:00.00  "), "position, timestamp, value: {all}");
    assert!(lines[2].ends_with("status-flags {}"), "{all}");
    assert!(lines[31].starts_with("30: 2024-03-05 Tue 10:29:00.00  ") && lines.len() == 32, "{all}");

    let o = run(rr(&["--sequence", "10", "--count", "2"])).await;
    let t = text(&o);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[..3], ["result-flags: {}", "item-count: 2", "first-sequence-number: 10"], "{t}");
    assert!(lines[3].starts_with("10: 2024-03-05 Tue 10:09:00.00") && lines[4].starts_with("11: "), "{t}");

    let o = run(rr(&["--position", "2", "--count", "-2"])).await;
    let t = text(&o);
    assert!(t.starts_with("result-flags: {first-item}\nitem-count: 2\n1: 2024-03-05 Tue 10:00:00.00"), "{t}");
    assert!(!t.contains("first-sequence-number"), "{t}");

    // A time without an offset is sent as written: the device's local time.
    let o = run(rr(&["--time", "2024-03-05T10:04:30", "--count", "3"])).await;
    let t = text(&o);
    assert!(
        t.starts_with("result-flags: {}\nitem-count: 3\nfirst-sequence-number: 6\n6: 2024-03-05 Tue 10:05:00.00"),
        "{t}"
    );
    let o = run(rr(&["--time", "2024-03-05T10:04:30", "--count", "-100"])).await;
    let t = text(&o);
    assert!(t.starts_with("result-flags: {first-item}\nitem-count: 5\nfirst-sequence-number: 1\n1: "), "{t}");

    let o = run(rr(&["--position", "40", "--count", "5"])).await;
    assert_eq!(text(&o), "result-flags: {}\nitem-count: 0\n", "past the end: nothing");

    let o = trellis(&["readrange", &addr, "analog-input,1", "present-value"]).await;
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "trellis: BACnet error services: property-is-not-a-list");
    let o = trellis(&["readrange", &addr, "trend-log,2", "log-buffer"]).await;
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "trellis: BACnet error object: unknown-object");
}
