//! BACnet Ethernet frames (Clause 7): decode, re-encode, compare the
//! octets the length field counts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_ethernet(data));
