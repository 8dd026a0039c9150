//! The plugin runtime ([`trellis_plugin`], re-exported whole) and the
//! plugins built with this binary ([`builtin`]).
//!
//! The runtime is a crate of its own so that it is the only one that knows
//! wasmtime; this module adds what only the binary has: the components
//! `host/build.rs` builds from the `plugins/` workspace.

pub use trellis_plugin::*;

/// The plugins built with this binary (`host/build.rs` builds the `plugins/`
/// workspace for `wasm32-wasip2`).
pub mod builtin {
    /// The default object model: a small building controller.
    pub const DEMO_BUILDING: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_DEMO_BUILDING"));
    /// Path of the built `demo-building` component.
    pub const DEMO_BUILDING_PATH: &str = env!("TRELLIS_PLUGIN_DEMO_BUILDING");
    /// Path of the built `bulk-objects` component (a large generated object set).
    pub const BULK_OBJECTS_PATH: &str = env!("TRELLIS_PLUGIN_BULK_OBJECTS");
    /// Path of the built `misbehave` component (traps, loops and memory bombs
    /// on request, for failure tests).
    pub const MISBEHAVE_PATH: &str = env!("TRELLIS_PLUGIN_MISBEHAVE");
    /// The `firewall` routing policy: ordered rules over ports, sources,
    /// services and objects.
    pub const FIREWALL: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_FIREWALL"));
    /// The `broadcast-guard` routing policy: Who-Is/Who-Has budgets per source.
    pub const BROADCAST_GUARD: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_BROADCAST_GUARD"));
    /// Path of the built `misbehave-policy` component (a routing policy that
    /// fails on request, for failure tests).
    pub const MISBEHAVE_POLICY_PATH: &str = env!("TRELLIS_PLUGIN_MISBEHAVE_POLICY");

    /// The `alarm-threshold` application: limits with deadband and delay →
    /// an MQTT alarm message and a BACnet write.
    pub const ALARM_THRESHOLD: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_ALARM_THRESHOLD"));

    /// Path of the built `misbehave-app` component (an application that
    /// fails on request, for failure tests).
    pub const MISBEHAVE_APP_PATH: &str = env!("TRELLIS_PLUGIN_MISBEHAVE_APP");

    /// The `schedule` application: a weekly occupancy schedule with
    /// holidays that writes setpoints at priority 16.
    pub const SCHEDULE: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_SCHEDULE"));

    /// The `point-mapping` application: points to MQTT under a configurable
    /// topic scheme and payload shape, writes in.
    pub const POINT_MAPPING: &[u8] = include_bytes!(env!("TRELLIS_PLUGIN_POINT_MAPPING"));

    /// A built-in application by its name in the configuration.
    pub fn application(name: &str) -> Option<&'static [u8]> {
        match name {
            "alarm-threshold" => Some(ALARM_THRESHOLD),
            "schedule" => Some(SCHEDULE),
            "point-mapping" => Some(POINT_MAPPING),
            _ => None,
        }
    }

    /// The names of the built-in applications.
    pub const APPLICATIONS: &[&str] = &["alarm-threshold", "schedule", "point-mapping"];

    /// A built-in routing policy by its name in the configuration.
    pub fn routing_policy(name: &str) -> Option<&'static [u8]> {
        match name {
            "firewall" => Some(FIREWALL),
            "broadcast-guard" => Some(BROADCAST_GUARD),
            _ => None,
        }
    }
}
