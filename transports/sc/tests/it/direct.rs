//! Direct connections between two of our nodes, beside the hub:
//!
//! ```text
//! A ──NPDU to B──▶ hub ──▶ B              (no direct connection yet; A asks B's URIs through the hub)
//! B ──Address-Resolution-ACK "wss://localhost:P/"──▶ hub ──▶ A
//! A ──TLS 1.3 + WebSocket dc.bsc.bacnet.org, Connect-Request/Accept──▶ B
//! A ──NPDU to B──▶ B                      (direct: the hub relays nothing more)
//! B ──its answer──▶ A                     (on the same connection)
//! ```

use crate::pki::Ca;
use bacnet::bvlc_sc::{ConnectInfo, HubConnectionStatus};
use bacnet::sc::connection::ConnectionConfig;
use bacnet::sc::connector::{ConnectorConfig, Up};
use bacnet::sc::hub::HubConfig;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc::Receiver;
use trellis_sc::direct::{DirectAccept, DirectConfig};
use trellis_sc::hub::{HubPortStats, serve_hub};
use trellis_sc::node::{NodeConfig, ScNode};

fn info(n: u8) -> ConnectInfo {
    ConnectInfo { vmac: [0x02, 0xD, 0, 0, 0, n], uuid: [n; 16], max_bvlc_len: 1600, max_npdu_len: 1497 }
}

async fn next_npdu(up: &mut Receiver<Up>) -> Up {
    tokio::time::timeout(Duration::from_secs(10), up.recv()).await.expect("an NPDU within 10 s").expect("the node runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_first_npdu_through_the_hub_nodes_talk_directly() {
    let ca = Ca::new("test CA");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub_uri = format!("wss://localhost:{}/", listener.local_addr().unwrap().port());
    let stats = Arc::new(HubPortStats::default());
    let hub_id = ConnectInfo { vmac: [0x02, 9, 9, 9, 9, 9], ..info(99) };
    let hub_tls = ca.issue("hub", &[&ca]).server_config().unwrap();
    tokio::spawn(serve_hub(listener, hub_tls, HubConfig::new(ConnectionConfig::new(hub_id)), stats.clone()));

    // B takes direct connections on a listener of its own.
    let b_creds = ca.issue("node B", &[&ca]);
    let b_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    b_listener.set_nonblocking(true).unwrap();
    let b_uri = format!("wss://localhost:{}/", b_listener.local_addr().unwrap().port());
    let accept = DirectAccept { listener: b_listener, tls: b_creds.server_config().unwrap(), uris: vec![b_uri] };
    let (b, mut b_up) = ScNode::start(NodeConfig {
        direct: Some(DirectConfig { accept: Some(accept), initiate: false }),
        primary: hub_uri.clone(),
        failover: None,
        tls: b_creds.client_config().unwrap(),
        connector: ConnectorConfig::new(ConnectionConfig::new(info(2)), false),
    });
    // A opens direct connections to whom it sends.
    let (a, mut a_up) = ScNode::start(NodeConfig {
        direct: Some(DirectConfig { accept: None, initiate: true }),
        primary: hub_uri,
        failover: None,
        tls: ca.issue("node A", &[&ca]).client_config().unwrap(),
        connector: ConnectorConfig::new(ConnectionConfig::new(info(1)), false),
    });
    for n in [&a, &b] {
        tokio::time::timeout(Duration::from_secs(10), async {
            while n.status().hub != HubConnectionStatus::CONNECTED_TO_PRIMARY {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("both nodes on the hub");
    }

    a.send(info(2).vmac, b"through the hub".to_vec()).await.unwrap();
    let first = next_npdu(&mut b_up).await;
    assert_eq!((first.origin, first.npdu.as_slice()), (Some(info(1).vmac), &b"through the hub"[..]));
    tokio::time::timeout(Duration::from_secs(10), async {
        while a.status().direct_peers == 0 || b.status().direct_peers == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("a direct connection within 10 s");
    let relayed = stats.hub().unicasts;

    a.send(info(2).vmac, b"direct".to_vec()).await.unwrap();
    let second = next_npdu(&mut b_up).await;
    assert_eq!((second.origin, second.npdu.as_slice()), (Some(info(1).vmac), &b"direct"[..]));
    b.send(info(1).vmac, b"answer".to_vec()).await.unwrap();
    let answer = next_npdu(&mut a_up).await;
    assert_eq!((answer.origin, answer.npdu.as_slice()), (Some(info(2).vmac), &b"answer"[..]));
    assert_eq!(stats.hub().unicasts, relayed, "the hub relayed neither");
    assert_eq!(a.status().direct.direct_npdus, 1);
    assert_eq!(b.status().direct.direct_npdus, 1);
}
