//! Wire truth: capture our client's conversation with both peers on `lo`
//! and have tshark dissect it. Any malformed packet or dissector error fails.

use crate::peers::{Kind, Peer};
use crate::tshark::Capture;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{PropertyReference, ReadAccessSpecification};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::time::Duration;
use trellis::client::{Client, ClientConfig, Destination};
use trellis_bip::BipConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tshark_dissects_our_traffic_without_malformed_packets() {
    let peers: Vec<Peer> = Kind::ALL.iter().enumerate().map(|(i, k)| Peer::start(*k, 3301 + i as u32)).collect();
    let dir = std::env::temp_dir().join(format!("trellis-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("interop.pcapng");
    let filter =
        peers.iter().map(|p| format!("udp port {}", p.address.ip().unwrap().port())).collect::<Vec<_>>().join(" or ");
    let capture = Capture::on("lo", &filter, &pcap);

    let c = Client::bind(ClientConfig { bip: BipConfig::new([127, 0, 0, 1].into(), 0), ..Default::default() })
        .await
        .unwrap();
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    for p in &peers {
        let a = &p.address;
        let found =
            c.who_is(Destination::Device(a.clone()), None, Duration::from_secs(2)).await.unwrap().collect().await;
        assert_eq!(found.len(), 1);
        c.read_property(a, av1, P::PRESENT_VALUE, None).await.unwrap();
        let spec = ReadAccessSpecification {
            object: av1,
            properties: vec![PropertyReference::new(P::OBJECT_NAME), PropertyReference::new(P::PRESENT_VALUE)],
        };
        c.read_property_multiple(a, vec![spec]).await.unwrap();
        c.write_property(a, av1, P::PRESENT_VALUE, None, Value::Real(12.5).into(), Some(8)).await.unwrap();
        let _ = c.read_property(a, av1, P::VENDOR_NAME, None).await.unwrap_err();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ports: Vec<u16> = peers.iter().map(|p| p.address.ip().unwrap().port()).collect();
    capture.finish(&ports, &["readProperty", "readPropertyMultiple", "writeProperty", "who-Is", "i-Am"]);
    let _ = std::fs::remove_dir_all(&dir);
}
