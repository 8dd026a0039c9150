//! MQTT northbound for Trellis. In progress (issue 16): so far
//! - [`spool`]: the store-and-forward spool that holds what is to be
//!   published while the broker is unreachable — bounded, on disk, in
//!   order, surviving a gateway restart, deleting only what the broker
//!   acknowledged;
//! - [`link`]: the broker connection (rumqttc, TLS through rustls) fed from
//!   the spool: QoS 0 and 1, an availability topic with a last will,
//!   reconnection with back-off, subscribed topics coming in;
//! - [`tls`]: the broker's certificate checked against configured issuers;
//! - [`sparkplug`]: Sparkplug B 3.0 for an edge node (births, data, deaths,
//!   sequence numbers, commands), sans-IO.
//!
//! Must never: lose a message it accepted except by its configured full
//! policy (counted), or let a damaged file stop the gateway.

pub mod link;
pub mod sparkplug;
pub mod spool;
pub mod tls;
