//! Network Port objects (Clause 12.56): how a device is attached to the
//! network, one object per port, answered by the host (the object model
//! knows nothing of ports). A device claiming Protocol_Revision 22 must
//! have them.
//!
//! What each port says: its Network_Type (IPv4, IPv6, MS/TP, BACnet/SC, Ethernet, virtual), the
//! network number and how it is known, its MAC address, the datalink's
//! own properties (B/IP address, mask and UDP port; B/IPv6 mode, address,
//! prefix length, UDP port and multicast group; MS/TP Max_Master and
//! Max_Info_Frames) and, on a router's ports, the Routing_Table: the
//! networks reachable through other routers on that port, as the router
//! last published them.
//!
//! Must never: let a network write change a port (every property is
//! read-only here: a write is refused with write-access-denied), or
//! block on the router (its table is a snapshot behind a lock held for
//! a copy).

use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::BacnetError;
use bacnet::{AnyValue, BitString, CharacterString, Element, ObjectIdentifier, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Mutex, PoisonError};

mod sc;
pub use sc::ScView;

/// BACnetNetworkType (Clause 21).
const NETWORK_TYPE_ETHERNET: u32 = 0;
const NETWORK_TYPE_MSTP: u32 = 2;
const NETWORK_TYPE_IPV4: u32 = 5;
const NETWORK_TYPE_VIRTUAL: u32 = 7;
const NETWORK_TYPE_IPV6: u32 = 9;
/// BACnetProtocolLevel: bacnet-application, for every BACnet port (a
/// router's included).
const PROTOCOL_LEVEL_APPLICATION: u32 = 2;
/// BACnetNetworkNumberQuality.
const QUALITY_UNKNOWN: u32 = 0;
const QUALITY_CONFIGURED: u32 = 3;
/// BACnetIPMode: normal, or bbmd.
const IP_MODE_NORMAL: u32 = 0;
const IP_MODE_BBMD: u32 = 2;

/// What kind of datalink a port is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortKind {
    /// BACnet/IP (Annex J).
    Ipv4 {
        /// The address and UDP port bound.
        address: SocketAddrV4,
        /// The subnet mask (from the configured prefix; 255.255.255.255 without one).
        mask: Ipv4Addr,
    },
    /// MS/TP (Clause 9).
    Mstp {
        /// This station's MAC.
        mac: u8,
        /// Max_Master.
        max_master: u8,
        /// Max_Info_Frames.
        max_info_frames: u8,
        /// Baud rate.
        baud: u32,
    },
    /// BACnet/IPv6 (Annex U).
    Ipv6 {
        /// The address and UDP port bound.
        address: std::net::SocketAddrV6,
        /// The port's VMAC (its MAC_Address).
        vmac: [u8; 3],
        /// The multicast group its broadcasts go to (FF02::BAC0 or FF05::BAC0).
        group: std::net::Ipv6Addr,
        /// The port is a BACnet/IPv6 BBMD (BACnet_IPv6_Mode bbmd).
        bbmd: bool,
    },
    /// BACnet/SC (Annex AB): a node on its hubs.
    Sc(Box<ScView>),
    /// BACnet Ethernet (Clause 7).
    Ethernet {
        /// The interface's MAC address (the port's MAC_Address).
        mac: [u8; 6],
    },
    /// A virtual network behind the gateway's router.
    Virtual {
        /// The station's MAC on it (empty for the router's own side).
        mac: Vec<u8>,
    },
}

/// One row of a Routing_Table (BACnetRouterEntry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRow {
    /// The remote network.
    pub network: u16,
    /// The next router's MAC on this port.
    pub mac: Vec<u8>,
    /// Router-Busy-To-Network in effect.
    pub busy: bool,
}

/// A port's routing table as the router last published it.
#[derive(Debug, Clone, Default)]
pub struct RoutingView(pub Arc<Mutex<Vec<RouteRow>>>);

impl RoutingView {
    /// Replace the published rows.
    pub fn publish(&self, rows: Vec<RouteRow>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = rows;
    }

    fn rows(&self) -> Vec<RouteRow> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl PartialEq for RoutingView {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RoutingView {}

/// A port's BBMD, once the port is bound (its Network Port object then
/// shows the BBMD's tables).
#[derive(Debug, Clone, Default)]
pub struct BbmdView(pub Arc<std::sync::OnceLock<Arc<trellis_bip::PortBbmd>>>);

impl PartialEq for BbmdView {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for BbmdView {}

/// One Network Port object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPort {
    /// Its instance (1, 2, … in the device).
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// The network number; `None` when not known (a device not behind our
    /// router: Network_Number 0, quality unknown).
    pub network: Option<u16>,
    /// The datalink.
    pub kind: PortKind,
    /// The router's table for this port, on a router's ports.
    pub routes: Option<RoutingView>,
    /// The port's BBMD, when it is one.
    pub bbmd: Option<BbmdView>,
}

impl NetworkPort {
    /// Its object identifier.
    pub fn id(&self) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::NETWORK_PORT, instance: self.instance }
    }

    /// Property_List order: the required properties, then the datalink's.
    pub fn properties(&self) -> Vec<P> {
        let mut list = vec![
            P::OBJECT_IDENTIFIER,
            P::OBJECT_NAME,
            P::OBJECT_TYPE,
            P::STATUS_FLAGS,
            P::RELIABILITY,
            P::OUT_OF_SERVICE,
            P::NETWORK_TYPE,
            P::PROTOCOL_LEVEL,
            P::NETWORK_NUMBER,
            P::NETWORK_NUMBER_QUALITY,
            P::CHANGES_PENDING,
            P::APDU_LENGTH,
            P::LINK_SPEED,
            P::MAC_ADDRESS,
            P::PROPERTY_LIST,
        ];
        match self.kind {
            PortKind::Ipv4 { .. } => {
                list.extend([P::BACNET_IP_MODE, P::IP_ADDRESS, P::BACNET_IP_UDP_PORT, P::IP_SUBNET_MASK])
            }
            PortKind::Mstp { .. } => list.extend([P::MAX_MASTER, P::MAX_INFO_FRAMES]),
            PortKind::Sc(_) => list.extend(sc::PROPERTIES),
            PortKind::Ipv6 { .. } => list.extend([
                P::BACNET_IPV6_MODE,
                P::IPV6_ADDRESS,
                P::IPV6_PREFIX_LENGTH,
                P::BACNET_IPV6_UDP_PORT,
                P::BACNET_IPV6_MULTICAST_ADDRESS,
            ]),
            PortKind::Virtual { .. } | PortKind::Ethernet { .. } => {}
        }
        if self.routes.is_some() {
            list.push(P::ROUTING_TABLE);
        }
        if self.bbmd.is_some() {
            list.extend([
                P::BBMD_ACCEPT_FD_REGISTRATIONS,
                P::BBMD_BROADCAST_DISTRIBUTION_TABLE,
                P::BBMD_FOREIGN_DEVICE_TABLE,
            ]);
        }
        list
    }

    /// Read a property (`index` for the one array, Property_List).
    pub fn read(&self, p: P, index: Option<u32>) -> Result<AnyValue, BacnetError> {
        let unknown = BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::UNKNOWN_PROPERTY };
        if !self.properties().contains(&p) {
            return Err(unknown);
        }
        if p == P::PROPERTY_LIST {
            return crate::host_object::property_list(&self.properties(), index);
        }
        if index.is_some() {
            return Err(BacnetError { class: ErrorClass::PROPERTY, code: ErrorCode::PROPERTY_IS_NOT_AN_ARRAY });
        }
        Ok(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(self.id()).into(),
            P::OBJECT_NAME => Value::CharacterString(CharacterString::utf8(&self.name)).into(),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::NETWORK_PORT.0).into(),
            P::STATUS_FLAGS => Value::BitString(BitString::with_len(4)).into(),
            P::RELIABILITY => Value::Enumerated(0).into(), // no-fault-detected
            P::OUT_OF_SERVICE | P::CHANGES_PENDING => Value::Boolean(false).into(),
            P::NETWORK_TYPE => Value::Enumerated(match self.kind {
                PortKind::Ipv4 { .. } => NETWORK_TYPE_IPV4,
                PortKind::Mstp { .. } => NETWORK_TYPE_MSTP,
                PortKind::Virtual { .. } => NETWORK_TYPE_VIRTUAL,
                PortKind::Ipv6 { .. } => NETWORK_TYPE_IPV6,
                PortKind::Sc(_) => sc::NETWORK_TYPE_SECURE_CONNECT,
                PortKind::Ethernet { .. } => NETWORK_TYPE_ETHERNET,
            })
            .into(),
            P::PROTOCOL_LEVEL => Value::Enumerated(PROTOCOL_LEVEL_APPLICATION).into(),
            P::NETWORK_NUMBER => Value::Unsigned(self.network.unwrap_or(0).into()).into(),
            P::NETWORK_NUMBER_QUALITY => {
                Value::Enumerated(if self.network.is_some() { QUALITY_CONFIGURED } else { QUALITY_UNKNOWN }).into()
            }
            P::APDU_LENGTH => Value::Unsigned(match self.kind {
                PortKind::Mstp { .. } => 480,
                _ => 1476,
            })
            .into(),
            P::LINK_SPEED => Value::Real(match self.kind {
                PortKind::Mstp { baud, .. } => baud as f32,
                _ => 0.0,
            })
            .into(),
            P::MAC_ADDRESS => Value::OctetString(match &self.kind {
                PortKind::Ipv4 { address, .. } => {
                    let mut mac = address.ip().octets().to_vec();
                    mac.extend_from_slice(&address.port().to_be_bytes());
                    mac
                }
                PortKind::Mstp { mac, .. } => vec![*mac],
                PortKind::Virtual { mac } => mac.clone(),
                PortKind::Ipv6 { vmac, .. } => vmac.to_vec(),
                PortKind::Sc(view) => view.vmac(),
                PortKind::Ethernet { mac } => mac.to_vec(),
            })
            .into(),
            P::BACNET_IP_MODE => {
                Value::Enumerated(if self.bbmd.is_some() { IP_MODE_BBMD } else { IP_MODE_NORMAL }).into()
            }
            P::IP_ADDRESS => match &self.kind {
                PortKind::Ipv4 { address, .. } => Value::OctetString(address.ip().octets().to_vec()).into(),
                _ => return Err(unknown),
            },
            P::BACNET_IP_UDP_PORT => match &self.kind {
                PortKind::Ipv4 { address, .. } => Value::Unsigned(address.port().into()).into(),
                _ => return Err(unknown),
            },
            P::IP_SUBNET_MASK => match &self.kind {
                PortKind::Ipv4 { mask, .. } => Value::OctetString(mask.octets().to_vec()).into(),
                _ => return Err(unknown),
            },
            P::BACNET_IPV6_MODE => match &self.kind {
                PortKind::Ipv6 { bbmd, .. } => {
                    Value::Enumerated(if *bbmd { IP_MODE_BBMD } else { IP_MODE_NORMAL }).into()
                }
                _ => return Err(unknown),
            },
            P::IPV6_ADDRESS => match &self.kind {
                PortKind::Ipv6 { address, .. } => Value::OctetString(address.ip().octets().to_vec()).into(),
                _ => return Err(unknown),
            },
            P::IPV6_PREFIX_LENGTH => match &self.kind {
                // The bound address's prefix on its interface; a port bound
                // to `::` (or an address the host no longer has) says 0.
                PortKind::Ipv6 { address, .. } => {
                    Value::Unsigned(trellis_bip6::prefix_length_of(address.ip()).unwrap_or(0).into()).into()
                }
                _ => return Err(unknown),
            },
            P::BACNET_IPV6_UDP_PORT => match &self.kind {
                PortKind::Ipv6 { address, .. } => Value::Unsigned(address.port().into()).into(),
                _ => return Err(unknown),
            },
            P::BACNET_IPV6_MULTICAST_ADDRESS => match &self.kind {
                PortKind::Ipv6 { group, .. } => Value::OctetString(group.octets().to_vec()).into(),
                _ => return Err(unknown),
            },
            P::MAX_MASTER => match &self.kind {
                PortKind::Mstp { max_master, .. } => Value::Unsigned((*max_master).into()).into(),
                _ => return Err(unknown),
            },
            P::MAX_INFO_FRAMES => match &self.kind {
                PortKind::Mstp { max_info_frames, .. } => Value::Unsigned((*max_info_frames).into()).into(),
                _ => return Err(unknown),
            },
            P::ROUTING_TABLE => routing_table(&self.routes.as_ref().map(RoutingView::rows).unwrap_or_default()),
            P::BBMD_ACCEPT_FD_REGISTRATIONS | P::BBMD_BROADCAST_DISTRIBUTION_TABLE | P::BBMD_FOREIGN_DEVICE_TABLE => {
                let bbmd = self.bbmd.as_ref().and_then(|b| b.0.get());
                match (p, bbmd) {
                    (P::BBMD_ACCEPT_FD_REGISTRATIONS, b) => {
                        Value::Boolean(b.is_some_and(|b| b.accepts_foreign_devices())).into()
                    }
                    (P::BBMD_BROADCAST_DISTRIBUTION_TABLE, b) => bdt(&b.map(|b| b.bdt()).unwrap_or_default()),
                    (_, b) => fdt(&b.map(|b| b.fdt()).unwrap_or_default()),
                }
            }
            _ => match &self.kind {
                PortKind::Sc(view) => view.read(p).ok_or(unknown)?,
                _ => return Err(unknown),
            },
        })
    }
}

/// BACnetLIST of BACnetRouterEntry:
///
/// ```text
/// BACnetRouterEntry ::= SEQUENCE {
///     network-number [0] Unsigned16,
///     mac-address [1] OCTET STRING,
///     status [2] ENUMERATED { available (0), busy (1), disconnected (2) },
///     performance-index [3] Unsigned8 OPTIONAL
/// }
/// ```
///
/// A list of constructed entries, each an opening/closing-free SEQUENCE of
/// context tags, so the elements are the context primitives in order.
fn routing_table(rows: &[RouteRow]) -> AnyValue {
    let mut out = Vec::new();
    for r in rows {
        out.push(unsigned(0, r.network.into()));
        out.push(Element::Context { tag: 1, data: r.mac.clone() });
        out.push(unsigned(2, u64::from(r.busy)));
    }
    AnyValue(out)
}

/// BACnetLIST of BACnetBDTEntry:
///
/// ```text
/// BACnetBDTEntry ::= SEQUENCE {
///     bbmd-address [0] BACnetHostNPort,   -- { host [0] BACnetHostAddress (ip-address [1] OCTET STRING), port [1] Unsigned16 }
///     broadcast-mask [1] OCTET STRING OPTIONAL
/// }
/// ```
fn bdt(entries: &[bacnet::bvll::BdtEntry]) -> AnyValue {
    let mut out = Vec::new();
    for e in entries {
        let ip = Element::Context { tag: 1, data: e.address.ip().octets().to_vec() };
        let port = unsigned(1, e.address.port().into());
        let host = Element::Constructed { tag: 0, elements: vec![ip] };
        out.push(Element::Constructed { tag: 0, elements: vec![host, port] });
        out.push(Element::Context { tag: 1, data: e.mask.octets().to_vec() });
    }
    AnyValue(out)
}

/// BACnetLIST of BACnetFDTEntry:
///
/// ```text
/// BACnetFDTEntry ::= SEQUENCE {
///     bacnetip-address [0] OCTET STRING,   -- 6 octets: IP and port
///     time-to-live [1] Unsigned16,
///     remaining-time-to-live [2] Unsigned16
/// }
/// ```
fn fdt(entries: &[bacnet::bvll::FdtEntry]) -> AnyValue {
    let mut out = Vec::new();
    for e in entries {
        let mut address = e.address.ip().octets().to_vec();
        address.extend_from_slice(&e.address.port().to_be_bytes());
        out.push(Element::Context { tag: 0, data: address });
        out.push(unsigned(1, e.ttl.into()));
        out.push(unsigned(2, e.remaining.into()));
    }
    AnyValue(out)
}

/// A context-tagged Unsigned, minimal octets.
fn unsigned(tag: u8, v: u64) -> Element {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take(7).take_while(|b| **b == 0).count();
    Element::Context { tag, data: bytes[skip..].to_vec() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip_port(routes: Option<RoutingView>) -> NetworkPort {
        NetworkPort {
            instance: 1,
            name: "BACnet/IP".into(),
            network: Some(1),
            kind: PortKind::Ipv4 {
                address: SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 10), 47808),
                mask: Ipv4Addr::new(255, 255, 255, 0),
            },
            routes,
            bbmd: None,
        }
    }

    #[test]
    fn a_bacnet_ip_port_says_where_it_is() {
        let p = ip_port(None);
        assert_eq!(p.read(P::NETWORK_TYPE, None), Ok(Value::Enumerated(5).into()));
        assert_eq!(p.read(P::NETWORK_NUMBER, None), Ok(Value::Unsigned(1).into()));
        assert_eq!(p.read(P::NETWORK_NUMBER_QUALITY, None), Ok(Value::Enumerated(3).into()));
        assert_eq!(p.read(P::MAC_ADDRESS, None), Ok(Value::OctetString(vec![192, 168, 1, 10, 0xBA, 0xC0]).into()));
        assert_eq!(p.read(P::BACNET_IP_UDP_PORT, None), Ok(Value::Unsigned(47808).into()));
        assert_eq!(p.read(P::IP_SUBNET_MASK, None), Ok(Value::OctetString(vec![255, 255, 255, 0]).into()));
        assert_eq!(p.read(P::MAX_MASTER, None).unwrap_err().code, ErrorCode::UNKNOWN_PROPERTY);
        assert_eq!(p.read(P::NETWORK_TYPE, Some(1)).unwrap_err().code, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY);
        let list = p.read(P::PROPERTY_LIST, None).unwrap();
        assert!(list.0.contains(&Element::Application(Value::Enumerated(P::NETWORK_NUMBER.0))));
        assert!(!list.0.contains(&Element::Application(Value::Enumerated(P::PROPERTY_LIST.0))));
        assert_eq!(p.read(P::PROPERTY_LIST, Some(0)), Ok(Value::Unsigned(list.0.len() as u64).into()));
    }

    #[test]
    fn a_bacnet_ipv6_port_says_where_it_is() {
        let p = NetworkPort {
            instance: 1,
            name: "BACnet/IPv6".into(),
            network: None,
            kind: PortKind::Ipv6 {
                address: std::net::SocketAddrV6::new(std::net::Ipv6Addr::LOCALHOST, 47808, 0, 0),
                vmac: [0x05, 0xef, 0x89],
                group: "ff02::bac0".parse().unwrap(),
                bbmd: true,
            },
            routes: None,
            bbmd: None,
        };
        assert_eq!(p.read(P::NETWORK_TYPE, None), Ok(Value::Enumerated(9).into()));
        assert_eq!(p.read(P::MAC_ADDRESS, None), Ok(Value::OctetString(vec![0x05, 0xef, 0x89]).into()));
        assert_eq!(p.read(P::BACNET_IPV6_MODE, None), Ok(Value::Enumerated(IP_MODE_BBMD).into()));
        let mut loopback = vec![0; 15];
        loopback.push(1);
        assert_eq!(p.read(P::IPV6_ADDRESS, None), Ok(Value::OctetString(loopback).into()));
        assert_eq!(p.read(P::IPV6_PREFIX_LENGTH, None), Ok(Value::Unsigned(128).into()));
        assert_eq!(p.read(P::BACNET_IPV6_UDP_PORT, None), Ok(Value::Unsigned(47808).into()));
        let group = "ff02::bac0".parse::<std::net::Ipv6Addr>().unwrap().octets().to_vec();
        assert_eq!(p.read(P::BACNET_IPV6_MULTICAST_ADDRESS, None), Ok(Value::OctetString(group).into()));
        assert_eq!(p.read(P::IP_ADDRESS, None).unwrap_err().code, ErrorCode::UNKNOWN_PROPERTY);
    }

    #[test]
    fn a_routers_port_lists_the_networks_behind_other_routers() {
        let view = RoutingView::default();
        let p = ip_port(Some(view.clone()));
        assert_eq!(p.read(P::ROUTING_TABLE, None), Ok(AnyValue(vec![])));
        view.publish(vec![RouteRow { network: 40, mac: vec![10, 0, 0, 9, 0xBA, 0xC0], busy: true }]);
        let mut encoded = Vec::new();
        p.read(P::ROUTING_TABLE, None).unwrap().encode(&mut encoded);
        // [0] 40, [1] the MAC, [2] busy (1).
        assert_eq!(encoded, [0x09, 40, 0x1D, 6, 10, 0, 0, 9, 0xBA, 0xC0, 0x29, 1]);
    }
}
