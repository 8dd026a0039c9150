//! Integration tests for the `bacnet` core: one binary, one module per area.

mod amplification;
mod apdu;
mod bvll;
mod codec;
mod cov;
mod cov_multiple;
mod ethernet;
mod mstp;
mod mstp_ring;
mod npdu;
mod segmentation;
mod services_a;
mod services_b;
mod services_c;
mod services_d;
mod strategies;
mod tsm;
mod vectors;
