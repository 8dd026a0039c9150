//! COV over BACnet/IP on loopback: bacpypes3 subscribes to the served demo
//! building and receives the initial and every later notification as the
//! plugin's value changes; our client subscribes to bacpypes3 and
//! rusty-bacnet devices; subscriptions are listed, limited and expire.

use crate::peers::{Kind, Peer, free_port, python};
use bacnet::cov::COVSubscription;
use bacnet::enums::{ErrorClass, ErrorCode, PropertyIdentifier as P};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, CovSubscription, DeviceAddress};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, Limits, Server, build, serve};
use trellis_bip::BipConfig;

const DEMO_DEVICE: u32 = 389_001;

fn av(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap()
}

/// The demo building served in this process, with a handle on the server.
pub(crate) async fn serve_demo(
    limits: Limits,
) -> (DeviceAddress, Arc<Server<PluginModel>>, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("cov-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo")).unwrap();
    let server = Arc::new(build(model, DeviceConfig { limits, ..DeviceConfig::default() }, 999).await.unwrap());
    let port = free_port();
    let task = tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    (DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)), server, task)
}

pub(crate) async fn client() -> Client {
    Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() }).await.unwrap()
}

/// bacpypes3 subscribes to analog-value,1 (the zone setpoint); we write
/// three setpoints; it must see the initial value and then each of them.
async fn bacpypes3_follows_the_setpoint(confirmed: bool) {
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    let writer = client().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/bacpypes3_cov_client.py");
    let client_port = free_port();
    let mut cmd = Command::new(python());
    cmd.arg(script).args(["--target", &device.link.to_string(), "--device", &DEMO_DEVICE.to_string()]).args([
        "--port",
        &client_port.to_string(),
        "--object",
        "analog-value,1",
        "--count",
        "4",
    ]);
    if confirmed {
        cmd.arg("--confirmed");
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start bacpypes3_cov_client.py");
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let next = |what: &str| {
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no {what} from bacpypes3"));
        assert!(line.get("error").is_none(), "bacpypes3: {line}");
        line
    };
    let next_pv = |what: &str| loop {
        let line = next(what);
        if line["property"] == "present-value" {
            return line["value"].as_f64().unwrap();
        }
    };
    assert_eq!(next("subscription")["subscribed"], true);
    let initial = next_pv("initial notification");
    let listed = writer
        .read_property(
            &device,
            ObjectIdentifier::new(ObjectType::DEVICE, DEMO_DEVICE).unwrap(),
            P::ACTIVE_COV_SUBSCRIPTIONS,
            None,
        )
        .await
        .unwrap();
    let mut bytes = Vec::new();
    listed.encode(&mut bytes);
    let subs = COVSubscription::decode_list(&bytes).unwrap();
    assert_eq!(subs.len(), 1, "Active_COV_Subscriptions lists bacpypes3's subscription: {subs:?}");
    assert_eq!(subs[0].monitored_property.object, av(1));
    assert_eq!(subs[0].issue_confirmed_notifications, confirmed);
    for (i, setpoint) in [17.0f32, 23.5, 19.25].into_iter().enumerate() {
        assert_ne!(setpoint as f64, initial);
        writer
            .write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(setpoint).into(), Some(8))
            .await
            .unwrap();
        let seen = next_pv(&format!("notification {}", i + 1));
        assert_eq!(seen, setpoint as f64, "notification {} carries the written setpoint", i + 1);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "bacpypes3_cov_client.py exited {status}");
    let (unconfirmed, acked, failed, send_failed) = server.cov().stats.snapshot();
    if confirmed {
        assert!(acked >= 4, "bacpypes3 acknowledged every confirmed notification: {acked}");
    } else {
        assert!(unconfirmed >= 4, "{unconfirmed} unconfirmed notifications sent");
    }
    assert_eq!((failed, send_failed), (0, 0), "no notification lost");
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bacpypes3_receives_unconfirmed_notifications_of_every_setpoint_change() {
    let _timing = crate::peers::shared().await;
    bacpypes3_follows_the_setpoint(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bacpypes3_receives_and_acknowledges_confirmed_notifications() {
    let _timing = crate::peers::shared().await;
    bacpypes3_follows_the_setpoint(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_subscriber_limit_refuses_with_no_space_and_a_cancellation_frees_a_slot() {
    let _timing = crate::peers::shared().await;
    let limits = Limits { max_cov_per_subscriber: 3, ..Limits::default() };
    let (device, server, gateway) = serve_demo(limits).await;
    let c = client().await;
    for process in 1..=3 {
        c.subscribe_cov(&device, &CovSubscription::new(process, av(1)).lifetime(60)).await.unwrap();
    }
    let refused = c.subscribe_cov(&device, &CovSubscription::new(4, av(1)).lifetime(60)).await.unwrap_err();
    assert_eq!(refused.bacnet_error(), Some((ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT)));
    // Renewing an existing subscription is never refused.
    c.subscribe_cov(&device, &CovSubscription::new(2, av(1)).lifetime(120)).await.unwrap();
    c.cancel_cov(&device, &CovSubscription::new(1, av(1))).await.unwrap();
    c.subscribe_cov(&device, &CovSubscription::new(4, av(1)).lifetime(60)).await.unwrap();
    assert_eq!(server.cov().subscriptions(), 3);
    // Objects that do not exist, or do not report COV, are refused with their error.
    let unknown = c.subscribe_cov(&device, &CovSubscription::new(9, av(999))).await.unwrap_err();
    assert_eq!(unknown.bacnet_error(), Some((ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT)));
    let dev = ObjectIdentifier::new(ObjectType::DEVICE, DEMO_DEVICE).unwrap();
    let not_cov = c.subscribe_cov(&device, &CovSubscription::new(9, dev)).await.unwrap_err();
    assert_eq!(not_cov.bacnet_error(), Some((ErrorClass::OBJECT, ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED)));
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_subscribing_from_many_ports_cannot_fill_the_table_for_another() {
    let _timing = crate::peers::shared().await;
    let limits = Limits {
        max_cov_per_subscriber: 8,
        max_cov_per_address: 16,
        max_cov_subscriptions: 40,
        reserved_cov_subscriptions: 8,
        ..Limits::default()
    };
    let (device, server, gateway) = serve_demo(limits).await;
    // Five ports of 127.0.0.1, eight indefinite subscriptions each.
    let mut refused = 0;
    for _ in 0..5 {
        let flooder = client().await;
        for process in 1..=8 {
            match flooder.subscribe_cov(&device, &CovSubscription::new(process, av(1))).await {
                Ok(()) => {}
                Err(e) => {
                    assert_eq!(
                        e.bacnet_error(),
                        Some((ErrorClass::RESOURCES, ErrorCode::NO_SPACE_TO_ADD_LIST_ELEMENT))
                    );
                    refused += 1;
                }
            }
        }
    }
    assert_eq!((server.cov().subscriptions(), refused), (16, 24), "127.0.0.1 holds its quota of 16");
    // A front end on another address still subscribes.
    let front_end =
        Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::new(127, 0, 0, 2), 0), ..Default::default() })
            .await
            .unwrap();
    front_end.subscribe_cov(&device, &CovSubscription::new(1, av(1)).lifetime(300)).await.unwrap();
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_maximum_lifetime_refuses_longer_subscriptions() {
    let _timing = crate::peers::shared().await;
    let limits = Limits { max_cov_lifetime: Some(600), ..Limits::default() };
    let (device, _server, gateway) = serve_demo(limits).await;
    let c = client().await;
    let long = c.subscribe_cov(&device, &CovSubscription::new(1, av(1)).lifetime(601)).await.unwrap_err();
    assert_eq!(long.bacnet_error(), Some((ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE)));
    c.subscribe_cov(&device, &CovSubscription::new(1, av(1)).lifetime(600)).await.unwrap();
    c.subscribe_cov(&device, &CovSubscription::new(2, av(1))).await.unwrap();
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_expires_with_its_lifetime() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    let c = client().await;
    let mut notes = c.cov_notifications();
    c.subscribe_cov(&device, &CovSubscription::new(5, av(1)).lifetime(1)).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), notes.recv()).await.unwrap().unwrap();
    assert_eq!(first.notification.monitored_object, av(1));
    assert!(first.notification.time_remaining <= 1);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.cov().subscriptions(), 0, "expired after its one second");
    c.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(30.0).into(), Some(8)).await.unwrap();
    let late = tokio::time::timeout(Duration::from_millis(800), notes.recv()).await;
    assert!(late.is_err(), "no notification after expiry: {late:?}");
    gateway.abort();
}

/// Our client subscribes to a peer's analog-value,1 and sees its initial
/// notification, then a change it makes itself.
async fn our_client_follows_a_peer(kind: Kind, device_id: u32, confirmed: bool) {
    let peer = Peer::start(kind, device_id);
    let c = client().await;
    let mut notes = c.cov_notifications();
    let sub = CovSubscription::new(11, av(1)).confirmed(confirmed).lifetime(120);
    c.subscribe_cov(&peer.address, &sub).await.unwrap_or_else(|e| panic!("{kind:?} refused SubscribeCOV: {e}"));
    let pv_of = |n: &trellis::client::CovNotificationReceived| {
        n.notification.values.iter().find(|v| v.property == P::PRESENT_VALUE).map(|v| v.value.as_primitive().cloned())
    };
    let initial =
        tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.expect("initial notification").unwrap();
    assert_eq!(initial.confirmed, confirmed);
    assert_eq!(initial.notification.monitored_object, av(1));
    assert!(pv_of(&initial).is_some(), "{initial:?}");
    c.write_property(&peer.address, av(1), P::PRESENT_VALUE, None, Value::Real(55.5).into(), Some(8)).await.unwrap();
    let changed = loop {
        let n =
            tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.expect("change notification").unwrap();
        if pv_of(&n) == Some(Some(Value::Real(55.5))) {
            break n;
        }
    };
    assert_eq!(changed.notification.subscriber_process_identifier, 11);
    c.cancel_cov(&peer.address, &sub).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_subscribes_to_bacpypes3_with_confirmed_notifications() {
    let _timing = crate::peers::shared().await;
    our_client_follows_a_peer(Kind::Bacpypes3, 3201, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_subscribes_to_rusty_bacnet_with_unconfirmed_notifications() {
    let _timing = crate::peers::shared().await;
    our_client_follows_a_peer(Kind::RustyBacnet, 4201, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_acknowledges_is_retried_then_counted_as_failed() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    // A "client" that subscribes from a raw socket and then never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let req = bacnet::services::SubscribeCOVRequest {
        subscriber_process_identifier: 1,
        monitored_object: av(1),
        issue_confirmed_notifications: Some(true),
        lifetime: Some(60),
    };
    let mut apdu = Vec::new();
    bacnet::apdu::Apdu::ConfirmedRequest(bacnet::apdu::ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: bacnet::apdu::MaxSegments::UNSPECIFIED,
        max_apdu: bacnet::apdu::MaxApdu::UP_TO_1476,
        invoke_id: 1,
        service: bacnet::enums::ConfirmedServiceChoice::SUBSCRIBE_COV,
        body: &bacnet::services::ServiceCodec::to_vec(&req),
    })
    .encode(&mut apdu);
    let mut npdu = Vec::new();
    bacnet::npdu::Npdu::local_apdu(&apdu, true).encode(&mut npdu).unwrap();
    let mut frame = vec![0x81, 0x0A, 0, 0];
    frame.extend_from_slice(&npdu);
    let len = frame.len() as u16;
    frame[2..4].copy_from_slice(&len.to_be_bytes());
    silent.send_to(&frame, device.ip().unwrap()).unwrap();
    // APDU_Timeout 3 s × (1 + 3 retries): the initial notification fails after ~12 s.
    let start = std::time::Instant::now();
    loop {
        let (_, _, failed, _) = server.cov().stats.snapshot();
        if failed >= 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the unanswered notification was never counted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Every transmission reached the silent subscriber: the SimpleACK, then 4 attempts.
    silent.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut buf = [0u8; 1500];
    let mut notifications = 0;
    while let Ok(n) = silent.recv(&mut buf) {
        let npdu = bacnet::npdu::Npdu::decode(&buf[4..n]).unwrap();
        if let bacnet::npdu::NpduPayload::Apdu(a) = npdu.payload
            && let Ok(bacnet::apdu::Apdu::ConfirmedRequest(c)) = bacnet::apdu::Apdu::decode(a)
        {
            assert_eq!(c.service, bacnet::enums::ConfirmedServiceChoice::CONFIRMED_COV_NOTIFICATION);
            notifications += 1;
        }
    }
    assert_eq!(notifications, 4, "the notification was sent once and retried three times");
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trellis_cov_prints_the_initial_and_the_next_notification_then_cancels() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo(Limits::default()).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", &free_port().to_string(), "cov", &device.link.to_string(), "analog-value,1"])
        .args(["--confirmed", "--lifetime", "60", "--count", "2", "--duration", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start trellis cov");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let said = rx.recv_timeout(Duration::from_secs(20)).expect("trellis cov said nothing");
    assert!(said.starts_with("subscribed to analog-value,1"), "{said}");
    // The initial notification is on its way; now change the setpoint.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let writer = client().await;
    writer.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(21.75).into(), Some(8)).await.unwrap();
    let pid = child.id();
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    let out = match tokio::time::timeout(Duration::from_secs(30), waited).await {
        Ok(out) => out.unwrap().unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("trellis cov did not stop after 2 notifications");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", out.status);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines.iter().all(|l| l.starts_with("analog-value,1 present-value: ")), "{stdout}");
    assert!(lines[1].contains("21.75"), "the second notification carries the write: {stdout}");
    // It cancelled its subscription on the way out.
    assert_eq!(server.cov().subscriptions(), 0);
    gateway.abort();
}
