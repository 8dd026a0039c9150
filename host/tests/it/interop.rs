//! Our client against real servers: bacpypes3 and the rusty-bacnet wheel.
//! Every conversation runs against both peers.

use crate::peers::{Kind, Peer};
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::services::{PropertyReference, PropertyValue, ReadAccessSpecification, WriteAccessSpecification};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use std::time::Duration;
use trellis::client::{Client, ClientConfig, ClientError, Destination};
use trellis_bip::BipConfig;

async fn client() -> Client {
    let mut config = ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() };
    config.tsm.apdu_timeout = Duration::from_secs(3);
    Client::bind(config).await.unwrap()
}

fn av1() -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap()
}

fn real(v: &AnyValue) -> f32 {
    match v.as_primitive() {
        Some(Value::Real(r)) => *r,
        other => panic!("expected a Real, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_is_finds_each_peer_and_respects_the_range() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3101);
        let c = client().await;
        let found = c
            .who_is(Destination::Device(peer.address.clone()), None, Duration::from_secs(3))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(found.len(), 1, "{kind:?}");
        assert_eq!(found[0].i_am.device, ObjectIdentifier::new(ObjectType::DEVICE, 3101).unwrap());
        assert_eq!(found[0].address, peer.address);

        let inside = c.who_is(Destination::Device(peer.address.clone()), Some((3100, 3102)), Duration::from_secs(3));
        assert_eq!(inside.await.unwrap().collect().await.len(), 1, "{kind:?} in range");
        let outside = c.who_is(Destination::Device(peer.address.clone()), Some((1, 5)), Duration::from_secs(1));
        assert!(outside.await.unwrap().collect().await.is_empty(), "{kind:?} must stay silent outside the range");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_property_returns_present_value_and_object_name() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3102);
        let c = client().await;
        let ai1 = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap();
        let pv = c.read_property(&peer.address, ai1, P::PRESENT_VALUE, None).await.unwrap();
        assert_eq!(real(&pv), kind.ai1_value(), "{kind:?}");
        let name = c.read_property(&peer.address, av1(), P::OBJECT_NAME, None).await.unwrap();
        assert_eq!(name.to_string(), "\"av1\"", "{kind:?}");
        let device = ObjectIdentifier::new(ObjectType::DEVICE, 3102).unwrap();
        let len = c.read_property(&peer.address, device, P::OBJECT_LIST, Some(0)).await.unwrap();
        assert!(matches!(len.as_primitive(), Some(Value::Unsigned(n)) if *n >= 5), "{kind:?}: {len:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_property_multiple_mixes_values_and_per_property_errors() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3103);
        let c = client().await;
        let spec = ReadAccessSpecification {
            object: av1(),
            properties: vec![
                PropertyReference::new(P::PRESENT_VALUE),
                PropertyReference::new(P::UNITS),
                PropertyReference::new(P::VENDOR_NAME), // not a property of an Analog Value
            ],
        };
        let results = c.read_property_multiple(&peer.address, vec![spec]).await.unwrap();
        let r = &results[0].results;
        assert_eq!(real(r[0].outcome.as_ref().unwrap()), 42.0, "{kind:?}");
        assert_eq!(r[1].outcome.as_ref().unwrap().as_primitive(), Some(&Value::Enumerated(62)), "{kind:?} units");
        let e = r[2].outcome.as_ref().unwrap_err();
        assert_eq!((e.class, e.code), (ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY), "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_property_multiple_all_returns_every_property_of_the_object() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3104);
        let c = client().await;
        let spec = ReadAccessSpecification { object: av1(), properties: vec![PropertyReference::new(P::ALL)] };
        let results = c.read_property_multiple(&peer.address, vec![spec]).await.unwrap();
        let props: Vec<P> = results[0].results.iter().map(|r| r.property).collect();
        for required in
            [P::OBJECT_IDENTIFIER, P::OBJECT_NAME, P::OBJECT_TYPE, P::PRESENT_VALUE, P::STATUS_FLAGS, P::UNITS]
        {
            assert!(props.contains(&required), "{kind:?}: {required} missing from {props:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_property_with_priority_reads_back_and_relinquishes() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3105);
        let c = client().await;
        c.write_property(&peer.address, av1(), P::PRESENT_VALUE, None, Value::Real(23.25).into(), Some(8))
            .await
            .unwrap();
        let pv = c.read_property(&peer.address, av1(), P::PRESENT_VALUE, None).await.unwrap();
        assert_eq!(real(&pv), 23.25, "{kind:?}");
        let slot8 = c.read_property(&peer.address, av1(), P::PRIORITY_ARRAY, Some(8)).await.unwrap();
        assert_eq!(real(&slot8), 23.25, "{kind:?} priority-array[8]");
        c.write_property(&peer.address, av1(), P::PRESENT_VALUE, None, Value::Null.into(), Some(8)).await.unwrap();
        let slot8 = c.read_property(&peer.address, av1(), P::PRIORITY_ARRAY, Some(8)).await.unwrap();
        assert_eq!(slot8.as_primitive(), Some(&Value::Null), "{kind:?} relinquished");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_property_multiple_applies_every_write() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3106);
        let c = client().await;
        let spec = WriteAccessSpecification {
            object: av1(),
            values: vec![PropertyValue {
                property: P::PRESENT_VALUE,
                array_index: None,
                value: Value::Real(30.5).into(),
                priority: Some(9),
            }],
        };
        match c.write_property_multiple(&peer.address, vec![spec]).await {
            Ok(()) => {
                let pv = c.read_property(&peer.address, av1(), P::PRESENT_VALUE, None).await.unwrap();
                assert_eq!(real(&pv), 30.5, "{kind:?}");
            }
            // A peer without WPM must say so with the standard's refusal, not time out.
            Err(ClientError::Reject(r)) => {
                assert_eq!(r, bacnet::RejectReason::UNRECOGNIZED_SERVICE, "{kind:?}");
                eprintln!("{kind:?} does not implement WritePropertyMultiple (Reject unrecognized-service)");
            }
            Err(e) => panic!("{kind:?}: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_object_and_unknown_property_are_typed_bacnet_errors() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3107);
        let c = client().await;
        let missing = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 99).unwrap();
        let e = c.read_property(&peer.address, missing, P::PRESENT_VALUE, None).await.unwrap_err();
        assert_eq!(e.bacnet_error(), Some((ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)), "{kind:?}: {e}");
        let e = c.read_property(&peer.address, av1(), P::VENDOR_NAME, None).await.unwrap_err();
        assert_eq!(e.bacnet_error(), Some((ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)), "{kind:?}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_in_flight_to_one_peer_all_complete() {
    let _timing = crate::peers::shared().await;
    for kind in Kind::ALL {
        let peer = Peer::start(kind, 3108);
        let c = client().await;
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let (c, a) = (c.clone(), peer.address.clone());
            tasks.push(tokio::spawn(async move { c.read_property(&a, av1(), P::PRESENT_VALUE, None).await }));
        }
        for t in tasks {
            assert_eq!(real(&t.await.unwrap().unwrap()), 42.0, "{kind:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_address_times_out_after_the_retries() {
    let _timing = crate::peers::shared().await;
    let port = crate::peers::free_port();
    let silent = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let mut config = ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() };
    config.tsm.apdu_timeout = Duration::from_millis(200);
    config.tsm.retries = 2;
    let c = Client::bind(config).await.unwrap();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let e = c.read_property(&addr, av1(), P::PRESENT_VALUE, None).await.unwrap_err();
    assert!(matches!(e, ClientError::Timeout { attempts: 3, timeout_ms: 200 }), "{e:?}");
    // Three transmissions reached the silent socket: the first and two retries.
    silent.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 1500];
    let mut count = 0;
    while silent.recv(&mut buf).is_ok() {
        count += 1;
    }
    assert_eq!(count, 3);
}
