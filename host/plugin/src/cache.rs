//! Compiled components cached on disk, so a restart of the gateway does not
//! recompile its plugins.
//!
//! A cache entry is `<dir>/<key>.cwasm`, where `key` is the SHA-256 of the
//! engine's compatibility hash and the component's bytes, so a different
//! component or an engine with a different configuration or wasmtime version
//! never finds another's entry. The file holds wasmtime's serialized
//! component followed by the SHA-256 of those bytes and a magic trailer.
//! Entries are written to a temporary file and renamed into place, so a
//! reader never sees a half-written entry.
//!
//! The last few components loaded are also kept in memory (keyed the same
//! way), so loading one again — a hot swap back and forth, a restart of a
//! plugin — reads, verifies and deserializes nothing: one hash of the
//! component's bytes finds it. They stay mapped while remembered, even when
//! no plugin uses them any more ([`KEEP_LOADED`] at most).
//!
//! This module must never hand wasmtime a file it did not verify: a missing,
//! truncated, corrupt or stale entry is recompiled and rewritten, never
//! trusted. Deserializing is the one `unsafe` operation of the plugin runtime
//! (see [`ComponentCache::load`] for why it is sound here).

use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Trailer marking a complete entry written by this version of the cache.
const MAGIC: &[u8; 8] = b"TRLSCW01";
/// Digest plus magic.
const TRAILER_LEN: usize = 32 + MAGIC.len();

/// Components kept in memory after loading, most recent last.
pub const KEEP_LOADED: usize = 4;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded before by this engine: the same compiled component, shared.
    InMemory,
    /// Deserialized from a verified cache entry.
    Hit,
    /// Compiled (no entry yet) and written to the cache.
    Compiled,
    /// An entry existed but was corrupt, stale or unreadable; recompiled.
    Replaced,
    /// Compiled without a cache.
    Uncached,
}

/// A directory of compiled components, and the last few loaded.
#[derive(Clone)]
pub struct ComponentCache {
    dir: PathBuf,
    loaded: Arc<Mutex<Loaded>>,
}

/// Components loaded recently, by key, the most recent last.
type Loaded = VecDeque<([u8; 32], Component)>;

impl std::fmt::Debug for ComponentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("ComponentCache").field("dir", &self.dir).field("loaded", &loaded).finish()
    }
}

impl ComponentCache {
    /// Use (and create, owner-only) `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(ComponentCache { dir, loaded: Arc::default() })
    }

    /// `$XDG_CACHE_HOME/trellis/components`, else `$HOME/.cache/…`, else a
    /// directory under the system temporary directory.
    pub fn default_dir() -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("trellis").join("components")
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry for `bytes` compiled by `engine`.
    pub fn entry_path(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        self.path_of(&key(engine, bytes))
    }

    fn path_of(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(format!("{}.cwasm", hex(key)))
    }

    /// The compiled component for `bytes`: from memory, from a verified
    /// cache entry, or compiled and cached.
    pub fn load(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome)> {
        let key = key(engine, bytes);
        if let Some(c) = self.recall(&key) {
            return Ok((c, CacheOutcome::InMemory));
        }
        let (component, outcome) = self.load_entry(engine, bytes, &self.path_of(&key))?;
        self.remember(key, &component);
        Ok((component, outcome))
    }

    fn recall(&self, key: &[u8; 32]) -> Option<Component> {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.iter().find(|(k, _)| k == key).map(|(_, c)| c.clone())
    }

    fn remember(&self, key: [u8; 32], component: &Component) {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.retain(|(k, _)| *k != key);
        if loaded.len() == KEEP_LOADED {
            loaded.pop_front();
        }
        loaded.push_back((key, component.clone()));
    }

    fn load_entry(&self, engine: &Engine, bytes: &[u8], path: &Path) -> wasmtime::Result<(Component, CacheOutcome)> {
        let mut outcome = CacheOutcome::Compiled;
        match std::fs::read(path) {
            Ok(file) => match verified_body(&file) {
                Some(body) => match deserialize(engine, body) {
                    Ok(c) => return Ok((c, CacheOutcome::Hit)),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "stale plugin cache entry, recompiling: {e:#}");
                        outcome = CacheOutcome::Replaced;
                    }
                },
                None => {
                    tracing::warn!(path = %path.display(), "corrupt plugin cache entry, recompiling");
                    outcome = CacheOutcome::Replaced;
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "unreadable plugin cache entry, recompiling: {e}");
                outcome = CacheOutcome::Replaced;
            }
        }
        let started = std::time::Instant::now();
        let compiled = engine.precompile_component(bytes)?;
        // On a small ARM box (or under emulation) this is the slow part of
        // a first start: say how slow.
        tracing::info!(
            octets = bytes.len(),
            ms = started.elapsed().as_millis() as u64,
            "plugin compiled to native code (cached for the next start)"
        );
        if let Err(e) = self.store(path, &compiled) {
            tracing::warn!(path = %path.display(), "could not write plugin cache entry: {e}");
        }
        Ok((deserialize(engine, &compiled)?, outcome))
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let tmp = path.with_extension(format!("tmp.{}.{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(compiled)?;
            f.write_all(&Sha256::digest(compiled))?;
            f.write_all(MAGIC)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

/// Compile without a cache.
pub fn compile_uncached(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome)> {
    Ok((Component::new(engine, bytes)?, CacheOutcome::Uncached))
}

/// The serialized component inside a complete entry whose digest matches.
fn verified_body(file: &[u8]) -> Option<&[u8]> {
    let split = file.len().checked_sub(TRAILER_LEN)?;
    let (body, trailer) = file.split_at(split);
    let (digest, magic) = trailer.split_at(32);
    (magic == MAGIC && Sha256::digest(body).as_slice() == digest).then_some(body)
}

/// Deserialize bytes that [`Engine::precompile_component`] produced.
///
/// SAFETY argument, for the one `unsafe` block: wasmtime requires that the
/// bytes were produced by `Engine::precompile_component` /
/// `Component::serialize` of a compatible engine, because it maps them as
/// executable code without validating them. The bytes reaching this function
/// are either (a) what this process just compiled, or (b) the body of a cache
/// entry that this module wrote: in a directory we created owner-only, named
/// by the SHA-256 of the engine's compatibility hash and the source component,
/// ending in a SHA-256 of the body that [`verified_body`] has just checked, so
/// a truncated or bit-flipped file is rejected before it gets here. wasmtime
/// itself additionally rejects artifacts from another version or config. The
/// cache is no defence against an attacker who can write to the cache
/// directory — such an attacker can equally replace the gateway binary.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, body: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: see the function documentation: `body` is our own,
    // checksum-verified output of `precompile_component`.
    Ok(unsafe { Component::deserialize(engine, body)? })
}

fn key(engine: &Engine, bytes: &[u8]) -> [u8; 32] {
    let mut h = DigestHasher(Sha256::new());
    h.0.update(b"trellis-component-cache-v1\0");
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.update((bytes.len() as u64).to_le_bytes());
    h.0.update(bytes);
    h.0.finalize().into()
}

/// Feeds a [`Hash`] into SHA-256 (unlike `DefaultHasher`, stable across
/// processes and Rust releases).
struct DigestHasher(Sha256);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        // Only the digest is used; `Hasher` requires a u64.
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes)
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter().fold(String::with_capacity(b.len() * 2), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_trusted_only_with_its_digest_and_magic() {
        let body = b"compiled".to_vec();
        let mut file = body.clone();
        file.extend_from_slice(&Sha256::digest(&body));
        file.extend_from_slice(MAGIC);
        assert_eq!(verified_body(&file), Some(&body[..]));

        let mut flipped = file.clone();
        flipped[0] ^= 1;
        assert_eq!(verified_body(&flipped), None);
        assert_eq!(verified_body(&file[..file.len() - 1]), None);
        assert_eq!(verified_body(&file[..10]), None);
        assert_eq!(verified_body(b""), None);
    }

    #[test]
    fn keys_depend_on_the_component_bytes() {
        let engine = Engine::default();
        assert_ne!(key(&engine, b"a"), key(&engine, b"b"));
        assert_eq!(key(&engine, b"a"), key(&engine, b"a"));
        assert_eq!(hex(&[0, 0xab]), "00ab");
    }
}
