//! `trellis discover`: Who-Is, then each device's Object_List and every
//! object's Object_Name.
//!
//! Reads the whole Object_List first; a device that cannot return it in one
//! APDU (Abort segmentation-not-supported or buffer-overflow, or an Error)
//! is read element by element. Names are read 16 objects per
//! ReadPropertyMultiple, falling back to ReadProperty for devices that reject
//! RPM.

use super::whois::WhoIsTarget;
use super::{Failure, format};
use crate::client::{Client, ClientError, DeviceAddress, Discovered};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{PropertyReference, ReadAccessSpecification};
use bacnet::value::{Element, Value};
use bacnet::{AnyValue, ObjectIdentifier};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `trellis discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Whom to ask.
    #[command(flatten)]
    pub who: WhoIsTarget,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A device found, with its objects (what `--json` prints, a line each).
#[derive(Debug, serde::Serialize)]
pub struct DeviceReport {
    /// Its instance.
    pub device: u32,
    /// Where it answered from.
    pub address: String,
    /// Its I-Am's vendor identifier.
    pub vendor_id: u16,
    /// Its Object_List, with names.
    pub objects: Vec<ObjectReport>,
    /// Why the objects could not be listed, if they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One object of a discovered device.
#[derive(Debug, serde::Serialize)]
pub struct ObjectReport {
    /// `analog-value,1`.
    pub object: String,
    /// `analog-value`.
    pub object_type: String,
    /// `1`.
    pub instance: u32,
    /// Its Object_Name, if it could be read.
    pub name: Option<String>,
}

/// Run `trellis discover`.
pub async fn run(client: &Client, a: DiscoverArgs) -> Result<(), Failure> {
    let devices = a.who.scan(client).await?.collect().await;
    if devices.is_empty() {
        return Err(super::whois::no_answer(client));
    }
    let bar = ProgressBar::new(devices.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} devices {msg}").unwrap_or(ProgressStyle::default_bar()),
    );
    let mut reports = Vec::new();
    for d in &devices {
        bar.set_message(format!("device {}", d.i_am.device.instance));
        reports.push(describe(client, d).await);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let failed = reports.iter().filter(|r| r.error.is_some()).count();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports).map_err(anyhow::Error::from)?);
    } else {
        println!("{:>9}  {:<22}  {:<32}  name", "device", "address", "object");
        for r in &reports {
            if let Some(e) = &r.error {
                println!("{:>9}  {:<22}  error: {e}", r.device, r.address);
            }
            for o in &r.objects {
                println!("{:>9}  {:<22}  {:<32}  {}", r.device, r.address, o.object, o.name.as_deref().unwrap_or("?"));
            }
        }
    }
    if failed > 0 {
        return Err(Failure {
            code: super::exit::BACNET,
            message: format!("{failed} of {} devices could not be fully described", reports.len()),
        });
    }
    Ok(())
}

/// Read a discovered device's Object_List and every object's Object_Name.
pub async fn describe(client: &Client, d: &Discovered) -> DeviceReport {
    let mut report = DeviceReport {
        device: d.i_am.device.instance,
        address: d.address.to_string(),
        vendor_id: d.i_am.vendor_id,
        objects: vec![],
        error: None,
    };
    let list = match object_list(client, &d.address, d.i_am.device).await {
        Ok(l) => l,
        Err(e) => {
            report.error = Some(format!("cannot read object-list: {e}"));
            return report;
        }
    };
    let names = object_names(client, &d.address, &list).await;
    report.objects = list
        .iter()
        .zip(names)
        .map(|(o, name)| ObjectReport {
            object: o.to_string(),
            object_type: o.object_type.to_string(),
            instance: o.instance,
            name,
        })
        .collect();
    report
}

fn object_ids(v: &AnyValue) -> Vec<ObjectIdentifier> {
    v.0.iter()
        .filter_map(|e| match e {
            Element::Application(Value::ObjectIdentifier(o)) => Some(*o),
            _ => None,
        })
        .collect()
}

async fn object_list(
    client: &Client,
    dev: &DeviceAddress,
    device: ObjectIdentifier,
) -> Result<Vec<ObjectIdentifier>, ClientError> {
    match client.read_property(dev, device, P::OBJECT_LIST, None).await {
        Ok(v) => return Ok(object_ids(&v)),
        Err(e @ (ClientError::Timeout { .. } | ClientError::Io(_) | ClientError::Closed)) => return Err(e),
        Err(e) => tracing::debug!(error = %e, "whole object-list failed; reading element by element"),
    }
    let len = match client.read_property(dev, device, P::OBJECT_LIST, Some(0)).await?.as_primitive() {
        Some(Value::Unsigned(n)) => *n,
        _ => return Err(ClientError::UnexpectedReply("object-list length is not an Unsigned")),
    };
    if len > MAX_OBJECT_LIST {
        return Err(ClientError::UnexpectedReply("an object-list longer than 65,535 objects"));
    }
    let mut out = Vec::new();
    for i in 1..=len as u32 {
        let v = client.read_property(dev, device, P::OBJECT_LIST, Some(i)).await?;
        out.extend(object_ids(&v));
    }
    Ok(out)
}

/// Longest Object_List `discover` reads element by element.
const MAX_OBJECT_LIST: u64 = 65_535;

async fn object_names(client: &Client, dev: &DeviceAddress, list: &[ObjectIdentifier]) -> Vec<Option<String>> {
    let mut names = Vec::with_capacity(list.len());
    let mut rpm_works = true;
    for chunk in list.chunks(16) {
        if rpm_works {
            let specs = chunk
                .iter()
                .map(|o| ReadAccessSpecification {
                    object: *o,
                    properties: vec![PropertyReference::new(P::OBJECT_NAME)],
                })
                .collect();
            match client.read_property_multiple(dev, specs).await {
                Ok(results) if results.len() == chunk.len() => {
                    for r in results {
                        let v = r.results.into_iter().next().and_then(|x| x.outcome.ok());
                        names.push(v.map(|v| format::value(r.object.object_type, P::OBJECT_NAME, &v)));
                    }
                    continue;
                }
                // A device that stopped answering will not answer ReadProperty either.
                Err(ClientError::Timeout { .. } | ClientError::Io(_) | ClientError::Closed) => {
                    names.extend(std::iter::repeat_n(None, list.len() - names.len()));
                    return names;
                }
                Ok(_) | Err(_) => rpm_works = false,
            }
        }
        for o in chunk {
            let v = client.read_property(dev, *o, P::OBJECT_NAME, None).await.ok();
            names.push(v.map(|v| format::value(o.object_type, P::OBJECT_NAME, &v)));
        }
    }
    names
}
