//! `trellis whois`: Who-Is and the I-Am answers.

use super::{Failure, device};
use crate::client::{Client, Destination};
use clap::Args;
use std::time::Duration;

/// Which devices a Who-Is asks, and where it goes; shared by `whois` and
/// `discover`.
#[derive(Debug, Args)]
pub struct WhoIsTarget {
    /// Lowest device instance (with --high).
    #[arg(long, requires = "high")]
    pub low: Option<u32>,
    /// Highest device instance (with --low).
    #[arg(long, requires = "low")]
    pub high: Option<u32>,
    /// Send the Who-Is to one address (IP[:PORT]) instead of broadcasting.
    #[arg(long)]
    pub target: Option<String>,
    /// Broadcast to every network (DNET 65535) rather than the local one.
    #[arg(long, conflicts_with = "target")]
    pub global: bool,
    /// Seconds to wait for answers.
    #[arg(long, default_value_t = 3.0)]
    pub wait: f64,
}

impl WhoIsTarget {
    /// Send the Who-Is and return the scan of its answers.
    pub(crate) async fn scan(&self, client: &Client) -> Result<crate::client::WhoIsScan, Failure> {
        let to = destination(self.target.as_deref(), self.global)?;
        Ok(client.who_is(to, range(self.low, self.high)?, wait(self.wait)?).await?)
    }
}

/// Arguments of `trellis whois`.
#[derive(Debug, Args)]
pub struct WhoisArgs {
    #[command(flatten)]
    pub who: WhoIsTarget,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn range(low: Option<u32>, high: Option<u32>) -> Result<Option<(u32, u32)>, Failure> {
    match (low, high) {
        (Some(l), Some(h)) if l <= h && h <= bacnet::ObjectIdentifier::MAX_INSTANCE => Ok(Some((l, h))),
        (Some(_), Some(_)) => Err(Failure::usage("--low must not exceed --high, and both must be at most 4194303")),
        _ => Ok(None),
    }
}

/// Where an unconfirmed request goes: one device, or a local or global broadcast.
pub(crate) fn destination(target: Option<&str>, global: bool) -> Result<Destination, Failure> {
    Ok(match target {
        Some(t) => Destination::Device(device(t)?),
        None if global => Destination::GlobalBroadcast,
        None => Destination::LocalBroadcast,
    })
}

fn wait(secs: f64) -> Result<Duration, Failure> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| *d <= Duration::from_secs(3600))
        .ok_or_else(|| Failure::usage("--wait must be between 0 and 3600 seconds"))
}

/// The failure for a Who-Is nobody answered, with a hint when we listen on loopback.
pub(crate) fn no_answer(client: &Client) -> Failure {
    let mut message = "no device answered the Who-Is".to_string();
    if let crate::client::LinkAddress::Ip(a) = client.local_addr()
        && a.ip().is_loopback()
    {
        message.push_str(&format!(
            " (bound to loopback {}; on a real network use --bind <interface IP>/<prefix>)",
            client.local_addr()
        ));
    }
    Failure { code: super::exit::TIMEOUT, message }
}

/// Run `trellis whois`.
pub async fn run(client: &Client, a: WhoisArgs) -> Result<(), Failure> {
    let mut scan = a.who.scan(client).await?;
    let mut count = 0;
    if !a.json {
        println!("{:>9}  {:<28}  {:>7}  {:>6}  segmentation", "device", "address", "max-apdu", "vendor");
    }
    while let Some(d) = scan.next().await {
        count += 1;
        if a.json {
            let v = serde_json::json!({
                "device": d.i_am.device.instance,
                "address": d.address.to_string(),
                "max_apdu_length_accepted": d.i_am.max_apdu_length_accepted,
                "segmentation_supported": d.i_am.segmentation_supported.to_string(),
                "vendor_id": d.i_am.vendor_id,
            });
            println!("{v}");
        } else {
            println!(
                "{:>9}  {:<28}  {:>7}  {:>6}  {}",
                d.i_am.device.instance,
                d.address.to_string(),
                d.i_am.max_apdu_length_accepted,
                d.i_am.vendor_id,
                d.i_am.segmentation_supported
            );
        }
    }
    if count == 0 {
        return Err(no_answer(client));
    }
    Ok(())
}
