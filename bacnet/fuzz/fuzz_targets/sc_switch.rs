//! A BACnet/SC node switch fed messages through its hub and frames on
//! three direct connections: no panic, bounded output per frame, never more
//! connections than its bound.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_sc_switch(data));
