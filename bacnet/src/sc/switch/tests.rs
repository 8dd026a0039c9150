//! Two node switches, a hub that relays between them and the direct
//! WebSocket the host would open.

use super::*;
use crate::bvlc_sc::ConnectInfo;
use alloc::string::ToString;
use alloc::vec;

const S: Duration = Duration::from_secs(1);
const A: ScVmac = [2, 0, 0, 0, 0, 0xA];
const B: ScVmac = [2, 0, 0, 0, 0, 0xB];

fn switch(vmac: ScVmac, accept: &[&str], initiate: bool) -> NodeSwitch {
    let me = ConnectInfo { vmac, uuid: [vmac[5]; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    NodeSwitch::new(SwitchConfig::new(
        ConnectionConfig::new(me),
        accept.iter().map(|u| u.to_string()).collect(),
        initiate,
    ))
}

/// What the hub does to a message from `from`: the origin set, the
/// destination taken off.
fn relayed(frame: &[u8], from: ScVmac) -> (ScVmac, Vec<u8>) {
    let m = BvlcSc::decode(frame).unwrap();
    let to = m.destination.unwrap();
    let mut out = Vec::new();
    BvlcSc { origin: Some(from), destination: None, ..m }.encode(&mut out).unwrap();
    (to, out)
}

/// A and B with the hub between them and, once asked for, A's direct
/// WebSocket to B.
struct World {
    a: NodeSwitch,
    b: NodeSwitch,
    /// The direct WebSocket: A's handle and B's.
    socket: Option<(DirectId, DirectId)>,
    /// B's URIs answer (a listener is there).
    b_listens: bool,
    opened: Vec<Vec<String>>,
}

impl World {
    fn run(&mut self, now: Duration) {
        loop {
            let mut moved = false;
            while let Some(action) = self.a.poll_action() {
                moved = true;
                match action {
                    SwitchAction::ViaHub(f) => {
                        let (to, f) = relayed(&f, A);
                        assert_eq!(to, B);
                        self.b.handle_hub_message(now, &f);
                    }
                    SwitchAction::Open(id, uris) => {
                        self.opened.push(uris);
                        if self.b_listens {
                            let theirs = self.b.accepted(now).unwrap();
                            self.socket = Some((id, theirs));
                            self.a.opened(now, id);
                        } else {
                            self.a.open_failed(now, id);
                        }
                    }
                    SwitchAction::Send(id, f) => {
                        if let Some((ours, theirs)) = self.socket
                            && ours == id
                        {
                            self.b.handle_frame(now, theirs, &f);
                        }
                    }
                    SwitchAction::Close(_) => self.socket = None,
                }
            }
            while let Some(action) = self.b.poll_action() {
                moved = true;
                match action {
                    SwitchAction::ViaHub(f) => {
                        let (to, f) = relayed(&f, B);
                        assert_eq!(to, A);
                        self.a.handle_hub_message(now, &f);
                    }
                    SwitchAction::Send(id, f) => {
                        if let Some((ours, theirs)) = self.socket
                            && theirs == id
                        {
                            self.a.handle_frame(now, ours, &f);
                        }
                    }
                    SwitchAction::Close(_) => self.socket = None,
                    SwitchAction::Open(..) => panic!("B opens nothing"),
                }
            }
            if !moved {
                return;
            }
        }
    }
}

fn world(b_accepts: &[&str]) -> World {
    World { a: switch(A, &[], true), b: switch(B, b_accepts, false), socket: None, b_listens: true, opened: vec![] }
}

#[test]
fn the_first_npdu_goes_through_the_hub_and_the_next_ones_direct() {
    let mut w = world(&["wss://b.example:4443/", "wss://10.0.0.2:4443/"]);
    assert!(!w.a.send_npdu(S, B, b"first"), "no direct connection yet: through the hub");
    w.run(S);
    assert_eq!(w.opened, [vec!["wss://b.example:4443/".to_string(), "wss://10.0.0.2:4443/".to_string()]]);
    assert_eq!(w.a.connected().collect::<Vec<_>>(), [B]);
    assert_eq!(w.b.connected().collect::<Vec<_>>(), [A]);
    assert!(w.a.send_npdu(S, B, b"second"), "direct now");
    w.run(S);
    assert_eq!(w.b.poll_up(), Some(Up { origin: Some(A), broadcast: false, npdu: b"second".to_vec() }));
    // And back the same way: B's answer to A goes on the same connection.
    assert!(w.b.send_npdu(S, A, b"answer"));
    w.run(S);
    assert_eq!(w.a.poll_up().map(|u| u.npdu), Some(b"answer".to_vec()));
    assert_eq!(w.a.counters().resolutions, 1);
    assert!(!w.a.send_npdu(S, BROADCAST_VMAC, b"all"), "broadcasts go through the hub");
}

#[test]
fn a_peer_that_accepts_none_is_not_asked_again_for_a_while() {
    let mut w = world(&[]);
    assert!(!w.a.send_npdu(S, B, b"x"));
    w.run(S);
    assert!(w.opened.is_empty(), "B answered the NAK: nothing to open");
    assert!(!w.a.send_npdu(S * 2, B, b"y"));
    w.run(S * 2);
    assert_eq!(w.a.counters().resolutions, 1, "not asked again");
    // After the retry time, it is.
    w.a.handle_timeout(S * 62);
    assert!(!w.a.send_npdu(S * 62, B, b"z"));
    assert_eq!(w.a.counters().resolutions, 2);
}

#[test]
fn unreachable_uris_fall_back_to_the_hub() {
    let mut w = world(&["wss://b.example:4443/"]);
    w.b_listens = false;
    assert!(!w.a.send_npdu(S, B, b"x"));
    w.run(S);
    assert_eq!(w.opened.len(), 1);
    assert_eq!(w.a.counters().failed, 1);
    assert!(!w.a.send_npdu(S * 2, B, b"y"), "still through the hub");
    w.run(S * 2);
    assert_eq!(w.opened.len(), 1, "not retried at once");
}

#[test]
fn an_unanswered_resolution_times_out_and_a_lost_connection_is_resolved_again() {
    let mut w = world(&["wss://b.example:4443/"]);
    // Resolution sent, the ACK lost: after the wait, a failure.
    assert!(!w.a.send_npdu(S, B, b"x"));
    while w.a.poll_action().is_some() {}
    assert!(w.a.poll_timeout().is_some_and(|t| t <= S * 6));
    w.a.handle_timeout(S * 7);
    w.a.handle_timeout(S * 68);
    assert!(!w.a.send_npdu(S * 68, B, b"y"));
    w.run(S * 68);
    assert_eq!(w.a.connected().count(), 1);
    // The connection goes: the next NPDU through the hub, and B asked again.
    let (ours, _) = w.socket.unwrap();
    w.a.closed(S * 70, ours);
    assert_eq!(w.a.connected().count(), 0);
    assert!(!w.a.send_npdu(S * 70, B, b"z"));
    assert_eq!(w.a.counters().resolutions, 3);
}

#[test]
fn a_peer_claiming_our_own_vmac_is_refused() {
    let mut b = switch(B, &["wss://b:1/"], false);
    let id = b.accepted(S).unwrap();
    let mut request = Vec::new();
    let me = ConnectInfo { vmac: B, uuid: [9; 16], max_bvlc_len: 1600, max_npdu_len: 1497 };
    BvlcSc { message_id: 1, ..bare(Payload::ConnectRequest(me)) }.encode(&mut request).unwrap();
    b.handle_frame(S, id, &request);
    assert_eq!(b.connected().count(), 0);
    let sent: Vec<SwitchAction> = core::iter::from_fn(|| b.poll_action()).collect();
    assert!(
        sent.iter().any(|a| matches!(a, SwitchAction::Send(i, f) if *i == id
        && matches!(BvlcSc::decode(f).map(|m| m.payload), Ok(Payload::Result { nak: Some(_), .. })))),
        "{sent:?}"
    );
}
