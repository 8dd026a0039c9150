//! Integration tests for the `bacnet` core: one binary, one module per area.

mod codec;
mod strategies;
