//! BACnet/SC with `trellis sc certs`' PKI, and with rusty-bacnet's SC
//! stack:
//!
//! ```text
//! trellis sc certs ──▶ ca.pem, hub.pem/.key, node1..2.pem/.key (keys 0600)
//! rusty SC server (node 2) ──TLS 1.3 + hub.bsc.bacnet.org──▶ our hub ◀── our node (node 1)
//! our node ──Who-Is (broadcast)──▶ our hub ──▶ rusty server ──I-Am──▶ our hub ──▶ our node
//! our node ──TLS 1.3──▶ rusty-bacnet's ScHub: connected (Connect-Request/Accept between the two stacks)
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
        .args(["sc", "certs", "--out", dir.to_str().unwrap(), "--nodes", "2"])
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
        primary: uri.to_string(),
        failover: None,
        tls: creds(dir, "node1").client_config().unwrap(),
        connector: ConnectorConfig::new(ConnectionConfig::new(me), false),
    })
}

async fn until(what: &str, ok: impl Fn() -> bool) {
    for _ in 0..400 {
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
async fn our_node_connects_to_rusty_bacnets_hub() {
    let scratch = Scratch::new("sc", "rusty-hub");
    let pki = scratch.path("pki");
    certs(&pki);
    let port = crate::peers::free_port();
    let bind = format!("127.0.0.1:{port}");
    let (_hub, lines) = rusty(&["hub", "--bind", &bind, "--pki", pki.to_str().unwrap()]);
    wait_line(&lines, |l| l.starts_with("READY"));
    let (node, _up) = our_node(&format!("wss://127.0.0.1:{port}/"), &pki);
    until("connected to rusty's hub", || node.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    wait_line(&lines, |l| l == "clients 1");
}
