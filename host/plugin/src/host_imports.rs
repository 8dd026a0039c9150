//! The `trellis:bacnet/host` interface as the host implements it: what a
//! model may call while it runs (log, clock, change notifications).
//!
//! Shaped like wasmtime's own WASI interfaces: [`HostImports`] is the state,
//! the generated `Host` traits are implemented on it, and [`add_to_linker`]
//! wires it into a [`Linker`]. Every import is cheap and returns at once.
//! The interface is the same in `trellis:bacnet@0.1.0` and `@0.2.0`,
//! `@0.3.0` adds `event-transitions` and `@0.4.0` keeps 0.3.0's; every name
//! is linked, to the same functions. A transition that breaks the contract is dropped and logged
//! (the rest of the list goes on).
//!
//! An import must never block, never call back into the plugin, and never
//! fail: a host import that traps would kill the instance for the host's
//! mistake. Bad input (an out-of-range object identifier) is dropped.

use super::bindings::{host, types as wit, v1, v2, v3, v4};
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

/// The 0.2.0 names of the same imports.
impl v2::trellis::bacnet::host::Host for HostImports {
    fn log(&mut self, level: v2::trellis::bacnet::host::LogLevel, message: String) {
        self.log.line(convert::level_from_wit_v2(level), "log", &message);
    }

    fn now(&mut self) -> wit::Datetime {
        host::Host::now(self)
    }

    fn values_changed(&mut self, objects: Vec<wit::ObjectId>) {
        host::Host::values_changed(self, objects)
    }

    fn objects_changed(&mut self) {
        host::Host::objects_changed(self)
    }
}

/// The 0.3.0 names, and `event-transitions`.
impl v3::trellis::bacnet::host::Host for HostImports {
    fn log(&mut self, level: v3::trellis::bacnet::host::LogLevel, message: String) {
        self.log.line(convert::level_from_wit_v3(level), "log", &message);
    }

    fn now(&mut self) -> wit::Datetime {
        host::Host::now(self)
    }

    fn values_changed(&mut self, objects: Vec<wit::ObjectId>) {
        host::Host::values_changed(self, objects)
    }

    fn objects_changed(&mut self) {
        host::Host::objects_changed(self)
    }

    fn event_transitions(&mut self, transitions: Vec<v3::trellis::bacnet::host::EventTransition>) -> Vec<bool> {
        // Per transition: its index among those queued, if it converts.
        let mut slots = Vec::with_capacity(transitions.len());
        let mut queued = Vec::with_capacity(transitions.len());
        for t in transitions {
            match convert::event_transition_from_wit(t, |class, to| self.changes.ack_required(class, to)) {
                Ok(t) => {
                    slots.push(Some(queued.len()));
                    queued.push(t);
                }
                Err(e) => {
                    self.log.line(tracing::Level::WARN, "event-transitions", &format!("transition dropped: {}", e.0));
                    slots.push(None);
                }
            }
        }
        let required: Vec<bool> = queued.iter().map(|t| t.ack_required).collect();
        let accepted = self.changes.events(queued);
        if accepted < required.len() {
            let dropped = required.len() - accepted;
            self.log.line(
                tracing::Level::WARN,
                "event-transitions",
                &format!("{dropped} transitions dropped: too many wait"),
            );
        }
        // One that is not sent waits for no acknowledgment.
        slots.into_iter().map(|s| s.is_some_and(|i| i < accepted && required[i])).collect()
    }
}

/// The 0.4.0 names of the 0.3.0 imports.
impl v4::trellis::bacnet::host::Host for HostImports {
    fn log(&mut self, level: v4::trellis::bacnet::host::LogLevel, message: String) {
        self.log.line(convert::level_from_wit_v4(level), "log", &message);
    }

    fn now(&mut self) -> wit::Datetime {
        host::Host::now(self)
    }

    fn values_changed(&mut self, objects: Vec<wit::ObjectId>) {
        host::Host::values_changed(self, objects)
    }

    fn objects_changed(&mut self) {
        host::Host::objects_changed(self)
    }

    fn event_transitions(&mut self, transitions: Vec<v4::trellis::bacnet::host::EventTransition>) -> Vec<bool> {
        let transitions = transitions.into_iter().map(convert::event_transition_v4_to_v3).collect();
        v3::trellis::bacnet::host::Host::event_transitions(self, transitions)
    }
}

/// Add the `host` interface (and the shared `types`), under every package
/// version, to `linker`.
pub fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    v1::ObjectModelPlugin::add_to_linker::<PluginState, HasSelf<HostImports>>(linker, |s| &mut s.host)?;
    v2::ObjectModelPlugin::add_to_linker::<PluginState, HasSelf<HostImports>>(linker, |s| &mut s.host)?;
    v3::ObjectModelPlugin::add_to_linker::<PluginState, HasSelf<HostImports>>(linker, |s| &mut s.host)?;
    v4::ObjectModelPlugin::add_to_linker::<PluginState, HasSelf<HostImports>>(linker, |s| &mut s.host)
}
