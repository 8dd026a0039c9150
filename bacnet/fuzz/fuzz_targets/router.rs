//! The router fed sequences of NPDUs on its three ports: no panic, every
//! NPDU it sends decodes and fits its port, bounded output per input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_router(data));
