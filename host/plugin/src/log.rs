//! A plugin's log output — `host.log` lines and its captured stdout/stderr —
//! turned into `tracing` events tagged with the plugin's name, rate-limited
//! and bounded.
//!
//! Each plugin gets a token bucket ([`BURST`] lines, refilled at
//! [`LINES_PER_SECOND`]); lines beyond it are counted and reported as one
//! "suppressed" line when logging resumes. Lines longer than [`MAX_LINE`]
//! bytes are cut.
//!
//! A trap says little by itself (`wasm trap: wasm unreachable instruction
//! executed`); what the plugin wrote on stderr just before — a Rust panic's
//! message, say — says why. So the last [`LAST_WORDS`] stderr lines of the
//! current call are kept (rate limit or not) for [`PluginLog::last_words`].
//!
//! This module must never block on the plugin's behalf beyond an
//! uncontended mutex, and never buffer more than one line per stream plus
//! [`LAST_WORDS`] lines of the current call.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tracing::Level;

/// Longest line kept, in bytes; the rest is cut.
pub const MAX_LINE: usize = 1024;
/// Lines a plugin may log in a burst.
pub const BURST: u32 = 100;
/// Sustained lines per second.
pub const LINES_PER_SECOND: u32 = 20;
/// stderr lines of one call kept to explain its failure.
pub const LAST_WORDS: usize = 8;
/// Longest explanation taken from them, in bytes.
const MAX_LAST_WORDS: usize = 512;

/// The log of one plugin (shared by its host import and its stdio streams).
#[derive(Debug)]
pub struct PluginLog {
    plugin: Arc<str>,
    bucket: Mutex<Bucket>,
    /// stderr lines since [`PluginLog::begin_call`], at most [`LAST_WORDS`].
    recent: Mutex<Vec<String>>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

impl PluginLog {
    /// A log for the plugin called `plugin`.
    pub fn new(plugin: Arc<str>) -> Arc<Self> {
        Arc::new(PluginLog {
            plugin,
            bucket: Mutex::new(Bucket { tokens: BURST as f64, last: Instant::now(), suppressed: 0 }),
            recent: Mutex::new(Vec::new()),
        })
    }

    /// A call into the plugin begins: forget the stderr of earlier calls.
    pub fn begin_call(&self) {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// What the plugin's stderr said during the current call about why it
    /// failed, in one line: a Rust panic's message, else its last line.
    pub fn last_words(&self) -> Option<String> {
        explain(&self.recent.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Emit one line from `source` ("log", "stdout", "stderr") unless the
    /// plugin is over its rate.
    pub fn line(&self, level: Level, source: &'static str, text: &str) {
        if source == "stderr" {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            if recent.len() == LAST_WORDS {
                recent.remove(0);
            }
            recent.push(truncate(text.trim_end_matches(['\r', '\n']), MAX_LINE).to_owned());
        }
        let suppressed = {
            let mut b = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let refill = now.duration_since(b.last).as_secs_f64() * LINES_PER_SECOND as f64;
            b.tokens = (b.tokens + refill).min(BURST as f64);
            b.last = now;
            if b.tokens < 1.0 {
                b.suppressed += 1;
                return;
            }
            b.tokens -= 1.0;
            std::mem::take(&mut b.suppressed)
        };
        let plugin = &*self.plugin;
        if suppressed > 0 {
            tracing::warn!(target: "trellis::plugin", plugin, "{suppressed} log lines suppressed (rate limit)");
        }
        let text = truncate(text.trim_end_matches(['\r', '\n']), MAX_LINE);
        match level {
            Level::ERROR => tracing::error!(target: "trellis::plugin", plugin, source, "{text}"),
            Level::WARN => tracing::warn!(target: "trellis::plugin", plugin, source, "{text}"),
            Level::INFO => tracing::info!(target: "trellis::plugin", plugin, source, "{text}"),
            Level::DEBUG => tracing::debug!(target: "trellis::plugin", plugin, source, "{text}"),
            _ => tracing::trace!(target: "trellis::plugin", plugin, source, "{text}"),
        }
    }

    #[cfg(test)]
    fn suppressed(&self) -> u64 {
        self.bucket.lock().unwrap().suppressed
    }
}

/// A Rust panic's message (the lines after `… panicked at FILE:LINE:`, up
/// to its `note:`), else the last line that says anything.
fn explain(lines: &[String]) -> Option<String> {
    let said = |l: &&String| !l.trim().is_empty();
    let text = match lines.iter().rposition(|l| l.contains(" panicked at ")) {
        Some(at) => {
            let message: Vec<&str> = lines[at + 1..]
                .iter()
                .filter(said)
                .map(|l| l.trim())
                .take_while(|l| !l.starts_with("note: "))
                .collect();
            if message.is_empty() { lines[at].trim().to_owned() } else { message.join(" ") }
        }
        None => lines.iter().rev().find(said)?.trim().to_owned(),
    };
    Some(truncate(&text, MAX_LAST_WORDS).to_owned())
}

/// The longest prefix of `s` of at most `max` bytes, on a char boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Splits a byte stream into lines for a [`PluginLog`].
#[derive(Debug)]
pub struct LineSplitter {
    log: Arc<PluginLog>,
    source: &'static str,
    level: Level,
    buf: Vec<u8>,
}

impl LineSplitter {
    /// A splitter logging at `level` as `source`.
    pub fn new(log: Arc<PluginLog>, source: &'static str, level: Level) -> Self {
        LineSplitter { log, source, level, buf: Vec::new() }
    }

    /// Take bytes; every complete line (or [`MAX_LINE`] bytes without a
    /// newline) is logged.
    pub fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = MAX_LINE - self.buf.len();
            let take = bytes.iter().take(room).position(|b| *b == b'\n');
            match take {
                Some(i) => {
                    self.buf.extend_from_slice(&bytes[..i]);
                    bytes = &bytes[i + 1..];
                    self.flush();
                }
                None => {
                    let n = room.min(bytes.len());
                    self.buf.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                    if self.buf.len() >= MAX_LINE {
                        self.flush();
                    }
                }
            }
        }
    }

    /// Log whatever is buffered.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.log.line(self.level, self.source, &String::from_utf8_lossy(&self.buf));
            self.buf.clear();
        }
    }
}

impl Drop for LineSplitter {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_beyond_the_burst_are_counted_not_logged() {
        let log = PluginLog::new("p".into());
        for _ in 0..BURST + 5 {
            log.line(Level::INFO, "log", "x");
        }
        assert!(log.suppressed() >= 4, "{}", log.suppressed());
    }

    #[test]
    fn last_words_are_a_panics_message_else_the_last_line_of_this_call() {
        let log = PluginLog::new("p".into());
        assert_eq!(log.last_words(), None);
        for line in [
            "earlier noise",
            "thread '<unnamed>' (1) panicked at misbehave/src/lib.rs:54:30:",
            "misbehave: trap on start",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        ] {
            log.line(Level::WARN, "stderr", line);
        }
        log.line(Level::INFO, "stdout", "not stderr");
        assert_eq!(log.last_words().as_deref(), Some("misbehave: trap on start"));
        log.begin_call();
        assert_eq!(log.last_words(), None);
        log.line(Level::WARN, "stderr", "assertion failed: x > 0");
        log.line(Level::WARN, "stderr", "  ");
        assert_eq!(log.last_words().as_deref(), Some("assertion failed: x > 0"));
        for _ in 0..3 * LAST_WORDS {
            log.line(Level::WARN, "stderr", "x");
        }
        assert_eq!(log.recent.lock().unwrap().len(), LAST_WORDS);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("abc", 5), "abc");
    }

    #[test]
    fn the_splitter_never_buffers_more_than_one_line() {
        let mut s = LineSplitter::new(PluginLog::new("p".into()), "stdout", Level::INFO);
        s.write(b"one\ntw");
        assert_eq!(s.buf, b"tw");
        s.write(&[b'x'; 3 * MAX_LINE]);
        assert!(s.buf.len() < MAX_LINE);
        s.write(b"\n");
        assert!(s.buf.is_empty());
    }
}
