//! BACnet/IP BVLL messages: decode, re-encode to the same octets.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_bvll(data));
