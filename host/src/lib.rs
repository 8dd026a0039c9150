//! Trellis host: the runtime around the sans-IO `bacnet` core. This issue's
//! scope is the client side: the async [`client`] API and the `trellis` CLI.
//! The plugin runtime and server application layer come next.

pub mod cli;
pub mod client;
