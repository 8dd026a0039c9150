//! `clients`: 1, 5, 10, 25, 50, 100 concurrent clients, each keeping K
//! ReadProperty requests of analog-input,1 present-value in flight, against
//! each target in turn (a different one first at every step), so the ratios
//! come from the same run. The raw generator ([`crate::load`]).

use super::{CpuWindow, Env, StepOptions, check_alive, outcome_fields, probe_request, progress, server_fields};
use crate::json_line::JsonLine;
use crate::load::{self, LoadConfig};
use crate::target::{Server, Setup, TargetKind};
use serde_json::json;
use std::sync::Arc;

/// Run the scenario named `scenario` (`clients`, or `echo` for the echo
/// target alone): one JSON line per step on stdout.
pub fn run(scenario: &str, env: &Env, targets: &[TargetKind], o: &StepOptions) -> anyhow::Result<()> {
    let mut servers = Vec::new();
    for &kind in targets {
        servers.push(env.start(kind, &Setup::default())?);
    }
    let requests: Arc<[_]> = Arc::new([probe_request()]);
    let mut step = 0usize;
    for round in 1..=o.rounds {
        for &in_flight in &o.in_flight {
            for &clients in &o.clients {
                // A/B: every target gets this step, a different one first each time.
                for k in 0..servers.len() {
                    let server = &servers[(step + k) % servers.len()];
                    let cfg = LoadConfig {
                        target: server.addr.into(),
                        also: Vec::new(),
                        clients,
                        in_flight: in_flight as usize,
                        warmup: o.warmup,
                        measure: o.measure,
                        timeout: o.timeout,
                        threads: o.client_threads,
                        echo: server.kind == TargetKind::Echo,
                        requests: requests.clone(),
                    };
                    let line = measure(scenario, env, round, server, &cfg, JsonLine::new())?;
                    println!("{line}");
                    check_alive(server)?;
                }
                step += 1;
            }
        }
    }
    for s in &servers {
        report_log(s, env);
    }
    Ok(())
}

/// Run one raw-generator step against one server; its JSON line: `scenario`,
/// `target`, `clients`, `in_flight`, then `extra`'s fields, then the outcome
/// and server fields.
pub fn measure(
    scenario: &str,
    env: &Env,
    round: u32,
    server: &Server,
    cfg: &LoadConfig,
    extra: JsonLine,
) -> anyhow::Result<String> {
    let mut cpu = CpuWindow::new(server.pid, env.ticks);
    let mut r = load::run(cfg, |m| cpu.mark(m))?;
    let secs = cfg.measure.as_secs_f64();
    let line = JsonLine::new()
        .put("scenario", json!(scenario))
        .put("target", json!(server.label))
        .put("clients", json!(cfg.clients))
        .put("in_flight", json!(cfg.in_flight))
        .merge(extra);
    let line = outcome_fields(line, &r.outcomes, &mut r.latencies, secs);
    // The server's CPU time per answer: steadier than round trips on a
    // machine whose idle vCPUs take long to wake.
    let per_answer = cpu
        .server_seconds()
        .filter(|_| r.outcomes.ok > 0)
        .map(|s| super::round_to(s / r.outcomes.ok as f64 * 1e6, 100.0));
    let line = server_fields(line, env, server, &cpu, secs)
        .put("server_cpu_us_per_answer", json!(per_answer))
        .put("round", json!(round))
        .finish();
    let what = format!("{:>9} clients {:>3} × {:>2}", server.label, cfg.clients, cfg.in_flight);
    progress(scenario, &what, &r.outcomes, &mut r.latencies, secs);
    Ok(line)
}

/// Say how much the server wrote on stderr, and its last line.
pub fn report_log(s: &Server, env: &Env) {
    let (lines, last) = s.log_summary();
    let kept = if env.programs.log_dir != env.programs.work_dir {
        s.log.display().to_string()
    } else {
        "--server-logs DIR keeps it".into()
    };
    eprintln!(
        "stress-test: {} wrote {lines} lines on stderr ({kept}){}",
        s.label,
        last.map(|l| format!("; the last: {l}")).unwrap_or_default()
    );
}
