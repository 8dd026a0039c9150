//! Whole BACnet/IP datagrams: BVLL, then the NPDU it carries, then the APDU,
//! then the service body its PDU type and service choice select.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bacnet_fuzz::check_datagram(data));
