//! BACnet/SC with `trellis sc certs`' PKI, in the gateway, and with
//! rusty-bacnet's SC stack:
//!
//! ```text
//! trellis sc certs ──▶ ca.pem, hub.pem/.key, node1..2.pem/.key (keys 0600)
//! rusty SC server (node 2) ──TLS 1.3 + hub.bsc.bacnet.org──▶ our hub ◀── our node (node 1)
//! our node ──Who-Is (broadcast)──▶ our hub ──▶ rusty server ──I-Am──▶ our hub ──▶ our node
//! our node ──TLS 1.3──▶ rusty-bacnet's ScHub: connected (Connect-Request/Accept between the two stacks)
//! our CLI ──Who-Is, ReadProperty──▶ rusty's ScHub ──▶ rusty SC server
//! rusty SC client ──Who-Is, ReadProperty──▶ our hub (a device's hub function) ──▶ our device
//! examples/sc-hub.toml: our CLI ──▶ our hub ──▶ our two devices (tshark dissects the CLI's sessions); a client directly to 702
//! the router: SC ↔ B/IP ↔ virtual network, SC ↔ MS/TP; failover between two `trellis sc hub`s under load
//! ```

use crate::scratch::Scratch;
use bacnet::bvlc_sc::{BROADCAST_VMAC, ConnectInfo, HubConnectionStatus};
use bacnet::npdu::{Npdu, NpduPayload};
use bacnet::sc::connection::ConnectionConfig;
use bacnet::sc::connector::ConnectorConfig;
use bacnet::sc::hub::HubConfig;
use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use trellis_sc::hub::{HubPortStats, serve_hub};
use trellis_sc::node::{NodeConfig, ScNode};
use trellis_sc::tls::ScCredentials;

/// A child process killed by PID when dropped.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

/// Start `rusty_sc.py ARGS`; its stdout lines arrive on the receiver.
fn rusty(args: &[&str]) -> (Peer, std::sync::mpsc::Receiver<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/rusty_sc.py");
    let mut child = Command::new(crate::peers::python())
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start rusty_sc.py");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (Peer(child), rx)
}

fn wait_line(rx: &std::sync::mpsc::Receiver<String>, what: impl Fn(&str) -> bool) -> String {
    loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("the peer said nothing for 30 s");
        if what(&line) {
            return line;
        }
    }
}

fn certs(dir: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sc", "certs", "--out", dir.to_str().unwrap(), "--nodes", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn creds(dir: &Path, who: &str) -> ScCredentials {
    ScCredentials::from_pem_files(&dir.join(format!("{who}.pem")), &dir.join(format!("{who}.key")), &dir.join("ca.pem"))
        .unwrap()
}

fn our_node(uri: &str, dir: &Path) -> (ScNode, tokio::sync::mpsc::Receiver<bacnet::sc::connector::Up>) {
    let me =
        ConnectInfo { vmac: [0x02, 0x54, 0x52, 0x4c, 0, 1], uuid: [0x54; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    ScNode::start(NodeConfig {
        direct: None,
        primary: uri.to_string(),
        failover: None,
        tls: creds(dir, "node1").client_config().unwrap(),
        connector: ConnectorConfig::new(ConnectionConfig::new(me), false),
    })
}

async fn until(what: &str, ok: impl Fn() -> bool) {
    for _ in 0..1200 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rusty_bacnet_sc_device_answers_our_node_through_our_hub() {
    let scratch = Scratch::new("sc", "our-hub");
    let pki = scratch.path("pki");
    certs(&pki);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(pki.join("node1.key")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "private keys are the owner's alone");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("wss://127.0.0.1:{}/", listener.local_addr().unwrap().port());
    let stats = Arc::new(HubPortStats::default());
    let hub_id =
        ConnectInfo { vmac: [0x02, 0x48, 0, 0, 0, 1], uuid: [0x48; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    tokio::spawn(serve_hub(
        listener,
        creds(&pki, "hub").server_config().unwrap(),
        HubConfig::new(ConnectionConfig::new(hub_id)),
        stats.clone(),
    ));
    let (_rusty, lines) = rusty(&["server", "--hub", &uri, "--pki", pki.to_str().unwrap(), "--node", "2"]);
    wait_line(&lines, |l| l.starts_with("READY"));
    let (node, mut up) = our_node(&uri, &pki);
    until("both nodes on our hub", || stats.connected_nodes.load(Ordering::Relaxed) == 2).await;
    assert_eq!(node.status().hub, HubConnectionStatus::CONNECTED_TO_PRIMARY);

    // A global Who-Is from our node: rusty's device answers with its I-Am.
    node.send(BROADCAST_VMAC, vec![0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08]).await.unwrap();
    let i_am = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let u = up.recv().await.expect("the node runs");
            if let Ok(Npdu { payload: NpduPayload::Apdu(apdu), .. }) = Npdu::decode(&u.npdu)
                && apdu.starts_with(&[0x10, 0x00])
            {
                return (u.origin, apdu.to_vec());
            }
        }
    })
    .await
    .expect("an I-Am from rusty-bacnet's device within 10 s");
    assert_eq!(i_am.0, Some([2, 0x52, 0x55, 0x53, 0, 2]), "from rusty's VMAC");
    let device = bacnet::ObjectIdentifier::new(bacnet::ObjectType::DEVICE, 4102).unwrap();
    assert_eq!(&i_am.1[2..7], &[0xC4, 0x02, 0x00, 0x10, 0x06][..], "I-Am from {device}");
    assert_eq!(stats.tls_refused.load(Ordering::Relaxed), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_node_connects_to_rusty_bacnets_hub_and_our_cli_reads_its_device_there() {
    let scratch = Scratch::new("sc", "rusty-hub");
    let pki = scratch.path("pki");
    certs(&pki);
    let port = crate::peers::free_port();
    let bind = format!("127.0.0.1:{port}");
    let (_hub, lines) = rusty(&["hub", "--bind", &bind, "--pki", pki.to_str().unwrap()]);
    wait_line(&lines, |l| l.starts_with("READY"));
    let hub = format!("wss://127.0.0.1:{port}/");
    let (node, _up) = our_node(&hub, &pki);
    until("connected to rusty's hub", || node.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    wait_line(&lines, |l| l == "clients 1");

    // Our CLI (node 3) reads rusty's SC device (node 2) through rusty's hub.
    let (_server, server_lines) = rusty(&["server", "--hub", &hub, "--pki", pki.to_str().unwrap(), "--node", "2"]);
    wait_line(&server_lines, |l| l.starts_with("READY"));
    let (ok, found) = sc_cli(&hub, &pki, &["whois", "--wait", "2"]);
    assert!(ok, "{found}");
    let device = address_of(&found, 4102);
    assert_eq!(device, "sc:025255530002", "rusty's VMAC");
    let (ok, value) = sc_cli(&hub, &pki, &["read", &device, "analog-input,1", "present-value"]);
    assert!(ok && value.contains("21.5"), "{value}");
}

/// `trellis ARGS` on BACnet/SC through `hub` as node 3 of `pki`, writing
/// its TLS secrets to `pki/keys.log` for tshark: (exit status ok, stdout
/// and stderr).
fn sc_cli(hub: &str, pki: &Path, args: &[&str]) -> (bool, String) {
    let file = |name: &str| pki.join(name).to_str().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .env("SSLKEYLOGFILE", pki.join("keys.log"))
        .args(["--sc-hub", hub, "--cert", &file("node3.pem"), "--key", &file("node3.key"), "--ca", &file("ca.pem")])
        .args(["--timeout-ms", "3000"])
        .args(args)
        .output()
        .unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The `sc:VMAC` address `whois` printed for `instance`.
fn address_of(whois: &str, instance: u32) -> String {
    whois
        .lines()
        .filter(|l| l.contains(&instance.to_string()))
        .flat_map(|l| l.split_whitespace())
        .find(|w| w.starts_with("sc:"))
        .unwrap_or_else(|| panic!("no sc: address for device {instance} in:\n{whois}"))
        .trim_end_matches(',')
        .to_string()
}

/// tshark capturing TCP port `port` on `lo` into `pcap`, once it says it
/// captures; stopped (SIGINT) and reaped when dropped.
struct Capture(Child);

impl Capture {
    fn start(port: u16, pcap: &Path) -> Capture {
        let mut tshark = Command::new("tshark")
            .args(["-i", "lo", "-f", &format!("tcp port {port}"), "-w"])
            .arg(pcap)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("tshark is installed by the README's test command");
        let stderr = tshark.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Capturing on") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30)).expect("tshark started capturing");
        // It says so a moment before its filter is in place.
        std::thread::sleep(Duration::from_secs(1));
        Capture(tshark)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

/// `examples/sc-hub.toml`: device 701's port runs the hub function and
/// device 702 is a node of it; our CLI is a third node. The CLI's TLS
/// sessions are decrypted with its key log and dissected by tshark.
///
/// ```text
/// CLI (node 3) ──Who-Is──▶ hub (701's port) ──▶ 701, 702 ──I-Am──▶ hub ──▶ CLI
/// CLI ──ReadProperty / WriteProperty / ReadPropertyMultiple──▶ hub ──▶ 702 ──answers──▶ hub ──▶ CLI
/// CLI ──ReadProperty (network-port,1 sc-hub-connector-state)──▶ 702: connected-to-primary
/// ```
#[test]
fn the_sc_hub_example_serves_two_devices_that_our_cli_finds_reads_and_writes() {
    let scratch = Scratch::new("sc", "example");
    let pki = scratch.path("sc-pki");
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sc", "certs", "--out", pki.to_str().unwrap(), "--nodes", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let port = crate::peers::free_port();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sc-hub.toml"))
        .unwrap()
        .replace("47843", &port.to_string())
        .replace("47844", &crate::peers::free_port().to_string());
    let config = scratch.path("sc-hub.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    assert!(gateway.log().contains("hub function on wss://127.0.0.1:"), "{}", gateway.log());

    let hub = format!("wss://127.0.0.1:{port}/");
    let pcap = scratch.path("sc.pcapng");
    let capture = Capture::start(port, &pcap);
    let (ok, found) = sc_cli(&hub, &pki, &["whois", "--wait", "2"]);
    assert!(ok, "{found}\ngateway:\n{}", gateway.log());
    let (d701, d702) = (address_of(&found, 701), address_of(&found, 702));
    assert_ne!(d701, d702);

    let (ok, name) = sc_cli(&hub, &pki, &["read", &d702, "device,702", "object-name"]);
    assert!(ok && !name.trim().is_empty(), "{name}");
    let (ok, said) =
        sc_cli(&hub, &pki, &["write", &d702, "analog-value,1", "present-value", "23.5", "--priority", "8"]);
    assert!(ok, "{said}");
    let (ok, back) = sc_cli(&hub, &pki, &["read", &d702, "analog-value,1", "present-value"]);
    assert!(ok && back.contains("23.5"), "read-back: {back}");
    let (ok, many) = sc_cli(&hub, &pki, &["readm", &d701, "analog-value,1", "object-name", "present-value"]);
    assert!(ok && many.lines().count() >= 2, "readm: {many}");

    // The Network Port object says how the port is attached.
    let (ok, state) = sc_cli(&hub, &pki, &["read", &d702, "network-port,1", "sc-hub-connector-state"]);
    assert!(ok && state.contains('1'), "connected-to-primary (1): {state}");
    let (ok, uri) = sc_cli(&hub, &pki, &["read", &d702, "network-port,1", "sc-primary-hub-uri"]);
    assert!(ok && uri.contains(&hub), "{uri}");
    let (ok, mac) = sc_cli(&hub, &pki, &["read", &d702, "network-port,1", "mac-address"]);
    assert!(ok && mac.replace([' ', ':'], "").to_lowercase().contains(d702.trim_start_matches("sc:")), "{mac}");
    let (ok, kind) = sc_cli(&hub, &pki, &["read", &d701, "network-port,1", "network-type"]);
    assert!(ok && kind.contains("11"), "secure-connect (11): {kind}");
    drop(capture);

    // TLS 1.3 all the way; decrypted with the CLI's key log, every frame
    // dissects as BACnet/SC.
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .arg("-o")
        .arg(format!("tls.keylog_file:{}", pki.join("keys.log").display()))
        .args(["-d", &format!("tcp.port=={port},tls"), "-V"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "tshark -r: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Version: TLS 1.3") || text.contains("Supported Version: TLS 1.3"), "TLS 1.3");
    assert!(text.contains("Sec-WebSocket-Protocol: hub.bsc.bacnet.org"), "the hub subprotocol");
    for expected in [
        "Connect-Request",
        "Connect-Accept",
        "Encapsulated-NPDU",
        "who-Is",
        "i-Am",
        "readProperty",
        "writeProperty",
        "readPropertyMultiple",
    ] {
        assert!(text.contains(expected), "tshark saw no {expected}");
    }
    for bad in ["Malformed", "Expert Info (Error"] {
        assert!(!text.contains(bad), "tshark reports `{bad}`:\n{text}");
    }
}

/// rusty-bacnet's SC client reads our device through our hub:
///
/// ```text
/// rusty client (node 2) ──Who-Is──▶ our hub (701's port) ──▶ 701 ──I-Am──▶ rusty client
/// rusty client ──ReadProperty──▶ our hub ──▶ 701 ──ComplexACK──▶ rusty client
/// ```
#[test]
fn rusty_bacnets_sc_client_reads_our_device_through_our_hub() {
    let scratch = Scratch::new("sc", "rusty-client");
    let pki = scratch.path("sc-pki");
    certs(&pki);
    let port = crate::peers::free_port();
    let text = format!(
        "[[device]]\ninstance = 701\nplugin = \"builtin:demo-building\"\n\
         sc = {{ hub_function = \"127.0.0.1:{port}\", certificate = \"sc-pki/hub.pem\", key = \"sc-pki/hub.key\", issuers = \"sc-pki/ca.pem\" }}\n"
    );
    let config = scratch.path("sc.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/rusty_sc.py");
    let out = Command::new(crate::peers::python())
        .arg(script)
        .args(["client", "--hub", &format!("wss://127.0.0.1:{port}/"), "--pki", pki.to_str().unwrap()])
        .args(["--node", "2", "--device", "701"])
        .args(["--read", "device,701:object-name", "--read", "analog-value,1:present-value"])
        .args(["--read", "network-port,1:network-type"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}\ngateway:\n{}", String::from_utf8_lossy(&out.stderr), gateway.log());
    assert_eq!(said.lines().filter(|l| l.contains("\"ok\": true")).count(), 4, "{said}");
}

/// `trellis sc hub` on `port` with `pki`'s hub certificate, once it says it
/// listens.
fn standalone_hub(port: u16, pki: &Path) -> Peer {
    let file = |name: &str| pki.join(name).to_str().unwrap().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sc", "hub", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--cert", &file("hub.pem"), "--key", &file("hub.key"), "--ca", &file("ca.pem")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start trellis sc hub");
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    wait_line(&rx, |l| l.contains("BACnet/SC hub on wss://"));
    Peer(child)
}

/// Failover under load: a device and our client, both nodes with hub A as
/// primary and hub B as failover, the client reading all along.
///
/// ```text
/// client ──RP──▶ hub A ──▶ device 801          (both on the primary)
///            hub A killed (SIGKILL): both nodes see the close
/// client ──RP──▶ hub B ──▶ device 801          (both on the failover: a few reads lost while they switch)
///            hub A back: each node returns to it at its reconnect interval, then lets B go
/// client ──RP──▶ hub A ──▶ device 801
/// ```
///
/// Every read after both nodes are on the failover succeeds; the switch
/// takes less than the heartbeat timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_and_a_client_fail_over_to_the_second_hub_and_back_while_reading() {
    use bacnet::enums::PropertyIdentifier as P;
    use trellis::client::{Client, Destination};
    let scratch = Scratch::new("sc", "failover");
    let pki = scratch.path("sc-pki");
    certs(&pki);
    let (pa, pb) = (crate::peers::free_port(), crate::peers::free_port());
    let (hub_a, hub_b) = (format!("wss://127.0.0.1:{pa}/"), format!("wss://127.0.0.1:{pb}/"));
    let a = standalone_hub(pa, &pki);
    let _b = standalone_hub(pb, &pki);
    let heartbeat_s = 10;
    let config = scratch.path("failover.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\ninstance = 801\nplugin = \"builtin:demo-building\"\n\
             sc = {{ primary_hub = \"{hub_a}\", failover_hub = \"{hub_b}\", certificate = \"sc-pki/node1.pem\", \
             key = \"sc-pki/node1.key\", issuers = \"sc-pki/ca.pem\", reconnect_s = 1, heartbeat_s = {heartbeat_s} }}\n"
        ),
    )
    .unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));

    let mut section = trellis::sc_port::ScSection::for_cli(
        hub_a.clone(),
        Some(hub_b.clone()),
        pki.join("node2.pem"),
        pki.join("node2.key"),
        pki.join("ca.pem"),
    );
    section.reconnect_s = 1;
    section.heartbeat_s = heartbeat_s;
    let started = trellis::sc_port::start(&section, 0x3F_FFFE, &scratch.0).unwrap();
    let node = started.port.node.clone();
    until("the client on hub A", || node.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    let tsm = bacnet::tsm::TsmConfig { apdu_timeout: Duration::from_millis(500), retries: 0, ..Default::default() };
    let client = Client::on_sc(started.port.node, started.port.up, tsm);
    let found = client
        .who_is(Destination::GlobalBroadcast, Some((801, 801)), Duration::from_secs(3))
        .await
        .unwrap()
        .collect()
        .await;
    let device = found.first().unwrap_or_else(|| panic!("device 801 on hub A: {}", gateway.log())).address.clone();
    let av1 = bacnet::ObjectIdentifier::new(bacnet::ObjectType::ANALOG_VALUE, 1).unwrap();
    let read = || client.read_property(&device, av1, P::PRESENT_VALUE, None);
    for _ in 0..20 {
        read().await.expect("reads through hub A");
    }

    // Hub A dies. Read until a read succeeds again (both on hub B).
    let killed = std::time::Instant::now();
    let _ = Command::new("kill").args(["-KILL", &a.0.id().to_string()]).status();
    drop(a);
    let mut lost = 0;
    loop {
        match read().await {
            Ok(_) => break,
            Err(_) => lost += 1,
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "no read through hub B within 60 s: {}", gateway.log());
    }
    let switch = killed.elapsed();
    assert_eq!(node.status().hub, HubConnectionStatus::CONNECTED_TO_FAILOVER);
    for i in 0..100 {
        read().await.unwrap_or_else(|e| panic!("read {i} after the failover completed: {e}"));
    }
    println!("failover: {lost} reads lost, switch in {switch:?}");
    assert!(switch < Duration::from_secs(heartbeat_s.into()), "the switch took {switch:?}");

    // Hub A returns: both nodes go back to it, and reads go on there.
    let _a = standalone_hub(pa, &pki);
    until("the client back on hub A", || node.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    let back = std::time::Instant::now();
    let mut ok_in_a_row = 0;
    while ok_in_a_row < 50 {
        match read().await {
            Ok(_) => ok_in_a_row += 1,
            Err(_) => ok_in_a_row = 0,
        }
        assert!(back.elapsed() < Duration::from_secs(60), "no steady reads on hub A again: {}", gateway.log());
    }
    drop(gateway);
}

/// `examples/sc-router.toml`: the router between B/IP network 1 (device
/// 901 on its port), BACnet/SC network 2 (its port runs the hub function)
/// and virtual network 3 (device 903), with rusty-bacnet's SC device on the
/// hub.
///
/// ```text
/// SC CLI (node 3) ──global Who-Is──▶ hub ──▶ router ──▶ 901 (net 1), 903 (net 3); rusty 4102 on the hub answers too
/// SC CLI ──RP sc:ROUTER@1:901's MAC──▶ hub ──▶ router ──▶ 901 ──▶ router ──▶ hub ──▶ SC CLI
/// B/IP CLI ──RP 127.0.0.1:PORT@2:rusty's VMAC──▶ router ──▶ hub ──▶ rusty 4102 ──▶ hub ──▶ router ──▶ B/IP CLI
/// ```
#[test]
fn the_sc_router_example_routes_between_bacnet_ip_sc_and_a_virtual_network() {
    let scratch = Scratch::new("sc", "router");
    let pki = scratch.path("sc-pki");
    certs(&pki);
    let (bip, hub_port) = (crate::peers::free_port(), crate::peers::free_port());
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sc-router.toml"))
        .unwrap()
        .replace("47808", &bip.to_string())
        .replace("47843", &hub_port.to_string());
    let config = scratch.path("sc-router.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));
    assert!(gateway.log().contains("router: network 2 on BACnet/SC"), "{}", gateway.log());
    let hub = format!("wss://127.0.0.1:{hub_port}/");
    let (_rusty, lines) = rusty(&["server", "--hub", &hub, "--pki", pki.to_str().unwrap(), "--node", "2"]);
    wait_line(&lines, |l| l.starts_with("READY"));

    let (ok, found) = sc_cli(&hub, &pki, &["whois", "--global", "--wait", "2"]);
    assert!(ok, "{found}\ngateway:\n{}", gateway.log());
    let (d901, d903, rusty_device) = (address_of(&found, 901), address_of(&found, 903), address_of(&found, 4102));
    assert!(d901.contains("@1:") && d903.contains("@3:"), "routed devices: {found}");
    assert_eq!(rusty_device, "sc:025255530002", "rusty's device is on the hub itself");
    let (ok, value) = sc_cli(&hub, &pki, &["read", &d901, "analog-value,1", "present-value"]);
    assert!(ok, "SC → router → B/IP: {value}");
    let (ok, name) = sc_cli(&hub, &pki, &["read", &d903, "device,903", "object-name"]);
    assert!(ok && !name.trim().is_empty(), "SC → router → virtual network: {name}");

    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", "0", "--timeout-ms", "3000", "read"])
        .arg(format!("127.0.0.1:{bip}@2:025255530002"))
        .args(["analog-input,1", "present-value"])
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("21.5"), "B/IP → router → SC: {said}\n{}", gateway.log());
}

/// Direct connections in the gateway (`examples/sc-hub.toml`: device 702
/// takes them): our client, a node that initiates them, reads 702 through
/// the hub first, then directly.
///
/// ```text
/// client ──RP──▶ hub ──▶ 702 ──answer──▶ hub ──▶ client, and Address-Resolution ──▶ 702 ──ACK wss://127.0.0.1:P/──▶ client
/// client ──TLS 1.3 + dc.bsc.bacnet.org──▶ 702's listener: connected
/// client ──RP──▶ 702 ──answer──▶ client (no hub)
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reads_a_device_over_a_direct_connection_after_the_first_request() {
    use bacnet::enums::PropertyIdentifier as P;
    use trellis::client::{Client, Destination};
    let scratch = Scratch::new("sc", "direct");
    let pki = scratch.path("sc-pki");
    certs(&pki);
    let (port, direct) = (crate::peers::free_port(), crate::peers::free_port());
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sc-hub.toml"))
        .unwrap()
        .replace("47843", &port.to_string())
        .replace("47844", &direct.to_string());
    let config = scratch.path("sc-hub.toml");
    std::fs::write(&config, text).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway exited before serving:\n{log}"));

    let mut section = trellis::sc_port::ScSection::for_cli(
        format!("wss://127.0.0.1:{port}/"),
        None,
        pki.join("node3.pem"),
        pki.join("node3.key"),
        pki.join("ca.pem"),
    );
    section.direct_connect = Some(trellis::sc_port::DirectSection { initiate: true, accept: None, uris: Vec::new() });
    let started = trellis::sc_port::start(&section, 0x3F_FFFD, &scratch.0).unwrap();
    let node = started.port.node.clone();
    until("the client on the hub", || node.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    let client = Client::on_sc(started.port.node, started.port.up, bacnet::tsm::TsmConfig::default());
    let found = client
        .who_is(Destination::LocalBroadcast, Some((702, 702)), Duration::from_secs(3))
        .await
        .unwrap()
        .collect()
        .await;
    let device = found.first().unwrap_or_else(|| panic!("device 702: {}", gateway.log())).address.clone();
    let av1 = bacnet::ObjectIdentifier::new(bacnet::ObjectType::ANALOG_VALUE, 1).unwrap();
    client.read_property(&device, av1, P::PRESENT_VALUE, None).await.expect("the first read, through the hub");
    until("the direct connection", || node.status().direct_peers == 1).await;
    for _ in 0..10 {
        client.read_property(&device, av1, P::PRESENT_VALUE, None).await.expect("reads over the direct connection");
    }
    assert!(node.status().direct.direct_npdus >= 10, "{:?}", node.status());
    let port_object = bacnet::ObjectIdentifier::new(bacnet::ObjectType::NETWORK_PORT, 1).unwrap();
    let accepts = client.read_property(&device, port_object, P::SC_DIRECT_CONNECT_ACCEPT_ENABLE, None).await.unwrap();
    assert_eq!(accepts, bacnet::AnyValue::from(bacnet::Value::Boolean(true)));
    drop(gateway);
}

/// BACnet/SC ↔ MS/TP through the router: networks 1 (B/IP), 2 (MS/TP, a
/// simulated line with a served device at MAC 2 in another gateway
/// process) and 3 (SC, the router's port running the hub function); our
/// SC CLI finds and reads the MS/TP device.
///
/// ```text
/// SC CLI ──global Who-Is──▶ hub ──▶ router ══MS/TP══▶ device 2602 ──I-Am SNET 2 SADR 02──▶ router ──▶ hub ──▶ SC CLI
/// SC CLI ──RP sc:ROUTER@2:02──▶ hub ──▶ router ══MS/TP══▶ 2602 (at its token) ══▶ router ──▶ hub ──▶ SC CLI
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sc_client_reaches_a_device_on_an_mstp_trunk_through_the_router() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("sc", "mstp");
    let pki = scratch.path("sc-pki");
    certs(&pki);
    let (_line, ptys) = crate::mstp::SimLineProcess::start(&["--baud", "38400", "--stations", "2"]);
    let (bip, hub_port) = (crate::peers::free_port(), crate::peers::free_port());
    let router = format!(
        "[[router.port]]\nbind = \"127.0.0.1\"\nport = {bip}\nnetwork = 1\n\n\
         [[router.port]]\nnetwork = 2\nmstp = {{ device = \"{}\", baud = 38400, mac = 1, max_master = 7 }}\n\n\
         [[router.port]]\nnetwork = 3\nsc = {{ hub_function = \"127.0.0.1:{hub_port}\", certificate = \"sc-pki/hub.pem\", \
         key = \"sc-pki/hub.key\", issuers = \"sc-pki/ca.pem\" }}\n",
        ptys[0]
    );
    let config = scratch.path("router.toml");
    std::fs::write(&config, router).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the router exited before serving:\n{log}"));
    let station_dir = Scratch::new("sc", "mstp-station");
    let station_config = station_dir.path("station.toml");
    std::fs::write(
        &station_config,
        format!(
            "[[device]]\ninstance = 2602\npassword = \"x\"\nmstp = {{ device = \"{}\", baud = 38400, mac = 2, max_master = 7 }}\n",
            ptys[1]
        ),
    )
    .unwrap();
    let station =
        crate::gateway::Gateway::start(&["run", "--config", station_config.to_str().unwrap()], &station_dir.0)
            .unwrap_or_else(|log| panic!("the station exited before serving:\n{log}"));

    let hub = format!("wss://127.0.0.1:{hub_port}/");
    let (ok, found) = sc_cli(&hub, &pki, &["whois", "--global", "--wait", "4"]);
    assert!(ok, "{found}\nrouter:\n{}\nstation:\n{}", gateway.log(), station.log());
    let device = address_of(&found, 2602);
    assert!(device.ends_with("@2:02"), "the MS/TP station behind the router: {device}");
    let (ok, value) = sc_cli(&hub, &pki, &["read", &device, "device,2602", "object-name"]);
    assert!(ok && !value.trim().is_empty(), "SC → router → MS/TP: {value}\n{}", gateway.log());
}
