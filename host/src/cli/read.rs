//! `trellis read` (ReadProperty) and `trellis readm` (ReadPropertyMultiple).

use super::{Failure, device, format, object, property};
use crate::client::Client;
use bacnet::enums::{EngineeringUnits, PropertyIdentifier};
use bacnet::services::{PropertyReference, ReadAccessSpecification};
use bacnet::{ObjectIdentifier, Value};
use clap::Args;

/// Arguments of `trellis read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// Device address: IP[:PORT] (port 47808 by default).
    pub address: String,
    /// Object, e.g. analog-value,1 or analog-value:1.
    pub object: String,
    /// Property by its standard name, e.g. present-value.
    pub property: String,
    /// Array index (0 reads the array's length).
    #[arg(long)]
    pub index: Option<u32>,
}

/// Arguments of `trellis readm`.
#[derive(Debug, Args)]
pub struct ReadmArgs {
    /// Device address: IP[:PORT].
    pub address: String,
    /// Object, e.g. analog-value,1.
    pub object: String,
    /// Properties (all, required and optional are allowed).
    #[arg(required = true)]
    pub properties: Vec<String>,
}

/// The units of an analog object, for printing next to its value.
async fn units_of(
    client: &Client,
    dev: &crate::client::DeviceAddress,
    obj: ObjectIdentifier,
) -> Option<EngineeringUnits> {
    if !format::is_analog(obj.object_type) {
        return None;
    }
    // The value is already in hand: a device slow to give its Units must not
    // hold it back for the whole retry budget.
    let units = client.read_property(dev, obj, PropertyIdentifier::UNITS, None);
    let v = tokio::time::timeout(std::time::Duration::from_secs(2), units).await.ok()?.ok()?;
    match v.as_primitive() {
        Some(Value::Enumerated(u)) => Some(EngineeringUnits(*u)),
        _ => None,
    }
}

/// Run `trellis read`.
pub async fn run_read(client: &Client, a: ReadArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = object(&a.object)?;
    let prop = property(&a.property)?;
    let v = client.read_property(&dev, obj, prop, a.index).await?;
    let text = format::value(obj.object_type, prop, &v);
    let text = if prop == PropertyIdentifier::PRESENT_VALUE && a.index.is_none() {
        format::with_units(text, units_of(client, &dev, obj).await)
    } else {
        text
    };
    println!("{text}");
    Ok(())
}

/// Run `trellis readm`.
pub async fn run_readm(client: &Client, a: ReadmArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = object(&a.object)?;
    let properties =
        a.properties.iter().map(|p| property(p).map(PropertyReference::new)).collect::<Result<Vec<_>, _>>()?;
    let results =
        client.read_property_multiple(&dev, vec![ReadAccessSpecification { object: obj, properties }]).await?;
    let mut any_error = false;
    for access in results {
        for r in access.results {
            let name = match r.array_index {
                Some(i) => format!("{}[{i}]", r.property),
                None => r.property.to_string(),
            };
            match r.outcome {
                Ok(v) => {
                    println!("{}  {name}: {}", access.object, format::value(access.object.object_type, r.property, &v))
                }
                Err(e) => {
                    any_error = true;
                    println!("{}  {name}: error {e}", access.object);
                }
            }
        }
    }
    if any_error {
        return Err(Failure { code: super::exit::BACNET, message: "some properties could not be read".into() });
    }
    Ok(())
}
