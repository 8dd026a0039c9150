//! The `trellis:bacnet/host` interface as the host implements it: what a
//! model may call while it runs (log, clock, change notifications).
//!
//! Shaped like wasmtime's own WASI interfaces: [`HostImports`] is the state,
//! the generated `Host` trait is implemented on it, and [`add_to_linker`]
//! wires it into a [`Linker`]. Every import is cheap and returns at once.
//!
//! An import must never block, never call back into the plugin, and never
//! fail: a host import that traps would kill the instance for the host's
//! mistake. Bad input (an out-of-range object identifier) is dropped.

use super::bindings::{ObjectModelPlugin, host, types as wit};
use super::convert;
use super::log::PluginLog;
use super::state::PluginState;
use std::sync::Arc;
use trellis_model::{ChangeFeed, HostClock};
use wasmtime::component::{HasSelf, Linker};

/// What the host imports need: the plugin's log, the gateway's clock and the
/// model's change feed.
#[derive(Debug, Clone)]
pub struct HostImports {
    log: Arc<PluginLog>,
    clock: HostClock,
    changes: ChangeFeed,
}

impl HostImports {
    /// Imports for one instance.
    pub fn new(log: Arc<PluginLog>, clock: HostClock, changes: ChangeFeed) -> Self {
        HostImports { log, clock, changes }
    }
}

impl host::Host for HostImports {
    fn log(&mut self, level: host::LogLevel, message: String) {
        self.log.line(convert::level_from_wit(level), "log", &message);
    }

    fn now(&mut self) -> wit::Datetime {
        convert::datetime_to_wit(self.clock.now())
    }

    fn values_changed(&mut self, objects: Vec<wit::ObjectId>) {
        self.changes.values_changed(convert::changed_from_wit(objects));
    }

    fn objects_changed(&mut self) {
        self.changes.objects_changed();
    }
}

impl wit::Host for HostImports {}

/// Add the `host` interface (and the shared `types`) to `linker`.
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    ObjectModelPlugin::add_to_linker::<PluginState, HasSelf<HostImports>>(linker, |s| &mut s.host)
}
