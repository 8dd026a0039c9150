//! BVLC-SC messages: no panic, exact round trips, well-formed NAKs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_bvlc_sc(data));
