//! Trellis host: the `trellis` binary's library, the runtime around the
//! sans-IO `bacnet` core.
//!
//! The runtime's parts are crates of their own (see ARCHITECTURE.md), here
//! under their old paths:
//! - [`client`] (`trellis_client`): the async BACnet client API (Who-Is,
//!   the property services, COV, device management).
//! - [`server`] (`trellis_server`): answers requests for the devices this
//!   gateway serves, each backed by an [`model::ObjectModel`].
//! - [`model`] (`trellis_model`): the object-model boundary between them.
//! - [`plugin`] (`trellis_plugin`, plus the [`plugin::builtin`] plugins): the
//!   wasmtime runtime that serves object models from WASM components.
//!
//! This crate adds what only the binary needs: [`cli`] (the `trellis`
//! command line), [`config`], [`shard`] (the threads devices run on),
//! [`admin`] (the local admin socket) and [`offload`].

pub mod admin;
pub mod admin_dir;
pub mod app;
pub mod cli;
pub use trellis_client as client;
pub mod config;
pub mod http;
pub mod local_points;
pub mod mqtt_bridge;
pub mod network_port;
pub mod notification_config;
pub mod persistence_config;
pub mod schedule_config;
pub use trellis_model as model;
pub mod offload;
pub mod opcua_bridge;
pub mod plugin;
pub mod point_json;
pub mod sc_port;
pub use trellis_server as server;
pub mod shard;
