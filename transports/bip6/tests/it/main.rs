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

/// A random VMAC (a client's) lies above every device instance's and is
/// replaced when another station turns out to use it; a configured one
/// stays. A station probing whether a VMAC is free (an Address-Resolution
/// from that VMAC for that VMAC) is answered by the one that has it.
///
/// ```text
/// twin (VMAC = R's) ──Virtual-Address-Resolution──▶ R (random): duplicate → R picks another
/// prober (VMAC 7) ──Address-Resolution for 7──▶ A (VMAC 7) ──Address-Resolution-ACK──▶ prober
/// ```
#[tokio::test]
async fn a_random_vmac_is_replaced_on_a_duplicate_and_a_probe_is_answered() {
    let (r, mut r_rx) = bind(&Bip6Config::random(Ipv6Addr::LOCALHOST, 0)).unwrap();
    let first = r.vmac();
    let value = u32::from_be_bytes([0, first[0], first[1], first[2]]);
    assert!((trellis_bip6::RANDOM_VMAC_MIN..=trellis_bip6::RANDOM_VMAC_MAX).contains(&value), "{value:06x}");
    let instance = value & 0x3F_FFFF;
    let mut twin_config = Bip6Config::new(Ipv6Addr::LOCALHOST, 0, instance);
    twin_config.vmac = first;
    let (twin, _twin_rx) = bind(&twin_config).unwrap();
    twin.resolve(r.local_addr()).await.unwrap();
    tokio::time::timeout(WAIT, r_rx.readable()).await.unwrap().unwrap();
    r_rx.drain(8, |_| panic!("nothing goes up from a duplicate"));
    assert_ne!(r.vmac(), first, "a random VMAC is replaced");
    assert_eq!(r_rx.stats().duplicate_vmac.load(std::sync::atomic::Ordering::Relaxed), 1);

    let (a, mut a_rx) = bind(&Bip6Config::new(Ipv6Addr::LOCALHOST, 0, 7)).unwrap();
    let prober = std::net::UdpSocket::bind("[::1]:0").unwrap();
    prober.set_read_timeout(Some(WAIT)).unwrap();
    let mut probe = Vec::new();
    bacnet::bvll6::Bvll6::AddressResolution { source: a.vmac(), target: a.vmac() }.encode(&mut probe).unwrap();
    prober.send_to(&probe, a.local_addr()).unwrap();
    tokio::time::timeout(WAIT, a_rx.readable()).await.unwrap().unwrap();
    a_rx.drain(8, |_| panic!("nothing goes up from a duplicate"));
    assert_eq!(a.vmac(), [0, 0, 7], "a configured VMAC stays");
    let mut buf = [0u8; 64];
    let n = prober.recv(&mut buf).expect("an answer to the probe");
    assert_eq!(
        bacnet::bvll6::Bvll6::decode(&buf[..n]).unwrap(),
        bacnet::bvll6::Bvll6::AddressResolutionAck { source: [0, 0, 7], destination: [0, 0, 7] }
    );
}

/// Our own broadcast coming back as a BBMD's Forwarded-NPDU (a foreign
/// device's Distribute-Broadcast-To-Network is multicast on the BBMD's link
/// so) is not another station with our VMAC: not counted, nothing goes up.
#[tokio::test]
async fn our_own_broadcast_forwarded_back_is_not_a_duplicate() {
    let (r, mut r_rx) = bind(&Bip6Config::random(Ipv6Addr::LOCALHOST, 0)).unwrap();
    let before = r.vmac();
    let bbmd = std::net::UdpSocket::bind("[::1]:0").unwrap();
    let mut forwarded = Vec::new();
    bacnet::bvll6::Bvll6::ForwardedNpdu {
        source: before,
        original_source: r.local_addr(),
        npdu: &[0x01, 0x20, 0x10, 0x08],
    }
    .encode(&mut forwarded)
    .unwrap();
    bbmd.send_to(&forwarded, r.local_addr()).unwrap();
    tokio::time::timeout(WAIT, r_rx.readable()).await.unwrap().unwrap();
    r_rx.drain(8, |_| panic!("our own broadcast does not come up again"));
    assert_eq!(r_rx.stats().duplicate_vmac.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(r.vmac(), before, "and our VMAC stays");
}
