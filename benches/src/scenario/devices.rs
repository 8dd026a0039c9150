//! `devices`: how the gateway scales with devices and cores. Trellis serves
//! 1 device, then N (the demo building on a port each; the gateway spreads
//! them over one thread per core), with `clients_per_device` ReadProperty
//! clients on every device; the aggregate throughput of N devices divided by
//! that of one is the scaling ratio. On a machine with fewer cores than
//! devices plus the load generator, the ratio says what the cores allow,
//! not what the design does (the report says so). Trellis only.

use super::clients::{measure, report_log};
use super::{Env, StepOptions, check_alive, probe_request};
use crate::json_line::JsonLine;
use crate::load::LoadConfig;
use crate::target::{Setup, TargetKind};
use serde_json::json;
use std::sync::Arc;

/// Run the scenario: one JSON line per device count, step and round.
pub fn run(env: &Env, counts: &[u32], clients_per_device: usize, o: &StepOptions) -> anyhow::Result<()> {
    let requests: Arc<[_]> = Arc::new([probe_request()]);
    for round in 1..=o.rounds {
        for &devices in counts {
            let server = env.start(TargetKind::Trellis, &Setup { devices, ..Setup::default() })?;
            anyhow::ensure!(server.addrs.len() == devices.max(1) as usize, "the gateway serves every device");
            for &in_flight in &o.in_flight {
                let cfg = LoadConfig {
                    target: server.addrs[0].into(),
                    also: server.addrs[1..].iter().map(|&a| a.into()).collect(),
                    clients: clients_per_device * server.addrs.len(),
                    in_flight: in_flight as usize,
                    warmup: o.warmup,
                    measure: o.measure,
                    timeout: o.timeout,
                    threads: o.client_threads,
                    echo: false,
                    requests: requests.clone(),
                };
                let extra = JsonLine::new()
                    .put("devices", json!(server.addrs.len()))
                    .put("clients_per_device", json!(clients_per_device));
                println!("{}", measure("devices", env, round, &server, &cfg, extra)?);
                check_alive(&server)?;
            }
            report_log(&server, env);
        }
    }
    Ok(())
}
