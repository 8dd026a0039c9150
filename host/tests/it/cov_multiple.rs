//! SubscribeCOVPropertyMultiple and COVNotificationMultiple (Clauses
//! 13.16–13.18, 135-2016) against the served demo building: our client
//! subscribes to two objects in one request and follows a change; a
//! request naming an unknown object subscribes to nothing and says which
//! reference failed; rusty-bacnet subscribes as a third-party client and
//! tshark dissects the conversation.

use crate::cov::{client, serve_demo};
use crate::peers::{free_port, python};
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::{
    CovReference, CovSubscriptionSpecification, PropertyReference, SubscribeCOVPropertyMultipleRequest,
};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::time::Duration;
use trellis::client::{ClientError, CovNotificationReceived};
use trellis::server::Limits;

fn oid(t: ObjectType, i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(t, i).unwrap()
}

/// The zone setpoint (analog-value,1, increment 0.5, timestamped) and the
/// occupancy mode (multi-state-value,1).
fn setpoint_and_mode(objects: &[ObjectIdentifier]) -> SubscribeCOVPropertyMultipleRequest {
    SubscribeCOVPropertyMultipleRequest {
        subscriber_process_identifier: 11,
        issue_confirmed_notifications: Some(true),
        lifetime: Some(120),
        max_notification_delay: Some(1),
        specifications: objects
            .iter()
            .map(|o| CovSubscriptionSpecification {
                object: *o,
                references: vec![CovReference {
                    property: PropertyReference::new(P::PRESENT_VALUE),
                    cov_increment: (o.object_type == ObjectType::ANALOG_VALUE).then_some(0.5),
                    timestamped: true,
                }],
            })
            .collect(),
    }
}

fn present_value(n: &CovNotificationReceived) -> Option<Value> {
    n.notification.values.iter().find(|v| v.property == P::PRESENT_VALUE).and_then(|v| v.value.as_primitive().cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_subscribes_to_two_objects_and_a_change_arrives_in_a_notification_multiple() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    let c = client().await;
    let mut notes = c.cov_notifications();
    let setpoint = oid(ObjectType::ANALOG_VALUE, 1);
    let mode = oid(ObjectType::MULTI_STATE_VALUE, 1);
    c.subscribe_cov_property_multiple(&device, &setpoint_and_mode(&[setpoint, mode])).await.unwrap();
    assert_eq!(server.cov().subscriptions(), 2);

    // The Device object shows it: one BACnetCOVMultipleSubscription with both objects.
    let device_object = oid(ObjectType::DEVICE, 389_001);
    let active = c.read_property(&device, device_object, P::ACTIVE_COV_MULTIPLE_SUBSCRIPTIONS, None).await.unwrap();
    let mut octets = Vec::new();
    active.encode(&mut octets);
    let list = bacnet::cov::COVMultipleSubscription::decode_list(&octets).unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!((list[0].recipient.process_identifier, list[0].max_notification_delay), (11, 1));
    assert!(list[0].issue_confirmed_notifications && (119..=120).contains(&list[0].time_remaining));
    let objects: Vec<ObjectIdentifier> = list[0].specifications.iter().map(|s| s.object).collect();
    assert_eq!(objects, [setpoint, mode]);

    // The initial values of both objects, confirmed, from one request.
    let mut initial = Vec::new();
    while initial.len() < 2 {
        let n = tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.expect("initial values").unwrap();
        assert!(n.multiple && n.confirmed, "{n:?}");
        assert_eq!(n.notification.subscriber_process_identifier, 11);
        assert_eq!(n.notification.values.len(), 1, "only the monitored property: {n:?}");
        if !initial.contains(&n.notification.monitored_object) {
            initial.push(n.notification.monitored_object);
        }
    }
    initial.sort();
    assert_eq!(initial, [setpoint, mode]);

    // The operator moves the setpoint: the change arrives.
    c.write_property(&device, setpoint, P::PRESENT_VALUE, None, Value::Real(24.5).into(), Some(8)).await.unwrap();
    let changed = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.expect("the change").unwrap();
        if n.notification.monitored_object == setpoint && present_value(&n) == Some(Value::Real(24.5)) {
            break n;
        }
    };
    assert!(changed.multiple);

    // One unknown reference: nothing subscribed, and it is named.
    let refused = c
        .subscribe_cov_property_multiple(&device, &setpoint_and_mode(&[setpoint, oid(ObjectType::ANALOG_VALUE, 999)]))
        .await
        .unwrap_err();
    match refused {
        ClientError::SubscriptionFailed { class, code, first_failed } => {
            assert_eq!((class, code), (ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
            assert_eq!(first_failed.object, oid(ObjectType::ANALOG_VALUE, 999));
        }
        other => panic!("expected SubscriptionFailed, got {other:?}"),
    }
    assert_eq!(server.cov().subscriptions(), 2);

    // Cancelling the whole context: no references, no terms.
    let cancel = SubscribeCOVPropertyMultipleRequest {
        issue_confirmed_notifications: None,
        lifetime: None,
        max_notification_delay: None,
        specifications: vec![],
        ..setpoint_and_mode(&[])
    };
    c.subscribe_cov_property_multiple(&device, &cancel).await.unwrap();
    assert_eq!(server.cov().subscriptions(), 0);
    gateway.abort();
}

/// rusty-bacnet 0.14 as the subscriber: its SubscribeCOVPropertyMultiple
/// is accepted and the notifications go out (unconfirmed: its client does
/// not take COVNotificationMultiple, confirmed ones it rejects); tshark
/// dissects the request, the answer and the notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rusty_bacnet_subscribes_and_tshark_dissects_the_notifications() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    let trellis_net::LinkAddress::Ip(at) = device.link else { panic!("served on B/IP") };
    let port = at.port();
    let scratch = crate::scratch::Scratch::new("cov-multiple", "rusty");
    let pcap = scratch.path("cov-multiple.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let script = format!(
        r#"
import asyncio
from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue
async def main():
    t = "127.0.0.1:{port}"
    async with BACnetClient(interface="127.0.0.1", port={client_port}, broadcast_address="127.255.255.255", apdu_timeout_ms=5000, share_port_by_address=True) as c:
        av1 = ObjectIdentifier(ObjectType.ANALOG_VALUE, 1)
        msv1 = ObjectIdentifier(ObjectType.MULTI_STATE_VALUE, 1)
        await c.subscribe_cov_property_multiple(t, 21, [
            (av1, [(PropertyIdentifier.PRESENT_VALUE, None, 0.5, True)]),
            (msv1, [(PropertyIdentifier.PRESENT_VALUE, None, None, False)])],
            False, max_notification_delay=1, lifetime=60)
        print("subscribed", flush=True)
        await asyncio.sleep(0.5)
        await c.write_property(t, av1, PropertyIdentifier.PRESENT_VALUE, PropertyValue.real(26.5), priority=8)
        await asyncio.sleep(1.0)
asyncio.run(main())
"#,
        client_port = free_port()
    );
    let out = std::process::Command::new(python()).args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("subscribed"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.cov().subscriptions(), 2);
    let dissected = capture.finish(&[port], &["subscribeCovPropertyMultiple", "unconfirmedCovNotificationMultiple"]);
    assert!(dissected.contains("Present Value (real): 26.5"), "the change is in a notification");
    gateway.abort();
}
