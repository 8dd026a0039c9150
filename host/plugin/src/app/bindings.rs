//! Bindings generated from `trellis:app@0.1.0` (`wit/app`), world
//! `application`. Generated code only: `convert` is the one module that
//! builds and takes apart these types.

wasmtime::component::bindgen!({
    path: "../../wit/app",
    world: "application",
    // Async both ways: an application runs on a task of its own, never on a
    // device's request path, and its point reads and writes wait on a
    // device's answer (under the call's deadline).
    imports: { default: async },
    exports: { default: async },
});
