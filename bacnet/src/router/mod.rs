//! A BACnet router (Clause 6.6), sans-IO: NPDUs in from a port, NPDUs out
//! to ports, network-layer messages answered, the routing table kept.
//!
//! The host gives [`Router::handle_npdu`] every NPDU a port receives, with
//! the datalink address it came from. The router answers with what is
//! left for the application entity on that port ([`Arrival::Local`]: an
//! APDU for this network, or a global broadcast, which it also forwards)
//! and queues what it sends: forwarded NPDUs (SNET/SADR added, DNET/DADR
//! stripped on the last hop, hop count decremented, network priority
//! kept) and its own network-layer messages, taken with
//! [`Router::poll_transmit`]. Time comes in as `now` (the busy timers of
//! Router-Busy-To-Network); [`Router::poll_timeout`] says when it next
//! matters.
//!
//! The network-layer messages, as this router treats them:
//!
//! | received | answer |
//! |---|---|
//! | Who-Is-Router-To-Network | I-Am-Router-To-Network (broadcast on the asking port) for the networks reachable through other ports; for an unknown network, Who-Is-Router-To-Network on the other ports (rate-limited) |
//! | I-Am-Router-To-Network | routes learned (never over a port's own network or a configured route; bounded), and the changed ones announced on the other ports |
//! | Router-Busy / Router-Available-To-Network | routes through that router marked busy (30 s, Clause 6.6.3.6) or available, and the change passed on |
//! | Initialize-Routing-Table, empty | Initialize-Routing-Table-Ack with the whole table |
//! | Initialize-Routing-Table with entries | Reject-Message-To-Network, other: the table is not writable over the network |
//! | Establish/Disconnect-Connection-To-Network | Reject-Message-To-Network, other: no point-to-point ports |
//! | What-Is-Network-Number (local only) | Network-Number-Is (configured), broadcast on that port |
//! | Network-Number-Is disagreeing with a port's number | counted |
//! | I-Could-Be-Router-To-Network, Initialize-Routing-Table-Ack, Reject-Message-To-Network | counted |
//! | any other type (security messages, reserved, proprietary) | Reject-Message-To-Network, unknown-network-message-type |
//!
//! And for NPDUs to a remote network: an unknown DNET is answered with
//! Reject-Message-To-Network not-directly-connected (and looked for with a
//! rate-limited Who-Is-Router-To-Network), a busy one with router-busy, a
//! DADR of the wrong length for the destination datalink with
//! addressing-error, an NPDU longer than the destination port carries with
//! message-too-long. A Reject is never answered with a Reject. Malformed
//! NPDUs, NPDUs whose hop count is spent, NPDUs that would go back out of
//! the port they came in on, and NPDUs whose SNET is one of the router's
//! own networks (a forged source: no router would add it) are dropped and
//! counted. A DADR equal to the departure datalink's broadcast address is a
//! broadcast there.
//!
//! The router's own application entity (a device sharing its MAC on a
//! port) sends through [`Router::handle_own_npdu`].
//!
//! A routing policy ([`RoutingPolicy`], `policy`) is asked about every NPDU
//! the router would send on towards another network, once per departure
//! port, after the router's own checks: [`Router::handle_npdu_with`] and
//! [`Router::handle_own_npdu_with`] take one; the plain calls forward
//! everything the standard allows.
//!
//! Must never: panic or allocate without bound on any input; send more
//! than a bounded number of NPDUs for one received (a global broadcast goes
//! once to each other port, a discovery at most once per network per
//! [`RouterConfig::discovery_interval`]); forward an NPDU back out of the
//! port it arrived on.

mod policy;
mod table;

pub use policy::{ApduSummary, Chain, Content, Destination, ForwardAll, RoutedNpdu, RoutingPolicy, Verdict};
pub use table::{BUSY_TIME, Learned, MAX_MAC_LEN, Mac, PortId, Route, RouteOrigin, RoutingTable};

use crate::enums::{NetworkPriority, RejectMessageReason};
use crate::npdu::{
    DEFAULT_HOP_COUNT, GLOBAL_NETWORK, NetAddress, NetworkList, NetworkMessage, Npdu, NpduPayload,
    RoutingTable as WireTable, RoutingTablePort,
};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::time::Duration;

/// One port of the router: a datalink and the network it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    /// The port's identifier.
    pub id: PortId,
    /// The network number of the network on this port (1..=65534).
    pub network: u16,
    /// The longest NPDU the port's datalink carries (B/IP 1497, MS/TP 501).
    pub max_npdu: usize,
    /// The length of a MAC on this datalink (B/IP 6, MS/TP 1), checked
    /// against a DADR routed to it; `None` accepts any length.
    pub mac_len: Option<u8>,
    /// The datalink's broadcast address (MS/TP 0xFF, a B/IP subnet's
    /// directed broadcast), if it has one: a DADR equal to it is a
    /// broadcast on that network, and is routed (and shown to the policy)
    /// as one.
    pub broadcast_mac: Option<Mac>,
}

/// A configured route to a remote network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticRoute {
    /// The remote network.
    pub net: u16,
    /// The port the next router is on.
    pub port: PortId,
    /// The next router's MAC on that port.
    pub router: Mac,
}

/// How the router runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterConfig {
    /// The ports, at least two (a router joins networks).
    pub ports: Vec<PortConfig>,
    /// Routes to remote networks configured rather than learned.
    pub static_routes: Vec<StaticRoute>,
    /// Routes learned from I-Am-Router-To-Network at most.
    pub max_learned_routes: usize,
    /// A discovery (Who-Is-Router-To-Network for a network not in the
    /// table) goes out at most once per network in this time.
    pub discovery_interval: Duration,
}

impl RouterConfig {
    /// Ports with the defaults for the rest: 1,024 learned routes, one
    /// discovery per network per 10 s.
    pub fn new(ports: Vec<PortConfig>) -> Self {
        RouterConfig {
            ports,
            static_routes: Vec::new(),
            max_learned_routes: 1024,
            discovery_interval: Duration::from_secs(10),
        }
    }
}

/// Why a configuration cannot route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// Fewer than two ports.
    TooFewPorts,
    /// Port 0, or two ports with one identifier.
    BadPortId(PortId),
    /// A network number of 0 or 65535, or one used by two ports.
    BadNetwork(u16),
    /// A static route through a port the router does not have, or to a
    /// port's own network.
    BadRoute(u16),
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::TooFewPorts => f.write_str("a router needs at least two ports"),
            ConfigError::BadPortId(p) => write!(f, "port {} is 0 or used twice", p.0),
            ConfigError::BadNetwork(n) => write!(f, "network {n} is 0, 65535, or on two ports"),
            ConfigError::BadRoute(n) => {
                write!(f, "the static route to network {n} names no port or a port's own network")
            }
        }
    }
}

/// Where on a port's datalink an NPDU goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkTarget {
    /// One station.
    Unicast(Mac),
    /// Every station on the port (a local broadcast).
    Broadcast,
}

/// An NPDU to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Out of this port.
    pub port: PortId,
    /// To this station, or all of them.
    pub to: LinkTarget,
    /// The encoded NPDU.
    pub npdu: Vec<u8>,
}

/// What an NPDU received on a port leaves for the application entity on
/// that port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival<'a> {
    /// An APDU for the network it arrived on, or a global broadcast (which
    /// the router also forwarded): the application entity takes it as if
    /// there were no router.
    Local(Npdu<'a>),
    /// Routed, answered, or dropped: nothing for the application entity.
    Handled,
}

/// What the router did, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterCounters {
    /// NPDUs sent on towards their destination network.
    pub forwarded: u64,
    /// Global broadcasts passed to the other ports (counted once each).
    pub broadcasts_forwarded: u64,
    /// NPDUs that did not decode.
    pub malformed: u64,
    /// NPDUs whose hop count was spent.
    pub hop_count_exhausted: u64,
    /// NPDUs that would have gone back out of their arrival port.
    pub looped: u64,
    /// Reject-Message-To-Network sent.
    pub rejects_sent: u64,
    /// Reject-Message-To-Network received.
    pub rejects_received: u64,
    /// Who-Is-Router-To-Network sent to find a network.
    pub discoveries: u64,
    /// Discoveries not sent because one for that network went out recently.
    pub discoveries_suppressed: u64,
    /// I-Am-Router-To-Network claims for one of our own or a configured network.
    pub route_conflicts: u64,
    /// Routes not learned because the table was full.
    pub table_full: u64,
    /// Network-Number-Is disagreeing with a port's configured number.
    pub network_number_conflicts: u64,
    /// Network-layer messages counted and otherwise ignored.
    pub ignored_messages: u64,
    /// NPDUs the routing policy dropped (once per port a broadcast was
    /// kept from).
    pub policy_dropped: u64,
    /// NPDUs the routing policy answered with Reject-Message-To-Network.
    pub policy_rejected: u64,
    /// NPDUs the routing policy sent on at another network priority.
    pub policy_reprioritized: u64,
    /// NPDUs whose SNET is a network directly connected to this router:
    /// no router would add it, so the source is forged (or a loop); dropped.
    pub forged_sources: u64,
}

/// Networks in one message at most (an I-Am-Router-To-Network of them
/// fits any datalink's NPDU).
const MAX_LISTED: usize = 240;
/// Networks whose last discovery time is remembered at most.
const MAX_DISCOVERIES: usize = 64;

/// The router.
#[derive(Debug, Clone)]
pub struct Router {
    ports: Vec<PortConfig>,
    table: RoutingTable,
    discovery_interval: Duration,
    discoveries: BTreeMap<u16, Duration>,
    transmits: VecDeque<Transmit>,
    counters: RouterCounters,
}

impl Router {
    /// A router over `config`'s ports, with its directly connected networks
    /// and static routes in the table.
    pub fn new(config: RouterConfig) -> Result<Router, ConfigError> {
        if config.ports.len() < 2 {
            return Err(ConfigError::TooFewPorts);
        }
        let mut table = RoutingTable::new(config.max_learned_routes);
        for (i, p) in config.ports.iter().enumerate() {
            if p.id.0 == 0 || config.ports[..i].iter().any(|q| q.id == p.id) {
                return Err(ConfigError::BadPortId(p.id));
            }
            if p.network == 0 || p.network == GLOBAL_NETWORK || table.get(p.network).is_some() {
                return Err(ConfigError::BadNetwork(p.network));
            }
            table.set(p.network, p.id, None);
        }
        for r in &config.static_routes {
            let own = table.get(r.net).is_some_and(|t| t.origin == RouteOrigin::Direct);
            if own || r.net == 0 || r.net == GLOBAL_NETWORK || !config.ports.iter().any(|p| p.id == r.port) {
                return Err(ConfigError::BadRoute(r.net));
            }
            table.set(r.net, r.port, Some(r.router));
        }
        Ok(Router {
            ports: config.ports,
            table,
            discovery_interval: config.discovery_interval,
            discoveries: BTreeMap::new(),
            transmits: VecDeque::new(),
            counters: RouterCounters::default(),
        })
    }

    /// The ports.
    pub fn ports(&self) -> &[PortConfig] {
        &self.ports
    }

    /// The routing table.
    pub fn table(&self) -> &RoutingTable {
        &self.table
    }

    /// What the router has done.
    pub fn counters(&self) -> RouterCounters {
        self.counters
    }

    /// Announce the router: I-Am-Router-To-Network on every port for the
    /// networks reachable through the others (Clause 6.6.2, at start-up).
    pub fn announce(&mut self) {
        for i in 0..self.ports.len() {
            let port = self.ports[i].id;
            let nets = self.reachable_except(port);
            self.broadcast_networks(port, &nets);
        }
    }

    /// The next NPDU to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// When the next busy mark runs out.
    pub fn poll_timeout(&self, now: Duration) -> Option<Duration> {
        self.table.next_expiry(now)
    }

    /// Let time pass.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.table.expire(now);
    }

    /// An NPDU received on `port` from the datalink address `from`, routed
    /// without a policy (everything the standard allows is forwarded).
    pub fn handle_npdu<'a>(&mut self, now: Duration, port: PortId, from: &[u8], data: &'a [u8]) -> Arrival<'a> {
        self.handle_npdu_with(now, port, from, data, &mut ForwardAll)
    }

    /// [`handle_npdu`](Self::handle_npdu), asking `policy` about every NPDU
    /// it would send on towards another network.
    pub fn handle_npdu_with<'a>(
        &mut self,
        now: Duration,
        port: PortId,
        from: &[u8],
        data: &'a [u8],
        policy: &mut dyn RoutingPolicy,
    ) -> Arrival<'a> {
        let (Some(p), Some(from), Ok(npdu)) = (self.port(port), Mac::new(from), Npdu::decode(data)) else {
            self.counters.malformed += 1;
            return Arrival::Handled;
        };
        if let Some(s) = npdu.source
            && self.table.get(s.net).is_some_and(|r| r.origin == RouteOrigin::Direct)
        {
            // A station on one of our networks is reached through us, not
            // through another router: this SNET/SADR is made up (a policy
            // on sources would otherwise trust it).
            self.counters.forged_sources += 1;
            return Arrival::Handled;
        }
        match npdu.destination {
            None => self.for_this_network(now, p, from, npdu),
            Some(d) if d.net == GLOBAL_NETWORK => {
                self.forward_global(now, p, from, &npdu, policy);
                self.for_this_network(now, p, from, npdu)
            }
            Some(d) if d.net == p.network => self.for_this_network(now, p, from, npdu),
            Some(d) => {
                self.route_from(now, p, from, &npdu, d, false, policy);
                Arrival::Handled
            }
        }
    }

    /// An NPDU for another network sent by the router's own application
    /// entity on `port` (a device that shares the router's MAC there):
    /// routed like any, except that a route back out of that same port is
    /// the device talking to a router on its own network (the NPDU goes to
    /// that router as the device sent it), and discovery asks every port.
    /// NPDUs without a destination are not the router's to send.
    pub fn handle_own_npdu(&mut self, now: Duration, port: PortId, own_mac: &[u8], data: &[u8]) {
        self.handle_own_npdu_with(now, port, own_mac, data, &mut ForwardAll)
    }

    /// [`handle_own_npdu`](Self::handle_own_npdu), asking `policy` about
    /// what it would send on.
    pub fn handle_own_npdu_with(
        &mut self,
        now: Duration,
        port: PortId,
        own_mac: &[u8],
        data: &[u8],
        policy: &mut dyn RoutingPolicy,
    ) {
        let (Some(p), Some(mac), Ok(npdu)) = (self.port(port), Mac::new(own_mac), Npdu::decode(data)) else {
            self.counters.malformed += 1;
            return;
        };
        match npdu.destination {
            Some(d) if d.net == GLOBAL_NETWORK => self.forward_global(now, p, mac, &npdu, policy),
            Some(d) if d.net != p.network => self.route_from(now, p, mac, &npdu, d, true, policy),
            _ => {}
        }
    }

    fn port(&self, id: PortId) -> Option<PortConfig> {
        self.ports.iter().find(|p| p.id == id).copied()
    }

    /// The networks reachable through ports other than `port`.
    fn reachable_except(&self, port: PortId) -> Vec<u16> {
        self.table.iter().filter(|(_, r)| r.port != port).map(|(n, _)| n).take(MAX_LISTED).collect()
    }

    fn for_this_network<'a>(&mut self, now: Duration, p: PortConfig, from: Mac, npdu: Npdu<'a>) -> Arrival<'a> {
        match npdu.payload {
            NpduPayload::Apdu(_) => Arrival::Local(npdu),
            NpduPayload::Message(m) => {
                self.on_message(now, p, from, &npdu, m);
                Arrival::Handled
            }
        }
    }

    /// A network-layer message for this router.
    fn on_message(&mut self, now: Duration, p: PortConfig, from: Mac, npdu: &Npdu<'_>, m: NetworkMessage<'_>) {
        use NetworkMessage::*;
        match m {
            WhoIsRouterToNetwork(None) => {
                let nets = self.reachable_except(p.id);
                self.broadcast_networks(p.id, &nets);
            }
            WhoIsRouterToNetwork(Some(net)) => match self.table.get(net) {
                Some(r) if r.port != p.id => self.broadcast_networks(p.id, &[net]),
                // Behind the asking port: the router there answers.
                Some(_) => {}
                None => self.discover(now, Some(p.id), net),
            },
            IAmRouterToNetwork(list) => {
                let mut changed = Vec::new();
                for net in list.iter().take(MAX_LISTED) {
                    if net == 0 || net == GLOBAL_NETWORK {
                        continue;
                    }
                    match self.table.learn(net, p.id, from) {
                        Learned::Changed => changed.push(net),
                        Learned::Unchanged => {}
                        Learned::Conflict => self.counters.route_conflicts += 1,
                        Learned::Full => self.counters.table_full += 1,
                    }
                }
                for other in self.other_ports(p.id) {
                    self.broadcast_networks(other, &changed);
                }
            }
            RouterBusyToNetwork(list) | RouterAvailableToNetwork(list) => {
                let busy = matches!(m, RouterBusyToNetwork(_));
                let until = busy.then_some(now + BUSY_TIME);
                let mut changed = Vec::new();
                self.table.set_busy(p.id, from, &mut list.iter().take(MAX_LISTED), until, now, &mut changed);
                if !changed.is_empty() {
                    let encoded: Vec<u8> = changed.iter().flat_map(|n| n.to_be_bytes()).collect();
                    let list = NetworkList::from_bytes(&encoded).unwrap_or_default();
                    let message = if busy { RouterBusyToNetwork(list) } else { RouterAvailableToNetwork(list) };
                    for other in self.other_ports(p.id) {
                        self.send_message(other, LinkTarget::Broadcast, None, message);
                    }
                }
            }
            InitializeRoutingTable(t) if t.is_empty() => {
                // As many entries as the asking port's NPDUs carry (4 octets
                // each behind a header of at most 20 octets), 255 at most.
                let room = (p.max_npdu.saturating_sub(20) / 4).min(u8::MAX as usize);
                let entries: Vec<RoutingTablePort<'_>> = self
                    .table
                    .iter()
                    .take(room)
                    .map(|(net, r)| RoutingTablePort { net, port_id: r.port.0, port_info: &[] })
                    .collect();
                let mut encoded = Vec::new();
                if WireTable::encode_ports(&entries, &mut encoded).is_ok()
                    && let Ok(table) = WireTable::from_encoded(&encoded)
                {
                    self.reply(p, from, npdu, InitializeRoutingTableAck(table));
                }
            }
            InitializeRoutingTable(_) => self.reject(p, from, npdu, RejectMessageReason::OTHER, p.network),
            EstablishConnectionToNetwork { net, .. } | DisconnectConnectionToNetwork(net) => {
                self.reject(p, from, npdu, RejectMessageReason::OTHER, net)
            }
            WhatIsNetworkNumber => {
                // Only a question asked on the local network is answered (Clause 6.4.19).
                if npdu.source.is_none() && npdu.destination.is_none() {
                    let answer = NetworkNumberIs { net: p.network, configured: true };
                    self.send_message(p.id, LinkTarget::Broadcast, None, answer);
                }
            }
            NetworkNumberIs { net, .. } => {
                if npdu.source.is_none() && net != p.network {
                    self.counters.network_number_conflicts += 1;
                }
            }
            RejectMessageToNetwork { .. } => self.counters.rejects_received += 1,
            ICouldBeRouterToNetwork { .. } | InitializeRoutingTableAck(_) => self.counters.ignored_messages += 1,
            Other { .. } => {
                let net = npdu.destination.map_or(p.network, |d| d.net);
                self.reject(p, from, npdu, RejectMessageReason::UNKNOWN_MESSAGE_TYPE, net)
            }
        }
    }

    /// An NPDU for a remote network, received on `p` from `from` (`own`:
    /// sent by the router's own application entity on `p`).
    #[allow(clippy::too_many_arguments)]
    fn route_from(
        &mut self,
        now: Duration,
        p: PortConfig,
        from: Mac,
        npdu: &Npdu<'_>,
        d: NetAddress<'_>,
        own: bool,
        policy: &mut dyn RoutingPolicy,
    ) {
        if npdu.hop_count == 0 {
            self.counters.hop_count_exhausted += 1;
            return;
        }
        let Some(route) = self.table.get(d.net).copied() else {
            if !own {
                self.reject(p, from, npdu, RejectMessageReason::NOT_DIRECTLY_CONNECTED, d.net);
            }
            self.discover(now, (!own).then_some(p.id), d.net);
            return;
        };
        if route.port == p.id {
            match (own, route.next_hop) {
                // Our own device to a router on its own network: the NPDU
                // goes to it as sent.
                (true, Some(next)) => {
                    let Some(priority) = self.ask(now, p, from, npdu, d, p, policy) else { return };
                    let mut encoded = Vec::new();
                    if (Npdu { priority, ..*npdu }).encode(&mut encoded).is_ok() && encoded.len() <= p.max_npdu {
                        self.counters.forwarded += 1;
                        self.transmits.push_back(Transmit { port: p.id, to: LinkTarget::Unicast(next), npdu: encoded });
                    }
                }
                _ => self.counters.looped += 1,
            }
            return;
        }
        if route.is_busy(now) {
            self.reject(p, from, npdu, RejectMessageReason::ROUTER_BUSY, d.net);
            return;
        }
        let Some(q) = self.port(route.port) else { return };
        let source = npdu.source.unwrap_or(NetAddress { net: p.network, mac: from.as_bytes() });
        let (out, to) = match route.next_hop {
            // The last hop: DNET/DADR go, the DADR (or a broadcast) is the target.
            None => {
                let wrong_length = q.mac_len.is_some_and(|len| !d.mac.is_empty() && d.mac.len() != len as usize);
                let broadcast = d.mac.is_empty() || q.broadcast_mac.is_some_and(|b| b.as_bytes() == d.mac);
                let to = if broadcast { Some(LinkTarget::Broadcast) } else { Mac::new(d.mac).map(LinkTarget::Unicast) };
                let Some(to) = to.filter(|_| !wrong_length) else {
                    self.reject(p, from, npdu, RejectMessageReason::ADDRESSING_ERROR, d.net);
                    return;
                };
                (Npdu { destination: None, source: Some(source), hop_count: 0, ..*npdu }, to)
            }
            // Clause 6.2.2: decremented, and discarded when it reaches zero.
            Some(_) if npdu.hop_count <= 1 => {
                self.counters.hop_count_exhausted += 1;
                return;
            }
            Some(next) => (
                Npdu { destination: Some(d), source: Some(source), hop_count: npdu.hop_count - 1, ..*npdu },
                LinkTarget::Unicast(next),
            ),
        };
        // The policy sees a DADR that is the departure datalink's broadcast
        // address as the broadcast it is.
        let shown = match to {
            LinkTarget::Broadcast if route.next_hop.is_none() => NetAddress { net: d.net, mac: &[] },
            _ => d,
        };
        let Some(priority) = self.ask(now, p, from, npdu, shown, q, policy) else { return };
        let mut encoded = Vec::new();
        if (Npdu { priority, ..out }).encode(&mut encoded).is_err() {
            self.counters.malformed += 1;
            return;
        }
        if encoded.len() > q.max_npdu {
            self.reject(p, from, npdu, RejectMessageReason::MESSAGE_TOO_LONG, d.net);
            return;
        }
        self.counters.forwarded += 1;
        self.transmits.push_back(Transmit { port: q.id, to, npdu: encoded });
    }

    /// Pass a global broadcast to every other port the policy lets it go to.
    fn forward_global(
        &mut self,
        now: Duration,
        p: PortConfig,
        from: Mac,
        npdu: &Npdu<'_>,
        policy: &mut dyn RoutingPolicy,
    ) {
        if npdu.hop_count <= 1 {
            self.counters.hop_count_exhausted += 1;
            return;
        }
        let source = npdu.source.unwrap_or(NetAddress { net: p.network, mac: from.as_bytes() });
        let out = Npdu { source: Some(source), hop_count: npdu.hop_count - 1, ..*npdu };
        let mut encoded = Vec::new();
        if out.encode(&mut encoded).is_err() {
            self.counters.malformed += 1;
            return;
        }
        let global = NetAddress { net: GLOBAL_NETWORK, mac: &[] };
        let mut sent = false;
        for i in 0..self.ports.len() {
            let q = self.ports[i];
            if q.id == p.id || encoded.len() > q.max_npdu {
                continue;
            }
            let Some(priority) = self.ask(now, p, from, npdu, global, q, policy) else { continue };
            sent = true;
            let npdu = if priority == out.priority {
                encoded.clone()
            } else {
                let mut again = Vec::new();
                if (Npdu { priority, ..out }).encode(&mut again).is_err() {
                    continue;
                }
                again
            };
            self.transmits.push_back(Transmit { port: q.id, to: LinkTarget::Broadcast, npdu });
        }
        if sent {
            self.counters.broadcasts_forwarded += 1;
        }
    }

    /// Ask the policy about `npdu` (received on `p` from `from`, for `d`)
    /// leaving by `q`: the priority to send it at, or `None` when it stays
    /// (dropped, or rejected back to its sender).
    #[allow(clippy::too_many_arguments)]
    fn ask(
        &mut self,
        now: Duration,
        p: PortConfig,
        from: Mac,
        npdu: &Npdu<'_>,
        d: NetAddress<'_>,
        q: PortConfig,
        policy: &mut dyn RoutingPolicy,
    ) -> Option<NetworkPriority> {
        if !policy.inspects() {
            return Some(npdu.priority);
        }
        let routed = RoutedNpdu {
            arrival_port: p.id,
            arrival_network: p.network,
            departure_port: q.id,
            departure_network: q.network,
            source: npdu.source.unwrap_or(NetAddress { net: p.network, mac: from.as_bytes() }),
            link_source: from.as_bytes(),
            destination: match d {
                NetAddress { net: GLOBAL_NETWORK, .. } => Destination::GlobalBroadcast,
                NetAddress { net, mac: [] } => Destination::RemoteBroadcast(net),
                station => Destination::Station(station),
            },
            priority: npdu.priority,
            hop_count: npdu.hop_count,
            expecting_reply: npdu.expecting_reply,
            content: match npdu.payload {
                NpduPayload::Apdu(apdu) => Content::Apdu(ApduSummary::of(apdu)),
                NpduPayload::Message(m) => Content::NetworkMessage(m.message_type()),
            },
        };
        match policy.decide(now, &routed) {
            Verdict::Forward => Some(npdu.priority),
            Verdict::SetPriority(priority) => {
                if priority != npdu.priority {
                    self.counters.policy_reprioritized += 1;
                }
                Some(priority)
            }
            Verdict::Drop(_) => {
                self.counters.policy_dropped += 1;
                None
            }
            // A global broadcast is not answered with a Reject (one would go
            // back per port it was kept from): it is dropped.
            Verdict::Reject(_) if d.net == GLOBAL_NETWORK => {
                self.counters.policy_dropped += 1;
                None
            }
            Verdict::Reject(reason) => {
                self.counters.policy_rejected += 1;
                self.reject(p, from, npdu, reason, d.net);
                None
            }
        }
    }

    /// Ask the other ports who routes to `net`, unless that was asked lately.
    fn discover(&mut self, now: Duration, except: Option<PortId>, net: u16) {
        let interval = self.discovery_interval;
        if self.discoveries.get(&net).is_some_and(|last| now.saturating_sub(*last) < interval) {
            self.counters.discoveries_suppressed += 1;
            return;
        }
        if self.discoveries.len() >= MAX_DISCOVERIES {
            self.discoveries.retain(|_, last| now.saturating_sub(*last) < interval);
            if self.discoveries.len() >= MAX_DISCOVERIES {
                self.counters.discoveries_suppressed += 1;
                return;
            }
        }
        self.discoveries.insert(net, now);
        self.counters.discoveries += 1;
        let ports: Vec<PortId> = self.ports.iter().map(|p| p.id).filter(|id| Some(*id) != except).collect();
        for port in ports {
            self.send_message(port, LinkTarget::Broadcast, None, NetworkMessage::WhoIsRouterToNetwork(Some(net)));
        }
    }

    fn other_ports(&self, except: PortId) -> Vec<PortId> {
        self.ports.iter().map(|p| p.id).filter(|id| *id != except).collect()
    }

    /// I-Am-Router-To-Network for `nets` (when there are any) on `port`.
    fn broadcast_networks(&mut self, port: PortId, nets: &[u16]) {
        if nets.is_empty() {
            return;
        }
        let encoded: Vec<u8> = nets.iter().take(MAX_LISTED).flat_map(|n| n.to_be_bytes()).collect();
        if let Ok(list) = NetworkList::from_bytes(&encoded) {
            self.send_message(port, LinkTarget::Broadcast, None, NetworkMessage::IAmRouterToNetwork(list));
        }
    }

    /// Answer the sender of `npdu`: back through the router it came from
    /// when it came from a remote network.
    fn reply(&mut self, p: PortConfig, from: Mac, npdu: &Npdu<'_>, message: NetworkMessage<'_>) {
        self.send_message(p.id, LinkTarget::Unicast(from), npdu.source, message);
    }

    fn reject(&mut self, p: PortConfig, from: Mac, npdu: &Npdu<'_>, reason: RejectMessageReason, net: u16) {
        if matches!(npdu.payload, NpduPayload::Message(NetworkMessage::RejectMessageToNetwork { .. })) {
            return; // never a Reject for a Reject
        }
        self.counters.rejects_sent += 1;
        self.reply(p, from, npdu, NetworkMessage::RejectMessageToNetwork { reason, net });
    }

    fn send_message(
        &mut self,
        port: PortId,
        to: LinkTarget,
        destination: Option<NetAddress<'_>>,
        message: NetworkMessage<'_>,
    ) {
        let npdu = Npdu {
            destination,
            source: None,
            hop_count: DEFAULT_HOP_COUNT,
            expecting_reply: false,
            priority: NetworkPriority::NORMAL,
            payload: NpduPayload::Message(message),
        };
        let mut encoded = Vec::new();
        if npdu.encode(&mut encoded).is_ok() {
            self.transmits.push_back(Transmit { port, to, npdu: encoded });
        }
    }
}

#[cfg(test)]
mod tests;
