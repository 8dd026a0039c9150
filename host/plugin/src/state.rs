//! What one plugin instance's [`Store`](wasmtime::Store) holds: its WASI
//! context and resource table, its limiter and its host imports.
//!
//! A `PluginState` lives exactly as long as one instance: a restart builds a
//! new one. It must never be shared between instances or plugins.

use super::host_imports::HostImports;
use super::limits::StoreLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The data of one plugin instance's store.
pub struct PluginState {
    /// WASI: stdio capture, clock, data directory.
    pub wasi: WasiCtx,
    /// WASI resources (streams, descriptors).
    pub table: ResourceTable,
    /// Memory, table and instance limits.
    pub limiter: StoreLimiter,
    /// The `host` interface.
    pub host: HostImports,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}
