//! Between the core's routing types and `trellis:routing@0.1.0`'s: the one
//! module of the policy runtime that knows the WIT types.

use super::bindings::trellis::routing::types as w;
use bacnet::enums::{NetworkPriority, RejectMessageReason};
use bacnet::router::{Content, Destination, RoutedNpdu, Verdict};

fn priority_to_wit(p: NetworkPriority) -> w::NetworkPriority {
    match p.0 & 3 {
        0 => w::NetworkPriority::Normal,
        1 => w::NetworkPriority::Urgent,
        2 => w::NetworkPriority::CriticalEquipment,
        _ => w::NetworkPriority::LifeSafety,
    }
}

fn priority_from_wit(p: w::NetworkPriority) -> NetworkPriority {
    match p {
        w::NetworkPriority::Normal => NetworkPriority::NORMAL,
        w::NetworkPriority::Urgent => NetworkPriority::URGENT,
        w::NetworkPriority::CriticalEquipment => NetworkPriority::CRITICAL_EQUIPMENT,
        w::NetworkPriority::LifeSafety => NetworkPriority::LIFE_SAFETY,
    }
}

/// `npdu` as the interface's record.
pub fn routed_to_wit(n: &RoutedNpdu<'_>) -> w::RoutedNpdu {
    w::RoutedNpdu {
        arrival_port: n.arrival_port.0,
        arrival_network: n.arrival_network,
        departure_port: n.departure_port.0,
        departure_network: n.departure_network,
        source: w::Station { network: n.source.net, mac: n.source.mac.to_vec() },
        link_source: n.link_source.to_vec(),
        destination: match n.destination {
            Destination::Station(s) => w::Destination::Station(w::Station { network: s.net, mac: s.mac.to_vec() }),
            Destination::RemoteBroadcast(net) => w::Destination::RemoteBroadcast(net),
            Destination::GlobalBroadcast => w::Destination::GlobalBroadcast,
        },
        priority: priority_to_wit(n.priority),
        hop_count: n.hop_count,
        expecting_reply: n.expecting_reply,
        content: match n.content {
            Content::NetworkMessage(t) => w::Content::NetworkMessage(t.0),
            Content::Apdu(a) => w::Content::Apdu(w::ApduHeader {
                pdu_type: a.pdu_type,
                service: a.service,
                invoke_id: a.invoke_id,
                object: a.object.map(|o| w::ObjectId { object_type: o.object_type.0 as u16, instance: o.instance }),
                segmented: a.segmented,
            }),
        },
    }
}

/// The policy's verdict in the core's type.
pub fn verdict_from_wit(v: w::Verdict) -> Verdict {
    match v {
        w::Verdict::Forward => Verdict::Forward,
        w::Verdict::Drop(reason) => Verdict::Drop(reason),
        w::Verdict::Reject(reason) => Verdict::Reject(RejectMessageReason(reason)),
        w::Verdict::SetPriority(p) => Verdict::SetPriority(priority_from_wit(p)),
    }
}

/// What the policy said it is.
pub fn info_from_wit(i: w::PolicyInfo) -> super::PolicyInfo {
    super::PolicyInfo { name: i.name, version: i.version, summary: i.summary, drop_reasons: i.drop_reasons }
}

/// The host's log levels.
pub fn level_from_wit(l: super::bindings::trellis::routing::host::LogLevel) -> tracing::Level {
    use super::bindings::trellis::routing::host::LogLevel as L;
    match l {
        L::Trace => tracing::Level::TRACE,
        L::Debug => tracing::Level::DEBUG,
        L::Info => tracing::Level::INFO,
        L::Warn => tracing::Level::WARN,
        L::Error => tracing::Level::ERROR,
    }
}
