//! The store-and-forward spool: messages waiting for the broker, on disk.
//!
//! ```text
//! dir/00000000000000000001.seg   records 1…k   (append-only segments, rolled at segment_bytes)
//! dir/00000000000000000412.seg   records 412…
//! dir/acked                      the highest sequence number below which the broker acknowledged everything
//! ```
//!
//! A record is `kind (1) | body length (u32 LE) | CRC-32 of the body (u32 LE) | body`, the body being
//! `sequence (u64 LE) | flags (1: QoS in bit 0, retain in bit 7) | topic length (u16 LE) | topic | payload`. Sequence numbers
//! only grow. [`Spool::ack`] takes acknowledgements in any order; the
//! watermark moves over the contiguous ones and is written to `acked`
//! (a temporary file, then a rename) every 1,024 acknowledgements, every
//! 100 ms, whenever nothing is pending and at a clean close — not at each
//! one, which would cost a file rename per message — and a segment whose
//! records are all at or below it is deleted. A crash between two writes
//! replays what was acknowledged since the last: repeats, never a loss.
//!
//! Delivery is at least once: what was sent but not acknowledged when the
//! gateway stopped (or acknowledged out of order above the watermark, or
//! with an `acked` file that does not check out) is sent again.
//!
//! On open, every segment is read back: records at or below the watermark
//! are skipped, a record that does not check out at the end of the last
//! segment is a torn write (the gateway stopped while writing it): the
//! file is cut there, counted and logged, not fatal; one elsewhere ends
//! that segment's reading (counted as corrupt). What is left is pending,
//! in order.
//!
//! A disk that refuses a write (full, read-only, failing) loses nothing
//! while the gateway runs: the message is taken and waits in memory, and
//! the messages held that way are written, in order, before the next one
//! as soon as the disk takes writes again (each push tries). A record
//! the disk took only part of is cut off again, so no later record is
//! written behind a torn one. A crash while messages wait in memory only
//! loses those: [`SpoolHealth`] says how many wait so, the spool logs when
//! it starts and stops holding them, and a watermark it could not write
//! only means repeats after a restart.
//!
//! Bounded by [`SpoolConfig::max_bytes`] of pending messages: past it, the
//! [`FullPolicy`] drops the oldest pending message (the default) or the
//! new one, counted. The pending messages are also kept in memory (the
//! same bound) for the replay.
//!
//! Must never: delete a message the broker did not acknowledge (but by the
//! full policy), reorder messages, or fail to open because of a damaged
//! file.

use bytes::Bytes;
use std::collections::{BTreeSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a full spool gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FullPolicy {
    /// The oldest pending message (the newest values matter most).
    #[default]
    DropOldest,
    /// The message being pushed.
    DropNewest,
}

/// How hard a push is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Written to the operating system at each push: survives the
    /// gateway's restart or crash, not a power loss.
    #[default]
    Process,
    /// Also `fsync`ed at each push: survives a power loss, at a cost per
    /// message.
    PowerLoss,
}

/// Where and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolConfig {
    /// The spool's directory (created if missing).
    pub dir: PathBuf,
    /// Pending bytes (records' sizes) at most.
    pub max_bytes: u64,
    /// A segment file is closed and a new one begun past this size.
    pub segment_bytes: u64,
    /// What a full spool drops.
    pub full: FullPolicy,
    /// How durable a push is.
    pub durability: Durability,
}

impl SpoolConfig {
    /// 16 MiB pending at most, 1 MiB segments, oldest dropped first,
    /// durable across a restart.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SpoolConfig {
            dir: dir.into(),
            max_bytes: 16 << 20,
            segment_bytes: 1 << 20,
            full: FullPolicy::DropOldest,
            durability: Durability::Process,
        }
    }
}

/// A message waiting for the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its place in the spool.
    pub seq: u64,
    /// The topic.
    pub topic: String,
    /// QoS 0 or 1.
    pub qos: u8,
    /// The broker keeps it as the topic's last value.
    pub retain: bool,
    /// The payload (shared, not copied, with the connection that sends it).
    pub payload: Bytes,
}

impl Message {
    fn record_len(&self) -> u64 {
        (HEADER + BODY_FIXED + self.topic.len() + self.payload.len()) as u64
    }
}

/// What opening found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Messages still pending (not acknowledged).
    pub pending: usize,
    /// A torn record was found (and cut) at the end of the last segment.
    pub torn_tail: bool,
    /// Records elsewhere that did not check out (skipped with the rest of
    /// their segment).
    pub corrupt: u64,
}

/// How the spool's disk is doing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpoolHealth {
    /// Pending messages the disk has not taken: they wait in memory only
    /// (a crash now loses them).
    pub memory_only: usize,
    /// Writes to the spool's directory that failed (records, the
    /// watermark, deleting segments).
    pub disk_errors: u64,
    /// The last of those failures, while the disk is refusing writes.
    pub last_error: Option<String>,
}

/// What the spool counted since it was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpoolCounters {
    /// Messages pushed.
    pub pushed: u64,
    /// Messages acknowledged.
    pub acked: u64,
    /// Messages dropped because the spool was full.
    pub dropped_full: u64,
}

const KIND_MESSAGE: u8 = 1;
/// kind, body length, CRC.
const HEADER: usize = 1 + 4 + 4;
/// sequence, QoS, topic length.
const BODY_FIXED: usize = 8 + 1 + 2;
/// A record larger than this is damage, not a message.
const MAX_RECORD: usize = 16 << 20;
/// The watermark file is rewritten after this many acknowledgements…
const WATERMARK_EVERY: u64 = 1024;
/// …or this long after the last time, whichever comes first.
const WATERMARK_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// The spool.
#[derive(Debug)]
pub struct Spool {
    config: SpoolConfig,
    /// Pending messages, in order (sequence numbers above `acked`).
    pending: VecDeque<Message>,
    pending_bytes: u64,
    /// Acknowledged out of order, above the watermark.
    acked_ahead: BTreeSet<u64>,
    /// Everything at or below is acknowledged (or dropped).
    acked: u64,
    next_seq: u64,
    /// Segments by their first sequence number, oldest first; the last is
    /// written to.
    segments: VecDeque<u64>,
    writer: Option<File>,
    writer_len: u64,
    /// The record being written (reused: no allocation per record).
    scratch: Vec<u8>,
    /// The watermark as last written to `acked`, and when.
    acked_on_disk: u64,
    acked_written: Instant,
    /// The next message to hand out for sending.
    cursor: u64,
    counters: SpoolCounters,
    /// The oldest pending message the disk did not take; it and every
    /// later one wait in memory only.
    first_unwritten: Option<u64>,
    health: SpoolHealth,
}

impl Spool {
    /// Open (or create) the spool in `config.dir` and read back what is
    /// pending.
    pub fn open(config: SpoolConfig) -> io::Result<(Spool, Recovered)> {
        std::fs::create_dir_all(&config.dir)?;
        let acked = read_acked(&config.dir);
        let mut segments: Vec<u64> = std::fs::read_dir(&config.dir)?
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".seg")?.parse().ok())
            .collect();
        segments.sort_unstable();
        let mut recovered = Recovered::default();
        let mut pending = VecDeque::new();
        let mut last_seq = acked;
        let count = segments.len();
        for (i, first) in segments.iter().enumerate() {
            let path = segment_path(&config.dir, *first);
            let (messages, good_len, damaged) = read_segment(&path)?;
            if damaged {
                if i + 1 == count {
                    // The gateway stopped mid-write: cut the torn record.
                    recovered.torn_tail = true;
                    OpenOptions::new().write(true).open(&path)?.set_len(good_len)?;
                    tracing::warn!(file = %path.display(), at = good_len, "MQTT spool: a torn record at the end was cut");
                } else {
                    recovered.corrupt += 1;
                    tracing::warn!(file = %path.display(), at = good_len, "MQTT spool: a damaged record; the rest of this segment is skipped");
                }
            }
            for m in messages {
                // Order is by sequence number: anything out of it is damage.
                if m.seq > last_seq {
                    last_seq = m.seq;
                    if m.seq > acked {
                        pending.push_back(m);
                    }
                }
            }
        }
        let pending_bytes = pending.iter().map(Message::record_len).sum();
        recovered.pending = pending.len();
        let mut spool = Spool {
            cursor: pending.front().map_or(last_seq + 1, |m: &Message| m.seq),
            next_seq: last_seq + 1,
            segments: segments.into_iter().collect(),
            config,
            pending,
            pending_bytes,
            acked_ahead: BTreeSet::new(),
            acked,
            writer: None,
            writer_len: 0,
            scratch: Vec::new(),
            acked_on_disk: acked,
            acked_written: Instant::now(),
            counters: SpoolCounters::default(),
            first_unwritten: None,
            health: SpoolHealth::default(),
        };
        spool.delete_acked_segments()?;
        Ok((spool, recovered))
    }

    /// Append a message; its sequence number, or `None` when the full
    /// policy dropped it.
    pub fn push(&mut self, topic: &str, qos: u8, payload: &[u8]) -> io::Result<Option<u64>> {
        self.push_message(topic, qos, false, payload)
    }

    /// [`Spool::push`], retained or not.
    pub fn push_message(&mut self, topic: &str, qos: u8, retain: bool, payload: &[u8]) -> io::Result<Option<u64>> {
        let message = Message {
            seq: self.next_seq,
            topic: topic.to_owned(),
            qos,
            retain,
            payload: Bytes::copy_from_slice(payload),
        };
        let len = message.record_len();
        // A topic the broker would refuse would be replayed, and refused, for ever.
        if topic.is_empty() || topic.contains(['+', '#', '\0']) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{topic}` is not a topic to publish on")));
        }
        if topic.len() > usize::from(u16::MAX) || len as usize > MAX_RECORD || len > self.config.max_bytes {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a message larger than the spool may hold"));
        }
        while self.pending_bytes + len > self.config.max_bytes {
            match self.config.full {
                FullPolicy::DropNewest => {
                    self.counters.dropped_full += 1;
                    return Ok(None);
                }
                FullPolicy::DropOldest => {
                    let Some(oldest) = self.pending.front().map(|m| m.seq) else { break };
                    self.counters.dropped_full += 1;
                    // Dropped: as good as acknowledged, for the files.
                    self.forget(oldest)?;
                }
            }
        }
        self.write_backlog();
        if self.first_unwritten.is_none() {
            match self.append(&message) {
                Ok(()) => self.disk_took(),
                Err(e) => {
                    self.disk_refused("a message", &e);
                    self.first_unwritten = Some(message.seq);
                }
            }
        }
        self.next_seq += 1;
        self.pending_bytes += len;
        self.pending.push_back(message);
        self.counters.pushed += 1;
        Ok(Some(self.next_seq - 1))
    }

    /// The next pending message not yet handed out, to send (in order).
    pub fn next_to_send(&mut self) -> Option<&Message> {
        let i = self.pending.partition_point(|m| m.seq < self.cursor);
        let m = self.pending.get(i)?;
        self.cursor = m.seq + 1;
        Some(m)
    }

    /// Whether a pending message has not been handed out yet.
    pub fn has_unsent(&self) -> bool {
        self.pending.back().is_some_and(|m| m.seq >= self.cursor)
    }

    /// Hand out everything pending again from the oldest (after a
    /// reconnection: what was sent and not acknowledged goes again).
    pub fn rewind(&mut self) {
        self.cursor = self.pending.front().map_or(self.next_seq, |m| m.seq);
    }

    /// Hand out `seq` (and what follows) again next: a send that did not
    /// happen.
    pub fn rewind_to(&mut self, seq: u64) {
        self.cursor = self.cursor.min(seq);
    }

    /// The broker acknowledged `seq` (QoS 1), or a QoS 0 message was
    /// written to it: never needed again.
    pub fn ack(&mut self, seq: u64) -> io::Result<()> {
        if self.forget(seq)? {
            self.counters.acked += 1;
        }
        Ok(())
    }

    /// Never hand out or keep `seq` again; false if it already was.
    fn forget(&mut self, seq: u64) -> io::Result<bool> {
        if seq <= self.acked || seq >= self.next_seq {
            return Ok(false);
        }
        let before = self.acked;
        if seq == self.acked + 1 && self.acked_ahead.is_empty() {
            // In order, the usual case: no set to keep.
            self.acked = seq;
        } else {
            if !self.acked_ahead.insert(seq) {
                return Ok(false);
            }
            while self.acked_ahead.remove(&(self.acked + 1)) {
                self.acked += 1;
            }
        }
        // Acknowledged messages leave memory, wherever they are.
        let at = match self.pending.front() {
            Some(m) if m.seq == seq => Some(0),
            _ => self.pending.iter().position(|m| m.seq == seq),
        };
        if let Some(i) = at {
            let m = self.pending.remove(i).expect("found just now");
            self.pending_bytes -= m.record_len();
        }
        if self.acked != before {
            // Not kept, the watermark only costs repeats after a restart.
            if let Err(e) = self.keep_watermark(false) {
                self.disk_refused("the acknowledged watermark", &e);
            }
            if let Err(e) = self.delete_acked_segments() {
                self.disk_refused("deleting an acknowledged segment", &e);
            }
        }
        if self.first_unwritten == Some(seq) {
            // Acknowledged before the disk took it: the later ones still wait.
            self.first_unwritten = self.pending.iter().find(|m| m.seq > seq).map(|m| m.seq);
        }
        Ok(true)
    }

    /// Write the messages waiting in memory only, oldest first, until the
    /// disk refuses one.
    fn write_backlog(&mut self) {
        let Some(first) = self.first_unwritten else { return };
        let mut i = self.pending.partition_point(|m| m.seq < first);
        while let Some(m) = self.pending.get(i) {
            let m = m.clone();
            if let Err(e) = self.append(&m) {
                self.first_unwritten = Some(m.seq);
                self.disk_refused("a message", &e);
                return;
            }
            i += 1;
        }
        self.first_unwritten = None;
    }

    /// The disk refused `what`: counted, logged when it starts.
    fn disk_refused(&mut self, what: &str, e: &io::Error) {
        self.health.disk_errors += 1;
        if self.health.last_error.is_none() {
            tracing::error!(dir = %self.config.dir.display(), "MQTT spool: the disk refused {what}: {e}; until it takes writes again, messages wait in memory only (a crash loses those)");
        }
        self.health.last_error = Some(format!("{what}: {e}"));
    }

    /// A message reached the disk: if it had been refusing, say it is over.
    fn disk_took(&mut self) {
        if self.health.last_error.take().is_some() {
            tracing::info!(dir = %self.config.dir.display(), "MQTT spool: the disk takes writes again; what waited in memory is on it");
        }
    }

    /// How the disk is doing.
    pub fn health(&self) -> SpoolHealth {
        let memory_only = match self.first_unwritten {
            Some(first) => self.pending.len() - self.pending.partition_point(|m| m.seq < first),
            None => 0,
        };
        SpoolHealth { memory_only, ..self.health.clone() }
    }

    /// Write the watermark to `acked` if it moved `WATERMARK_EVERY` since
    /// it was last written, or `WATERMARK_AFTER` ago, or nothing is pending
    /// (or `now`). Between writes a crash replays at most that much again:
    /// delivery is at least once, the watermark only bounds the repeats.
    fn keep_watermark(&mut self, now: bool) -> io::Result<()> {
        if self.acked == self.acked_on_disk {
            return Ok(());
        }
        let moved = self.acked - self.acked_on_disk;
        // The clock is read every 64 acknowledgements, not at each.
        let due = now
            || self.pending.is_empty()
            || moved >= WATERMARK_EVERY
            || (moved.is_multiple_of(64) && self.acked_written.elapsed() >= WATERMARK_AFTER);
        if due {
            write_acked(&self.config.dir, self.acked)?;
            self.acked_on_disk = self.acked;
            self.acked_written = Instant::now();
        }
        Ok(())
    }

    /// Pending messages, oldest first.
    pub fn pending(&self) -> impl Iterator<Item = &Message> {
        self.pending.iter()
    }

    /// How many are pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Pending bytes.
    pub fn bytes(&self) -> u64 {
        self.pending_bytes
    }

    /// What it counted.
    pub fn counters(&self) -> SpoolCounters {
        self.counters
    }

    fn append(&mut self, m: &Message) -> io::Result<()> {
        if self.writer.is_none() || self.writer_len >= self.config.segment_bytes {
            let path = segment_path(&self.config.dir, m.seq);
            self.writer = None;
            let file = OpenOptions::new().create(true).append(true).open(&path)?;
            // A segment is named after its first record, which is this one,
            // not yet written: whatever is there is a write the disk took
            // only part of.
            if file.metadata()?.len() > 0 {
                file.set_len(0)?;
            }
            self.writer_len = 0;
            self.writer = Some(file);
            if self.segments.back() != Some(&m.seq) {
                self.segments.push_back(m.seq);
            }
        }
        let record = &mut self.scratch;
        record.clear();
        record.push(KIND_MESSAGE);
        record.extend_from_slice(&[0; 8]); // body length and CRC, below
        record.extend_from_slice(&m.seq.to_le_bytes());
        record.push((m.qos & 1) | (u8::from(m.retain) << 7));
        record.extend_from_slice(&(m.topic.len() as u16).to_le_bytes());
        record.extend_from_slice(m.topic.as_bytes());
        record.extend_from_slice(&m.payload);
        let body_len = (record.len() - HEADER) as u32;
        let crc = crc32fast::hash(&record[HEADER..]);
        record[1..5].copy_from_slice(&body_len.to_le_bytes());
        record[5..9].copy_from_slice(&crc.to_le_bytes());
        let file = self.writer.as_mut().expect("opened above");
        // One write per record: a crash leaves a prefix of it at most.
        let written = file.write_all(record).and_then(|()| match self.config.durability {
            Durability::PowerLoss => file.sync_data(),
            Durability::Process => Ok(()),
        });
        if let Err(e) = written {
            // Cut what the disk took of it, or (if even that fails) begin a
            // new segment: no record goes behind a torn one.
            if file.set_len(self.writer_len).is_err() {
                self.writer = None;
            }
            return Err(e);
        }
        self.writer_len += record.len() as u64;
        Ok(())
    }

    /// Delete the segments all of whose records are acknowledged: every
    /// segment but the last whose successor starts at or below the
    /// watermark + 1.
    fn delete_acked_segments(&mut self) -> io::Result<()> {
        while self.segments.len() >= 2 && self.segments[1] <= self.acked + 1 {
            let first = self.segments.pop_front().expect("two or more");
            match std::fs::remove_file(segment_path(&self.config.dir, first)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn segment_path(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("{first:020}.seg"))
}

/// The messages of one segment, the length that checked out, and whether
/// something after it did not.
fn read_segment(path: &Path) -> io::Result<(Vec<Message>, u64, bool)> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    let mut messages = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        match parse_record(&bytes[at..]) {
            Some((m, len)) => {
                messages.push(m);
                at += len;
            }
            None => return Ok((messages, at as u64, true)),
        }
    }
    Ok((messages, at as u64, false))
}

/// One record from the start of `b`, and its length; `None` if it is
/// short, damaged or not a record.
fn parse_record(b: &[u8]) -> Option<(Message, usize)> {
    let (&kind, rest) = b.split_first()?;
    if kind != KIND_MESSAGE || rest.len() < 8 {
        return None;
    }
    let len = u32::from_le_bytes(rest[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(rest[4..8].try_into().ok()?);
    if !(BODY_FIXED..=MAX_RECORD).contains(&len) {
        return None;
    }
    let body = rest.get(8..8 + len)?;
    if crc32fast::hash(body) != crc {
        return None;
    }
    let seq = u64::from_le_bytes(body[..8].try_into().ok()?);
    let (qos, retain) = (body[8] & 1, body[8] & 0x80 != 0);
    let topic_len = usize::from(u16::from_le_bytes(body[9..11].try_into().ok()?));
    let topic = std::str::from_utf8(body.get(11..11 + topic_len)?).ok()?.to_owned();
    let payload = Bytes::copy_from_slice(&body[11 + topic_len..]);
    Some((Message { seq, topic, qos, retain, payload }, HEADER + len))
}

/// The watermark: 8 octets and their CRC; 0 if missing or damaged.
fn read_acked(dir: &Path) -> u64 {
    let mut b = [0u8; 12];
    let read = File::open(dir.join("acked")).and_then(|mut f| {
        f.seek(SeekFrom::Start(0))?;
        f.read_exact(&mut b)
    });
    if read.is_err() {
        return 0;
    }
    let seq = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
    let crc = u32::from_le_bytes(b[8..].try_into().unwrap_or_default());
    if crc32fast::hash(&b[..8]) == crc { seq } else { 0 }
}

fn write_acked(dir: &Path, seq: u64) -> io::Result<()> {
    let mut b = seq.to_le_bytes().to_vec();
    b.extend_from_slice(&crc32fast::hash(&seq.to_le_bytes()).to_le_bytes());
    let tmp = dir.join("acked.tmp");
    File::create(&tmp)?.write_all(&b)?;
    std::fs::rename(tmp, dir.join("acked"))
}

impl Drop for Spool {
    fn drop(&mut self) {
        // A clean stop keeps the watermark exact: nothing is replayed twice.
        if let Err(e) = self.keep_watermark(true) {
            tracing::warn!("MQTT spool: the acknowledged watermark could not be written at close: {e}");
        }
    }
}
