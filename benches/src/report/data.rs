//! What a benchmark run left behind, read back: each scenario's JSON lines
//! (`NAME.jsonl`) with the command that produced them (`NAME.cmd`), and the
//! machine they ran on. Aggregation over `--rounds`: medians with min–max.
//!
//! Must never: invent a figure. A missing field stays missing (`None`), and
//! the page says so.

use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One scenario's output.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file's stem (`clients`, `mstp`, …).
    pub name: String,
    /// The command line that produced it.
    pub command: String,
    /// Its JSON lines.
    pub lines: Vec<Value>,
}

/// Everything a report is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// The machine, as [`machine`] described it (and anything the recipe
    /// added in `machine.json`).
    pub machine: Value,
    /// The runs, by name.
    pub runs: Vec<Run>,
}

impl Results {
    /// Read `dir`: every `NAME.jsonl` with its `NAME.cmd`, and
    /// `machine.json` if there is one.
    pub fn load(dir: &Path) -> anyhow::Result<Results> {
        let mut runs = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let value: Value = serde_json::from_str(line)
                    .with_context(|| format!("{}:{}: not a JSON line", path.display(), i + 1))?;
                lines.push(value);
            }
            let command = std::fs::read_to_string(path.with_extension("cmd"))
                .map(|c| c.trim().to_string())
                .with_context(|| format!("{}: no {name}.cmd beside it (which command produced it?)", path.display()))?;
            runs.push(Run { name, command, lines });
        }
        if runs.is_empty() {
            bail!("no *.jsonl in {}", dir.display());
        }
        let mut machine = machine();
        if let Ok(text) = std::fs::read_to_string(dir.join("machine.json")) {
            let extra: Value = serde_json::from_str(&text).context("machine.json")?;
            if let (Value::Object(m), Value::Object(e)) = (&mut machine, extra) {
                m.extend(e);
            }
        }
        Ok(Results { machine, runs })
    }

    /// `results.json`: the machine and every run's lines and command.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "machine": self.machine,
            "runs": self.runs.iter().map(|r| serde_json::json!({
                "name": r.name,
                "command": r.command,
                "lines": r.lines,
            })).collect::<Vec<_>>(),
        })
    }

    /// The lines of `scenario`, with the command of the run they came from.
    pub fn scenario<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        self.runs.iter().flat_map(move |r| {
            r.lines.iter().filter(move |l| l["scenario"] == scenario).map(move |l| (r.command.as_str(), l))
        })
    }

    /// The command that produced `scenario`'s lines (the first run holding any).
    pub fn command_of(&self, scenario: &str) -> Option<&str> {
        self.runs.iter().find(|r| r.lines.iter().any(|l| l["scenario"] == scenario)).map(|r| r.command.as_str())
    }
}

/// This machine: CPU model, CPUs, memory, kernel, Rust, the commit.
pub fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu =
        cpuinfo.lines().find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_string()));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: Option<u64> = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string());
    let output = |program: &str, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    serde_json::json!({
        "cpu": cpu,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory_gib": mem_kib.map(|k| (k as f64 / (1024.0 * 1024.0) * 10.0).round() / 10.0),
        "kernel": kernel,
        "rustc": output("rustc", &["-V"]),
        "commit": output("git", &["rev-parse", "--short", "HEAD"]).map(|c| if dirty { format!("{c} (with local changes)") } else { c }),
        "date": output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
    })
}

/// A figure over rounds: the median, and the least and greatest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The least.
    pub min: f64,
    /// The greatest.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// `None` when no value is finite.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Spread { median, min: v[0], max: v[n - 1], n })
    }
}

/// One `clients` step of one target over its rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientsCell {
    /// Answered requests per second.
    pub throughput: Option<Spread>,
    /// Round trip percentiles, µs.
    pub p50_us: Option<Spread>,
    /// The 99th percentile, µs.
    pub p99_us: Option<Spread>,
    /// Failures over every round: admission Aborts, timeouts, others.
    pub admission: u64,
    /// Timeouts.
    pub timeout: u64,
    /// Other failures.
    pub other: u64,
    /// The server's peak resident set, KiB (the greatest seen).
    pub peak_rss_kib: Option<u64>,
    /// CPU of the server and of the load generator, cores (medians).
    pub server_cpu: Option<f64>,
    /// The load generator's CPU, cores.
    pub client_cpu: Option<f64>,
    /// The server's CPU time per answer, µs.
    pub cpu_us_per_answer: Option<Spread>,
}

/// The `clients` scenario: (in flight, clients) → target → cell.
pub type ClientsTable = BTreeMap<(u64, u64), BTreeMap<String, ClientsCell>>;

/// Gather the `clients` lines by step and target.
pub fn clients_table(results: &Results) -> ClientsTable {
    let mut groups: BTreeMap<(u64, u64), BTreeMap<String, Vec<&Value>>> = BTreeMap::new();
    for (_, line) in results.scenario("clients") {
        let (Some(k), Some(n), Some(t)) =
            (line["in_flight"].as_u64(), line["clients"].as_u64(), line["target"].as_str())
        else {
            continue;
        };
        groups.entry((k, n)).or_default().entry(t.to_string()).or_default().push(line);
    }
    groups
        .into_iter()
        .map(|(step, targets)| {
            let cells = targets
                .into_iter()
                .map(|(target, lines)| {
                    let f = |key: &str| Spread::of(lines.iter().filter_map(|l| l[key].as_f64()));
                    let sum = |key: &str| lines.iter().filter_map(|l| l["failures"][key].as_u64()).sum();
                    let cell = ClientsCell {
                        throughput: f("throughput"),
                        p50_us: f("p50_us"),
                        p99_us: f("p99_us"),
                        admission: sum("admission"),
                        timeout: sum("timeout"),
                        other: sum("other"),
                        peak_rss_kib: lines.iter().filter_map(|l| l["peak_rss_kib"].as_u64()).max(),
                        server_cpu: f("server_cpu").map(|s| s.median),
                        client_cpu: f("client_cpu").map(|s| s.median),
                        cpu_us_per_answer: f("server_cpu_us_per_answer"),
                    };
                    (target, cell)
                })
                .collect();
            (step, cells)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_spread_is_the_median_with_its_range_and_ignores_non_finite_values() {
        let s = Spread::of([3.0, 1.0, f64::NAN, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of([4.0, 1.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of([]), None);
    }

    #[test]
    fn clients_lines_group_by_step_and_target_over_rounds() {
        let line = |target: &str, round: u64, throughput: f64| {
            json!({"scenario": "clients", "target": target, "clients": 10, "in_flight": 1, "throughput": throughput,
                   "p50_us": 100.0, "p99_us": 300.0, "failures": {"admission": round, "timeout": 0, "other": 0},
                   "peak_rss_kib": 1000 + round, "round": round})
        };
        let results = Results {
            machine: json!({}),
            runs: vec![Run {
                name: "clients".into(),
                command: "stress-test clients".into(),
                lines: vec![line("trellis", 1, 10.0), line("trellis", 2, 30.0), line("rusty", 1, 5.0)],
            }],
        };
        let table = clients_table(&results);
        let trellis = &table[&(1, 10)]["trellis"];
        assert_eq!(trellis.throughput.unwrap().median, 20.0);
        assert_eq!((trellis.admission, trellis.peak_rss_kib), (3, Some(1002)));
        assert_eq!(table[&(1, 10)]["rusty"].throughput.unwrap().n, 1);
        assert_eq!(results.command_of("clients"), Some("stress-test clients"));
        assert_eq!(results.command_of("mstp"), None);
    }
}
