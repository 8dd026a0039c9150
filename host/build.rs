//! Builds the plugins we ship (`plugins/`, a separate cargo workspace) for
//! `wasm32-wasip2` and tells the host crate where the components are:
//! `TRELLIS_PLUGIN_<NAME>` (one per entry of `PLUGINS`) hold paths to
//! `.wasm` files (the object model `demo_building` and the routing policies
//! `firewall` and `broadcast_guard`, the applications `alarm_threshold`,
//! `schedule` and `point_mapping` are
//! embedded with `include_bytes!`).
//!
//! The nested build gets its own target directory beside the outer one
//! (`<target>/wasm-plugins`), shared by debug, test, clippy and doc builds
//! and never locked by the outer cargo, and a clean environment: nothing of
//! the outer build's flags, wrappers or target leaks into it.
//!
//! `TRELLIS_SKIP_PLUGIN_BUILD=1` skips the nested build and points every
//! variable at an empty placeholder (the host then fails to load them with a
//! clear error), for tools that only need the host to type-check.

use std::path::{Path, PathBuf};
use std::process::Command;

const PLUGINS: [(&str, &str); 10] = [
    ("TRELLIS_PLUGIN_DEMO_BUILDING", "demo_building"),
    ("TRELLIS_PLUGIN_BULK_OBJECTS", "bulk_objects"),
    ("TRELLIS_PLUGIN_MISBEHAVE", "misbehave"),
    ("TRELLIS_PLUGIN_FIREWALL", "firewall"),
    ("TRELLIS_PLUGIN_BROADCAST_GUARD", "broadcast_guard"),
    ("TRELLIS_PLUGIN_MISBEHAVE_POLICY", "misbehave_policy"),
    ("TRELLIS_PLUGIN_ALARM_THRESHOLD", "alarm_threshold"),
    ("TRELLIS_PLUGIN_MISBEHAVE_APP", "misbehave_app"),
    ("TRELLIS_PLUGIN_SCHEDULE", "schedule"),
    ("TRELLIS_PLUGIN_POINT_MAPPING", "point_mapping"),
];

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ has a parent").to_path_buf();
    let plugins = root.join("plugins");
    println!("cargo:rerun-if-env-changed=TRELLIS_SKIP_PLUGIN_BUILD");
    watch_sources(&root);

    let out_dir = PathBuf::from(env("OUT_DIR"));
    if std::env::var_os("TRELLIS_SKIP_PLUGIN_BUILD").is_some_and(|v| v != "0") {
        return placeholders(&out_dir, "TRELLIS_SKIP_PLUGIN_BUILD is set");
    }
    if !plugins.join("Cargo.toml").exists() {
        println!("cargo:rerun-if-changed={}", plugins.join("Cargo.toml").display());
        return placeholders(&out_dir, "plugins/Cargo.toml does not exist yet");
    }
    check_target_installed();

    // OUT_DIR is <target>[/<triple>]/<profile>/build/<pkg>-<hash>/out: a
    // build for another triple (`--target`) shares the native build's
    // plugins (they are wasm whatever the host is).
    let mut above_profile = out_dir.ancestors().nth(4).expect("OUT_DIR is inside a target directory");
    if std::env::var("TARGET").is_ok_and(|t| above_profile.file_name().is_some_and(|name| name == t.as_str())) {
        above_profile = above_profile.parent().expect("a triple's directory is inside the target directory");
    }
    let target_dir = above_profile.join("wasm-plugins");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--target")
        .arg(TARGET)
        .arg("--manifest-path")
        .arg(plugins.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&plugins);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let leaks = key.starts_with("CARGO_") && !matches!(key, "CARGO_HOME" | "CARGO_MAKEFLAGS" | "CARGO_NET_OFFLINE")
            || matches!(
                key,
                "RUSTFLAGS"
                    | "RUSTDOCFLAGS"
                    | "RUSTC"
                    | "RUSTC_WRAPPER"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "RUSTDOC"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "CLIPPY_ARGS"
                    | "CLIPPY_CONF_DIR"
                    | "__CARGO_FIX_PLZ"
            );
        if leaks {
            cmd.env_remove(key);
        }
    }
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run cargo for the plugins workspace: {e}"));
    if !status.success() {
        panic!(
            "building the plugins workspace for {TARGET} failed ({status}); run \
             `cargo build --release --target {TARGET} --manifest-path plugins/Cargo.toml` to see why"
        );
    }
    let dir = target_dir.join(TARGET).join("release");
    for (var, file) in PLUGINS {
        let path = dir.join(format!("{file}.wasm"));
        if !path.exists() {
            panic!("the plugins build did not produce {}", path.display());
        }
        println!("cargo:rustc-env={var}={}", path.display());
    }
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("cargo did not set {key}"))
}

/// Rebuild when anything the plugins are made of changes. Directories are
/// listed member by member so `plugins/target` (if someone builds there) is
/// not scanned.
fn watch_sources(root: &Path) {
    let watch = |p: PathBuf| println!("cargo:rerun-if-changed={}", p.display());
    for dir in [
        "wit",
        "guest-sdk/src",
        "guest-sdk/Cargo.toml",
        "guest-routing-sdk/src",
        "guest-routing-sdk/Cargo.toml",
        "bacnet/src",
        "bacnet/Cargo.toml",
        "Cargo.toml",
    ] {
        watch(root.join(dir));
    }
    let plugins = root.join("plugins");
    for file in ["Cargo.toml", "Cargo.lock"] {
        watch(plugins.join(file));
    }
    if let Ok(entries) = std::fs::read_dir(&plugins) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && p.file_name().is_some_and(|n| n != "target" && !n.to_string_lossy().starts_with('.')) {
                watch(p);
            }
        }
    }
}

/// Make sure the wasm target's standard library is there: on a fresh
/// machine the pinned toolchain may be installed without it (rustup adds
/// the targets of `rust-toolchain.toml` only when it installs the toolchain
/// itself). When it is missing and rustup is at hand, add it for the
/// toolchain this build runs on, with a one-line note; otherwise fail with
/// the fix.
fn check_target_installed() {
    let Some(sysroot) = sysroot() else { return };
    let installed = |sysroot: &Path| sysroot.join("lib/rustlib").join(TARGET).exists();
    if installed(&sysroot) {
        return;
    }
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN")
        .ok()
        .or_else(|| sysroot.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", TARGET]);
    if !toolchain.is_empty() {
        rustup.args(["--toolchain", &toolchain]);
    }
    let added = rustup.status().is_ok_and(|s| s.success()) && installed(&sysroot);
    if added {
        println!(
            "cargo:warning=installed the {TARGET} target for {toolchain} with rustup: the built-in plugins are built for it"
        );
        return;
    }
    panic!(
        "the {TARGET} target is not installed for {} and `rustup target add {TARGET}` did not install it: \
         install it by hand (or run `.ci/test`, which installs the pinned toolchain and its targets)",
        sysroot.display()
    );
}

/// The sysroot of the compiler this build runs on.
fn sysroot() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).args(["--print", "sysroot"]).output().ok().filter(|o| o.status.success())?;
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn placeholders(out_dir: &Path, why: &str) {
    println!("cargo:warning=plugins not built ({why}); built-in plugins are empty placeholders");
    let empty = out_dir.join("missing-plugin.wasm");
    std::fs::write(&empty, b"").expect("write placeholder");
    for (var, _) in PLUGINS {
        println!("cargo:rustc-env={var}={}", empty.display());
    }
}
