//! Bindings generated from the WIT packages the host speaks: the current
//! `trellis:bacnet@0.2.0` (`wit/bacnet`, module [`v2`]) and the frozen
//! `trellis:bacnet@0.1.0` (`wit/bacnet-0.1.0`, module [`v1`]), each for world
//! `object-model-plugin`.
//!
//! The two packages' `types` are the same records, so `v2` reuses `v1`'s
//! generated types: one set of conversions (`convert`) serves both, and an
//! instance of either version is called with the same values. Their `host`
//! interfaces are the same functions under two names; `host_imports`
//! implements both.
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
        path: "../../wit/bacnet",
        world: "object-model-plugin",
        exports: { default: async },
        with: { "trellis:bacnet/types": super::v1::trellis::bacnet::types },
    });
}

pub use v1::trellis::bacnet::host;
pub use v1::trellis::bacnet::types;
