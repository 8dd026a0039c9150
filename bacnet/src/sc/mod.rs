//! BACnet Secure Connect (Annex AB), sans-IO: the connection state machine
//! both ends of a WebSocket run (`connection`), the hub function that
//! relays between the nodes connected to it (`hub`), and a node's hub
//! connector with its failover (`connector`). The message codec is
//! [`crate::bvlc_sc`]; TLS and WebSockets are the host's.

pub mod connection;
pub mod connector;
pub mod hub;
