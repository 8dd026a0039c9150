//! Bindings generated from the WIT packages the host speaks: the current
//! `trellis:bacnet@0.4.0` (`wit/bacnet`, module [`v4`]) and the frozen
//! `@0.3.0` (`wit/bacnet-0.3.0`, [`v3`]), `@0.2.0` (`wit/bacnet-0.2.0`,
//! [`v2`]) and `@0.1.0` (`wit/bacnet-0.1.0`, [`v1`]), each for world
//! `object-model-plugin`.
//!
//! The packages' `types` are the same records, so `v2` to `v4` reuse
//! `v1`'s generated types: one set of conversions (`convert`) serves all,
//! and an instance of any version is called with the same values. Their
//! `host` interfaces are the same functions under four names (0.3.0 adds
//! `event-transitions`, which 0.4.0 keeps); `host_imports` implements them
//! all.
//!
//! Generated code only. Nothing outside [`convert`](super::convert) may build
//! or take apart these types; the instance passes them from `convert` to the
//! export calls and back, and `host_imports` hands what it receives straight
//! to `convert`.

/// `trellis:bacnet@0.1.0`: components built before `read-encoded`.
pub mod v1 {
    wasmtime::component::bindgen!({
        path: "../../wit/bacnet-0.1.0",
        world: "object-model-plugin",
        // Async calls: WASI's imports are its async ones, so a guest that
        // asks to wait suspends its call instead of blocking the thread (see
        // `instance`). Our own imports stay synchronous: they never wait.
        exports: { default: async },
    });
}

/// `trellis:bacnet@0.2.0`: 0.1.0 plus `object-model.read-encoded`.
pub mod v2 {
    wasmtime::component::bindgen!({
        path: "../../wit/bacnet-0.2.0",
        world: "object-model-plugin",
        exports: { default: async },
        with: { "trellis:bacnet/types": super::v1::trellis::bacnet::types },
    });
}

/// `trellis:bacnet@0.3.0`: 0.2.0 plus `host.event-transitions` and
/// `object-model.acknowledge`.
pub mod v3 {
    wasmtime::component::bindgen!({
        path: "../../wit/bacnet-0.3.0",
        world: "object-model-plugin",
        exports: { default: async },
        with: { "trellis:bacnet/types": super::v1::trellis::bacnet::types },
    });
}

/// `trellis:bacnet@0.4.0`: 0.3.0 plus `object-model.create-object` and
/// `object-model.delete-object`.
pub mod v4 {
    wasmtime::component::bindgen!({
        path: "../../wit/bacnet",
        world: "object-model-plugin",
        exports: { default: async },
        with: { "trellis:bacnet/types": super::v1::trellis::bacnet::types },
    });
}

pub use v1::trellis::bacnet::host;
pub use v1::trellis::bacnet::types;
