//! `trellis plugin`: tools for plugin files — `keygen`, `sign`, `verify` —
//! and for a running gateway through its local admin socket — `swap`,
//! `status`. The signature format and the rules a gateway
//! applies are in [`crate::plugin::signing`] and [`crate::plugin::policy`].
//!
//! Secret key files are raw 32-byte ed25519 seeds, created with mode 0600;
//! like ssh, `sign` refuses a key file that group or others may read.

use super::{Failure, exit};
use crate::config::{Config, PolicySection};
use crate::plugin::policy::{self, Manifest, PluginFiles};
use crate::plugin::signing::{self, SECRET_KEY_LEN, SignatureFile};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Largest `--trust-file` accepted.
const MAX_TRUST_FILE_BYTES: u64 = 64 << 10;

/// Arguments of `trellis plugin`.
#[derive(Debug, Args)]
pub struct PluginArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PluginCommand,
}

/// The `trellis plugin` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Make a new plugin project that builds as it is: Cargo.toml, src/lib.rs
    /// with a working example and a test, its capability manifest, and a
    /// README with the build, sign and serve commands.
    ///
    /// Example: trellis plugin new boiler-plant --kind object-model
    New(super::scaffold::NewArgs),
    /// Make a signing key pair: KEY (secret, mode 0600) and KEY.pub (public, hex).
    ///
    /// Prints the public key. Give KEY.pub (or the printed hex) to operators:
    /// it goes into their config's [policy] trusted_keys. Keep KEY secret.
    /// Existing files are never overwritten.
    Keygen(KeygenArgs),
    /// Sign a plugin component and its capability manifest: writes FILE.wasm.sig.
    ///
    /// The signature covers the SHA-256 of FILE.wasm and of the manifest, so
    /// neither can be changed or swapped afterwards. The manifest must parse
    /// (name, version, data_dir, clock, max_objects, memory_mb).
    Sign(SignArgs),
    /// Check a plugin file's signature against trusted keys (and a config's policy).
    ///
    /// Reads FILE.wasm, FILE.wasm.sig and FILE.manifest.toml beside it. With
    /// --config, also checks the manifest against that config's [policy]
    /// ceilings and trusts its trusted_keys. Unsigned plugins always fail
    /// here, whatever allow_unsigned says. Prints one line on success; exits
    /// 1 with the reason otherwise.
    Verify(VerifyArgs),
    /// Hot-swap a running device's plugin with FILE.wasm (through the local admin socket).
    ///
    /// The gateway checks the file against its [policy] exactly as at start-up,
    /// loads it beside the running instance, hands the state across and swaps
    /// between requests. If the new plugin refuses the state, the old one keeps
    /// serving. Prints the plugin now serving and the pause.
    Swap(SwapArgs),
    /// Hot-swap one of the router's routing policies with FILE.wasm (through
    /// the local admin socket).
    ///
    /// The file is vetted by [policy] like any plugin file and configured with
    /// the running policy's settings; the running policy's state (budgets,
    /// counters) is handed across between two routed NPDUs. If the new policy
    /// refuses its settings or the state, the old one keeps deciding.
    SwapPolicy(SwapPolicyArgs),
    /// Hot-swap one of the gateway's applications (`[[app]]`, by name) with
    /// FILE.wasm (through the local admin socket).
    ///
    /// The file is vetted by [policy] like any plugin file and started with
    /// the running application's settings and grants; the running one's
    /// state is handed across between two events. If the new one refuses to
    /// start or refuses the state, the old one keeps running.
    SwapApp(SwapAppArgs),
    /// Show the devices a running gateway serves, their plugins, the
    /// router's routing policies and the applications.
    Status(StatusArgs),
}

/// Arguments of `trellis plugin swap-app`.
#[derive(Debug, Args)]
pub struct SwapAppArgs {
    /// Which application: its `[[app]]` name.
    pub app: String,
    /// The new component.
    pub file: PathBuf,
    /// The gateway's admin socket [default: as `trellis run`].
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

/// Arguments of `trellis plugin swap-policy`.
#[derive(Debug, Args)]
pub struct SwapPolicyArgs {
    /// Which policy: 1 for the first `[[router.policy]]`, 2 for the second…
    pub policy: usize,
    /// The new component.
    pub file: PathBuf,
    /// The gateway's admin socket [default: as `trellis run`].
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

/// Arguments of `trellis plugin swap`.
#[derive(Debug, Args)]
pub struct SwapArgs {
    /// Device instance, as served on the network.
    pub device: u32,
    /// The new component.
    pub file: PathBuf,
    /// The gateway's admin socket [default: as `trellis run`].
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

/// Arguments of `trellis plugin status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The gateway's admin socket [default: as `trellis run`].
    #[arg(long)]
    pub socket: Option<PathBuf>,
}

/// Run `trellis plugin swap` / `status` (the ones that talk to a gateway).
pub async fn run_admin(command: PluginCommand) -> Result<(), Failure> {
    use crate::admin::{Request, Response, default_socket, request};
    let (socket, req) = match command {
        PluginCommand::Swap(a) => {
            let file = std::fs::canonicalize(&a.file)
                .map_err(|e| Failure { code: exit::USAGE, message: format!("{}: {e}", a.file.display()) })?;
            (a.socket, Request::Swap { device: a.device, file })
        }
        PluginCommand::SwapPolicy(a) => {
            let file = std::fs::canonicalize(&a.file)
                .map_err(|e| Failure { code: exit::USAGE, message: format!("{}: {e}", a.file.display()) })?;
            (a.socket, Request::SwapPolicy { policy: a.policy, file })
        }
        PluginCommand::SwapApp(a) => {
            let file = std::fs::canonicalize(&a.file)
                .map_err(|e| Failure { code: exit::USAGE, message: format!("{}: {e}", a.file.display()) })?;
            (a.socket, Request::SwapApp { app: a.app, file })
        }
        PluginCommand::Status(a) => (a.socket, Request::Status),
        other => return run(PluginArgs { command: other }),
    };
    let socket = socket.unwrap_or_else(default_socket);
    let answer =
        request(&socket, &req, std::time::Duration::from_secs(120)).await.map_err(|e| other(format!("{e:#}")))?;
    match answer {
        Response::Swapped { device, plugin, load_ms, pause_us } => {
            println!("device {device}: now {plugin} (load {load_ms:.1} ms, pause {pause_us:.0} µs)");
            Ok(())
        }
        Response::PolicySwapped { policy, plugin, load_ms } => {
            println!("routing policy {policy}: now {plugin} (load {load_ms:.1} ms)");
            Ok(())
        }
        Response::AppSwapped { app, plugin, load_ms } => {
            println!("application {app}: now {plugin} (load {load_ms:.1} ms)");
            Ok(())
        }
        Response::Status { devices, policies, apps } => {
            for a in &apps {
                println!("application {}: {} — {}", a.name, a.plugin, a.summary);
                println!(
                    "  {}; {} restarts, {} failures; {} events, {} missed, {} refused",
                    a.state, a.restarts, a.failures, a.events, a.missed, a.refused
                );
                if let Some(f) = &a.last_failure {
                    println!("  last failure: {f}");
                }
            }
            for (i, p) in policies.iter().enumerate() {
                println!("routing policy {}: {} — {} (fails {})", i + 1, p.plugin, p.summary, p.on_failure);
                println!(
                    "  {}; {} restarts, {} failures; {} decided, {} rejected, {} dropped failing closed, \
                     {} forwarded failing open",
                    p.state, p.restarts, p.failures, p.decided, p.rejected, p.failed_closed, p.failed_open
                );
                let drops: Vec<String> = p.drops.iter().map(|(r, n)| format!("{r}: {n}")).collect();
                if !drops.is_empty() {
                    println!("  dropped: {}", drops.join(", "));
                }
                if let Some(f) = &p.last_failure {
                    println!("  last failure: {f}");
                }
            }
            for d in devices {
                match &d.interface {
                    Some(i) => println!("device {}: {} ({i})", d.device, d.plugin),
                    None => println!("device {}: {}", d.device, d.plugin),
                }
                if let Some(h) = d.health {
                    println!("  {h}");
                }
            }
            Ok(())
        }
        Response::Failed { error } => Err(other(error)),
    }
}

/// Arguments of `trellis plugin keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Secret key file to create (KEY.pub is written beside it).
    #[arg(long, value_name = "KEY")]
    pub out: PathBuf,
}

/// Arguments of `trellis plugin sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// Secret key file (from `trellis plugin keygen`; mode 0600).
    #[arg(long, value_name = "KEY")]
    pub key: PathBuf,
    /// The plugin component to sign.
    #[arg(value_name = "FILE.wasm")]
    pub file: PathBuf,
    /// Its capability manifest [default: FILE.manifest.toml beside FILE.wasm].
    #[arg(long, value_name = "FILE.manifest.toml")]
    pub manifest: Option<PathBuf>,
    /// Where to write the signature [default: FILE.wasm.sig].
    #[arg(long, value_name = "SIG")]
    pub out: Option<PathBuf>,
}

/// Arguments of `trellis plugin verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The plugin component to check.
    #[arg(value_name = "FILE.wasm")]
    pub file: PathBuf,
    /// A trusted public key, 64 hex digits (repeatable).
    #[arg(long, value_name = "PUBHEX")]
    pub trust: Vec<String>,
    /// A file of trusted public keys, one hex key per line, `#` comments (repeatable; e.g. KEY.pub).
    #[arg(long, value_name = "FILE")]
    pub trust_file: Vec<PathBuf>,
    /// A gateway config: trust its [policy] trusted_keys and check its ceilings.
    #[arg(long, value_name = "CONFIG")]
    pub config: Option<PathBuf>,
    /// The capability manifest [default: FILE.manifest.toml beside FILE.wasm].
    #[arg(long, value_name = "FILE.manifest.toml")]
    pub manifest: Option<PathBuf>,
    /// The signature [default: FILE.wasm.sig].
    #[arg(long, value_name = "SIG")]
    pub sig: Option<PathBuf>,
}

/// Run a `trellis plugin` subcommand.
pub fn run(a: PluginArgs) -> Result<(), Failure> {
    match a.command {
        PluginCommand::New(a) => super::scaffold::run(a),
        PluginCommand::Keygen(a) => keygen(a),
        PluginCommand::Sign(a) => sign(a),
        PluginCommand::Verify(a) => verify(a),
        PluginCommand::Swap(_)
        | PluginCommand::SwapPolicy(_)
        | PluginCommand::SwapApp(_)
        | PluginCommand::Status(_) => Err(other("swap and status talk to a running gateway: use run_admin")),
    }
}

fn other(message: impl Into<String>) -> Failure {
    Failure { code: exit::OTHER, message: message.into() }
}

fn keygen(a: KeygenArgs) -> Result<(), Failure> {
    let public_path = signing_pub_path(&a.out);
    for p in [&a.out, &public_path] {
        if p.exists() {
            return Err(other(format!("{} already exists; not overwriting it", p.display())));
        }
    }
    let seed = signing::generate_secret_key().map_err(|e| other(e.to_string()))?;
    write_new(&a.out, &seed, 0o600)?;
    let public = signing::hex(&signing::public_key(&seed));
    write_new(&public_path, format!("{public}\n").as_bytes(), 0o644)?;
    println!("{public}");
    Ok(())
}

fn sign(a: SignArgs) -> Result<(), Failure> {
    let seed = read_secret_key(&a.key)?;
    let manifest_path = a.manifest.unwrap_or_else(|| policy::manifest_path(&a.file));
    let sig_path = a.out.unwrap_or_else(|| policy::signature_path(&a.file));
    let component = read(&a.file, crate::plugin::MAX_COMPONENT_BYTES)?;
    if !component.starts_with(b"\0asm") {
        return Err(other(format!("{}: not a WebAssembly file", a.file.display())));
    }
    let manifest = read(&manifest_path, policy::MAX_MANIFEST_BYTES)?;
    let text = std::str::from_utf8(&manifest)
        .map_err(|_| other(format!("manifest {}: not UTF-8 text", manifest_path.display())))?;
    Manifest::parse(text).map_err(|e| other(format!("manifest {}: {e}", manifest_path.display())))?;
    let sig = SignatureFile::sign(&seed, &component, &manifest);
    std::fs::write(&sig_path, sig.render()).map_err(|e| other(format!("cannot write {}: {e}", sig_path.display())))?;
    println!("{}", sig_path.display());
    Ok(())
}

fn verify(a: VerifyArgs) -> Result<(), Failure> {
    let mut policy = match &a.config {
        Some(path) => Config::load(path).map_err(|e| other(format!("{e:#}")))?.policy,
        // Without a config only the signature is checked: no ceilings.
        None => PolicySection {
            max_memory_mb: u32::MAX,
            allow_data_write: true,
            max_objects: u32::MAX,
            ..PolicySection::default()
        },
    };
    policy.allow_unsigned = false;
    for k in &a.trust {
        signing::parse_public_key(k).map_err(|e| Failure::usage(format!("--trust: {e}")))?;
        policy.trusted_keys.push(k.clone());
    }
    for f in &a.trust_file {
        let text = String::from_utf8(read(f, MAX_TRUST_FILE_BYTES)?)
            .map_err(|_| other(format!("{}: not UTF-8 text", f.display())))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            signing::parse_public_key(line)
                .map_err(|e| Failure::usage(format!("--trust-file {}:{}: {e}", f.display(), n + 1)))?;
            policy.trusted_keys.push(line.to_string());
        }
    }
    if policy.trusted_keys.is_empty() {
        return Err(Failure::usage(
            "no trusted key: give --trust PUBHEX, --trust-file FILE or --config with trusted_keys",
        ));
    }
    let files = PluginFiles::read_with(
        &a.file,
        &a.sig.unwrap_or_else(|| policy::signature_path(&a.file)),
        &a.manifest.unwrap_or_else(|| policy::manifest_path(&a.file)),
    )?;
    let caps = files.check(&policy)?;
    let (name, version) = caps.plugin.clone().unwrap_or_default();
    let key = caps.signed_by.map(|k| signing::hex(&k)).unwrap_or_default();
    println!("{}: ok, {name} {version} signed by {key}; {}", files.name, caps.summary());
    Ok(())
}

impl From<policy::PolicyError> for Failure {
    fn from(e: policy::PolicyError) -> Self {
        other(e.to_string())
    }
}

/// `KEY` → `KEY.pub`.
fn signing_pub_path(key: &Path) -> PathBuf {
    let mut p = key.as_os_str().to_owned();
    p.push(".pub");
    PathBuf::from(p)
}

/// Read a file of at most `limit` bytes (a regular file; see
/// [`crate::plugin::bounded_read`]).
fn read(path: &Path, limit: u64) -> Result<Vec<u8>, Failure> {
    match crate::plugin::bounded_read::read(path, limit) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(other(format!(
            "cannot read {}: {}",
            path.display(),
            std::io::Error::from(std::io::ErrorKind::NotFound)
        ))),
        Err(e) => Err(other(e.to_string())),
    }
}

/// Read a secret key file, refusing one that group or others may read.
fn read_secret_key(path: &Path) -> Result<[u8; SECRET_KEY_LEN], Failure> {
    let meta = std::fs::metadata(path).map_err(|e| other(format!("cannot read {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(other(format!(
                "secret key {}: permissions {mode:04o} are too open; it must be readable by its owner only \
                 (chmod 600 {})",
                path.display(),
                path.display()
            )));
        }
    }
    if meta.len() != SECRET_KEY_LEN as u64 {
        return Err(other(format!(
            "secret key {}: {} bytes, expected {SECRET_KEY_LEN} (a key from `trellis plugin keygen`)",
            path.display(),
            meta.len()
        )));
    }
    let bytes = read(path, SECRET_KEY_LEN as u64)?;
    bytes.try_into().map_err(|_| other(format!("secret key {}: changed while reading", path.display())))
}

/// Create `path` (never overwriting) with `mode`, and write `bytes`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Failure> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let fail = |e: std::io::Error| other(format!("cannot write {}: {e}", path.display()));
    let mut f = options.open(path).map_err(fail)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(fail)
}
