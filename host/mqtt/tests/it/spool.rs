//! The store-and-forward spool across restarts, torn writes, damage, a
//! full disk budget and out-of-order acknowledgements.

use std::io::Write;
use std::path::PathBuf;
use trellis_mqtt::spool::{FullPolicy, Spool, SpoolConfig};

/// A fresh directory for one test, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("trellis-spool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn payloads(spool: &Spool) -> Vec<String> {
    spool.pending().map(|m| String::from_utf8(m.payload.to_vec()).unwrap()).collect()
}

fn segments(dir: &Dir) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

#[test]
fn what_was_not_acknowledged_survives_a_restart_in_order() {
    let dir = Dir::new("restart");
    let (mut spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!(recovered.pending, 0);
    for i in 1..=10 {
        spool.push(&format!("site/point/{i}"), 1, format!("v{i}").as_bytes()).unwrap();
    }
    for seq in 1..=4 {
        spool.ack(seq).unwrap();
    }
    drop(spool);
    let (mut spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!((recovered.pending, recovered.torn_tail, recovered.corrupt), (6, false, 0));
    assert_eq!(payloads(&spool), ["v5", "v6", "v7", "v8", "v9", "v10"]);
    let m = spool.next_to_send().unwrap();
    assert_eq!((m.seq, m.topic.as_str(), m.qos), (5, "site/point/5", 1));
    // New messages follow the old ones.
    assert_eq!(spool.push("site/point/11", 0, b"v11").unwrap(), Some(11));
}

#[test]
fn a_torn_record_at_the_end_is_cut_and_the_spool_goes_on() {
    let dir = Dir::new("torn");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    for i in 1..=5 {
        spool.push("t", 1, format!("v{i}").as_bytes()).unwrap();
    }
    drop(spool);
    // The gateway stopped in the middle of writing a sixth record.
    let last = segments(&dir).pop().unwrap();
    let whole = std::fs::metadata(&last).unwrap().len();
    std::fs::OpenOptions::new().append(true).open(&last).unwrap().write_all(&[1, 40, 0, 0, 0, 0xAB, 0xCD]).unwrap();
    let (mut spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert!(recovered.torn_tail);
    assert_eq!(recovered.pending, 5);
    assert_eq!(std::fs::metadata(&last).unwrap().len(), whole, "cut back to the last whole record");
    spool.push("t", 1, b"v6").unwrap();
    drop(spool);
    let (spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!((recovered.torn_tail, recovered.pending), (false, 6));
    assert_eq!(payloads(&spool), ["v1", "v2", "v3", "v4", "v5", "v6"]);
}

#[test]
fn a_damaged_segment_loses_only_its_rest_and_never_stops_the_open() {
    let dir = Dir::new("corrupt");
    let config = SpoolConfig { segment_bytes: 64, ..SpoolConfig::new(&dir.0) };
    let (mut spool, _) = Spool::open(config.clone()).unwrap();
    for i in 1..=20 {
        spool.push("t", 1, format!("value {i:02}").as_bytes()).unwrap();
    }
    drop(spool);
    let files = segments(&dir);
    assert!(files.len() >= 4, "small segments: {files:?}");
    // Flip an octet in the second record of the first segment.
    let mut bytes = std::fs::read(&files[0]).unwrap();
    let second = bytes.len() / 2 + 12;
    bytes[second] ^= 0xFF;
    std::fs::write(&files[0], bytes).unwrap();
    let (spool, recovered) = Spool::open(config).unwrap();
    assert_eq!(recovered.corrupt, 1);
    assert!(!recovered.torn_tail);
    let left = payloads(&spool);
    assert_eq!(left.first().map(String::as_str), Some("value 01"));
    assert_eq!(left.last().map(String::as_str), Some("value 20"));
    assert!(left.windows(2).all(|w| w[0] < w[1]), "in order: {left:?}");
}

#[test]
fn a_full_spool_drops_by_its_policy_and_counts() {
    let dir = Dir::new("full");
    let config = SpoolConfig { max_bytes: 10 * 30, ..SpoolConfig::new(&dir.0) };
    // Each record: 9 header + 11 fixed + 1 topic + 9 payload = 30 octets.
    let (mut spool, _) = Spool::open(config.clone()).unwrap();
    for i in 1..=15 {
        spool.push("t", 1, format!("value {i:02}").as_bytes()).unwrap();
    }
    assert_eq!(spool.len(), 10);
    assert_eq!(spool.counters().dropped_full, 5);
    assert_eq!(payloads(&spool).first().map(String::as_str), Some("value 06"), "the oldest went");
    drop(spool);
    let (spool, _) = Spool::open(config).unwrap();
    assert_eq!(spool.len(), 10, "the drops hold across a restart");

    let dir = Dir::new("full-newest");
    let config = SpoolConfig { max_bytes: 10 * 30, full: FullPolicy::DropNewest, ..SpoolConfig::new(&dir.0) };
    let (mut spool, _) = Spool::open(config).unwrap();
    for i in 1..=15 {
        let taken = spool.push("t", 1, format!("value {i:02}").as_bytes()).unwrap();
        assert_eq!(taken.is_some(), i <= 10);
    }
    assert_eq!(payloads(&spool).last().map(String::as_str), Some("value 10"), "the newest were refused");
}

#[test]
fn acknowledged_segments_are_deleted_and_out_of_order_acks_wait_for_the_gap() {
    let dir = Dir::new("acks");
    let config = SpoolConfig { segment_bytes: 64, ..SpoolConfig::new(&dir.0) };
    let (mut spool, _) = Spool::open(config.clone()).unwrap();
    for i in 1..=20 {
        spool.push("t", 1, format!("value {i:02}").as_bytes()).unwrap();
    }
    let before = segments(&dir).len();
    // Acks for 2..=10 first: nothing can go while 1 is outstanding.
    for seq in 2..=10 {
        spool.ack(seq).unwrap();
    }
    assert_eq!(segments(&dir).len(), before);
    assert_eq!(spool.len(), 11, "acknowledged ones leave memory at once");
    spool.ack(1).unwrap();
    assert!(segments(&dir).len() < before, "segments below the watermark deleted");
    drop(spool);
    let (spool, recovered) = Spool::open(config).unwrap();
    assert_eq!(recovered.pending, 10);
    assert_eq!(payloads(&spool).first().map(String::as_str), Some("value 11"));
}

#[test]
fn a_replay_hands_out_each_message_once_and_again_after_a_rewind() {
    let dir = Dir::new("replay");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    for i in 1..=3 {
        spool.push("t", 1, format!("v{i}").as_bytes()).unwrap();
    }
    let sent: Vec<u64> = std::iter::from_fn(|| spool.next_to_send().map(|m| m.seq)).collect();
    assert_eq!(sent, [1, 2, 3]);
    assert!(spool.next_to_send().is_none());
    spool.ack(1).unwrap();
    // Reconnected: what is not acknowledged goes again, in order.
    spool.rewind();
    let again: Vec<u64> = std::iter::from_fn(|| spool.next_to_send().map(|m| m.seq)).collect();
    assert_eq!(again, [2, 3]);
    spool.push("t", 1, b"v4").unwrap();
    assert_eq!(spool.next_to_send().map(|m| m.seq), Some(4));
}

#[test]
fn a_damaged_watermark_replays_rather_than_loses() {
    let dir = Dir::new("watermark");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    for i in 1..=3 {
        spool.push("t", 1, format!("v{i}").as_bytes()).unwrap();
    }
    spool.ack(1).unwrap();
    drop(spool);
    std::fs::write(dir.0.join("acked"), b"garbage").unwrap();
    let (spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!(recovered.pending, 3, "at least once: v1 goes again");
    assert_eq!(payloads(&spool), ["v1", "v2", "v3"]);
}

#[test]
fn a_crash_between_watermark_writes_replays_some_acknowledged_messages_never_loses_one() {
    let dir = Dir::new("crash");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    for i in 0..20 {
        spool.push("t", 1, format!("v{i:02}").as_bytes()).unwrap();
    }
    for seq in 1..=10 {
        spool.ack(seq).unwrap();
    }
    // The process dies: no clean close writes the watermark.
    std::mem::forget(spool);
    let (spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    let back = payloads(&spool);
    let unacked: Vec<String> = (10..20).map(|i| format!("v{i:02}")).collect();
    assert!(back.ends_with(&unacked), "every unacknowledged message, in order: {back:?}");
    assert!(recovered.pending <= 20, "at most the acknowledged ones again: {recovered:?}");
    let first: usize = back[0][1..].parse().unwrap();
    assert_eq!(back, (first..20).map(|i| format!("v{i:02}")).collect::<Vec<_>>(), "a suffix, nothing skipped");

    // A clean close keeps the watermark exact.
    drop(spool);
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    let first = spool.pending().next().unwrap().seq;
    for seq in first..=15 {
        spool.ack(seq).unwrap();
    }
    drop(spool);
    let (spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!(payloads(&spool), (15..20).map(|i| format!("v{i:02}")).collect::<Vec<_>>());
}

/// `dir/<seq>.seg` made a link to `/dev/full`: every write to it fails
/// with ENOSPC, as on a full disk.
fn fill_disk_at(dir: &Dir, seq: u64) -> PathBuf {
    let path = dir.0.join(format!("{seq:020}.seg"));
    std::os::unix::fs::symlink("/dev/full", &path).unwrap();
    path
}

#[test]
fn a_disk_that_refuses_writes_loses_nothing_and_gets_the_backlog_in_order_when_it_takes_them_again() {
    let dir = Dir::new("disk-full");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    let full = fill_disk_at(&dir, 1);
    // The disk refuses: each message is taken and waits in memory.
    for i in 1..=3 {
        assert_eq!(spool.push("site/p", 1, format!("v{i}").as_bytes()).unwrap(), Some(i));
    }
    let health = spool.health();
    assert_eq!(health.memory_only, 3);
    assert_eq!(health.disk_errors, 3);
    assert!(health.last_error.as_deref().unwrap().contains("a message"), "{health:?}");
    // They can be sent and acknowledged meanwhile: the oldest is.
    assert_eq!(spool.next_to_send().unwrap().seq, 1);
    spool.ack(1).unwrap();
    assert_eq!(spool.health().memory_only, 2);
    // Space returns: the next push writes the backlog first, in order.
    std::fs::remove_file(full).unwrap();
    assert_eq!(spool.push("site/p", 1, b"v4").unwrap(), Some(4));
    let health = spool.health();
    assert_eq!((health.memory_only, health.last_error), (0, None));
    assert_eq!(payloads(&spool), ["v2", "v3", "v4"]);
    // A crash now loses nothing: all of it is on disk.
    std::mem::forget(spool);
    let (spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!((recovered.pending, recovered.torn_tail, recovered.corrupt), (3, false, 0));
    assert_eq!(payloads(&spool), ["v2", "v3", "v4"]);
}

#[test]
fn messages_held_in_memory_are_lost_by_a_crash_only_and_the_health_says_how_many() {
    let dir = Dir::new("disk-full-crash");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    spool.push("site/p", 1, b"on disk").unwrap();
    // The segment is open; a full disk from the next segment on.
    drop(spool);
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    fill_disk_at(&dir, 2);
    spool.push("site/p", 1, b"in memory").unwrap();
    assert_eq!(spool.health().memory_only, 1);
    assert_eq!(payloads(&spool), ["on disk", "in memory"]);
    std::mem::forget(spool);
    std::fs::remove_file(dir.0.join(format!("{:020}.seg", 2))).unwrap();
    let (spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!(payloads(&spool), ["on disk"]);
}

#[test]
fn a_new_segment_starts_empty_whatever_a_refused_write_left_in_it() {
    let dir = Dir::new("refused-leftover");
    let (mut spool, _) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    // What a write the disk took only part of leaves: a record's prefix.
    std::fs::write(dir.0.join(format!("{:020}.seg", 1)), [1u8, 40, 0, 0]).unwrap();
    spool.push("site/p", 1, b"v1").unwrap();
    spool.push("site/p", 1, b"v2").unwrap();
    std::mem::forget(spool);
    let (spool, recovered) = Spool::open(SpoolConfig::new(&dir.0)).unwrap();
    assert_eq!((recovered.pending, recovered.torn_tail, recovered.corrupt), (2, false, 0));
    assert_eq!(payloads(&spool), ["v1", "v2"]);
}
