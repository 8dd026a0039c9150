//! Read results as records (a plugin's `read-encoded` answer): parse,
//! decode every value, re-encode, parse again, compare.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_read_records(data));
