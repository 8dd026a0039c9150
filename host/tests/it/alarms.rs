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

/// Runs `host/tests/peers/alarm_client.py` as `stack`; with `ready`, once
/// the script says READY (its recipient is listening) `ready` runs.
/// Returns its JSON line.
fn third_party(stack: &str, port: u16, own_port: u16, gateway: &Gateway, ready: impl FnOnce()) -> String {
    use std::io::BufRead;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/alarm_client.py");
    let mut child = std::process::Command::new(crate::peers::python())
        .arg(&script)
        .args(["--stack", stack, "--target", &format!("127.0.0.1:{port}"), "--device", "389007"])
        .args(["--port", &own_port.to_string(), "--object", "analog-input,1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run alarm_client.py");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    if stack == "bacpypes3" {
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                break;
            }
            said.push_str(&line);
            if line.trim() == "READY" {
                break;
            }
        }
    }
    ready();
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stack}: {stdout}\n{said}{rest}\ngateway:\n{}", gateway.log());
    stdout.lines().last().unwrap_or_default().to_owned()
}

/// bacpypes3 is the Notification Class's confirmed recipient: it decodes
/// the ConfirmedEventNotification with its own codec, acknowledges it,
/// lists the alarm (GetEventInformation, GetAlarmSummary,
/// GetEnrollmentSummary) and acknowledges the alarm; rusty-bacnet lists
/// and acknowledges the next one. tshark dissects the conversation.
#[test]
fn bacpypes3_and_rusty_bacnet_receive_list_and_acknowledge_alarms_and_tshark_dissects_them() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("alarms", "peers");
    let (front_end, printer, port) = (free_port(), free_port(), free_port());
    let path = config(&scratch, port, front_end, printer);
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let pcap = scratch.path("alarms.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let address = format!("127.0.0.1:{port}");
    let write = |property: &str, value: &str| {
        cli(&["write", &address, "analog-input,1", property, value]);
    };
    write("out-of-service", "bool:true");
    write("time-delay", "unsigned:0");

    // bacpypes3 listens where the printer (the confirmed recipient) is.
    let line = third_party("bacpypes3", port, printer, &gateway, || write("present-value", "real:31.5"));
    for expected in [
        r#""confirmed": true"#,
        r#""object": "analog-input,1""#,
        r#""to_state": "high-limit""#,
        r#""from_state": "normal""#,
        r#""priority": 100"#,
        r#""ack_required": true"#,
        r#""exceeding_value": 31.5"#,
        r#""exceeded_limit": 28.0"#,
        r#""acknowledged": true"#,
    ] {
        assert!(line.contains(expected), "bacpypes3 saw no {expected}: {line}");
    }
    assert!(line.contains(r#""alarm_summary": [{"object": "analog-input,1", "state": "high-limit"}]"#), "{line}");
    assert!(line.contains(r#""acked": [false, true, true]"#), "before the acknowledgment: {line}");
    assert!(line.contains(r#""acked": [true, true, true]"#), "after it: {line}");

    // Back to normal, then low: rusty-bacnet acknowledges the low limit.
    write("present-value", "real:22.0");
    write("present-value", "real:10.0");
    std::thread::sleep(Duration::from_millis(300));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/alarm_client.py");
    let out = std::process::Command::new(crate::peers::python())
        .arg(&script)
        .args(["--stack", "rusty", "--target", &address, "--device", "389007"])
        .args(["--port", &free_port().to_string(), "--object", "analog-input,1", "--object-type", "0"])
        .args(["--ack-state", "low-limit"])
        .output()
        .expect("run alarm_client.py");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "rusty: {line}\n{}\n{}", String::from_utf8_lossy(&out.stderr), gateway.log());
    assert!(line.contains(r#""stamp_found": true"#) && line.contains(r#""acknowledged": true"#), "{line}");
    assert!(line.contains("LOW_LIMIT") || line.contains("low"), "rusty's alarm summary names the state: {line}");
    let listed = cli(&["events", &address]);
    assert!(listed.contains("analog-input,1 low-limit") && !listed.contains("NOT ACKED"), "{listed}");

    capture.finish(
        &[port, front_end, printer],
        &[
            "confirmedEventNotification",
            "getEventInformation",
            "getAlarmSummary",
            "getEnrollmentSummary",
            "acknowledgeAlarm",
        ],
    );
    drop(gateway);
}

/// `trellis listen` as the front end: it prints each event notification
/// it receives, one line each, with the transition and the message text.
#[test]
fn trellis_listen_prints_the_notifications_it_receives() {
    use std::io::BufRead;
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("alarms", "listen");
    let (front_end, printer, port) = (free_port(), free_port(), free_port());
    let path = config(&scratch, port, front_end, printer);
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let mut listener = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--bind", "127.0.0.1", "--port", &front_end.to_string(), "listen", "--count", "2", "--duration", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run trellis listen");
    let mut stderr = std::io::BufReader::new(listener.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("listening") {
        assert!(stderr.read_line(&mut said).unwrap() > 0, "trellis listen exited: {said}");
    }
    let address = format!("127.0.0.1:{port}");
    for (property, value) in
        [("out-of-service", "bool:true"), ("time-delay", "unsigned:0"), ("present-value", "real:31.5")]
    {
        cli(&["write", &address, "analog-input,1", property, value]);
    }
    std::thread::sleep(Duration::from_millis(300));
    cli(&["write", &address, "analog-input,1", "present-value", "real:21.0"]);
    let out = listener.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{printed}\n{said}\ngateway:\n{}", gateway.log());
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert!(lines[0].contains("analog-input,1 alarm normal -> high-limit"), "{printed}");
    assert!(lines[0].contains("ack required") && lines[0].contains("Zone 1 temperature out of range"), "{printed}");
    assert!(lines[1].contains("high-limit -> normal") && lines[1].contains("priority 200"), "{printed}");
    drop(gateway);
}
