//! The report's `amplification` section: octets out ÷ octets in per target
//! and attack, from `stress-test amplification`.
//!
//! Must never: show a ratio without the octets it came from, or a figure
//! for an attack a target's lines do not hold ("–" instead).

use super::data::Results;
use super::page::Page;
use crate::scenario::amplification::ATTACKS;
use std::fmt::Write as _;

/// The BACnet servers, in the order the table lists them.
const SERVERS: [&str; 3] = ["trellis", "rusty", "bacpypes3"];

/// Write the section, if the results hold any `amplification` line.
pub fn amplification_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("amplification") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `amplification`: what a blind acknowledger draws\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "A 17-octet ReadProperty of the Device's Object_List (5,000 extra objects: ~25 KB, 18 segments), \
         accepting more than 64 segments, then: no Segment-ACK (`no-ack`); one Segment-ACK for segment 0 \
         claiming window 127 (`blind-ack-127`); a Segment-ACK for every sequence number at once \
         (`ack-every-segment`); `blind-ack-127` four times from each of 20 ports of one address \
         (`flood-20-ports`). UDP payload octets, counted until the target has been quiet for 5 s. With a \
         spoofed source, the ratio is what a reflection attack gains. Trellis clamps the window to the 16 it \
         proposes, sends no segment more than 1 + retries times and bounds each address to 256 KiB/s of \
         segmented answers (burst 512 KiB).\n"
    );
    let _ = writeln!(md, "| attack | {} |", SERVERS.map(|t| format!("{t}: out ÷ in (octets out)")).join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(SERVERS.len()));
    for attack in ATTACKS {
        let cells = SERVERS.map(|target| {
            let line = results
                .scenario("amplification")
                .map(|(_, l)| l)
                .find(|l| l["target"] == target && l["attack"] == attack);
            match line.and_then(|l| Some((l["ratio"].as_f64()?, l["octets_out"].as_u64()?))) {
                Some((ratio, out)) => format!("{ratio:.0}× ({out})"),
                None => "–".into(),
            }
        });
        let _ = writeln!(md, "| `{attack}` | {} |", cells.join(" | "));
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::super::data::Run;
    use super::*;
    use serde_json::json;

    #[test]
    fn each_attack_is_a_row_and_a_missing_figure_a_dash() {
        let line = |target: &str, attack: &str, ratio: f64, out: u64| {
            json!({"scenario": "amplification", "target": target, "attack": attack, "ratio": ratio,
                   "octets_out": out, "octets_in": 27})
        };
        let lines = vec![line("trellis", "blind-ack-127", 3567.8, 96_330), line("rusty", "blind-ack-127", 274.4, 7410)];
        let results = Results {
            machine: json!({}),
            runs: vec![Run { name: "a".into(), command: "stress-test amplification".into(), lines }],
        };
        let mut page = Page { markdown: String::new(), charts: Default::default() };
        amplification_section(&mut page, &results);
        let md = page.markdown;
        assert!(md.contains("Command: `stress-test amplification`"), "{md}");
        assert!(md.contains("| `blind-ack-127` | 3568× (96330) | 274× (7410) | – |"), "{md}");
        assert!(md.contains("| `no-ack` | – | – | – |"), "{md}");
    }
}
