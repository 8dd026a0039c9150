//! Alarms and events end to end, as a front end meets them
//! (`examples/alarms.toml`): a zone temperature taken beyond its High_Limit
//! by a commissioning tool goes HIGH_LIMIT; the Notification Class's
//! recipients receive an UnconfirmedEventNotification and a
//! ConfirmedEventNotification (acknowledged); GetEventInformation,
//! GetAlarmSummary and GetEnrollmentSummary list it; an AcknowledgeAlarm
//! with the wrong time stamp is refused, the right one acknowledges and
//! sends an ack-notification; back inside the deadband it returns to
//! NORMAL and its to-normal notification goes to the recipient that asked
//! for it. `trellis events` and `trellis ack` do the same from the shell.

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::enums::{AcknowledgmentFilter, ErrorCode, EventState, EventType, NotifyType, PropertyIdentifier as P};
use bacnet::services::{
    EventNotification, GetEnrollmentSummaryRequest, NotificationParameters, ServiceCodec, TimeStamp,
};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use trellis::client::{Client, ClientConfig, ClientError, DeviceAddress};

const ZONE: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_INPUT, instance: 1 };

/// A recipient: a bare B/IP socket that decodes what arrives and answers a
/// confirmed notification with a SimpleACK.
struct Recipient(UdpSocket);

impl Recipient {
    async fn bind() -> (Recipient, u16) {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = s.local_addr().unwrap().port();
        (Recipient(s), port)
    }

    /// The next event notification: (confirmed, notification).
    async fn next(&self) -> (bool, EventNotification) {
        let mut buf = [0u8; 1500];
        loop {
            let (n, from) = tokio::time::timeout(Duration::from_secs(10), self.0.recv_from(&mut buf))
                .await
                .expect("an event notification within 10 s")
                .unwrap();
            let frame = &buf[..n];
            assert_eq!(&frame[..2], [0x81, 0x0A], "an Original-Unicast-NPDU");
            let npdu = &frame[4..];
            assert_eq!(npdu[0], 0x01);
            let apdu = &npdu[2..];
            match apdu[0] >> 4 {
                // Unconfirmed-Request, unconfirmedEventNotification (3).
                1 if apdu[1] == 3 => return (false, EventNotification::decode(&apdu[2..]).unwrap()),
                // Confirmed-Request, confirmedEventNotification (2).
                0 if apdu[3] == 2 => {
                    let invoke_id = apdu[2];
                    let ack = [0x81, 0x0A, 0x00, 0x09, 0x01, 0x00, 0x20, invoke_id, 0x02];
                    self.0.send_to(&ack, from).await.unwrap();
                    return (true, EventNotification::decode(&apdu[4..]).unwrap());
                }
                _ => continue,
            }
        }
    }
}

fn config(scratch: &Scratch, port: u16, front_end: u16, printer: u16) -> std::path::PathBuf {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/alarms.toml")).unwrap();
    let text = text
        .replace("port = 47808", &format!("port = {port}"))
        .replace("127.0.0.1:47809", &format!("127.0.0.1:{front_end}"))
        .replace("127.0.0.1:47810", &format!("127.0.0.1:{printer}"));
    let path = scratch.path("alarms.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_is_notified_listed_acknowledged_and_returns_to_normal() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("alarms", "end-to-end");
    let (front_end, front_end_port) = Recipient::bind().await;
    let (printer, printer_port) = Recipient::bind().await;
    let port = free_port();
    let path = config(&scratch, port, front_end_port, printer_port);
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let c =
        Client::bind(ClientConfig { bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
            .await
            .unwrap();
    let dev = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));

    // The commissioning tool takes the sensor out of service, drops the
    // delay and writes a value beyond High_Limit (28.0).
    c.write_property(&dev, ZONE, P::OUT_OF_SERVICE, None, Value::Boolean(true).into(), None).await.unwrap();
    c.write_property(&dev, ZONE, P::TIME_DELAY, None, Value::Unsigned(0).into(), None).await.unwrap();
    let written = Instant::now();
    c.write_property(&dev, ZONE, P::PRESENT_VALUE, None, Value::Real(31.5).into(), None).await.unwrap();

    let (confirmed, n) = front_end.next().await;
    eprintln!("write → UnconfirmedEventNotification: {:?}", written.elapsed());
    assert!(!confirmed);
    assert_eq!((n.event_object, n.process_identifier), (ZONE, 5));
    assert_eq!(n.initiating_device, ObjectIdentifier::new(ObjectType::DEVICE, 389007).unwrap());
    assert_eq!((n.from_state, n.to_state), (Some(EventState::NORMAL), EventState::HIGH_LIMIT));
    assert_eq!((n.event_type, n.notify_type, n.priority), (EventType::OUT_OF_RANGE, NotifyType::ALARM, 100));
    assert_eq!(n.ack_required, Some(true), "Ack_Required has to-offnormal");
    assert_eq!(n.notification_class, 1);
    assert_eq!(n.message_text.as_ref().map(|m| m.to_string()).as_deref(), Some("Zone 1 temperature out of range"));
    match &n.event_values {
        Some(NotificationParameters::OutOfRange { exceeding_value, exceeded_limit, deadband, .. }) => {
            assert_eq!((*exceeding_value, *exceeded_limit, *deadband), (31.5, 28.0, 0.5))
        }
        other => panic!("{other:?}"),
    }
    let (confirmed, to_printer) = printer.next().await;
    assert!(confirmed, "the printer asked for confirmed notifications");
    assert_eq!((to_printer.process_identifier, to_printer.to_state), (6, EventState::HIGH_LIMIT));

    // The front end asks what is going on.
    let events = c.get_event_information(&dev).await.unwrap();
    let zone = events.iter().find(|s| s.object == ZONE).unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(zone.event_state, EventState::HIGH_LIMIT);
    let acked: Vec<bool> = (0..3).map(|i| zone.acknowledged_transitions.get(i)).collect();
    assert_eq!(acked, [false, true, true]);
    assert_eq!(zone.event_time_stamps[0], n.time_stamp);
    assert_eq!(zone.event_priorities, [100, 100, 200]);
    let alarms = c.get_alarm_summary(&dev).await.unwrap();
    assert!(alarms.iter().any(|a| a.object == ZONE && a.alarm_state == EventState::HIGH_LIMIT), "{alarms:?}");
    let filter = GetEnrollmentSummaryRequest {
        acknowledgment_filter: AcknowledgmentFilter::NOT_ACKED,
        enrollment_filter: None,
        event_state_filter: None,
        event_type_filter: None,
        priority_filter: None,
        notification_class_filter: Some(1),
    };
    let enrolled = c.get_enrollment_summary(&dev, &filter).await.unwrap();
    assert_eq!(enrolled.len(), 1, "only the zone waits for an acknowledgment: {enrolled:?}");
    assert_eq!(
        (enrolled[0].object, enrolled[0].event_type, enrolled[0].priority),
        (ZONE, EventType::OUT_OF_RANGE, 100)
    );

    // A wrong time stamp is refused; the right one acknowledges.
    let now = n.time_stamp;
    let wrong =
        c.acknowledge_alarm(&dev, 1, ZONE, EventState::HIGH_LIMIT, TimeStamp::SequenceNumber(7), "op", now).await;
    assert!(matches!(wrong, Err(ClientError::Bacnet { code: ErrorCode::INVALID_TIME_STAMP, .. })), "{wrong:?}");
    c.acknowledge_alarm(&dev, 1, ZONE, EventState::HIGH_LIMIT, n.time_stamp, "Operator 1", now).await.unwrap();
    let (_, ack) = front_end.next().await;
    assert_eq!(
        (ack.notify_type, ack.to_state, ack.event_object),
        (NotifyType::ACK_NOTIFICATION, EventState::HIGH_LIMIT, ZONE)
    );
    assert_eq!(ack.ack_required, None);
    let events = c.get_event_information(&dev).await.unwrap();
    let zone = events.iter().find(|s| s.object == ZONE).expect("still HIGH_LIMIT");
    assert!((0..3).all(|i| zone.acknowledged_transitions.get(i)), "acknowledged");

    // Back inside the deadband: NORMAL, told to the front end only.
    c.write_property(&dev, ZONE, P::PRESENT_VALUE, None, Value::Real(22.0).into(), None).await.unwrap();
    let (_, normal) = front_end.next().await;
    assert_eq!((normal.from_state, normal.to_state), (Some(EventState::HIGH_LIMIT), EventState::NORMAL));
    assert_eq!((normal.priority, normal.ack_required), (200, Some(false)));
    let events = c.get_event_information(&dev).await.unwrap();
    assert!(events.iter().all(|s| s.object != ZONE), "nothing left to report: {events:?}");

    // The same from the shell.
    c.write_property(&dev, ZONE, P::PRESENT_VALUE, None, Value::Real(10.0).into(), None).await.unwrap();
    let (_, low) = front_end.next().await;
    assert_eq!(low.to_state, EventState::LOW_LIMIT);
    let address = format!("127.0.0.1:{port}");
    let listed = cli(&["events", &address]);
    assert!(listed.contains("analog-input,1 low-limit alarm") && listed.contains("NOT ACKED"), "{listed}");
    let acked = cli(&["ack", &address, "analog-input,1", "--source", "Operator 2"]);
    assert!(acked.contains("to-offnormal acknowledged"), "{acked}");
    let (_, ack) = front_end.next().await;
    assert_eq!(ack.notify_type, NotifyType::ACK_NOTIFICATION);
    drop(gateway);
}

fn cli(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "trellis {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}
