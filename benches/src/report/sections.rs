//! The report's sections for the scenarios beyond `clients` and `mstp`:
//! `objects`, `segmentation`, `mixed`, `cov` and `swap`, and the rows of the
//! targets table they decide.
//!
//! Must never: compare figures from different steps as if they were one, or
//! call a target met on missing data (a missing figure is "–", a target
//! without its figures "not measured").

use super::data::{Results, Spread};
use super::page::verdict;
use super::svg::{Chart, Series, render};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The BACnet servers, in the order the tables list them.
const SERVERS: [&str; 3] = ["trellis", "rusty", "bacpypes3"];

/// Lines of one step (a key) of one target, over rounds.
type Groups<'a, K> = BTreeMap<K, BTreeMap<String, Vec<&'a Value>>>;

fn group<'a, K: Ord>(results: &'a Results, scenario: &'a str, key: impl Fn(&Value) -> Option<K>) -> Groups<'a, K> {
    let mut g: Groups<'a, K> = BTreeMap::new();
    for (_, line) in results.scenario(scenario) {
        if let (Some(k), Some(t)) = (key(line), line["target"].as_str()) {
            g.entry(k).or_default().entry(t.to_string()).or_default().push(line);
        }
    }
    g
}

/// The median over rounds of a field given by a JSON pointer (`/p50_us`).
fn median(lines: Option<&Vec<&Value>>, pointer: &str) -> Option<f64> {
    Spread::of(lines?.iter().filter_map(|l| l.pointer(pointer)?.as_f64())).map(|s| s.median)
}

/// The sum over rounds of a count.
fn sum(lines: Option<&Vec<&Value>>, pointer: &str) -> Option<u64> {
    let lines = lines?;
    let v: Vec<u64> = lines.iter().filter_map(|l| l.pointer(pointer)?.as_u64()).collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

fn count(v: Option<u64>) -> String {
    v.map_or("–".into(), |v| v.to_string())
}

/// Failures of the steps' lines as "admission / timeout / other".
fn failures(lines: Option<&Vec<&Value>>) -> String {
    match (sum(lines, "/failures/admission"), sum(lines, "/failures/timeout"), sum(lines, "/failures/other")) {
        (Some(a), Some(t), Some(o)) => format!("{a} / {t} / {o}"),
        _ => "–".into(),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn section_head(md: &mut String, title: &str, command: &str, text: &str) {
    let _ = writeln!(md, "## {title}\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(md, "{text}\n");
}

fn chart(p: &mut super::page::Page, name: &str, chart: Chart) {
    let _ = writeln!(p.markdown, "![{}]({name})\n", chart.title);
    p.charts.insert(name.to_string(), render(&chart));
}

// ---- objects ----

/// `objects` lines: (clients, in flight) → object count → target.
fn objects_groups(results: &Results) -> BTreeMap<(u64, u64), Groups<'_, u64>> {
    let mut out: BTreeMap<(u64, u64), Groups<'_, u64>> = BTreeMap::new();
    for (_, l) in results.scenario("objects") {
        let (Some(c), Some(k), Some(n), Some(t)) =
            (l["clients"].as_u64(), l["in_flight"].as_u64(), l["objects"].as_u64(), l["target"].as_str())
        else {
            continue;
        };
        out.entry((c, k)).or_default().entry(n).or_default().entry(t.to_string()).or_default().push(l);
    }
    out
}

/// Resident bytes per object of `target`: the idle RSS growth from the
/// smallest to the largest count, per object added.
fn bytes_per_object(by_count: &Groups<'_, u64>, target: &str) -> Option<(f64, u64, u64)> {
    let rss = |n: &u64| median(by_count.get(n)?.get(target), "/idle_rss_kib");
    let (lo, hi) = (by_count.keys().next()?, by_count.keys().next_back()?);
    if hi <= lo {
        return None;
    }
    Some(((rss(hi)? - rss(lo)?) * 1024.0 / (hi - lo) as f64, *lo, *hi))
}

/// The `objects` row of the targets table.
pub fn objects_target(md: &mut String, results: &Results) {
    let goal = "100 → 10,000 objects: flat latency (± 10 %), ≤ 1 KiB resident per Analog Input";
    let groups = objects_groups(results);
    // Ten clients where measured: a single client's round trip is mostly an
    // idle vCPU waking up on this kind of machine, which no database size moves.
    let Some(by_count) = groups.get(&(10, 1)).or_else(|| groups.get(&(1, 1))).or_else(|| groups.values().next()) else {
        let _ = writeln!(md, "| {goal} | not measured | – |");
        return;
    };
    let p50: Vec<f64> = by_count.values().filter_map(|t| median(t.get("trellis"), "/p50_us")).collect();
    let bytes = bytes_per_object(by_count, "trellis");
    match (p50.iter().copied().reduce(f64::min), p50.iter().copied().reduce(f64::max), bytes) {
        (Some(lo), Some(hi), Some((b, from, to))) if lo > 0.0 => {
            let spread = (hi / lo - 1.0) * 100.0;
            let _ = writeln!(
                md,
                "| {goal} | p50 {lo:.1}–{hi:.1} µs over {} counts (+{spread:.0} %, {} clients); {b:.0} B per object ({from} → {to}) | {} |",
                p50.len(),
                by_count
                    .values()
                    .flat_map(|t| t.get("trellis"))
                    .flatten()
                    .next()
                    .and_then(|l| l["clients"].as_u64())
                    .unwrap_or(0),
                verdict(spread <= 10.0 && b <= 1024.0)
            );
        }
        _ => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
}

/// The `objects` section.
pub fn objects_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("objects") else { return };
    section_head(
        &mut p.markdown,
        "`objects`: database size",
        command,
        "A fresh server of each target per object count: Trellis serving N Analog Inputs from the bulk-objects \
         WASM plugin, the peers N extra Analog Values. Its resident memory is read once it answers and has idled \
         half a second; then ReadProperty load reads every object's Present_Value in turn. Bytes per object: \
         the idle resident growth from the smallest to the largest count, divided by the objects added. The \
         echo has no objects: its row is the floor of a round trip.",
    );
    for ((clients, in_flight), by_count) in objects_groups(results) {
        let md = &mut p.markdown;
        let _ = writeln!(md, "### {clients} client(s) × {in_flight} in flight\n");
        let _ = writeln!(
            md,
            "| objects | p50 µs trellis / rusty / bacpypes3 / echo | p99 µs trellis / rusty / bacpypes3 | throughput /s trellis / rusty / bacpypes3 | idle RSS MB trellis / rusty / bacpypes3 | start-up ms trellis / rusty / bacpypes3 | trellis failures |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for (n, targets) in &by_count {
            let per = |ts: &[&str], pointer: &str, scale: f64, digits: usize| {
                ts.iter()
                    .map(|t| fmt(median(targets.get(*t), pointer).map(|v| v * scale), digits))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {} | {} | {} | {} |",
                per(&["trellis", "rusty", "bacpypes3", "echo"], "/p50_us", 1.0, 1),
                per(&SERVERS, "/p99_us", 1.0, 0),
                per(&SERVERS, "/throughput", 1.0, 0),
                per(&SERVERS, "/idle_rss_kib", 1.0 / 1024.0, 1),
                per(&SERVERS, "/ready_ms", 1.0, 0),
                failures(targets.get("trellis")),
            );
        }
        let per_object: Vec<String> = SERVERS
            .iter()
            .map(|t| match bytes_per_object(&by_count, t) {
                Some((b, _, _)) => format!("{t} {b:.0} B"),
                None => format!("{t} –"),
            })
            .collect();
        let _ = writeln!(md, "\nResident bytes per object: {}.\n", per_object.join(", "));
        let series = SERVERS
            .iter()
            .chain(std::iter::once(&"echo"))
            .map(|t| Series {
                name: (*t).to_string(),
                points: by_count
                    .iter()
                    .filter_map(|(n, ts)| Some((*n as f64, median(ts.get(*t), "/p50_us")?)))
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        chart(
            p,
            &format!("objects-p50-c{clients}-k{in_flight}.svg"),
            Chart {
                title: format!("ReadProperty p50 vs objects served, {clients} client(s) × {in_flight}"),
                x_label: "objects".into(),
                y_label: "p50, µs".into(),
                x_log: true,
                y_log: true,
                y_from_zero: false,
                series,
                references: Vec::new(),
            },
        );
    }
}

// ---- segmentation ----

/// The `segmentation` section.
pub fn segmentation_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("segmentation") else { return };
    section_head(
        &mut p.markdown,
        "`segmentation`: ReadPropertyMultiple of many objects",
        command,
        "ReadPropertyMultiple of Object_Name, Present_Value, Status_Flags and Units of N objects through our \
         client (Max-APDU 1476, segmented answers accepted, no retries). At 50 objects the request fits one \
         APDU and the answer (about 2 KB) takes two segments; at 90 the answer is about 4 KB; at 250 the \
         request itself is segmented (about 3.8 KB) and the answer is about 11 KB. A request counts as failed \
         if any property in its answer is an error. Only requests sent inside the window count: where a \
         server took longer than the window (or the timeout) for every request, `requests` is 0 and there is \
         no figure. rusty-bacnet 0.14 answers a segmented request with nothing (its 250-object steps) and \
         refuses the 90-object answer with an Abort (counted as admission, out-of-resources).",
    );
    let groups = group(results, "segmentation", |l| {
        Some((l["objects"].as_u64()?, l["clients"].as_u64()?, l["in_flight"].as_u64()?))
    });
    let md = &mut p.markdown;
    let _ = writeln!(
        md,
        "| objects | clients × in flight | requests trellis / rusty / bacpypes3 | throughput /s trellis / rusty / bacpypes3 | trellis ÷ rusty | p50 ms trellis / rusty / bacpypes3 | p99 ms trellis / rusty / bacpypes3 | failures (admission / timeout / other) trellis; rusty; bacpypes3 |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for ((n, c, k), targets) in &groups {
        let requests = SERVERS.iter().map(|t| count(sum(targets.get(*t), "/requests"))).collect::<Vec<_>>().join(" / ");
        let per = |pointer: &str, scale: f64, digits: usize| {
            SERVERS
                .iter()
                .map(|t| fmt(median(targets.get(*t), pointer).map(|v| v * scale), digits))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let fails = SERVERS.iter().map(|t| failures(targets.get(*t))).collect::<Vec<_>>().join("; ");
        let r = ratio(median(targets.get("trellis"), "/throughput"), median(targets.get("rusty"), "/throughput"));
        let _ = writeln!(
            md,
            "| {n} | {c} × {k} | {requests} | {} | {} | {} | {} | {fails} |",
            per("/throughput", 1.0, 0),
            fmt(r, 2),
            per("/p50_us", 1e-3, 2),
            per("/p99_us", 1e-3, 2),
        );
    }
    md.push('\n');
}

// ---- mixed ----

/// The kinds of request of `mixed`, in the order the tables list them.
const KINDS: [&str; 5] = ["read", "rpm", "write", "subscribe", "who-is"];

/// The ReadPropertyMultiple-of-10 row of the targets table (from `mixed`).
pub fn rpm_target(md: &mut String, results: &Results) {
    kind_target(md, results, "ReadPropertyMultiple of 10 values ≤ 1.1 × ReadProperty", "trellis", "rpm", 1.1);
    kind_target(md, results, "WriteProperty ≤ 1.5 × ReadProperty", "trellis", "write", 1.5);
    let journaled = "WriteProperty ≤ 1.5 × ReadProperty with every write journaled and flushed to the disk \
                     (`[device.persistence]` `durability = \"power-loss\"`, `trellis-journal`)";
    kind_target(md, results, journaled, "trellis-journal", "write", 1.5);
    let written = "WriteProperty ≤ 1.5 × ReadProperty with every write journaled, not flushed \
                   (`durability = \"process\"`, `trellis-journal-process`)";
    kind_target(md, results, written, "trellis-journal-process", "write", 1.5);
}

/// One request kind's p50 in `mixed` against ReadProperty's, at each step
/// measured (the verdict needs every step within `bound`).
fn kind_target(md: &mut String, results: &Results, goal: &str, target: &str, kind: &str, bound: f64) {
    let groups = group(results, "mixed", |l| Some((l["clients"].as_u64()?, l["in_flight"].as_u64()?)));
    let pointer = format!("/kinds/{kind}/p50_us");
    let steps: Vec<(u64, f64, f64, f64)> = groups
        .iter()
        .filter_map(|(&(c, _), s)| {
            let t = s.get(target);
            let (k, r) = (median(t, &pointer)?, median(t, "/kinds/read/p50_us")?);
            Some((c, ratio(Some(k), Some(r))?, k, r))
        })
        .collect();
    if steps.is_empty() {
        let _ = writeln!(md, "| {goal} | not measured | – |");
        return;
    }
    let shown: Vec<String> =
        steps.iter().map(|(c, r, k, read)| format!("{r:.2}× at {c} clients ({k:.1} µs vs {read:.1} µs)")).collect();
    let _ = writeln!(
        md,
        "| {goal} | {} (p50 in `mixed`, through our client) | {} |",
        shown.join(", "),
        verdict(steps.iter().all(|s| s.1 <= bound))
    );
}

/// The `mixed` section.
pub fn mixed_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("mixed") else { return };
    let weights = results.scenario("mixed").find_map(|(_, l)| l["weights"].as_str()).unwrap_or("?").to_string();
    section_head(
        &mut p.markdown,
        "`mixed`: a supervisory system's traffic",
        command,
        &format!(
            "Requests drawn by weight ({weights}) through our client, the same sequence on every target: \
             ReadProperty of a Present_Value among 100 objects, ReadPropertyMultiple of 10 Present_Values, \
             WriteProperty to one of 64 commandable Analog Values (which other clients subscribed to, so COV \
             notifications flow too), SubscribeCOV (renewals after the first) and Who-Is (unconfirmed: counted \
             when sent, no latency). Throughput counts every request completed."
        ),
    );
    let groups = group(results, "mixed", |l| Some((l["clients"].as_u64()?, l["in_flight"].as_u64()?)));
    let md = &mut p.markdown;
    let _ = writeln!(
        md,
        "| clients × in flight | throughput /s trellis / rusty / bacpypes3 | trellis ÷ rusty | p50 µs trellis / rusty / bacpypes3 | p99 µs trellis / rusty / bacpypes3 | failures (admission / timeout / other) trellis; rusty; bacpypes3 |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for ((c, k), targets) in &groups {
        let per = |pointer: &str, digits: usize| {
            SERVERS.iter().map(|t| fmt(median(targets.get(*t), pointer), digits)).collect::<Vec<_>>().join(" / ")
        };
        let fails = SERVERS.iter().map(|t| failures(targets.get(*t))).collect::<Vec<_>>().join("; ");
        let r = ratio(median(targets.get("trellis"), "/throughput"), median(targets.get("rusty"), "/throughput"));
        let _ = writeln!(
            md,
            "| {c} × {k} | {} | {} | {} | {} | {fails} |",
            per("/throughput", 0),
            fmt(r, 2),
            per("/p50_us", 0),
            per("/p99_us", 0)
        );
    }
    let _ = writeln!(md, "\nPer kind of request, p50 µs trellis / rusty / bacpypes3:\n");
    let _ = writeln!(md, "| clients × in flight | {} |", KINDS.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(KINDS.len()));
    for ((c, k), targets) in &groups {
        let cells: Vec<String> = KINDS
            .iter()
            .map(|kind| {
                if *kind == "who-is" {
                    return "(sent)".to_string();
                }
                SERVERS
                    .iter()
                    .map(|t| fmt(median(targets.get(*t), &format!("/kinds/{kind}/p50_us")), 0))
                    .collect::<Vec<_>>()
                    .join(" / ")
            })
            .collect();
        let _ = writeln!(md, "| {c} × {k} | {} |", cells.join(" | "));
    }
    md.push('\n');
}

// ---- cov ----

/// The `cov` section.
pub fn cov_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("cov") else { return };
    section_head(
        &mut p.markdown,
        "`cov`: 1,024 subscriptions and a writer",
        command,
        "16 subscribers (one UDP port each) subscribe to the same 64 commandable Analog Values: 1,024 \
         subscriptions, each value watched 16 times. Then a writer changes the values round-robin at a fixed \
         rate; each acknowledged write owes 16 notifications. A notification counts when it names the object \
         and the value written (a stale or repeated one does not); its delay runs from the write's send to its \
         arrival. Missing = owed − received after waiting up to the timeout.",
    );
    let groups = group(results, "cov", |l| l["writes_per_sec"].as_u64());
    let md = &mut p.markdown;
    let _ = writeln!(
        md,
        "| writes /s | target | subscriptions (failed) | subscribing took ms | initial notifications | writes (failed) | owed | received | missing | delay p50 / p99 / max ms | server CPU |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for (rate, targets) in &groups {
        for t in SERVERS {
            let Some(lines) = targets.get(t) else { continue };
            let l = Some(lines);
            let _ = writeln!(
                md,
                "| {rate} | {t} | {} ({}) | {} | {} | {} ({}) | {} | {} | {} | {} / {} / {} | {} |",
                fmt(median(l, "/subscriptions"), 0),
                fmt(median(l, "/subscription_failures"), 0),
                fmt(median(l, "/subscribe_ms"), 0),
                fmt(median(l, "/initial_notifications"), 0),
                count(sum(l, "/writes")),
                count(sum(l, "/write_failures")),
                count(sum(l, "/expected")),
                count(sum(l, "/received")),
                count(sum(l, "/missing")),
                fmt(median(l, "/p50_us").map(|v| v / 1e3), 2),
                fmt(median(l, "/p99_us").map(|v| v / 1e3), 2),
                fmt(median(l, "/max_us").map(|v| v / 1e3), 2),
                fmt(median(l, "/server_cpu"), 2),
            );
        }
    }
    md.push('\n');
}

// ---- cost ----

/// The per-request cost row of the targets table.
pub fn cost_target(md: &mut String, results: &Results) {
    let goal = "instructions and allocations per ReadProperty reported; allocations ≤ 2";
    let Some((_, l)) = results.scenario("cost").next() else {
        let _ = writeln!(md, "| {goal} | not measured | – |");
        return;
    };
    match l["allocations_per_request"].as_f64() {
        Some(a) => {
            let instructions = l["instructions_per_request"]
                .as_f64()
                .map_or("instructions not counted".into(), |i| format!("{i:.0} instructions"));
            let _ = writeln!(md, "| {goal} | {a:.2} allocations, {instructions} per request | {} |", verdict(a <= 2.0));
        }
        None => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
}

/// The `cost` section.
pub fn cost_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("cost") else { return };
    section_head(
        &mut p.markdown,
        "`cost`: one ReadProperty, counted",
        command,
        "The gateway (demo-building plugin, the B/IP endpoint on a shard: one thread from datagram to answer, \
         as `trellis run` serves it) runs inside `stress-test`, whose global allocator counts every \
         allocation; one client thread sends sequential ReadProperty requests from a pre-encoded datagram (it \
         allocates nothing per request), so the steady-state counts are the server's: the endpoint, the \
         server state machine, the dispatch and the guest call. The cold start runs from \
         before the engine starts to the first answer, with the compiled component already in the cache \
         (a restart; the very first start also compiles). Instructions per request are the difference of two \
         runs under `valgrind --tool=callgrind` with 200 and 1,200 requests, after a run that primes the \
         cache (user-space instructions of every thread, the client's few included; system calls are not \
         instructions here).",
    );
    let md = &mut p.markdown;
    let _ = writeln!(
        md,
        "| requests | allocations per request | bytes per request | instructions per request | cold start: allocations / bytes / ms / instructions | mean round trip µs (sequential) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for (_, l) in results.scenario("cost") {
        let f = |k: &str, d: usize| fmt(l[k].as_f64(), d);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} / {} / {} / {} | {} |",
            f("requests", 0),
            f("allocations_per_request", 2),
            f("bytes_per_request", 0),
            f("instructions_per_request", 0),
            f("cold_allocations", 0),
            f("cold_bytes", 0),
            f("cold_ms", 0),
            f("cold_instructions", 0),
            f("mean_us", 1),
        );
    }
    md.push('\n');
}

// ---- swap ----

/// A round's steady and swapping lines.
type SwapPair<'a> = (Option<&'a Value>, Option<&'a Value>);

/// Steady and swapping lines by (clients, in flight, round).
fn swap_pairs(results: &Results) -> BTreeMap<(u64, u64, u64), SwapPair<'_>> {
    let mut out: BTreeMap<(u64, u64, u64), SwapPair<'_>> = BTreeMap::new();
    for (_, l) in results.scenario("swap") {
        let (Some(c), Some(k), Some(r)) = (l["clients"].as_u64(), l["in_flight"].as_u64(), l["round"].as_u64()) else {
            continue;
        };
        let e = out.entry((c, k, r)).or_default();
        match l["phase"].as_str() {
            Some("steady") => e.0 = Some(l),
            Some("swapping") => e.1 = Some(l),
            _ => {}
        }
    }
    out
}

/// The hot-swap row of the targets table.
pub fn swap_target(md: &mut String, results: &Results) {
    let goal = "hot swap under 10-client load: 0 failed requests over 100 swaps; p99 during swaps ≤ 2 × steady";
    let pairs: Vec<(&Value, &Value)> = swap_pairs(results).into_values().filter_map(|(s, w)| Some((s?, w?))).collect();
    if pairs.is_empty() {
        let _ = writeln!(md, "| {goal} | not measured | – |");
        return;
    }
    let swaps: u64 = pairs.iter().filter_map(|(_, w)| w["swaps_in_window"].as_u64()).sum();
    let failed: u64 = pairs
        .iter()
        .filter_map(|(_, w)| {
            let f = &w["failures"];
            Some(f["admission"].as_u64()? + f["timeout"].as_u64()? + f["other"].as_u64()?)
        })
        .sum();
    let swap_failures: u64 = pairs.iter().filter_map(|(_, w)| w["swap_failures"].as_u64()).sum();
    let worst = pairs
        .iter()
        .filter_map(|(s, w)| ratio(w["p99_us"].as_f64(), s["p99_us"].as_f64()))
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));
    let met = failed == 0 && swap_failures == 0 && swaps >= 100 * pairs.len() as u64 && worst.is_some_and(|r| r <= 2.0);
    let _ = writeln!(
        md,
        "| {goal} | {failed} failed requests over {swaps} swaps in the windows ({swap_failures} swaps failed); p99 swapping ÷ steady up to {} | {} |",
        worst.map_or("–".into(), |r| format!("{r:.2}×")),
        verdict(met)
    );
}

/// The `swap` section.
pub fn swap_section(p: &mut super::page::Page, results: &Results) {
    let Some(command) = results.command_of("swap") else { return };
    section_head(
        &mut p.markdown,
        "`swap`: hot swaps under load (Trellis only)",
        command,
        "Trellis serves the demo building; each round runs the same ReadProperty load twice: `steady`, then \
         `swapping`, during which `trellis plugin swap` (the admin socket) replaces the plugin with the \
         demo-building component from a file, the requested number of times spread over the window. Load is \
         the time to load and instantiate the new component beside the running one (from the compiled-component \
         cache); pause is the time from the state export to the new instance serving. No peer can swap its \
         object model while serving, so there is nothing to compare with.",
    );
    let md = &mut p.markdown;
    let _ = writeln!(
        md,
        "| clients × in flight | round | swaps in the window (failed), per second | throughput /s steady / swapping | p50 µs steady / swapping | p99 µs steady / swapping | p99 ratio | failed requests steady / swapping | load ms p50 / max | pause µs p50 / p99 / max |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    for ((c, k, round), (steady, swapping)) in swap_pairs(results) {
        let f = |l: Option<&Value>, key: &str, digits: usize| fmt(l.and_then(|l| l[key].as_f64()), digits);
        let failed = |l: Option<&Value>| {
            l.and_then(|l| {
                let f = &l["failures"];
                Some(f["admission"].as_u64()? + f["timeout"].as_u64()? + f["other"].as_u64()?)
            })
            .map_or("–".into(), |v| v.to_string())
        };
        let r = ratio(swapping.and_then(|l| l["p99_us"].as_f64()), steady.and_then(|l| l["p99_us"].as_f64()));
        let _ = writeln!(
            md,
            "| {c} × {k} | {round} | {} ({}), {} /s | {} / {} | {} / {} | {} / {} | {} | {} / {} | {} / {} | {} / {} / {} |",
            f(swapping, "swaps_in_window", 0),
            f(swapping, "swap_failures", 0),
            f(swapping, "swaps_per_sec", 0),
            f(steady, "throughput", 0),
            f(swapping, "throughput", 0),
            f(steady, "p50_us", 0),
            f(swapping, "p50_us", 0),
            f(steady, "p99_us", 0),
            f(swapping, "p99_us", 0),
            fmt(r, 2),
            failed(steady),
            failed(swapping),
            f(swapping, "load_ms_p50", 1),
            f(swapping, "load_ms_max", 1),
            f(swapping, "pause_us_p50", 0),
            f(swapping, "pause_us_p99", 0),
            f(swapping, "pause_us_max", 0),
        );
    }
    md.push('\n');
    let pairs = swap_pairs(results);
    let series = |phase: usize, name: &str| Series {
        name: name.into(),
        points: pairs
            .iter()
            .filter_map(|((_, _, round), pair)| {
                let l = if phase == 0 { pair.0 } else { pair.1 };
                Some((*round as f64, l?["p99_us"].as_f64()?))
            })
            .collect(),
    };
    if pairs.len() > 1 {
        chart(
            p,
            "swap-p99.svg",
            Chart {
                title: "ReadProperty p99, steady and while swapping, per round".into(),
                x_label: "round".into(),
                y_label: "p99, µs".into(),
                x_log: false,
                y_log: false,
                y_from_zero: true,
                series: vec![series(0, "steady"), series(1, "swapping")],
                references: Vec::new(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::data::Run;
    use super::super::page::Page;
    use super::*;
    use serde_json::json;

    fn results(lines: Vec<Value>) -> Results {
        Results { machine: json!({}), runs: vec![Run { name: "x".into(), command: "stress-test x".into(), lines }] }
    }

    fn objects(target: &str, n: u64, p50: f64, idle_rss_kib: u64) -> Value {
        json!({"scenario": "objects", "target": target, "clients": 1, "in_flight": 1, "objects": n,
               "p50_us": p50, "p99_us": p50 * 2.0, "throughput": 1e6 / p50, "idle_rss_kib": idle_rss_kib,
               "failures": {"admission": 0, "timeout": 0, "other": 0}, "round": 1})
    }

    #[test]
    fn bytes_per_object_come_from_the_idle_growth_between_the_extreme_counts() {
        let r = results(vec![
            objects("trellis", 100, 30.0, 10_000),
            objects("trellis", 1000, 31.0, 10_500),
            objects("trellis", 10_000, 32.0, 19_900),
        ]);
        let mut md = String::new();
        objects_target(&mut md, &r);
        // (19,900 − 10,000) KiB × 1024 / 9,900 objects = 1,024 B.
        assert!(md.contains("1024 B per object (100 → 10000)"), "{md}");
        assert!(md.contains("(+7 %, 1 clients)") && md.contains("**met**"), "{md}");
        let mut p = Page { markdown: String::new(), charts: BTreeMap::new() };
        objects_section(&mut p, &r);
        assert!(p.markdown.contains("Command: `stress-test x`"));
        assert!(p.charts.contains_key("objects-p50-c1-k1.svg"));
    }

    #[test]
    fn latency_that_grows_with_the_database_misses_the_flat_target() {
        let r = results(vec![objects("trellis", 100, 30.0, 10_000), objects("trellis", 10_000, 40.0, 10_100)]);
        let mut md = String::new();
        objects_target(&mut md, &r);
        assert!(md.contains("(+33 %, 1 clients)") && md.contains("**missed**"), "{md}");
    }

    fn swap(phase: &str, round: u64, p99: f64, timeouts: u64, swaps: u64) -> Value {
        json!({"scenario": "swap", "target": "trellis", "clients": 10, "in_flight": 1, "phase": phase,
               "round": round, "p99_us": p99, "throughput": 1000.0, "p50_us": 100.0, "swaps_in_window": swaps,
               "swap_failures": 0, "failures": {"admission": 0, "timeout": timeouts, "other": 0}})
    }

    #[test]
    fn a_swap_round_is_judged_on_failures_swaps_done_and_the_p99_ratio() {
        let good = results(vec![swap("steady", 1, 500.0, 0, 0), swap("swapping", 1, 900.0, 0, 100)]);
        let mut md = String::new();
        swap_target(&mut md, &good);
        assert!(
            md.contains("0 failed requests over 100 swaps") && md.contains("1.80×") && md.contains("**met**"),
            "{md}"
        );
        let lost = results(vec![swap("steady", 1, 500.0, 0, 0), swap("swapping", 1, 900.0, 3, 100)]);
        let mut md = String::new();
        swap_target(&mut md, &lost);
        assert!(md.contains("3 failed requests") && md.contains("**missed**"), "{md}");
        let slow = results(vec![swap("steady", 1, 500.0, 0, 0), swap("swapping", 1, 1100.0, 0, 100)]);
        let mut md = String::new();
        swap_target(&mut md, &slow);
        assert!(md.contains("2.20×") && md.contains("**missed**"), "{md}");
    }

    #[test]
    fn without_the_scenarios_their_targets_are_not_measured_and_no_section_is_written() {
        let r = results(vec![]);
        let mut md = String::new();
        objects_target(&mut md, &r);
        swap_target(&mut md, &r);
        rpm_target(&mut md, &r); // ReadPropertyMultiple, WriteProperty, and WriteProperty journaled two ways
        assert_eq!(md.matches("not measured").count(), 6, "{md}");
        let mut p = Page { markdown: String::new(), charts: BTreeMap::new() };
        for section in [objects_section, segmentation_section, mixed_section, cov_section, swap_section] {
            section(&mut p, &r);
        }
        assert!(p.markdown.is_empty() && p.charts.is_empty());
    }

    #[test]
    fn each_request_kind_is_compared_with_reads_at_every_step_of_mixed() {
        let line = |clients: u64, read: f64, rpm: f64, write: f64| {
            json!({"scenario": "mixed", "target": "trellis", "clients": clients, "in_flight": 1,
                   "kinds": {"read": {"p50_us": read}, "rpm": {"p50_us": rpm}, "write": {"p50_us": write}}})
        };
        let mut md = String::new();
        rpm_target(&mut md, &results(vec![line(1, 50.0, 54.0, 70.0), line(10, 60.0, 70.0, 60.0)]));
        assert!(md.contains("1.08× at 1 clients (54.0 µs vs 50.0 µs), 1.17× at 10 clients"), "{md}");
        assert!(md.contains("ReadProperty | 1.08× at 1") && md.contains("**missed**"), "rpm: one step over 1.1: {md}");
        assert!(md.contains("1.40× at 1 clients (70.0 µs vs 50.0 µs), 1.00× at 10 clients"), "{md}");
        assert!(md.lines().nth(1).is_some_and(|l| l.contains("**met**")), "write: every step within 1.5: {md}");
    }

    #[test]
    fn cov_rows_show_owed_received_and_missing_notifications() {
        let line = json!({"scenario": "cov", "target": "rusty", "writes_per_sec": 100, "subscriptions": 1024,
            "subscription_failures": 0, "subscribe_ms": 41.0, "initial_notifications": 1024, "writes": 200,
            "write_failures": 0, "expected": 3200, "received": 3190, "missing": 10, "p50_us": 900.0,
            "p99_us": 5000.0, "max_us": 9000.0, "server_cpu": 0.5, "round": 1});
        let mut p = Page { markdown: String::new(), charts: BTreeMap::new() };
        cov_section(&mut p, &results(vec![line]));
        assert!(
            p.markdown.contains(
                "| 100 | rusty | 1024 (0) | 41 | 1024 | 200 (0) | 3200 | 3190 | 10 | 0.90 / 5.00 / 9.00 | 0.50 |"
            ),
            "{}",
            p.markdown
        );
    }
}
