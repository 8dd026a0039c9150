//! Network-layer PDUs (Clause 6.2): the control octet, destination and
//! source specifiers, hop count, priority, and the network-layer messages.
//!
//! ```text
//! version(0x01) | control | [DNET(2) DLEN(1) DADR(DLEN)] | [SNET(2) SLEN(1) SADR(SLEN)]
//!               | [hop count, when DNET] | [message type | [vendor id, when type >= 0x80]] | APDU or message data
//! control: bit7 network-layer message, bit5 DNET present, bit3 SNET present,
//!          bit2 data expecting reply, bits1..0 network priority (bits 6 and 4 reserved, must be zero)
//! ```
//! [`Npdu`] borrows MAC addresses and payload from the buffer it was decoded
//! from. An NPDU with reserved control bits set, an unknown version, an SNET
//! of 0xFFFF or SLEN of 0 is malformed: the standard has the receiver drop it
//! (or answer Reject-Message-To-Network), never answer at the application layer.

use crate::codec::Reader;
use crate::enums::{NetworkMessageType, NetworkPriority, RejectMessageReason};
use crate::error::{DecodeError, EncodeError};
use alloc::vec::Vec;

/// The only protocol version defined.
pub const PROTOCOL_VERSION: u8 = 0x01;
/// The global broadcast network number.
pub const GLOBAL_NETWORK: u16 = 0xFFFF;
/// Hop count given to NPDUs we originate with a destination.
pub const DEFAULT_HOP_COUNT: u8 = 255;

/// A remote network address: network number and MAC (empty MAC = broadcast
/// on that network when used as a destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetAddress<'a> {
    /// Network number (0xFFFF = global broadcast, destination only).
    pub net: u16,
    /// MAC address on that network; empty means broadcast.
    pub mac: &'a [u8],
}

/// What the NPDU carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpduPayload<'a> {
    /// An APDU for the application layer.
    Apdu(&'a [u8]),
    /// A network-layer message.
    Message(NetworkMessage<'a>),
}

/// A decoded NPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Npdu<'a> {
    /// Destination network and MAC, if routed.
    pub destination: Option<NetAddress<'a>>,
    /// Source network and MAC, if this came through a router.
    pub source: Option<NetAddress<'a>>,
    /// Hop count (only meaningful with a destination).
    pub hop_count: u8,
    /// The sender expects a reply (confirmed requests and some network messages).
    pub expecting_reply: bool,
    /// Network priority.
    pub priority: NetworkPriority,
    /// The payload.
    pub payload: NpduPayload<'a>,
}

/// Network-layer messages (Clause 6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkMessage<'a> {
    /// Who-Is-Router-To-Network, optionally for one network.
    WhoIsRouterToNetwork(Option<u16>),
    /// I-Am-Router-To-Network with the networks reachable.
    IAmRouterToNetwork(NetworkList<'a>),
    /// I-Could-Be-Router-To-Network.
    ICouldBeRouterToNetwork {
        /// The network.
        net: u16,
        /// Performance index.
        performance_index: u8,
    },
    /// Reject-Message-To-Network.
    RejectMessageToNetwork {
        /// Why.
        reason: RejectMessageReason,
        /// The network the rejected message was for.
        net: u16,
    },
    /// Router-Busy-To-Network (empty list = all networks).
    RouterBusyToNetwork(NetworkList<'a>),
    /// Router-Available-To-Network (empty list = all networks).
    RouterAvailableToNetwork(NetworkList<'a>),
    /// Initialize-Routing-Table.
    InitializeRoutingTable(RoutingTable<'a>),
    /// Initialize-Routing-Table-Ack.
    InitializeRoutingTableAck(RoutingTable<'a>),
    /// Establish-Connection-To-Network.
    EstablishConnectionToNetwork {
        /// The network.
        net: u16,
        /// Termination time in seconds (0 = permanent).
        termination_time: u8,
    },
    /// Disconnect-Connection-To-Network.
    DisconnectConnectionToNetwork(u16),
    /// What-Is-Network-Number.
    WhatIsNetworkNumber,
    /// Network-Number-Is.
    NetworkNumberIs {
        /// The network number.
        net: u16,
        /// True when configured, false when learned.
        configured: bool,
    },
    /// A message type this crate does not interpret (security messages,
    /// reserved and proprietary types), kept as received.
    Other {
        /// The message type.
        message_type: NetworkMessageType,
        /// The vendor ID, present for types 0x80..=0xFF.
        vendor_id: Option<u16>,
        /// The message data.
        data: &'a [u8],
    },
}

/// A list of 2-octet network numbers, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetworkList<'a>(&'a [u8]);

impl<'a> NetworkList<'a> {
    /// Wrap encoded network numbers; fails on an odd length.
    pub fn from_bytes(b: &'a [u8]) -> Result<Self, DecodeError> {
        if !b.len().is_multiple_of(2) {
            return Err(DecodeError::InvalidTag { at: b.len(), what: "a list of 2-octet network numbers" });
        }
        Ok(NetworkList(b))
    }

    /// The network numbers.
    pub fn iter(&self) -> impl Iterator<Item = u16> + 'a {
        self.0.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]))
    }

    /// Number of networks.
    pub fn len(&self) -> usize {
        self.0.len() / 2
    }

    /// True when the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The encoded octets.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// One port of an Initialize-Routing-Table(-Ack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutingTablePort<'a> {
    /// Destination network.
    pub net: u16,
    /// Port ID (0 = remove the entry).
    pub port_id: u8,
    /// Port info octets.
    pub port_info: &'a [u8],
}

/// The port list of an Initialize-Routing-Table(-Ack), validated and borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutingTable<'a> {
    count: u8,
    data: &'a [u8],
}

impl<'a> RoutingTable<'a> {
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let count = r.u8("the number of ports")?;
        let start = r.position();
        for _ in 0..count {
            r.take(3, "a routing table entry")?;
            let len = r.u8("the port info length")?;
            r.take(len as usize, "port info")?;
        }
        Ok(RoutingTable { count, data: &r.buffer()[start..r.position()] })
    }

    /// Build an encoded table from ports into `out`, returning the octets to
    /// pass to [`RoutingTable::from_encoded`].
    pub fn encode_ports(ports: &[RoutingTablePort<'_>], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let count = u8::try_from(ports.len()).map_err(|_| EncodeError::TooLong("routing table"))?;
        out.push(count);
        for p in ports {
            out.extend_from_slice(&p.net.to_be_bytes());
            out.push(p.port_id);
            out.push(u8::try_from(p.port_info.len()).map_err(|_| EncodeError::TooLong("port info"))?);
            out.extend_from_slice(p.port_info);
        }
        Ok(())
    }

    /// Validate octets produced by [`RoutingTable::encode_ports`] (count first).
    pub fn from_encoded(b: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b);
        let t = Self::decode(&mut r)?;
        r.expect_end()?;
        Ok(t)
    }

    /// The ports.
    pub fn ports(&self) -> impl Iterator<Item = RoutingTablePort<'a>> + 'a {
        let mut r = Reader::new(self.data);
        (0..self.count).map_while(move |_| {
            let net = r.u16("net").ok()?;
            let port_id = r.u8("port id").ok()?;
            let len = r.u8("len").ok()?;
            let port_info = r.take(len as usize, "info").ok()?;
            Some(RoutingTablePort { net, port_id, port_info })
        })
    }

    /// Number of ports.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True for an empty table (a query for the complete routing table).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl<'a> NetworkMessage<'a> {
    /// The message type octet.
    pub fn message_type(&self) -> NetworkMessageType {
        use NetworkMessage::*;
        match self {
            WhoIsRouterToNetwork(_) => NetworkMessageType::WHO_IS_ROUTER_TO_NETWORK,
            IAmRouterToNetwork(_) => NetworkMessageType::I_AM_ROUTER_TO_NETWORK,
            ICouldBeRouterToNetwork { .. } => NetworkMessageType::I_COULD_BE_ROUTER_TO_NETWORK,
            RejectMessageToNetwork { .. } => NetworkMessageType::REJECT_MESSAGE_TO_NETWORK,
            RouterBusyToNetwork(_) => NetworkMessageType::ROUTER_BUSY_TO_NETWORK,
            RouterAvailableToNetwork(_) => NetworkMessageType::ROUTER_AVAILABLE_TO_NETWORK,
            InitializeRoutingTable(_) => NetworkMessageType::INITIALIZE_ROUTING_TABLE,
            InitializeRoutingTableAck(_) => NetworkMessageType::INITIALIZE_ROUTING_TABLE_ACK,
            EstablishConnectionToNetwork { .. } => NetworkMessageType::ESTABLISH_CONNECTION_TO_NETWORK,
            DisconnectConnectionToNetwork(_) => NetworkMessageType::DISCONNECT_CONNECTION_TO_NETWORK,
            WhatIsNetworkNumber => NetworkMessageType::WHAT_IS_NETWORK_NUMBER,
            NetworkNumberIs { .. } => NetworkMessageType::NETWORK_NUMBER_IS,
            Other { message_type, .. } => *message_type,
        }
    }

    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let message_type = NetworkMessageType(r.u8("the network message type")?);
        let vendor_id = if message_type.0 >= 0x80 { Some(r.u16("the vendor ID")?) } else { None };
        use NetworkMessage::*;
        let m = match message_type {
            NetworkMessageType::WHO_IS_ROUTER_TO_NETWORK => {
                if r.is_empty() {
                    WhoIsRouterToNetwork(None)
                } else {
                    WhoIsRouterToNetwork(Some(r.u16("DNET")?))
                }
            }
            NetworkMessageType::I_AM_ROUTER_TO_NETWORK => {
                let list = NetworkList::from_bytes(r.take_rest())?;
                if list.is_empty() {
                    return Err(DecodeError::Truncated { at: r.position(), what: "at least one DNET" });
                }
                IAmRouterToNetwork(list)
            }
            NetworkMessageType::I_COULD_BE_ROUTER_TO_NETWORK => {
                ICouldBeRouterToNetwork { net: r.u16("DNET")?, performance_index: r.u8("the performance index")? }
            }
            NetworkMessageType::REJECT_MESSAGE_TO_NETWORK => {
                RejectMessageToNetwork { reason: RejectMessageReason(r.u8("the reject reason")?), net: r.u16("DNET")? }
            }
            NetworkMessageType::ROUTER_BUSY_TO_NETWORK => RouterBusyToNetwork(NetworkList::from_bytes(r.take_rest())?),
            NetworkMessageType::ROUTER_AVAILABLE_TO_NETWORK => {
                RouterAvailableToNetwork(NetworkList::from_bytes(r.take_rest())?)
            }
            NetworkMessageType::INITIALIZE_ROUTING_TABLE => InitializeRoutingTable(RoutingTable::decode(r)?),
            NetworkMessageType::INITIALIZE_ROUTING_TABLE_ACK => InitializeRoutingTableAck(RoutingTable::decode(r)?),
            NetworkMessageType::ESTABLISH_CONNECTION_TO_NETWORK => {
                EstablishConnectionToNetwork { net: r.u16("DNET")?, termination_time: r.u8("the termination time")? }
            }
            NetworkMessageType::DISCONNECT_CONNECTION_TO_NETWORK => DisconnectConnectionToNetwork(r.u16("DNET")?),
            NetworkMessageType::WHAT_IS_NETWORK_NUMBER => WhatIsNetworkNumber,
            NetworkMessageType::NETWORK_NUMBER_IS => {
                let net = r.u16("the network number")?;
                let at = r.position();
                let configured = match r.u8("the learned/configured flag")? {
                    0 => false,
                    1 => true,
                    _ => return Err(DecodeError::OutOfRange { at, what: "the learned/configured flag" }),
                };
                NetworkNumberIs { net, configured }
            }
            _ => Other { message_type, vendor_id, data: r.take_rest() },
        };
        r.expect_end()?;
        Ok(m)
    }

    /// Refuse messages that would not decode back to themselves.
    fn check(&self) -> Result<(), EncodeError> {
        use NetworkMessage::*;
        match self {
            IAmRouterToNetwork(l) if l.is_empty() => {
                Err(EncodeError::Inconsistent("I-Am-Router-To-Network needs a DNET"))
            }
            Other { message_type, vendor_id, .. } => {
                let interpreted = message_type.0 <= 0x09 || matches!(message_type.0, 0x12 | 0x13);
                if interpreted {
                    Err(EncodeError::Inconsistent("Other carries a message type this crate encodes itself"))
                } else if (message_type.0 >= 0x80) != vendor_id.is_some() {
                    Err(EncodeError::Inconsistent("a vendor ID goes with (only) message types 0x80..=0xFF"))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        use NetworkMessage::*;
        out.push(self.message_type().0);
        match self {
            WhoIsRouterToNetwork(net) => {
                if let Some(n) = net {
                    out.extend_from_slice(&n.to_be_bytes())
                }
            }
            IAmRouterToNetwork(l) | RouterBusyToNetwork(l) | RouterAvailableToNetwork(l) => {
                out.extend_from_slice(l.as_bytes())
            }
            ICouldBeRouterToNetwork { net, performance_index } => {
                out.extend_from_slice(&net.to_be_bytes());
                out.push(*performance_index);
            }
            RejectMessageToNetwork { reason, net } => {
                out.push(reason.0);
                out.extend_from_slice(&net.to_be_bytes());
            }
            InitializeRoutingTable(t) | InitializeRoutingTableAck(t) => {
                out.push(t.count);
                out.extend_from_slice(t.data);
            }
            EstablishConnectionToNetwork { net, termination_time } => {
                out.extend_from_slice(&net.to_be_bytes());
                out.push(*termination_time);
            }
            DisconnectConnectionToNetwork(net) => out.extend_from_slice(&net.to_be_bytes()),
            WhatIsNetworkNumber => {}
            NetworkNumberIs { net, configured } => {
                out.extend_from_slice(&net.to_be_bytes());
                out.push(*configured as u8);
            }
            Other { message_type, vendor_id, data } => {
                if message_type.0 >= 0x80 {
                    out.extend_from_slice(&vendor_id.unwrap_or(0).to_be_bytes());
                }
                out.extend_from_slice(data);
            }
        }
    }
}

impl<'a> Npdu<'a> {
    /// A local NPDU carrying an APDU (no routing information).
    pub fn local_apdu(apdu: &'a [u8], expecting_reply: bool) -> Self {
        Npdu {
            destination: None,
            source: None,
            hop_count: 0,
            expecting_reply,
            priority: NetworkPriority::NORMAL,
            payload: NpduPayload::Apdu(apdu),
        }
    }

    /// Decode an NPDU.
    pub fn decode(data: &'a [u8]) -> Result<Npdu<'a>, DecodeError> {
        let mut r = Reader::new(data);
        let at = r.position();
        if r.u8("the NPDU version")? != PROTOCOL_VERSION {
            return Err(DecodeError::OutOfRange { at, what: "the NPDU protocol version (1)" });
        }
        let at = r.position();
        let control = r.u8("the NPDU control octet")?;
        if control & 0x50 != 0 {
            return Err(DecodeError::InvalidTag { at, what: "an NPDU control octet with reserved bits 6 and 4 clear" });
        }
        let destination = if control & 0x20 != 0 {
            let net = r.u16("DNET")?;
            let len = r.u8("DLEN")?;
            Some(NetAddress { net, mac: r.take(len as usize, "DADR")? })
        } else {
            None
        };
        let source = if control & 0x08 != 0 {
            let at = r.position();
            let net = r.u16("SNET")?;
            let len = r.u8("SLEN")?;
            if net == GLOBAL_NETWORK || len == 0 {
                return Err(DecodeError::OutOfRange { at, what: "SNET (not 0xFFFF) with SLEN above 0" });
            }
            Some(NetAddress { net, mac: r.take(len as usize, "SADR")? })
        } else {
            None
        };
        let hop_count = if destination.is_some() { r.u8("the hop count")? } else { 0 };
        let payload = if control & 0x80 != 0 {
            let base = r.position();
            let mut mr = Reader::new(r.take_rest());
            NpduPayload::Message(NetworkMessage::decode(&mut mr).map_err(|e| e.offset_by(base))?)
        } else {
            NpduPayload::Apdu(r.take_rest())
        };
        Ok(Npdu {
            destination,
            source,
            hop_count,
            expecting_reply: control & 0x04 != 0,
            priority: NetworkPriority(control & 0x03),
            payload,
        })
    }

    /// Append the encoded NPDU. On error `out` is left as it was.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        self.encode_fields(out).inspect_err(|_| out.truncate(start))
    }

    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let mut control = self.priority.0 & 0x03;
        if matches!(self.payload, NpduPayload::Message(_)) {
            control |= 0x80;
        }
        if self.destination.is_some() {
            control |= 0x20;
        }
        if self.source.is_some() {
            control |= 0x08;
        }
        if self.expecting_reply {
            control |= 0x04;
        }
        out.push(PROTOCOL_VERSION);
        out.push(control);
        if let Some(d) = self.destination {
            out.extend_from_slice(&d.net.to_be_bytes());
            out.push(u8::try_from(d.mac.len()).map_err(|_| EncodeError::TooLong("DADR"))?);
            out.extend_from_slice(d.mac);
        }
        if let Some(s) = self.source {
            if s.net == GLOBAL_NETWORK || s.mac.is_empty() {
                return Err(EncodeError::OutOfRange("SNET/SADR"));
            }
            out.extend_from_slice(&s.net.to_be_bytes());
            out.push(u8::try_from(s.mac.len()).map_err(|_| EncodeError::TooLong("SADR"))?);
            out.extend_from_slice(s.mac);
        }
        if self.destination.is_some() {
            out.push(self.hop_count);
        }
        match &self.payload {
            NpduPayload::Apdu(a) => out.extend_from_slice(a),
            NpduPayload::Message(m) => {
                m.check()?;
                m.encode(out)
            }
        }
        Ok(())
    }
}
