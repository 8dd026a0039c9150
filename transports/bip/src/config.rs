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
    /// Local broadcast address; `None` derives it from `prefix`, or as a /8
    /// on loopback, or 255.255.255.255 (which Linux does not deliver
    /// subnet-directed broadcasts to: give a prefix on a real network).
    pub broadcast: Option<Ipv4Addr>,
    /// The interface's network prefix length, as in `192.168.1.10/24`.
    pub prefix: Option<u8>,
    /// The UDP port broadcasts go to; `None` is the bound port. A client on
    /// an ephemeral port sets the network's port (47808) here; it then
    /// receives no broadcasts itself and relies on unicast answers.
    pub broadcast_port: Option<u16>,
}

impl BipConfig {
    /// Bind `ip:port` with the default broadcast address.
    pub fn new(ip: Ipv4Addr, port: u16) -> Self {
        BipConfig { bind: SocketAddrV4::new(ip, port), broadcast: None, prefix: None, broadcast_port: None }
    }

    /// Parse `IP` or `IP/PREFIX` (the bacpypes3 convention) with `port`.
    pub fn from_cidr(s: &str, port: u16) -> Result<Self, String> {
        let (ip, prefix) = match s.split_once('/') {
            Some((ip, p)) => {
                let p: u8 =
                    p.parse().ok().filter(|p| *p <= 32).ok_or_else(|| format!("invalid prefix length in `{s}`"))?;
                (ip, Some(p))
            }
            None => (s, None),
        };
        let ip: Ipv4Addr = ip.parse().map_err(|_| format!("invalid IPv4 address `{ip}`"))?;
        Ok(BipConfig { bind: SocketAddrV4::new(ip, port), broadcast: None, prefix, broadcast_port: None })
    }

    /// The broadcast address in force.
    pub fn broadcast_ip(&self) -> Ipv4Addr {
        if let Some(b) = self.broadcast {
            return b;
        }
        let ip = *self.bind.ip();
        match self.prefix {
            Some(p) if p < 32 => Ipv4Addr::from(u32::from(ip) | (u32::MAX >> p)),
            _ if ip.is_loopback() => Ipv4Addr::new(127, 255, 255, 255),
            _ => Ipv4Addr::BROADCAST,
        }
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
    /// A failure at `addr`: the OS error, or what a peer there answered.
    pub fn new(addr: SocketAddrV4, source: std::io::Error) -> Self {
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
