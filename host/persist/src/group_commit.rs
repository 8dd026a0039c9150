//! Group commit: one flush to the disk for every journal append of a batch
//! of requests, made before the batch's answers leave.
//!
//! A device answers its requests in batches (`trellis_server`'s station:
//! the datagrams that arrived together, executed in order, their answers
//! sent in one system call). Flushing at each write would hold every later
//! request of the batch — reads too — behind the disk, once per write.
//! Inside [`group_commit`], a [`Durability::PowerLoss`](crate::Durability)
//! append only writes; the journals it wrote to are flushed once when the
//! batch is done (or earlier, by [`sync_deferred`], before an answer must
//! leave mid-batch). The caller sends the answers after that, so no write
//! is acknowledged before it is on the disk.
//!
//! The scope is the calling task's (a tokio task-local), not the thread's:
//! another task on the same thread — an MQTT command, an application —
//! that appends meanwhile flushes at once, as outside any batch, since it
//! may acknowledge before the batch ends.
//!
//! Must never: let a deferred flush be forgotten (the scope flushes what
//! it collected however its future ends, when it completes).

use std::cell::RefCell;
use std::fs::File;
use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static DEFERRED: RefCell<Vec<Arc<File>>>;
}

/// Run `batch` with the flushes of its journal appends deferred, then
/// flush each journal written to once. A flush the disk refuses is logged
/// (the writes took effect and stay journaled in the operating system's
/// cache; the next flush carries them).
pub async fn group_commit<F: Future>(batch: F) -> F::Output {
    DEFERRED
        .scope(RefCell::new(Vec::new()), async {
            let out = batch.await;
            sync_deferred();
            out
        })
        .await
}

/// Flush now what the current [`group_commit`] collected (nothing outside one).
pub fn sync_deferred() {
    let files = DEFERRED.try_with(|d| std::mem::take(&mut *d.borrow_mut())).unwrap_or_default();
    let mut done: Vec<*const File> = Vec::with_capacity(files.len());
    for f in &files {
        let key = Arc::as_ptr(f);
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        if let Err(e) = f.sync_data() {
            tracing::error!(
                "could not flush a journal to the disk: {e}; the writes hold in memory and the next flush carries them"
            );
        }
    }
}

/// Defer `file`'s flush to the current [`group_commit`]; false outside one.
pub(crate) fn defer(file: &Arc<File>) -> bool {
    DEFERRED.try_with(|d| d.borrow_mut().push(file.clone())).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Durability, Journal};

    #[tokio::test(flavor = "current_thread")]
    async fn appends_in_a_batch_are_written_at_once_and_flushed_together() {
        let dir = std::env::temp_dir().join(format!("trellis-persist-group-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (mut j, _) = Journal::open(&dir, "model", Durability::PowerLoss).unwrap();
        let collected = group_commit(async {
            j.append(&[b"one"]).unwrap();
            j.append(&[b"two"]).unwrap();
            DEFERRED.with(|d| d.borrow().len())
        })
        .await;
        assert_eq!(collected, 2, "both flushes deferred to the batch's end");
        assert!(!defer(&Arc::new(File::open(&dir).unwrap())), "outside a batch nothing is deferred");
        drop(j);
        let (_, r) = Journal::open(&dir, "model", Durability::PowerLoss).unwrap();
        assert_eq!(r.records, vec![b"one".to_vec(), b"two".to_vec()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
