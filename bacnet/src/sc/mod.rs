//! BACnet Secure Connect (Annex AB), sans-IO: the connection state machine
//! both ends of a WebSocket run (`connection`), the hub function that
//! relays between the nodes connected to it (`hub`), a node's hub
//! connector with its failover (`connector`), and its node switch for
//! direct connections to other nodes (`switch`). The message codec is
//! [`crate::bvlc_sc`]; TLS and WebSockets are the host's.

pub mod connection;
pub mod connector;
pub mod hub;
pub mod switch;
