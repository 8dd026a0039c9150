//! The journal as a restart sees it: what was appended comes back, damage
//! is cut off and set aside, never a refusal.

use super::*;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

fn scratch() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "trellis-persist-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(dir: &Path) -> (Journal, Recovered) {
    Journal::open(dir, "model", Durability::PowerLoss).expect("open")
}

fn set_aside_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".damaged-"))
        .collect();
    names.sort();
    names
}

#[test]
fn appended_records_and_the_snapshot_come_back_after_a_reopen() {
    let dir = scratch();
    let (mut j, r) = open(&dir);
    assert!(r.snapshot.is_none() && r.records.is_empty() && r.notes.is_empty());
    j.append(&[b"write 1", b"write 2"]).unwrap();
    drop(j);
    let (mut j, r) = open(&dir);
    assert_eq!(r.records, vec![b"write 1".to_vec(), b"write 2".to_vec()]);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    j.replace_snapshot(b"state after 2").unwrap();
    j.append(&[b"write 3"]).unwrap();
    assert_eq!(j.records(), 1);
    drop(j);
    let (_, r) = open(&dir);
    assert_eq!(r.snapshot.as_deref(), Some(&b"state after 2"[..]));
    assert_eq!(r.records, vec![b"write 3".to_vec()]);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_torn_last_record_is_cut_off_set_aside_and_the_rest_kept() {
    let dir = scratch();
    let (mut j, _) = open(&dir);
    j.append(&[b"kept", b"torn by the crash"]).unwrap();
    drop(j);
    let path = dir.join("model.journal");
    let len = std::fs::metadata(&path).unwrap().len();
    OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 3).unwrap();

    let (mut j, r) = open(&dir);
    assert_eq!(r.records, vec![b"kept".to_vec()]);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].damage && r.notes[0].text.contains("torn"), "{}", r.notes[0].text);
    let aside = set_aside_files(&dir);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(dir.join(&aside[0])).unwrap().len(), FRAME + b"torn by the crash".len() - 3);

    // Appending goes on after the cut, and the next open is clean.
    j.append(&[b"after"]).unwrap();
    drop(j);
    let (_, r) = open(&dir);
    assert_eq!(r.records, vec![b"kept".to_vec(), b"after".to_vec()]);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flipped_octet_cuts_the_journal_at_that_record() {
    let dir = scratch();
    let (mut j, _) = open(&dir);
    j.append(&[b"first", b"second", b"third"]).unwrap();
    drop(j);
    let path = dir.join("model.journal");
    let mut bytes = std::fs::read(&path).unwrap();
    let second = HEADER + FRAME + b"first".len() + FRAME;
    bytes[second] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();

    let (_, r) = open(&dir);
    assert_eq!(r.records, vec![b"first".to_vec()]);
    assert!(r.notes.iter().any(|n| n.damage && n.text.contains("checksum")), "{:?}", r.notes);
    assert_eq!(std::fs::read(&path).unwrap().len(), HEADER + FRAME + b"first".len(), "cut at the damage");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_journal_older_than_the_snapshot_is_dropped_as_already_held() {
    let dir = scratch();
    let (mut j, _) = open(&dir);
    j.append(&[b"w1"]).unwrap();
    let old_journal = std::fs::read(dir.join("model.journal")).unwrap();
    j.replace_snapshot(b"state with w1").unwrap();
    drop(j);
    // A crash between the snapshot's rename and the new journal's.
    std::fs::write(dir.join("model.journal"), old_journal).unwrap();

    let (_, r) = open(&dir);
    assert_eq!(r.snapshot.as_deref(), Some(&b"state with w1"[..]));
    assert!(r.records.is_empty(), "w1 is in the snapshot, not replayed again");
    assert!(r.notes.iter().all(|n| !n.damage), "{:?}", r.notes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_snapshot_is_set_aside_and_the_journal_still_applied() {
    let dir = scratch();
    let (mut j, _) = open(&dir);
    j.replace_snapshot(b"a state").unwrap();
    j.append(&[b"a later write"]).unwrap();
    drop(j);
    let path = dir.join("model.snapshot");
    let mut bytes = std::fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&path, &bytes).unwrap();

    let (mut j, r) = open(&dir);
    assert!(r.snapshot.is_none());
    assert_eq!(r.records, vec![b"a later write".to_vec()]);
    assert!(r.notes.iter().any(|n| n.damage && n.text.contains("snapshot")), "{:?}", r.notes);
    assert_eq!(set_aside_files(&dir).len(), 1);
    // The next snapshot is in force again.
    j.replace_snapshot(b"new state").unwrap();
    drop(j);
    let (_, r) = open(&dir);
    assert_eq!(r.snapshot.as_deref(), Some(&b"new state"[..]));
    assert!(r.records.is_empty() && r.notes.is_empty(), "{:?}", r.notes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_is_not_a_journal_is_set_aside_whole() {
    let dir = scratch();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.journal"), b"{\"not\": \"ours\"}").unwrap();
    let (_, r) = open(&dir);
    assert!(r.records.is_empty());
    assert!(r.notes.iter().any(|n| n.damage && n.text.contains("not a Trellis journal")), "{:?}", r.notes);
    let aside = set_aside_files(&dir);
    assert_eq!(std::fs::read(dir.join(&aside[0])).unwrap(), b"{\"not\": \"ours\"}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn setting_aside_copies_the_pair_and_keeps_it_in_force() {
    let dir = scratch();
    let (mut j, _) = open(&dir);
    j.replace_snapshot(b"refused by a new version").unwrap();
    let copy = j.set_aside("refused").unwrap().expect("a snapshot to copy");
    assert!(copy.to_string_lossy().contains("model.snapshot.refused-"));
    drop(j);
    let (_, r) = open(&dir);
    assert_eq!(r.snapshot.as_deref(), Some(&b"refused by a new version"[..]));
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the files hold, opening succeeds and writes a usable journal.
    #[test]
    fn any_file_content_opens(snapshot in proptest::collection::vec(any::<u8>(), 0..64),
                              journal in proptest::collection::vec(any::<u8>(), 0..256),
                              valid_header in any::<bool>()) {
        let dir = scratch();
        std::fs::create_dir_all(&dir).unwrap();
        if !snapshot.is_empty() {
            std::fs::write(dir.join("model.snapshot"), &snapshot).unwrap();
        }
        let mut content = if valid_header { journal_header(0) } else { Vec::new() };
        content.extend_from_slice(&journal);
        std::fs::write(dir.join("model.journal"), &content).unwrap();
        let (mut j, _) = open(&dir);
        j.append(&[b"then this"]).unwrap();
        drop(j);
        let (_, r) = open(&dir);
        prop_assert_eq!(r.records.last().map(Vec::as_slice), Some(&b"then this"[..]));
        prop_assert!(r.notes.iter().all(|n| !n.damage), "{:?}", r.notes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A crash at any octet of an append keeps exactly the records written whole.
    #[test]
    fn a_cut_anywhere_keeps_the_whole_records_before_it(lens in proptest::collection::vec(0usize..40, 1..8),
                                                        cut in any::<proptest::sample::Index>()) {
        let dir = scratch();
        let (mut j, _) = open(&dir);
        let records: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, n)| vec![i as u8; *n]).collect();
        for r in &records {
            j.append(&[r]).unwrap();
        }
        drop(j);
        let path = dir.join("model.journal");
        let full = std::fs::metadata(&path).unwrap().len() as usize;
        let at = HEADER + cut.index(full - HEADER + 1);
        OpenOptions::new().write(true).open(&path).unwrap().set_len(at as u64).unwrap();
        let (_, r) = open(&dir);
        let mut end = HEADER;
        let whole = records.iter().take_while(|rec| { end += FRAME + rec.len(); end <= at }).count();
        prop_assert_eq!(&r.records[..], &records[..whole]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
