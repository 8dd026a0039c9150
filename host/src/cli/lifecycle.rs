//! `trellis create` (CreateObject) and `trellis delete` (DeleteObject).

use super::{Failure, device, parse, property};
use crate::client::Client;
use bacnet::ObjectType;
use bacnet::services::{ObjectSpecifier, PropertyValue};
use clap::Args;

/// Arguments of `trellis create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Device address: IP[:PORT].
    pub address: String,
    /// What to create: a type (calendar; the device picks the instance) or an object (calendar,7).
    pub object: String,
    /// Initial values, PROPERTY=VALUE, written in order (object-name=lobby, out-of-service=bool:true);
    /// values as `trellis write` takes them.
    pub values: Vec<String>,
}

/// Arguments of `trellis delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Device address: IP[:PORT].
    pub address: String,
    /// Object, e.g. calendar,7.
    pub object: String,
}

/// Run `trellis create`: prints the new object's identifier.
pub async fn run_create(client: &Client, a: CreateArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let specifier = match a.object.parse::<bacnet::ObjectIdentifier>() {
        Ok(id) => ObjectSpecifier::Identifier(id),
        Err(_) => ObjectSpecifier::Type(ObjectType::from_name(a.object.trim()).ok_or_else(|| {
            Failure::usage(format!("`{}`: an object type (calendar) or an object (calendar,7)", a.object))
        })?),
    };
    let object_type = match specifier {
        ObjectSpecifier::Type(t) => t,
        ObjectSpecifier::Identifier(id) => id.object_type,
    };
    let mut initial = Vec::new();
    for v in &a.values {
        let (name, text) =
            v.split_once('=').ok_or_else(|| Failure::usage(format!("`{v}`: an initial value is PROPERTY=VALUE")))?;
        let prop = property(name.trim())?;
        let value = parse::value(object_type, prop, text).map_err(Failure::usage)?;
        initial.push(PropertyValue { property: prop, array_index: None, value, priority: None });
    }
    let id = client.create_object(&dev, specifier, initial).await?;
    println!("{id}");
    Ok(())
}

/// Run `trellis delete`.
pub async fn run_delete(client: &Client, a: DeleteArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let obj = super::object(&a.object)?;
    client.delete_object(&dev, obj).await?;
    Ok(())
}
