//! MQTT northbound for Trellis. In progress (issue 16): so far the
//! store-and-forward spool ([`spool`]) that holds what is to be published
//! while the broker is unreachable — bounded, on disk, in order, surviving
//! a gateway restart, deleting only what the broker acknowledged.
//!
//! Must never: lose a message it accepted except by its configured full
//! policy (counted), or let a damaged file stop the gateway.

pub mod spool;
