//! The host's crates keep their layering (ARCHITECTURE.md, `host/`): Cargo
//! forbids package cycles by itself, so what this guards are the rules
//! above that — the server and the client never depend on each other, only
//! `trellis-plugin` knows wasmtime, and the model boundary and the network
//! crate depend on none of the crates they sit under.
//!
//! Read from `cargo metadata --no-deps`: every kind of dependency a package
//! declares (normal, build, dev), plus what the workspace crates among them
//! bring in to build (normal and build, transitively).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Package name → its declared dependencies as (package name, kind).
type Graph = BTreeMap<String, Vec<(String, Option<String>)>>;

fn workspace() -> Graph {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let out = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut graph = Graph::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| (d["name"].as_str().expect("name").to_string(), d["kind"].as_str().map(str::to_string)))
            .collect();
        graph.insert(package["name"].as_str().expect("name").to_string(), deps);
    }
    graph
}

/// What building `package` (its library, tests and build script) pulls in:
/// its own dependencies of every kind, and the normal and build
/// dependencies of the workspace crates among them, transitively.
fn reach(graph: &Graph, package: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = graph[package].iter().map(|(name, _)| name.clone()).collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(deps) = graph.get(&name) {
            todo.extend(deps.iter().filter(|(_, kind)| kind.as_deref() != Some("dev")).map(|(n, _)| n.clone()));
        }
    }
    seen
}

#[test]
fn the_host_crates_keep_their_layering() {
    let graph = workspace();
    for crate_ in ["trellis", "trellis-net", "trellis-model", "trellis-plugin", "trellis-server", "trellis-client"] {
        assert!(graph.contains_key(crate_), "{crate_} is not a workspace member any more: update this test");
    }
    // (package, the host crates it must never depend on, why). Besides
    // these, none of them may depend on the binary (`trellis`), and none but
    // trellis-plugin on wasmtime.
    let rules: [(&str, &[&str], &str); 5] = [
        (
            "trellis-net",
            &["trellis-model", "trellis-plugin", "trellis-server", "trellis-client"],
            "the network crate is what the server and the client share: it sits under all of them",
        ),
        (
            "trellis-model",
            &["trellis-plugin", "trellis-server", "trellis-client"],
            "the model boundary knows neither who calls it nor who implements it",
        ),
        (
            "trellis-server",
            &["trellis-plugin", "trellis-client"],
            "the server knows its model only through the ObjectModel trait, and shares only trellis-net with the client",
        ),
        ("trellis-client", &["trellis-plugin", "trellis-server"], "the client shares only trellis-net with the server"),
        ("trellis-plugin", &["trellis-server", "trellis-client"], "the plugin runtime serves a model, nothing more"),
    ];
    for (package, crates, why) in rules {
        let reached = reach(&graph, package);
        let wasmtime: &[&str] = if package == "trellis-plugin" { &[] } else { &["wasmtime", "wasmtime-wasi"] };
        let wrong: Vec<&str> =
            crates.iter().chain(wasmtime).chain(&["trellis"]).copied().filter(|f| reached.contains(*f)).collect();
        assert!(wrong.is_empty(), "{package} depends on {wrong:?}: {why}");
    }
    // Only the plugin runtime knows wasmtime: no other workspace package
    // names it, whatever else it depends on.
    for (package, deps) in &graph {
        for (name, _) in deps {
            if name.starts_with("wasmtime") {
                assert_eq!(package, "trellis-plugin", "{package} depends on {name}: only trellis-plugin may");
            }
        }
    }
}
