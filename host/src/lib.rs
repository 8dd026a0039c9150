//! Trellis host: the runtime around the sans-IO `bacnet` core.
//!
//! - [`client`]: the async BACnet client API (Who-Is, ReadProperty,
//!   ReadPropertyMultiple, WriteProperty, WritePropertyMultiple).
//! - [`server`]: answers requests for the device this gateway serves
//!   (PARTIAL: its Device object only, until the plugin runtime lands).
//! - [`cli`]: the `trellis` command line.

pub mod admin;
pub mod admin_dir;
pub mod cli;
pub mod client;
pub mod config;
mod deadline;
pub mod model;
pub mod offload;
pub mod plugin;
pub mod server;
pub mod shard;
