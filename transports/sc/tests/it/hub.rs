//! Nodes on our hub, over TLS 1.3 WebSockets:
//!
//! ```text
//! node A ──TLS 1.3 (mutual) + WebSocket hub.bsc.bacnet.org──▶ hub ◀──── node B
//! A ──Encapsulated-NPDU to B's VMAC──▶ hub ──origin A──▶ B
//! A ──broadcast──▶ hub ──▶ B (and C), never back to A
//! a node whose certificate another CA signed: refused in the TLS handshake, counted
//! a revoked node (the hub's revocation list) or a revoked hub (the node's): refused
//! a second node with a taken VMAC: NAK'd, counted; it returns with a Random-48 VMAC
//! ```

use crate::pki::Ca;
use bacnet::bvlc_sc::{BROADCAST_VMAC, ConnectInfo, HubConnectionStatus};
use bacnet::sc::connection::ConnectionConfig;
use bacnet::sc::connector::ConnectorConfig;
use bacnet::sc::hub::HubConfig;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::TcpListener;
use trellis_sc::hub::{HubPortStats, serve_hub};
use trellis_sc::node::{NodeConfig, ScNode};

fn info(n: u8) -> ConnectInfo {
    ConnectInfo { vmac: [0x02, 0, 0, 0, 0, n], uuid: [n; 16], max_bvlc_len: 1600, max_npdu_len: 1497 }
}

async fn start_hub(ca: &Ca) -> (String, Arc<HubPortStats>) {
    let creds = ca.issue("hub", &[ca]);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stats = Arc::new(HubPortStats::default());
    let config = HubConfig::new(ConnectionConfig::new(ConnectInfo { vmac: [0x02, 9, 9, 9, 9, 9], ..info(99) }));
    tokio::spawn(serve_hub(listener, creds.server_config().unwrap(), config, stats.clone()));
    (format!("wss://localhost:{port}/"), stats)
}

fn node(
    uri: &str,
    creds: trellis_sc::tls::ScCredentials,
    n: u8,
) -> (ScNode, tokio::sync::mpsc::Receiver<bacnet::sc::connector::Up>) {
    ScNode::start(NodeConfig {
        direct: None,
        primary: uri.to_string(),
        failover: None,
        tls: creds.client_config().unwrap(),
        connector: ConnectorConfig::new(ConnectionConfig::new(info(n)), false),
    })
}

async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..200 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_exchange_npdus_through_the_hub_over_tls() {
    let ca = Ca::new("test CA");
    let (uri, stats) = start_hub(&ca).await;
    let (a, _a_rx) = node(&uri, ca.issue("node 1", &[&ca]), 1);
    let (b, mut b_rx) = node(&uri, ca.issue("node 2", &[&ca]), 2);
    let (c, mut c_rx) = node(&uri, ca.issue("node 3", &[&ca]), 3);
    until("three nodes on the hub", || {
        [&a, &b, &c].iter().all(|n| n.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY)
    })
    .await;

    a.send(info(2).vmac, vec![0x01, 0x00, 0x10, 0x08]).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), b_rx.recv()).await.unwrap().unwrap();
    assert_eq!((got.origin, got.broadcast, got.npdu), (Some(info(1).vmac), false, vec![0x01, 0x00, 0x10, 0x08]));

    a.send(BROADCAST_VMAC, vec![0x01, 0x20, 0xff, 0xff, 0x00, 0xff, 0x10, 0x08]).await.unwrap();
    for rx in [&mut b_rx, &mut c_rx] {
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
        assert!(got.broadcast && got.origin == Some(info(1).vmac), "{got:?}");
    }
    until("the hub's counters", || stats.hub().broadcasts == 1 && stats.hub().unicasts == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_certified_by_another_ca_is_refused_in_the_handshake() {
    let ca = Ca::new("test CA");
    let stranger = Ca::new("another CA");
    let (uri, stats) = start_hub(&ca).await;
    let (n, _rx) = node(&uri, stranger.issue("intruder", &[&ca]), 7);
    until("the refusal", || stats.tls_refused.load(Ordering::Relaxed) >= 1).await;
    assert_eq!(n.status().hub, HubConnectionStatus::NO_HUB_CONNECTION);
    assert_eq!(stats.hub().unicasts + stats.hub().broadcasts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_node_certificate_is_refused_in_the_handshake() {
    let ca = Ca::new("test CA");
    let (uri, stats) = start_hub(&ca).await;
    let (n, _rx) = node(&uri, ca.issue_with("expired", &[&ca], trellis_sc::pki::Validity::Expired), 8);
    until("the refusal", || stats.tls_refused.load(Ordering::Relaxed) >= 1).await;
    assert_eq!(n.status().hub, HubConnectionStatus::NO_HUB_CONNECTION);
}

/// Two devices claim the same VMAC (different UUIDs): the hub refuses the
/// second with a duplicate-VMAC NAK, counted; it picks a random VMAC and
/// is taken on the next attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_vmac_is_refused_and_its_node_comes_back_with_another() {
    let ca = Ca::new("test CA");
    let (uri, stats) = start_hub(&ca).await;
    let (first, _a) = node(&uri, ca.issue("first", &[&ca]), 20);
    until("the first node", || first.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    let same_vmac = ConnectInfo { uuid: [0x77; 16], ..info(20) };
    let mut connector = ConnectorConfig::new(ConnectionConfig::new(same_vmac), false);
    connector.reconnect = Duration::from_millis(200);
    let (second, _b) = ScNode::start(NodeConfig {
        direct: None,
        primary: uri.clone(),
        failover: None,
        tls: ca.issue("second", &[&ca]).client_config().unwrap(),
        connector,
    });
    until("the second node, under a new VMAC", || second.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY)
        .await;
    assert_ne!(second.status().vmac, info(20).vmac);
    assert_eq!(second.status().vmac[0] & 0x0F, 0x02, "Random-48");
    until("the refusal counted", || stats.hub().refused_duplicate >= 1).await;
    assert_eq!(first.status().hub, HubConnectionStatus::CONNECTED_TO_PRIMARY, "the first keeps its VMAC");
}

/// Revocation lists, on both sides: the hub refuses a node whose
/// certificate its CA revoked (and takes one it did not); a node refuses a
/// hub whose certificate is revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_certificates_are_refused_where_revocation_lists_are_configured() {
    use trellis_sc::pki::Validity;
    let ca = Ca::new("test CA");
    let dir = std::env::temp_dir().join(format!("trellis-sc-crl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (revoked_node, revoked_cert) = ca.issue_revocable("revoked node", &[&ca], Validity::Years(1));
    let (hub_creds, hub_cert) = ca.issue_revocable("hub", &[&ca], Validity::Years(1));
    let crl = dir.join("crl.pem");
    ca.revoke(&[&revoked_cert], &crl);

    // The hub checks the list: the revoked node is refused, another is taken.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let stats = Arc::new(HubPortStats::default());
    let tls = hub_creds.with_revocation_lists(&crl).unwrap().server_config().unwrap();
    let config = HubConfig::new(ConnectionConfig::new(ConnectInfo { vmac: [0x02, 9, 9, 9, 9, 9], ..info(99) }));
    tokio::spawn(serve_hub(listener, tls, config, stats.clone()));
    let (refused, _r) = node(&uri, revoked_node, 10);
    let (taken, _t) = node(&uri, ca.issue("good node", &[&ca]), 11);
    until("the good node on the hub", || taken.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
    until("the refusal", || stats.tls_refused.load(Ordering::Relaxed) >= 1).await;
    assert_eq!(refused.status().hub, HubConnectionStatus::NO_HUB_CONNECTION);

    // A node with a list naming the hub's certificate refuses that hub.
    ca.revoke(&[&hub_cert], &crl);
    let careful = ca.issue("careful node", &[&ca]).with_revocation_lists(&crl).unwrap();
    let (wary, _w) = node(&uri, careful, 12);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(wary.status().hub, HubConnectionStatus::NO_HUB_CONNECTION, "a revoked hub is refused");
    assert!(wary.status().counters.failed_attempts >= 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that speaks TLS with a good certificate but asks for another
/// WebSocket subprotocol (or none): the upgrade is refused and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_without_the_hub_subprotocol_is_refused() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let ca = Ca::new("test CA");
    let (uri, stats) = start_hub(&ca).await;
    let creds = ca.issue("node 4", &[&ca]);
    for subprotocol in [Some("dc.bsc.bacnet.org"), None] {
        let port: u16 = uri.trim_start_matches("wss://localhost:").trim_end_matches('/').parse().unwrap();
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let tls = tokio_rustls::TlsConnector::from(creds.client_config().unwrap()).connect(name, tcp).await.unwrap();
        let mut request = uri.as_str().into_client_request().unwrap();
        if let Some(p) = subprotocol {
            request.headers_mut().insert("Sec-WebSocket-Protocol", p.parse().unwrap());
        }
        let refused = tokio_tungstenite::client_async(request, tls).await;
        assert!(refused.is_err(), "{subprotocol:?} was accepted");
    }
    until("both refusals", || stats.wrong_subprotocol.load(Ordering::Relaxed) >= 2).await;
}

/// A raw client: TLS with `creds`, the WebSocket with the hub subprotocol.
async fn raw_client(
    uri: &str,
    creds: &trellis_sc::tls::ScCredentials,
) -> tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let port: u16 = uri.trim_start_matches("wss://localhost:").trim_end_matches('/').parse().unwrap();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(creds.client_config().unwrap()).connect(name, tcp).await.unwrap();
    let mut request = uri.into_client_request().unwrap();
    request.headers_mut().insert("Sec-WebSocket-Protocol", trellis_sc::HUB_SUBPROTOCOL.parse().unwrap());
    tokio_tungstenite::client_async(request, tls).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_frame_ends_that_connection_and_the_hub_serves_on() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let ca = Ca::new("test CA");
    let (uri, stats) = start_hub(&ca).await;
    let mut raw = raw_client(&uri, &ca.issue("big", &[&ca])).await;
    let _ = raw.send(Message::Binary(vec![0x01; trellis_sc::hub::MAX_FRAME + 1].into())).await;
    until("the oversize frame counted", || stats.bad_frames.load(Ordering::Relaxed) >= 1).await;
    let (n, _rx) = node(&uri, ca.issue("node 5", &[&ca]), 5);
    until("another node served", || n.status().hub == HubConnectionStatus::CONNECTED_TO_PRIMARY).await;
}

/// A node that connects, then never sends again (no heartbeats): the hub
/// closes it after two heartbeat periods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_goes_silent_is_closed_after_two_heartbeat_periods() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let ca = Ca::new("test CA");
    let creds = ca.issue("hub", &[&ca]);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let stats = Arc::new(HubPortStats::default());
    let mut connection = ConnectionConfig::new(ConnectInfo { vmac: [0x02, 9, 9, 9, 9, 9], ..info(99) });
    connection.heartbeat = Duration::from_millis(300);
    tokio::spawn(serve_hub(listener, creds.server_config().unwrap(), HubConfig::new(connection), stats.clone()));

    let mut raw = raw_client(&uri, &ca.issue("quiet", &[&ca])).await;
    let mut request = Vec::new();
    bacnet::bvlc_sc::BvlcSc {
        message_id: 1,
        origin: None,
        destination: None,
        destination_options: bacnet::bvlc_sc::Options::NONE,
        data_options: bacnet::bvlc_sc::Options::NONE,
        payload: bacnet::bvlc_sc::Payload::ConnectRequest(info(6)),
    }
    .encode(&mut request)
    .unwrap();
    raw.send(Message::Binary(request.into())).await.unwrap();
    until("connected", || stats.connected_nodes.load(Ordering::Relaxed) == 1).await;
    // Silent from here on: the hub lets go after 2 × 300 ms.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(m)) = raw.next().await {
            if m.is_close() {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the hub closed the silent node's WebSocket");
    assert_eq!(stats.connected_nodes.load(Ordering::Relaxed), 0);
}
