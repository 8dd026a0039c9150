//! `trellis dcc` (DeviceCommunicationControl).

use super::{Failure, device, named};
use crate::client::Client;
use bacnet::enums::EnableDisable;
use clap::Args;

/// Arguments of `trellis dcc`.
#[derive(Debug, Args)]
pub struct DccArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    pub address: String,
    /// What to do.
    #[arg(value_name = "STATE", value_parser = named(EnableDisable::KNOWN))]
    pub state: EnableDisable,
    /// Minutes until the device returns to normal by itself (0..=65535);
    /// without it, the state holds until the next DeviceCommunicationControl.
    #[arg(long, value_name = "MIN")]
    pub duration: Option<u16>,
    /// The device's password (1 to 20 characters).
    #[arg(long, value_name = "P", value_parser = super::password)]
    pub password: Option<String>,
}

/// Run `trellis dcc`.
pub async fn run(client: &Client, a: DccArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    client.device_communication_control(&dev, a.duration, a.state, a.password.as_deref()).await?;
    Ok(())
}
