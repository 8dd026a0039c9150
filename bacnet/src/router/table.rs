//! The routing table (Clause 6.6.1): for every network the router can reach,
//! the port it lies behind and, unless the network is directly connected,
//! the MAC of the next router on that port.
//!
//! Directly connected networks come from the ports' configuration and never
//! change. Routes to remote networks are configured or learned from
//! I-Am-Router-To-Network. A learned route never replaces a configured one
//! nor a directly connected network (another router claiming our own
//! network is a configuration error to count, not a route), and the number
//! of learned routes is bounded: a flood of I-Am-Router-To-Network listing
//! every network number cannot grow the table without end.

use alloc::collections::BTreeMap;
use core::fmt;
use core::time::Duration;

/// Longest MAC address a route or a datalink target holds. B/IP's is 6
/// octets, B/IPv6's VMAC 3, MS/TP's 1, BACnet/SC's 6, Ethernet's 6; the
/// NPDU allows up to 255, which no datalink uses.
pub const MAX_MAC_LEN: usize = 18;

/// How long a network stays busy after Router-Busy-To-Network unless
/// Router-Available-To-Network comes first (Clause 6.6.3.6).
pub const BUSY_TIME: Duration = Duration::from_secs(30);

/// A datalink (MAC) address, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac {
    len: u8,
    octets: [u8; MAX_MAC_LEN],
}

impl Mac {
    /// The address, or `None` when longer than [`MAX_MAC_LEN`].
    pub fn new(octets: &[u8]) -> Option<Mac> {
        let mut mac = Mac { len: u8::try_from(octets.len()).ok()?, octets: [0; MAX_MAC_LEN] };
        mac.octets.get_mut(..octets.len())?.copy_from_slice(octets);
        Some(mac)
    }

    /// The octets.
    pub fn as_bytes(&self) -> &[u8] {
        &self.octets[..self.len as usize]
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.as_bytes().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A router port's identifier: 1..=255, as Initialize-Routing-Table-Ack
/// and the Network Port object's routing table name it (0 means "remove").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u8);

/// How a network is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The port it lies behind.
    pub port: PortId,
    /// The next router's MAC on that port; `None` for a directly connected
    /// network.
    pub next_hop: Option<Mac>,
    /// Where the route came from.
    pub origin: RouteOrigin,
    /// Busy (Router-Busy-To-Network) until this time.
    pub busy_until: Option<Duration>,
}

/// Where a route came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteOrigin {
    /// A port's own network.
    Direct,
    /// The operator's configuration.
    Configured,
    /// An I-Am-Router-To-Network.
    Learned,
}

impl Route {
    /// Whether the route is busy at `now`.
    pub fn is_busy(&self, now: Duration) -> bool {
        self.busy_until.is_some_and(|until| now < until)
    }
}

/// What learning a route did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// A new route, or a new next hop for a learned one.
    Changed,
    /// Already known through that router.
    Unchanged,
    /// The network is one of ours or configured: the claim is ignored.
    Conflict,
    /// The table holds its maximum of learned routes.
    Full,
}

/// The routing table.
#[derive(Debug, Clone)]
pub struct RoutingTable {
    routes: BTreeMap<u16, Route>,
    learned: usize,
    max_learned: usize,
    version: u64,
}

impl RoutingTable {
    /// An empty table that learns at most `max_learned` routes.
    pub fn new(max_learned: usize) -> Self {
        RoutingTable { routes: BTreeMap::new(), learned: 0, max_learned, version: 0 }
    }

    /// Add a directly connected network or a configured route (replacing a
    /// learned route to the same network).
    pub fn set(&mut self, net: u16, port: PortId, next_hop: Option<Mac>) {
        let origin = if next_hop.is_some() { RouteOrigin::Configured } else { RouteOrigin::Direct };
        self.version += 1;
        let old = self.routes.insert(net, Route { port, next_hop, origin, busy_until: None });
        if old.is_some_and(|r| r.origin == RouteOrigin::Learned) {
            self.learned -= 1;
        }
    }

    /// Learn from an I-Am-Router-To-Network that `net` is reached through
    /// `router` on `port`.
    pub fn learn(&mut self, net: u16, port: PortId, router: Mac) -> Learned {
        match self.routes.get_mut(&net) {
            Some(r) if r.origin != RouteOrigin::Learned => Learned::Conflict,
            Some(r) if r.port == port && r.next_hop == Some(router) => Learned::Unchanged,
            Some(r) => {
                *r = Route { port, next_hop: Some(router), origin: RouteOrigin::Learned, busy_until: None };
                self.version += 1;
                Learned::Changed
            }
            None if self.learned >= self.max_learned => Learned::Full,
            None => {
                self.routes.insert(
                    net,
                    Route { port, next_hop: Some(router), origin: RouteOrigin::Learned, busy_until: None },
                );
                self.learned += 1;
                self.version += 1;
                Learned::Changed
            }
        }
    }

    /// The route to `net`.
    pub fn get(&self, net: u16) -> Option<&Route> {
        self.routes.get(&net)
    }

    /// Every route, by network number.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &Route)> + '_ {
        self.routes.iter().map(|(n, r)| (*n, r))
    }

    /// Mark routes through `router` on `port` busy until `until` (`None`:
    /// available again): the listed networks, or every network through it
    /// when `nets` is empty. Returns the networks whose state changed.
    pub fn set_busy(
        &mut self,
        port: PortId,
        router: Mac,
        nets: &mut dyn Iterator<Item = u16>,
        until: Option<Duration>,
        now: Duration,
        changed: &mut alloc::vec::Vec<u16>,
    ) {
        let before = changed.len();
        let mut apply = |net: u16, r: &mut Route| {
            if r.port == port && r.next_hop == Some(router) && r.is_busy(now) != until.is_some() {
                r.busy_until = until;
                changed.push(net);
            } else if r.port == port && r.next_hop == Some(router) {
                r.busy_until = until;
            }
        };
        let mut any = false;
        for net in nets {
            any = true;
            if let Some(r) = self.routes.get_mut(&net) {
                apply(net, r);
            }
        }
        if !any {
            for (net, r) in self.routes.iter_mut() {
                apply(*net, r);
            }
        }
        if changed.len() > before {
            self.version += 1;
        }
    }

    /// The earliest time a busy route becomes available again.
    pub fn next_expiry(&self, now: Duration) -> Option<Duration> {
        self.routes.values().filter_map(|r| r.busy_until).filter(|t| *t > now).min()
    }

    /// Clear busy marks that have run out.
    pub fn expire(&mut self, now: Duration) {
        for r in self.routes.values_mut() {
            if r.busy_until.is_some_and(|t| t <= now) {
                r.busy_until = None;
                self.version += 1;
            }
        }
    }

    /// A number that changes whenever a route or its busy state does (for
    /// publishing the table only when it changed).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Learned routes now in the table.
    pub fn learned(&self) -> usize {
        self.learned
    }
}
