//! The node's tests, read like Clause 9's sequences: the node on the
//! simulated line beside the gateway's own MS/TP driver, in virtual time.

mod frames;
mod line;
mod ring;
mod robustness;
mod services;
