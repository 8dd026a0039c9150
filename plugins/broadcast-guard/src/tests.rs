//! A Who-Is storm against the guard, in the router's own types.

use super::*;
use trellis_routing_sdk::bacnet::npdu::NetAddress;
use trellis_routing_sdk::{ApduSummary, NetworkPriority, PortId};

const TRUNK: u16 = 2;
const STORMER: [u8; 6] = [127, 0, 0, 66, 0xBA, 0xC0];
const QUIET: [u8; 6] = [127, 0, 0, 7, 0xBA, 0xC0];

fn guard(settings: &str) -> BroadcastGuard {
    BroadcastGuard::configure(settings).unwrap()
}

fn who_is(g: &mut BroadcastGuard, now_ms: u64, from: &[u8], to: u16, destination: Destination<'_>) -> Verdict {
    let npdu = RoutedNpdu {
        arrival_port: PortId(1),
        arrival_network: 1,
        departure_port: PortId(2),
        departure_network: to,
        source: NetAddress { net: 1, mac: from },
        link_source: from,
        destination,
        priority: NetworkPriority::NORMAL,
        hop_count: 255,
        expecting_reply: false,
        content: Content::Apdu(ApduSummary {
            pdu_type: 1,
            service: Some(UnconfirmedServiceChoice::WHO_IS.0),
            invoke_id: None,
            object: None,
            segmented: false,
        }),
    };
    g.decide(now_ms, &npdu)
}

fn storm(g: &mut BroadcastGuard, now_ms: u64, from: &[u8], n: usize) -> (usize, usize) {
    let forwarded =
        (0..n).filter(|_| who_is(g, now_ms, from, TRUNK, Destination::GlobalBroadcast) == Verdict::Forward).count();
    (forwarded, n - forwarded)
}

#[test]
fn a_storm_gets_its_budget_and_no_more_while_a_quiet_source_keeps_its_own() {
    let mut g = guard("budget = 5\nwindow_seconds = 10\nprotected_networks = [2]");
    assert_eq!(storm(&mut g, 0, &STORMER, 100), (5, 95));
    assert_eq!(who_is(&mut g, 0, &QUIET, TRUNK, Destination::GlobalBroadcast), Verdict::Forward);
    assert_eq!(who_is(&mut g, 1, &STORMER, TRUNK, Destination::GlobalBroadcast), Verdict::Drop(OVER_BUDGET));
}

#[test]
fn the_budget_refills_over_the_window() {
    let mut g = guard("budget = 5\nwindow_seconds = 10");
    storm(&mut g, 0, &STORMER, 5);
    assert_eq!(storm(&mut g, 1_999, &STORMER, 1), (0, 1));
    assert_eq!(storm(&mut g, 2_000, &STORMER, 2), (1, 1), "one token every 2 s");
    assert_eq!(storm(&mut g, 60_000, &STORMER, 10), (5, 5), "never more than the budget");
}

#[test]
fn unprotected_networks_unicasts_and_other_services_pass() {
    let mut g = guard("budget = 1\nprotected_networks = [2]");
    storm(&mut g, 0, &STORMER, 1);
    assert_eq!(who_is(&mut g, 0, &STORMER, 3, Destination::GlobalBroadcast), Verdict::Forward);
    let one = Destination::Station(NetAddress { net: TRUNK, mac: &[5] });
    assert_eq!(who_is(&mut g, 0, &STORMER, TRUNK, one), Verdict::Forward);
    assert_eq!(who_is(&mut g, 0, &STORMER, TRUNK, Destination::RemoteBroadcast(TRUNK)), Verdict::Drop(OVER_BUDGET));
    let mut i_am = guard("budget = 1\nservices = [\"who-has\"]");
    assert_eq!(storm(&mut i_am, 0, &STORMER, 3), (3, 0), "Who-Is not listed");
}

#[test]
fn cycling_source_addresses_cannot_grow_the_table() {
    let mut g = guard("budget = 5\nmax_sources = 10");
    for i in 0..10u8 {
        assert_eq!(storm(&mut g, 0, &[i], 1), (1, 0));
    }
    assert_eq!(who_is(&mut g, 0, &[200], TRUNK, Destination::GlobalBroadcast), Verdict::Drop(TOO_MANY_SOURCES));
    assert_eq!(g.buckets.len(), 10);
    // Once their buckets are full again, the tick frees them.
    g.tick(10_000);
    assert!(g.buckets.is_empty());
    assert_eq!(who_is(&mut g, 10_000, &[200], TRUNK, Destination::GlobalBroadcast), Verdict::Forward);
}

#[test]
fn the_network_budget_bounds_every_sender_together() {
    let mut g = guard("budget = 2\nnetwork_budget = 5\nprotected_networks = [2]");
    let forwarded: usize = (0..10u8).map(|i| storm(&mut g, 0, &[i], 2).0).sum();
    assert_eq!(forwarded, 5, "ten senders with 2 each, but 5 in all");
    assert_eq!(who_is(&mut g, 0, &[42], TRUNK, Destination::GlobalBroadcast), Verdict::Drop(NETWORK_OVER_BUDGET));
}

#[test]
fn a_forged_sadr_does_not_buy_a_new_budget() {
    let mut g = guard("budget = 2\nprotected_networks = [2]");
    let mut forwarded = 0;
    for forged in 0..20u8 {
        let npdu = RoutedNpdu {
            arrival_port: PortId(1),
            arrival_network: 1,
            departure_port: PortId(2),
            departure_network: TRUNK,
            source: NetAddress { net: 9, mac: &[forged] },
            link_source: &STORMER,
            destination: Destination::GlobalBroadcast,
            priority: NetworkPriority::NORMAL,
            hop_count: 255,
            expecting_reply: false,
            content: Content::Apdu(ApduSummary {
                pdu_type: 1,
                service: Some(UnconfirmedServiceChoice::WHO_IS.0),
                invoke_id: None,
                object: None,
                segmented: false,
            }),
        };
        forwarded += usize::from(g.decide(0, &npdu) == Verdict::Forward);
    }
    assert_eq!(forwarded, 2, "the budget follows the datalink sender, not the SADR it wrote");
}

#[test]
fn a_swap_does_not_hand_a_stormer_a_fresh_budget() {
    let mut old = guard("budget = 5");
    storm(&mut old, 0, &STORMER, 50);
    let mut new = guard("budget = 5");
    new.import_state(&old.export_state()).unwrap();
    assert_eq!(storm(&mut new, 0, &STORMER, 1), (0, 1));
    assert!(new.import_state(&[2, 0]).unwrap_err().contains("version 1"));
    assert!(new.import_state(&[1, 0, 0, 0, 1, 0]).is_err(), "truncated");
}

#[test]
fn bad_settings_say_what_is_wrong() {
    let e = |s: &str| BroadcastGuard::configure(s).unwrap_err();
    assert!(e("services = [\"read-property\"]").contains("not an unconfirmed service"));
    assert!(e("window_seconds = 0").contains("window_seconds"));
    assert!(e("max_sources = 0").contains("max_sources"));
    assert!(e("max_sources = 1000000").contains("1..=65536"));
    assert!(e("budgte = 3").contains("unknown field"));
}
