//! `trellis write` (WriteProperty).

use super::{Failure, device, object, parse, property};
use crate::client::Client;
use clap::Args;

/// Arguments of `trellis write`.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Device address: IP[:PORT].
    pub address: String,
    /// Object, e.g. analog-value,1.
    pub object: String,
    /// Property by its standard name, e.g. present-value.
    pub property: String,
    /// Value: typed by the property (21.5, active, 2, "text", null to relinquish),
    /// or explicit (real:21.5, unsigned:2, enum:1, bool:true, string:text).
    pub value: String,
    /// Command priority 1..16 for commandable properties.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub priority: Option<u8>,
    /// Array index.
    #[arg(long)]
    pub index: Option<u32>,
}

/// Run `trellis write`.
pub async fn run(client: &Client, a: WriteArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = object(&a.object)?;
    let prop = property(&a.property)?;
    let value = parse::value(obj.object_type, prop, &a.value).map_err(Failure::usage)?;
    client.write_property(&dev, obj, prop, a.index, value, a.priority).await?;
    Ok(())
}
