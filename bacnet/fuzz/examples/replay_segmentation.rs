//! Replays inputs of the `segmentation` fuzz target (files, or every file of
//! a directory) and panics as the target would.
//!
//! With `--trace`, every operation, APDU and event goes to stderr; with
//! `--stats`, the totals of `bacnet_fuzz::segmentation::Stats` over all the
//! inputs are printed: what a corpus reaches.
//!
//! ```text
//! cargo run --manifest-path bacnet/fuzz/Cargo.toml --example replay_segmentation -- --trace CRASH
//! cargo run --manifest-path bacnet/fuzz/Cargo.toml --example replay_segmentation -- --stats bacnet/fuzz/corpus/segmentation
//! ```

use bacnet_fuzz::segmentation::{Scenario, Stats, run_scenario};
use std::path::PathBuf;

fn main() {
    let (mut trace, mut stats, mut files) = (false, false, Vec::new());
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--trace" => trace = true,
            "--stats" => stats = true,
            path => {
                let path = PathBuf::from(path);
                if path.is_dir() {
                    let mut entries: Vec<_> = std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()).collect();
                    entries.sort();
                    files.extend(entries);
                } else {
                    files.push(path);
                }
            }
        }
    }
    let mut total = Stats::default();
    for path in &files {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if trace {
            eprintln!("== {}", path.display());
        }
        total += run_scenario(&Scenario::decode(&data), trace);
    }
    if stats {
        println!("{} inputs: {total:#?}", files.len());
    }
}
