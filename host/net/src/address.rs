//! How the host names a BACnet device (the client the devices it asks, the
//! server its peers): the station on one of our datalinks (B/IP address,
//! MS/TP MAC, B/IPv6 or BACnet/SC VMAC, Ethernet MAC), and for a device behind
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

/// A station on one of the host's own datalinks: the first hop to a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkAddress {
    /// A B/IP station: its UDP address.
    Ip(SocketAddrV4),
    /// A station on the local MS/TP port, by MAC (0..=254; 255 broadcasts).
    Mstp(u8),
    /// A station on the local BACnet/IPv6 port, by its 3-octet VMAC (Annex U).
    Bip6([u8; 3]),
    /// A node on the local BACnet/SC port, by its 6-octet VMAC (Annex AB).
    Sc([u8; 6]),
    /// A station on the local BACnet Ethernet port, by its 6-octet MAC
    /// address (Clause 7).
    Ethernet([u8; 6]),
    /// A subscriber inside this gateway (the MQTT bridge, application
    /// logic): what is sent to it never leaves the process.
    Local(u32),
}

impl LinkAddress {
    /// The address as the octets of an NPDU's SADR/DADR on its datalink:
    /// B/IP's four address octets then the port, big-endian (Annex J), the
    /// MS/TP MAC, the VMAC.
    pub fn mac_octets(&self) -> Vec<u8> {
        match self {
            LinkAddress::Ip(a) => {
                let mut mac = a.ip().octets().to_vec();
                mac.extend_from_slice(&a.port().to_be_bytes());
                mac
            }
            LinkAddress::Mstp(mac) => vec![*mac],
            LinkAddress::Bip6(v) => v.to_vec(),
            LinkAddress::Sc(v) => v.to_vec(),
            LinkAddress::Ethernet(m) => m.to_vec(),
            LinkAddress::Local(n) => n.to_be_bytes().to_vec(),
        }
    }
}

impl fmt::Display for LinkAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkAddress::Ip(a) => write!(f, "{a}"),
            LinkAddress::Mstp(mac) => write!(f, "mstp:{mac}"),
            LinkAddress::Bip6(v) => write!(f, "bip6:{}", hex(v)),
            LinkAddress::Sc(v) => write!(f, "sc:{}", hex(v)),
            LinkAddress::Ethernet(m) => write!(f, "eth:{}", hex(m)),
            LinkAddress::Local(n) => write!(f, "local:{n}"),
        }
    }
}

impl From<SocketAddrV4> for LinkAddress {
    fn from(a: SocketAddrV4) -> Self {
        LinkAddress::Ip(a)
    }
}

fn hex(octets: &[u8]) -> String {
    octets.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a device is: the station on one of our datalinks to send to, plus
/// the remote station when that station is a router.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceAddress {
    /// The device (or the router in front of it) on our datalink.
    pub link: LinkAddress,
    /// The device behind the router, if any.
    pub remote: Option<RemoteStation>,
}

impl DeviceAddress {
    /// A device directly on the B/IP network.
    pub fn direct(link: SocketAddrV4) -> Self {
        DeviceAddress { link: LinkAddress::Ip(link), remote: None }
    }

    /// A station on the local MS/TP port, by its MAC address.
    pub fn mstp(mac: u8) -> Self {
        DeviceAddress { link: LinkAddress::Mstp(mac), remote: None }
    }

    /// A station on the local BACnet/IPv6 port, by its VMAC (Annex U).
    pub fn bip6(vmac: [u8; 3]) -> Self {
        DeviceAddress { link: LinkAddress::Bip6(vmac), remote: None }
    }

    /// A node on the local BACnet/SC port, by its VMAC (Annex AB).
    pub fn sc(vmac: [u8; 6]) -> Self {
        DeviceAddress { link: LinkAddress::Sc(vmac), remote: None }
    }

    /// A station on the local BACnet Ethernet port, by its MAC (Clause 7).
    pub fn ethernet(mac: [u8; 6]) -> Self {
        DeviceAddress { link: LinkAddress::Ethernet(mac), remote: None }
    }

    /// Whom a request from this address is charged to when bounding what
    /// one requester may make a device send: on B/IP the IP address,
    /// whatever the port (a spoofed victim cannot be hit from many source
    /// ports at once) or the router in front; elsewhere the station.
    pub fn origin(&self) -> DeviceAddress {
        match self.link {
            LinkAddress::Ip(a) => DeviceAddress::direct(SocketAddrV4::new(*a.ip(), 0)),
            link => DeviceAddress { link, remote: None },
        }
    }

    /// The B/IP address of a B/IP station (or of the router in front).
    pub fn ip(&self) -> Option<SocketAddrV4> {
        if let LinkAddress::Ip(a) = self.link { Some(a) } else { None }
    }

    /// The MS/TP MAC of an address made by [`DeviceAddress::mstp`].
    pub fn mstp_mac(&self) -> Option<u8> {
        if let LinkAddress::Mstp(mac) = self.link { Some(mac) } else { None }
    }

    /// The VMAC of an address made by [`DeviceAddress::bip6`].
    pub fn bip6_vmac(&self) -> Option<[u8; 3]> {
        if let LinkAddress::Bip6(v) = self.link { Some(v) } else { None }
    }

    /// The VMAC of an address made by [`DeviceAddress::sc`].
    pub fn sc_vmac(&self) -> Option<[u8; 6]> {
        if let LinkAddress::Sc(v) = self.link { Some(v) } else { None }
    }

    /// The MAC of an address made by [`DeviceAddress::ethernet`].
    pub fn ethernet_mac(&self) -> Option<[u8; 6]> {
        if let LinkAddress::Ethernet(m) = self.link { Some(m) } else { None }
    }
}

impl From<SocketAddrV4> for DeviceAddress {
    fn from(link: SocketAddrV4) -> Self {
        DeviceAddress::direct(link)
    }
}

impl From<LinkAddress> for DeviceAddress {
    fn from(link: LinkAddress) -> Self {
        DeviceAddress { link, remote: None }
    }
}

impl fmt::Display for DeviceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.link)?;
        if let Some(r) = &self.remote {
            write!(f, "@{}:{}", r.net, hex(&r.mac))?;
        }
        Ok(())
    }
}

/// Why an address did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid device address `{0}`: expected IP[:PORT][@NET:MAC-HEX], mstp:MAC, bip6:VMAC-HEX, sc:VMAC-HEX or eth:MAC-HEX, e.g. 127.0.0.1:47809, 10.0.0.5@2:0a, mstp:5, bip6:05ef89, sc:02a1b2c3d4e5 or eth:02a1b2c3d4e5"
)]
pub struct ParseAddressError(String);

impl FromStr for DeviceAddress {
    type Err = ParseAddressError;
    /// `IP`, `IP:PORT` (port 47808 by default), `mstp:MAC` (a station on
    /// the client's MS/TP port, MAC 0..=254) or `bip6:VMAC` (a station on
    /// the client's BACnet/IPv6 port, the VMAC in hex) or `sc:VMAC` (a node
    /// on the client's BACnet/SC port, six octets in hex) or `eth:MAC` (a
    /// station on the client's Ethernet port, six octets in hex, with or
    /// without colons), optionally `@NET:MAC`
    /// in hex for a device behind a router.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseAddressError(s.to_string());
        let (link, remote) = match s.split_once('@') {
            Some((l, r)) => (l, Some(r)),
            None => (s, None),
        };
        let link = if let Some(vmac) = link.strip_prefix("bip6:") {
            match parse_hex(vmac).as_deref() {
                Some(&[a, b, c]) => LinkAddress::Bip6([a, b, c]),
                _ => return Err(err()),
            }
        } else if let Some(vmac) = link.strip_prefix("sc:") {
            // Neither the broadcast VMAC nor the all-zero one names a node.
            match parse_hex(vmac).as_deref().map(<[u8; 6]>::try_from) {
                Some(Ok(v)) if v != [0xFF; 6] && v != [0; 6] => LinkAddress::Sc(v),
                _ => return Err(err()),
            }
        } else if let Some(mac) = link.strip_prefix("eth:") {
            // The broadcast address names no station; a group address
            // (first octet odd) is not a BACnet station's.
            match parse_hex(&mac.replace(':', "")).as_deref().map(<[u8; 6]>::try_from) {
                Some(Ok(m)) if m[0] & 1 == 0 && m != [0; 6] => LinkAddress::Ethernet(m),
                _ => return Err(err()),
            }
        } else if let Some(mac) = link.strip_prefix("mstp:") {
            match mac.parse::<u8>() {
                Ok(mac) if mac != 255 => LinkAddress::Mstp(mac),
                _ => return Err(err()),
            }
        } else {
            LinkAddress::Ip(match link.parse::<SocketAddrV4>() {
                Ok(a) => a,
                Err(_) => SocketAddrV4::new(link.parse::<Ipv4Addr>().map_err(|_| err())?, trellis_bip_default_port()),
            })
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
        assert_eq!(b.ip().map(|a| a.port()), Some(47808));
        let c: DeviceAddress = "127.0.0.1:47809@5:0a0b".parse().unwrap();
        assert_eq!(c.remote, Some(RemoteStation { net: 5, mac: vec![0x0a, 0x0b] }));
        assert_eq!(c.to_string(), "127.0.0.1:47809@5:0a0b");
        assert!("127.0.0.1@0:0a".parse::<DeviceAddress>().is_err());
        assert!("nonsense".parse::<DeviceAddress>().is_err());
        assert!("127.0.0.1@5:aéb".parse::<DeviceAddress>().is_err(), "non-ASCII hex is an error, not a panic");
    }

    #[test]
    fn bacnet_ipv6_and_sc_addresses_parse_and_print_back() {
        for text in ["bip6:05ef89", "sc:02a1b2c3d4e5", "sc:02a1b2c3d4e5@9:0a"] {
            let a: DeviceAddress = text.parse().unwrap();
            assert_eq!(a.to_string(), text);
        }
        assert_eq!(
            "sc:02a1b2c3d4e5".parse::<DeviceAddress>().unwrap().sc_vmac(),
            Some([2, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5])
        );
        for bad in ["sc:02a1b2c3d4", "sc:02a1b2c3d4e5f6", "sc:", "bip6:05ef", "sc:ffffffffffff", "sc:000000000000"] {
            assert!(bad.parse::<DeviceAddress>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ethernet_addresses_parse_with_or_without_colons_and_print_back() {
        let a: DeviceAddress = "eth:c2:a9:f4:04:1a:d8".parse().unwrap();
        assert_eq!(a.ethernet_mac(), Some([0xc2, 0xa9, 0xf4, 0x04, 0x1a, 0xd8]));
        assert_eq!(a.to_string(), "eth:c2a9f4041ad8");
        assert_eq!(a.link.mac_octets(), vec![0xc2, 0xa9, 0xf4, 0x04, 0x1a, 0xd8]);
        let routed: DeviceAddress = "eth:c2a9f4041ad8@5:0a".parse().unwrap();
        assert_eq!(routed.to_string(), "eth:c2a9f4041ad8@5:0a");
        for bad in ["eth:ffffffffffff", "eth:010000000001", "eth:000000000000", "eth:c2a9f4041a", "eth:", "eth:zz"] {
            assert!(bad.parse::<DeviceAddress>().is_err(), "{bad}");
        }
    }
}
