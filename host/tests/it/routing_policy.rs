//! Routing-policy plugins in the gateway's router, end to end over UDP:
//! the example `router-policy.toml` (a firewall and a broadcast guard
//! between network 1 and two devices on network 2), and a policy that
//! fails, closed and open.
//!
//! ```text
//! laptop ──ReadProperty DNET 2──▶ router ─policy: forward─▶ device 201 ──ACK──▶ laptop
//! laptop ──WriteProperty DNET 2──▶ router ─policy: reject─▶ Reject-Message-To-Network (security-error) ──▶ laptop
//! BMS    ──WriteProperty AV1 DNET 2──▶ router ─policy: forward─▶ device 201 ──SimpleACK──▶ BMS
//! anyone ──DeviceCommunicationControl──▶ router ─policy: drop─▶ (nothing)
//! storm  ──Who-Is ×6, DNET 2──▶ router ─guard: 3 forwarded, 3 dropped─▶ 6 I-Ams (2 devices × 3)
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::bvll::Bvll;
use bacnet::enums::{NetworkPriority, RejectMessageReason};
use bacnet::npdu::{NetAddress, NetworkMessage, Npdu, NpduPayload};
use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::time::Duration;

/// Device 201's MAC on network 2 (its instance in three octets).
const DEVICE_201: [u8; 3] = [0, 0, 201];

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)).unwrap()
}

fn start(config: &str, scratch: &Scratch) -> Gateway {
    let path = scratch.path("gateway.toml");
    std::fs::write(&path, config).unwrap();
    Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"))
}

/// A station on network 1: a UDP socket on loopback.
struct Station(UdpSocket);

/// What came back for one NPDU sent.
#[derive(Debug, Default)]
struct Answers {
    /// APDU types of the APDUs (0x30 ComplexACK, 0x20 SimpleACK, 0x10 I-Am…).
    apdus: Vec<u8>,
    /// The service choices of the unconfirmed requests among them (0 I-Am, 1 I-Have…).
    unconfirmed_services: Vec<u8>,
    /// Network-layer messages, decoded.
    rejects: Vec<(RejectMessageReason, u16)>,
}

impl Station {
    fn bind(port: u16) -> Station {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(600))).unwrap();
        Station(s)
    }

    fn send(&self, router: u16, destination: NetAddress<'_>, apdu: &[u8]) {
        self.send_as(router, None, destination, apdu)
    }

    /// Send with an SNET/SADR of our choosing, as a router (or a liar) would.
    fn send_as(&self, router: u16, source: Option<NetAddress<'_>>, destination: NetAddress<'_>, apdu: &[u8]) {
        let npdu = Npdu {
            destination: Some(destination),
            source,
            hop_count: 255,
            expecting_reply: apdu[0] >> 4 == 0,
            priority: NetworkPriority::NORMAL,
            payload: NpduPayload::Apdu(apdu),
        };
        let mut n = Vec::new();
        npdu.encode(&mut n).unwrap();
        let mut datagram = Vec::new();
        Bvll::OriginalUnicastNpdu(&n).encode(&mut datagram).unwrap();
        self.0.send_to(&datagram, (Ipv4Addr::LOCALHOST, router)).unwrap();
    }

    /// Everything that arrives until the line is quiet.
    fn answers(&self) -> Answers {
        let mut a = Answers::default();
        let mut buf = [0u8; 1500];
        while let Ok(len) = self.0.recv(&mut buf) {
            let Some(n) = Bvll::decode(&buf[..len]).ok().and_then(|b| b.npdu().map(<[u8]>::to_vec)) else { continue };
            match Npdu::decode(&n).map(|n| n.payload) {
                Ok(NpduPayload::Apdu(apdu)) => {
                    a.apdus.push(apdu[0] & 0xF0);
                    if apdu[0] & 0xF0 == 0x10 {
                        a.unconfirmed_services.extend(apdu.get(1));
                    }
                }
                Ok(NpduPayload::Message(NetworkMessage::RejectMessageToNetwork { reason, net })) => {
                    a.rejects.push((reason, net))
                }
                _ => {}
            }
        }
        a
    }

    fn ask(&self, router: u16, destination: NetAddress<'_>, apdu: &[u8]) -> Answers {
        self.send(router, destination, apdu);
        self.answers()
    }
}

/// ReadProperty analog-value,1 Present_Value.
const READ_AV1: [u8; 11] = [0x00, 0x05, 1, 12, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 85];

/// WriteProperty analog-value,INSTANCE Present_Value := 22.0 at priority 8.
fn write_av(instance: u8) -> Vec<u8> {
    vec![0x00, 0x05, 2, 15, 0x0C, 0x00, 0x80, 0x00, instance, 0x19, 85, 0x3E, 0x44, 0x41, 0xB0, 0, 0, 0x3F, 0x49, 8]
}

/// DeviceCommunicationControl: disable.
const DCC_DISABLE: [u8; 6] = [0x00, 0x05, 3, 17, 0x19, 0x01];

const WHO_IS: [u8; 2] = [0x10, 0x08];

/// Who-Has analog-value,1 (by object identifier, context tag 2).
const WHO_HAS_AV1: [u8; 7] = [0x10, 0x07, 0x2C, 0x00, 0x80, 0x00, 0x01];

/// The unconfirmed service choice of I-Have.
const I_HAVE: u8 = 1;

const COMPLEX_ACK: u8 = 0x30;
const SIMPLE_ACK: u8 = 0x20;
const I_AM: u8 = 0x10;

#[test]
fn the_example_firewall_and_broadcast_guard_block_what_they_should_and_forward_the_rest() {
    let scratch = Scratch::new("routing-policy", "example");
    let (router, bms_port) = (free_port(), free_port());
    let bms_mac = format!("1:7f000001{bms_port:04x}");
    let config = example("router-policy.toml")
        .replace("port = 47808", &format!("port = {router}"))
        .replace("1:7f000001bac1", &bms_mac);
    let gateway = start(&config, &scratch);
    let log = gateway.log();
    assert!(log.contains("policy firewall") && log.contains("policy broadcast-guard"), "{log}");
    let device = NetAddress { net: 2, mac: &DEVICE_201 };
    let (laptop, bms) = (Station::bind(0), Station::bind(bms_port));

    let read = laptop.ask(router, device, &READ_AV1);
    assert_eq!(read.apdus, [COMPLEX_ACK], "a read crosses: {read:?}\n{}", gateway.log());

    let write = laptop.ask(router, device, &write_av(1));
    assert!(write.apdus.is_empty(), "a write from the laptop does not reach the device: {write:?}");
    assert_eq!(write.rejects, [(RejectMessageReason::SECURITY_ERROR, 2)], "and is refused as the rule says");

    let bms_write = bms.ask(router, device, &write_av(1));
    assert_eq!(bms_write.apdus, [SIMPLE_ACK], "the BMS commands its setpoint: {bms_write:?}");
    let other_object = bms.ask(router, device, &write_av(2));
    assert_eq!(other_object.rejects, [(RejectMessageReason::SECURITY_ERROR, 2)], "but no other object");

    // The laptop claiming, by SNET/SADR, to be the BMS: the router drops a
    // source on its own network that did not come from there.
    let bms_sadr = [127, 0, 0, 1, (bms_port >> 8) as u8, bms_port as u8];
    laptop.send_as(router, Some(NetAddress { net: 1, mac: &bms_sadr }), device, &write_av(1));
    let forged = laptop.answers();
    assert_eq!((forged.apdus.len(), forged.rejects.len()), (0, 0), "a forged source gets nothing: {forged:?}");

    let dcc = bms.ask(router, device, &DCC_DISABLE);
    assert_eq!((dcc.apdus.len(), dcc.rejects.len()), (0, 0), "device control is dropped silently: {dcc:?}");

    // A Who-Is storm to network 2: three per source per minute get through.
    let storm = Station::bind(0);
    for _ in 0..6 {
        storm.send(router, NetAddress { net: 2, mac: &[] }, &WHO_IS);
    }
    let heard = storm.answers();
    assert_eq!(heard.apdus.iter().filter(|t| **t == I_AM).count(), 6, "3 Who-Is × 2 devices: {heard:?}");
    let quiet = laptop.ask(router, NetAddress { net: 2, mac: &[] }, &WHO_IS);
    assert_eq!(quiet.apdus, [I_AM, I_AM], "another source keeps its own budget");
    // Who-Has draws on the same budget: a third source's storm of six gets
    // three through, each answered by both devices' I-Have.
    let seeker = Station::bind(0);
    for _ in 0..6 {
        seeker.send(router, NetAddress { net: 2, mac: &[] }, &WHO_HAS_AV1);
    }
    let had = seeker.answers();
    assert_eq!(had.apdus.len(), 6, "3 Who-Has × 2 devices: {had:?}");
    assert_eq!(had.unconfirmed_services, [I_HAVE; 6], "all of them I-Have: {had:?}");
    drop(gateway);
}

/// A gateway whose router has the `misbehave-policy` file as its policy.
fn misbehaving(scratch: &Scratch, router: u16, failure: &str, on_failure: &str) -> Gateway {
    let plugin = trellis::plugin::builtin::MISBEHAVE_POLICY_PATH;
    let config = format!(
        "[policy]\nallow_unsigned = true\n\n\
         [[router.port]]\nbind = \"127.0.0.1\"\nport = {router}\nnetwork = 1\n\n\
         [[router.policy]]\nplugin = \"{plugin}\"\non_failure = \"{on_failure}\"\n\
         settings = {{ service = \"write-property\", failure = \"{failure}\" }}\n\n\
         [[device]]\nvirtual_network = 2\ninstance = 201\nplugin = \"builtin:demo-building\"\npassword = \"x\"\n"
    );
    start(&config, scratch)
}

#[test]
fn a_policy_that_traps_fails_closed_and_the_router_keeps_routing() {
    let scratch = Scratch::new("routing-policy", "closed");
    let router = free_port();
    let gateway = misbehaving(&scratch, router, "trap", "closed");
    let device = NetAddress { net: 2, mac: &DEVICE_201 };
    let laptop = Station::bind(0);
    let write = laptop.ask(router, device, &write_av(1));
    assert_eq!((write.apdus.len(), write.rejects.len()), (0, 0), "the trapped call's NPDU is dropped: {write:?}");
    let read = laptop.ask(router, device, &READ_AV1);
    assert_eq!(read.apdus, [COMPLEX_ACK], "the restarted policy routes again\n{}", gateway.log());
    let log = gateway.log();
    assert!(log.contains("misbehave-policy: trapping on request"), "the trap says why:\n{log}");
    assert!(log.contains("fails closed"), "and what the router does meanwhile:\n{log}");
    drop(gateway);
}

#[test]
fn a_policy_that_loops_is_stopped_at_its_deadline_and_fails_open_when_told() {
    let scratch = Scratch::new("routing-policy", "open");
    let router = free_port();
    let gateway = misbehaving(&scratch, router, "loop", "open");
    let device = NetAddress { net: 2, mac: &DEVICE_201 };
    let laptop = Station::bind(0);
    let write = laptop.ask(router, device, &write_av(1));
    assert_eq!(write.apdus, [SIMPLE_ACK], "failing open forwards it unchecked: {write:?}\n{}", gateway.log());
    let read = laptop.ask(router, device, &READ_AV1);
    assert_eq!(read.apdus, [COMPLEX_ACK]);
    let log = gateway.log();
    assert!(log.contains("exceeded its time limit of 10 ms"), "{log}");
    assert!(log.contains("FORWARDING UNCHECKED") || log.contains("failing open"), "{log}");
    drop(gateway);
}

fn trellis(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().unwrap()
}

#[test]
fn a_hot_swapped_broadcast_guard_keeps_the_stormers_spent_budget_and_status_shows_it() {
    let scratch = Scratch::new("routing-policy", "swap");
    let router = free_port();
    let config = format!("[policy]\nallow_unsigned = true\n\n{}", example("router-policy.toml"))
        .replace("port = 47808", &format!("port = {router}"));
    let gateway = start(&config, &scratch);
    let storm = Station::bind(0);
    let who_is_everyone = |n: usize| {
        for _ in 0..n {
            storm.send(router, NetAddress { net: 2, mac: &[] }, &WHO_IS);
        }
        storm.answers().apdus.iter().filter(|t| **t == I_AM).count()
    };
    assert_eq!(who_is_everyone(5), 6, "the budget: 3 Who-Is, 2 devices each\n{}", gateway.log());

    // A new build of the guard (here: the same one, as a file) replaces the running one.
    let file = scratch.path("broadcast-guard.wasm");
    std::fs::write(&file, trellis::plugin::builtin::BROADCAST_GUARD).unwrap();
    let socket = gateway.socket().to_str().unwrap().to_owned();
    let out = trellis(&["plugin", "swap-policy", "2", file.to_str().unwrap(), "--socket", &socket]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("routing policy 2: now broadcast-guard"), "{said}");
    assert_eq!(who_is_everyone(2), 0, "the swap handed over the spent budget, not a fresh one");

    let out = trellis(&["plugin", "status", "--socket", &socket]);
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("routing policy 1: firewall"), "{status}");
    assert!(status.contains("routing policy 2: broadcast-guard"), "{status}");
    assert!(status.contains("over budget: 4"), "two dropped before the swap, two after: {status}");
    let out = trellis(&["plugin", "swap-policy", "3", file.to_str().unwrap(), "--socket", &socket]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no routing policy 3"), "{out:?}");
    drop(gateway);
}

#[test]
fn an_unsigned_policy_file_is_refused_like_any_plugin_file() {
    let scratch = Scratch::new("routing-policy", "unsigned");
    let plugin = trellis::plugin::builtin::MISBEHAVE_POLICY_PATH;
    let config = format!(
        "[[router.port]]\nbind = \"127.0.0.1\"\nport = {}\nnetwork = 1\n\n\
         [[router.policy]]\nplugin = \"{plugin}\"\n\n\
         [[device]]\nvirtual_network = 2\ninstance = 201\nplugin = \"builtin:demo-building\"\npassword = \"x\"\n",
        free_port()
    );
    let path = scratch.path("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let Err(log) = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0) else {
        panic!("an unsigned routing policy loaded without [policy] allow_unsigned");
    };
    assert!(log.contains("router policy 1") && log.contains("unsigned"), "{log}");
}
