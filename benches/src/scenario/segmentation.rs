//! `segmentation`: ReadPropertyMultiple of Object_Name, Present_Value,
//! Status_Flags and Units of 50 and of 250 objects — answers of about 2 and
//! 11 KB, so the 250-object one comes back in segments (at our client's
//! Max-APDU of 1476) and shows each server's segmentation path.
//!
//! Every target serves the largest size's objects (Trellis from the
//! bulk-objects plugin with its RPM bounds raised, rusty-bacnet with
//! `--segmentation`). The requests go through our client
//! ([`crate::workload`]), which reassembles the segments and counts a
//! property error inside an answer as a failure.

use super::{Env, StepOptions, bacnet_targets, check_alive, measure_workload};
use crate::json_line::JsonLine;
use crate::target::{Setup, TargetKind};
use crate::workload::{Op, WorkloadConfig};
use bacnet::enums::PropertyIdentifier;
use serde_json::json;

/// The properties read of each object.
pub const PROPERTIES: [PropertyIdentifier; 4] = [
    PropertyIdentifier::OBJECT_NAME,
    PropertyIdentifier::PRESENT_VALUE,
    PropertyIdentifier::STATUS_FLAGS,
    PropertyIdentifier::UNITS,
];

/// Run the scenario: one JSON line per size, client count, in-flight value
/// and target.
pub fn run(env: &Env, targets: &[TargetKind], sizes: &[u32], o: &StepOptions) -> anyhow::Result<()> {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    anyhow::ensure!(largest >= 1, "--objects: sizes of at least 1");
    let setup = Setup { objects: largest, segmentation: true, unbudgeted: true, ..Setup::default() };
    let mut servers = Vec::new();
    for kind in bacnet_targets(targets) {
        servers.push(env.start(kind, &setup)?);
    }
    let mut step = 0usize;
    for round in 1..=o.rounds {
        for &size in sizes {
            for &in_flight in &o.in_flight {
                for &clients in &o.clients {
                    for k in 0..servers.len() {
                        let server = &servers[(step + k) % servers.len()];
                        let objects: Vec<_> = (0..size).map(|i| Setup::object(server.kind, i)).collect();
                        let op = Op::ReadMultiple(objects, PROPERTIES.to_vec());
                        let cfg = WorkloadConfig {
                            target: server.addr,
                            clients,
                            in_flight: in_flight as usize,
                            warmup: o.warmup,
                            measure: o.measure,
                            timeout: o.timeout,
                        };
                        let extra = JsonLine::new()
                            .put("objects", json!(size))
                            .put("values", json!(size as usize * PROPERTIES.len()));
                        let line =
                            measure_workload("segmentation", env, round, server, &cfg, move |_, _| op.clone(), extra)?;
                        println!("{line}");
                        check_alive(server)?;
                    }
                    step += 1;
                }
            }
        }
    }
    for s in &servers {
        super::clients::report_log(s, env);
    }
    Ok(())
}
