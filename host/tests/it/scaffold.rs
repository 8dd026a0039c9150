//! `trellis plugin new`: each kind of project builds as written for
//! wasm32-wasip2, signs with the commands its README gives, and serves —
//! an object model as a device, a routing policy in the router, an
//! application beside the demo building.

use super::gateway::Gateway;
use super::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

fn trellis(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().unwrap();
    assert!(out.status.success(), "trellis {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `trellis plugin new NAME --kind KIND` in `dir`, built (debug, to save
/// time: the release profile is the README's), signed with `key`.
fn make(dir: &Path, name: &str, kind: &str, key: &Path) -> PathBuf {
    trellis(&["plugin", "new", name, "--kind", kind, "--dir", dir.to_str().unwrap()]);
    let project = dir.join(name);
    for file in ["Cargo.toml", "README.md", "rust-toolchain.toml", "src/lib.rs", &format!("{name}.manifest.toml")] {
        assert!(project.join(file).is_file(), "{file} missing");
    }
    // The versions our own plugins build with: no registry lookups, and the
    // same wit-bindgen the SDK pins.
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/Cargo.lock"), project.join("Cargo.lock"))
        .unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target");
    let mut cargo = Command::new("cargo");
    cargo.args(["build", "--target", "wasm32-wasip2", "--target-dir"]).arg(&target).current_dir(&project);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if (k.starts_with("CARGO_") && k != "CARGO_HOME") || k.starts_with("RUST") && k != "RUSTUP_HOME" {
            cargo.env_remove(&*k);
        }
    }
    let out = cargo.output().unwrap();
    assert!(out.status.success(), "building {name}: {}", String::from_utf8_lossy(&out.stderr));
    let built = target.join("wasm32-wasip2/debug").join(format!("{}.wasm", name.replace('-', "_")));
    let component = project.join(format!("{name}.wasm"));
    std::fs::copy(&built, &component).unwrap();
    trellis(&["plugin", "sign", "--key", key.to_str().unwrap(), component.to_str().unwrap()]);
    component
}

#[test]
fn each_kind_of_new_plugin_builds_signs_and_serves() {
    let scratch = Scratch::new("scaffold", "kinds");
    let key = scratch.path("signing-key");
    trellis(&["plugin", "keygen", "--out", key.to_str().unwrap()]);
    let public = std::fs::read_to_string(scratch.path("signing-key.pub")).unwrap();
    let model = make(&scratch.0, "boiler-plant", "object-model", &key);
    let policy = make(&scratch.0, "who-is-budget", "routing", &key);
    let app = make(&scratch.0, "point-logger", "app", &key);
    // A name that is not a crate name, and an existing directory, are refused.
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(["plugin", "new", "Bad_Name"]).output().unwrap();
    assert!(!out.status.success());
    let again = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["plugin", "new", "boiler-plant", "--dir", scratch.0.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));

    let (device_port, router_port) = (crate::peers::free_port(), crate::peers::free_port());
    let config = format!(
        r#"
[policy]
trusted_keys = ["{key}"]

[[device]]
bind = "127.0.0.1"
port = {device_port}
plugin = "{model}"

[[device]]
virtual_network = 7
instance = 1001
plugin = "builtin:demo-building"

[[router.port]]
bind = "127.0.0.1"
port = {router_port}
network = 1

[[router.policy]]
plugin = "{policy}"
on_failure = "open"
settings = {{ max_who_is_per_minute = 30 }}

[[app]]
name = "point-logger"
plugin = "{app}"
read = ["1001/*"]
settings = {{ point = "1001/analog-input,1" }}

[http]
bind = "127.0.0.1:0"
"#,
        key = public.trim(),
        model = model.display(),
        policy = policy.display(),
        app = app.display(),
    );
    let path = scratch.path("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let gw =
        Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    let log = gw.log();
    assert!(log.contains("plugin boiler-plant 0.1.0 (3 objects)"), "{log}");
    assert!(log.contains("policy who-is-budget 0.1.0 — at most 30 Who-Is a minute"), "{log}");
    // The application runs and watches its point (its status over the API).
    let url = log.lines().find_map(|l| l.strip_prefix("trellis: console http://")).unwrap();
    let addr = url.split('/').next().unwrap().to_string();
    let answer = http(&addr, "GET", "/api/plugins", &[], b"");
    assert!(answer.contains(r#""name":"point-logger""#) && answer.contains(r#""state":"running""#), "{answer}");
    // New builds of the policy and the application swap in by upload, signed, with their manifests.
    for (component, path, said) in [
        (&policy, "/api/policies/1/plugin", r#""policy":1"#),
        (&app, "/api/apps/point-logger/plugin", r#""app":"point-logger""#),
    ] {
        use base64::Engine as _;
        let b64 = |p: PathBuf| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
        let headers = [
            ("Content-Type", "application/wasm".to_string()),
            ("X-Trellis-Signature", b64(trellis::plugin::policy::signature_path(component))),
            ("X-Trellis-Manifest", b64(trellis::plugin::policy::manifest_path(component))),
        ];
        let answer = http(&addr, "POST", path, &headers, &std::fs::read(component).unwrap());
        assert!(answer.starts_with("HTTP/1.1 200") && answer.contains(said), "{answer}");
        // Unsigned (no signature header): the policy refuses it, the running one stays.
        let answer = http(&addr, "POST", path, &headers[..1], &std::fs::read(component).unwrap());
        assert!(answer.starts_with("HTTP/1.1 422") && answer.contains("unsigned"), "{answer}");
    }
}

/// One HTTP/1.1 exchange (the HTTP tests' client); the status line and the body.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> String {
    let r = crate::http::exchange(std::net::TcpStream::connect(addr).unwrap(), method, path, headers, body);
    format!("HTTP/1.1 {}\n{}", r.status, r.body)
}
