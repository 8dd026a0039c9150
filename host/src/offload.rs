//! Blocking work kept off the async runtime: a closure run on a thread of
//! its own and awaited with a time limit.
//!
//! For work on what a vendor or an operator hands us — reading and checking
//! plugin files, compiling a component — whose duration nobody can promise.
//! A runtime worker that blocks stalls the tasks queued behind it, BACnet
//! service included; and `spawn_blocking` alone is not enough, because the
//! runtime waits for its blocking threads when it shuts down, so one stuck
//! read would keep the process from exiting.
//!
//! Must never: run the closure on a runtime thread, or wait past the limit.
//! A closure still running at the limit is abandoned: its thread ends (or
//! stays blocked) on its own, and its result is dropped.

use std::time::Duration;

/// Why offloaded work gave no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// Still running at the limit; abandoned.
    #[error("{what} did not finish within {} s; abandoned", limit.as_secs_f64())]
    TimedOut {
        /// What was being done, e.g. "vetting /path/x.wasm".
        what: String,
        /// The limit.
        limit: Duration,
    },
    /// Its thread could not start, or panicked.
    #[error("{what} failed: {reason}")]
    Failed {
        /// What was being done.
        what: String,
        /// Why.
        reason: String,
    },
}

/// Run `work` on a new thread; its result, or an error at `limit`.
pub async fn run<T: Send + 'static>(
    what: impl Into<String>,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, OffloadError> {
    let what = what.into();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("trellis-offload".into())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| OffloadError::Failed { what: what.clone(), reason: format!("cannot start a thread: {e}") })?;
    match tokio::time::timeout(limit, rx).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(_)) => Err(OffloadError::Failed { what, reason: "its thread panicked".into() }),
        Err(_) => {
            tracing::error!(what, limit_s = limit.as_secs_f64(), "blocking work overran its limit; abandoned");
            Err(OffloadError::TimedOut { what, limit })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn work_that_blocks_past_the_limit_is_abandoned_and_the_runtime_goes_on() {
        let (_keep, blocked) = std::sync::mpsc::channel::<()>();
        let e = run("waiting forever", Duration::from_millis(50), move || blocked.recv()).await.unwrap_err();
        assert_eq!(e.to_string(), "waiting forever did not finish within 0.05 s; abandoned");
        // A current-thread runtime: had the work run on it, nothing here would.
        assert_eq!(run("adding", Duration::from_secs(60), || 2 + 2).await, Ok(4));
        let work: fn() = || panic!("on purpose");
        let e = run("panicking", Duration::from_secs(60), work).await.unwrap_err();
        assert_eq!(e.to_string(), "panicking failed: its thread panicked");
    }
}
