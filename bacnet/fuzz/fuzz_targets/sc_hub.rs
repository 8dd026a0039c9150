//! The BACnet/SC hub function fed frames from four WebSockets: no panic,
//! bounded output per frame, no node listed twice.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_sc_hub(data));
