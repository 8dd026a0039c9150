//! Firewall: a routing policy of ordered rules. The first rule that matches
//! a routed NPDU decides; an NPDU no rule matches gets the default.
//!
//! ```toml
//! default = "forward"            # forward | drop | reject
//!
//! # DeviceCommunicationControl and ReinitializeDevice never cross the router.
//! [[rule]]
//! name = "no-device-control"
//! action = "drop"
//! services = ["device-communication-control", "reinitialize-device"]
//!
//! # The BMS workstation may command two setpoints on the MS/TP trunk…
//! [[rule]]
//! name = "bms-setpoints"
//! action = "forward"
//! departure_networks = [2]
//! services = ["write-property"]
//! sources = ["1:7f000001bac0"]
//! objects = ["analog-value,1", "analog-value,2"]
//!
//! # …and nobody else writes there; reads pass (the default).
//! [[rule]]
//! name = "trunk-read-only"
//! action = "reject"
//! reject_reason = "security-error"
//! departure_networks = [2]
//! services = ["write-property", "write-property-multiple", "write-group", "add-list-element",
//!             "remove-list-element", "create-object", "delete-object", "atomic-write-file"]
//! ```
//!
//! A list of what is forbidden is only as good as its author's memory of
//! the standard's services: where it matters, deny by default and list
//! what is allowed (`examples/router-policy.toml` does).
//!
//! A rule matches when every condition it has holds (a list holds when any
//! of its entries does; a rule without conditions matches everything):
//!
//! | key | holds when |
//! |---|---|
//! | `arrival_networks` | the NPDU came in on a port of one of these networks |
//! | `departure_networks` | it would leave by a port of one of these networks |
//! | `sources` | its source is one of these stations, `NET:MAC` with the MAC in hex, or `NET:*` for any station of network NET |
//! | `destination_networks` | it is for one of these networks (a global broadcast is for every network) |
//! | `kinds` | it is one of: `confirmed-request`, `unconfirmed-request`, `simple-ack`, `complex-ack`, `segment-ack`, `error`, `reject`, `abort`, `network-message` |
//! | `services` | it is a request for one of these services, by the standard's names (`write-property`, `who-is`…) |
//! | `objects` | it is a request naming exactly one object, one of these (`analog-value,1`, or `analog-value,*` for every instance) — see below |
//! | `segmented` | it is (`true`) or is not (`false`) one segment of a segmented message |
//! | `priorities` | its network priority is one of these (`normal`, `urgent`, `critical-equipment`, `life-safety`) |
//!
//! Actions: `forward`, `drop` (counted under the rule's name), `reject`
//! (Reject-Message-To-Network with `reject_reason`, by default `other`; a
//! global broadcast is only dropped), `priority` (forward at `priority`).
//! The first rule that matches decides.
//!
//! **Objects.** The router reads the one object a request names; a request
//! naming several (a WritePropertyMultiple of two), a segment after the
//! first, or a service that names none has no object. Such a request never
//! matches the `objects` of a `forward` or `priority` rule, and always
//! matches the `objects` of a `drop` or `reject` rule: an allow-list cannot
//! be widened and a deny-list cannot be dodged by naming a second object.
//!
//! **Sources.** A source on a network directly connected to the router is
//! the sender itself: the router drops NPDUs that claim such a source
//! through another router (a forged SNET). A source on a farther network
//! is what the last router wrote: trust it as far as you trust that
//! router, and pair it with `arrival_networks`.
//!
//! Not yet: time windows (rules active at some hours only).

use serde::Deserialize;
use trellis_routing_sdk::{
    ConfirmedServiceChoice, Content, Destination, NetworkPriority, ObjectIdentifier, ObjectType, Policy, PolicyInfo,
    RejectMessageReason, RoutedNpdu, UnconfirmedServiceChoice, Verdict,
};

/// The settings, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    #[serde(default = "forward")]
    default: String,
    #[serde(default)]
    default_reject_reason: Option<String>,
    #[serde(default)]
    rule: Vec<RuleSettings>,
}

fn forward() -> String {
    "forward".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSettings {
    name: Option<String>,
    action: String,
    reject_reason: Option<String>,
    priority: Option<String>,
    arrival_networks: Option<Vec<u16>>,
    departure_networks: Option<Vec<u16>>,
    destination_networks: Option<Vec<u16>>,
    sources: Option<Vec<String>>,
    kinds: Option<Vec<String>>,
    services: Option<Vec<String>>,
    objects: Option<Vec<String>>,
    segmented: Option<bool>,
    priorities: Option<Vec<String>>,
}

/// One station a rule names: a network and a MAC, or any MAC of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Station {
    network: u16,
    mac: Option<Vec<u8>>,
}

/// An object a rule names: one, or every instance of a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ObjectMatch {
    One(ObjectIdentifier),
    AnyOf(ObjectType),
}

/// What a rule does with what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Forward,
    Drop,
    Reject(RejectMessageReason),
    Priority(NetworkPriority),
}

/// A rule, parsed.
#[derive(Debug)]
struct Rule {
    name: String,
    action: Action,
    arrival_networks: Option<Vec<u16>>,
    departure_networks: Option<Vec<u16>>,
    destination_networks: Option<Vec<u16>>,
    sources: Option<Vec<Station>>,
    kinds: Option<Vec<u8>>,
    /// (confirmed, service choice)
    services: Option<Vec<(bool, u8)>>,
    objects: Option<Vec<ObjectMatch>>,
    segmented: Option<bool>,
    priorities: Option<Vec<NetworkPriority>>,
}

/// The kind names, in PDU-type order, then a network message.
const KINDS: [&str; 9] = [
    "confirmed-request",
    "unconfirmed-request",
    "simple-ack",
    "complex-ack",
    "segment-ack",
    "error",
    "reject",
    "abort",
    "network-message",
];
/// A network message's kind: past every PDU type (0..=15).
const NETWORK_MESSAGE: u8 = 16;

/// The firewall.
#[derive(Debug)]
pub struct Firewall {
    rules: Vec<Rule>,
    default: Action,
}

impl Firewall {
    /// The drop reason of the default.
    fn default_reason(&self) -> u16 {
        self.rules.len() as u16
    }
}

fn action(rule: &str, action: &str, reject_reason: Option<&str>, priority: Option<&str>) -> Result<Action, String> {
    Ok(match action {
        "forward" => Action::Forward,
        "drop" => Action::Drop,
        "reject" => Action::Reject(match reject_reason {
            None => RejectMessageReason::OTHER,
            Some(r) => RejectMessageReason::from_name(r)
                .filter(|r| r.0 <= 6)
                .ok_or_else(|| format!("{rule}: unknown reject_reason {r:?} (other, security-error, …)"))?,
        }),
        "priority" => {
            let p = priority.ok_or_else(|| format!("{rule}: action \"priority\" needs priority = \"…\""))?;
            Action::Priority(parse_priority(rule, p)?)
        }
        other => return Err(format!("{rule}: unknown action {other:?} (forward, drop, reject, priority)")),
    })
}

fn parse_priority(rule: &str, p: &str) -> Result<NetworkPriority, String> {
    NetworkPriority::from_name(p).filter(|p| p.0 <= 3).ok_or_else(|| {
        format!("{rule}: unknown network priority {p:?} (normal, urgent, critical-equipment, life-safety)")
    })
}

fn parse_station(rule: &str, s: &str) -> Result<Station, String> {
    let bad = || format!("{rule}: source {s:?} is not NET:MAC (MAC in hex) or NET:*");
    let (net, mac) = s.split_once(':').ok_or_else(bad)?;
    let network: u16 = net.trim().parse().map_err(|_| bad())?;
    let mac = mac.trim();
    if mac == "*" {
        return Ok(Station { network, mac: None });
    }
    if mac.is_empty() || !mac.is_ascii() || mac.len() % 2 != 0 || mac.len() > 36 {
        return Err(bad());
    }
    let octets = (0..mac.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&mac[i..i + 2], 16).map_err(|_| bad()))
        .collect::<Result<Vec<u8>, String>>()?;
    Ok(Station { network, mac: Some(octets) })
}

fn parse_service(rule: &str, s: &str) -> Result<(bool, u8), String> {
    // Names are the standard's; none is both a confirmed and an
    // unconfirmed service, but a number is ambiguous, so numbers are not
    // accepted here.
    if s.trim().bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{rule}: service {s:?}: name the service (e.g. \"write-property\")"));
    }
    if let Some(c) = ConfirmedServiceChoice::from_name(s) {
        return Ok((true, c.0));
    }
    if let Some(u) = UnconfirmedServiceChoice::from_name(s) {
        return Ok((false, u.0));
    }
    Err(format!("{rule}: unknown service {s:?}"))
}

fn parse_object(rule: &str, s: &str) -> Result<ObjectMatch, String> {
    if let Some((ty, "*")) = s.rsplit_once(',').map(|(t, i)| (t.trim(), i.trim())) {
        let ty = ObjectType::from_name(ty).ok_or_else(|| format!("{rule}: unknown object type in {s:?}"))?;
        return Ok(ObjectMatch::AnyOf(ty));
    }
    s.parse()
        .map(ObjectMatch::One)
        .map_err(|_| format!("{rule}: object {s:?} is not TYPE,INSTANCE (e.g. analog-value,1 or analog-value,*)"))
}

fn each<T>(list: Option<Vec<String>>, f: impl Fn(&str) -> Result<T, String>) -> Result<Option<Vec<T>>, String> {
    list.map(|l| l.iter().map(|s| f(s)).collect()).transpose()
}

impl Rule {
    fn parse(index: usize, r: RuleSettings) -> Result<Rule, String> {
        let name = r.name.unwrap_or_else(|| format!("rule {}", index + 1));
        let n = name.as_str();
        Ok(Rule {
            action: action(n, &r.action, r.reject_reason.as_deref(), r.priority.as_deref())?,
            arrival_networks: r.arrival_networks,
            departure_networks: r.departure_networks,
            destination_networks: r.destination_networks,
            sources: each(r.sources, |s| parse_station(n, s))?,
            kinds: each(r.kinds, |k| {
                KINDS
                    .iter()
                    .position(|x| *x == k)
                    .map(|i| i as u8)
                    .ok_or_else(|| format!("{n}: unknown kind {k:?} ({})", KINDS.join(", ")))
            })?,
            services: each(r.services, |s| parse_service(n, s))?,
            objects: each(r.objects, |o| parse_object(n, o))?,
            segmented: r.segmented,
            priorities: each(r.priorities, |p| parse_priority(n, p))?,
            name,
        })
    }

    fn matches(&self, npdu: &RoutedNpdu<'_>) -> bool {
        let within = |list: &Option<Vec<u16>>, net: u16| list.as_ref().is_none_or(|l| l.contains(&net));
        if !within(&self.arrival_networks, npdu.arrival_network)
            || !within(&self.departure_networks, npdu.departure_network)
        {
            return false;
        }
        if let Some(nets) = &self.destination_networks {
            let hit = match npdu.destination {
                Destination::Station(s) => nets.contains(&s.net),
                Destination::RemoteBroadcast(net) => nets.contains(&net),
                Destination::GlobalBroadcast => true,
            };
            if !hit {
                return false;
            }
        }
        if let Some(sources) = &self.sources {
            let hit = sources
                .iter()
                .any(|s| s.network == npdu.source.net && s.mac.as_deref().is_none_or(|mac| mac == npdu.source.mac));
            if !hit {
                return false;
            }
        }
        if let Some(ps) = &self.priorities
            && !ps.contains(&npdu.priority)
        {
            return false;
        }
        let apdu = match npdu.content {
            Content::Apdu(a) => Some(a),
            Content::NetworkMessage(_) => None,
        };
        if let Some(kinds) = &self.kinds {
            let kind = apdu.map_or(NETWORK_MESSAGE, |a| a.pdu_type);
            if !kinds.contains(&kind) {
                return false;
            }
        }
        if let Some(services) = &self.services {
            // A request's service: a confirmed request's is a confirmed
            // service, an unconfirmed one's an unconfirmed.
            let service = apdu.and_then(|a| match (a.pdu_type, a.service) {
                (0, Some(s)) => Some((true, s)),
                (1, Some(s)) => Some((false, s)),
                _ => None,
            });
            if !service.is_some_and(|s| services.contains(&s)) {
                return false;
            }
        }
        if let Some(segmented) = self.segmented
            && apdu.is_none_or(|a| a.segmented != segmented)
        {
            return false;
        }
        if let Some(objects) = &self.objects {
            // No object (several, a later segment, none named) holds for a
            // rule that refuses and fails one that lets through.
            let refuses = matches!(self.action, Action::Drop | Action::Reject(_));
            let hit = match apdu.and_then(|a| a.object) {
                Some(o) => objects.iter().any(|m| match m {
                    ObjectMatch::One(x) => *x == o,
                    ObjectMatch::AnyOf(t) => *t == o.object_type,
                }),
                None => refuses,
            };
            if !hit {
                return false;
            }
        }
        true
    }
}

fn verdict(action: Action, reason: u16) -> Verdict {
    match action {
        Action::Forward => Verdict::Forward,
        Action::Drop => Verdict::Drop(reason),
        Action::Reject(r) => Verdict::Reject(r),
        Action::Priority(p) => Verdict::SetPriority(p),
    }
}

impl Policy for Firewall {
    fn configure(settings: &str) -> Result<Self, String> {
        let s: Settings = basic_toml::from_str(settings).map_err(|e| format!("firewall settings: {e}"))?;
        let default = action("default", &s.default, s.default_reject_reason.as_deref(), None)?;
        let rules = s.rule.into_iter().enumerate().map(|(i, r)| Rule::parse(i, r)).collect::<Result<_, _>>()?;
        Ok(Firewall { rules, default })
    }

    fn info(&self) -> PolicyInfo {
        let mut drop_reasons: Vec<String> = self.rules.iter().map(|r| r.name.clone()).collect();
        drop_reasons.push("default".into());
        PolicyInfo {
            name: "firewall".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!("{} rules, default {:?}", self.rules.len(), self.default).to_lowercase(),
            drop_reasons,
        }
    }

    fn decide(&mut self, _now_ms: u64, npdu: &RoutedNpdu<'_>) -> Verdict {
        match self.rules.iter().position(|r| r.matches(npdu)) {
            Some(i) => verdict(self.rules[i].action, i as u16),
            None => verdict(self.default, self.default_reason()),
        }
    }
}

trellis_routing_sdk::register_policy!(Firewall);

#[cfg(test)]
mod tests;
