//! Plugin vetting against files that are not what they seem (issue #5
//! item 2): a vendor package whose `.wasm.sig` is a symlink to `/dev/zero`,
//! a named pipe, or a file that holds more than it reports. Each is refused
//! at once with one line naming the file — by `trellis plugin verify`, and
//! by a running gateway's hot swap, which keeps answering BACnet meanwhile.

use crate::child::{Finished, Running, run_within};
use crate::gateway::Gateway;
use crate::peers::free_port;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use trellis::plugin::builtin;
use trellis::plugin::policy;

const MANIFEST: &str = "name = \"demo-building\"\nversion = \"0.1.0\"\ndata_dir = \"none\"\nclock = true\n\
                        max_objects = 64\nmemory_mb = 64\n";

/// Long enough for any honest refusal on a loaded machine; a read that
/// blocks (a pipe without a writer) never ends within it.
const LIMIT: Duration = Duration::from_secs(60);

/// A scratch directory with a key pair; removed on drop.
struct Package {
    dir: PathBuf,
    key: PathBuf,
    public: String,
}

impl Package {
    fn new(test: &str) -> Package {
        let dir = std::env::temp_dir().join(format!("trellis-vetting-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("vendor.key");
        let o = trellis(&["plugin", "keygen", "--out", s(&key)]);
        assert!(o.status.success(), "keygen: {}", o.stderr);
        let public = o.stdout.trim().to_string();
        Package { dir, key, public }
    }

    /// `NAME.wasm` (the demo building), its manifest and a good signature.
    fn signed(&self, name: &str) -> PathBuf {
        let wasm = self.dir.join(format!("{name}.wasm"));
        std::fs::copy(builtin::DEMO_BUILDING_PATH, &wasm).unwrap();
        std::fs::write(policy::manifest_path(&wasm), MANIFEST).unwrap();
        let o = trellis(&["plugin", "sign", "--key", s(&self.key), s(&wasm)]);
        assert!(o.status.success(), "sign: {}", o.stderr);
        wasm
    }

    fn verify(&self, wasm: &Path) -> Finished {
        trellis(&["plugin", "verify", "--trust", &self.public, s(wasm)])
    }
}

impl Drop for Package {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `trellis ARGS` under an address-space limit of 4 GiB, so that a
/// regression that reads without a bound fails here instead of exhausting
/// the machine's memory.
fn trellis(args: &[&str]) -> Finished {
    let mut c = Command::new("sh");
    c.args(["-c", "ulimit -v 4194304 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_trellis")])
        .args(args)
        .env_remove("TRELLIS_LOG");
    run_within(&mut c, LIMIT).unwrap_or_else(|e| panic!("trellis {args:?}: {e}"))
}

/// Exit 1 with exactly one line on stderr: `trellis: EXPECTED`.
fn assert_refused(o: &Finished, expected: &str) {
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(o.stderr.trim_end(), format!("trellis: {expected}"), "{o:?}");
}

/// Make `sig` a named pipe (nobody ever writes to it).
fn mkfifo(sig: &Path) {
    let _ = std::fs::remove_file(sig);
    let status = Command::new("mkfifo").arg(sig).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", sig.display());
}

#[test]
fn verify_refuses_a_signature_symlinked_to_dev_zero() {
    let p = Package::new("dev-zero");
    let wasm = p.signed("vendor");
    let sig = policy::signature_path(&wasm);
    std::fs::remove_file(&sig).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &sig).unwrap();
    assert_refused(
        &p.verify(&wasm),
        &format!("plugin vendor.wasm: {} is not a regular file (a character device)", sig.display()),
    );
}

#[test]
fn verify_refuses_a_signature_that_is_a_named_pipe_without_waiting_for_a_writer() {
    let p = Package::new("fifo");
    let wasm = p.signed("vendor");
    let sig = policy::signature_path(&wasm);
    mkfifo(&sig);
    assert_refused(
        &p.verify(&wasm),
        &format!("plugin vendor.wasm: {} is not a regular file (a named pipe)", sig.display()),
    );
}

#[test]
fn verify_refuses_companion_files_larger_than_their_caps_whatever_size_they_report() {
    let p = Package::new("oversize");
    let wasm = p.signed("vendor");
    let sig = policy::signature_path(&wasm);
    let good = std::fs::read(&sig).unwrap();

    // A regular file one byte over the cap.
    std::fs::write(&sig, vec![b'#'; policy::MAX_SIGNATURE_BYTES as usize + 1]).unwrap();
    assert_refused(&p.verify(&wasm), &format!("plugin vendor.wasm: {} is larger than 4096 bytes", sig.display()));

    // A regular file that reports 0 bytes and holds tens of kilobytes.
    std::fs::remove_file(&sig).unwrap();
    std::os::unix::fs::symlink("/proc/self/smaps", &sig).unwrap();
    assert_refused(&p.verify(&wasm), &format!("plugin vendor.wasm: {} is larger than 4096 bytes", sig.display()));

    // The manifest has its own cap.
    std::fs::remove_file(&sig).unwrap();
    std::fs::write(&sig, &good).unwrap();
    let manifest = policy::manifest_path(&wasm);
    let mut big = MANIFEST.to_string();
    big.push_str(&"#".repeat(policy::MAX_MANIFEST_BYTES as usize));
    std::fs::write(&manifest, big).unwrap();
    assert_refused(&p.verify(&wasm), &format!("plugin vendor.wasm: {} is larger than 65536 bytes", manifest.display()));

    // Restored: accepted again.
    std::fs::write(&manifest, MANIFEST).unwrap();
    let o = p.verify(&wasm);
    assert!(o.status.success(), "{o:?}");
}

#[test]
fn a_swap_whose_signature_is_a_named_pipe_is_refused_and_the_device_keeps_answering() {
    let p = Package::new("swap-fifo");
    let serving = p.signed("vendor");
    let port = free_port();
    let config = p.dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\nport = {port}\nplugin = \"vendor.wasm\"\n\n\
             [policy]\ntrusted_keys = [\"{}\"]\nmax_memory_mb = 64\nmax_objects = 64\n",
            p.public
        ),
    )
    .unwrap();
    assert!(serving.exists());
    let gateway = Gateway::start(&["run", "--config", s(&config)], &p.dir.join("cache"))
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let read = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_trellis"));
        c.args(["--port", "0", "--timeout-ms", "2000", "--retries", "2", "read"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["analog-input:1", "present-value"])
            .env_remove("TRELLIS_LOG");
        run_within(&mut c, LIMIT).unwrap_or_else(|e| panic!("read: {e}\ngateway:\n{}", gateway.log()))
    };
    assert!(read().status.success(), "gateway:\n{}", gateway.log());

    let next = p.signed("next");
    let sig = policy::signature_path(&next);
    mkfifo(&sig);
    let swap = Running::start(
        Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(["plugin", "swap", "389001", s(&next), "--socket", s(gateway.socket())])
            .env_remove("TRELLIS_LOG"),
    );
    // While the swap is on its way (or already refused), the device answers.
    for i in 0..3 {
        let o = read();
        assert!(o.status.success(), "read {i} during the bad swap: {o:?}\ngateway:\n{}", gateway.log());
    }
    let o = swap.finish_within(LIMIT).unwrap_or_else(|e| panic!("swap: {e}\ngateway:\n{}", gateway.log()));
    assert_refused(&o, &format!("plugin next.wasm: {} is not a regular file (a named pipe)", sig.display()));

    // After it: still answering, still the old plugin, and a good swap works.
    let o = read();
    assert!(o.status.success() && o.stdout.contains("degrees-"), "{o:?}\ngateway:\n{}", gateway.log());
    std::fs::remove_file(&sig).unwrap();
    let o = trellis(&["plugin", "sign", "--key", s(&p.key), s(&next)]);
    assert!(o.status.success(), "{o:?}");
    let mut c = Command::new(env!("CARGO_BIN_EXE_trellis"));
    c.args(["plugin", "swap", "389001", s(&next), "--socket", s(gateway.socket())]);
    let o = run_within(&mut c, LIMIT).unwrap();
    assert!(o.status.success(), "{o:?}\ngateway:\n{}", gateway.log());
}
