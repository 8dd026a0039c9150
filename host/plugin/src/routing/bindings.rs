//! Bindings generated from `trellis:routing@0.1.0` (`wit/routing`), world
//! `routing-policy`. Generated code only: `convert` is the one module that
//! builds and takes apart these types.

wasmtime::component::bindgen!({
    path: "../../wit/routing",
    world: "routing-policy",
    // Async calls, polled once on the router's thread (see `routing`):
    // WASI's imports are its async ones, so a guest that waits suspends
    // instead of blocking the thread, and the host fails that call.
    exports: { default: async },
});
