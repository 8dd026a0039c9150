//! Wire truth: capture our client's conversation with both peers on `lo`
//! and have tshark dissect it. Any malformed packet or dissector error fails.

use crate::peers::{Kind, Peer};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{PropertyReference, ReadAccessSpecification};
use bacnet::{ObjectIdentifier, ObjectType, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
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
    let mut tshark = Command::new("tshark")
        .args(["-i", "lo", "-f", &filter, "-w"])
        .arg(&pcap)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("tshark is installed by the README's test command");
    // Wait until tshark says it is capturing.
    let stderr = tshark.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Capturing on") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30)).expect("tshark started capturing");

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
    let _ = Command::new("kill").args(["-INT", &tshark.id().to_string()]).status();
    let _ = tshark.wait();

    let mut read = Command::new("tshark");
    read.arg("-r").arg(&pcap).arg("-V");
    for p in &peers {
        read.args(["-d", &format!("udp.port=={},bvlc", p.address.ip().unwrap().port())]);
    }
    let out = read.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "tshark -r failed: {}", String::from_utf8_lossy(&out.stderr));
    for service in ["readProperty", "readPropertyMultiple", "writeProperty", "who-Is", "i-Am"] {
        assert!(text.contains(service), "tshark saw no {service}");
    }
    assert!(!text.contains("Malformed"), "malformed packet in the capture:\n{text}");
    assert!(!text.contains("Expert Info (Error"), "dissector error in the capture:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
