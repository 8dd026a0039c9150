//! OPC UA for Trellis: the gateway's BACnet points as an OPC UA address
//! space, named after OPC 30030 "OPC UA for BACnet", on the `async-opcua`
//! stack (ARCHITECTURE.md says why that stack, with the measurements).
//!
//! - [`source`]: what the server needs from the gateway (the one seam to BACnet);
//! - [`space`] and [`node_ids`]: the nodes and their stable numeric NodeIds;
//! - [`types`]: OPC 30030's object types the nodes are instances of;
//! - [`manager`]: reads and writes of points' values go to the devices;
//! - [`server`]: endpoints, security, identities; the [`server::Updater`]
//!   through which COV changes reach subscriptions;
//! - [`convert`], [`units`]: values, status codes, engineering units;
//! - [`limits`]: message, array and operation limits, consistent with each other;
//! - [`auth`], [`certs`]: identities and the certificate store.
//!
//! Must never: poll a device for a subscription (changes are pushed), or
//! let a client reach a device the gateway does not show.

pub mod auth;
pub mod certs;
pub mod client;
pub mod convert;
pub mod limits;
pub mod manager;
pub mod node_ids;
pub mod server;
pub mod source;
pub mod space;
pub mod types;
pub mod units;

/// The OPC UA stack, re-exported for the gateway and tests.
pub use opcua;
