//! Signed plugins and capabilities: whether a plugin file may load, and with
//! what. [`check`] is the one gate; `trellis run` calls it (through
//! [`check_file`]) for every `.wasm` plugin file before compiling it, and
//! `trellis plugin verify` calls it to answer "would this load?".
//!
//! # What a vendor ships
//!
//! `NAME.wasm` (the component), `NAME.manifest.toml` (the capabilities it
//! asks for) and `NAME.wasm.sig` (a detached ed25519 signature over both,
//! format in [`super::signing`]):
//!
//! ```toml
//! name = "vendor-x"
//! version = "1.2.0"
//! data_dir = "read"     # none (default) | read | write: access to its /data
//! clock = true          # reads the wall clock between ticks (default false)
//! max_objects = 200     # most objects it will ever serve
//! memory_mb = 32        # linear memory it needs
//! create_objects = true # lets BACnet clients create and delete its objects (default false)
//!
//! [app]                 # an application's asks (see `app::grants` for the syntax)
//! read = ["*/analog-input,*"]
//! write = ["*/binary-output,*"]
//! publish = ["building/alarms/#"]
//! subscribe = []
//! ```
//!
//! An application touches only what both its manifest's `[app]` and the
//! operator's `[[app]]` grants allow (`max_objects` is required in every
//! manifest; an application's is 0).
//!
//! # What the host decides
//!
//! First, the files must be readable as files: each is read through
//! `bounded_read`, so one that is not a regular file (a named pipe, a
//! device, a symlink to one) or holds more than its cap ([`MAX_SIGNATURE_BYTES`],
//! [`MAX_MANIFEST_BYTES`], [`super::MAX_COMPONENT_BYTES`]) is refused, naming
//! it, whatever size it reports. Then, in this order, each refusal one
//! [`PolicyError`] naming the plugin file and the reason:
//! 1. A signature, when present, must verify and cover exactly this
//!    component and this manifest, whatever the policy.
//! 2. Its key must be one of `[policy] trusted_keys`. An unsigned plugin, or
//!    one signed by a key not trusted, loads only with
//!    `allow_unsigned = true` (development only; a warning is logged for
//!    every such plugin).
//! 3. The manifest's asks must fit the policy's ceilings: `memory_mb` ≤
//!    `max_memory_mb`, `max_objects` ≤ `max_objects`, and `data_dir = "write"`
//!    only with `allow_data_write = true`.
//!
//! The granted [`Capabilities`] then shape the instance
//! ([`Capabilities::apply`]): its memory limit is the smallest of the
//! manifest's, the policy's and the device's `memory_mb`; the data directory
//! is preopened only if asked for, writable only if asked for and allowed.
//! Once loaded, a plugin serving more objects than its `max_objects` is
//! refused ([`Capabilities::check_objects`]).
//!
//! `create_objects` is the plugin's half of object lifecycle: a
//! CreateObject or DeleteObject reaches the plugin only for the types the
//! operator lists in the device's `create_objects`, and a device listing
//! one of the model's types refuses to start with a plugin whose manifest
//! does not ask for it.
//!
//! An unsigned plugin loaded under `allow_unsigned` without a manifest gets
//! what plugin files got before signing existed: a read-only data directory,
//! the clock, and the policy's memory and object ceilings.
//!
//! `clock` is declared and recorded but not yet withheld: every plugin is
//! told the time by `tick(now)` anyway, so `clock = false` only promises not
//! to ask between ticks.
//!
//! Built-in plugins (`builtin:…`, compiled into or built with this binary)
//! are trusted by construction: they are never checked here, and run with
//! the device's configuration as it is.
//!
//! This module must never load or run a plugin, and never grant more than
//! both the manifest asks for and the policy allows.

use super::signing::{self, SignatureError, SignatureFile};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Largest manifest accepted.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 10;
/// Largest signature file accepted.
pub const MAX_SIGNATURE_BYTES: u64 = 4 << 10;

/// `[policy]` of the configuration file: the operator's rules for plugin
/// files (enforced by [`check`]; built-in plugins are trusted by
/// construction and not subject to it).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// ed25519 public keys (64 hex digits) whose signatures are trusted.
    #[serde(default)]
    pub trusted_keys: Vec<String>,
    /// Load unsigned (or untrusted-key) plugins too. Development only: a
    /// warning is logged for every plugin loaded this way.
    #[serde(default)]
    pub allow_unsigned: bool,
    /// Most memory a manifest may ask for, in MiB (default 256).
    #[serde(default = "default_max_memory")]
    pub max_memory_mb: u32,
    /// Whether a manifest may ask for a writable data directory.
    #[serde(default)]
    pub allow_data_write: bool,
    /// Most objects a manifest may declare (default 10000).
    #[serde(default = "default_max_objects")]
    pub max_objects: u32,
}

fn default_max_memory() -> u32 {
    256
}
fn default_max_objects() -> u32 {
    10_000
}

impl Default for PolicySection {
    fn default() -> Self {
        PolicySection {
            trusted_keys: Vec::new(),
            allow_unsigned: false,
            max_memory_mb: default_max_memory(),
            allow_data_write: false,
            max_objects: default_max_objects(),
        }
    }
}

impl PolicySection {
    /// Check the rules themselves (each trusted key, the memory ceiling):
    /// the configuration refuses a `[policy]` that fails, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        for (i, k) in self.trusted_keys.iter().enumerate() {
            signing::parse_public_key(k).map_err(|e| format!("policy: trusted_keys[{i}]: {e}"))?;
        }
        if !(1..=4096).contains(&self.max_memory_mb) {
            return Err("policy: max_memory_mb must be 1..=4096".into());
        }
        Ok(())
    }
}

/// A plugin's `NAME.manifest.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Access to its data directory.
    #[serde(default)]
    pub data_dir: DataAccess,
    /// Whether it reads the wall clock between ticks.
    #[serde(default)]
    pub clock: bool,
    /// Most objects it serves.
    pub max_objects: u32,
    /// Linear memory it needs, in MiB.
    pub memory_mb: u32,
    /// Whether BACnet clients may create and delete its objects (where the
    /// operator allows the type).
    #[serde(default)]
    pub create_objects: bool,
    /// An application's asks (`[app]`): the points and topics it will ever
    /// touch. The host lets it touch only what both this and the
    /// operator's `[[app]]` grants allow.
    pub app: Option<AppAsks>,
}

/// `[app]` of an application's manifest: point patterns and topic filters
/// (the syntax of `[[app]]`'s grants).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppAsks {
    /// Point patterns it reads and watches.
    #[serde(default)]
    pub read: Vec<String>,
    /// Point patterns it writes.
    #[serde(default)]
    pub write: Vec<String>,
    /// Topic filters it publishes on.
    #[serde(default)]
    pub publish: Vec<String>,
    /// Topic filters it subscribes to.
    #[serde(default)]
    pub subscribe: Vec<String>,
}

impl Manifest {
    /// Parse and sanity-check a manifest.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let m: Manifest = toml::from_str(text).map_err(|e| e.to_string().trim_end().replace('\n', " "))?;
        if m.name.trim().is_empty() {
            return Err("name must not be empty".into());
        }
        if m.version.trim().is_empty() {
            return Err("version must not be empty".into());
        }
        if m.memory_mb == 0 {
            return Err("memory_mb must be at least 1".into());
        }
        Ok(m)
    }
}

/// Access to the plugin's data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DataAccess {
    /// No file system at all.
    #[default]
    None,
    /// Read-only.
    Read,
    /// Read and write.
    Write,
}

impl fmt::Display for DataAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DataAccess::None => "none",
            DataAccess::Read => "read",
            DataAccess::Write => "write",
        })
    }
}

/// What a plugin file was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The plugin file's name, for messages.
    pub file: String,
    /// Name and version from the manifest (`None` without one).
    pub plugin: Option<(String, String)>,
    /// Access to its data directory.
    pub data_dir: DataAccess,
    /// Whether it may read the clock between ticks.
    pub clock: bool,
    /// Most objects it may serve.
    pub max_objects: u32,
    /// Memory limit in MiB (before the device's own `memory_mb`).
    pub memory_mb: u32,
    /// Whether BACnet clients may create and delete its objects.
    pub create_objects: bool,
    /// An application's asks from its manifest (`None`: no manifest, or
    /// one without `[app]`).
    pub app: Option<AppAsks>,
    /// The trusted key that signed it; `None` if it loads as unsigned.
    pub signed_by: Option<[u8; 32]>,
}

impl Capabilities {
    /// Shape a plugin instance's configuration: memory limit the smaller of
    /// the grant and the device's `memory_mb`; the data directory kept only
    /// if granted, writable only if granted.
    pub fn apply(&self, config: &mut super::PluginConfig, device_memory_mb: u64) {
        let mb = u64::from(self.memory_mb).min(device_memory_mb);
        config.limits.memory_bytes = usize::try_from(mb << 20).unwrap_or(usize::MAX);
        match self.data_dir {
            DataAccess::None => {
                if config.data_dir.take().is_some() {
                    tracing::warn!(
                        plugin = config.name,
                        "a data_dir is configured, but the plugin's manifest does not ask for one: not opened"
                    );
                }
                config.data_writable = false;
            }
            DataAccess::Read => config.data_writable = false,
            DataAccess::Write => config.data_writable = true,
        }
    }

    /// Refuse a loaded plugin that serves more objects than granted.
    pub fn check_objects(&self, count: usize) -> Result<(), PolicyError> {
        if count > self.max_objects as usize {
            return Err(PolicyError {
                plugin: self.file.clone(),
                reason: Refusal::TooManyObjects { serves: count, allowed: self.max_objects },
            });
        }
        Ok(())
    }

    /// One line for operators: `data_dir = read, clock = true, …`.
    pub fn summary(&self) -> String {
        format!(
            "data_dir = {}, clock = {}, max_objects = {}, memory_mb = {}, create_objects = {}",
            self.data_dir, self.clock, self.max_objects, self.memory_mb, self.create_objects
        )
    }
}

/// A plugin refused: `plugin NAME: REASON`, one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin {plugin}: {reason}")]
pub struct PolicyError {
    /// The plugin file's name.
    pub plugin: String,
    /// Why.
    pub reason: Refusal,
}

/// Why a plugin was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A file could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// No signature, and unsigned plugins are not allowed.
    #[error("unsigned, and policy does not allow unsigned plugins")]
    Unsigned,
    /// Signed by a key not in `trusted_keys`.
    #[error("signed by an untrusted key {0}… (not in [policy] trusted_keys)")]
    UntrustedKey(String),
    /// The signature itself does not hold.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// Signed, but the manifest beside it is missing.
    #[error("signed, but its manifest {0} is missing")]
    MissingManifest(String),
    /// The manifest does not parse.
    #[error("manifest {file}: {error}")]
    BadManifest {
        /// Manifest file name.
        file: String,
        /// Parse error.
        error: String,
    },
    /// Asks for more memory than allowed.
    #[error("asks for memory_mb = {asked} but policy allows {allowed}")]
    Memory {
        /// From the manifest.
        asked: u32,
        /// `max_memory_mb`.
        allowed: u32,
    },
    /// Asks for more objects than allowed.
    #[error("asks for max_objects = {asked} but policy allows {allowed}")]
    Objects {
        /// From the manifest.
        asked: u32,
        /// Policy `max_objects`.
        allowed: u32,
    },
    /// Asks for a writable data directory, which policy forbids.
    #[error("asks for data_dir = write but policy forbids writable data directories")]
    DataWrite,
    /// Serves more objects than its manifest declared.
    #[error("serves {serves} objects but its manifest declares max_objects = {allowed}")]
    TooManyObjects {
        /// Objects it serves.
        serves: usize,
        /// Its `max_objects`.
        allowed: u32,
    },
}

/// Decide whether the plugin `plugin` (its file name, for messages) may load
/// under `policy`, given its component bytes, its `.sig` file and its
/// manifest text (when present beside it). See the module doc for the rules.
pub fn check(
    plugin: &str,
    component: &[u8],
    signature: Option<&[u8]>,
    manifest: Option<&str>,
    policy: &PolicySection,
) -> Result<Capabilities, PolicyError> {
    let refuse = |reason: Refusal| PolicyError { plugin: plugin.to_string(), reason };
    let manifest_file = manifest_name(plugin);
    let parsed = match manifest {
        Some(text) => Some(
            Manifest::parse(text)
                .map_err(|error| refuse(Refusal::BadManifest { file: manifest_file.clone(), error }))?,
        ),
        None => None,
    };

    let signed_by = match signature {
        Some(sig) => {
            let text = manifest.ok_or_else(|| refuse(Refusal::MissingManifest(manifest_file.clone())))?;
            let sig = SignatureFile::parse(sig).map_err(|e| refuse(e.into()))?;
            sig.verify(component, text.as_bytes()).map_err(|e| refuse(e.into()))?;
            if trusted(policy).any(|k| k == sig.key) {
                Some(sig.key)
            } else if policy.allow_unsigned {
                tracing::warn!(
                    plugin,
                    key = signing::hex(&sig.key),
                    "LOADING A PLUGIN SIGNED BY AN UNTRUSTED KEY because [policy] allow_unsigned = true \
                     (development only: never set it on a production gateway)"
                );
                None
            } else {
                return Err(refuse(Refusal::UntrustedKey(signing::key_prefix(&sig.key))));
            }
        }
        None if policy.allow_unsigned => {
            tracing::warn!(
                plugin,
                "LOADING AN UNSIGNED PLUGIN because [policy] allow_unsigned = true \
                 (development only: never set it on a production gateway)"
            );
            None
        }
        None => return Err(refuse(Refusal::Unsigned)),
    };

    let Some(m) = parsed else {
        // Only reachable unsigned: what plugin files got before signing.
        return Ok(Capabilities {
            file: plugin.to_string(),
            plugin: None,
            data_dir: DataAccess::Read,
            clock: true,
            max_objects: policy.max_objects,
            memory_mb: policy.max_memory_mb,
            create_objects: false,
            app: None,
            signed_by,
        });
    };
    if m.memory_mb > policy.max_memory_mb {
        return Err(refuse(Refusal::Memory { asked: m.memory_mb, allowed: policy.max_memory_mb }));
    }
    if m.max_objects > policy.max_objects {
        return Err(refuse(Refusal::Objects { asked: m.max_objects, allowed: policy.max_objects }));
    }
    if m.data_dir == DataAccess::Write && !policy.allow_data_write {
        return Err(refuse(Refusal::DataWrite));
    }
    Ok(Capabilities {
        file: plugin.to_string(),
        plugin: Some((m.name, m.version)),
        data_dir: m.data_dir,
        clock: m.clock,
        max_objects: m.max_objects,
        memory_mb: m.memory_mb,
        create_objects: m.create_objects,
        app: m.app,
        signed_by,
    })
}

/// A plugin file and what lies beside it.
#[derive(Debug, Clone)]
pub struct PluginFiles {
    /// The file name, for messages.
    pub name: String,
    /// The component's bytes.
    pub component: Vec<u8>,
    /// `NAME.wasm.sig`, if present.
    pub signature: Option<Vec<u8>>,
    /// `NAME.manifest.toml`, if present.
    pub manifest: Option<String>,
}

impl PluginFiles {
    /// Read `path` and its `.sig` and manifest beside it (see
    /// [`signature_path`] and [`manifest_path`]).
    pub fn read(path: &Path) -> Result<PluginFiles, PolicyError> {
        Self::read_with(path, &signature_path(path), &manifest_path(path))
    }

    /// Read `path`, with the signature and manifest at the given paths.
    pub fn read_with(path: &Path, sig: &Path, manifest: &Path) -> Result<PluginFiles, PolicyError> {
        let name = display_name(path);
        let refuse = |e: String| PolicyError { plugin: name.clone(), reason: Refusal::Unreadable(e) };
        let component = read_limited(path, super::MAX_COMPONENT_BYTES).map_err(refuse)?.ok_or_else(|| {
            refuse(format!("cannot read {}: {}", path.display(), std::io::Error::from(std::io::ErrorKind::NotFound)))
        })?;
        let signature = read_limited(sig, MAX_SIGNATURE_BYTES).map_err(refuse)?;
        let manifest = match read_limited(manifest, MAX_MANIFEST_BYTES).map_err(refuse)? {
            Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| PolicyError {
                plugin: name.clone(),
                reason: Refusal::BadManifest { file: display_name(manifest), error: "not UTF-8 text".into() },
            })?),
            None => None,
        };
        Ok(PluginFiles { name, component, signature, manifest })
    }

    /// [`check`] these files.
    pub fn check(&self, policy: &PolicySection) -> Result<Capabilities, PolicyError> {
        check(&self.name, &self.component, self.signature.as_deref(), self.manifest.as_deref(), policy)
    }
}

/// Read a plugin file and its companions and [`check`] them: the component
/// bytes to load (read once, so what was checked is what runs) and the
/// capabilities granted.
pub fn check_file(path: &Path, policy: &PolicySection) -> Result<(Vec<u8>, Capabilities), PolicyError> {
    let files = PluginFiles::read(path)?;
    let caps = files.check(policy)?;
    if let Some(key) = &caps.signed_by {
        tracing::info!(plugin = files.name, key = signing::hex(key), "signature verified; {}", caps.summary());
    }
    Ok((files.component, caps))
}

/// `NAME.wasm` → `NAME.wasm.sig`.
pub fn signature_path(component: &Path) -> PathBuf {
    let mut p = component.as_os_str().to_owned();
    p.push(".sig");
    PathBuf::from(p)
}

/// `NAME.wasm` → `NAME.manifest.toml`.
pub fn manifest_path(component: &Path) -> PathBuf {
    component.with_extension("manifest.toml")
}

fn manifest_name(plugin: &str) -> String {
    display_name(&manifest_path(Path::new(plugin)))
}

fn display_name(path: &Path) -> String {
    path.file_name().unwrap_or(path.as_os_str()).to_string_lossy().into_owned()
}

fn trusted(policy: &PolicySection) -> impl Iterator<Item = [u8; 32]> + '_ {
    // Config::parse validated them; a key that does not parse trusts nothing.
    policy.trusted_keys.iter().filter_map(|k| signing::parse_public_key(k).ok())
}

/// `Ok(None)` if the file does not exist; refused unless it is a regular
/// file of at most `limit` bytes (see [`super::bounded_read`]).
fn read_limited(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, String> {
    super::bounded_read::read(path, limit).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 32] = [3; 32];
    const MANIFEST: &str = "name = \"vendor-x\"\nversion = \"1.0.0\"\ndata_dir = \"read\"\nclock = true\n\
                            max_objects = 50\nmemory_mb = 32\n";

    fn policy() -> PolicySection {
        PolicySection { trusted_keys: vec![signing::hex(&signing::public_key(&SEED))], ..PolicySection::default() }
    }

    fn signed(component: &[u8], manifest: &str) -> Vec<u8> {
        SignatureFile::sign(&SEED, component, manifest.as_bytes()).render().into_bytes()
    }

    fn refusal(r: Result<Capabilities, PolicyError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn a_trusted_signature_grants_the_manifest() {
        let sig = signed(b"wasm", MANIFEST);
        let caps = check("vendor-x.wasm", b"wasm", Some(&sig), Some(MANIFEST), &policy()).unwrap();
        assert_eq!(caps.plugin, Some(("vendor-x".into(), "1.0.0".into())));
        assert_eq!((caps.data_dir, caps.clock, caps.max_objects, caps.memory_mb), (DataAccess::Read, true, 50, 32));
        assert_eq!(caps.signed_by, Some(signing::public_key(&SEED)));
    }

    #[test]
    fn each_refusal_is_one_line_naming_plugin_and_reason() {
        let p = policy();
        let sig = signed(b"wasm", MANIFEST);
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm", None, Some(MANIFEST), &p)),
            "plugin vendor-x.wasm: unsigned, and policy does not allow unsigned plugins"
        );
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm!", Some(&sig), Some(MANIFEST), &p)),
            "plugin vendor-x.wasm: signature does not match the component (tampered?)"
        );
        let other = MANIFEST.replace("32", "33");
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm", Some(&sig), Some(&other), &p)),
            "plugin vendor-x.wasm: signature does not match the manifest (tampered?)"
        );
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm", Some(&sig), None, &p)),
            "plugin vendor-x.wasm: signed, but its manifest vendor-x.manifest.toml is missing"
        );
        let untrusted = PolicySection::default();
        let e = refusal(check("vendor-x.wasm", b"wasm", Some(&sig), Some(MANIFEST), &untrusted));
        assert_eq!(
            e,
            format!(
                "plugin vendor-x.wasm: signed by an untrusted key {}… (not in [policy] trusted_keys)",
                &signing::hex(&signing::public_key(&SEED))[..16]
            )
        );
        let big = MANIFEST.replace("memory_mb = 32", "memory_mb = 512");
        let p128 = PolicySection { max_memory_mb: 128, ..policy() };
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm", Some(&signed(b"wasm", &big)), Some(&big), &p128)),
            "plugin vendor-x.wasm: asks for memory_mb = 512 but policy allows 128"
        );
        let w = MANIFEST.replace("\"read\"", "\"write\"");
        assert_eq!(
            refusal(check("vendor-x.wasm", b"wasm", Some(&signed(b"wasm", &w)), Some(&w), &p)),
            "plugin vendor-x.wasm: asks for data_dir = write but policy forbids writable data directories"
        );
        let many = MANIFEST.replace("max_objects = 50", "max_objects = 50000");
        let e = refusal(check("vendor-x.wasm", b"wasm", Some(&signed(b"wasm", &many)), Some(&many), &p));
        assert_eq!(e, "plugin vendor-x.wasm: asks for max_objects = 50000 but policy allows 10000");
        let typo = MANIFEST.replace("clock", "clocks");
        let e = refusal(check("vendor-x.wasm", b"wasm", Some(&signed(b"wasm", &typo)), Some(&typo), &p));
        assert!(
            e.starts_with("plugin vendor-x.wasm: manifest vendor-x.manifest.toml: ") && e.contains("clocks"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn allow_unsigned_admits_unsigned_and_untrusted_but_never_tampered() {
        let dev = PolicySection { allow_unsigned: true, ..PolicySection::default() };
        let caps = check("dev.wasm", b"wasm", None, None, &dev).unwrap();
        assert_eq!(caps.signed_by, None);
        assert_eq!((caps.data_dir, caps.memory_mb), (DataAccess::Read, dev.max_memory_mb));
        let caps = check("dev.wasm", b"wasm", Some(&signed(b"wasm", MANIFEST)), Some(MANIFEST), &dev).unwrap();
        assert_eq!((caps.signed_by, caps.memory_mb), (None, 32));
        let e = refusal(check("dev.wasm", b"tampered", Some(&signed(b"wasm", MANIFEST)), Some(MANIFEST), &dev));
        assert!(e.ends_with("(tampered?)"), "{e}");
        // Ceilings hold for unsigned plugins too.
        let w = MANIFEST.replace("\"read\"", "\"write\"");
        assert!(refusal(check("dev.wasm", b"wasm", None, Some(&w), &dev)).contains("forbids writable"));
    }

    #[test]
    fn capabilities_shape_the_instance() {
        let caps = Capabilities {
            file: "p.wasm".into(),
            plugin: None,
            data_dir: DataAccess::Write,
            clock: false,
            max_objects: 2,
            memory_mb: 32,
            create_objects: false,
            app: None,
            signed_by: None,
        };
        let mut pc = crate::PluginConfig::new("p");
        pc.data_dir = Some("/tmp".into());
        caps.apply(&mut pc, 16);
        assert_eq!((pc.limits.memory_bytes, pc.data_writable), (16 << 20, true));
        caps.apply(&mut pc, 64);
        assert_eq!(pc.limits.memory_bytes, 32 << 20);
        Capabilities { data_dir: DataAccess::Read, ..caps.clone() }.apply(&mut pc, 64);
        assert!(!pc.data_writable && pc.data_dir.is_some());
        Capabilities { data_dir: DataAccess::None, ..caps.clone() }.apply(&mut pc, 64);
        assert!(pc.data_dir.is_none());
        assert!(caps.check_objects(2).is_ok());
        assert_eq!(
            caps.check_objects(3).unwrap_err().to_string(),
            "plugin p.wasm: serves 3 objects but its manifest declares max_objects = 2"
        );
    }

    #[test]
    fn companion_paths() {
        assert_eq!(signature_path(Path::new("/a/x.wasm")), Path::new("/a/x.wasm.sig"));
        assert_eq!(manifest_path(Path::new("/a/x.wasm")), Path::new("/a/x.manifest.toml"));
        assert_eq!(manifest_name("x.wasm"), "x.manifest.toml");
    }
}
