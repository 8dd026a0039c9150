//! Numeric NodeIds that stay the same across restarts and hot swaps: each
//! node's key (`1001`, `1001/analog-input,1`, `1001/analog-input,1/present-value`,
//! …) gets the next free number the first time it is seen, and the pair is
//! appended to a file that the next start reads back.
//!
//! A number is never reused: an object that disappears (a swap removed it)
//! and comes back gets its old number. Numbers below [`FIRST_ALLOCATED`] are
//! the server's fixed nodes.
//!
//! Must never: hand out a number twice, or lose a pair it handed out once
//! the pair is persisted (new pairs are appended and synced, never rewritten).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first number handed out; those below are fixed nodes.
pub const FIRST_ALLOCATED: u32 = 1000;
/// The file is refused past this size (a table of millions of nodes).
const MAX_FILE_BYTES: u64 = 256 << 20;

/// Why the table could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NodeIdError {
    /// The file could not be read or appended to.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A line is not `NUMBER KEY`, or repeats a number or a key.
    #[error("{path}:{line}: {what}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
}

/// Keys → numbers, persisted in one file (or in memory only).
#[derive(Debug)]
pub struct NodeIdTable {
    ids: HashMap<String, u32>,
    next: u32,
    file: Option<PathBuf>,
    unsaved: Vec<(u32, String)>,
}

impl NodeIdTable {
    /// A table kept in memory only (numbers change across restarts).
    pub fn in_memory() -> Self {
        NodeIdTable { ids: HashMap::new(), next: FIRST_ALLOCATED, file: None, unsaved: Vec::new() }
    }

    /// The table persisted in `path` (created, with its directory, at the
    /// first save if missing).
    pub fn open(path: &Path) -> Result<Self, NodeIdError> {
        let io = |source| NodeIdError::Io { path: path.to_owned(), source };
        let mut table = NodeIdTable { file: Some(path.to_owned()), ..Self::in_memory() };
        let text = match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(table),
            Err(e) => return Err(io(e)),
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(NodeIdError::Malformed {
                    path: path.to_owned(),
                    line: 0,
                    what: format!("{} bytes, more than the {MAX_FILE_BYTES} a table may have", m.len()),
                });
            }
            Ok(_) => std::fs::read_to_string(path).map_err(io)?,
        };
        let mut seen = std::collections::HashSet::new();
        for (i, line) in text.lines().enumerate() {
            let bad = |what: String| NodeIdError::Malformed { path: path.to_owned(), line: i + 1, what };
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let (number, key) = line.split_once(' ').ok_or_else(|| bad("expected `NUMBER KEY`".into()))?;
            let number: u32 = number.parse().map_err(|_| bad(format!("`{number}` is not a node number")))?;
            if number < FIRST_ALLOCATED {
                return Err(bad(format!("{number} is below {FIRST_ALLOCATED}, the fixed nodes' range")));
            }
            if !seen.insert(number) {
                return Err(bad(format!("number {number} given twice")));
            }
            if table.ids.insert(key.to_owned(), number).is_some() {
                return Err(bad(format!("key `{key}` given twice")));
            }
            table.next = table.next.max(number.saturating_add(1));
        }
        Ok(table)
    }

    /// The number of `key`, allocating one if it is new (kept unsaved until
    /// [`NodeIdTable::save`]).
    pub fn id(&mut self, key: &str) -> u32 {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.next;
        self.next = self.next.saturating_add(1);
        self.ids.insert(key.to_owned(), id);
        self.unsaved.push((id, key.to_owned()));
        id
    }

    /// Numbers handed out so far.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no number was handed out.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Append the numbers handed out since the last save, and sync.
    pub fn save(&mut self) -> Result<(), NodeIdError> {
        let Some(path) = &self.file else {
            self.unsaved.clear();
            return Ok(());
        };
        if self.unsaved.is_empty() {
            return Ok(());
        }
        let io = |source| NodeIdError::Io { path: path.clone(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut text = String::new();
        for (id, key) in &self.unsaved {
            text.push_str(&format!("{id} {key}\n"));
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_data().map_err(io)?;
        self.unsaved.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trellis-nodeids-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("node-ids")
    }

    #[test]
    fn numbers_survive_a_restart_and_are_never_reused() {
        let path = temp("restart");
        let mut t = NodeIdTable::open(&path).unwrap();
        let a = t.id("1001/analog-input,1");
        let b = t.id("1001/analog-input,1/present-value");
        assert_eq!(t.id("1001/analog-input,1"), a);
        t.save().unwrap();
        let mut again = NodeIdTable::open(&path).unwrap();
        // Asked in another order after the restart: the same numbers.
        assert_eq!(again.id("1001/analog-input,1/present-value"), b);
        assert_eq!(again.id("1001/analog-input,1"), a);
        let c = again.id("1001/analog-value,7");
        assert!(c > a && c > b, "a new key gets a fresh number");
        again.save().unwrap();
        assert_eq!(NodeIdTable::open(&path).unwrap().id("1001/analog-value,7"), c);
    }

    #[test]
    fn a_damaged_file_is_refused_with_its_line() {
        let path = temp("damaged");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "1000 a\n1000 b\n").unwrap();
        let e = NodeIdTable::open(&path).unwrap_err().to_string();
        assert!(e.contains(":2: number 1000 given twice"), "{e}");
        std::fs::write(&path, "12 a\n").unwrap();
        assert!(NodeIdTable::open(&path).unwrap_err().to_string().contains("fixed nodes"));
        std::fs::write(&path, "x a\n").unwrap();
        assert!(NodeIdTable::open(&path).unwrap_err().to_string().contains("not a node number"));
    }
}
