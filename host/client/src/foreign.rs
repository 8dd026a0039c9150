//! The client as a foreign device (Annex J.5): register with a BBMD, wait
//! for its answer, renew at half the time-to-live while the client lives.
//!
//! Must never: renew after the client is gone, or treat silence as success.

use super::ForeignDevice;
use super::actor::Command;
use bacnet::bvll::Bvll;
use bacnet::enums::BvlcResultCode;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc::WeakSender;
use trellis_bip::{BipHandle, DriverStats};

/// Register with `fd.bbmd` and wait up to `within` for its BVLC-Result.
pub(crate) async fn register(
    bip: &BipHandle,
    stats: &DriverStats,
    fd: ForeignDevice,
    within: Duration,
) -> std::io::Result<()> {
    let before = stats.results.load(Ordering::Relaxed);
    bip.send(fd.bbmd, Bvll::RegisterForeignDevice { ttl: fd.ttl }).await?;
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if stats.results.load(Ordering::Relaxed) > before && stats.last_result_from() == fd.bbmd {
            let code = stats.last_result.load(Ordering::Relaxed).saturating_sub(1);
            return match BvlcResultCode(code as u16) {
                BvlcResultCode::SUCCESSFUL_COMPLETION => Ok(()),
                refused => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    format!("the BBMD refused the foreign-device registration ({refused})"),
                )),
            };
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the BBMD did not answer the foreign-device registration within {} ms", within.as_millis()),
    ))
}

/// Register again at half the TTL (at least every half hour: a BBMD may
/// grant less than asked, ours an hour at most) until the client is
/// dropped.
pub(crate) async fn renew(bip: BipHandle, fd: ForeignDevice, client: WeakSender<Command>) {
    let every = Duration::from_secs((u64::from(fd.ttl.max(2)) / 2).min(1800));
    loop {
        tokio::time::sleep(every).await;
        if client.upgrade().is_none() {
            return;
        }
        if let Err(e) = bip.send(fd.bbmd, Bvll::RegisterForeignDevice { ttl: fd.ttl }).await {
            tracing::warn!(bbmd = %fd.bbmd, error = %e, "foreign-device renewal not sent");
        }
    }
}
