//! A model's state on disk (issue 42): the snapshot and journal that a
//! restart of the gateway — after a clean stop, a `kill -9` or a power loss
//! — starts the model from, so what a client wrote and the device
//! acknowledged is not forgotten.
//!
//! The instance already keeps a snapshot and a journal in memory for its
//! own restarts (see `instance`); with a [`DiskState`] attached it also
//! writes them through a [`trellis_persist::Journal`]: every write the
//! plugin accepted is appended before the write is answered, and a
//! snapshot replaces the journal when the in-memory one is replaced — at
//! once for creations, deletions, acknowledgments, state imports and
//! replays, at most every [`DISK_SNAPSHOT_INTERVAL`] for state only the
//! clock changed (a trend log's records), and never when nothing changed.
//!
//! A snapshot on disk is an envelope naming the plugin version that
//! exported it, so a refusal by another version can say whose state it
//! refused:
//!
//! ```text
//! 0x01 | name length (u16 LE) | name | version length (u16 LE) | version | export-state's octets
//! ```
//!
//! The disk state belongs to the device, not to one instance: a hot swap
//! or a ReinitializeDevice hands it to the instance that serves next.
//!
//! Must never: fail a request because the disk did (the write took effect;
//! the failure is logged, counted and retried by the next snapshot), or
//! write a state that was not the serving instance's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use trellis_model::{PluginInfo, PropertyWrite};
use trellis_persist::Journal;

/// The longest a state that only the clock changed waits for its snapshot
/// on disk (written state never waits: its writes are in the journal).
pub const DISK_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(60);

const ENVELOPE_VERSION: u8 = 1;

/// What the disk state did, readable without the instance's lock.
#[derive(Debug, Default)]
pub struct DiskCounters {
    /// Writes appended to the journal.
    pub appended: AtomicU64,
    /// Snapshots written.
    pub snapshots: AtomicU64,
    /// Appends or snapshots the disk refused (logged each time).
    pub failures: AtomicU64,
}

/// The model's journal on disk, attached to the instance that serves.
#[derive(Debug)]
pub struct DiskState {
    journal: Journal,
    /// The last state written, so an unchanged one is not written again.
    written: Option<Arc<[u8]>>,
    written_at: Instant,
    counters: Arc<DiskCounters>,
    record: Vec<u8>,
}

impl DiskState {
    /// Write through `journal` from now on.
    pub fn new(journal: Journal) -> Self {
        DiskState { journal, written: None, written_at: Instant::now(), counters: Arc::default(), record: Vec::new() }
    }

    /// Its counters (shared: they move with it).
    pub fn counters(&self) -> Arc<DiskCounters> {
        self.counters.clone()
    }

    /// The journal (for setting a refused state aside).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Append writes the plugin accepted, before they are answered.
    pub(crate) fn append<'a>(&mut self, plugin: &str, writes: impl Iterator<Item = &'a PropertyWrite>) {
        let mut records = Vec::new();
        self.record.clear();
        for w in writes {
            let start = self.record.len();
            w.to_record(&mut self.record);
            records.push(start..self.record.len());
        }
        if records.is_empty() {
            return;
        }
        let slices: Vec<&[u8]> = records.iter().map(|r| &self.record[r.clone()]).collect();
        match self.journal.append(&slices) {
            Ok(()) => {
                self.counters.appended.fetch_add(slices.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    plugin,
                    "could not journal {} accepted writes in {}: {e}; they hold until the gateway restarts, \
                     and the next snapshot tries again",
                    slices.len(),
                    self.journal.snapshot_path().display()
                );
            }
        }
    }

    /// The serving instance's new snapshot: written when `forced`, when
    /// the journal holds writes it replaces, or when it changed and the
    /// last is [`DISK_SNAPSHOT_INTERVAL`] old.
    pub(crate) fn keep(&mut self, plugin: &str, info: &PluginInfo, state: &Arc<[u8]>, forced: bool) {
        let changed = self.written.as_deref() != Some(&state[..]);
        let due = forced
            || self.journal.records() > 0
            || (changed && self.written_at.elapsed() >= DISK_SNAPSHOT_INTERVAL)
            || self.written.is_none();
        if !due || (!changed && self.journal.records() == 0) {
            return;
        }
        match self.journal.replace_snapshot(&envelope(info, state)) {
            Ok(()) => {
                self.written = Some(state.clone());
                self.written_at = Instant::now();
                self.counters.snapshots.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    plugin,
                    "could not write the state snapshot {}: {e}; the journal keeps the writes",
                    self.journal.snapshot_path().display()
                );
            }
        }
    }
}

/// A snapshot as written to disk.
pub fn envelope(info: &PluginInfo, state: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + info.name.len() + info.version.len() + state.len());
    out.push(ENVELOPE_VERSION);
    for text in [&info.name, &info.version] {
        let text = &text.as_bytes()[..text.len().min(u16::MAX as usize)];
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
        out.extend_from_slice(text);
    }
    out.extend_from_slice(state);
    out
}

/// Who exported a snapshot on disk ("name version") and its state.
pub fn open_envelope(b: &[u8]) -> Result<(String, &[u8]), String> {
    let mut rest = match b.split_first() {
        Some((&ENVELOPE_VERSION, rest)) => rest,
        Some((v, _)) => return Err(format!("a state envelope of version {v} (this gateway reads {ENVELOPE_VERSION})")),
        None => return Err("an empty state snapshot".into()),
    };
    let mut texts = Vec::with_capacity(2);
    for _ in 0..2 {
        let (len, after) = rest.split_at_checked(2).ok_or("a state envelope cut short")?;
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        let (text, after) = after.split_at_checked(len).ok_or("a state envelope cut short")?;
        texts.push(String::from_utf8_lossy(text).into_owned());
        rest = after;
    }
    Ok((texts.join(" "), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// What the disk hands back may be anything: an error, never a panic.
        #[test]
        fn any_octets_are_an_envelope_a_write_or_an_error(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = open_envelope(&b);
            if let Ok(w) = PropertyWrite::from_record(&b) {
                let mut again = Vec::new();
                w.to_record(&mut again);
                prop_assert_eq!(PropertyWrite::from_record(&again), Ok(w));
            }
        }
    }

    #[test]
    fn the_envelope_names_who_exported_the_state() {
        let info = PluginInfo { name: "demo-building".into(), version: "0.4.2".into(), description: String::new() };
        let b = envelope(&info, b"TRST\x01state");
        assert_eq!(open_envelope(&b).unwrap(), ("demo-building 0.4.2".to_string(), &b"TRST\x01state"[..]));
        for n in 0..b.len() - 10 {
            assert!(open_envelope(&b[..n]).is_err(), "cut at {n}");
        }
        assert!(open_envelope(&[9, 0, 0, 0, 0]).unwrap_err().contains("version 9"));
    }
}
