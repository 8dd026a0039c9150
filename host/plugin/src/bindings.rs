//! Bindings generated from `wit/bacnet` (world `object-model-plugin`): the
//! WIT types, the `host` import trait and the `object-model` export calls.
//!
//! Generated code only. Nothing outside [`convert`](super::convert) may build
//! or take apart these types; the worker passes them from `convert` to the
//! export calls and back, and `host_imports` hands what it receives straight
//! to `convert`.

wasmtime::component::bindgen!({
    path: "../../wit/bacnet",
    world: "object-model-plugin",
    // Async calls: WASI's imports are its async ones, so a guest that asks
    // to wait suspends its call instead of blocking the thread (see
    // `instance`). Our own imports stay synchronous: they never wait.
    exports: { default: async },
});

pub use self::trellis::bacnet::host;
pub use self::trellis::bacnet::types;
