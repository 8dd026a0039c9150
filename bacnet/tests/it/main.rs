//! Integration tests for the `bacnet` core: one binary, one module per area.

mod apdu;
mod bvll;
mod codec;
mod npdu;
mod services_a;
mod services_b;
mod strategies;
mod tsm;
mod vectors;
