//! `objects`: does a server stay as fast, and how much memory does it take,
//! as its database grows from 100 to 10,000 objects?
//!
//! Each object count gets a fresh server of each target: Trellis serving N
//! Analog Inputs from the bulk-objects WASM plugin, the peers N extra Analog
//! Values (`--objects N`). Its resident memory is read once it answers and
//! has idled a moment (`idle_rss_kib`: the median of five samples 100 ms
//! apart, after 500 ms), then the raw generator reads the
//! Present_Value of every object in turn (each client starting at a
//! different one), so every request looks up a different object. The
//! report derives the resident bytes per object from two counts:
//! (RSS at N − RSS at the smallest N) ÷ (N − smallest N).
//!
//! Every server must start the same way for that difference to mean
//! objects: before the first measured Trellis, a throwaway one loads the
//! bulk-objects plugin, so the compiled component is in the cache and no
//! measured server carries the compiler's memory (the first start of all
//! used to, which made the smallest database the largest process).

use super::{Env, StepOptions, check_alive};
use crate::json_line::JsonLine;
use crate::load::LoadConfig;
use crate::request::ReadPropertyTemplate;
use crate::target::{Setup, TargetKind};
use bacnet::enums::PropertyIdentifier;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Run the scenario: one JSON line per object count, target, client count and
/// in-flight value.
pub fn run(env: &Env, targets: &[TargetKind], counts: &[u32], o: &StepOptions) -> anyhow::Result<()> {
    anyhow::ensure!(counts.iter().all(|&n| n >= 1), "--objects: counts of at least 1");
    if targets.contains(&TargetKind::Trellis) {
        let largest = counts.iter().copied().max().unwrap_or(1);
        drop(env.start(TargetKind::Trellis, &Setup { objects: largest, ..Setup::default() })?);
    }
    let mut order = 0usize;
    for round in 1..=o.rounds {
        for &count in counts {
            for k in 0..targets.len() {
                let kind = targets[(order + k) % targets.len()];
                let server = env.start(kind, &Setup { objects: count, ..Setup::default() })?;
                // Let start-up allocations settle before reading the idle size.
                std::thread::sleep(Duration::from_millis(500));
                let idle_rss = settled_rss(&server);
                let requests: Arc<[ReadPropertyTemplate]> = (0..count)
                    .map(|i| ReadPropertyTemplate::new(Setup::object(kind, i), PropertyIdentifier::PRESENT_VALUE))
                    .collect::<Result<Vec<_>, _>>()?
                    .into();
                for &in_flight in &o.in_flight {
                    for &clients in &o.clients {
                        let cfg = LoadConfig {
                            target: server.addr.into(),
                            also: Vec::new(),
                            clients,
                            in_flight: in_flight as usize,
                            warmup: o.warmup,
                            measure: o.measure,
                            timeout: o.timeout,
                            threads: o.client_threads,
                            echo: kind == TargetKind::Echo,
                            requests: requests.clone(),
                        };
                        let extra = JsonLine::new()
                            .put("objects", json!(count))
                            .put("idle_rss_kib", json!(idle_rss))
                            .put("ready_ms", json!(server.ready.as_millis() as u64));
                        let line = super::clients::measure("objects", env, round, &server, &cfg, extra)?;
                        println!("{line}");
                        check_alive(&server)?;
                    }
                }
                super::clients::report_log(&server, env);
            }
            order += 1;
        }
    }
    Ok(())
}

/// The median of five resident-memory samples 100 ms apart.
pub(super) fn settled_rss(server: &crate::target::Server) -> Option<u64> {
    let mut samples: Vec<u64> = (0..5)
        .filter_map(|i| {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            server.rss_kib()
        })
        .collect();
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied()
}
