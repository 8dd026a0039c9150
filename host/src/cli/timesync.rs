//! `trellis timesync` (TimeSynchronization, UTCTimeSynchronization).

use super::Failure;
use super::datetime::{self, Zone};
use crate::client::{Client, Destination};
use clap::Args;

/// Arguments of `trellis timesync`.
#[derive(Debug, Args)]
pub struct TimesyncArgs {
    /// Device address: IP[:PORT][@NET:MAC]. Without it, the request is
    /// broadcast on the local network.
    pub address: Option<String>,
    /// Broadcast to every network (DNET 65535) rather than the local one.
    #[arg(long, conflicts_with = "address")]
    pub global: bool,
    /// Send UTCTimeSynchronization (the time in UTC) instead of
    /// TimeSynchronization (this machine's local time).
    #[arg(long)]
    pub utc: bool,
    /// The time to set, ISO 8601 [default: now]. With an offset
    /// (2025-06-01T12:30:00Z, …+02:00) it is converted to local time (or to
    /// UTC with --utc); without one (2025-06-01T14:30:00) it is sent as written.
    #[arg(long, value_name = "ISO8601")]
    pub time: Option<String>,
}

/// Run `trellis timesync`.
pub async fn run(client: &Client, a: TimesyncArgs) -> Result<(), Failure> {
    let to = super::whois::destination(a.address.as_deref(), a.global)?;
    let zone = if a.utc { Zone::Utc } else { Zone::Local };
    let (date, time) = match &a.time {
        Some(t) => datetime::parse(t, zone).map_err(Failure::usage)?,
        None => datetime::now(zone).map_err(|message| Failure { code: super::exit::OTHER, message })?,
    };
    let whom = match &to {
        Destination::Device(d) => d.to_string(),
        Destination::LocalBroadcast => format!("the local network ({})", client.broadcast_addr()),
        Destination::GlobalBroadcast => format!("every network ({})", client.broadcast_addr()),
    };
    let (service, zone_name) = if a.utc {
        client.utc_time_synchronization(to, date, time).await?;
        ("utcTimeSynchronization", "UTC")
    } else {
        client.time_synchronization(to, date, time).await?;
        ("timeSynchronization", "local time")
    };
    println!("{service} {date} {time} ({zone_name}) sent to {whom}");
    Ok(())
}
