//! How the host names a BACnet device (the client the devices it asks, the
//! server its peers): its B/IP address or MS/TP MAC, and for a device behind
//! a router, the remote network number and MAC.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::str::FromStr;

/// A station on a remote network, reached through a router.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteStation {
    /// The remote network number (1..=65534).
    pub net: u16,
    /// The station's MAC on that network.
    pub mac: Vec<u8>,
}

/// Where a device is: the B/IP station to send to, plus the remote station
/// when that B/IP station is a router.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceAddress {
    /// B/IP address of the device (or of the router in front of it).
    pub link: SocketAddrV4,
    /// The device behind the router, if any.
    pub remote: Option<RemoteStation>,
}

impl DeviceAddress {
    /// A device directly on the B/IP network.
    pub fn direct(link: SocketAddrV4) -> Self {
        DeviceAddress { link, remote: None }
    }
}

impl DeviceAddress {
    /// A station on the local MS/TP port, by its MAC address.
    ///
    /// MS/TP peers share this type with B/IP ones so the server (its
    /// transaction state machine, COV table, dispatch) needs no second
    /// address type: the MAC rides in the port of the unspecified address
    /// `0.0.0.0`, which is never the source of a B/IP datagram. Use
    /// [`DeviceAddress::mstp_mac`] to get it back.
    pub fn mstp(mac: u8) -> Self {
        DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, u16::from(mac)))
    }

    /// Whom a request from this address is charged to when bounding what
    /// one requester may make a device send: on B/IP the IP address,
    /// whatever the port (a spoofed victim cannot be hit from many source
    /// ports at once) or the router in front; on MS/TP the station.
    pub fn origin(&self) -> DeviceAddress {
        if self.mstp_mac().is_some() {
            return DeviceAddress::direct(self.link);
        }
        DeviceAddress::direct(SocketAddrV4::new(*self.link.ip(), 0))
    }

    /// The MS/TP MAC of an address made by [`DeviceAddress::mstp`].
    pub fn mstp_mac(&self) -> Option<u8> {
        if self.link.ip().is_unspecified() { u8::try_from(self.link.port()).ok() } else { None }
    }

    /// A station on the local BACnet/IPv6 port, by its VMAC (Annex U).
    ///
    /// Like MS/TP stations, B/IPv6 ones share this type: the VMAC rides in
    /// the last three octets of an address in 0.0.0.0/8 (never the source of
    /// an IPv4 datagram) with the port [`BIP6_TAG`], which no MS/TP address
    /// has. [`DeviceAddress::bip6_vmac`] gets it back.
    pub fn bip6(vmac: [u8; 3]) -> Self {
        DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::new(0, vmac[0], vmac[1], vmac[2]), BIP6_TAG))
    }

    /// The VMAC of an address made by [`DeviceAddress::bip6`].
    pub fn bip6_vmac(&self) -> Option<[u8; 3]> {
        let o = self.link.ip().octets();
        (o[0] == 0 && self.link.port() == BIP6_TAG).then_some([o[1], o[2], o[3]])
    }
}

/// The port of a [`DeviceAddress::bip6`] address: marks the VMAC.
pub const BIP6_TAG: u16 = 0xB6B6;

impl From<SocketAddrV4> for DeviceAddress {
    fn from(link: SocketAddrV4) -> Self {
        DeviceAddress::direct(link)
    }
}

impl fmt::Display for DeviceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.mstp_mac(), self.bip6_vmac()) {
            (Some(mac), _) => write!(f, "mstp:{mac}")?,
            (_, Some(v)) => write!(f, "bip6:{:02x}{:02x}{:02x}", v[0], v[1], v[2])?,
            (None, None) => write!(f, "{}", self.link)?,
        }
        if let Some(r) = &self.remote {
            write!(f, "@{}:", r.net)?;
            for b in &r.mac {
                write!(f, "{b:02x}")?;
            }
        }
        Ok(())
    }
}

/// Why an address did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid device address `{0}`: expected IP[:PORT][@NET:MAC-HEX], mstp:MAC or bip6:VMAC-HEX, e.g. 127.0.0.1:47809, 10.0.0.5@2:0a, mstp:5 or bip6:05ef89"
)]
pub struct ParseAddressError(String);

impl FromStr for DeviceAddress {
    type Err = ParseAddressError;
    /// `IP`, `IP:PORT` (port 47808 by default), `mstp:MAC` (a station on
    /// the client's MS/TP port, MAC 0..=254) or `bip6:VMAC` (a station on
    /// the client's BACnet/IPv6 port, the VMAC in hex), optionally `@NET:MAC`
    /// in hex for a device behind a router.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseAddressError(s.to_string());
        let (link, remote) = match s.split_once('@') {
            Some((l, r)) => (l, Some(r)),
            None => (s, None),
        };
        let link = if let Some(vmac) = link.strip_prefix("bip6:") {
            match parse_hex(vmac).as_deref() {
                Some(&[a, b, c]) => DeviceAddress::bip6([a, b, c]).link,
                _ => return Err(err()),
            }
        } else if let Some(mac) = link.strip_prefix("mstp:") {
            match mac.parse::<u8>() {
                Ok(mac) if mac != 255 => DeviceAddress::mstp(mac).link,
                _ => return Err(err()),
            }
        } else {
            match link.parse::<SocketAddrV4>() {
                Ok(a) => a,
                Err(_) => SocketAddrV4::new(link.parse::<Ipv4Addr>().map_err(|_| err())?, trellis_bip_default_port()),
            }
        };
        let remote = match remote {
            None => None,
            Some(r) => {
                let (net, mac) = r.split_once(':').ok_or_else(err)?;
                let net: u16 = net.parse().map_err(|_| err())?;
                if net == 0 || net == 0xFFFF || mac.is_empty() || !mac.len().is_multiple_of(2) {
                    return Err(err());
                }
                let mac = parse_hex(mac).ok_or_else(err)?;
                Some(RemoteStation { net, mac })
            }
        };
        Ok(DeviceAddress { link, remote })
    }
}

/// Hex digits to octets; `None` for an odd count or a non-hex character.
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

fn trellis_bip_default_port() -> u16 {
    trellis_bip::DEFAULT_PORT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mstp_addresses_parse_and_print_back() {
        let a: DeviceAddress = "mstp:5".parse().unwrap();
        assert_eq!(a.mstp_mac(), Some(5));
        assert_eq!(a.to_string(), "mstp:5");
        let routed: DeviceAddress = "mstp:0@7:0b".parse().unwrap();
        assert_eq!((routed.mstp_mac(), routed.remote.as_ref().map(|r| r.net)), (Some(0), Some(7)));
        for bad in ["mstp:255", "mstp:-1", "mstp:", "mstp:x", "mstp:256"] {
            assert!(bad.parse::<DeviceAddress>().is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_parse_with_and_without_port_and_route() {
        let a: DeviceAddress = "127.0.0.1:47809".parse().unwrap();
        assert_eq!(a, DeviceAddress::direct("127.0.0.1:47809".parse().unwrap()));
        let b: DeviceAddress = "127.0.0.2".parse().unwrap();
        assert_eq!(b.link.port(), 47808);
        let c: DeviceAddress = "127.0.0.1:47809@5:0a0b".parse().unwrap();
        assert_eq!(c.remote, Some(RemoteStation { net: 5, mac: vec![0x0a, 0x0b] }));
        assert_eq!(c.to_string(), "127.0.0.1:47809@5:0a0b");
        assert!("127.0.0.1@0:0a".parse::<DeviceAddress>().is_err());
        assert!("nonsense".parse::<DeviceAddress>().is_err());
        assert!("127.0.0.1@5:aéb".parse::<DeviceAddress>().is_err(), "non-ASCII hex is an error, not a panic");
    }
}
