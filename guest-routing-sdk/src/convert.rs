//! Between the interface's types and the core's: the one module that knows
//! both. A routed NPDU arrives as WIT records and is handed to the policy as
//! the core's [`RoutedNpdu`], the same struct the router builds.

use crate::__private::bindings::trellis::routing::types as w;
use crate::PolicyInfo;
use bacnet::ObjectIdentifier;
use bacnet::enums::{NetworkMessageType, NetworkPriority, ObjectType, RejectMessageReason};
use bacnet::npdu::NetAddress;
use bacnet::router::{ApduSummary, Content, Destination, PortId, RoutedNpdu, Verdict};

pub fn info_to_wit(info: PolicyInfo) -> w::PolicyInfo {
    w::PolicyInfo { name: info.name, version: info.version, summary: info.summary, drop_reasons: info.drop_reasons }
}

fn priority_from_wit(p: w::NetworkPriority) -> NetworkPriority {
    match p {
        w::NetworkPriority::Normal => NetworkPriority::NORMAL,
        w::NetworkPriority::Urgent => NetworkPriority::URGENT,
        w::NetworkPriority::CriticalEquipment => NetworkPriority::CRITICAL_EQUIPMENT,
        w::NetworkPriority::LifeSafety => NetworkPriority::LIFE_SAFETY,
    }
}

fn priority_to_wit(p: NetworkPriority) -> w::NetworkPriority {
    match p.0 & 3 {
        0 => w::NetworkPriority::Normal,
        1 => w::NetworkPriority::Urgent,
        2 => w::NetworkPriority::CriticalEquipment,
        _ => w::NetworkPriority::LifeSafety,
    }
}

/// Call `f` with `npdu` in the core's types (borrowing its MACs).
pub fn with_routed<R>(npdu: &w::RoutedNpdu, f: impl FnOnce(&RoutedNpdu<'_>) -> R) -> R {
    let routed = RoutedNpdu {
        arrival_port: PortId(npdu.arrival_port),
        arrival_network: npdu.arrival_network,
        departure_port: PortId(npdu.departure_port),
        departure_network: npdu.departure_network,
        source: NetAddress { net: npdu.source.network, mac: &npdu.source.mac },
        link_source: &npdu.link_source,
        destination: match &npdu.destination {
            w::Destination::Station(s) => Destination::Station(NetAddress { net: s.network, mac: &s.mac }),
            w::Destination::RemoteBroadcast(net) => Destination::RemoteBroadcast(*net),
            w::Destination::GlobalBroadcast => Destination::GlobalBroadcast,
        },
        priority: priority_from_wit(npdu.priority),
        hop_count: npdu.hop_count,
        expecting_reply: npdu.expecting_reply,
        content: match &npdu.content {
            w::Content::NetworkMessage(t) => Content::NetworkMessage(NetworkMessageType(*t)),
            w::Content::Apdu(a) => Content::Apdu(ApduSummary {
                pdu_type: a.pdu_type,
                service: a.service,
                invoke_id: a.invoke_id,
                object: a.object.map(|o| ObjectIdentifier {
                    object_type: ObjectType(u32::from(o.object_type)),
                    instance: o.instance,
                }),
                segmented: a.segmented,
            }),
        },
    };
    f(&routed)
}

pub fn verdict_to_wit(v: Verdict) -> w::Verdict {
    match v {
        Verdict::Forward => w::Verdict::Forward,
        Verdict::Drop(reason) => w::Verdict::Drop(reason),
        Verdict::Reject(RejectMessageReason(reason)) => w::Verdict::Reject(reason),
        Verdict::SetPriority(p) => w::Verdict::SetPriority(priority_to_wit(p)),
    }
}
