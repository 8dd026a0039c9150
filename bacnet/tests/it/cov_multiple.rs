//! SubscribeCOVPropertyMultiple on the COV table (Clause 13.16, 135-2016),
//! as sequence diagrams: a COV-client subscribes to several properties of
//! several objects in one request; the COV-server's values change; the
//! notifications it drains are marked for one COVNotificationMultiple.

use bacnet::cov::{CovConfig, CovTable, MultipleRefusal, Notification, Refusal, Subscribed, Target};
use bacnet::enums::{ObjectType, PropertyIdentifier as P};
use bacnet::services::{
    CovReference, CovSubscriptionSpecification, PropertyReference, PropertyValue, SubscribeCOVPropertyMultipleRequest,
    SubscribeCOVPropertyRequest,
};
use bacnet::value::{AnyValue, Value};
use bacnet::{BitString, ObjectIdentifier};
use std::time::Duration;

type Table = CovTable<&'static str>;
const FRONT_END: &str = "front-end";

fn ai(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_INPUT, i).unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn pv(property: P, v: f32) -> PropertyValue {
    PropertyValue { property, array_index: None, value: AnyValue::primitive(Value::Real(v)), priority: None }
}

fn in_alarm() -> PropertyValue {
    let flags = BitString::from_bits(&[true, false, false, false]);
    PropertyValue {
        property: P::STATUS_FLAGS,
        array_index: None,
        value: AnyValue::primitive(Value::BitString(flags)),
        priority: None,
    }
}

fn reference(property: P, cov_increment: Option<f32>) -> CovReference {
    CovReference {
        property: PropertyReference::new(property),
        cov_increment,
        timestamped: property == P::PRESENT_VALUE,
    }
}

/// Present_Value (increment 1.0) of analog-input 1 and 2, for 60 s.
fn request(objects: &[u32]) -> SubscribeCOVPropertyMultipleRequest {
    SubscribeCOVPropertyMultipleRequest {
        subscriber_process_identifier: 7,
        issue_confirmed_notifications: Some(true),
        lifetime: Some(60),
        max_notification_delay: Some(2),
        specifications: objects
            .iter()
            .map(|i| CovSubscriptionSpecification {
                object: ai(*i),
                references: vec![reference(P::PRESENT_VALUE, Some(1.0))],
            })
            .collect(),
    }
}

fn cancel(objects: &[u32]) -> SubscribeCOVPropertyMultipleRequest {
    SubscribeCOVPropertyMultipleRequest { issue_confirmed_notifications: None, lifetime: None, ..request(objects) }
}

fn drained(t: &mut Table) -> Vec<Notification<&'static str>> {
    std::iter::from_fn(|| t.poll_notification()).collect()
}

#[test]
fn one_request_subscribes_to_several_objects_and_each_change_is_marked_for_a_notification_multiple() {
    let mut t = CovTable::new(CovConfig::default());
    let subscribed =
        t.subscribe_cov_property_multiple(secs(0), FRONT_END, &request(&[1, 2]), &[Target::Monitorable; 2]);
    assert_eq!(subscribed, Ok(Subscribed::Created));
    assert_eq!(t.len(), 2);

    // The initial values: one notification per object, Present_Value only
    // (COV-multiple reports what was asked, not Status_Flags).
    t.observe(secs(1), ai(1), &[pv(P::PRESENT_VALUE, 20.0), in_alarm()]);
    t.observe(secs(1), ai(2), &[pv(P::PRESENT_VALUE, 30.0)]);
    let initial = drained(&mut t);
    assert_eq!(initial.len(), 2);
    for n in &initial {
        assert!(n.multiple && n.timestamped && n.confirmed);
        assert_eq!((n.subscriber, n.subscriber_process_identifier, n.time_remaining), (FRONT_END, 7, 59));
        assert_eq!(n.values.len(), 1);
        assert_eq!(n.values[0].property, P::PRESENT_VALUE);
    }

    // Below the increment: nothing. At it: analog-input 2 only.
    t.observe(secs(2), ai(1), &[pv(P::PRESENT_VALUE, 20.5)]);
    t.observe(secs(2), ai(2), &[pv(P::PRESENT_VALUE, 31.0)]);
    let changed = drained(&mut t);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].monitored_object, ai(2));
}

#[test]
fn one_reference_that_fails_refuses_the_whole_request_and_names_it() {
    let mut t = CovTable::new(CovConfig::default());
    let refused = t.subscribe_cov_property_multiple(
        secs(0),
        FRONT_END,
        &request(&[1, 9, 2]),
        &[Target::Monitorable, Target::UnknownObject, Target::Monitorable],
    );
    assert_eq!(
        refused,
        Err(MultipleRefusal {
            refusal: Refusal::UnknownObject,
            first_failed: Some((ai(9), PropertyReference::new(P::PRESENT_VALUE))),
        })
    );
    assert!(t.is_empty(), "nothing subscribed");

    let mut negative = request(&[1]);
    negative.specifications[0].references[0].cov_increment = Some(-1.0);
    let refused = t.subscribe_cov_property_multiple(secs(0), FRONT_END, &negative, &[Target::Monitorable]);
    assert_eq!(refused.unwrap_err().refusal, Refusal::CovIncrementOutOfRange);
}

#[test]
fn the_limits_are_checked_for_all_new_references_before_any_is_added() {
    let config = CovConfig { max_subscriptions_per_subscriber: 2, ..CovConfig::default() };
    let mut t = CovTable::new(config);
    assert!(t.subscribe_cov_property_multiple(secs(0), FRONT_END, &request(&[1]), &[Target::Monitorable]).is_ok());
    let refused =
        t.subscribe_cov_property_multiple(secs(0), FRONT_END, &request(&[1, 2, 3]), &[Target::Monitorable; 3]);
    assert_eq!(refused, Err(MultipleRefusal { refusal: Refusal::SubscriberLimit, first_failed: None }));
    assert_eq!(t.len(), 1, "the one subscription there was, no more");
    // Renewing the existing one and adding one fits.
    let renewed = t.subscribe_cov_property_multiple(secs(1), FRONT_END, &request(&[1, 2]), &[Target::Monitorable; 2]);
    assert_eq!(renewed, Ok(Subscribed::Created));
    assert_eq!(t.len(), 2);
}

#[test]
fn a_cancellation_removes_the_listed_references_or_with_none_listed_all_of_the_process() {
    let mut t = CovTable::new(CovConfig::default());
    t.subscribe_cov_property_multiple(secs(0), FRONT_END, &request(&[1, 2, 3]), &[Target::Monitorable; 3]).unwrap();
    assert_eq!(
        t.subscribe_cov_property_multiple(secs(1), FRONT_END, &cancel(&[2]), &[Target::Monitorable]),
        Ok(Subscribed::Cancelled)
    );
    assert_eq!(t.len(), 2);
    assert_eq!(t.subscribe_cov_property_multiple(secs(1), FRONT_END, &cancel(&[]), &[]), Ok(Subscribed::Cancelled));
    assert!(t.is_empty());
    assert_eq!(
        t.subscribe_cov_property_multiple(secs(1), FRONT_END, &cancel(&[]), &[]),
        Ok(Subscribed::NothingToCancel)
    );
}

#[test]
fn a_cov_property_subscription_to_the_same_property_is_kept_apart() {
    let mut t = CovTable::new(CovConfig::default());
    t.subscribe_cov_property_multiple(secs(0), FRONT_END, &request(&[1]), &[Target::Monitorable]).unwrap();
    let single = SubscribeCOVPropertyRequest {
        subscriber_process_identifier: 7,
        monitored_object: ai(1),
        issue_confirmed_notifications: Some(false),
        lifetime: Some(60),
        monitored_property: PropertyReference::new(P::PRESENT_VALUE),
        cov_increment: None,
    };
    assert_eq!(t.subscribe_cov_property(secs(0), FRONT_END, &single, Target::Monitorable), Ok(Subscribed::Created));
    assert_eq!(t.len(), 2);
    t.observe(secs(1), ai(1), &[pv(P::PRESENT_VALUE, 20.0), in_alarm()]);
    let mut kinds: Vec<_> = drained(&mut t).iter().map(|n| (n.multiple, n.values.len())).collect();
    kinds.sort();
    assert_eq!(kinds, [(false, 2), (true, 1)], "SubscribeCOVProperty adds Status_Flags; COV-multiple does not");
    // Cancelling the multiple one leaves the other.
    t.subscribe_cov_property_multiple(secs(2), FRONT_END, &cancel(&[]), &[]).unwrap();
    assert_eq!(t.len(), 1);
}

/// Active_COV_Multiple_Subscriptions: one BACnetCOVMultipleSubscription
/// per subscriber process and parameters, its references object by
/// object; a SubscribeCOVProperty subscription of the same process is not
/// in it; the value decodes back as the table holds it.
#[test]
fn active_cov_multiple_subscriptions_groups_a_process_references_by_object() {
    use bacnet::cov::{COVMultipleSubscription, Recipient};
    let mut t = CovTable::new(CovConfig::default());
    let mut two = request(&[1, 2]);
    two.specifications[0].references.push(reference(P::STATUS_FLAGS, None));
    t.subscribe_cov_property_multiple(secs(0), FRONT_END, &two, &[Target::Monitorable; 3]).unwrap();
    let single = SubscribeCOVPropertyRequest {
        subscriber_process_identifier: 7,
        monitored_object: ai(3),
        issue_confirmed_notifications: Some(true),
        lifetime: Some(60),
        monitored_property: PropertyReference::new(P::PRESENT_VALUE),
        cov_increment: None,
    };
    t.subscribe_cov_property(secs(0), FRONT_END, &single, Target::Monitorable).unwrap();

    let mut out = Vec::new();
    let recipient = |_: &&str| Recipient::Address { network_number: 0, mac_address: vec![127, 0, 0, 1, 0xBA, 0xC0] };
    t.encode_active_cov_multiple_subscriptions(secs(20), &mut out, recipient);
    let list = COVMultipleSubscription::decode_list(&out).unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    let entry = &list[0];
    assert_eq!(entry.recipient.process_identifier, 7);
    assert!(entry.issue_confirmed_notifications);
    assert_eq!((entry.time_remaining, entry.max_notification_delay), (40, 2));
    let objects: Vec<ObjectIdentifier> = entry.specifications.iter().map(|s| s.object).collect();
    assert_eq!(objects, [ai(1), ai(2)], "analog-input,3 is SubscribeCOVProperty's");
    let first: Vec<(P, Option<f32>, bool)> = entry.specifications[0]
        .references
        .iter()
        .map(|r| (r.property.property, r.cov_increment, r.timestamped))
        .collect();
    assert_eq!(first, [(P::PRESENT_VALUE, Some(1.0), true), (P::STATUS_FLAGS, None, false)]);
    // Encoded as it decodes.
    let mut again = Vec::new();
    for e in &list {
        bacnet::services::ServiceCodec::encode(e, &mut again);
    }
    assert_eq!(again, out);

    // A later renewal of one object with another lifetime makes it an entry of its own.
    t.subscribe_cov_property_multiple(secs(30), FRONT_END, &request(&[2]), &[Target::Monitorable]).unwrap();
    let mut out = Vec::new();
    t.encode_active_cov_multiple_subscriptions(secs(30), &mut out, recipient);
    let list = COVMultipleSubscription::decode_list(&out).unwrap();
    let remaining: Vec<u32> = list.iter().map(|e| e.time_remaining).collect();
    assert_eq!(remaining, [30, 60]);
    // Expired: gone.
    let mut out = Vec::new();
    t.encode_active_cov_multiple_subscriptions(secs(100), &mut out, recipient);
    assert!(out.is_empty());
}
