//! The benchmark report: results gathered from the stress-test's JSON lines
//! ([`data`]), rendered as Markdown ([`page`]) with SVG charts ([`svg`]).
//!
//! Must never: write a figure without the command that produced it, or
//! leave charts of an earlier run beside a new page (the SVGs it wrote
//! before and no longer writes are removed).

pub mod amplification;
pub mod data;
pub mod devices;
pub mod idle_memory;
pub mod mqtt;
pub mod opcua;
pub mod page;
pub mod python;
pub mod router;
pub mod sections;
pub mod svg;

use anyhow::Context;
use std::path::Path;

/// Write `results.json`, `README.md` and the charts into `out`; the number
/// of files written.
pub fn write(results: &data::Results, out: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let page = page::page(results);
    for entry in std::fs::read_dir(out)?.filter_map(Result::ok) {
        let path = entry.path();
        let stale = path.extension().is_some_and(|e| e == "svg")
            && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| !page.charts.contains_key(n));
        if stale {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    let json = serde_json::to_string_pretty(&results.to_json())?;
    std::fs::write(out.join("results.json"), json + "\n").context("writing results.json")?;
    std::fs::write(out.join("README.md"), &page.markdown).context("writing README.md")?;
    for (name, svg) in &page.charts {
        std::fs::write(out.join(name), format!("{svg}\n")).with_context(|| format!("writing {name}"))?;
    }
    Ok(2 + page.charts.len())
}
