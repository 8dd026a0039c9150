//! The report's `idle-memory` section and its target row: memory per extra
//! idle plugin instance, per kind (the target is the demo object model's),
//! from `stress-test idle-memory`.
//!
//! Must never: show the resident figure without the proportional one (the
//! compiled code is mapped once per load: resident counts each mapping,
//! proportional shares them).

use super::data::Results;
use super::page::{Page, verdict};
use std::fmt::Write as _;

/// The target: at most this many KiB per extra idle instance.
const TARGET_KIB: u64 = 256;

/// The target row: the pooling allocator's resident growth per instance.
pub fn idle_memory_target(md: &mut String, results: &Results) {
    let goal = format!("idle object-model instance of the demo plugin: ≤ {TARGET_KIB} KiB each after the first");
    let pooled = results
        .scenario("idle-memory")
        .map(|(_, l)| l)
        .find(|l| l["kind"] == "object-model" && l["pooling"].as_bool() == Some(true));
    match pooled.and_then(|l| Some((l["per_extra_rss_kib"].as_u64()?, l["per_extra_pss_kib"].as_u64()?))) {
        Some((rss, pss)) => {
            let _ = writeln!(
                md,
                "| {goal} | {rss} KiB resident ({pss} KiB proportional), pooling allocator | {} |",
                verdict(rss <= TARGET_KIB)
            );
        }
        None => {
            let _ = writeln!(md, "| {goal} | not measured | – |");
        }
    }
}

/// The `idle-memory` section.
pub fn idle_memory_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("idle-memory") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `idle-memory`: one more idle plugin instance\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "The plugin runtime runs inside `stress-test`, as `trellis run` uses it: one engine, \
         the component loaded once per instance from the compiled-component cache, then left idle: the \
         demo-building object model (one per served device) called once (its state exported), the \
         broadcast-guard routing policy (one per configured policy) configured. Resident (`VmRSS`) and proportional (`Pss`, a \
         page mapped k times counts 1/k) set sizes of the process; per extra instance is the growth from the \
         first instance to all, divided by the instances added. The first instance (the compiled code's \
         first mapping, the engine's first allocations) is apart. Each row after the first runs in the same \
         process, so its first instance may reuse what the allocator kept.\n"
    );
    let _ = writeln!(
        md,
        "| kind (plugin) | allocator | extra instances | first instance KiB (RSS / PSS) | per extra instance KiB (RSS / PSS) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (_, l) in results.scenario("idle-memory") {
        let n = |k: &str| l[k].as_u64().map_or("–".to_string(), |v| v.to_string());
        let _ = writeln!(
            md,
            "| {} ({}) | {} | {} | {} / {} | {} / {} |",
            l["kind"].as_str().unwrap_or("?"),
            l["plugin"].as_str().unwrap_or("?"),
            if l["pooling"].as_bool() == Some(true) { "pooling" } else { "on demand" },
            n("extra_instances"),
            n("first_instance_rss_kib"),
            n("first_instance_pss_kib"),
            n("per_extra_rss_kib"),
            n("per_extra_pss_kib"),
        );
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::Run;
    use serde_json::json;

    fn results(per_extra_rss_kib: u64) -> Results {
        let line = |pooling: bool, rss: u64| {
            json!({"scenario": "idle-memory", "kind": "object-model", "plugin": "demo-building", "pooling": pooling, "extra_instances": 32, "first_instance_rss_kib": 2788,
                   "first_instance_pss_kib": 2788, "per_extra_rss_kib": rss, "per_extra_pss_kib": 79})
        };
        Results {
            machine: json!({"cpus": 2}),
            runs: vec![Run {
                name: "idle-memory".into(),
                command: "stress-test idle-memory".into(),
                lines: vec![line(true, per_extra_rss_kib), line(false, 125)],
            }],
        }
    }

    #[test]
    fn the_target_row_judges_the_pooling_allocators_resident_growth() {
        let mut md = String::new();
        idle_memory_target(&mut md, &results(151));
        assert!(md.contains("151 KiB resident (79 KiB proportional)") && md.contains(verdict(true)), "{md}");
        let mut md = String::new();
        idle_memory_target(&mut md, &results(300));
        assert!(md.contains(verdict(false)), "{md}");
        let mut md = String::new();
        idle_memory_target(&mut md, &Results { machine: json!({}), runs: Vec::new() });
        assert!(md.contains("not measured"), "{md}");
    }
}
