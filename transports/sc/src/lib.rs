//! BACnet Secure Connect (Annex AB) for Trellis: WebSockets (RFC 6455)
//! over TLS 1.3 with mutual authentication, carrying the core's BVLC-SC
//! messages and driven by its sans-IO state machines
//! ([`bacnet::sc`]).
//!
//! - [`tls`]: the port's credentials and rustls configurations (TLS 1.3,
//!   both sides authenticated against the configured issuers only).
//! - [`hub`]: the hub function on a TCP listener: each node's WebSocket
//!   (subprotocol `hub.bsc.bacnet.org`) feeds the core's `Hub`, one task
//!   owns it, each connection writes from a bounded queue.
//! - [`identity`]: a node's VMAC (Random-48) and device UUID (configured
//!   or derived from the instance and certificate).
//! - [`pki`]: a test PKI (CA, hub and node certificates), for `trellis sc
//!   certs` and tests.
//! - [`node`]: a node's hub connector (primary, failover, back-off) over
//!   real WebSockets: NPDUs in and out.
//!
//! Must never: speak plaintext on a port, take a WebSocket without the
//! BACnet/SC subprotocol, or let one slow peer hold up the others.

pub mod hub;
pub mod identity;
pub mod node;
pub mod pki;
pub mod tls;

/// The WebSocket subprotocol of a node-to-hub connection.
pub const HUB_SUBPROTOCOL: &str = "hub.bsc.bacnet.org";
/// The WebSocket subprotocol of a direct connection.
pub const DIRECT_SUBPROTOCOL: &str = "dc.bsc.bacnet.org";
