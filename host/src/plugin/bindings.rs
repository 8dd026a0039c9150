//! Bindings generated from `wit/bacnet` (world `object-model-plugin`): the
//! WIT types, the `host` import trait and the `object-model` export calls.
//!
//! Generated code only. Nothing outside [`convert`](super::convert) may build
//! or take apart these types; the worker passes them from `convert` to the
//! export calls and back, and `host_imports` hands what it receives straight
//! to `convert`.

wasmtime::component::bindgen!({
    path: "../wit/bacnet",
    world: "object-model-plugin",
});

pub use self::trellis::bacnet::host;
pub use self::trellis::bacnet::types;
