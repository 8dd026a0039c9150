//! The report's `mqtt` section: publishing through the gateway's MQTT path
//! beside raw rumqttc, the cold start, the replay after an outage and the
//! BACnet COV → MQTT latency, from `stress-test mqtt`.
//!
//! Must never: show a ratio without the rates it came from.

use super::data::Results;
use super::page::Page;
use std::fmt::Write as _;

/// Write the section, if the results hold any `mqtt` line.
pub fn mqtt_section(p: &mut Page, results: &Results) {
    let Some(command) = results.command_of("mqtt") else { return };
    let md = &mut p.markdown;
    let _ = writeln!(md, "## `mqtt`: point changes to a broker, beside raw rumqttc\n");
    let _ = writeln!(md, "Command: `{command}`\n");
    let _ = writeln!(
        md,
        "The same mosquitto, the same 512-byte JSON payloads over 1,000 point topics, 100 messages in \
         flight on each side; a `mosquitto_sub -C N` process counts them. *trellis* is the gateway's own \
         path (the on-disk spool and the broker link); *raw* is a bare `rumqttc` client. Sides rotate \
         each round.\n"
    );
    let _ = writeln!(
        md,
        "| QoS | raw rumqttc, messages/s (best, median) | trellis (best, median) | median ratio | trellis allocations per message |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (_, l) in results.scenario("mqtt").filter(|(_, l)| l["step"] == "publish") {
        let n = |v: &serde_json::Value| v.as_f64().map_or("–".to_string(), |x| format!("{x:.0}"));
        let _ = writeln!(
            md,
            "| {} | {}, {} | {}, {} | {}× | {} |",
            l["qos"],
            n(&l["raw_rumqttc_per_s"]["best"]),
            n(&l["raw_rumqttc_per_s"]["median"]),
            n(&l["trellis_per_s"]["best"]),
            n(&l["trellis_per_s"]["median"]),
            l["ratio_median"],
            l["trellis_allocations_per_message"]
        );
    }
    md.push('\n');
    for (_, l) in results.scenario("mqtt") {
        let line = match l["step"].as_str() {
            Some("instructions") => format!(
                "- instructions per QoS 1 message on the trellis side (callgrind, spool and link and rumqttc): {}",
                l["instructions_per_message"]
            ),
            Some("cold") => {
                format!("- cold start (spool opened → first message at the subscriber): {} ms", l["first_message_ms"])
            }
            Some("replay") => {
                let per_s = l["per_s"].as_f64().unwrap_or(0.0);
                format!("- replay after an outage: {} messages at {per_s:.0}/s, {} lost", l["messages"], l["lost"])
            }
            Some("latency") => format!(
                "- BACnet COV → MQTT subscriber through `trellis run`, {} writes/s: p50 {} µs, p99 {} µs, max {} µs \
                 ({} writes, {} not arrived)",
                l["writes_per_s"],
                l["cov_to_mqtt_us"]["p50"],
                l["cov_to_mqtt_us"]["p99"],
                l["cov_to_mqtt_us"]["max"],
                l["writes"],
                l["not_arrived"]
            ),
            _ => continue,
        };
        let _ = writeln!(md, "{line}");
    }
    md.push('\n');
}
