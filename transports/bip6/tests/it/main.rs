//! BACnet/IPv6 transport tests on `::1`.

use std::net::Ipv6Addr;
use std::time::Duration;
use trellis_bip6::{Bip6Config, bind};

const WAIT: Duration = Duration::from_secs(10);

/// Two ports on `::1`: one resolves the other's VMAC by
/// Virtual-Address-Resolution, then sends it an NPDU by VMAC; the answer
/// comes back the same way (the receiver learned the sender's VMAC).
#[tokio::test]
async fn two_stations_resolve_each_other_and_exchange_npdus_by_vmac() {
    let (a, mut a_rx) = bind(&Bip6Config::new(Ipv6Addr::LOCALHOST, 0, 1001)).unwrap();
    let (b, mut b_rx) = bind(&Bip6Config::new(Ipv6Addr::LOCALHOST, 0, 2002)).unwrap();
    assert!(a.send_unicast(b.vmac(), &[0x01, 0x00]).await.is_err(), "not known yet");
    a.resolve(b.local_addr()).await.unwrap();
    // b answers the resolution from its drain; a learns b from the answer.
    let deadline = tokio::time::Instant::now() + WAIT;
    while a.address_of(b.vmac()).is_none() {
        assert!(tokio::time::Instant::now() < deadline, "no Virtual-Address-Resolution-ACK");
        let _ = tokio::time::timeout(Duration::from_millis(50), b_rx.readable()).await;
        b_rx.drain(8, |_| {});
        let _ = tokio::time::timeout(Duration::from_millis(50), a_rx.readable()).await;
        a_rx.drain(8, |_| {});
    }
    assert_eq!(a.address_of(b.vmac()), Some(b.local_addr()));

    a.send_unicast(b.vmac(), &[0x01, 0x04, 0xAA]).await.unwrap();
    tokio::time::timeout(WAIT, b_rx.readable()).await.unwrap().unwrap();
    let mut got = Vec::new();
    b_rx.drain(8, |n| got.push((n.source, n.npdu.to_vec(), n.broadcast)));
    assert_eq!(got, [(a.vmac(), vec![0x01, 0x04, 0xAA], false)]);
    b.send_unicast(a.vmac(), &[0x01, 0x00, 0xBB]).await.unwrap();
    tokio::time::timeout(WAIT, a_rx.readable()).await.unwrap().unwrap();
    let mut back = Vec::new();
    a_rx.drain(8, |n| back.push(n.npdu.to_vec()));
    assert_eq!(back, [vec![0x01, 0x00, 0xBB]]);
}

/// A station that uses our VMAC is ignored and counted.
#[tokio::test]
async fn a_duplicate_vmac_is_noticed() {
    let (a, mut a_rx) = bind(&Bip6Config::new(Ipv6Addr::LOCALHOST, 0, 7)).unwrap();
    let (twin, _twin_rx) = bind(&Bip6Config::new(Ipv6Addr::LOCALHOST, 0, 7)).unwrap();
    twin.resolve(a.local_addr()).await.unwrap();
    tokio::time::timeout(WAIT, a_rx.readable()).await.unwrap().unwrap();
    let stats = a_rx.stats();
    a_rx.drain(8, |_| panic!("nothing goes up from a duplicate"));
    assert_eq!(stats.duplicate_vmac.load(std::sync::atomic::Ordering::Relaxed), 1);
}
