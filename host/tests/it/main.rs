//! Host integration tests: one binary, one module per area.

mod admin_socket;
mod amplification;
mod capture;
mod child;
mod cli;
mod control;
mod cov;
mod crowd;
mod examples;
mod gateway;
mod interop;
mod layering;
mod lifecycle;
mod management;
mod mstp;
mod peers;
mod plugin;
mod read_range;
mod scratch;
mod segmentation;
mod served;
mod server;
mod shards;
mod signing;
mod swap;
mod vetting;
