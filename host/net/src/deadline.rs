//! Waiting for an optional deadline, the shape every state machine's
//! `poll_timeout()` gives the task that drives it.

use tokio::time::Instant;

/// Sleep until `deadline`, or forever when there is none (so a `select!`
/// arm with nothing to wait for never fires).
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
