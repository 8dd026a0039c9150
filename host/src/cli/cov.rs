//! `trellis cov`: subscribe to changes of one object (SubscribeCOV, or
//! SubscribeCOVProperty with `--property`) and print each notification as
//! it arrives; renew before the lifetime runs out; cancel on exit.

use super::{Failure, device, format, object, property};
use crate::client::{Client, CovSubscription};
use bacnet::services::PropertyReference;
use clap::Args;
use std::time::Duration;
use trellis_net::sleep_until;

/// Arguments of `trellis cov`.
#[derive(Debug, Args)]
pub struct CovArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    pub address: String,
    /// Object, e.g. analog-value,1.
    pub object: String,
    /// Ask for confirmed notifications (each one acknowledged).
    #[arg(long)]
    pub confirmed: bool,
    /// Subscription lifetime in seconds, renewed before it ends; 0 asks for
    /// an indefinite subscription (which the device keeps after we exit,
    /// unless it is cancelled: Ctrl-C cancels it).
    #[arg(long, value_name = "S", default_value_t = 300)]
    pub lifetime: u32,
    /// Monitor one property (SubscribeCOVProperty) instead of the object.
    #[arg(long, value_name = "PROPERTY")]
    pub property: Option<String>,
    /// COV increment for --property.
    #[arg(long, value_name = "X", requires = "property")]
    pub increment: Option<f32>,
    /// Stop after this many notifications (the initial one included).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<u64>,
    /// Subscriber process identifier.
    #[arg(long, value_name = "ID", default_value_t = 1)]
    pub process_id: u32,
}

/// Run `trellis cov`.
pub async fn run(client: &Client, a: CovArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = object(&a.object)?;
    let mut sub = CovSubscription::new(a.process_id, obj).confirmed(a.confirmed).lifetime(a.lifetime);
    if let Some(p) = &a.property {
        sub = sub.property(PropertyReference::new(property(p)?), a.increment);
    }
    let mut notifications = client.cov_notifications();
    client.subscribe_cov(&dev, &sub).await?;
    eprintln!(
        "subscribed to {obj} at {dev} ({}, {})",
        if a.confirmed { "confirmed" } else { "unconfirmed" },
        if a.lifetime == 0 { "indefinite".to_string() } else { format!("lifetime {} s", a.lifetime) }
    );
    // Renew at three quarters of the lifetime: time for retries before it ends.
    let renew_every = (a.lifetime > 0).then(|| Duration::from_millis(a.lifetime as u64 * 750));
    let mut renew = renew_every.map(|d| tokio::time::interval_at(tokio::time::Instant::now() + d, d));
    let stop_at = a.duration.map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
    let mut seen = 0u64;
    let result = loop {
        if a.count.is_some_and(|n| seen >= n) {
            break Ok(());
        }
        tokio::select! {
            n = notifications.recv() => match n {
                Ok(n) if n.source.link == dev.link
                    && n.notification.monitored_object == obj
                    && n.notification.subscriber_process_identifier == a.process_id =>
                {
                    seen += 1;
                    let values = format::property_values(obj.object_type, &n.notification.values);
                    println!("{obj} {values} (time remaining {} s)", n.notification.time_remaining);
                }
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(k)) => eprintln!("warning: {k} notifications missed"),
                Err(_) => break Err(Failure { code: super::exit::OTHER, message: "the client stopped".into() }),
            },
            _ = tick(renew.as_mut()) => {
                if let Err(e) = client.subscribe_cov(&dev, &sub).await {
                    break Err(e.into());
                }
            }
            _ = sleep_until(stop_at) => break Ok(()),
            _ = tokio::signal::ctrl_c() => break Ok(()),
        }
    };
    // Leave nothing behind at the device.
    if let Err(e) = client.cancel_cov(&dev, &sub).await {
        eprintln!("warning: cancelling the subscription failed: {e}");
    }
    result
}

async fn tick(i: Option<&mut tokio::time::Interval>) {
    match i {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}
