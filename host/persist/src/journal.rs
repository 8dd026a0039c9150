//! One owner's snapshot and journal, on disk.
//!
//! ```text
//! dir/NAME.snapshot   "TRLSNAP1" | generation (u64 LE) | length (u32 LE) | CRC-32 of the state (u32 LE) | state
//! dir/NAME.journal    "TRLJRNL1" | generation (u64 LE) | record*
//!           record := length (u32 LE) | CRC-32 of the payload (u32 LE) | payload
//! ```
//!
//! The journal's generation names the snapshot its records follow. A new
//! snapshot takes the next generation and is renamed into place before a
//! new, empty journal of that generation is; a crash between the two
//! leaves a journal of the previous generation, whose records the new
//! snapshot already holds, and it is dropped on open. A journal of another
//! generation than the snapshot's (the snapshot lost or damaged) is still
//! applied: its records are what clients wrote.
//!
//! A record whose frame runs past the end of the file is a torn write (the
//! process stopped while writing it); one whose checksum does not match, or
//! whose length exceeds [`MAX_RECORD`], is damage. Either way the journal is
//! cut there and what follows is set aside in `NAME.journal.damaged-SECS`,
//! so an operator can look at it; the records before it are kept.

use crate::atomic_file::{sync_dir, write_atomically};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The largest record or snapshot accepted; a length above it is damage.
pub const MAX_RECORD: usize = 64 << 20;

const SNAPSHOT_MAGIC: &[u8; 8] = b"TRLSNAP1";
const JOURNAL_MAGIC: &[u8; 8] = b"TRLJRNL1";
/// Magic and generation.
const HEADER: usize = 16;
/// A record's length and checksum.
const FRAME: usize = 8;

/// How hard an append is made durable before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Written to the operating system: survives the process's restart or
    /// crash (`kill -9`), not a power loss. About the cost of a `write`.
    Process,
    /// Also flushed to the disk (`fdatasync`): survives a power loss, at
    /// the disk's flush latency per append (≈ 0.16 ms on the project's
    /// virtual disks).
    #[default]
    PowerLoss,
}

/// Something `open` found worth telling the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Damage (a warning), as opposed to a normal event (information).
    pub damage: bool,
    /// What happened, naming the file.
    pub text: String,
}

/// What `open` read back.
#[derive(Debug, Default)]
pub struct Recovered {
    /// The last snapshot, when there is one that checks out.
    pub snapshot: Option<Vec<u8>>,
    /// The records appended after it, in order.
    pub records: Vec<Vec<u8>>,
    /// Damage found and what was done about it, and other events.
    pub notes: Vec<Note>,
}

/// One owner's snapshot and journal (see the module documentation).
#[derive(Debug)]
pub struct Journal {
    snapshot_path: PathBuf,
    journal_path: PathBuf,
    file: Arc<File>,
    generation: u64,
    durability: Durability,
    records: usize,
    octets: u64,
}

impl Journal {
    /// Open (or create) `dir/name.snapshot` and `dir/name.journal` and read
    /// them back. Fails only when the directory or the files cannot be
    /// read, created or written at all; damage is reported in the notes.
    pub fn open(dir: &Path, name: &str, durability: Durability) -> io::Result<(Journal, Recovered)> {
        std::fs::create_dir_all(dir)?;
        let snapshot_path = dir.join(format!("{name}.snapshot"));
        let journal_path = dir.join(format!("{name}.journal"));
        let mut recovered = Recovered::default();
        let snapshot = read_snapshot(&snapshot_path, &mut recovered.notes)?;
        let generation = snapshot.as_ref().map_or(0, |(g, _)| *g);
        let keep_file = match read_optional(&journal_path)? {
            None => false,
            Some(bytes) => read_journal(&journal_path, &bytes, snapshot.as_ref().map(|(g, _)| *g), &mut recovered)?,
        };
        recovered.snapshot = snapshot.map(|(_, state)| state);
        if !keep_file {
            let mut content = journal_header(generation);
            for r in &recovered.records {
                frame(&mut content, r);
            }
            write_atomically(&journal_path, &content)?;
        }
        let file = Arc::new(OpenOptions::new().append(true).open(&journal_path)?);
        let octets = file.metadata()?.len();
        let records = recovered.records.len();
        Ok((Journal { snapshot_path, journal_path, file, generation, durability, records, octets }, recovered))
    }

    /// Append records, in order, and make them as durable as the
    /// [`Durability`] says before returning — inside a
    /// [`group_commit`](crate::group_commit) once the batch ends. On an error nothing of them
    /// stays in the file (a partial write is cut off again), so a later
    /// append is never hidden behind a torn record.
    pub fn append(&mut self, records: &[&[u8]]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(records.iter().map(|r| r.len() + FRAME).sum());
        for r in records {
            if r.len() > MAX_RECORD {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "a journal record above 64 MiB"));
            }
            frame(&mut buf, r);
        }
        let written = (&*self.file).write_all(&buf).and_then(|()| match self.durability {
            // Inside a batch the flush is the batch's, once (group_commit).
            Durability::PowerLoss if crate::group_commit::defer(&self.file) => Ok(()),
            Durability::PowerLoss => self.file.sync_data(),
            Durability::Process => Ok(()),
        });
        if let Err(e) = written {
            // Whatever part reached the file would read back as a torn record.
            let _ = self.file.set_len(self.octets);
            return Err(e);
        }
        self.octets += buf.len() as u64;
        self.records += records.len();
        Ok(())
    }

    /// Make `state` the snapshot and start an empty journal after it.
    /// Always flushed to the disk (snapshots are rare). On an error the
    /// previous snapshot and journal stay in force.
    pub fn replace_snapshot(&mut self, state: &[u8]) -> io::Result<()> {
        if state.len() > MAX_RECORD {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a snapshot above 64 MiB"));
        }
        let generation = self.generation + 1;
        let mut content = Vec::with_capacity(HEADER + FRAME + state.len());
        content.extend_from_slice(SNAPSHOT_MAGIC);
        content.extend_from_slice(&generation.to_le_bytes());
        frame(&mut content, state);
        write_atomically(&self.snapshot_path, &content)?;
        // From here the new snapshot is in force; the old journal, of the
        // previous generation, is dropped on open if this stops here.
        self.generation = generation;
        write_atomically(&self.journal_path, &journal_header(generation))?;
        self.file = Arc::new(OpenOptions::new().append(true).open(&self.journal_path)?);
        self.octets = HEADER as u64;
        self.records = 0;
        Ok(())
    }

    /// Records appended since the snapshot.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Octets in the journal file.
    pub fn octets(&self) -> u64 {
        self.octets
    }

    /// The snapshot file (for messages).
    pub fn snapshot_path(&self) -> &Path {
        &self.snapshot_path
    }

    /// Copy the snapshot and the journal aside, as `NAME.snapshot.WHY-SECS`
    /// and `NAME.journal.WHY-SECS` (for a state the owner could not take,
    /// before it is replaced). Returns the snapshot's copy, if it had one.
    pub fn set_aside(&self, why: &str) -> io::Result<Option<PathBuf>> {
        let mut copied = None;
        for path in [&self.snapshot_path, &self.journal_path] {
            if path.exists() {
                let to = aside_path(path, why);
                std::fs::copy(path, &to)?;
                if copied.is_none() {
                    copied = Some(to);
                }
            }
        }
        if let Some(dir) = self.snapshot_path.parent() {
            sync_dir(dir)?;
        }
        Ok(copied)
    }
}

fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn journal_header(generation: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER);
    h.extend_from_slice(JOURNAL_MAGIC);
    h.extend_from_slice(&generation.to_le_bytes());
    h
}

fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The snapshot's generation and state, or `None` (missing, or damaged:
/// then set aside and noted).
fn read_snapshot(path: &Path, notes: &mut Vec<Note>) -> io::Result<Option<(u64, Vec<u8>)>> {
    let Some(bytes) = read_optional(path)? else { return Ok(None) };
    let checked = (|| {
        let (head, rest) = bytes.split_at_checked(HEADER).ok_or("shorter than its header")?;
        if &head[..8] != SNAPSHOT_MAGIC {
            return Err("not a Trellis snapshot (magic)");
        }
        let generation = u64::from_le_bytes(head[8..].try_into().expect("8 octets"));
        match next_record(rest) {
            Framed::Record(state, used) if used == rest.len() => Ok((generation, state.to_vec())),
            Framed::Record(..) => Err("octets after the state"),
            Framed::End | Framed::Torn => Err("cut short"),
            Framed::Damaged(why) => Err(why),
        }
    })();
    match checked {
        Ok(s) => Ok(Some(s)),
        Err(why) => {
            let aside = aside_path(path, "damaged");
            std::fs::rename(path, &aside)?;
            notes.push(Note {
                damage: true,
                text: format!(
                    "snapshot {} does not check out ({why}): set aside as {}; starting from the configured state \
                     and the journal",
                    path.display(),
                    aside.display()
                ),
            });
            Ok(None)
        }
    }
}

/// Read the journal into `recovered.records`; whether the file can be
/// appended to as it is (otherwise `open` writes it again).
fn read_journal(path: &Path, bytes: &[u8], snapshot: Option<u64>, recovered: &mut Recovered) -> io::Result<bool> {
    let header = bytes.get(..HEADER).filter(|h| &h[..8] == JOURNAL_MAGIC);
    let Some(header) = header else {
        let aside = aside_path(path, "damaged");
        std::fs::write(&aside, bytes)?;
        recovered.notes.push(Note {
            damage: true,
            text: format!(
                "journal {} is not a Trellis journal (its header): {} octets set aside as {}, no writes taken from it",
                path.display(),
                bytes.len(),
                aside.display()
            ),
        });
        return Ok(false);
    };
    let generation = u64::from_le_bytes(header[8..].try_into().expect("8 octets"));
    if let Some(s) = snapshot
        && generation < s
    {
        recovered.notes.push(Note {
            damage: false,
            text: format!(
                "journal {} precedes the snapshot (generation {generation} < {s}): the snapshot already holds its \
                 writes",
                path.display()
            ),
        });
        return Ok(false);
    }
    let mut at = HEADER;
    let mut damage = None;
    loop {
        match next_record(&bytes[at..]) {
            Framed::Record(r, used) => {
                recovered.records.push(r.to_vec());
                at += used;
            }
            Framed::End => break,
            Framed::Torn => {
                damage = Some("a torn last record: the process stopped while writing it");
                break;
            }
            Framed::Damaged(why) => {
                damage = Some(why);
                break;
            }
        }
    }
    let same_generation = snapshot.unwrap_or(0) == generation;
    if !same_generation {
        recovered.notes.push(Note {
            damage: true,
            text: format!(
                "journal {} follows snapshot generation {generation}, which is not the snapshot in force: its {} \
                 writes are applied anyway",
                path.display(),
                recovered.records.len()
            ),
        });
    }
    if let Some(why) = damage {
        let aside = aside_path(path, "damaged");
        std::fs::write(&aside, &bytes[at..])?;
        recovered.notes.push(Note {
            damage: true,
            text: format!(
                "journal {} damaged at octet {at} of {} ({why}): cut there, {} writes before it kept, the {} octets \
                 after it set aside as {}",
                path.display(),
                bytes.len(),
                recovered.records.len(),
                bytes.len() - at,
                aside.display()
            ),
        });
    }
    Ok(damage.is_none() && same_generation)
}

enum Framed<'a> {
    /// A record and the octets its frame took.
    Record(&'a [u8], usize),
    /// Nothing left.
    End,
    /// A frame that runs past the end.
    Torn,
    /// A frame that does not check out.
    Damaged(&'static str),
}

fn next_record(b: &[u8]) -> Framed<'_> {
    if b.is_empty() {
        return Framed::End;
    }
    let Some(frame) = b.get(..FRAME) else { return Framed::Torn };
    let len = u32::from_le_bytes(frame[..4].try_into().expect("4 octets")) as usize;
    let crc = u32::from_le_bytes(frame[4..].try_into().expect("4 octets"));
    if len > MAX_RECORD {
        return Framed::Damaged("a record length beyond the limit");
    }
    let Some(payload) = b.get(FRAME..FRAME + len) else { return Framed::Torn };
    if crc32fast::hash(payload) != crc {
        return Framed::Damaged("a checksum that does not match");
    }
    Framed::Record(payload, FRAME + len)
}

/// `path.WHY-SECS`, with `-N` added while such a file exists.
fn aside_path(path: &Path, why: &str) -> PathBuf {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let base = format!("{}.{why}-{secs}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests;
