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
//! A disk that refuses a write (full, failing) does not fail the request:
//! the write took effect and holds in memory. The first refusal is logged
//! (not each: a full disk under load would flood the log), every one is
//! counted, and from then on a snapshot of the whole state is tried at
//! most every [`RETRY_EVERY`] (after a write or at a tick) until one is
//! written, which says so in the log: what the refusals missed is on disk
//! again without another write to carry it. A crash before that loses the
//! writes the disk refused, and nothing else.
//!
//! Must never: fail a request because the disk did, or
//! write a state that was not the serving instance's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use trellis_model::{PluginInfo, PropertyWrite};
use trellis_persist::Journal;

/// The longest a state that only the clock changed waits for its snapshot
/// on disk (written state never waits: its writes are in the journal).
pub const DISK_SNAPSHOT_INTERVAL: Duration = Duration::from_secs(60);

/// While the disk owes the state, a snapshot is tried at most this often.
pub const RETRY_EVERY: Duration = Duration::from_secs(1);

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
    /// The disk refused something: a whole snapshot is owed.
    owed: Option<Owed>,
}

/// Since when the disk owes the state, and when it was last tried.
#[derive(Debug, Clone, Copy)]
struct Owed {
    since: Instant,
    tried: Instant,
    refused: u64,
}

impl DiskState {
    /// Write through `journal` from now on.
    pub fn new(journal: Journal) -> Self {
        DiskState {
            journal,
            written: None,
            written_at: Instant::now(),
            counters: Arc::default(),
            record: Vec::new(),
            owed: None,
        }
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
                let what = format!("could not journal {} accepted writes", slices.len());
                self.refused(plugin, &what, &e);
            }
        }
    }

    /// The disk refused `what`: counted always, logged when it starts.
    fn refused(&mut self, plugin: &str, what: &str, e: &std::io::Error) {
        self.counters.failures.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        match &mut self.owed {
            Some(owed) => owed.refused += 1,
            None => {
                self.owed = Some(Owed { since: now, tried: now, refused: 1 });
                tracing::error!(
                    plugin,
                    "{what} in {}: {e}; they hold in memory (a crash now loses them), and a snapshot of the whole \
                     state is tried every {RETRY_EVERY:?} until the disk takes it",
                    self.journal.snapshot_path().display()
                );
            }
        }
    }

    /// Whether a snapshot should be tried now to pay what the disk owes
    /// (at most every [`RETRY_EVERY`]).
    pub(crate) fn retry_due(&mut self) -> bool {
        match &mut self.owed {
            Some(owed) if owed.tried.elapsed() >= RETRY_EVERY => {
                owed.tried = Instant::now();
                true
            }
            _ => false,
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
        let owed = self.owed.is_some();
        if !owed && (!due || (!changed && self.journal.records() == 0)) {
            return;
        }
        match self.journal.replace_snapshot(&envelope(info, state)) {
            Ok(()) => {
                self.written = Some(state.clone());
                self.written_at = Instant::now();
                self.counters.snapshots.fetch_add(1, Ordering::Relaxed);
                if let Some(o) = self.owed.take() {
                    tracing::info!(
                        plugin,
                        refused = o.refused,
                        "the disk takes writes again after {:.1} s: the whole state is in {}",
                        o.since.elapsed().as_secs_f64(),
                        self.journal.snapshot_path().display()
                    );
                }
            }
            Err(e) => self.refused(plugin, "could not write the state snapshot", &e),
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
