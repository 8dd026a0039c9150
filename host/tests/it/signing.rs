//! Signed plugins and capabilities (issue #3 item 9) as an operator meets
//! them: `trellis plugin keygen/sign/verify` on a real component (the built
//! demo-building), the refusals of `plugin::policy::check`, and `trellis run`
//! serving a signed plugin file while refusing an unsigned one.

use crate::peers::free_port;
use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use trellis::config::{Config, PolicySection};
use trellis::plugin::builtin;
use trellis::plugin::policy::{self, DataAccess};

/// The demo-building's capabilities, as its vendor would declare them.
const MANIFEST: &str = "name = \"demo-building\"\nversion = \"0.1.0\"\ndata_dir = \"none\"\nclock = true\n\
                        max_objects = 64\nmemory_mb = 64\n";

impl Scratch {
    /// A copy of the demo-building component as `NAME.wasm`, with its manifest.
    fn plugin(&self, name: &str, manifest: &str) -> PathBuf {
        let wasm = self.path(&format!("{name}.wasm"));
        std::fs::copy(builtin::DEMO_BUILDING_PATH, &wasm).unwrap();
        std::fs::write(self.path(&format!("{name}.manifest.toml")), manifest).unwrap();
        wasm
    }

    /// `trellis plugin keygen --out NAME`: the secret key path and the public hex.
    fn keygen(&self, name: &str) -> (PathBuf, String) {
        let key = self.path(name);
        let o = trellis(&["plugin", "keygen", "--out", key.to_str().unwrap()]);
        assert!(o.status.success(), "keygen: {}", stderr(&o));
        (key, stdout(&o).trim().to_string())
    }
}

fn trellis(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).env_remove("TRELLIS_LOG").output().expect("run trellis")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn sign(key: &Path, wasm: &Path) -> Output {
    trellis(&["plugin", "sign", "--key", s(key), s(wasm), "--manifest", s(&policy::manifest_path(wasm))])
}

/// Exit 1 and exactly one line on stderr: `trellis: plugin NAME: REASON`.
fn assert_refused(o: &Output, expected: &str) {
    assert_eq!(o.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(o), stderr(o));
    assert_eq!(stderr(o).trim_end(), format!("trellis: {expected}"));
}

#[test]
fn keygen_sign_verify_round_trip_through_the_cli() {
    let dir = Scratch::new("signing", "round-trip");
    let (key, public) = dir.keygen("vendor.key");
    assert_eq!(public.len(), 64, "{public}");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    assert_eq!(std::fs::read_to_string(dir.path("vendor.key.pub")).unwrap(), format!("{public}\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // Never overwrites a key.
    let o = trellis(&["plugin", "keygen", "--out", s(&key)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("already exists; not overwriting it"), "{}", stderr(&o));

    let wasm = dir.plugin("demo", MANIFEST);
    let o = sign(&key, &wasm);
    assert!(o.status.success(), "sign: {}", stderr(&o));
    let sig = std::fs::read_to_string(dir.path("demo.wasm.sig")).unwrap();
    assert!(sig.starts_with("trellis-plugin-signature-v1\ncomponent-sha256: "), "{sig}");
    assert!(sig.contains(&format!("\nkey: {public}\n")), "{sig}");

    let o = trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]);
    assert!(o.status.success(), "verify: {}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        format!(
            "demo.wasm: ok, demo-building 0.1.0 signed by {public}; \
             data_dir = none, clock = true, max_objects = 64, memory_mb = 64, create_objects = false"
        )
    );
    let o = trellis(&["plugin", "verify", "--trust-file", s(&dir.path("vendor.key.pub")), s(&wasm)]);
    assert!(o.status.success(), "verify --trust-file: {}", stderr(&o));

    // No trusted key at all is a usage error.
    let o = trellis(&["plugin", "verify", s(&wasm)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no trusted key"), "{}", stderr(&o));
    let o = trellis(&["plugin", "verify", "--trust", "abc", s(&wasm)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // Every subcommand explains itself.
    let o = trellis(&["plugin", "--help"]);
    for sub in ["keygen", "sign", "verify"] {
        assert!(stdout(&o).contains(sub), "{}", stdout(&o));
    }
    let o = trellis(&["plugin", "sign", "--help"]);
    assert!(stdout(&o).contains("SHA-256") && stdout(&o).contains("--manifest"), "{}", stdout(&o));
}

#[test]
fn a_tampered_component_or_manifest_is_refused() {
    let dir = Scratch::new("signing", "tampered");
    let (key, public) = dir.keygen("vendor.key");
    let wasm = dir.plugin("demo", MANIFEST);
    assert!(sign(&key, &wasm).status.success());

    let mut bytes = std::fs::read(&wasm).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&wasm, &bytes).unwrap();
    let o = trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]);
    assert_refused(&o, "plugin demo.wasm: signature does not match the component (tampered?)");

    bytes[last] ^= 1;
    std::fs::write(&wasm, &bytes).unwrap();
    assert!(trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]).status.success());

    std::fs::write(dir.path("demo.manifest.toml"), MANIFEST.replace("memory_mb = 64", "memory_mb = 1024")).unwrap();
    let o = trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]);
    assert_refused(&o, "plugin demo.wasm: signature does not match the manifest (tampered?)");

    // Editing the signed hash inside the .sig breaks the signature itself.
    std::fs::write(dir.path("demo.manifest.toml"), MANIFEST).unwrap();
    let sig = std::fs::read_to_string(dir.path("demo.wasm.sig")).unwrap();
    let digest = sig.lines().nth(1).unwrap().trim_start_matches("component-sha256: ").to_string();
    let flipped = format!("{}{}", if digest.starts_with('0') { "1" } else { "0" }, &digest[1..]);
    std::fs::write(dir.path("demo.wasm.sig"), sig.replace(&digest, &flipped)).unwrap();
    let o = trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]);
    assert_refused(&o, "plugin demo.wasm: signature is not valid for the key it names (the .sig file was altered?)");
}

#[test]
fn an_untrusted_key_is_refused() {
    let dir = Scratch::new("signing", "untrusted");
    let (key, public) = dir.keygen("vendor.key");
    let (_, other) = dir.keygen("other.key");
    let wasm = dir.plugin("demo", MANIFEST);
    assert!(sign(&key, &wasm).status.success());
    let o = trellis(&["plugin", "verify", "--trust", &other, s(&wasm)]);
    assert_refused(
        &o,
        &format!("plugin demo.wasm: signed by an untrusted key {}… (not in [policy] trusted_keys)", &public[..16]),
    );
}

#[test]
fn unsigned_plugins_load_only_where_policy_allows_them() {
    let dir = Scratch::new("signing", "unsigned");
    let (_, public) = dir.keygen("vendor.key");
    let wasm = dir.plugin("demo", MANIFEST);
    let o = trellis(&["plugin", "verify", "--trust", &public, s(&wasm)]);
    assert_refused(&o, "plugin demo.wasm: unsigned, and policy does not allow unsigned plugins");

    let strict = Config::parse("[[device]]\n").unwrap().policy;
    let files = policy::PluginFiles::read(&wasm).unwrap();
    assert_eq!(
        files.check(&strict).unwrap_err().to_string(),
        "plugin demo.wasm: unsigned, and policy does not allow unsigned plugins"
    );
    let dev = Config::parse("[[device]]\n[policy]\nallow_unsigned = true\n").unwrap().policy;
    let caps = files.check(&dev).unwrap();
    assert_eq!((caps.signed_by, caps.data_dir, caps.memory_mb), (None, DataAccess::None, 64));
    // Without a manifest either: the defaults plugin files always had.
    std::fs::remove_file(dir.path("demo.manifest.toml")).unwrap();
    let caps = policy::PluginFiles::read(&wasm).unwrap().check(&dev).unwrap();
    assert_eq!((caps.data_dir, caps.memory_mb, caps.max_objects), (DataAccess::Read, 256, 10_000));
}

#[test]
fn capabilities_beyond_policy_are_refused() {
    let dir = Scratch::new("signing", "capabilities");
    let (key, public) = dir.keygen("vendor.key");
    let config = dir.path("gateway.toml");
    std::fs::write(
        &config,
        format!("[[device]]\n[policy]\ntrusted_keys = [\"{public}\"]\nmax_memory_mb = 128\nmax_objects = 100\n"),
    )
    .unwrap();

    let big = dir.plugin("big", &MANIFEST.replace("memory_mb = 64", "memory_mb = 512"));
    assert!(sign(&key, &big).status.success());
    let o = trellis(&["plugin", "verify", "--config", s(&config), s(&big)]);
    assert_refused(&o, "plugin big.wasm: asks for memory_mb = 512 but policy allows 128");

    let writer = dir.plugin("writer", &MANIFEST.replace("\"none\"", "\"write\""));
    assert!(sign(&key, &writer).status.success());
    let o = trellis(&["plugin", "verify", "--config", s(&config), s(&writer)]);
    assert_refused(&o, "plugin writer.wasm: asks for data_dir = write but policy forbids writable data directories");
    let allowing = PolicySection { trusted_keys: vec![public.clone()], allow_data_write: true, ..Default::default() };
    let caps = policy::PluginFiles::read(&writer).unwrap().check(&allowing).unwrap();
    assert_eq!(caps.data_dir, DataAccess::Write);

    let many = dir.plugin("many", &MANIFEST.replace("max_objects = 64", "max_objects = 5000"));
    assert!(sign(&key, &many).status.success());
    let o = trellis(&["plugin", "verify", "--config", s(&config), s(&many)]);
    assert_refused(&o, "plugin many.wasm: asks for max_objects = 5000 but policy allows 100");

    // Within policy: accepted, and the config's key is trusted.
    let fine = dir.plugin("fine", MANIFEST);
    assert!(sign(&key, &fine).status.success());
    let o = trellis(&["plugin", "verify", "--config", s(&config), s(&fine)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_secret_key_readable_by_others_is_refused() {
    let dir = Scratch::new("signing", "key-mode");
    let (key, _) = dir.keygen("vendor.key");
    let wasm = dir.plugin("demo", MANIFEST);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = sign(&key, &wasm);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            stderr(&o).trim_end(),
            format!(
                "trellis: secret key {k}: permissions 0644 are too open; it must be readable by its owner only \
                 (chmod 600 {k})",
                k = key.display()
            )
        );
        assert!(!dir.path("demo.wasm.sig").exists());
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    assert!(sign(&key, &wasm).status.success());
    // A manifest that does not parse is not signed.
    std::fs::write(dir.path("demo.manifest.toml"), "name = \"x\"\n").unwrap();
    let o = sign(&key, &wasm);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("manifest") && stderr(&o).contains("version"), "{}", stderr(&o));
}

/// A `trellis run --config` gateway; killed by PID on drop.
struct Gateway(crate::gateway::Gateway);

impl Gateway {
    /// Start it and wait for its ready line (or its exit).
    fn start(config: &Path, cache: &Path) -> Result<Gateway, String> {
        crate::gateway::Gateway::start(&["run", "--config", s(config)], cache).map(Gateway)
    }

    fn log(&self) -> String {
        self.0.log()
    }
}

#[test]
fn run_serves_a_signed_plugin_file_and_refuses_an_unsigned_one() {
    let dir = Scratch::new("signing", "run");
    let (key, public) = dir.keygen("vendor.key");
    let signed = dir.plugin("vendor-x", MANIFEST);
    assert!(sign(&key, &signed).status.success());
    let unsigned = dir.plugin("vendor-y", MANIFEST);
    let cache = dir.path("cache");
    let port = free_port();
    let config = |plugin: &Path| {
        let path = dir.path("gateway.toml");
        std::fs::write(
            &path,
            format!(
                "[[device]]\nport = {port}\nplugin = \"{}\"\nmemory_mb = 64\n\n\
                 [policy]\ntrusted_keys = [\"{public}\"]\nmax_memory_mb = 64\nmax_objects = 64\n",
                plugin.file_name().unwrap().to_str().unwrap()
            ),
        )
        .unwrap();
        path
    };

    // Unsigned: `trellis run` exits 1 with the one-line reason, before serving.
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--config", s(&config(&unsigned))])
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("TRELLIS_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_refused(&o, "plugin vendor-y.wasm: unsigned, and policy does not allow unsigned plugins");

    // Signed by a trusted key: served, and answers `trellis read`.
    let gateway = Gateway::start(&config(&signed), &cache).unwrap_or_else(|log| panic!("exited:\n{log}"));
    assert!(gateway.log().contains("plugin demo-building 0.1.0"), "{}", gateway.log());
    let o = trellis(&[
        "--port",
        "0",
        "--timeout-ms",
        "2000",
        "read",
        &format!("127.0.0.1:{port}"),
        "analog-input:1",
        "present-value",
    ]);
    assert!(o.status.success(), "read: {}\ngateway:\n{}", stderr(&o), gateway.log());
    assert!(stdout(&o).contains("degrees-"), "{}", stdout(&o));

    // Hot swap through the admin socket goes through the same policy.
    let socket = crate::gateway::Gateway::socket_in(&cache);
    let o = trellis(&["plugin", "swap", "389001", s(&unsigned), "--socket", s(&socket)]);
    assert_refused(&o, "plugin vendor-y.wasm: unsigned, and policy does not allow unsigned plugins");
    let o = trellis(&["plugin", "swap", "389001", s(&signed), "--socket", s(&socket)]);
    assert!(o.status.success(), "swap: {}\ngateway:\n{}", stderr(&o), gateway.log());
    assert!(stdout(&o).starts_with("device 389001: now demo-building 0.1.0"), "{}", stdout(&o));
    let o = trellis(&["plugin", "status", "--socket", s(&socket)]);
    let status = stdout(&o);
    let mut lines = status.lines();
    assert_eq!(lines.next(), Some("device 389001: demo-building 0.1.0 (trellis:bacnet@0.4.0)"), "{status}");
    let health = lines.next().unwrap_or_default();
    assert!(health.starts_with("  running; 0 restarts, 0 failures;"), "{status}");
    assert!(health.ends_with("writes journaled since the last"), "{status}");
}

#[test]
fn a_watched_plugin_file_is_swapped_when_it_changes() {
    let dir = Scratch::new("signing", "watch");
    let (key, public) = dir.keygen("vendor.key");
    let wasm = dir.plugin("watched", MANIFEST);
    assert!(sign(&key, &wasm).status.success());
    let port = free_port();
    let config = dir.path("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\nport = {port}\nplugin = \"watched.wasm\"\nwatch = true\n\n\
             [policy]\ntrusted_keys = [\"{public}\"]\nmax_memory_mb = 64\nmax_objects = 64\n"
        ),
    )
    .unwrap();
    let gateway = Gateway::start(&config, &dir.path("cache")).unwrap_or_else(|log| panic!("exited:\n{log}"));
    // A new build lands: same signed bytes, new modification time.
    std::thread::sleep(Duration::from_millis(1100));
    let bytes = std::fs::read(&wasm).unwrap();
    std::fs::write(&wasm, bytes).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !gateway.log().contains("changed, now demo-building 0.1.0") {
        assert!(std::time::Instant::now() < deadline, "no swap after the file changed:\n{}", gateway.log());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn logs_written_to_a_pipe_carry_no_terminal_colour_codes() {
    // An unsigned plugin under `allow_unsigned` logs a WARN before it loads;
    // the file is not WebAssembly, so the run then stops. Its stderr is a
    // pipe here, as it is under systemd or in a log file.
    let scratch = Scratch::new("signing", "ansi");
    let junk = scratch.path("junk.wasm");
    std::fs::write(&junk, b"not a component").unwrap();
    let config = scratch.path("gateway.toml");
    std::fs::write(
        &config,
        format!("[policy]\nallow_unsigned = true\n\n[[device]]\nport = {}\nplugin = \"junk.wasm\"\n", free_port()),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--config", s(&config)])
        .env("TRELLIS_LOG", "warn")
        .env("XDG_CACHE_HOME", scratch.path("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("LOADING AN UNSIGNED PLUGIN"), "{err}");
    assert!(!err.contains('\u{1b}'), "escape codes in a piped log: {err:?}");
}

/// Object creation in a plugin file takes both halves: the operator's
/// `create_objects` and the manifest's `create_objects = true` (without it
/// `trellis run` refuses to start, naming both); the manifest's
/// `max_objects` bounds what clients create.
#[test]
fn creating_objects_in_a_plugin_file_needs_its_manifests_consent_and_keeps_under_its_ceiling() {
    let dir = Scratch::new("signing", "create-objects");
    let cache = dir.path("cache");
    let port = free_port();
    let config = |plugin: &Path| {
        let path = dir.path("gateway.toml");
        std::fs::write(
            &path,
            format!(
                "[[device]]\nport = {port}\nplugin = \"{}\"\ncreate_objects = [\"analog-value\"]\n\n\
                 [policy]\nallow_unsigned = true\n",
                plugin.file_name().unwrap().to_str().unwrap()
            ),
        )
        .unwrap();
        path
    };
    let unwilling = dir.plugin("unwilling", MANIFEST);
    let o = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--config", s(&config(&unwilling))])
        .env("XDG_CACHE_HOME", &cache)
        .env_remove("TRELLIS_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "device 1: create_objects lists analog-value, but the manifest of unwilling.wasm does not ask for create_objects"
        ),
        "{}",
        stderr(&o)
    );

    // The demo building serves 13 objects: room for one more.
    let willing =
        dir.plugin("willing", &MANIFEST.replace("max_objects = 64", "max_objects = 14\ncreate_objects = true"));
    let gateway = Gateway::start(&config(&willing), &cache).unwrap_or_else(|log| panic!("exited:\n{log}"));
    let address = format!("127.0.0.1:{port}");
    let o = trellis(&["create", &address, "analog-value"]);
    assert_eq!(stdout(&o).trim(), "analog-value,3", "{}\n{}", stderr(&o), gateway.log());
    let o = trellis(&["create", &address, "analog-value"]);
    assert!(stderr(&o).contains("resources: no-space-for-object"), "{}", stderr(&o));
}
