//! The BBMD as sequence diagrams: we are 10.0.1.1 on 10.0.1.0/24, the peer
//! BBMD 10.0.2.1 (mask all ones: two-hop), foreign devices allowed from
//! 192.168.0.0/16.

use super::*;
use alloc::vec;

const PORT: u16 = 47808;
const NPDU: &[u8] = &[0x01, 0x00, 0x10, 0x08];

fn a(a: u8, b: u8, c: u8, d: u8) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), PORT)
}

fn bbmd() -> Bbmd {
    let us = a(10, 0, 1, 1);
    let bdt = vec![
        BdtEntry { address: us, mask: Ipv4Addr::BROADCAST },
        BdtEntry { address: a(10, 0, 2, 1), mask: Ipv4Addr::BROADCAST },
    ];
    let mut c = BbmdConfig::new(us, a(10, 0, 1, 255), bdt);
    c.foreign_devices = vec![(Ipv4Addr::new(192, 168, 0, 0), 16)];
    c.max_foreign_devices = 2;
    Bbmd::new(c)
}

fn sent(b: &mut Bbmd) -> Vec<(SocketAddrV4, Vec<u8>)> {
    core::iter::from_fn(|| b.poll_transmit()).map(|d| (d.to, d.bvll)).collect()
}

fn result(bvll: &[u8]) -> BvlcResultCode {
    match Bvll::decode(bvll) {
        Ok(Bvll::Result(code)) => code,
        other => panic!("not a BVLC-Result: {other:?}"),
    }
}

fn forwarded(bvll: &[u8]) -> SocketAddrV4 {
    match Bvll::decode(bvll) {
        Ok(Bvll::ForwardedNpdu { original_source, npdu }) => {
            assert_eq!(npdu, NPDU);
            original_source
        }
        other => panic!("not a Forwarded-NPDU: {other:?}"),
    }
}

const T0: Duration = Duration::ZERO;

fn register(b: &mut Bbmd, now: Duration, fd: SocketAddrV4, ttl: u16) -> BvlcResultCode {
    b.handle_bvll(now, fd, &Bvll::RegisterForeignDevice { ttl }, false);
    result(&sent(b)[0].1)
}

/// A station of our subnet broadcasts a Who-Is: the peer and every foreign
/// device get it as a Forwarded-NPDU from that station; we hear it too.
#[test]
fn a_local_broadcast_reaches_the_peers_and_the_foreign_devices() {
    let mut b = bbmd();
    let fd = a(192, 168, 5, 5);
    assert_eq!(register(&mut b, T0, fd, 60), BvlcResultCode::SUCCESSFUL_COMPLETION);
    let station = a(10, 0, 1, 7);
    let up = b.handle_bvll(T0, station, &Bvll::OriginalBroadcastNpdu(NPDU), true).unwrap();
    assert_eq!((up.source, up.broadcast), (station, true));
    let out = sent(&mut b);
    assert_eq!(out.iter().map(|(to, _)| *to).collect::<Vec<_>>(), [a(10, 0, 2, 1), fd]);
    assert!(out.iter().all(|(_, m)| forwarded(m) == station));
}

/// The peer forwards a broadcast of its subnet: we rebroadcast it on ours
/// (its mask is all ones: it sent it to us alone) and to the foreign devices.
#[test]
fn a_forwarded_npdu_from_a_peer_is_rebroadcast_and_reaches_the_foreign_devices() {
    let mut b = bbmd();
    let fd = a(192, 168, 5, 5);
    register(&mut b, T0, fd, 60);
    let origin = a(10, 0, 2, 9);
    let msg = Bvll::ForwardedNpdu { original_source: origin, npdu: NPDU };
    let up = b.handle_bvll(T0, a(10, 0, 2, 1), &msg, false).unwrap();
    assert_eq!(up.source, origin);
    let out = sent(&mut b);
    assert_eq!(out.iter().map(|(to, _)| *to).collect::<Vec<_>>(), [a(10, 0, 1, 255), fd]);

    // Not from a peer and not on our broadcast address: dropped.
    assert!(b.handle_bvll(T0, a(10, 9, 9, 9), &msg, false).is_none());
    assert!(sent(&mut b).is_empty());
    assert_eq!(b.counters().dropped_forwarded, 1);
}

/// A foreign device's Distribute-Broadcast-To-Network goes to our subnet,
/// the peers and the other foreign devices, not back to it; a station that
/// is not registered gets the NAK.
#[test]
fn a_foreign_device_distributes_a_broadcast_everywhere_but_to_itself() {
    let mut b = bbmd();
    let (one, two) = (a(192, 168, 5, 5), a(192, 168, 6, 6));
    register(&mut b, T0, one, 60);
    register(&mut b, T0, two, 60);
    let up = b.handle_bvll(T0, one, &Bvll::DistributeBroadcastToNetwork(NPDU), false).unwrap();
    assert!(up.broadcast);
    let to: Vec<_> = sent(&mut b).into_iter().map(|(to, _)| to).collect();
    assert_eq!(to, [a(10, 0, 2, 1), a(10, 0, 1, 255), two]);

    let stranger = a(192, 168, 7, 7);
    assert!(b.handle_bvll(T0, stranger, &Bvll::DistributeBroadcastToNetwork(NPDU), false).is_none());
    assert_eq!(result(&sent(&mut b)[0].1), BvlcResultCode::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK);
}

#[test]
fn registrations_come_only_from_allowed_networks_and_only_while_there_is_room() {
    let mut b = bbmd();
    assert_eq!(register(&mut b, T0, a(172, 16, 0, 1), 60), BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK);
    assert_eq!(register(&mut b, T0, a(192, 168, 0, 1), 60), BvlcResultCode::SUCCESSFUL_COMPLETION);
    assert_eq!(register(&mut b, T0, a(192, 168, 0, 2), 60), BvlcResultCode::SUCCESSFUL_COMPLETION);
    assert_eq!(register(&mut b, T0, a(192, 168, 0, 3), 60), BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK);
    assert_eq!(register(&mut b, T0, a(192, 168, 0, 1), 90), BvlcResultCode::SUCCESSFUL_COMPLETION, "a renewal");
    let c = b.counters();
    assert_eq!((c.refused_not_allowed, c.refused_full, c.registrations), (1, 1, 3));
}

/// J.5.2.3: an entry lives its TTL plus 30 s; the TTL is capped.
#[test]
fn an_entry_lives_its_time_to_live_and_the_grace_period() {
    let mut b = bbmd();
    let fd = a(192, 168, 5, 5);
    register(&mut b, T0, fd, 60);
    assert_eq!(b.fdt(Duration::from_secs(10))[0].remaining, 80);
    assert_eq!(b.fdt(Duration::from_secs(89)).len(), 1);
    assert!(b.fdt(Duration::from_secs(90)).is_empty());
    b.handle_bvll(Duration::from_secs(91), fd, &Bvll::DistributeBroadcastToNetwork(NPDU), false);
    assert_eq!(result(&sent(&mut b)[0].1), BvlcResultCode::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK, "purged");
    register(&mut b, Duration::from_secs(100), fd, u16::MAX);
    assert_eq!(b.fdt(Duration::from_secs(100))[0].ttl, 3600);
}

#[test]
fn only_a_foreign_device_deletes_its_own_entry() {
    let mut b = bbmd();
    let fd = a(192, 168, 5, 5);
    register(&mut b, T0, fd, 60);
    b.handle_bvll(T0, a(192, 168, 9, 9), &Bvll::DeleteForeignDeviceTableEntry(fd), false);
    assert_eq!(result(&sent(&mut b)[0].1), BvlcResultCode::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK);
    assert_eq!(b.fdt(T0).len(), 1);
    b.handle_bvll(T0, fd, &Bvll::DeleteForeignDeviceTableEntry(fd), false);
    assert_eq!(result(&sent(&mut b)[0].1), BvlcResultCode::SUCCESSFUL_COMPLETION);
    assert!(b.fdt(T0).is_empty());
}

#[test]
fn the_tables_are_readable_and_the_bdt_not_writable_by_default() {
    let mut b = bbmd();
    b.handle_bvll(T0, a(10, 0, 1, 7), &Bvll::ReadBroadcastDistributionTable, false);
    let out = sent(&mut b);
    let Ok(Bvll::ReadBroadcastDistributionTableAck(t)) = Bvll::decode(&out[0].1) else { panic!("{out:?}") };
    assert_eq!(t.bdt_entries().count(), 2);
    let mut table = Vec::new();
    encode_bdt(&[], &mut table);
    let write = Bvll::WriteBroadcastDistributionTable(crate::bvll::Table::from_bytes(&table, 0).unwrap());
    b.handle_bvll(T0, a(10, 0, 1, 7), &write, false);
    assert_eq!(result(&sent(&mut b)[0].1), BvlcResultCode::WRITE_BROADCAST_DISTRIBUTION_TABLE_NAK);
    assert_eq!(b.bdt().len(), 2, "unchanged");
}

/// A source that floods management requests is answered at its rate, not
/// at the flood's: the rest are dropped and counted.
#[test]
fn management_requests_are_rate_limited_per_source() {
    let mut b = bbmd();
    let attacker = a(10, 0, 1, 66);
    for _ in 0..1000 {
        b.handle_bvll(T0, attacker, &Bvll::ReadBroadcastDistributionTable, false);
    }
    assert_eq!(sent(&mut b).len(), 20, "the burst, then nothing");
    assert_eq!(b.counters().rate_limited, 980);
    b.handle_bvll(Duration::from_secs(1), attacker, &Bvll::ReadBroadcastDistributionTable, false);
    assert_eq!(sent(&mut b).len(), 1, "refilled at 10 per second");
    b.handle_bvll(T0, a(10, 0, 1, 67), &Bvll::ReadBroadcastDistributionTable, false);
    assert_eq!(sent(&mut b).len(), 1, "another source is not held back");
}

/// Our own broadcast reaches the peer and the foreign devices as ours.
#[test]
fn the_nodes_own_broadcast_is_forwarded_as_ours() {
    let mut b = bbmd();
    register(&mut b, T0, a(192, 168, 5, 5), 60);
    b.handle_local_broadcast(T0, NPDU);
    let out = sent(&mut b);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|(_, m)| forwarded(m) == a(10, 0, 1, 1)));
}

/// An Original-Broadcast-NPDU sent to us alone from off our subnet is
/// heard but not forwarded: nobody outside can make us flood the peers and
/// the foreign devices.
#[test]
fn a_broadcast_from_off_the_subnet_is_not_forwarded() {
    let mut b = bbmd();
    register(&mut b, T0, a(192, 168, 5, 5), 60);
    let outsider = a(172, 16, 9, 9);
    assert!(b.handle_bvll(T0, outsider, &Bvll::OriginalBroadcastNpdu(NPDU), false).is_some());
    assert!(sent(&mut b).is_empty());
    assert_eq!(b.counters().refused_forward, 1);
    // From our subnet by unicast (a socket that cannot tell): forwarded.
    b.handle_bvll(T0, a(10, 0, 1, 9), &Bvll::OriginalBroadcastNpdu(NPDU), false);
    assert_eq!(sent(&mut b).len(), 2);
}
