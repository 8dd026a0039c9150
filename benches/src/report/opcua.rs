//! The report's `opcua` section: Read throughput of Trellis's OPC UA server
//! beside open62541, async-opcua, o6 and asyncua (one native client for
//! all), the library comparison behind the same point source, the COV →
//! DataChange latency and the memory per session and monitored item, from
//! `stress-test opcua`.
//!
//! Must never: show a ratio without the rates it came from.

use super::data::Results;
use super::page::Page;
use std::fmt::Write as _;

/// Write the section, if the results hold any `opcua` line.
pub fn opcua_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("opcua") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `opcua`: Reads beside open62541, o6, async-opcua and asyncua\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "100 variables, one value per Read, N client processes × 32 Reads in flight, the same client \
         (async-opcua's, native) against every server. *trellis* is `trellis run` with `[opcua]` serving a \
         bulk-objects device of 100 Analog Values: every Read of a value goes to the WebAssembly plugin. \
         *async-opcua-points* and *open62541-points* are the library comparison: the same point source and \
         plugin behind each stack. *open62541*, *async-opcua*, *o6* and *asyncua* hold plain Int32 values.\n"
    );
    let lines: Vec<_> = results.scenario("opcua").filter(|(_, l)| l["step"] == "reads").map(|(_, l)| l).collect();
    let mut clients: Vec<u64> = lines.iter().filter_map(|l| l["clients"].as_u64()).collect();
    clients.sort_unstable();
    clients.dedup();
    let mut servers: Vec<&str> = Vec::new();
    for l in &lines {
        if let Some(s) = l["server"].as_str()
            && !servers.contains(&s)
        {
            servers.push(s);
        }
    }
    let rate = |server: &str, c: u64| {
        lines.iter().find(|l| l["server"] == server && l["clients"] == c).and_then(|l| l["reads_per_s"].as_f64())
    };
    let _ = write!(md, "| server |");
    for c in &clients {
        let _ = write!(md, " {c} client{}: Reads/s (× open62541) |", if *c == 1 { "" } else { "s" });
    }
    let _ = writeln!(md, "\n|---|{}", "---|".repeat(clients.len()));
    for s in &servers {
        let _ = write!(md, "| {s} |");
        for &c in &clients {
            match (rate(s, c), rate("open62541", c)) {
                (Some(r), Some(base)) => {
                    let _ = write!(md, " {r:.0} ({:.2}×) |", r / base);
                }
                (Some(r), None) => {
                    let _ = write!(md, " {r:.0} |");
                }
                _ => {
                    let _ = write!(md, " – |");
                }
            }
        }
        md.push('\n');
    }
    md.push('\n');
    for (_, l) in results.scenario("opcua") {
        let line = match l["step"].as_str() {
            Some("latency") => format!(
                "- BACnet COV → OPC UA DataChange through `trellis run`, {} writes/s: p50 {} µs, p99 {} µs, max {} µs \
                 ({} writes, {} not notified: COV reports the latest value of a burst)",
                l["writes_per_s"],
                l["cov_to_datachange_us"]["p50"],
                l["cov_to_datachange_us"]["p99"],
                l["cov_to_datachange_us"]["max"],
                l["writes"],
                l["not_arrived"]
            ),
            Some("memory") => format!(
                "- memory: {} KiB per session ({} sessions), {} bytes per monitored item ({} items)",
                l["kib_per_session"], l["sessions"], l["bytes_per_monitored_item"], l["monitored_items"]
            ),
            _ => continue,
        };
        let _ = writeln!(md, "{line}");
    }
    md.push('\n');
}
