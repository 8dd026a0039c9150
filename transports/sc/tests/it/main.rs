//! BACnet/SC over real TLS 1.3 WebSockets on loopback: a hub and nodes
//! with a test PKI made here.

mod direct;
mod hub;
mod pki;
