//! Property values (`AnyValue`): decode, re-encode, decode again, compare.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_value(data));
