//! An application's persisted key-value state: a small map kept in one
//! file, rewritten whole (temporary file, then rename) at each change, so a
//! crash leaves the old map or the new one, never half of either.
//!
//! File format: `TKV1`, then per entry a u16 key length, the key (UTF-8), a
//! u32 value length and the value, all big-endian; a CRC-32 of everything
//! before it ends the file. A file that does not check out is set aside
//! (renamed `.damaged`) and the state starts empty, with a warning.
//!
//! Must never: hold more than its bound, or lose the previous state when a
//! write fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"TKV1";

/// The state and where it lives (`None`: in memory only).
#[derive(Debug)]
pub struct KvState {
    map: BTreeMap<String, Vec<u8>>,
    file: Option<PathBuf>,
    max_bytes: usize,
}

fn size(map: &BTreeMap<String, Vec<u8>>) -> usize {
    map.iter().map(|(k, v)| 6 + k.len() + v.len()).sum()
}

impl KvState {
    /// The state kept in `file` (read back if it is there), at most
    /// `max_bytes` of keys and values.
    pub fn open(file: Option<PathBuf>, max_bytes: usize) -> KvState {
        let map = match &file {
            Some(f) => match std::fs::read(f) {
                Ok(bytes) => decode(&bytes).unwrap_or_else(|why| {
                    let aside = f.with_extension("damaged");
                    tracing::warn!(
                        "app state {}: {why}; set aside as {}, starting empty",
                        f.display(),
                        aside.display()
                    );
                    let _ = std::fs::rename(f, aside);
                    BTreeMap::new()
                }),
                Err(_) => BTreeMap::new(),
            },
            None => BTreeMap::new(),
        };
        KvState { map, file, max_bytes }
    }

    /// A value.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.map.get(key).cloned()
    }

    /// Set or remove a value, kept on disk before this returns.
    pub fn set(&mut self, key: String, value: Option<Vec<u8>>) -> Result<(), String> {
        if key.len() > usize::from(u16::MAX) {
            return Err("a key is at most 65535 bytes".into());
        }
        let mut next = self.map.clone();
        match value {
            Some(v) => next.insert(key, v),
            None => next.remove(&key),
        };
        let total = size(&next);
        if total > self.max_bytes {
            return Err(format!("the state would hold {total} bytes, more than its {} byte bound", self.max_bytes));
        }
        if let Some(file) = &self.file {
            write_atomically(file, &encode(&next)).map_err(|e| format!("the state could not be kept on disk: {e}"))?;
        }
        self.map = next;
        Ok(())
    }
}

fn encode(map: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (k, v) in map {
        out.extend_from_slice(&(k.len() as u16).to_be_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        out.extend_from_slice(v);
    }
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn decode(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let (body, crc) = bytes.split_at_checked(bytes.len().saturating_sub(4)).ok_or("too short")?;
    if !body.starts_with(MAGIC) || crc.len() != 4 || crc32(body).to_be_bytes() != crc {
        return Err("not a state file, or damaged (its check does not match)".into());
    }
    let mut rest = &body[MAGIC.len()..];
    let mut map = BTreeMap::new();
    while !rest.is_empty() {
        let mut take = |n: usize| -> Result<&[u8], String> {
            let (part, after) = rest.split_at_checked(n).ok_or("truncated entry")?;
            rest = after;
            Ok(part)
        };
        let klen = u16::from_be_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        let key = String::from_utf8(take(klen)?.to_vec()).map_err(|_| "a key is not UTF-8")?;
        let vlen = u32::from_be_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        map.insert(key, take(vlen)?.to_vec());
    }
    Ok(map)
}

fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = file.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_survives_a_reopen_and_keeps_its_bound() {
        let dir = std::env::temp_dir().join(format!("trellis-kv-{}", std::process::id()));
        let file = dir.join("state.kv");
        let _ = std::fs::remove_dir_all(&dir);
        let mut kv = KvState::open(Some(file.clone()), 64);
        kv.set("alarm".into(), Some(b"high".to_vec())).unwrap();
        kv.set("count".into(), Some(vec![0, 3])).unwrap();
        let err = kv.set("big".into(), Some(vec![0; 60])).unwrap_err();
        assert!(err.contains("64 byte bound"), "{err}");
        let mut again = KvState::open(Some(file.clone()), 64);
        assert_eq!(again.get("alarm").as_deref(), Some(&b"high"[..]));
        assert_eq!(again.get("count"), Some(vec![0, 3]));
        assert_eq!(again.get("big"), None, "a refused write left nothing");
        again.set("alarm".into(), None).unwrap();
        assert_eq!(KvState::open(Some(file.clone()), 64).get("alarm"), None);

        // A damaged file is set aside, not fatal.
        let mut bytes = std::fs::read(&file).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 0xff;
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(KvState::open(Some(file.clone()), 64).get("count"), None);
        assert!(file.with_extension("damaged").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    proptest::proptest! {
        /// A state file of any bytes is read or refused, never a panic.
        #[test]
        fn any_file_is_read_or_refused(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = decode(&bytes);
            let mut valid = MAGIC.to_vec();
            valid.extend_from_slice(&bytes);
            let crc = crc32(&valid);
            valid.extend_from_slice(&crc.to_be_bytes());
            // A good check over a bad body: the entries still do not panic.
            let _ = decode(&valid);
        }
    }
}
