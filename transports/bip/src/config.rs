//! Where a BACnet/IP port binds and broadcasts, and the error for a bind
//! that fails.

use std::net::{Ipv4Addr, SocketAddrV4};

/// The standard BACnet/IP UDP port, 0xBAC0.
pub const DEFAULT_PORT: u16 = 47808;

/// Addresses of one BACnet/IP port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BipConfig {
    /// Unicast bind address and UDP port (port 0 picks a free one).
    pub bind: SocketAddrV4,
    /// Local broadcast address; `None` derives it from `bind` as a /8 on
    /// loopback and 255.255.255.255 otherwise.
    pub broadcast: Option<Ipv4Addr>,
}

impl BipConfig {
    /// Bind `ip:port` with the default broadcast address.
    pub fn new(ip: Ipv4Addr, port: u16) -> Self {
        BipConfig { bind: SocketAddrV4::new(ip, port), broadcast: None }
    }

    /// The broadcast address in force.
    pub fn broadcast_ip(&self) -> Ipv4Addr {
        self.broadcast.unwrap_or_else(|| {
            let ip = *self.bind.ip();
            if ip.is_loopback() { Ipv4Addr::new(127, 255, 255, 255) } else { Ipv4Addr::BROADCAST }
        })
    }
}

impl Default for BipConfig {
    fn default() -> Self {
        BipConfig::new(Ipv4Addr::LOCALHOST, DEFAULT_PORT)
    }
}

/// A socket could not be opened; says which address and why, in words an
/// operator can act on.
#[derive(Debug, thiserror::Error)]
#[error("cannot bind UDP {addr}: {}", describe(.source))]
pub struct BindError {
    /// The address that failed.
    pub addr: SocketAddrV4,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

impl BindError {
    pub(crate) fn new(addr: SocketAddrV4, source: std::io::Error) -> Self {
        BindError { addr, source }
    }
}

fn describe(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            "the port is already in use (is another BACnet stack running? choose another with --port)".into()
        }
        std::io::ErrorKind::AddrNotAvailable => "no local interface has this address".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
