//! The IPv6 BBMD as sequence diagrams: this BBMD at [2001:db8::1]:47808
//! (VMAC 000001) with one peer at [2001:db8:1::1]:47808, foreign devices
//! allowed from 2001:db8:f::/48.

use super::*;
use alloc::vec;

const fn addr(segments: [u16; 8], port: u16) -> SocketAddrV6 {
    SocketAddrV6::new(
        Ipv6Addr::new(
            segments[0],
            segments[1],
            segments[2],
            segments[3],
            segments[4],
            segments[5],
            segments[6],
            segments[7],
        ),
        port,
        0,
        0,
    )
}

const LOCAL: SocketAddrV6 = addr([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1], 47808);
const PEER: SocketAddrV6 = addr([0x2001, 0xdb8, 1, 0, 0, 0, 0, 1], 47808);
const GROUP: SocketAddrV6 = addr([0xff02, 0, 0, 0, 0, 0, 0, 0xbac0], 47808);
const STATION: SocketAddrV6 = addr([0x2001, 0xdb8, 0, 0, 0, 0, 0, 7], 47808);
const FOREIGN: SocketAddrV6 = addr([0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 9], 47900);
const STRANGER: SocketAddrV6 = addr([0x2001, 0xdb8, 0xe, 0, 0, 0, 0, 9], 47900);
const SECOND: Duration = Duration::from_secs(1);
const WHO_IS: [u8; 4] = [0x01, 0x20, 0x10, 0x08];

fn bbmd() -> Bbmd6 {
    let mut c = Bbmd6Config::new(LOCAL, [0, 0, 1], GROUP, vec![LOCAL, PEER]);
    c.foreign_devices = vec![(Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 0), 48)];
    Bbmd6::new(c)
}

fn sent(b: &mut Bbmd6) -> Vec<(SocketAddrV6, Vec<u8>)> {
    core::iter::from_fn(|| b.poll_transmit()).map(|d| (d.to, d.bvll)).collect()
}

fn result_code(bvll: &[u8]) -> u16 {
    match Bvll6::decode(bvll).unwrap() {
        Bvll6::Result { code, .. } => code,
        other => panic!("not a BVLC-Result: {other:?}"),
    }
}

fn register(b: &mut Bbmd6, from: SocketAddrV6, ttl: u16) -> u16 {
    b.handle_bvll(SECOND, from, &Bvll6::RegisterForeignDevice { source: [0, 0, 9], ttl }, false);
    let out = sent(b);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, from);
    result_code(&out[0].1)
}

#[test]
fn a_foreign_device_from_an_allowed_network_registers_and_a_stranger_does_not() {
    let mut b = bbmd();
    assert_eq!(register(&mut b, FOREIGN, 60), result::SUCCESSFUL_COMPLETION);
    assert_eq!(register(&mut b, STRANGER, 60), result::REGISTER_FOREIGN_DEVICE_NAK);
    let fdt = b.fdt(SECOND);
    assert_eq!(fdt.len(), 1);
    assert_eq!((fdt[0].address, fdt[0].vmac, fdt[0].ttl, fdt[0].remaining), (FOREIGN, [0, 0, 9], 60, 90));
    assert_eq!(b.counters().refused_not_allowed, 1);
}

#[test]
fn a_registration_lapses_after_its_ttl_and_the_grace() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, 60);
    assert_eq!(b.fdt(SECOND * 90).len(), 1);
    assert!(b.fdt(SECOND * 91).is_empty());
}

#[test]
fn a_local_broadcast_goes_to_the_peer_and_the_foreign_devices_with_its_originator() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, 60);
    let up = b.handle_bvll(SECOND, STATION, &Bvll6::OriginalBroadcastNpdu { source: [0, 0, 7], npdu: &WHO_IS }, true);
    assert_eq!(up, None, "the port hands a local broadcast up itself");
    let out = sent(&mut b);
    assert_eq!(out.iter().map(|(to, _)| *to).collect::<Vec<_>>(), [PEER, FOREIGN], "never back to ourselves");
    match Bvll6::decode(&out[0].1).unwrap() {
        Bvll6::ForwardedNpdu { source, original_source, npdu } => {
            assert_eq!((source, original_source, npdu), ([0, 0, 7], STATION, &WHO_IS[..]))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_peers_forwarded_broadcast_is_multicast_on_our_link_and_sent_to_the_foreign_devices() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, 60);
    let msg = Bvll6::ForwardedNpdu { source: [0, 0, 0x42], original_source: PEER, npdu: &WHO_IS };
    assert_eq!(b.handle_bvll(SECOND, PEER, &msg, false), Some(Up6 { source: [0, 0, 0x42], npdu: &WHO_IS }));
    assert_eq!(sent(&mut b).iter().map(|(to, _)| *to).collect::<Vec<_>>(), [GROUP, FOREIGN]);
}

#[test]
fn a_forwarded_npdu_from_a_stranger_is_dropped_and_counted() {
    let mut b = bbmd();
    let msg = Bvll6::ForwardedNpdu { source: [0, 0, 0x42], original_source: STRANGER, npdu: &WHO_IS };
    assert_eq!(b.handle_bvll(SECOND, STRANGER, &msg, false), None);
    assert!(sent(&mut b).is_empty());
    assert_eq!(b.counters().dropped_forwarded, 1);
    // Another BBMD's rebroadcast over our link's group is heard, not forwarded.
    assert!(b.handle_bvll(SECOND, STRANGER, &msg, true).is_some());
    assert!(sent(&mut b).is_empty());
}

#[test]
fn a_foreign_device_distributes_a_broadcast_everywhere_but_back_to_itself() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, 60);
    let other = addr([0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 10], 47900);
    register(&mut b, other, 60);
    let msg = Bvll6::DistributeBroadcastToNetwork { source: [0, 0, 9], npdu: &WHO_IS };
    assert_eq!(b.handle_bvll(SECOND, FOREIGN, &msg, false), Some(Up6 { source: [0, 0, 9], npdu: &WHO_IS }));
    assert_eq!(sent(&mut b).iter().map(|(to, _)| *to).collect::<Vec<_>>(), [PEER, GROUP, other]);
}

#[test]
fn an_unregistered_distribute_is_refused_with_its_nak() {
    let mut b = bbmd();
    let msg = Bvll6::DistributeBroadcastToNetwork { source: [0, 0, 9], npdu: &WHO_IS };
    assert_eq!(b.handle_bvll(SECOND, STRANGER, &msg, false), None);
    let out = sent(&mut b);
    assert_eq!(result_code(&out[0].1), result::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK);
    assert_eq!(b.counters().refused_distribute, 1);
}

#[test]
fn only_an_entrys_owner_deletes_it() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, 60);
    let delete = Bvll6::DeleteForeignDeviceTableEntry { source: [0, 0, 5], entry: FOREIGN };
    b.handle_bvll(SECOND, STRANGER, &delete, false);
    assert_eq!(result_code(&sent(&mut b)[0].1), result::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK);
    b.handle_bvll(SECOND, FOREIGN, &delete, false);
    assert_eq!(result_code(&sent(&mut b)[0].1), result::SUCCESSFUL_COMPLETION);
    assert!(b.fdt(SECOND).is_empty());
}

#[test]
fn the_fdt_is_bounded_and_requests_are_rate_limited() {
    let mut b = bbmd();
    b.config.max_foreign_devices = 1;
    register(&mut b, FOREIGN, 60);
    let other = addr([0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 10], 47900);
    assert_eq!(register(&mut b, other, 60), result::REGISTER_FOREIGN_DEVICE_NAK);
    assert_eq!(b.counters().refused_full, 1);
    let mut answered = 0;
    for _ in 0..100 {
        b.handle_bvll(SECOND, other, &Bvll6::RegisterForeignDevice { source: [0, 0, 9], ttl: 60 }, false);
        answered += sent(&mut b).len();
    }
    assert!(answered < 25, "{answered} answers to 100 requests in one instant");
    assert!(b.counters().rate_limited > 75);
}

#[test]
fn ttls_are_capped() {
    let mut b = bbmd();
    register(&mut b, FOREIGN, u16::MAX);
    assert_eq!(b.fdt(SECOND)[0].ttl, 3600);
}
