//! A client and a server transaction state machine joined by a simulated
//! link: the input chooses requests, answers, losses, duplicates, reordering,
//! the clock and injected APDUs (see `bacnet_fuzz::segmentation`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_segmentation(data));
