//! Broadcast guard: a budget of discovery broadcasts per source, so a storm
//! on one network (a misconfigured front end sending Who-Is in a loop, a
//! flood of Who-Has) does not flood a slow network behind the router — an
//! MS/TP trunk at 38,400 bit/s carries about 30 small frames a second in
//! all.
//!
//! ```toml
//! services = ["who-is", "who-has"]   # the default
//! budget = 5                         # broadcasts per sender per window
//! network_budget = 50                # per protected network, all senders together (default: 10 × budget)
//! window_seconds = 10
//! protected_networks = [2]           # departure networks guarded (default: every one)
//! max_sources = 1024                 # senders tracked at once (at most 65536)
//! ```
//!
//! A sender is the datalink address a broadcast came from on its arrival
//! port (the station itself, or the router that forwarded it), which it
//! cannot choose the way it chooses an SNET/SADR. Each sender has a token
//! bucket per protected network: `budget` tokens, refilled evenly over
//! `window_seconds`; each protected network has one more, `network_budget`,
//! that every sender draws on too. A listed broadcast (a remote or global
//! broadcast carrying one of `services`) that finds its sender's bucket
//! empty is dropped as "over budget", one that finds the network's empty as
//! "network over budget". Unicast requests and every other service pass.
//! When `max_sources` buckets are in use, a new sender is dropped as "too
//! many sources" (idle buckets are freed at the ticks once full again): an
//! attacker who can forge many datalink addresses cannot grow the table,
//! and the network's budget bounds what all of them get through together.
//!
//! The buckets are the exported state: a hot swap or a restart does not
//! hand a storming source a fresh budget.

use serde::Deserialize;
use std::collections::HashMap;
use trellis_routing_sdk::{Content, Destination, Policy, PolicyInfo, RoutedNpdu, UnconfirmedServiceChoice, Verdict};

/// The drop reasons, in `PolicyInfo::drop_reasons` order.
const OVER_BUDGET: u16 = 0;
const TOO_MANY_SOURCES: u16 = 1;
const NETWORK_OVER_BUDGET: u16 = 2;
/// The most senders tracked (a bucket is about 100 octets with its key).
const MAX_SOURCES: usize = 65_536;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    services: Option<Vec<String>>,
    budget: Option<u32>,
    network_budget: Option<u32>,
    window_seconds: Option<u32>,
    protected_networks: Option<Vec<u16>>,
    max_sources: Option<usize>,
}

/// Who is spending: a sender (its arrival network and datalink address)
/// on one protected network.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    departure_network: u16,
    arrival_network: u16,
    mac: Vec<u8>,
}

/// Credit, and when it was last refilled. One broadcast costs
/// `window_ms` of credit and every millisecond adds `budget`: exact integer
/// arithmetic, nothing lost to rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    credit: u64,
    at_ms: u64,
}

/// The guard.
#[derive(Debug)]
pub struct BroadcastGuard {
    services: Vec<u8>,
    budget: u32,
    network_budget: u32,
    window_ms: u64,
    protected: Option<Vec<u16>>,
    max_sources: usize,
    buckets: HashMap<Key, Bucket>,
    /// Per protected network, every sender together.
    networks: HashMap<u16, Bucket>,
}

impl BroadcastGuard {
    fn full(&self) -> u64 {
        u64::from(self.budget) * self.window_ms
    }

    /// The bucket refilled to `now_ms`, for a budget of `budget`.
    fn refill_to(&self, b: Bucket, now_ms: u64, budget: u32) -> Bucket {
        let elapsed = now_ms.saturating_sub(b.at_ms);
        let added = elapsed.saturating_mul(u64::from(budget));
        let full = u64::from(budget) * self.window_ms;
        Bucket { credit: b.credit.saturating_add(added).min(full), at_ms: now_ms.max(b.at_ms) }
    }

    fn refill(&self, b: Bucket, now_ms: u64) -> Bucket {
        self.refill_to(b, now_ms, self.budget)
    }

    fn guarded(&self, npdu: &RoutedNpdu<'_>) -> bool {
        let broadcast = !matches!(npdu.destination, Destination::Station(_));
        let listed = matches!(npdu.content, Content::Apdu(a)
            if a.pdu_type == 1 && a.service.is_some_and(|s| self.services.contains(&s)));
        let protected = self.protected.as_ref().is_none_or(|p| p.contains(&npdu.departure_network));
        broadcast && listed && protected
    }
}

impl Policy for BroadcastGuard {
    fn configure(settings: &str) -> Result<Self, String> {
        let s: Settings = basic_toml::from_str(settings).map_err(|e| format!("broadcast-guard settings: {e}"))?;
        let names = s.services.unwrap_or_else(|| vec!["who-is".into(), "who-has".into()]);
        let services = names
            .iter()
            .map(|n| {
                UnconfirmedServiceChoice::from_name(n)
                    .filter(|_| !n.trim().bytes().all(|b| b.is_ascii_digit()))
                    .map(|s| s.0)
                    .ok_or_else(|| format!("broadcast-guard: {n:?} is not an unconfirmed service (who-is, who-has, …)"))
            })
            .collect::<Result<Vec<u8>, String>>()?;
        let budget = s.budget.unwrap_or(5);
        let network_budget = s.network_budget.unwrap_or(budget.saturating_mul(10));
        let window = s.window_seconds.unwrap_or(10);
        if window == 0 || window > 86_400 {
            return Err("broadcast-guard: window_seconds must be 1..=86400".into());
        }
        let max_sources = s.max_sources.unwrap_or(1024);
        if max_sources == 0 || max_sources > MAX_SOURCES {
            return Err(format!("broadcast-guard: max_sources must be 1..={MAX_SOURCES}"));
        }
        Ok(BroadcastGuard {
            services,
            budget,
            network_budget,
            window_ms: u64::from(window) * 1000,
            protected: s.protected_networks,
            max_sources,
            buckets: HashMap::new(),
            networks: HashMap::new(),
        })
    }

    fn info(&self) -> PolicyInfo {
        let nets = match &self.protected {
            Some(p) => format!("networks {p:?}"),
            None => "every network".into(),
        };
        PolicyInfo {
            name: "broadcast-guard".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            summary: format!(
                "{} broadcasts per sender and {} in all per {} s onto {nets}, {} senders tracked",
                self.budget,
                self.network_budget,
                self.window_ms / 1000,
                self.max_sources
            ),
            drop_reasons: vec!["over budget".into(), "too many sources".into(), "network over budget".into()],
        }
    }

    fn decide(&mut self, now_ms: u64, npdu: &RoutedNpdu<'_>) -> Verdict {
        if !self.guarded(npdu) {
            return Verdict::Forward;
        }
        let key = Key {
            departure_network: npdu.departure_network,
            arrival_network: npdu.arrival_network,
            mac: npdu.link_source.to_vec(),
        };
        let bucket = match self.buckets.get(&key) {
            Some(b) => self.refill(*b, now_ms),
            None if self.buckets.len() >= self.max_sources => return Verdict::Drop(TOO_MANY_SOURCES),
            None => Bucket { credit: self.full(), at_ms: now_ms },
        };
        let Some(left) = bucket.credit.checked_sub(self.window_ms) else {
            self.buckets.insert(key, bucket);
            return Verdict::Drop(OVER_BUDGET);
        };
        let full_network = u64::from(self.network_budget) * self.window_ms;
        let network = match self.networks.get(&npdu.departure_network) {
            Some(b) => self.refill_to(*b, now_ms, self.network_budget),
            None => Bucket { credit: full_network, at_ms: now_ms },
        };
        let Some(network_left) = network.credit.checked_sub(self.window_ms) else {
            self.networks.insert(npdu.departure_network, network);
            self.buckets.insert(key, bucket);
            return Verdict::Drop(NETWORK_OVER_BUDGET);
        };
        self.networks.insert(npdu.departure_network, Bucket { credit: network_left, ..network });
        self.buckets.insert(key, Bucket { credit: left, ..bucket });
        Verdict::Forward
    }

    fn tick(&mut self, now_ms: u64) {
        // Buckets that have filled up again are the same as no bucket.
        if self.buckets.len() * 2 >= self.max_sources {
            let full = self.full();
            let mut buckets = std::mem::take(&mut self.buckets);
            buckets.retain(|_, b| self.refill(*b, now_ms).credit < full);
            self.buckets = buckets;
        }
    }

    fn export_state(&self) -> Vec<u8> {
        // Version 1: count, then per bucket: departure network, arrival
        // network, MAC length, MAC, credit, last refill. (The networks'
        // buckets refill within one window: not kept.)
        let mut out = vec![1];
        out.extend((self.buckets.len() as u32).to_be_bytes());
        for (k, b) in &self.buckets {
            out.extend(k.departure_network.to_be_bytes());
            out.extend(k.arrival_network.to_be_bytes());
            out.push(k.mac.len() as u8);
            out.extend(&k.mac);
            out.extend(b.credit.to_be_bytes());
            out.extend(b.at_ms.to_be_bytes());
        }
        out
    }

    fn import_state(&mut self, state: &[u8]) -> Result<(), String> {
        if state.is_empty() {
            return Ok(());
        }
        let bad = || "broadcast-guard: the state is truncated or not version 1".to_string();
        let mut r = state;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let (head, rest) = r.split_at_checked(n).ok_or_else(bad)?;
            r = rest;
            Ok(head)
        };
        if take(1)? != [1] {
            return Err(bad());
        }
        let count = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
        let mut buckets = HashMap::new();
        for _ in 0..count {
            let departure_network = u16::from_be_bytes(take(2)?.try_into().map_err(|_| bad())?);
            let arrival_network = u16::from_be_bytes(take(2)?.try_into().map_err(|_| bad())?);
            let len = take(1)?[0] as usize;
            let mac = take(len)?.to_vec();
            let credit = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?).min(self.full());
            let at_ms = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
            if buckets.len() < self.max_sources {
                buckets.insert(Key { departure_network, arrival_network, mac }, Bucket { credit, at_ms });
            }
        }
        self.buckets = buckets;
        Ok(())
    }
}

trellis_routing_sdk::register_policy!(BroadcastGuard);

#[cfg(test)]
mod tests;
