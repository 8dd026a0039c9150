//! `trellis run`: the gateway on its embedded default.
//!
//! PARTIAL: serves a Device object only (Who-Is/I-Am, Who-Has, ReadProperty,
//! ReadPropertyMultiple, WriteProperty, WritePropertyMultiple). Plugin
//! object models and a TOML configuration arrive with the plugin runtime.

use super::Failure;
use crate::server::{DeviceConfig, DeviceOnlyModel, build, serve};
use clap::Args;

/// Arguments of `trellis run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Device instance number (0..=4194302).
    #[arg(long, default_value_t = 389_001, value_parser = clap::value_parser!(u32).range(0..=4_194_302))]
    pub device_id: u32,
    /// Device Object_Name.
    #[arg(long, default_value = "Trellis gateway")]
    pub name: String,
    /// Vendor_Identifier (999 is unassigned; use your ASHRAE vendor ID).
    #[arg(long, default_value_t = 999)]
    pub vendor_id: u16,
}

/// Run `trellis run` until Ctrl-C.
pub async fn run(bip: trellis_bip::BipConfig, a: RunArgs) -> Result<(), Failure> {
    let model = DeviceOnlyModel::new(a.device_id, &a.name);
    let server = build(model, DeviceConfig::default(), a.vendor_id).await?;
    eprintln!(
        "trellis: serving device {} ({:?}) on BACnet/IP {}; Ctrl-C to stop",
        server.device_id().instance,
        a.name,
        bip.bind
    );
    tokio::select! {
        r = serve(bip, server) => r.map_err(Failure::from),
        _ = tokio::signal::ctrl_c() => {
            eprintln!("trellis: stopped");
            Ok(())
        }
    }
}
