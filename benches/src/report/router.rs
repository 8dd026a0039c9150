//! The report's `router` section and its target rows, from `stress-test
//! router`: the router hop (routed − direct p50, throughput through the
//! router ÷ rusty-bacnet's direct) and the scale step (devices behind one
//! port: resident memory per device, Who-Is answered).
//!
//! Must never: give a difference without the two figures it subtracts.

use super::data::Results;
use super::page::Page;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// (clients, target, mode) → the hop lines over rounds.
fn hops(results: &Results) -> BTreeMap<(u64, String, String), Vec<&Value>> {
    let mut m: BTreeMap<(u64, String, String), Vec<&Value>> = BTreeMap::new();
    for (_, l) in results.scenario("router") {
        if l["step"] == "hop"
            && let (Some(c), Some(t), Some(mode)) = (l["clients"].as_u64(), l["target"].as_str(), l["mode"].as_str())
        {
            m.entry((c, t.to_owned(), mode.to_owned())).or_default().push(l);
        }
    }
    m
}

fn median(lines: &[&Value], key: &str) -> Option<f64> {
    let mut v: Vec<f64> = lines.iter().filter_map(|l| l[key].as_f64()).collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| if v.len() % 2 == 1 { v[v.len() / 2] } else { (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0 })
}

fn figure(
    groups: &BTreeMap<(u64, String, String), Vec<&Value>>,
    c: u64,
    t: &str,
    mode: &str,
    key: &str,
) -> Option<f64> {
    groups.get(&(c, t.to_owned(), mode.to_owned())).and_then(|l| median(l, key))
}

fn scale(results: &Results) -> Option<&Value> {
    results.scenario("router").map(|(_, l)| l).find(|l| l["step"] == "scale")
}

/// The target rows.
pub fn router_targets(md: &mut String, results: &Results) {
    let groups = hops(results);
    let clients: Vec<u64> = groups.keys().map(|k| k.0).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    for (mode, goal) in [
        ("routed", "router hop B/IP → virtual network: ≤ 5 µs p50 added over the same read sent directly (no policy)"),
        (
            "firewalled",
            "router hop B/IP → virtual network with the `firewall` policy in the path: ≤ 5 µs p50 added over the \
             same read sent directly",
        ),
    ] {
        let added: Vec<(u64, f64, f64, f64)> = clients
            .iter()
            .filter_map(|&c| {
                let through = figure(&groups, c, "trellis", mode, "p50_us")?;
                let direct = figure(&groups, c, "trellis", "direct", "p50_us")?;
                Some((c, through - direct, through, direct))
            })
            .collect();
        let text: Vec<String> =
            added.iter().map(|(c, d, r, x)| format!("{d:+.1} µs at {c} client(s) ({r:.1} vs {x:.1})")).collect();
        match added.iter().map(|a| a.1).fold(None::<f64>, |m, d| Some(m.map_or(d, |m| m.max(d)))) {
            Some(w) => {
                let verdict = if w <= 5.0 { "**met**" } else { "**missed**" };
                let _ = writeln!(md, "| {goal} | {} | {verdict} |", text.join("; "));
            }
            None => {
                let _ = writeln!(md, "| {goal} | not measured | – |");
            }
        }
    }
    let goal = "throughput through the router (firewall in the path) ≥ 2 × rusty-bacnet's direct";
    let top = clients.iter().copied().max();
    let ratio = top.and_then(|c| {
        let routed = figure(&groups, c, "trellis", "firewalled", "throughput")
            .or_else(|| figure(&groups, c, "trellis", "routed", "throughput"))?;
        let rusty = figure(&groups, c, "rusty", "direct", "throughput")?;
        Some((c, routed, rusty))
    });
    match ratio {
        Some((c, r, x)) if x > 0.0 => {
            let verdict = if r / x >= 2.0 { "**met**" } else { "**missed**" };
            let _ = writeln!(md, "| {goal} | {:.2}× at {c} clients ({r:.0} vs {x:.0} /s) | {verdict} |", r / x);
        }
        _ => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
    let goal = "B/IP ↔ MS/TP routing keeps ≥ 95 % of the MS/TP wire limit for small replies (every baud)";
    let routed: Vec<(f64, u64, f64)> = results
        .scenario("mstp-routed")
        .filter(|(_, l)| l["reply"] == "small")
        .filter_map(|(_, l)| Some((l["wire_fraction"].as_f64()?, l["baud"].as_u64()?, l["rate_per_s"].as_f64()?)))
        .collect();
    match routed.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
        Some((f, baud, rate)) => {
            let verdict = if *f >= 0.95 { "**met**" } else { "**missed**" };
            let _ = writeln!(
                md,
                "| {goal} | lowest {:.1} % (at {baud} baud, {rate:.1} replies/s), of the limit for the routed frames \
                 (SNET/SADR and DNET/DADR make them longer) | {verdict} |",
                f * 100.0
            );
        }
        None => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
    let goal = "100 devices on virtual networks behind one port: ≤ 1 MiB resident per device, Who-Is answered by all within 1 s";
    match scale(results) {
        Some(l) => {
            let (n, per, answered, last) = (
                l["devices"].as_u64().unwrap_or(0),
                l["rss_kib_per_device"].as_f64(),
                l["who_is_answered"].as_u64().unwrap_or(0),
                l["who_is_last_ms"].as_f64(),
            );
            let met = per.is_some_and(|p| p <= 1024.0) && answered == n;
            let verdict = if met { "**met**" } else { "**missed**" };
            let _ = writeln!(
                md,
                "| {goal} | {n} devices: {} KiB per device; {answered} of {n} answered, the last after {} ms | {verdict} |",
                per.map_or("–".into(), |p| format!("{p:.0}")),
                last.map_or("–".into(), |l| format!("{l:.1}"))
            );
        }
        None => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
}

/// Write the section, if the results hold any `router` line.
pub fn router_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("router") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `router`: the router hop and devices behind one port\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "The same ReadProperty load (analog-input,1 present-value, 1 in flight per client) against Trellis \
         serving the demo building directly on its port, against Trellis with it on a virtual network behind \
         its router port (the request carries DNET/DADR, the answer SNET/SADR), the same with the `firewall` \
         routing policy asked about both (`firewalled`: the rules of examples/router-policy.toml, every rule \
         tried, the default forwards), and against rusty-bacnet's server directly; A/B rotated each step, medians over rounds. Then one gateway with N devices on one \
         virtual network behind one port beside one with a single device: idle resident memory per added \
         device, and one Who-Is to the whole virtual network (a remote broadcast through the router).\n"
    );
    let _ = writeln!(md, "| clients | target | mode | throughput /s | p50 µs | p99 µs | server CPU µs per answer |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for ((c, t, mode), lines) in &hops(results) {
        let f = |key: &str, digits: usize| median(lines, key).map_or("–".into(), |v| format!("{v:.digits$}"));
        let _ = writeln!(
            md,
            "| {c} | {t} | {mode} | {} | {} | {} | {} |",
            f("throughput", 0),
            f("p50_us", 1),
            f("p99_us", 1),
            f("server_cpu_us_per_answer", 2)
        );
    }
    let routed: Vec<&Value> = results.scenario("mstp-routed").map(|(_, l)| l).collect();
    if !routed.is_empty() {
        let _ = writeln!(
            md,
            "\nB/IP → MS/TP through the router (`{}`): the router's MS/TP port is the requesting station; \
             the client reads over B/IP with DNET/DADR.\n",
            results.command_of("mstp-routed").unwrap_or("stress-test mstp --routed")
        );
        let _ = writeln!(md, "| baud | replies/s | wire limit /s | % of the limit | request / reply frame octets |");
        let _ = writeln!(md, "|---|---|---|---|---|");
        for l in routed {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.1} % | {} / {} |",
                l["baud"],
                l["rate_per_s"],
                l["limit_per_s"],
                l["wire_fraction"].as_f64().unwrap_or(0.0) * 100.0,
                l["frame_octets"]["request"],
                l["frame_octets"]["reply"]
            );
        }
    }
    if let Some(l) = scale(results) {
        let _ = writeln!(
            md,
            "\nScale: {} devices behind one port: idle RSS {} KiB (one device: {} KiB), {} KiB per added device; \
             a Who-Is to all of them answered by {} within {} ms, the last after {} ms.",
            l["devices"],
            l["idle_rss_kib"],
            l["idle_rss_kib_one"],
            l["rss_kib_per_device"],
            l["who_is_answered"],
            l["who_is_window_ms"],
            l["who_is_last_ms"]
        );
    }
    md.push('\n');
}
