//! `mixed`: the traffic of a building's supervisory system rather than one
//! request over and over — weighted ReadProperty, ReadPropertyMultiple of 10
//! values, WriteProperty, SubscribeCOV and Who-Is, through our client
//! ([`crate::workload`]).
//!
//! Every target serves 100 readable objects and 64 commandable Analog
//! Values. Each request is drawn from the weights by a hash of the client and
//! its sequence number, so every target sees the same sequence. Writes change
//! values that clients subscribed to, so COV notifications flow too (each
//! client renews at most 64 subscriptions; unconfirmed). The line reports
//! every kind apart (`kinds`) and the total.

use super::{Env, StepOptions, bacnet_targets, check_alive, measure_workload};
use crate::json_line::JsonLine;
use crate::target::{Setup, TargetKind};
use crate::workload::{Op, WorkloadConfig};
use bacnet::enums::PropertyIdentifier;
use serde_json::json;

/// Readable objects every target serves.
pub const OBJECTS: u32 = 100;
/// Commandable Analog Values every target serves.
pub const VALUES: u32 = 64;

/// How often each kind of request is drawn (out of their sum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weights {
    /// ReadProperty of a Present_Value.
    pub read: u32,
    /// ReadPropertyMultiple of 10 Present_Values.
    pub rpm: u32,
    /// WriteProperty of a Present_Value.
    pub write: u32,
    /// SubscribeCOV.
    pub subscribe: u32,
    /// Who-Is.
    pub who_is: u32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { read: 60, rpm: 15, write: 10, subscribe: 10, who_is: 5 }
    }
}

impl Weights {
    fn total(&self) -> u32 {
        self.read + self.rpm + self.write + self.subscribe + self.who_is
    }

    /// `"read:60 rpm:15 …"`, as the line reports it.
    pub fn label(&self) -> String {
        format!(
            "read:{} rpm:{} write:{} subscribe:{} who-is:{}",
            self.read, self.rpm, self.write, self.subscribe, self.who_is
        )
    }
}

/// A 64-bit mix (SplitMix64's finaliser): the same request sequence on
/// every target, without a random number generator crate.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The `seq`-th request of `client` against `kind`.
pub fn choose(kind: TargetKind, w: &Weights, client: usize, seq: u64) -> Op {
    let h = mix(((client as u64) << 40) ^ seq);
    let pick = (h % u64::from(w.total().max(1))) as u32;
    let object = ((h >> 20) % u64::from(OBJECTS)) as u32;
    let value = ((h >> 40) % u64::from(VALUES)) as u32;
    let mut edge = w.read;
    if pick < edge {
        return Op::Read(Setup::object(kind, object));
    }
    edge += w.rpm;
    if pick < edge {
        let ten = (0..10).map(|i| Setup::object(kind, (object + i) % OBJECTS)).collect();
        return Op::ReadMultiple(ten, vec![PropertyIdentifier::PRESENT_VALUE]);
    }
    edge += w.write;
    if pick < edge {
        // Steps of at least 1.0, above every target's COV increment.
        return Op::Write(Setup::value(kind, value), (seq % 100) as f32);
    }
    edge += w.subscribe;
    if pick < edge {
        return Op::Subscribe(Setup::value(kind, value));
    }
    Op::WhoIs
}

/// Run the scenario: one JSON line per client count, in-flight value and target.
///
/// With `journal`, two more Trellis servers keep what clients write on
/// disk: `trellis-journal` flushing to the disk before each batch's
/// answers (`durability = "power-loss"`), `trellis-journal-process` only
/// writing (`"process"`) — the journal's cost, measured in the same run as
/// the rest.
pub fn run(env: &Env, targets: &[TargetKind], weights: Weights, o: &StepOptions, journal: bool) -> anyhow::Result<()> {
    anyhow::ensure!(weights.total() > 0, "--weights: at least one above 0");
    let setup = Setup { objects: OBJECTS, values: VALUES, ..Setup::default() };
    let mut servers = Vec::new();
    for kind in bacnet_targets(targets) {
        servers.push(env.start(kind, &setup)?);
        if journal && kind == TargetKind::Trellis {
            for (durability, label) in [("power-loss", "trellis-journal"), ("process", "trellis-journal-process")] {
                let mut s = env.start(kind, &Setup { journal: Some(durability), ..setup })?;
                s.label = label;
                servers.push(s);
            }
        }
    }
    let mut step = 0usize;
    for round in 1..=o.rounds {
        for &in_flight in &o.in_flight {
            for &clients in &o.clients {
                for k in 0..servers.len() {
                    let server = &servers[(step + k) % servers.len()];
                    let kind = server.kind;
                    let cfg = WorkloadConfig {
                        target: server.addr,
                        clients,
                        in_flight: in_flight as usize,
                        warmup: o.warmup,
                        measure: o.measure,
                        timeout: o.timeout,
                    };
                    let extra = JsonLine::new().put("weights", json!(weights.label()));
                    let next = move |client, seq| choose(kind, &weights, client, seq);
                    let line = measure_workload("mixed", env, round, server, &cfg, next, extra)?;
                    println!("{line}");
                    check_alive(server)?;
                }
                step += 1;
            }
        }
    }
    for s in &servers {
        super::clients::report_log(s, env);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_follows_the_weights_and_is_the_same_on_every_target() {
        let w = Weights::default();
        let mut counts = std::collections::BTreeMap::new();
        for seq in 0..20_000 {
            let op = choose(TargetKind::Trellis, &w, 3, seq);
            *counts.entry(op.kind()).or_insert(0u32) += 1;
            let same = choose(TargetKind::Rusty, &w, 3, seq);
            assert_eq!(op.kind(), same.kind(), "seq {seq}");
        }
        let share = |k: &str| f64::from(counts[k]) / 20_000.0;
        assert!((share("read") - 0.60).abs() < 0.02, "{counts:?}");
        assert!((share("rpm") - 0.15).abs() < 0.02, "{counts:?}");
        assert!((share("write") - 0.10).abs() < 0.02, "{counts:?}");
        assert!((share("subscribe") - 0.10).abs() < 0.02, "{counts:?}");
        assert!((share("who-is") - 0.05).abs() < 0.02, "{counts:?}");
    }

    #[test]
    fn writes_and_subscriptions_name_commandable_values_and_reads_existing_objects() {
        let w = Weights::default();
        for seq in 0..5_000 {
            match choose(TargetKind::Trellis, &w, 0, seq) {
                Op::Write(o, _) | Op::Subscribe(o) => {
                    assert_eq!(o.object_type, bacnet::ObjectType::ANALOG_VALUE);
                    assert!((1..=VALUES).contains(&o.instance));
                }
                Op::Read(o) => assert!((1..=OBJECTS).contains(&o.instance)),
                Op::ReadMultiple(objects, _) => assert_eq!(objects.len(), 10),
                Op::WhoIs => {}
            }
        }
    }
}
