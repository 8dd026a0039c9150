//! The IPv6 BBMD fed sequences of datagrams from peers, link stations and
//! foreign devices: no panic, bounded output per datagram, bounded FDT.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_bbmd6(data));
