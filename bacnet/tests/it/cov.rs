//! The COV subscription table (Clauses 13.1, 13.14, 13.15) on a simulated
//! clock, written as the standard's sequence diagrams: a COV-client
//! subscribes, the COV-server's values change, notifications go out.
//!
//! `subscribe!`/`cancel!` are client → server requests; `values!` is the
//! server's object taking new values (what the host feeds `observe`);
//! `notified(&mut table)` is what the server sends to its subscribers.

use bacnet::codec::{BitString, ObjectIdentifier};
use bacnet::cov::{
    COVSubscription, CovConfig, CovTable, Notification, Recipient, RecipientProcess, Refusal, Subscribed, Target,
};
use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::{
    BacnetError, COVNotification, ObjectPropertyReference, PropertyReference, PropertyValue, ServiceCodec,
    SubscribeCOVPropertyRequest, SubscribeCOVRequest,
};
use bacnet::value::{AnyValue, Value};
use proptest::prelude::*;
use std::time::Duration;

type Table = CovTable<&'static str>;

const WORKSTATION: &str = "workstation";
const LOGGER: &str = "logger";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

fn oid(t: ObjectType, i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, i).unwrap()
}

fn ai(i: u32) -> ObjectIdentifier {
    oid(ObjectType::ANALOG_INPUT, i)
}

fn table() -> Table {
    CovTable::new(CovConfig::default())
}

/// Status_Flags {in-alarm, fault, overridden, out-of-service}.
fn flags(in_alarm: bool, fault: bool) -> AnyValue {
    AnyValue::primitive(Value::BitString(BitString::from_bits(&[in_alarm, fault, false, false])))
}

fn normal() -> AnyValue {
    flags(false, false)
}

fn real(v: f32) -> AnyValue {
    AnyValue::primitive(Value::Real(v))
}

fn enumerated(v: u32) -> AnyValue {
    AnyValue::primitive(Value::Enumerated(v))
}

fn unsigned(v: u64) -> AnyValue {
    AnyValue::primitive(Value::Unsigned(v))
}

fn pv(property: P, value: AnyValue) -> PropertyValue {
    PropertyValue { property, array_index: None, value, priority: None }
}

/// Client → server: SubscribeCOV (`confirmed`, `lifetime` as on the wire).
macro_rules! subscribe {
    ($t:expr, $now:expr, $who:expr, $process:expr, $object:expr, $confirmed:expr, $lifetime:expr) => {
        subscribe!($t, $now, $who, $process, $object, $confirmed, $lifetime, Target::Monitorable)
    };
    ($t:expr, $now:expr, $who:expr, $process:expr, $object:expr, $confirmed:expr, $lifetime:expr, $target:expr) => {
        $t.subscribe_cov(
            $now,
            $who,
            &SubscribeCOVRequest {
                subscriber_process_identifier: $process,
                monitored_object: $object,
                issue_confirmed_notifications: $confirmed,
                lifetime: $lifetime,
            },
            $target,
        )
    };
}

/// Client → server: SubscribeCOV cancellation.
macro_rules! cancel {
    ($t:expr, $now:expr, $who:expr, $process:expr, $object:expr) => {
        $t.subscribe_cov($now, $who, &SubscribeCOVRequest::cancel($process, $object), Target::Monitorable)
    };
}

/// The server's object takes values: `values!(t, now, object, P => v, …)`.
macro_rules! values {
    ($t:expr, $now:expr, $object:expr $(, $p:expr => $v:expr)* $(,)?) => {
        $t.observe($now, $object, &[$(pv($p, $v)),*])
    };
}

/// SubscribeCOVProperty from `who`.
fn subscribe_property(
    t: &mut Table,
    now: Duration,
    who: &'static str,
    object: ObjectIdentifier,
    property: P,
    cov_increment: Option<f32>,
    target: Target,
) -> Result<Subscribed, Refusal> {
    let request = SubscribeCOVPropertyRequest {
        subscriber_process_identifier: 7,
        monitored_object: object,
        issue_confirmed_notifications: Some(true),
        lifetime: Some(600),
        monitored_property: PropertyReference::new(property),
        cov_increment,
    };
    t.subscribe_cov_property(now, who, &request, target)
}

/// Server → clients: every notification queued, in order.
fn notified(t: &mut Table) -> Vec<Notification<&'static str>> {
    std::iter::from_fn(|| t.poll_notification()).collect()
}

/// The single notification queued, as (subscriber, Present_Value).
fn one_present_value(t: &mut Table) -> (&'static str, AnyValue) {
    let mut n = notified(t);
    assert_eq!(n.len(), 1, "exactly one notification: {n:?}");
    let n = n.remove(0);
    (n.subscriber, n.values[0].value.clone())
}

fn error(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError::new(class, code)
}

// ---------------------------------------------------------------------------
// Subscribing and the initial notification
// ---------------------------------------------------------------------------

#[test]
fn subscribe_cov_is_followed_by_an_initial_notification_of_present_value_and_status_flags() {
    let mut t = table();
    let ok = subscribe!(t, secs(0), WORKSTATION, 18, ai(10), Some(false), Some(300)).unwrap();
    assert_eq!(ok, Subscribed::Created);
    assert!(ok.initial_notification_due());
    assert!(notified(&mut t).is_empty(), "nothing goes before the host has read the values");

    let to_read = t.properties_to_read(ai(10));
    for p in [P::PRESENT_VALUE, P::STATUS_FLAGS, P::COV_INCREMENT] {
        assert!(to_read.contains(&PropertyReference::new(p)), "{p} must be read: {to_read:?}");
    }

    assert_eq!(
        values!(t, secs(0), ai(10), P::PRESENT_VALUE => real(65.0), P::STATUS_FLAGS => normal(), P::COV_INCREMENT => real(1.0)),
        1
    );
    let n = notified(&mut t).remove(0);
    assert_eq!(n.subscriber, WORKSTATION);
    assert_eq!(n.subscriber_process_identifier, 18);
    assert!(!n.confirmed);
    assert_eq!(n.monitored_object, ai(10));
    assert_eq!(n.time_remaining, 300);
    assert_eq!(n.values, vec![pv(P::PRESENT_VALUE, real(65.0)), pv(P::STATUS_FLAGS, normal())]);

    // The body the host sends decodes as the COVNotification it meant.
    let body = n.clone().into_request(oid(ObjectType::DEVICE, 4)).to_vec();
    let decoded = COVNotification::decode(&body).unwrap();
    assert_eq!(decoded.initiating_device, oid(ObjectType::DEVICE, 4));
    assert_eq!(decoded.values, n.values);
    assert_eq!(t.counters().created, 1);
    assert_eq!(t.counters().notifications, 1);
}

#[test]
fn the_initial_notification_waits_until_the_monitored_value_is_known() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(true), Some(0)).unwrap();
    assert_eq!(values!(t, secs(0), ai(1), P::STATUS_FLAGS => normal()), 0);
    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(3.0)), 1);
    let n = notified(&mut t).remove(0);
    assert_eq!(n.values, vec![pv(P::PRESENT_VALUE, real(3.0)), pv(P::STATUS_FLAGS, normal())]);
    assert_eq!(n.time_remaining, 0, "lifetime 0 is indefinite");
}

// ---------------------------------------------------------------------------
// Change decisions (Clause 13.1)
// ---------------------------------------------------------------------------

#[test]
fn analog_changes_below_the_cov_increment_are_not_reported_and_changes_at_or_above_it_are() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(0)).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0), P::STATUS_FLAGS => normal(), P::COV_INCREMENT => real(1.0));
    assert_eq!(one_present_value(&mut t).1, real(20.0), "initial notification");

    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(20.5)), 0, "0.5 < 1.0");
    assert_eq!(values!(t, secs(2), ai(1), P::PRESENT_VALUE => real(20.75)), 0, "0.75 < 1.0");
    // Measured from the last value notified (20.0), not the last observed.
    assert_eq!(values!(t, secs(3), ai(1), P::PRESENT_VALUE => real(21.0)), 1, "1.0 = increment");
    assert_eq!(one_present_value(&mut t).1, real(21.0));
    assert_eq!(values!(t, secs(4), ai(1), P::PRESENT_VALUE => real(20.25)), 0, "-0.75");
    assert_eq!(values!(t, secs(5), ai(1), P::PRESENT_VALUE => real(19.5)), 1, "-1.5 > increment, downwards");
    assert_eq!(one_present_value(&mut t).1, real(19.5));
    assert_eq!(values!(t, secs(6), ai(1), P::PRESENT_VALUE => real(30.0)), 1, "well above");
    assert_eq!(one_present_value(&mut t).1, real(30.0));
}

#[test]
fn a_new_cov_increment_from_the_object_applies_to_the_next_change() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0), P::COV_INCREMENT => real(5.0));
    notified(&mut t);
    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(22.0)), 0);
    assert_eq!(values!(t, secs(2), ai(1), P::COV_INCREMENT => real(2.0)), 1, "22.0 is now 2.0 from 20.0");
}

#[test]
fn without_a_cov_increment_any_change_of_an_analog_value_is_reported() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0), P::STATUS_FLAGS => normal());
    notified(&mut t);
    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(20.0), P::STATUS_FLAGS => normal()), 0);
    assert_eq!(values!(t, secs(2), ai(1), P::PRESENT_VALUE => real(20.001)), 1);
}

#[test]
fn a_change_of_status_flags_is_always_reported_even_within_the_increment() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(true), None).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0), P::STATUS_FLAGS => normal(), P::COV_INCREMENT => real(10.0));
    notified(&mut t);

    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(20.5), P::STATUS_FLAGS => flags(true, false)), 1);
    let n = notified(&mut t).remove(0);
    assert_eq!(n.values, vec![pv(P::PRESENT_VALUE, real(20.5)), pv(P::STATUS_FLAGS, flags(true, false))]);
    assert_eq!(values!(t, secs(2), ai(1), P::STATUS_FLAGS => flags(true, false)), 0, "same flags again");
    assert_eq!(values!(t, secs(3), ai(1), P::STATUS_FLAGS => normal()), 1, "back to normal");
}

#[test]
fn any_change_of_a_binary_present_value_is_reported() {
    let bi = oid(ObjectType::BINARY_INPUT, 3);
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, bi, Some(false), None).unwrap();
    assert!(!t.properties_to_read(bi).contains(&PropertyReference::new(P::COV_INCREMENT)));
    values!(t, secs(0), bi, P::PRESENT_VALUE => enumerated(0), P::STATUS_FLAGS => normal());
    assert_eq!(one_present_value(&mut t).1, enumerated(0));
    assert_eq!(values!(t, secs(1), bi, P::PRESENT_VALUE => enumerated(0)), 0);
    assert_eq!(values!(t, secs(2), bi, P::PRESENT_VALUE => enumerated(1)), 1);
    assert_eq!(one_present_value(&mut t).1, enumerated(1));
}

#[test]
fn multi_state_values_report_any_change_even_when_a_cov_increment_is_observed() {
    let msv = oid(ObjectType::MULTI_STATE_VALUE, 2);
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, msv, Some(false), None).unwrap();
    values!(t, secs(0), msv, P::PRESENT_VALUE => unsigned(1), P::COV_INCREMENT => real(5.0));
    notified(&mut t);
    assert_eq!(values!(t, secs(1), msv, P::PRESENT_VALUE => unsigned(2)), 1, "Table 13-1: any change");
}

#[test]
fn each_subscriber_is_measured_against_what_it_was_last_told() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0), P::COV_INCREMENT => real(1.0));
    assert_eq!(one_present_value(&mut t), (WORKSTATION, real(20.0)));
    values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(20.6));
    assert!(notified(&mut t).is_empty());

    subscribe!(t, secs(2), LOGGER, 1, ai(1), Some(false), None).unwrap();
    values!(t, secs(2), ai(1), P::PRESENT_VALUE => real(20.6));
    assert_eq!(one_present_value(&mut t), (LOGGER, real(20.6)), "only the new subscriber's initial notification");

    values!(t, secs(3), ai(1), P::PRESENT_VALUE => real(21.1));
    assert_eq!(one_present_value(&mut t), (WORKSTATION, real(21.1)), "1.1 from 20.0; 0.5 from 20.6");
}

// ---------------------------------------------------------------------------
// Renewal, cancellation, lifetime
// ---------------------------------------------------------------------------

#[test]
fn resubscribing_refreshes_the_lifetime_replaces_the_parameters_and_sends_the_initial_notification_again() {
    let mut t = CovTable::new(CovConfig {
        max_subscriptions_per_subscriber: 1,
        max_subscriptions: 1,
        ..without_origin_limits()
    });
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(60)).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0));
    notified(&mut t);
    assert_eq!(t.poll_timeout(), Some(secs(60)));

    let again = subscribe!(t, secs(50), WORKSTATION, 1, ai(1), Some(true), Some(60)).unwrap();
    assert_eq!(again, Subscribed::Renewed, "same key, even with the table full");
    assert!(again.initial_notification_due());
    assert_eq!(t.len(), 1, "no new slot");
    assert_eq!(t.poll_timeout(), Some(secs(110)));

    values!(t, secs(50), ai(1), P::PRESENT_VALUE => real(20.0));
    let n = notified(&mut t).remove(0);
    assert!(n.confirmed, "the renewal's parameters");
    assert_eq!(n.time_remaining, 60);
    t.handle_timeout(secs(60));
    assert_eq!(t.len(), 1, "the old lifetime no longer applies");
    assert_eq!(t.counters().renewed, 1);
}

#[test]
fn a_cancellation_removes_the_subscription_and_no_notification_follows() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(60)).unwrap();
    subscribe!(t, secs(0), WORKSTATION, 2, ai(1), Some(false), Some(60)).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0));
    notified(&mut t);

    assert_eq!(cancel!(t, secs(1), WORKSTATION, 1, ai(1)), Ok(Subscribed::Cancelled));
    assert!(!Subscribed::Cancelled.initial_notification_due());
    values!(t, secs(2), ai(1), P::PRESENT_VALUE => real(99.0));
    let n = notified(&mut t);
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].subscriber_process_identifier, 2, "only process 2 is left");
    assert_eq!(t.counters().cancelled, 1);
    // What a driver asks before sending a notification it held.
    assert!(!t.is_subscribed(&WORKSTATION, 1, ai(1)));
    assert!(t.is_subscribed(&WORKSTATION, 2, ai(1)));
    assert!(!t.is_subscribed(&LOGGER, 2, ai(1)) && !t.is_subscribed(&WORKSTATION, 2, ai(2)));
}

#[test]
fn cancelling_a_subscription_that_does_not_exist_succeeds() {
    let mut t = table();
    assert_eq!(cancel!(t, secs(0), WORKSTATION, 1, ai(1)), Ok(Subscribed::NothingToCancel));
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    assert_eq!(cancel!(t, secs(0), WORKSTATION, 2, ai(1)), Ok(Subscribed::NothingToCancel), "other process");
    assert_eq!(cancel!(t, secs(0), LOGGER, 1, ai(1)), Ok(Subscribed::NothingToCancel), "other subscriber");
    assert_eq!(t.len(), 1);
    assert_eq!(t.counters().cancelled, 0);
    assert_eq!(t.counters().refused.total(), 0);
}

#[test]
fn when_the_lifetime_ends_the_subscription_is_removed_and_notifies_no_more() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(60)).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0));
    notified(&mut t);

    assert_eq!(t.poll_timeout(), Some(secs(60)));
    t.handle_timeout(secs(60) - ms(1));
    assert_eq!(t.len(), 1, "not before its time");
    t.handle_timeout(secs(60));
    assert!(t.is_empty());
    assert_eq!(t.poll_timeout(), None);
    assert!(!t.is_monitored(ai(1)));
    assert_eq!(values!(t, secs(61), ai(1), P::PRESENT_VALUE => real(99.0)), 0);
    assert!(notified(&mut t).is_empty());
    assert_eq!(t.counters().expired, 1);
}

#[test]
fn an_expired_subscription_is_silent_even_if_the_timer_fires_late() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(60)).unwrap();
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(20.0));
    notified(&mut t);
    // No handle_timeout at 60 s: the next input expires it.
    assert_eq!(values!(t, secs(75), ai(1), P::PRESENT_VALUE => real(99.0)), 0);
    assert_eq!(t.active_subscriptions(secs(75)).count(), 0);
    assert_eq!(t.counters().expired, 1);
}

#[test]
fn time_remaining_counts_down_in_whole_seconds_rounded_up() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(120)).unwrap();
    subscribe!(t, secs(0), LOGGER, 1, ai(1), Some(false), Some(0)).unwrap();
    values!(t, ms(500), ai(1), P::PRESENT_VALUE => real(1.0));
    let remaining: Vec<_> = notified(&mut t).iter().map(|n| (n.subscriber, n.time_remaining)).collect();
    assert!(remaining.contains(&(WORKSTATION, 120)), "119.5 s left: {remaining:?}");
    assert!(remaining.contains(&(LOGGER, 0)), "indefinite: {remaining:?}");

    values!(t, secs(30), ai(1), P::PRESENT_VALUE => real(2.0));
    let n = notified(&mut t);
    assert_eq!(n.iter().find(|n| n.subscriber == WORKSTATION).unwrap().time_remaining, 90);

    let left =
        |t: &Table, now| t.active_subscriptions(now).find(|s| *s.subscriber == WORKSTATION).map(|s| s.time_remaining);
    assert_eq!(left(&t, secs(100)), Some(20));
    assert_eq!(left(&t, ms(119_800)), Some(1), "never 0 while alive: 0 means indefinite");
    assert_eq!(left(&t, secs(120)), None);
}

#[test]
fn a_deleted_object_takes_its_subscriptions_with_it() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    subscribe!(t, secs(0), LOGGER, 1, ai(1), Some(false), None).unwrap();
    subscribe!(t, secs(0), LOGGER, 1, ai(2), Some(false), None).unwrap();
    assert_eq!(t.remove_object(ai(1)), 2);
    assert_eq!(t.monitored_objects().collect::<Vec<_>>(), vec![ai(2)]);
    assert_eq!(t.counters().removed_with_object, 2);
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

#[test]
fn the_per_subscriber_limit_refuses_with_no_space_to_add_list_element() {
    let mut t = CovTable::new(CovConfig {
        max_subscriptions_per_subscriber: 2,
        max_subscriptions: 10,
        ..without_origin_limits()
    });
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), None).unwrap();
    subscribe!(t, secs(0), WORKSTATION, 1, ai(2), Some(false), None).unwrap();
    let refused = subscribe!(t, secs(0), WORKSTATION, 1, ai(3), Some(false), None).unwrap_err();
    assert_eq!(refused, Refusal::SubscriberLimit);
    assert_eq!(refused.error(), error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT));
    assert_eq!(subscribe!(t, secs(0), LOGGER, 1, ai(3), Some(false), None), Ok(Subscribed::Created));
    assert_eq!(t.counters().refused.get(Refusal::SubscriberLimit), 1);

    // A slot freed by a cancellation can be used again.
    cancel!(t, secs(1), WORKSTATION, 1, ai(1)).unwrap();
    assert_eq!(subscribe!(t, secs(1), WORKSTATION, 1, ai(3), Some(false), None), Ok(Subscribed::Created));
}

#[test]
fn the_table_limit_refuses_with_no_space_to_add_list_element() {
    let mut t = CovTable::new(CovConfig {
        max_subscriptions_per_subscriber: 10,
        max_subscriptions: 2,
        ..without_origin_limits()
    });
    subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(10)).unwrap();
    subscribe!(t, secs(0), LOGGER, 1, ai(1), Some(false), None).unwrap();
    let refused = subscribe!(t, secs(0), "third", 1, ai(1), Some(false), None).unwrap_err();
    assert_eq!(refused, Refusal::TableFull);
    assert_eq!(BacnetError::from(refused), error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT));
    assert_eq!(t.counters().refused.get(Refusal::TableFull), 1);
    // An expired subscription does not hold its slot.
    assert_eq!(subscribe!(t, secs(10), "third", 1, ai(1), Some(false), None), Ok(Subscribed::Created));
}

#[test]
fn an_exempt_subscriber_follows_every_object_and_takes_no_place_from_the_others() {
    // The gateway's own bridge ("bridge") follows 100 objects on a table of
    // 4 places, 2 per subscriber; the network's subscribers keep their 4.
    let mut t = CovTable::new(CovConfig {
        max_subscriptions_per_subscriber: 2,
        max_subscriptions: 4,
        reserved_subscriptions: 0,
        ..without_origin_limits()
    })
    .exempting(|s: &&str| *s == "bridge");
    for i in 0..100 {
        assert_eq!(subscribe!(t, secs(0), "bridge", 1, ai(i), Some(false), None), Ok(Subscribed::Created), "ai {i}");
    }
    for (who, i) in [(WORKSTATION, 1), (WORKSTATION, 2), (LOGGER, 1), (LOGGER, 2)] {
        assert_eq!(subscribe!(t, secs(0), who, 1, ai(i), Some(false), None), Ok(Subscribed::Created), "{who}");
    }
    assert_eq!(subscribe!(t, secs(0), "third", 1, ai(1), Some(false), None), Err(Refusal::TableFull));
    assert_eq!(subscribe!(t, secs(0), WORKSTATION, 1, ai(3), Some(false), None), Err(Refusal::SubscriberLimit));
    assert_eq!(t.len(), 104);
}

/// A subscriber on B/IP: (IP address, UDP port); its origin is the address.
type Host = (u8, u16);

fn by_address() -> CovTable<Host> {
    let config = CovConfig {
        max_subscriptions_per_subscriber: 64,
        max_subscriptions: 4096,
        max_subscriptions_per_origin: 1024,
        reserved_subscriptions: 256,
        ..CovConfig::default()
    };
    CovTable::with_origin(config, |h| (h.0, 0))
}

#[test]
fn one_host_subscribing_from_70_ports_is_held_to_its_origin_quota() {
    let mut t = by_address();
    let mut created = 0;
    for port in 0..70u16 {
        for i in 0..64 {
            created += usize::from(subscribe!(t, secs(0), (1, 40_000 + port), 1, ai(i), Some(false), None).is_ok());
        }
    }
    assert_eq!(created, 1024, "the attacker's address holds its quota, not the 4,096 places");
    assert_eq!(t.counters().refused.get(Refusal::OriginLimit), 70 * 64 - 1024);
    assert_eq!(Refusal::OriginLimit.error(), error(ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT));
    // A front end elsewhere still subscribes.
    assert_eq!(subscribe!(t, secs(0), (2, 47808), 7, ai(1), Some(true), Some(300)), Ok(Subscribed::Created));
}

#[test]
fn when_heavy_hosts_fill_the_table_a_new_subscriber_gets_a_reserved_place() {
    let mut t = by_address();
    // Four hosts take their quota each (3,840 fit outside the reserve).
    for host in 1..=4u8 {
        for port in 0..16u16 {
            for i in 0..64 {
                let _ = subscribe!(t, secs(0), (host, port), 1, ai(i), Some(false), None);
            }
        }
    }
    assert_eq!(t.len(), 4096 - 256, "the heavy hosts stop at the reserve");
    assert!(t.counters().refused.get(Refusal::TableFull) > 0);
    // A light host gets a reserved place, up to one subscriber's worth.
    for i in 0..64 {
        assert_eq!(subscribe!(t, secs(0), (5, 47808), 1, ai(i), Some(false), None), Ok(Subscribed::Created));
    }
    assert_eq!(subscribe!(t, secs(0), (5, 47809), 1, ai(0), Some(false), None), Err(Refusal::TableFull));
    assert_eq!(subscribe!(t, secs(0), (6, 47808), 1, ai(0), Some(false), None), Ok(Subscribed::Created));
    // Renewals and cancellations are never refused for the limits.
    assert_eq!(subscribe!(t, secs(1), (1, 0), 1, ai(0), Some(false), None), Ok(Subscribed::Renewed));
}

#[test]
fn a_maximum_lifetime_refuses_longer_ones_and_indefinite_ones_only_when_configured() {
    let config = CovConfig { max_lifetime: Some(3600), ..CovConfig::default() };
    let mut t = CovTable::new(config);
    assert_eq!(subscribe!(t, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(3600)), Ok(Subscribed::Created));
    let refused = subscribe!(t, secs(0), WORKSTATION, 2, ai(1), Some(false), Some(3601)).unwrap_err();
    assert_eq!(refused, Refusal::LifetimeOutOfRange);
    assert_eq!(refused.error(), error(ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE));
    // Lifetime 0 (indefinite) is still honoured: front ends use it.
    assert_eq!(subscribe!(t, secs(0), WORKSTATION, 3, ai(1), Some(false), Some(0)), Ok(Subscribed::Created));
    assert_eq!(subscribe!(t, secs(0), WORKSTATION, 4, ai(1), Some(false), None), Ok(Subscribed::Created));

    let mut strict = CovTable::new(CovConfig { allow_indefinite: false, ..config });
    assert_eq!(
        subscribe!(strict, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(0)),
        Err(Refusal::LifetimeOutOfRange)
    );
    assert_eq!(subscribe!(strict, secs(0), WORKSTATION, 1, ai(1), Some(false), None), Err(Refusal::LifetimeOutOfRange));
    assert_eq!(subscribe!(strict, secs(0), WORKSTATION, 1, ai(1), Some(false), Some(60)), Ok(Subscribed::Created));
}

#[test]
fn unknown_or_incapable_objects_are_refused_with_their_error() {
    let mut t = table();
    let unknown = subscribe!(t, secs(0), WORKSTATION, 1, ai(9), Some(false), None, Target::UnknownObject);
    assert_eq!(unknown.unwrap_err().error(), error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
    let incapable = subscribe!(t, secs(0), WORKSTATION, 1, ai(9), Some(false), None, Target::ObjectNotCovCapable);
    assert_eq!(
        incapable.unwrap_err().error(),
        error(ErrorClass::OBJECT, ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED)
    );
    // A type whose Table 13-1 criteria are not implemented, whatever the host says.
    let device = subscribe!(t, secs(0), WORKSTATION, 1, oid(ObjectType::DEVICE, 4), Some(false), None);
    assert_eq!(device, Err(Refusal::ObjectNotCovCapable));
    let lp = subscribe!(t, secs(0), WORKSTATION, 1, oid(ObjectType::LOOP, 1), Some(false), None);
    assert_eq!(lp, Err(Refusal::ObjectNotCovCapable));
    // Cancellations are checked the same way.
    let cancel = t.subscribe_cov(secs(0), WORKSTATION, &SubscribeCOVRequest::cancel(1, ai(9)), Target::UnknownObject);
    assert_eq!(cancel, Err(Refusal::UnknownObject));

    assert!(t.is_empty());
    assert_eq!(t.counters().refused.get(Refusal::UnknownObject), 2);
    assert_eq!(t.counters().refused.get(Refusal::ObjectNotCovCapable), 3);
    assert_eq!(t.counters().refused.total(), 5);
}

#[test]
fn subscribe_cov_property_on_unknown_or_unmonitorable_properties_is_refused_with_their_error() {
    let mut t = table();
    let cases = [
        (Target::UnknownObject, error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)),
        (Target::UnknownProperty, error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)),
        (Target::NotCovProperty, error(ErrorClass::PROPERTY, ErrorCode::NOT_COV_PROPERTY)),
        (Target::PropertyIsNotAnArray, error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY)),
        (Target::InvalidArrayIndex, error(ErrorClass::PROPERTY, ErrorCode::INVALID_ARRAY_INDEX)),
    ];
    for (target, want) in cases {
        let got = subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::DESCRIPTION, None, target);
        assert_eq!(got.map_err(Refusal::error), Err(want), "{target:?}");
    }
    assert!(t.is_empty());
    assert_eq!(t.counters().refused.get(Refusal::NotCovProperty), 1);
}

#[test]
fn a_negative_or_nan_cov_increment_is_refused_and_zero_is_any_change() {
    let mut t = table();
    for bad in [-0.5, f32::NAN, f32::NEG_INFINITY] {
        let got =
            subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::PRESENT_VALUE, Some(bad), Target::Monitorable);
        assert_eq!(got, Err(Refusal::CovIncrementOutOfRange), "{bad}");
        assert_eq!(
            Refusal::CovIncrementOutOfRange.error(),
            error(ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE)
        );
    }
    assert!(t.is_empty());

    let zero =
        subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::PRESENT_VALUE, Some(0.0), Target::Monitorable);
    assert_eq!(zero, Ok(Subscribed::Created));
    values!(t, secs(0), ai(1), P::PRESENT_VALUE => real(1.0), P::COV_INCREMENT => real(10.0));
    notified(&mut t);
    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(1.25)), 1, "0 overrides the object's 10");
}

// ---------------------------------------------------------------------------
// SubscribeCOVProperty
// ---------------------------------------------------------------------------

#[test]
fn subscribe_cov_property_uses_its_own_increment_over_the_objects() {
    let av = oid(ObjectType::ANALOG_VALUE, 5);
    let mut t = table();
    subscribe_property(&mut t, secs(0), WORKSTATION, av, P::PRESENT_VALUE, Some(5.0), Target::Monitorable).unwrap();
    assert!(
        !t.properties_to_read(av).contains(&PropertyReference::new(P::COV_INCREMENT)),
        "its own increment: the object's is not needed"
    );
    values!(t, secs(0), av, P::PRESENT_VALUE => real(10.0), P::STATUS_FLAGS => normal(), P::COV_INCREMENT => real(1.0));
    let n = notified(&mut t).remove(0);
    assert!(n.confirmed);
    assert_eq!(n.values, vec![pv(P::PRESENT_VALUE, real(10.0)), pv(P::STATUS_FLAGS, normal())]);

    assert_eq!(values!(t, secs(1), av, P::PRESENT_VALUE => real(14.0)), 0, "4 < 5 (the object's 1 is ignored)");
    assert_eq!(values!(t, secs(2), av, P::PRESENT_VALUE => real(15.0)), 1, "5 = 5");
}

#[test]
fn subscribe_cov_property_on_another_real_property_reports_any_change_without_its_own_increment() {
    let mut t = table();
    subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::HIGH_LIMIT, None, Target::Monitorable).unwrap();
    values!(t, secs(0), ai(1), P::HIGH_LIMIT => real(80.0), P::STATUS_FLAGS => normal(), P::COV_INCREMENT => real(10.0));
    let n = notified(&mut t).remove(0);
    assert_eq!(n.values, vec![pv(P::HIGH_LIMIT, real(80.0)), pv(P::STATUS_FLAGS, normal())]);
    assert_eq!(values!(t, secs(1), ai(1), P::PRESENT_VALUE => real(50.0)), 0, "Present_Value is not monitored");
    assert_eq!(values!(t, secs(2), ai(1), P::HIGH_LIMIT => real(80.5)), 1, "COV_Increment is for Present_Value only");
}

#[test]
fn subscribe_cov_property_without_status_flags_reports_the_property_alone() {
    let dev = oid(ObjectType::DEVICE, 4);
    let mut t = table();
    subscribe_property(&mut t, secs(0), WORKSTATION, dev, P::SYSTEM_STATUS, None, Target::Monitorable).unwrap();
    values!(t, secs(0), dev, P::SYSTEM_STATUS => enumerated(0));
    assert_eq!(notified(&mut t).remove(0).values, vec![pv(P::SYSTEM_STATUS, enumerated(0))]);
}

#[test]
fn subscribe_cov_property_on_status_flags_reports_them_once() {
    let mut t = table();
    subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::STATUS_FLAGS, None, Target::Monitorable).unwrap();
    values!(t, secs(0), ai(1), P::STATUS_FLAGS => normal());
    assert_eq!(notified(&mut t).remove(0).values, vec![pv(P::STATUS_FLAGS, normal())]);
    assert_eq!(values!(t, secs(1), ai(1), P::STATUS_FLAGS => flags(false, true)), 1);
}

#[test]
fn subscribe_cov_and_subscribe_cov_property_by_the_same_process_are_two_subscriptions() {
    let mut t = table();
    let req = SubscribeCOVRequest {
        subscriber_process_identifier: 7,
        monitored_object: ai(1),
        issue_confirmed_notifications: Some(true),
        lifetime: None,
    };
    assert_eq!(t.subscribe_cov(secs(0), WORKSTATION, &req, Target::Monitorable), Ok(Subscribed::Created));
    let p = subscribe_property(&mut t, secs(0), WORKSTATION, ai(1), P::PRESENT_VALUE, None, Target::Monitorable);
    assert_eq!(p, Ok(Subscribed::Created));
    assert_eq!(t.len(), 2);
    // Cancelling the SubscribeCOV one leaves the other.
    t.subscribe_cov(secs(0), WORKSTATION, &SubscribeCOVRequest::cancel(7, ai(1)), Target::Monitorable).unwrap();
    assert_eq!(t.len(), 1);
}

// ---------------------------------------------------------------------------
// Active_COV_Subscriptions
// ---------------------------------------------------------------------------

/// BACnet/IP subscriber 192.168.1.10:47808 on the local network.
fn workstation_address(_: &&'static str) -> Recipient {
    Recipient::Address { network_number: 0, mac_address: vec![192, 168, 1, 10, 0xBA, 0xC0] }
}

/// Hand-encoded from Clause 20.2 (no Annex F example exists):
/// BACnetCOVSubscription { recipient [0] { recipient [0] address [1]
/// { network-number 0, mac-address C0A8010ABAC0 }, processIdentifier [1] 18 },
/// monitoredPropertyReference [1] { analog-input 10, present-value },
/// issueConfirmedNotifications [2] TRUE, timeRemaining [3] 300 }.
const ACTIVE_SUBSCRIPTION: [u8; 32] = [
    0x0E, 0x0E, 0x1E, 0x21, 0x00, 0x65, 0x06, 0xC0, 0xA8, 0x01, 0x0A, 0xBA, 0xC0, 0x1F, 0x0F, 0x19, 0x12, 0x0F, 0x1E,
    0x0C, 0x00, 0x00, 0x00, 0x0A, 0x19, 0x55, 0x1F, 0x29, 0x01, 0x3A, 0x01, 0x2C,
];

fn active_subscription() -> COVSubscription {
    COVSubscription {
        recipient: RecipientProcess { recipient: workstation_address(&WORKSTATION), process_identifier: 18 },
        monitored_property: ObjectPropertyReference { object: ai(10), property: P::PRESENT_VALUE, array_index: None },
        issue_confirmed_notifications: true,
        time_remaining: 300,
        cov_increment: None,
    }
}

#[test]
fn a_cov_subscription_encodes_to_and_decodes_from_its_golden_bytes() {
    assert_eq!(active_subscription().to_vec(), ACTIVE_SUBSCRIPTION);
    assert_eq!(COVSubscription::decode(&ACTIVE_SUBSCRIPTION).unwrap(), active_subscription());
    for n in 0..ACTIVE_SUBSCRIPTION.len() {
        assert!(COVSubscription::decode(&ACTIVE_SUBSCRIPTION[..n]).is_err(), "prefix of {n} octets decoded");
    }
}

#[test]
fn a_recipient_by_device_and_a_cov_increment_round_trip() {
    let s = COVSubscription {
        recipient: RecipientProcess { recipient: Recipient::Device(oid(ObjectType::DEVICE, 5)), process_identifier: 1 },
        cov_increment: Some(0.5),
        ..active_subscription()
    };
    let bytes = s.to_vec();
    assert_eq!(&bytes[..8], &[0x0E, 0x0E, 0x0C, 0x02, 0x00, 0x00, 0x05, 0x0F], "device [0]");
    assert_eq!(&bytes[bytes.len() - 5..], &[0x4C, 0x3F, 0x00, 0x00, 0x00], "covIncrement [4] 0.5");
    assert_eq!(COVSubscription::decode(&bytes).unwrap(), s);
}

#[test]
fn active_cov_subscriptions_list_every_live_subscription_and_decode_back() {
    let mut t = table();
    subscribe!(t, secs(0), WORKSTATION, 18, ai(10), Some(true), Some(300)).unwrap();
    let prop = SubscribeCOVPropertyRequest {
        subscriber_process_identifier: 3,
        monitored_object: ai(11),
        issue_confirmed_notifications: Some(false),
        lifetime: None,
        monitored_property: PropertyReference { property: P::PRIORITY_ARRAY, array_index: Some(8) },
        cov_increment: Some(2.5),
    };
    t.subscribe_cov_property(secs(0), LOGGER, &prop, Target::Monitorable).unwrap();
    subscribe!(t, secs(0), LOGGER, 4, ai(12), Some(true), Some(5)).unwrap();

    let mut value = Vec::new();
    t.encode_active_cov_subscriptions(secs(10), &mut value, |who| match *who {
        WORKSTATION => workstation_address(who),
        _ => Recipient::Address { network_number: 5, mac_address: vec![0x21] },
    });
    assert!(AnyValue::from_bytes(&value).is_ok(), "a well-formed property value");
    let list = COVSubscription::decode_list(&value).unwrap();
    assert_eq!(list.len(), 2, "the 5 s subscription has expired: {list:?}");
    assert_eq!(list[0], COVSubscription { time_remaining: 290, ..active_subscription() });
    assert_eq!(
        list[1],
        COVSubscription {
            recipient: RecipientProcess {
                recipient: Recipient::Address { network_number: 5, mac_address: vec![0x21] },
                process_identifier: 3,
            },
            monitored_property: ObjectPropertyReference {
                object: ai(11),
                property: P::PRIORITY_ARRAY,
                array_index: Some(8),
            },
            issue_confirmed_notifications: false,
            time_remaining: 0,
            cov_increment: Some(2.5),
        }
    );
}

#[test]
fn an_empty_table_lists_no_subscriptions() {
    let t = table();
    let mut value = Vec::new();
    t.encode_active_cov_subscriptions(secs(0), &mut value, workstation_address);
    assert!(value.is_empty());
    assert_eq!(COVSubscription::decode_list(&value).unwrap(), vec![]);
}

// ---------------------------------------------------------------------------
// Any sequence of requests, values and timeouts
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Subscribe { who: usize, process: u32, object: u32, confirmed: Option<bool>, lifetime: Option<u32>, target: u8 },
    SubscribeProperty { who: usize, object: u32, property: u32, increment: Option<f32>, lifetime: Option<u32> },
    Observe { object: u32, value: f32, alarm: bool, increment: Option<f32> },
    Advance { millis: u64 },
    Timeout,
}

fn op() -> impl Strategy<Value = Op> {
    let who = 0usize..4;
    let object = 0u32..4;
    let lifetime = proptest::option::of(0u32..20);
    prop_oneof![
        (who.clone(), 0u32..3, object.clone(), proptest::option::of(any::<bool>()), lifetime.clone(), 0u8..8).prop_map(
            |(who, process, object, confirmed, lifetime, target)| Op::Subscribe {
                who,
                process,
                object,
                confirmed,
                lifetime,
                target
            }
        ),
        (who, object.clone(), 84u32..87, proptest::option::of(any::<f32>()), lifetime).prop_map(
            |(who, object, property, increment, lifetime)| Op::SubscribeProperty {
                who,
                object,
                property,
                increment,
                lifetime
            }
        ),
        (object, any::<f32>(), any::<bool>(), proptest::option::of(any::<f32>()))
            .prop_map(|(object, value, alarm, increment)| Op::Observe { object, value, alarm, increment }),
        (0u64..8000).prop_map(|millis| Op::Advance { millis }),
        Just(Op::Timeout),
    ]
}

const WHO: [&str; 4] = ["a", "b", "c", "d"];
const TARGETS: [Target; 8] = [
    Target::Monitorable,
    Target::Monitorable,
    Target::UnknownObject,
    Target::ObjectNotCovCapable,
    Target::UnknownProperty,
    Target::NotCovProperty,
    Target::PropertyIsNotAnArray,
    Target::InvalidArrayIndex,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Limits hold, nothing panics, and no subscription outlives its lifetime
    /// or notifies after it.
    #[test]
    fn any_sequence_keeps_the_limits_and_never_notifies_an_expired_subscription(ops in proptest::collection::vec(op(), 1..80)) {
        let config = CovConfig { max_subscriptions_per_subscriber: 3, max_subscriptions: 8, ..without_origin_limits() };
        let mut t = CovTable::new(config);
        let mut now = Duration::ZERO;
        for op in ops {
            match op {
                Op::Subscribe { who, process, object, confirmed, lifetime, target } => {
                    let request = SubscribeCOVRequest {
                        subscriber_process_identifier: process,
                        monitored_object: ai(object),
                        issue_confirmed_notifications: confirmed,
                        lifetime,
                    };
                    let _ = t.subscribe_cov(now, WHO[who], &request, TARGETS[target as usize]);
                }
                Op::SubscribeProperty { who, object, property, increment, lifetime } => {
                    let request = SubscribeCOVPropertyRequest {
                        subscriber_process_identifier: 0,
                        monitored_object: ai(object),
                        issue_confirmed_notifications: Some(true),
                        lifetime,
                        monitored_property: PropertyReference::new(P(property)),
                        cov_increment: increment,
                    };
                    let _ = t.subscribe_cov_property(now, WHO[who], &request, Target::Monitorable);
                }
                Op::Observe { object, value, alarm, increment } => {
                    let mut values = vec![pv(P::PRESENT_VALUE, real(value)), pv(P::STATUS_FLAGS, flags(alarm, false))];
                    if let Some(i) = increment {
                        values.push(pv(P::COV_INCREMENT, real(i)));
                    }
                    t.observe(now, ai(object), &values);
                    let alive: Vec<_> = t
                        .active_subscriptions(now)
                        .map(|s| (*s.subscriber, s.subscriber_process_identifier, s.monitored_property.object))
                        .collect();
                    while let Some(n) = t.poll_notification() {
                        let key = (n.subscriber, n.subscriber_process_identifier, n.monitored_object);
                        prop_assert!(alive.contains(&key), "notification for a dead subscription: {n:?}");
                        prop_assert_eq!(n.monitored_object, ai(object));
                        prop_assert!(!n.values.is_empty());
                    }
                }
                Op::Advance { millis } => now += Duration::from_millis(millis),
                Op::Timeout => {
                    if let Some(deadline) = t.poll_timeout() {
                        now = now.max(deadline);
                    }
                    t.handle_timeout(now);
                    prop_assert!(t.poll_timeout().is_none_or(|d| d > now), "handle_timeout removes what is due");
                }
            }
            prop_assert!(t.len() <= config.max_subscriptions);
            for who in WHO {
                let held = t.active_subscriptions(now).filter(|s| *s.subscriber == who).count();
                prop_assert!(held <= config.max_subscriptions_per_subscriber);
            }
            let mut value = Vec::new();
            t.encode_active_cov_subscriptions(now, &mut value, |_| Recipient::Device(oid(ObjectType::DEVICE, 1)));
            prop_assert_eq!(COVSubscription::decode_list(&value).unwrap().len(), t.active_subscriptions(now).count());
        }
    }
}

/// The default configuration without the per-origin quota and the reserve,
/// for the tests of the per-subscriber and table limits.
fn without_origin_limits() -> CovConfig {
    CovConfig { max_subscriptions_per_origin: usize::MAX, reserved_subscriptions: 0, ..CovConfig::default() }
}
