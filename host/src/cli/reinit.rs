//! `trellis reinit` (ReinitializeDevice).

use super::{Failure, device, named};
use crate::client::Client;
use bacnet::enums::ReinitializedState;
use clap::Args;

/// Arguments of `trellis reinit`.
#[derive(Debug, Args)]
pub struct ReinitArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    pub address: String,
    /// The BACnetReinitializedStateOfDevice to request.
    #[arg(value_name = "STATE", value_parser = named(ReinitializedState::KNOWN))]
    pub state: ReinitializedState,
    /// The device's password (1 to 20 characters).
    #[arg(long, value_name = "P", value_parser = super::password)]
    pub password: Option<String>,
}

/// Run `trellis reinit`.
pub async fn run(client: &Client, a: ReinitArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    client.reinitialize_device(&dev, a.state, a.password.as_deref()).await?;
    Ok(())
}
