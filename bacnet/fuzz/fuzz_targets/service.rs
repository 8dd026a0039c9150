//! Service bodies: the first octet selects a codec from `bacnet_fuzz::CODECS`
//! (modulo its length), the rest is the body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_selected_service(data));
