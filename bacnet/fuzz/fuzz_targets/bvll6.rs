//! BACnet/IPv6 BVLL messages: decode, re-encode, compare (lossless).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_bvll6(data));
