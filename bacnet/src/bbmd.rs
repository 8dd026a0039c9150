//! A BACnet Broadcast Management Device (Annex J.4, J.5), sans-IO and
//! hardened by default: the broadcast distribution table (BDT), the
//! foreign-device table (FDT, with each registration's time-to-live plus
//! the standard's 30 s grace), and the forwarding of broadcasts between the
//! local subnet, the peer BBMDs and the foreign devices.
//!
//! The port's driver hands [`Bbmd::handle_bvll`] every BVLL message it
//! receives; what is for the network layer comes back as [`Up`], what the
//! BBMD sends (Forwarded-NPDUs, BVLC-Results, table acks) is taken with
//! [`Bbmd::poll_transmit`]. [`Bbmd::handle_local_broadcast`] forwards a
//! broadcast the node itself sends.
//!
//! Hardened, unlike most BBMDs:
//! - Write-Broadcast-Distribution-Table is refused with its NAK unless
//!   [`BbmdConfig::accept_write_bdt`];
//! - Register-Foreign-Device is accepted only from [`BbmdConfig::foreign_devices`]
//!   (CIDRs; none by default) and only while the FDT has room
//!   ([`BbmdConfig::max_foreign_devices`]); a registration's time-to-live
//!   is capped at [`BbmdConfig::max_ttl`];
//! - Delete-Foreign-Device-Table-Entry is accepted only from the entry's
//!   own address, Distribute-Broadcast-To-Network only from a registered
//!   foreign device, a Forwarded-NPDU for forwarding only from a BDT peer;
//! - every management request (register, delete, reads, write, distribute)
//!   is rate-limited per source IP address.
//!
//! Every refusal is answered as Annex J says (the function's NAK) and
//! counted ([`BbmdCounters`]). Must never: send more for one datagram than
//! one copy per peer and per foreign device, keep more foreign devices or
//! rate-limit entries than configured, or read a clock (time comes in).

use crate::bvll::{BdtEntry, Bvll, FdtEntry, encode_bdt, encode_fdt};
use crate::enums::BvlcResultCode;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddrV4};
use core::time::Duration;

/// The grace period added to a registration's time-to-live (J.5.2.3).
pub const FD_GRACE: Duration = Duration::from_secs(30);
/// Sources whose request rate is tracked at most.
const MAX_RATE_SOURCES: usize = 1024;

/// How the BBMD runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BbmdConfig {
    /// This BBMD's own B/IP address.
    pub local: SocketAddrV4,
    /// The local subnet's broadcast address and port.
    pub broadcast: SocketAddrV4,
    /// The broadcast distribution table: the peer BBMDs (our own entry may
    /// be in it; it is skipped when forwarding).
    pub bdt: Vec<BdtEntry>,
    /// Let Write-Broadcast-Distribution-Table replace the table.
    pub accept_write_bdt: bool,
    /// Networks (address, prefix length) whose hosts may register as
    /// foreign devices; empty: none may.
    pub foreign_devices: Vec<(Ipv4Addr, u8)>,
    /// Foreign devices registered at once, at most.
    pub max_foreign_devices: usize,
    /// The longest time-to-live granted, in seconds.
    pub max_ttl: u16,
    /// Management requests one source IP may make per second, and at once.
    pub requests_per_second: u32,
    /// See [`requests_per_second`](Self::requests_per_second).
    pub request_burst: u32,
}

impl BbmdConfig {
    /// A BBMD at `local` with the hardened defaults: no foreign devices, no
    /// BDT writes, 128 foreign devices at most, TTLs up to an hour, 10
    /// management requests per second per source (20 at once).
    pub fn new(local: SocketAddrV4, broadcast: SocketAddrV4, bdt: Vec<BdtEntry>) -> Self {
        BbmdConfig {
            local,
            broadcast,
            bdt,
            accept_write_bdt: false,
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
pub struct Datagram {
    /// Where to.
    pub to: SocketAddrV4,
    /// The whole BVLL message.
    pub bvll: Vec<u8>,
}

/// An NPDU for the node's network layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Up<'a> {
    /// The B/IP address of the station that originated it.
    pub source: SocketAddrV4,
    /// The NPDU.
    pub npdu: &'a [u8],
    /// It came as a broadcast.
    pub broadcast: bool,
}

/// What the BBMD refused and forwarded, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BbmdCounters {
    /// Broadcasts forwarded (each counted once however many copies went).
    pub forwarded: u64,
    /// Registrations accepted (new or renewed).
    pub registrations: u64,
    /// Registrations refused: not from an allowed network.
    pub refused_not_allowed: u64,
    /// Registrations refused: the FDT is full.
    pub refused_full: u64,
    /// Write-BDT refused.
    pub refused_write_bdt: u64,
    /// Delete-FDT-Entry refused (not from the entry's own address).
    pub refused_delete: u64,
    /// Distribute-Broadcast-To-Network refused (not a registered foreign device).
    pub refused_distribute: u64,
    /// Forwarded-NPDUs dropped (not from a BDT peer nor the local broadcast).
    pub dropped_forwarded: u64,
    /// Management requests refused by the per-source rate limit.
    pub rate_limited: u64,
    /// Original-Broadcast-NPDUs not forwarded: sent to us alone from off our subnet.
    pub refused_forward: u64,
}

/// A rate-limited source's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Duration,
}

/// The BBMD.
#[derive(Debug, Clone)]
pub struct Bbmd {
    config: BbmdConfig,
    /// Foreign device → (its TTL, when the entry is purged).
    fdt: BTreeMap<SocketAddrV4, (u16, Duration)>,
    buckets: BTreeMap<Ipv4Addr, Bucket>,
    out: VecDeque<Datagram>,
    counters: BbmdCounters,
}

impl Bbmd {
    /// A BBMD with `config`.
    pub fn new(config: BbmdConfig) -> Self {
        Bbmd {
            config,
            fdt: BTreeMap::new(),
            buckets: BTreeMap::new(),
            out: VecDeque::new(),
            counters: BbmdCounters::default(),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &BbmdConfig {
        &self.config
    }

    /// The broadcast distribution table.
    pub fn bdt(&self) -> &[BdtEntry] {
        &self.config.bdt
    }

    /// The foreign-device table at `now` (seconds remaining, grace included).
    pub fn fdt(&self, now: Duration) -> Vec<FdtEntry> {
        self.fdt
            .iter()
            .filter(|(_, (_, until))| *until > now)
            .map(|(address, (ttl, until))| FdtEntry {
                address: *address,
                ttl: *ttl,
                remaining: u16::try_from(until.saturating_sub(now).as_secs()).unwrap_or(u16::MAX),
            })
            .collect()
    }

    /// What the BBMD has done.
    pub fn counters(&self) -> BbmdCounters {
        self.counters
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Datagram> {
        self.out.pop_front()
    }

    /// A broadcast this node sends on its subnet: the peers and the foreign
    /// devices get it as a Forwarded-NPDU from us.
    pub fn handle_local_broadcast(&mut self, now: Duration, npdu: &[u8]) {
        self.purge(now);
        let local = self.config.local;
        self.forward(local, npdu, Forward { peers: true, local: false, except: None });
    }

    /// A BVLL message received from `from` (`on_broadcast`: on the local
    /// broadcast address). Returns what is for the network layer.
    pub fn handle_bvll<'a>(
        &mut self,
        now: Duration,
        from: SocketAddrV4,
        msg: &Bvll<'a>,
        on_broadcast: bool,
    ) -> Option<Up<'a>> {
        self.purge(now);
        match *msg {
            Bvll::OriginalUnicastNpdu(npdu) => Some(Up { source: from, npdu, broadcast: false }),
            Bvll::OriginalBroadcastNpdu(npdu) => {
                // A station of our subnet broadcast it: the peers and the
                // foreign devices get it too. Sent to us alone from
                // elsewhere, it is heard but not forwarded (else anyone
                // could have every peer subnet and foreign device flooded).
                if on_broadcast || self.on_our_subnet(from) {
                    self.forward(from, npdu, Forward { peers: true, local: false, except: None });
                } else {
                    self.counters.refused_forward += 1;
                }
                Some(Up { source: from, npdu, broadcast: true })
            }
            Bvll::ForwardedNpdu { original_source, npdu } => {
                if self.is_peer(from) {
                    // From a peer BBMD: our subnet (when the peer sent it to
                    // us alone) and our foreign devices get it.
                    let two_hop = self.peer_mask(from).is_some_and(|m| m == Ipv4Addr::BROADCAST);
                    self.forward(original_source, npdu, Forward { peers: false, local: two_hop, except: None });
                    Some(Up { source: original_source, npdu, broadcast: true })
                } else if on_broadcast && original_source != self.config.local {
                    // Another BBMD's rebroadcast on our subnet: heard, not forwarded.
                    Some(Up { source: original_source, npdu, broadcast: true })
                } else {
                    self.counters.dropped_forwarded += 1;
                    None
                }
            }
            Bvll::DistributeBroadcastToNetwork(npdu) => {
                if !self.allow(now, from) {
                    return None;
                }
                if !self.fdt.contains_key(&from) {
                    self.counters.refused_distribute += 1;
                    self.result(from, BvlcResultCode::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK);
                    return None;
                }
                self.forward(from, npdu, Forward { peers: true, local: true, except: Some(from) });
                Some(Up { source: from, npdu, broadcast: true })
            }
            Bvll::RegisterForeignDevice { ttl } => {
                if self.allow(now, from) {
                    self.register(now, from, ttl);
                }
                None
            }
            Bvll::DeleteForeignDeviceTableEntry(entry) => {
                if self.allow(now, from) {
                    if entry == from && self.fdt.remove(&entry).is_some() {
                        self.result(from, BvlcResultCode::SUCCESSFUL_COMPLETION);
                    } else {
                        self.counters.refused_delete += 1;
                        self.result(from, BvlcResultCode::DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK);
                    }
                }
                None
            }
            Bvll::ReadBroadcastDistributionTable => {
                if self.allow(now, from) {
                    let mut table = Vec::new();
                    encode_bdt(&self.config.bdt, &mut table);
                    self.send_table(from, true, &table);
                }
                None
            }
            Bvll::ReadForeignDeviceTable => {
                if self.allow(now, from) {
                    let mut table = Vec::new();
                    encode_fdt(&self.fdt(now), &mut table);
                    self.send_table(from, false, &table);
                }
                None
            }
            Bvll::WriteBroadcastDistributionTable(table) => {
                if self.allow(now, from) {
                    if self.config.accept_write_bdt && table.len() <= 64 {
                        self.config.bdt = table.bdt_entries().collect();
                        self.result(from, BvlcResultCode::SUCCESSFUL_COMPLETION);
                    } else {
                        self.counters.refused_write_bdt += 1;
                        self.result(from, BvlcResultCode::WRITE_BROADCAST_DISTRIBUTION_TABLE_NAK);
                    }
                }
                None
            }
            Bvll::Result(_)
            | Bvll::ReadBroadcastDistributionTableAck(_)
            | Bvll::ReadForeignDeviceTableAck(_)
            | Bvll::SecureBvll(_) => None,
        }
    }

    fn register(&mut self, now: Duration, from: SocketAddrV4, ttl: u16) {
        let allowed = self.config.foreign_devices.iter().any(|(net, prefix)| in_network(*from.ip(), *net, *prefix));
        if !allowed {
            self.counters.refused_not_allowed += 1;
            self.result(from, BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK);
            return;
        }
        if !self.fdt.contains_key(&from) && self.fdt.len() >= self.config.max_foreign_devices {
            self.counters.refused_full += 1;
            self.result(from, BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK);
            return;
        }
        let ttl = ttl.min(self.config.max_ttl);
        self.fdt.insert(from, (ttl, now + Duration::from_secs(ttl.into()) + FD_GRACE));
        self.counters.registrations += 1;
        self.result(from, BvlcResultCode::SUCCESSFUL_COMPLETION);
    }

    /// Charge one management request to `from`'s address; false (and
    /// counted) when over its rate.
    fn allow(&mut self, now: Duration, from: SocketAddrV4) -> bool {
        let (rate, burst) = (f64::from(self.config.requests_per_second), f64::from(self.config.request_burst.max(1)));
        if self.buckets.len() >= MAX_RATE_SOURCES && !self.buckets.contains_key(from.ip()) {
            // Forget the sources that have refilled; if none has, the
            // newcomer waits like everyone else.
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

    /// Whether `from` is on our subnet (the one our broadcast address
    /// covers).
    fn on_our_subnet(&self, from: SocketAddrV4) -> bool {
        let (local, broadcast) = (u32::from(*self.config.local.ip()), u32::from(*self.config.broadcast.ip()));
        let differ = local ^ broadcast;
        let host = if differ == 0 { 0 } else { u32::MAX >> differ.leading_zeros() };
        (u32::from(*from.ip()) & !host) == (local & !host)
    }

    fn purge(&mut self, now: Duration) {
        self.fdt.retain(|_, (_, until)| *until > now);
    }

    fn is_peer(&self, from: SocketAddrV4) -> bool {
        from != self.config.local && self.config.bdt.iter().any(|e| e.address == from)
    }

    fn peer_mask(&self, from: SocketAddrV4) -> Option<Ipv4Addr> {
        self.config.bdt.iter().find(|e| e.address == from).map(|e| e.mask)
    }

    /// Send `npdu` (from `source`) as a Forwarded-NPDU where `how` says,
    /// and to every foreign device but `except`.
    fn forward(&mut self, source: SocketAddrV4, npdu: &[u8], how: Forward) {
        let mut bvll = Vec::with_capacity(npdu.len() + 10);
        if (Bvll::ForwardedNpdu { original_source: source, npdu }).encode(&mut bvll).is_err() {
            return;
        }
        self.counters.forwarded += 1;
        if how.peers {
            for e in &self.config.bdt {
                if e.address == self.config.local {
                    continue;
                }
                // J.4.3.2: unicast to the peer when its mask is all ones,
                // else to its subnet's directed broadcast address.
                let ip = Ipv4Addr::from(u32::from(*e.address.ip()) | !u32::from(e.mask));
                self.out.push_back(Datagram { to: SocketAddrV4::new(ip, e.address.port()), bvll: bvll.clone() });
            }
        }
        if how.local {
            self.out.push_back(Datagram { to: self.config.broadcast, bvll: bvll.clone() });
        }
        for fd in self.fdt.keys() {
            if Some(*fd) != how.except && *fd != source {
                self.out.push_back(Datagram { to: *fd, bvll: bvll.clone() });
            }
        }
    }

    fn result(&mut self, to: SocketAddrV4, code: BvlcResultCode) {
        let mut bvll = Vec::with_capacity(6);
        if Bvll::Result(code).encode(&mut bvll).is_ok() {
            self.out.push_back(Datagram { to, bvll });
        }
    }

    fn send_table(&mut self, to: SocketAddrV4, bdt: bool, table: &[u8]) {
        let mut bvll = Vec::with_capacity(table.len() + 4);
        let msg = match (bdt, crate::bvll::Table::from_bytes(table, 0)) {
            (true, Ok(t)) => Bvll::ReadBroadcastDistributionTableAck(t),
            (false, Ok(t)) => Bvll::ReadForeignDeviceTableAck(t),
            (_, Err(_)) => return,
        };
        if msg.encode(&mut bvll).is_ok() {
            self.out.push_back(Datagram { to, bvll });
        }
    }
}

/// Where a forwarded broadcast goes besides the foreign devices.
#[derive(Debug, Clone, Copy)]
struct Forward {
    peers: bool,
    local: bool,
    except: Option<SocketAddrV4>,
}

fn in_network(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
    u32::from(ip) & mask == u32::from(net) & mask
}

#[cfg(test)]
mod tests;
