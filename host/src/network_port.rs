//! The Network Port objects (Clause 12.56) `trellis run` gives each device,
//! from the configuration: one for a device on its own port (B/IP, MS/TP,
//! B/IPv6, BACnet/SC, Ethernet),
//! one for a device on a virtual network, and one per router network for
//! the device on a router port (the router is part of that device), each
//! of those with the Routing_Table the router publishes.
//!
//! Must never: invent a network number (a device not behind our router
//! has Network_Number 0, quality unknown).

use crate::config::{DeviceSection, MstpSection, RouterSection};
use crate::server::network_port::{BbmdView, NetworkPort, PortKind, RoutingView};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use trellis_bip::BipConfig;

/// The subnet mask a B/IP port's configuration implies: its prefix; on
/// loopback without one, /8; otherwise a host mask.
pub fn mask(bip: &BipConfig) -> Ipv4Addr {
    match bip.prefix {
        Some(0) => Ipv4Addr::UNSPECIFIED,
        Some(p) => Ipv4Addr::from(u32::MAX << (32 - u32::from(p.min(32)))),
        None if bip.bind.ip().is_loopback() => Ipv4Addr::new(255, 0, 0, 0),
        None => Ipv4Addr::BROADCAST,
    }
}

/// A B/IP port at `address`.
pub fn ip(
    instance: u32,
    address: SocketAddrV4,
    bip: &BipConfig,
    network: Option<u16>,
    routes: Option<RoutingView>,
) -> NetworkPort {
    NetworkPort {
        instance,
        name: format!("BACnet/IP {address}"),
        network,
        kind: PortKind::Ipv4 { address, mask: mask(bip) },
        routes,
        bbmd: None,
    }
}

/// A BACnet/IPv6 port at `address` with `vmac`, broadcasting to `group`;
/// `bbmd` when it is a BBMD.
pub fn ipv6(address: std::net::SocketAddrV6, vmac: [u8; 3], group: std::net::Ipv6Addr, bbmd: bool) -> NetworkPort {
    NetworkPort {
        instance: 1,
        name: format!("BACnet/IPv6 {address}"),
        network: None,
        kind: PortKind::Ipv6 { address, vmac, group, bbmd },
        routes: None,
        bbmd: None,
    }
}

/// The multicast group a `bip6 = { … }` section broadcasts to.
pub fn group_of(b: &crate::config::Bip6Section) -> std::net::Ipv6Addr {
    if b.site_group { trellis_bip6::SITE_LOCAL_GROUP } else { trellis_bip6::LINK_LOCAL_GROUP }
}

/// A BACnet Ethernet port on `interface` with `mac`.
pub fn ethernet(instance: u32, interface: &str, mac: [u8; 6]) -> NetworkPort {
    NetworkPort {
        instance,
        name: format!("BACnet Ethernet {interface}"),
        network: None,
        kind: PortKind::Ethernet { mac },
        routes: None,
        bbmd: None,
    }
}

/// A BACnet/SC port.
pub fn sc(view: crate::server::network_port::ScView) -> NetworkPort {
    NetworkPort {
        instance: 1,
        name: format!("BACnet/SC {}", view.primary_hub),
        network: None,
        kind: PortKind::Sc(Box::new(view)),
        routes: None,
        bbmd: None,
    }
}

/// An MS/TP port.
pub fn mstp(m: &MstpSection) -> NetworkPort {
    NetworkPort {
        instance: 1,
        name: format!("MS/TP {}", m.device),
        network: None,
        kind: PortKind::Mstp { mac: m.mac, max_master: m.max_master, max_info_frames: m.max_info_frames, baud: m.baud },
        routes: None,
        bbmd: None,
    }
}

/// A device's port on a virtual network behind the router.
pub fn virtual_station(network: u16, instance: u32) -> NetworkPort {
    NetworkPort {
        instance: 1,
        name: format!("virtual network {network}"),
        network: Some(network),
        kind: PortKind::Virtual { mac: crate::server::virtual_mac(instance).to_vec() },
        routes: None,
        bbmd: None,
    }
}

/// The ports of the device on router port `own`: every router network,
/// its own first.
pub fn router(r: &RouterSection, own: usize, routes: &Routes) -> Vec<NetworkPort> {
    let mut order: Vec<usize> = vec![own];
    order.extend((0..r.ports.len()).filter(|i| *i != own));
    let mut ports: Vec<NetworkPort> = order
        .into_iter()
        .enumerate()
        .filter_map(|(n, i)| {
            let p = &r.ports[i];
            let view = Some(routes.for_network(p.network));
            if let Some(b) = &p.bip6 {
                let instance = b.vmac_instance.unwrap_or(0x3F_0000 + u32::from(p.network));
                return Some(NetworkPort {
                    instance: n as u32 + 1,
                    network: Some(p.network),
                    routes: view,
                    ..ipv6(
                        std::net::SocketAddrV6::new(b.bind, b.port, 0, 0),
                        bacnet::bvll6::vmac_of_instance(instance),
                        group_of(b),
                        b.bbmd.is_some(),
                    )
                });
            }
            if let Some(m) = &p.mstp {
                return Some(NetworkPort { instance: n as u32 + 1, network: Some(p.network), routes: view, ..mstp(m) });
            }
            if p.ethernet.is_some() {
                let (interface, mac) = routes.ethernet.get(&p.network)?;
                return Some(NetworkPort {
                    network: Some(p.network),
                    routes: view,
                    ..ethernet(n as u32 + 1, interface, *mac)
                });
            }
            if p.sc.is_some() {
                let started = routes.sc_views.get(&p.network)?.clone();
                return Some(NetworkPort {
                    instance: n as u32 + 1,
                    network: Some(p.network),
                    routes: view,
                    ..sc(started)
                });
            }
            let bip = BipConfig::from_cidr(&p.bind, p.port).ok()?;
            let mut port = ip(n as u32 + 1, bip.bind, &bip, Some(p.network), view);
            port.bbmd = p.bbmd.is_some().then(|| routes.bbmd_for(p.network));
            Some(port)
        })
        .collect();
    for network in routes.virtual_networks() {
        ports.push(NetworkPort {
            instance: ports.len() as u32 + 1,
            name: format!("virtual network {network}"),
            network: Some(network),
            kind: PortKind::Virtual { mac: Vec::new() },
            routes: Some(routes.for_network(network)),
            bbmd: None,
        });
    }
    ports
}

/// Each router network's published routing table.
pub struct Routes {
    views: BTreeMap<u16, RoutingView>,
    virtual_networks: Vec<u16>,
    /// Each B/IP router port's BBMD, set when the port is bound.
    bbmds: BTreeMap<u16, BbmdView>,
    /// Each BACnet/SC router port, once its node is started.
    sc_views: BTreeMap<u16, crate::server::network_port::ScView>,
    /// Each BACnet Ethernet router port's interface and MAC, once opened.
    ethernet: BTreeMap<u16, (String, [u8; 6])>,
}

impl Routes {
    /// One view per router port and per virtual network of `devices`.
    pub fn new(router: Option<&RouterSection>, devices: &[DeviceSection]) -> Self {
        let mut virtual_networks: Vec<u16> = devices.iter().filter_map(|d| d.virtual_network).collect();
        virtual_networks.sort_unstable();
        virtual_networks.dedup();
        let ports = router.iter().flat_map(|r| r.ports.iter().map(|p| p.network));
        let views = ports.chain(virtual_networks.iter().copied()).map(|n| (n, RoutingView::default())).collect();
        let bbmds = router
            .iter()
            .flat_map(|r| r.ports.iter().filter(|p| p.bbmd.is_some()).map(|p| (p.network, BbmdView::default())))
            .collect();
        Routes { views, virtual_networks, bbmds, sc_views: BTreeMap::new(), ethernet: BTreeMap::new() }
    }

    /// Say what the BACnet/SC router port of `network` shows (its node is
    /// started before the devices are built).
    pub fn set_sc_view(&mut self, network: u16, view: crate::server::network_port::ScView) {
        self.sc_views.insert(network, view);
    }

    /// Say which interface and MAC the Ethernet router port of `network`
    /// has (it is opened before the devices are built).
    pub fn set_ethernet_mac(&mut self, network: u16, interface: &str, mac: [u8; 6]) {
        self.ethernet.insert(network, (interface.to_string(), mac));
    }

    /// The BBMD view of router port `network` (set once its port is a BBMD).
    pub fn bbmd_for(&self, network: u16) -> BbmdView {
        self.bbmds.get(&network).cloned().unwrap_or_default()
    }

    /// The view of `network`'s port (a fresh one for a network not routed).
    pub fn for_network(&self, network: u16) -> RoutingView {
        self.views.get(&network).cloned().unwrap_or_default()
    }

    /// The virtual networks, by number.
    pub fn virtual_networks(&self) -> impl Iterator<Item = u16> + '_ {
        self.virtual_networks.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_come_from_the_prefix() {
        let bip = |s: &str| BipConfig::from_cidr(s, 47808).unwrap();
        assert_eq!(mask(&bip("192.168.1.10/24")), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(mask(&bip("10.0.0.1/8")), Ipv4Addr::new(255, 0, 0, 0));
        assert_eq!(mask(&bip("127.0.0.1")), Ipv4Addr::new(255, 0, 0, 0));
        assert_eq!(mask(&bip("192.168.1.10")), Ipv4Addr::BROADCAST);
        assert_eq!(mask(&bip("192.168.1.10/32")), Ipv4Addr::BROADCAST);
    }
}
