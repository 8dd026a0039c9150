//! A BACnet/IPv6 BBMD (Annex U.4), sans-IO, hardened like the IPv4 one
//! ([`crate::bbmd`]): the broadcast distribution table (the peer BBMDs, by
//! B/IPv6 address), the foreign-device table (each registration's
//! time-to-live plus the 30 s grace, with the foreign device's VMAC), and
//! the forwarding of broadcasts between the local link's multicast group,
//! the peers and the foreign devices — as Forwarded-NPDUs that carry the
//! originator's VMAC and B/IPv6 address.
//!
//! | received | from | the BBMD |
//! |---|---|---|
//! | Original-Broadcast-NPDU | a station of our link (the multicast group) | forwards it to the peers and the foreign devices |
//! | Forwarded-NPDU | a peer BBMD | multicasts it on our link, forwards it to the foreign devices; up |
//! | Forwarded-NPDU | anyone else | up if it came over our link's group (another BBMD's rebroadcast), else dropped and counted |
//! | Register-Foreign-Device | an allowed network, room in the FDT | entry (TTL capped), BVLC-Result success; else the NAK |
//! | Delete-Foreign-Device-Table-Entry | the entry's own address | removed, success; else the NAK |
//! | Distribute-Broadcast-To-Network | a registered foreign device | forwarded to the peers, our link and the other foreign devices; up; else the NAK |
//!
//! The node's own broadcasts go to the peers and foreign devices through
//! [`Bbmd6::handle_local_broadcast`]. Every management request is
//! rate-limited per source address. IPv6 has no Read/Write-BDT or
//! Read-FDT (Annex U.2): the BDT is configured only.
//!
//! Not here: forwarding Address-Resolution to the peers and foreign
//! devices (Forwarded-Address-Resolution): a foreign device learns where a
//! VMAC lives from the Forwarded-NPDUs it receives, which carry the
//! originator's address, or asks the station itself
//! (Virtual-Address-Resolution).
//!
//! Must never: send more for one datagram than one copy per peer, one to
//! the group and one per foreign device; keep more foreign devices or rate
//! entries than configured; read a clock.

use crate::bvll6::{Bvll6, Vmac, result};
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::net::{Ipv6Addr, SocketAddrV6};
use core::time::Duration;

pub use crate::bbmd::FD_GRACE;

/// Sources whose request rate is tracked at most.
const MAX_RATE_SOURCES: usize = 1024;

/// How the BBMD runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bbmd6Config {
    /// This BBMD's B/IPv6 address.
    pub local: SocketAddrV6,
    /// Its VMAC.
    pub vmac: Vmac,
    /// The local link's BACnet multicast group (with the port), where
    /// forwarded broadcasts are re-multicast.
    pub group: SocketAddrV6,
    /// The peer BBMDs (our own address may be listed; it is skipped).
    pub peers: Vec<SocketAddrV6>,
    /// Networks (prefix, length) whose hosts may register as foreign
    /// devices; empty: none may.
    pub foreign_devices: Vec<(Ipv6Addr, u8)>,
    /// Foreign devices registered at once, at most.
    pub max_foreign_devices: usize,
    /// The longest time-to-live granted, in seconds.
    pub max_ttl: u16,
    /// Management requests one source address may make per second, and at once.
    pub requests_per_second: u32,
    /// See [`requests_per_second`](Self::requests_per_second).
    pub request_burst: u32,
}

impl Bbmd6Config {
    /// A BBMD with the hardened defaults: no foreign devices, 128 at most
    /// when allowed, TTLs up to an hour, 10 management requests per second
    /// per source (20 at once).
    pub fn new(local: SocketAddrV6, vmac: Vmac, group: SocketAddrV6, peers: Vec<SocketAddrV6>) -> Self {
        Bbmd6Config {
            local,
            vmac,
            group,
            peers,
            foreign_devices: Vec::new(),
            max_foreign_devices: 128,
            max_ttl: 3600,
            requests_per_second: 10,
            request_burst: 20,
        }
    }
}

/// A datagram the BBMD sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram6 {
    /// Where to.
    pub to: SocketAddrV6,
    /// The whole BVLL message.
    pub bvll: Vec<u8>,
}

/// An NPDU for the node's network layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Up6<'a> {
    /// The originator's VMAC.
    pub source: Vmac,
    /// The NPDU.
    pub npdu: &'a [u8],
}

/// A foreign device's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fdt6Entry {
    /// Its B/IPv6 address.
    pub address: SocketAddrV6,
    /// Its VMAC.
    pub vmac: Vmac,
    /// The TTL it registered with (capped).
    pub ttl: u16,
    /// Seconds left, grace included.
    pub remaining: u16,
}

/// What the BBMD refused and forwarded, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bbmd6Counters {
    /// Broadcasts forwarded (each counted once however many copies went).
    pub forwarded: u64,
    /// Registrations accepted (new or renewed).
    pub registrations: u64,
    /// Registrations refused: not from an allowed network.
    pub refused_not_allowed: u64,
    /// Registrations refused: the FDT is full.
    pub refused_full: u64,
    /// Delete-FDT-Entry refused (not from the entry's own address).
    pub refused_delete: u64,
    /// Distribute-Broadcast-To-Network refused (not a registered foreign device).
    pub refused_distribute: u64,
    /// Forwarded-NPDUs dropped (not from a peer nor over our link's group).
    pub dropped_forwarded: u64,
    /// Management requests refused by the per-source rate limit.
    pub rate_limited: u64,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Duration,
}

/// The IPv6 BBMD.
#[derive(Debug, Clone)]
pub struct Bbmd6 {
    config: Bbmd6Config,
    /// Foreign device → (its VMAC, its TTL, when the entry is purged).
    fdt: BTreeMap<SocketAddrV6, (Vmac, u16, Duration)>,
    buckets: BTreeMap<Ipv6Addr, Bucket>,
    out: VecDeque<Datagram6>,
    counters: Bbmd6Counters,
}

impl Bbmd6 {
    /// A BBMD with `config`.
    pub fn new(config: Bbmd6Config) -> Self {
        Bbmd6 {
            config,
            fdt: BTreeMap::new(),
            buckets: BTreeMap::new(),
            out: VecDeque::new(),
            counters: Bbmd6Counters::default(),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &Bbmd6Config {
        &self.config
    }

    /// The foreign-device table at `now`.
    pub fn fdt(&self, now: Duration) -> Vec<Fdt6Entry> {
        self.fdt
            .iter()
            .filter(|(_, (_, _, until))| *until > now)
            .map(|(address, (vmac, ttl, until))| Fdt6Entry {
                address: *address,
                vmac: *vmac,
                ttl: *ttl,
                remaining: u16::try_from(until.saturating_sub(now).as_secs()).unwrap_or(u16::MAX),
            })
            .collect()
    }

    /// What the BBMD has done.
    pub fn counters(&self) -> Bbmd6Counters {
        self.counters
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Datagram6> {
        self.out.pop_front()
    }

    /// A broadcast this node multicasts on its link: the peers and the
    /// foreign devices get it as a Forwarded-NPDU from us.
    pub fn handle_local_broadcast(&mut self, now: Duration, npdu: &[u8]) {
        self.purge(now);
        let (vmac, local) = (self.config.vmac, self.config.local);
        self.forward(vmac, local, npdu, Forward { peers: true, group: false, except: None });
    }

    /// A message received from `from` (`over_group`: it was multicast on
    /// our link). Returns what the network layer gets from the BBMD's side:
    /// a peer's forwarded broadcast, a foreign device's distributed one.
    /// (Unicasts and our link's own broadcasts go up as on any B/IPv6 port;
    /// the BBMD only forwards those.)
    pub fn handle_bvll<'a>(
        &mut self,
        now: Duration,
        from: SocketAddrV6,
        msg: &Bvll6<'a>,
        over_group: bool,
    ) -> Option<Up6<'a>> {
        self.purge(now);
        match *msg {
            Bvll6::OriginalBroadcastNpdu { source, npdu } => {
                self.forward(source, from, npdu, Forward { peers: true, group: false, except: None });
                None
            }
            Bvll6::ForwardedNpdu { source, original_source, npdu } => {
                if self.is_peer(from) {
                    self.forward(source, original_source, npdu, Forward { peers: false, group: true, except: None });
                    Some(Up6 { source, npdu })
                } else if over_group && original_source != self.config.local {
                    Some(Up6 { source, npdu })
                } else {
                    self.counters.dropped_forwarded += 1;
                    None
                }
            }
            Bvll6::DistributeBroadcastToNetwork { source, npdu } => {
                if !self.allow(now, from) {
                    return None;
                }
                if !self.fdt.contains_key(&from) {
                    self.counters.refused_distribute += 1;
                    self.result(from, result::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK);
                    return None;
                }
                self.forward(source, from, npdu, Forward { peers: true, group: true, except: Some(from) });
                Some(Up6 { source, npdu })
            }
            Bvll6::RegisterForeignDevice { source, ttl } => {
                if self.allow(now, from) {
                    self.register(now, from, source, ttl);
                }
                None
            }
            Bvll6::DeleteForeignDeviceTableEntry { entry, .. } => {
                if self.allow(now, from) {
                    if entry == from && self.fdt.remove(&entry).is_some() {
                        self.result(from, result::SUCCESSFUL_COMPLETION);
                    } else {
                        self.counters.refused_delete += 1;
                        self.result(from, result::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK);
                    }
                }
                None
            }
            _ => None,
        }
    }

    fn register(&mut self, now: Duration, from: SocketAddrV6, vmac: Vmac, ttl: u16) {
        let allowed = self.config.foreign_devices.iter().any(|(net, prefix)| in_network(*from.ip(), *net, *prefix));
        if !allowed {
            self.counters.refused_not_allowed += 1;
            self.result(from, result::REGISTER_FOREIGN_DEVICE_NAK);
            return;
        }
        if !self.fdt.contains_key(&from) && self.fdt.len() >= self.config.max_foreign_devices {
            self.counters.refused_full += 1;
            self.result(from, result::REGISTER_FOREIGN_DEVICE_NAK);
            return;
        }
        let ttl = ttl.min(self.config.max_ttl);
        self.fdt.insert(from, (vmac, ttl, now + Duration::from_secs(ttl.into()) + FD_GRACE));
        self.counters.registrations += 1;
        self.result(from, result::SUCCESSFUL_COMPLETION);
    }

    /// Charge one management request to `from`'s address.
    fn allow(&mut self, now: Duration, from: SocketAddrV6) -> bool {
        let (rate, burst) = (f64::from(self.config.requests_per_second), f64::from(self.config.request_burst.max(1)));
        if self.buckets.len() >= MAX_RATE_SOURCES && !self.buckets.contains_key(from.ip()) {
            self.buckets.retain(|_, b| b.tokens + rate * now.saturating_sub(b.at).as_secs_f64() < burst);
            if self.buckets.len() >= MAX_RATE_SOURCES {
                self.counters.rate_limited += 1;
                return false;
            }
        }
        let b = self.buckets.entry(*from.ip()).or_insert(Bucket { tokens: burst, at: now });
        b.tokens = (b.tokens + rate * now.saturating_sub(b.at).as_secs_f64()).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            self.counters.rate_limited += 1;
            false
        }
    }

    fn purge(&mut self, now: Duration) {
        self.fdt.retain(|_, (_, _, until)| *until > now);
    }

    fn is_peer(&self, from: SocketAddrV6) -> bool {
        from != self.config.local && self.config.peers.iter().any(|p| same_address(*p, from))
    }

    /// Send `npdu` (originated by `vmac` at `source`) as a Forwarded-NPDU
    /// where `how` says, and to every foreign device but `except` and the
    /// originator.
    fn forward(&mut self, vmac: Vmac, source: SocketAddrV6, npdu: &[u8], how: Forward) {
        let mut bvll = Vec::with_capacity(npdu.len() + 25);
        let msg = Bvll6::ForwardedNpdu { source: vmac, original_source: source, npdu };
        if msg.encode(&mut bvll).is_err() {
            return;
        }
        self.counters.forwarded += 1;
        if how.peers {
            for p in &self.config.peers {
                if !same_address(*p, self.config.local) {
                    self.out.push_back(Datagram6 { to: *p, bvll: bvll.clone() });
                }
            }
        }
        if how.group {
            self.out.push_back(Datagram6 { to: self.config.group, bvll: bvll.clone() });
        }
        for fd in self.fdt.keys() {
            if Some(*fd) != how.except && !same_address(*fd, source) {
                self.out.push_back(Datagram6 { to: *fd, bvll: bvll.clone() });
            }
        }
    }

    fn result(&mut self, to: SocketAddrV6, code: u16) {
        let mut bvll = Vec::with_capacity(9);
        if (Bvll6::Result { source: self.config.vmac, code }).encode(&mut bvll).is_ok() {
            self.out.push_back(Datagram6 { to, bvll });
        }
    }
}

/// Where a forwarded broadcast goes besides the foreign devices.
#[derive(Debug, Clone, Copy)]
struct Forward {
    peers: bool,
    group: bool,
    except: Option<SocketAddrV6>,
}

/// The same address and port (flow info and scope aside).
fn same_address(a: SocketAddrV6, b: SocketAddrV6) -> bool {
    a.ip() == b.ip() && a.port() == b.port()
}

fn in_network(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    let prefix = u32::from(prefix.min(128));
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    u128::from(ip) & mask == u128::from(net) & mask
}

#[cfg(test)]
mod tests;
