//! The device tells who asked that it started, and a commissioning tool
//! reads how (`examples/restart-notification.toml`):
//!
//! ```text
//! gateway starts ──UnconfirmedCOVNotification (device, Last_Restart_Reason unknown)──▶ recipient
//! tool ──ReinitializeDevice warmstart──▶ gateway ──SimpleACK──▶ tool
//!                                        gateway ──UnconfirmedCOVNotification (warmstart)──▶ recipient
//! tool ──ReadProperty Last_Restart_Reason, Time_Of_Device_Restart──▶ gateway
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::enums::{PropertyIdentifier as P, RestartReason};
use bacnet::services::{COVNotification, ServiceCodec, TimeStamp};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

/// The next UnconfirmedCOVNotification that arrives at `socket`.
fn next_notification(socket: &UdpSocket) -> COVNotification {
    let mut buf = [0u8; 1500];
    loop {
        let n = socket.recv(&mut buf).expect("a restart notification within 30 s");
        let npdu = &buf[4..n];
        let apdu = &npdu[2..];
        // Unconfirmed-Request, unconfirmedCOVNotification (2).
        if apdu[0] >> 4 == 1 && apdu[1] == 2 {
            return COVNotification::decode(&apdu[2..]).unwrap();
        }
    }
}

fn value_of(n: &COVNotification, p: P) -> bacnet::AnyValue {
    n.values.iter().find(|v| v.property == p).unwrap_or_else(|| panic!("{p} in {n:?}")).value.clone()
}

fn cli(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "trellis {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn a_start_and_a_warm_restart_are_notified_and_read_back() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("restart", "notification");
    let recipient = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    recipient.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let recipient_port = recipient.local_addr().unwrap().port();
    let port = free_port();
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/restart-notification.toml"))
        .unwrap()
        .replace("port = 47808", &format!("port = {port}"))
        .replace("127.0.0.1:47809", &format!("127.0.0.1:{recipient_port}"));
    let path = scratch.path("restart-notification.toml");
    std::fs::write(&path, text).unwrap();
    let pcap = scratch.path("restart.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let device = ObjectIdentifier::new(ObjectType::DEVICE, 389011).unwrap();

    let started = next_notification(&recipient);
    assert_eq!((started.subscriber_process_identifier, started.time_remaining), (0, 0));
    assert_eq!((started.initiating_device, started.monitored_object), (device, device));
    assert_eq!(value_of(&started, P::LAST_RESTART_REASON), Value::Enumerated(RestartReason::UNKNOWN.0).into());
    assert_eq!(value_of(&started, P::SYSTEM_STATUS), Value::Enumerated(0).into(), "operational");
    let mut octets = Vec::new();
    value_of(&started, P::TIME_OF_DEVICE_RESTART).encode(&mut octets);
    assert!(matches!(TimeStamp::decode(&octets), Ok(TimeStamp::DateTime(..))), "{octets:02x?}");

    let address = format!("127.0.0.1:{port}");
    cli(&["reinit", &address, "warmstart", "--password", "change-me"]);
    let warm = next_notification(&recipient);
    assert_eq!(value_of(&warm, P::LAST_RESTART_REASON), Value::Enumerated(RestartReason::WARMSTART.0).into());
    let reason = cli(&["read", &address, "device,389011", "last-restart-reason"]);
    assert_eq!(reason.trim(), "warmstart");
    let recipients = cli(&["read", &address, "device,389011", "restart-notification-recipients"]);
    assert!(recipients.contains(&format!("{recipient_port}")) || recipients.contains("7f000001"), "{recipients}");
    let dst = cli(&["read", &address, "device,389011", "daylight-savings-status"]);
    assert_eq!(dst.trim(), "false");
    drop(gateway);
    capture.finish(&[port, recipient_port], &["unconfirmedCOVNotification", "reinitializeDevice"]);
}
