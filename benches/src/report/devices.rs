//! The report's `devices` section and its target row: how Trellis's
//! throughput scales from one device to N, from `stress-test devices`.
//!
//! Must never: show a ratio without the two throughputs it divides, or hide
//! that on a machine with fewer cores than devices plus the load generator
//! the ratio measures the machine, not the design.

use super::data::Results;
use super::page::Page;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// (devices, in flight) → throughput medians over rounds, with their lines.
fn by_count(results: &Results) -> BTreeMap<(u64, u64), Vec<&Value>> {
    let mut m: BTreeMap<(u64, u64), Vec<&Value>> = BTreeMap::new();
    for (_, l) in results.scenario("devices") {
        if let (Some(d), Some(k)) = (l["devices"].as_u64(), l["in_flight"].as_u64()) {
            m.entry((d, k)).or_default().push(l);
        }
    }
    m
}

fn median(lines: &[&Value], key: &str) -> Option<f64> {
    let mut v: Vec<f64> = lines.iter().filter_map(|l| l[key].as_f64()).collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| if v.len() % 2 == 1 { v[v.len() / 2] } else { (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0 })
}

/// The scaling ratio of the largest device count to one, per in-flight
/// value: (devices, in flight, ratio).
fn ratios(results: &Results) -> Vec<(u64, u64, f64)> {
    let groups = by_count(results);
    let mut out = Vec::new();
    for (&(d, k), lines) in &groups {
        if d <= 1 {
            continue;
        }
        let one = groups.get(&(1, k)).and_then(|l| median(l, "throughput"));
        if let (Some(n), Some(one)) = (median(lines, "throughput"), one)
            && one > 0.0
        {
            out.push((d, k, n / one));
        }
    }
    out
}

/// The target row: scaling with devices, reported (the target is to show
/// it, with the machine's core count beside it).
pub fn devices_target(md: &mut String, results: &Results) {
    let goal = "8 devices (8 clients each) ÷ 1 device: scales with cores where it has them";
    let cores = results.machine["cpus"].as_u64();
    match ratios(results).into_iter().max_by_key(|r| r.0) {
        Some((d, k, r)) => {
            let machine = cores.map_or(String::new(), |c| format!("; {c} cores for gateway and load generator"));
            let _ = writeln!(md, "| {goal} | {d} devices ÷ 1 at {k} in flight: {r:.2}×{machine} | reported |");
        }
        None => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
}

/// Write the section, if the results hold any `devices` line.
pub fn devices_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("devices") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `devices`: scaling with devices and cores (Trellis only)\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "One gateway serving 1 device, then N: the demo building on a port each, spread over one thread per \
         core (`[engine] threads`), with the same number of ReadProperty clients on every device. The ratio \
         is the aggregate throughput over that of one device. Each device's requests run on its own thread, \
         so on a machine with a core per device (and more for the clients) the ratio grows with the cores; \
         where the gateway and the load generator share two cores, it cannot.\n"
    );
    let _ = writeln!(
        md,
        "| devices | clients (per device) × in flight | throughput /s | ÷ 1 device | p50 µs | p99 µs | server CPU (cores) | failures |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let groups = by_count(results);
    for (&(d, k), lines) in &groups {
        let one = groups.get(&(1, k)).and_then(|l| median(l, "throughput"));
        let tp = median(lines, "throughput");
        let ratio = match (tp, one) {
            (Some(t), Some(o)) if o > 0.0 => format!("{:.2}×", t / o),
            _ => "–".into(),
        };
        let f = |key: &str, digits: usize| median(lines, key).map_or("–".into(), |v| format!("{v:.digits$}"));
        let failures: u64 = lines
            .iter()
            .filter_map(|l| {
                let f = &l["failures"];
                Some(f["admission"].as_u64()? + f["timeout"].as_u64()? + f["other"].as_u64()?)
            })
            .sum();
        let per = lines.first().and_then(|l| l["clients_per_device"].as_u64()).unwrap_or(0);
        let _ = writeln!(
            md,
            "| {d} | {} ({per}) × {k} | {} | {ratio} | {} | {} | {} | {failures} |",
            d * per,
            f("throughput", 0),
            f("p50_us", 0),
            f("p99_us", 0),
            f("server_cpu", 2),
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::Run;
    use serde_json::json;

    #[test]
    fn the_ratio_divides_n_devices_by_one_at_the_same_in_flight() {
        let line = |d: u64, t: f64| {
            json!({"scenario": "devices", "target": "trellis", "devices": d, "clients": d * 8, "clients_per_device": 8,
                   "in_flight": 1, "throughput": t, "p50_us": 50.0, "p99_us": 90.0, "server_cpu": 1.0,
                   "failures": {"admission": 0, "timeout": 0, "other": 0}, "round": 1})
        };
        let results = Results {
            machine: json!({"cpus": 2}),
            runs: vec![Run {
                name: "devices".into(),
                command: "stress-test devices".into(),
                lines: vec![line(1, 100.0), line(8, 150.0)],
            }],
        };
        assert_eq!(ratios(&results), vec![(8, 1, 1.5)]);
        let mut md = String::new();
        devices_target(&mut md, &results);
        assert!(md.contains("8 devices ÷ 1 at 1 in flight: 1.50×; 2 cores"), "{md}");
        let mut p = Page { markdown: String::new(), charts: BTreeMap::new() };
        devices_section(&mut p, &results);
        assert!(p.markdown.contains("| 8 | 64 (8) × 1 | 150 | 1.50× |"), "{}", p.markdown);
    }
}
