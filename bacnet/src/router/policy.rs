//! Routing policy: the router's question, for every NPDU it is about to
//! send on towards another network, "may this go?".
//!
//! The router builds a [`RoutedNpdu`] — ports, source and destination, the
//! network priority, and what the NPDU carries (a network message's type,
//! or an APDU's type, service, invoke ID and the object it names) — and
//! hands it to a [`RoutingPolicy`], which answers with a [`Verdict`]:
//! forward, drop (with a reason the policy counts), answer the sender with
//! Reject-Message-To-Network, or forward at another network priority. A
//! global broadcast is asked about once per port it would leave by.
//!
//! What the policy is never asked about: NPDUs for the arrival network
//! (they are not routed), the network-layer messages addressed to the
//! router, and the router's own messages (I-Am-Router-To-Network, its
//! Rejects). A global broadcast — a network message included — is asked
//! about for each port it would be passed to. The router applies its own
//! checks first (hop count, forged sources, unknown or busy networks,
//! addressing, length): a policy cannot make the router forward what the
//! standard says it must not. A Reject of a global broadcast drops it
//! without a Reject-Message-To-Network.
//!
//! The object an APDU names ([`ApduSummary::object`]) is read from the
//! request's first field for the services that name one object. A request
//! naming several objects (a ReadPropertyMultiple or
//! WritePropertyMultiple of more than one), or a segment after the first,
//! has none: a policy that allows only some objects must treat `None` as
//! "not one of them".
//!
//! Must never: allocate, or panic on any APDU (it reads untrusted octets
//! with the codec's bounds-checked reader).

use super::PortId;
use crate::ObjectIdentifier;
use crate::codec::{self as field, Reader};
use crate::enums::{
    ConfirmedServiceChoice as C, NetworkMessageType, NetworkPriority, RejectMessageReason,
    UnconfirmedServiceChoice as U,
};
use crate::npdu::NetAddress;
use core::time::Duration;

/// An NPDU the router is about to send on, as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutedNpdu<'a> {
    /// The port it arrived on.
    pub arrival_port: PortId,
    /// The network of that port.
    pub arrival_network: u16,
    /// The port it would leave by.
    pub departure_port: PortId,
    /// The network of that port.
    pub departure_network: u16,
    /// Who sent it: its SNET/SADR, or the arrival network and the MAC it
    /// came from. An SNET is never one of the router's own networks (the
    /// router drops those as forged), but a router beyond may have been
    /// told anything.
    pub source: NetAddress<'a>,
    /// The datalink address it came from on the arrival port: the sender
    /// itself, or the router that forwarded it (the previous hop; what a
    /// budget per sender should be keyed on, since nobody can choose it
    /// for an NPDU that reaches us through a router).
    pub link_source: &'a [u8],
    /// Where it goes.
    pub destination: Destination<'a>,
    /// Its network priority.
    pub priority: NetworkPriority,
    /// Its hop count as it arrived.
    pub hop_count: u8,
    /// The sender expects a reply.
    pub expecting_reply: bool,
    /// What it carries.
    pub content: Content,
}

/// Where a routed NPDU goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination<'a> {
    /// One station on a remote network.
    Station(NetAddress<'a>),
    /// Every station on one remote network.
    RemoteBroadcast(u16),
    /// Every station on every network.
    GlobalBroadcast,
}

/// What a routed NPDU carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// A network-layer message of this type.
    NetworkMessage(NetworkMessageType),
    /// An APDU.
    Apdu(ApduSummary),
}

/// An APDU's header, read without decoding its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApduSummary {
    /// The PDU type (`apdu::pdu_type`; 8..=15 are not defined, and an
    /// empty APDU reads as 15).
    pub pdu_type: u8,
    /// The service choice, for the types that carry one (confirmed and
    /// unconfirmed requests, SimpleACK, ComplexACK, Error).
    pub service: Option<u8>,
    /// The invoke ID, for the types that carry one.
    pub invoke_id: Option<u8>,
    /// The one object a request names (see the module doc).
    pub object: Option<ObjectIdentifier>,
    /// A segment of a segmented message.
    pub segmented: bool,
}

/// What a policy says about one routed NPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on.
    Forward,
    /// Drop it; the policy's reason number (the policy names its reasons).
    Drop(u16),
    /// Drop it and answer the sender with Reject-Message-To-Network (a
    /// global broadcast is only dropped).
    Reject(RejectMessageReason),
    /// Send it on at this network priority.
    SetPriority(NetworkPriority),
}

/// A routing policy. Called on the router's thread for every routed NPDU:
/// it must answer at once.
pub trait RoutingPolicy {
    /// The verdict on `npdu`, at `now` (the router's clock).
    fn decide(&mut self, now: Duration, npdu: &RoutedNpdu<'_>) -> Verdict;

    /// Time passes: the host calls it about once a second, for policies
    /// with time windows or budgets (the router itself never does).
    fn tick(&mut self, _now: Duration) {}

    /// Whether it looks at NPDUs at all: a policy that forwards everything
    /// unseen says no, and the router does not build [`RoutedNpdu`]s for it.
    fn inspects(&self) -> bool {
        true
    }
}

/// The policy of a router without one: everything is forwarded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForwardAll;

impl RoutingPolicy for ForwardAll {
    fn decide(&mut self, _now: Duration, _npdu: &RoutedNpdu<'_>) -> Verdict {
        Verdict::Forward
    }

    fn inspects(&self) -> bool {
        false
    }
}

/// Policies asked in order: the first that drops or rejects decides, and
/// the ones after it are not asked. A new priority is passed on: the later
/// policies see the NPDU at it, and it leaves at it unless they keep it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain<P>(pub alloc::vec::Vec<P>);

impl<P: RoutingPolicy> RoutingPolicy for Chain<P> {
    fn decide(&mut self, now: Duration, npdu: &RoutedNpdu<'_>) -> Verdict {
        let mut seen = *npdu;
        for p in &mut self.0 {
            match p.decide(now, &seen) {
                Verdict::Forward => {}
                Verdict::SetPriority(priority) => seen.priority = priority,
                stop => return stop,
            }
        }
        if seen.priority == npdu.priority { Verdict::Forward } else { Verdict::SetPriority(seen.priority) }
    }

    fn tick(&mut self, now: Duration) {
        self.0.iter_mut().for_each(|p| p.tick(now))
    }

    fn inspects(&self) -> bool {
        self.0.iter().any(RoutingPolicy::inspects)
    }
}

impl<P: RoutingPolicy + ?Sized> RoutingPolicy for &mut P {
    fn decide(&mut self, now: Duration, npdu: &RoutedNpdu<'_>) -> Verdict {
        (**self).decide(now, npdu)
    }

    fn tick(&mut self, now: Duration) {
        (**self).tick(now)
    }

    fn inspects(&self) -> bool {
        (**self).inspects()
    }
}

impl ApduSummary {
    /// Read an APDU's header (and, for a request, the object it names).
    pub fn of(apdu: &[u8]) -> ApduSummary {
        let at = |i: usize| apdu.get(i).copied();
        let first = at(0).unwrap_or(0xF0);
        let pdu_type = first >> 4;
        let segmented = first & 0x08 != 0;
        let none = ApduSummary { pdu_type, service: None, invoke_id: None, object: None, segmented: false };
        match pdu_type {
            // type/flags, max-segs/max-APDU, invoke ID, [sequence, window], service
            0 => {
                let service_at = if segmented { 5 } else { 3 };
                let first_segment = !segmented || at(3) == Some(0);
                let service = at(service_at);
                let object = match (service, first_segment) {
                    (Some(s), true) => confirmed_object(C(s), apdu.get(service_at + 1..).unwrap_or(&[])),
                    _ => None,
                };
                ApduSummary { service, invoke_id: at(2), object, segmented, ..none }
            }
            1 => {
                let service = at(1);
                let object = service.and_then(|s| unconfirmed_object(U(s), apdu.get(2..).unwrap_or(&[])));
                ApduSummary { service, object, ..none }
            }
            // SimpleACK, Error: type, invoke ID, service
            2 | 5 => ApduSummary { service: at(2), invoke_id: at(1), ..none },
            // ComplexACK: type/flags, invoke ID, [sequence, window], service
            3 => ApduSummary { service: at(if segmented { 4 } else { 2 }), invoke_id: at(1), segmented, ..none },
            // SegmentACK, Reject, Abort: type, invoke ID, …
            4 | 6 | 7 => ApduSummary { invoke_id: at(1), ..none },
            _ => none,
        }
    }
}

/// The object a confirmed request names, when it names exactly one.
fn confirmed_object(service: C, body: &[u8]) -> Option<ObjectIdentifier> {
    let mut r = Reader::new(body);
    match service {
        C::READ_PROPERTY | C::WRITE_PROPERTY | C::READ_RANGE | C::ADD_LIST_ELEMENT | C::REMOVE_LIST_ELEMENT => {
            field::read_ctx(&mut r, 0, "object").ok()
        }
        // One object specification, and nothing after it.
        C::READ_PROPERTY_MULTIPLE | C::WRITE_PROPERTY_MULTIPLE => {
            let object = field::read_ctx(&mut r, 0, "object").ok()?;
            field::read_constructed(&mut r, 1, "properties").ok()?;
            r.is_empty().then_some(object)
        }
        C::SUBSCRIBE_COV | C::SUBSCRIBE_COV_PROPERTY => {
            let _: u32 = field::read_ctx(&mut r, 0, "process").ok()?;
            field::read_ctx(&mut r, 1, "object").ok()
        }
        C::ATOMIC_READ_FILE | C::ATOMIC_WRITE_FILE | C::DELETE_OBJECT => field::read_app(&mut r, "object").ok(),
        _ => None,
    }
}

/// The object an unconfirmed request names: the I-Am's device, the
/// Who-Has's object (not its name).
fn unconfirmed_object(service: U, body: &[u8]) -> Option<ObjectIdentifier> {
    let mut r = Reader::new(body);
    match service {
        U::I_AM => field::read_app(&mut r, "device").ok(),
        U::WHO_HAS => {
            if field::next_is_primitive_ctx(&r, 0) {
                let _: u32 = field::read_ctx(&mut r, 0, "low limit").ok()?;
                let _: u32 = field::read_ctx(&mut r, 1, "high limit").ok()?;
            }
            field::read_opt_ctx(&mut r, 2, "object").ok().flatten()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apdu::{Apdu, ConfirmedRequest, MaxApdu, MaxSegments, SegmentInfo};
    use crate::codec::{write_app, write_constructed, write_ctx};
    use crate::enums::ObjectType;
    use alloc::vec::Vec;

    const AV1: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 1 };
    const AV2: ObjectIdentifier = ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance: 2 };

    fn confirmed(service: C, body: &[u8], segment: Option<SegmentInfo>) -> Vec<u8> {
        let mut out = Vec::new();
        Apdu::ConfirmedRequest(ConfirmedRequest {
            segment,
            segmented_response_accepted: true,
            max_segments: MaxSegments::from_code(0),
            max_apdu: MaxApdu::from_code(5),
            invoke_id: 7,
            service,
            body,
        })
        .encode(&mut out);
        out
    }

    fn object_then(object: ObjectIdentifier, rest: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut body = Vec::new();
        write_ctx(&mut body, 0, &object);
        rest(&mut body);
        body
    }

    #[test]
    fn a_write_property_names_its_service_invoke_id_and_object() {
        let body = object_then(AV1, |b| write_ctx(b, 1, &85u32));
        let s = ApduSummary::of(&confirmed(C::WRITE_PROPERTY, &body, None));
        assert_eq!(s.pdu_type, 0);
        assert_eq!(s.service, Some(C::WRITE_PROPERTY.0));
        assert_eq!(s.invoke_id, Some(7));
        assert_eq!(s.object, Some(AV1));
        assert!(!s.segmented);
    }

    #[test]
    fn a_multiple_request_names_an_object_only_when_it_has_one() {
        let one = object_then(AV1, |b| write_constructed(b, 1, |b| write_ctx(b, 0, &85u32)));
        let s = ApduSummary::of(&confirmed(C::WRITE_PROPERTY_MULTIPLE, &one, None));
        assert_eq!(s.object, Some(AV1));
        let mut two = one.clone();
        two.extend(object_then(AV2, |b| write_constructed(b, 1, |b| write_ctx(b, 0, &85u32))));
        let s = ApduSummary::of(&confirmed(C::WRITE_PROPERTY_MULTIPLE, &two, None));
        assert_eq!(s.service, Some(C::WRITE_PROPERTY_MULTIPLE.0));
        assert_eq!(s.object, None, "two objects: none named");
    }

    #[test]
    fn only_a_first_segment_names_an_object() {
        let body = object_then(AV1, |b| write_ctx(b, 1, &85u32));
        let seg = |n| Some(SegmentInfo { sequence_number: n, proposed_window_size: 4, more_follows: true });
        let first = ApduSummary::of(&confirmed(C::WRITE_PROPERTY, &body, seg(0)));
        assert_eq!((first.service, first.object, first.segmented), (Some(15), Some(AV1), true));
        let later = ApduSummary::of(&confirmed(C::WRITE_PROPERTY, &body, seg(1)));
        assert_eq!((later.service, later.object), (Some(15), None));
    }

    #[test]
    fn subscriptions_files_and_who_has_name_their_object() {
        let mut body = Vec::new();
        write_ctx(&mut body, 0, &9u32);
        write_ctx(&mut body, 1, &AV2);
        assert_eq!(ApduSummary::of(&confirmed(C::SUBSCRIBE_COV, &body, None)).object, Some(AV2));
        let mut body = Vec::new();
        write_app(&mut body, &AV1);
        assert_eq!(ApduSummary::of(&confirmed(C::DELETE_OBJECT, &body, None)).object, Some(AV1));
        let mut who_has = alloc::vec![0x10, U::WHO_HAS.0];
        write_ctx(&mut who_has, 0, &1u32);
        write_ctx(&mut who_has, 1, &10u32);
        write_ctx(&mut who_has, 2, &AV2);
        let s = ApduSummary::of(&who_has);
        assert_eq!((s.pdu_type, s.service, s.object), (1, Some(U::WHO_HAS.0), Some(AV2)));
    }

    #[test]
    fn answers_carry_their_invoke_id_and_service() {
        assert_eq!(
            ApduSummary::of(&[0x20, 3, 15]),
            ApduSummary { pdu_type: 2, service: Some(15), invoke_id: Some(3), object: None, segmented: false }
        );
        let s = ApduSummary::of(&[0x38, 4, 0, 2, 12]);
        assert_eq!((s.service, s.invoke_id, s.segmented), (Some(12), Some(4), true));
        assert_eq!(ApduSummary::of(&[0x70, 9, 4]).invoke_id, Some(9));
    }

    struct Says(Verdict, u32);

    impl RoutingPolicy for Says {
        fn decide(&mut self, _: Duration, _: &RoutedNpdu<'_>) -> Verdict {
            self.1 += 1;
            self.0
        }
    }

    #[test]
    fn in_a_chain_the_first_that_does_not_forward_decides() {
        let npdu = RoutedNpdu {
            arrival_port: PortId(1),
            arrival_network: 1,
            departure_port: PortId(2),
            departure_network: 2,
            source: NetAddress { net: 1, mac: &[1] },
            link_source: &[1],
            destination: Destination::GlobalBroadcast,
            priority: NetworkPriority::NORMAL,
            hop_count: 255,
            expecting_reply: false,
            content: Content::NetworkMessage(NetworkMessageType(0)),
        };
        let mut chain =
            Chain(alloc::vec![Says(Verdict::Forward, 0), Says(Verdict::Drop(4), 0), Says(Verdict::Forward, 0)]);
        assert_eq!(chain.decide(Duration::ZERO, &npdu), Verdict::Drop(4));
        assert_eq!(chain.0.iter().map(|s| s.1).collect::<alloc::vec::Vec<_>>(), [1, 1, 0]);
        assert_eq!(Chain::<Says>(alloc::vec![]).decide(Duration::ZERO, &npdu), Verdict::Forward);
        // A new priority does not stop the chain: the guard after it is still asked.
        let urgent = Verdict::SetPriority(NetworkPriority::URGENT);
        let mut chain = Chain(alloc::vec![Says(urgent, 0), Says(Verdict::Forward, 0)]);
        assert_eq!(chain.decide(Duration::ZERO, &npdu), urgent);
        assert_eq!(chain.0[1].1, 1);
        let mut chain = Chain(alloc::vec![Says(urgent, 0), Says(Verdict::Drop(1), 0)]);
        assert_eq!(chain.decide(Duration::ZERO, &npdu), Verdict::Drop(1));
    }

    #[test]
    fn anything_at_all_summarizes_without_panicking() {
        assert_eq!(ApduSummary::of(&[]).pdu_type, 15);
        for len in 0..8 {
            for first in [0x00u8, 0x08, 0x10, 0x20, 0x30, 0x38, 0x40, 0x50, 0x60, 0x70, 0x80, 0xFF] {
                let mut apdu = alloc::vec![0xFFu8; len];
                if let Some(b) = apdu.first_mut() {
                    *b = first;
                }
                let _ = ApduSummary::of(&apdu);
            }
        }
    }
}
