//! BACnet/IP transport tests on loopback.

use bacnet::bvll::Bvll;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use trellis_bip::{BipConfig, Received, bind};

const WAIT: Duration = Duration::from_secs(10);

/// Each test binds its own 127.x address so tests run in parallel.
fn config(last: u8) -> BipConfig {
    BipConfig::new(Ipv4Addr::new(127, 0, 77, last), 0)
}

async fn recv(rx: &mut mpsc::Receiver<Received>) -> Received {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("timed out").expect("driver ended")
}

#[tokio::test]
async fn unicast_npdu_goes_out_as_original_unicast_and_comes_back_up() {
    let (a, a_driver) = bind(&config(1)).unwrap();
    let (b, b_driver) = bind(&config(2)).unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(b_driver.run(tx));
    drop(a_driver);
    a.send_unicast(b.local_addr(), &[0x01, 0x00, 0x10, 0x08]).await.unwrap();
    let got = recv(&mut rx).await;
    assert_eq!(got, Received { source: a.local_addr(), npdu: vec![0x01, 0x00, 0x10, 0x08], broadcast: false });
}

#[tokio::test]
async fn broadcast_reaches_a_socket_bound_to_the_broadcast_address_the_way_bacpypes3_binds() {
    // Listener on 127.0.78.1:P with its broadcast socket on 127.255.255.255:P.
    let (listener, l_driver) = bind(&BipConfig::new(Ipv4Addr::new(127, 0, 78, 1), 0)).unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(l_driver.run(tx));
    let port = listener.local_addr().port();
    let sender = UdpSocket::bind("127.0.78.2:0").await.unwrap();
    sender.set_broadcast(true).unwrap();
    let mut frame = Vec::new();
    Bvll::OriginalBroadcastNpdu(&[0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08]).encode(&mut frame).unwrap();
    sender.send_to(&frame, SocketAddrV4::new(Ipv4Addr::new(127, 255, 255, 255), port)).await.unwrap();
    let got = recv(&mut rx).await;
    assert!(got.broadcast);
    assert_eq!(got.npdu[6..], [0x10, 0x08]);
}

#[tokio::test]
async fn our_own_broadcast_is_not_handed_back_to_us() {
    let (me, driver) = bind(&config(3)).unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(driver.run(tx));
    me.send_broadcast(&[0x01, 0x00, 0x10, 0x08]).await.unwrap();
    // A unicast from elsewhere proves the driver is alive and the broadcast was skipped.
    let other = UdpSocket::bind("127.0.77.4:0").await.unwrap();
    let mut frame = Vec::new();
    Bvll::OriginalUnicastNpdu(&[0x01, 0x00, 0x10, 0x09]).encode(&mut frame).unwrap();
    other.send_to(&frame, me.local_addr()).await.unwrap();
    assert_eq!(recv(&mut rx).await.npdu, [0x01, 0x00, 0x10, 0x09]);
}

#[tokio::test]
async fn forwarded_npdu_reports_the_original_source() {
    let (me, driver) = bind(&config(5)).unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(driver.run(tx));
    let bbmd = UdpSocket::bind("127.0.77.6:0").await.unwrap();
    let origin = SocketAddrV4::new(Ipv4Addr::new(127, 0, 99, 9), 47808);
    let mut frame = Vec::new();
    Bvll::ForwardedNpdu { original_source: origin, npdu: &[0x01, 0x00] }.encode(&mut frame).unwrap();
    // A BBMD delivers Forwarded-NPDUs to its local network as broadcasts.
    bbmd.set_broadcast(true).unwrap();
    bbmd.send_to(&frame, me.broadcast_addr()).await.unwrap();
    let got = recv(&mut rx).await;
    assert_eq!((got.source, got.broadcast), (origin, true));
}

#[tokio::test]
async fn a_bbmd_request_to_a_plain_node_gets_the_nak_and_malformed_datagrams_are_dropped() {
    let (me, driver) = bind(&config(7)).unwrap();
    let stats = driver.stats();
    let (tx, _rx) = mpsc::channel::<trellis_bip::Received>(8);
    tokio::spawn(driver.run(tx));
    let peer = UdpSocket::bind("127.0.77.8:0").await.unwrap();
    peer.send_to(&[0x81, 0x0A, 0x00, 0x09, 0x01], me.local_addr()).await.unwrap(); // length lies
    let mut frame = Vec::new();
    Bvll::RegisterForeignDevice { ttl: 60 }.encode(&mut frame).unwrap();
    peer.send_to(&frame, me.local_addr()).await.unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = tokio::time::timeout(WAIT, peer.recv_from(&mut buf)).await.unwrap().unwrap();
    assert_eq!(
        Bvll::decode(&buf[..n]).unwrap(),
        Bvll::Result(bacnet::enums::BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK)
    );
    assert_eq!(stats.malformed.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_taken_port_is_a_clear_error() {
    let (first, _d) = bind(&config(9)).unwrap();
    let err = bind(&BipConfig::new(Ipv4Addr::new(127, 0, 77, 9), first.local_addr().port())).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("127.0.77.9") && msg.contains("already in use"), "{msg}");
}

#[tokio::test]
async fn a_unicast_forwarded_npdu_is_not_trusted() {
    let (me, driver) = bind(&config(10)).unwrap();
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(driver.run(tx));
    let liar = UdpSocket::bind("127.0.77.11:0").await.unwrap();
    let mut frame = Vec::new();
    let victim = SocketAddrV4::new(Ipv4Addr::new(127, 0, 99, 1), 47808);
    Bvll::ForwardedNpdu { original_source: victim, npdu: &[0x01, 0x00] }.encode(&mut frame).unwrap();
    liar.send_to(&frame, me.local_addr()).await.unwrap();
    let mut plain = Vec::new();
    Bvll::OriginalUnicastNpdu(&[0x01, 0x00, 0x10, 0x09]).encode(&mut plain).unwrap();
    liar.send_to(&plain, me.local_addr()).await.unwrap();
    let got = recv(&mut rx).await;
    assert_eq!(
        got.source,
        liar.local_addr().unwrap().to_string().parse::<SocketAddrV4>().unwrap(),
        "the forged one was dropped"
    );
}

#[test]
fn a_network_prefix_gives_the_subnet_directed_broadcast() {
    let c = BipConfig::from_cidr("192.168.1.10/24", 47808).unwrap();
    assert_eq!(c.broadcast_ip(), Ipv4Addr::new(192, 168, 1, 255));
    assert_eq!(BipConfig::from_cidr("127.0.0.1/8", 0).unwrap().broadcast_ip(), Ipv4Addr::new(127, 255, 255, 255));
    assert_eq!(BipConfig::from_cidr("127.0.0.1", 0).unwrap().broadcast_ip(), Ipv4Addr::new(127, 255, 255, 255));
    assert!(BipConfig::from_cidr("10.0.0.1/33", 0).is_err());
}

/// A batch of answers in one `sendmmsg`: a datagram the kernel refuses
/// (destination port 0) is skipped and reported, and the ones after it
/// still go.
#[tokio::test]
async fn a_refused_datagram_in_a_batch_does_not_keep_the_others_back() {
    let (a, a_driver) = bind(&config(31)).unwrap();
    drop(a_driver);
    let receiver = UdpSocket::bind((Ipv4Addr::new(127, 0, 77, 32), 0)).await.unwrap();
    let to = match receiver.local_addr().unwrap() {
        std::net::SocketAddr::V4(v4) => v4,
        other => panic!("{other}"),
    };
    let frame = |n: u8| {
        let mut f = vec![0; trellis_bip::HEADROOM];
        f.extend_from_slice(&[0x01, 0x00, n]);
        trellis_bip::write_header(&mut f, false).unwrap();
        f
    };
    let (first, refused, last) = (frame(1), frame(2), frame(3));
    let nowhere = SocketAddrV4::new(Ipv4Addr::new(127, 0, 77, 32), 0);
    let sent = a.send_frames(&[(to, &first), (nowhere, &refused), (to, &last)]).await;
    assert!(sent.is_err(), "the refusal is reported");
    let mut buf = [0u8; 64];
    for expected in [1u8, 3] {
        let (n, _) = tokio::time::timeout(WAIT, receiver.recv_from(&mut buf)).await.expect("timed out").unwrap();
        assert_eq!(Bvll::decode(&buf[..n]).unwrap(), Bvll::OriginalUnicastNpdu(&[0x01, 0x00, expected]));
    }
}

/// A datagram whose BVLL length disagrees with its size is dropped and
/// counted, never answered — whatever its function, on a plain node and on
/// a BBMD alike (a BBMD function with a lying length gets no NAK either).
#[tokio::test]
async fn a_datagram_whose_length_lies_is_dropped_counted_and_never_answered() {
    for (last, bbmd) in [(20u8, false), (21, true)] {
        let (mut me, mut driver) = bind(&config(last)).unwrap();
        if bbmd {
            let local = me.local_addr();
            let mut c = trellis_bip::BbmdConfig::new(local, me.broadcast_addr(), Vec::new());
            c.foreign_devices = vec![(Ipv4Addr::new(127, 0, 0, 0), 8)];
            trellis_bip::enable_bbmd(&mut me, &mut driver, c);
        }
        let stats = driver.stats();
        let (tx, _rx) = mpsc::channel::<trellis_bip::Received>(64);
        tokio::spawn(driver.run(tx));
        let peer = UdpSocket::bind((Ipv4Addr::new(127, 0, 77, last + 100), 0)).await.unwrap();
        let mut sent = 0;
        for msg in [
            Bvll::RegisterForeignDevice { ttl: 60 },
            Bvll::ReadBroadcastDistributionTable,
            Bvll::ReadForeignDeviceTable,
            Bvll::OriginalUnicastNpdu(&[0x01, 0x04, 0x00, 0x05, 0x01, 0x0C, 0x0C, 0x00, 0x00, 0x00, 0x01, 0x19, 0x55]),
            Bvll::OriginalBroadcastNpdu(&[0x01, 0x00, 0x10, 0x08]),
            Bvll::DistributeBroadcastToNetwork(&[0x01, 0x00, 0x10, 0x08]),
        ] {
            let mut frame = Vec::new();
            msg.encode(&mut frame).unwrap();
            for lie in [1i32, -1] {
                let mut bad = frame.clone();
                let len = (bad.len() as i32 + lie) as u16;
                bad[2..4].copy_from_slice(&len.to_be_bytes());
                peer.send_to(&bad, me.local_addr()).await.unwrap();
                sent += 1;
            }
        }
        let mut buf = [0u8; 1500];
        let answer = tokio::time::timeout(Duration::from_millis(500), peer.recv_from(&mut buf)).await;
        assert!(
            answer.is_err(),
            "bbmd {bbmd}: a lying datagram was answered: {:02x?}",
            answer.map(|r| r.map(|(n, _)| buf[..n].to_vec()))
        );
        let deadline = tokio::time::Instant::now() + WAIT;
        while stats.malformed.load(std::sync::atomic::Ordering::Relaxed) < sent
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(stats.malformed.load(std::sync::atomic::Ordering::Relaxed), sent, "bbmd {bbmd}: each counted");
    }
}

/// A foreign device trusts the Forwarded-NPDUs its BBMD sends it by
/// unicast (Annex J.4.5), and only those.
#[tokio::test]
async fn a_foreign_device_hears_what_its_bbmd_forwards() {
    let (me, mut driver) = bind(&config(30)).unwrap();
    let bbmd = UdpSocket::bind("127.0.77.31:0").await.unwrap();
    let bbmd_addr: SocketAddrV4 = bbmd.local_addr().unwrap().to_string().parse().unwrap();
    driver.accept_forwarded_from(bbmd_addr);
    let (tx, mut rx) = mpsc::channel(8);
    tokio::spawn(driver.run(tx));
    let other = UdpSocket::bind("127.0.77.32:0").await.unwrap();
    let station = SocketAddrV4::new(Ipv4Addr::new(127, 0, 99, 7), 47808);
    let mut frame = Vec::new();
    Bvll::ForwardedNpdu { original_source: station, npdu: &[0x01, 0x00, 0x10, 0x00] }.encode(&mut frame).unwrap();
    other.send_to(&frame, me.local_addr()).await.unwrap(); // not our BBMD: dropped
    bbmd.send_to(&frame, me.local_addr()).await.unwrap();
    let got = recv(&mut rx).await;
    assert_eq!((got.source, got.broadcast), (station, true), "from our BBMD, with the original source");
    assert!(tokio::time::timeout(Duration::from_millis(200), rx.recv()).await.is_err(), "only that one");
}
