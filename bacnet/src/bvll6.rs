//! BACnet Virtual Link Layer for BACnet/IPv6 (Annex U.2): every BVLC
//! function, with the virtual MAC addresses (VMACs) the IPv6 datalink uses
//! in place of 18-octet addresses.
//!
//! ```text
//! type(0x82) | function(1) | length(2, the whole message) | function data
//! ```
//! A VMAC is 3 octets (by convention the device instance); a B/IPv6
//! address is 16 octets of IPv6 address and 2 of UDP port. A message whose
//! length field differs from the datagram's size is malformed and dropped.
//!
//! Must never: panic or allocate on decode (messages borrow their NPDUs from
//! the datagram), or encode a message that would not decode back to itself.

use crate::codec::Reader;
use crate::error::{DecodeError, EncodeError};
use alloc::vec::Vec;
use core::net::{Ipv6Addr, SocketAddrV6};

/// The BVLC type octet for BACnet/IPv6.
pub const BVLC_TYPE_BIP6: u8 = 0x82;
/// Octets in the header.
pub const HEADER_LEN: usize = 4;

/// A B/IPv6 virtual MAC address.
pub type Vmac = [u8; 3];

/// The VMAC conventionally derived from a device instance (its low 22
/// bits, big-endian).
pub fn vmac_of_instance(instance: u32) -> Vmac {
    let b = instance.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// BVLC-Result codes of BACnet/IPv6 (Annex U.2.1.1).
pub mod result {
    /// Successful completion.
    pub const SUCCESSFUL_COMPLETION: u16 = 0x0000;
    /// Address-Resolution NAK.
    pub const ADDRESS_RESOLUTION_NAK: u16 = 0x0030;
    /// Virtual-Address-Resolution NAK.
    pub const VIRTUAL_ADDRESS_RESOLUTION_NAK: u16 = 0x0060;
    /// Register-Foreign-Device NAK.
    pub const REGISTER_FOREIGN_DEVICE_NAK: u16 = 0x0090;
    /// Delete-Foreign-Device-Table-Entry NAK.
    pub const DELETE_FOREIGN_DEVICE_TABLE_ENTRY_NAK: u16 = 0x00A0;
    /// Distribute-Broadcast-To-Network NAK.
    pub const DISTRIBUTE_BROADCAST_TO_NETWORK_NAK: u16 = 0x00C0;
}

/// A decoded BACnet/IPv6 BVLL message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bvll6<'a> {
    /// BVLC-Result (0x00).
    Result {
        /// The sender's VMAC.
        source: Vmac,
        /// The result code ([`result`]).
        code: u16,
    },
    /// Original-Unicast-NPDU (0x01).
    OriginalUnicastNpdu {
        /// The sender's VMAC.
        source: Vmac,
        /// The addressee's VMAC.
        destination: Vmac,
        /// The NPDU.
        npdu: &'a [u8],
    },
    /// Original-Broadcast-NPDU (0x02), sent to the multicast group.
    OriginalBroadcastNpdu {
        /// The sender's VMAC.
        source: Vmac,
        /// The NPDU.
        npdu: &'a [u8],
    },
    /// Address-Resolution (0x03): who has `target`?
    AddressResolution {
        /// The asker's VMAC.
        source: Vmac,
        /// The VMAC asked for.
        target: Vmac,
    },
    /// Forwarded-Address-Resolution (0x04), from a BBMD.
    ForwardedAddressResolution {
        /// The asker's VMAC.
        source: Vmac,
        /// The VMAC asked for.
        target: Vmac,
        /// The asker's B/IPv6 address.
        original_source: SocketAddrV6,
    },
    /// Address-Resolution-ACK (0x05).
    AddressResolutionAck {
        /// The answerer's VMAC (the one asked for).
        source: Vmac,
        /// The asker's VMAC.
        destination: Vmac,
    },
    /// Virtual-Address-Resolution (0x06): what is your VMAC?
    VirtualAddressResolution {
        /// The asker's VMAC.
        source: Vmac,
    },
    /// Virtual-Address-Resolution-ACK (0x07).
    VirtualAddressResolutionAck {
        /// The answerer's VMAC.
        source: Vmac,
        /// The asker's VMAC.
        destination: Vmac,
    },
    /// Forwarded-NPDU (0x08), from a BBMD.
    ForwardedNpdu {
        /// The originator's VMAC.
        source: Vmac,
        /// The originator's B/IPv6 address.
        original_source: SocketAddrV6,
        /// The NPDU.
        npdu: &'a [u8],
    },
    /// Register-Foreign-Device (0x09).
    RegisterForeignDevice {
        /// The registering device's VMAC.
        source: Vmac,
        /// Time-to-live in seconds.
        ttl: u16,
    },
    /// Delete-Foreign-Device-Table-Entry (0x0A).
    DeleteForeignDeviceTableEntry {
        /// The sender's VMAC.
        source: Vmac,
        /// The entry's B/IPv6 address.
        entry: SocketAddrV6,
    },
    /// Secure-BVLL (0x0B), kept as received.
    SecureBvll(&'a [u8]),
    /// Distribute-Broadcast-To-Network (0x0C), from a foreign device.
    DistributeBroadcastToNetwork {
        /// The foreign device's VMAC.
        source: Vmac,
        /// The NPDU.
        npdu: &'a [u8],
    },
}

impl<'a> Bvll6<'a> {
    /// The function octet.
    pub fn function(&self) -> u8 {
        match self {
            Bvll6::Result { .. } => 0x00,
            Bvll6::OriginalUnicastNpdu { .. } => 0x01,
            Bvll6::OriginalBroadcastNpdu { .. } => 0x02,
            Bvll6::AddressResolution { .. } => 0x03,
            Bvll6::ForwardedAddressResolution { .. } => 0x04,
            Bvll6::AddressResolutionAck { .. } => 0x05,
            Bvll6::VirtualAddressResolution { .. } => 0x06,
            Bvll6::VirtualAddressResolutionAck { .. } => 0x07,
            Bvll6::ForwardedNpdu { .. } => 0x08,
            Bvll6::RegisterForeignDevice { .. } => 0x09,
            Bvll6::DeleteForeignDeviceTableEntry { .. } => 0x0A,
            Bvll6::SecureBvll(_) => 0x0B,
            Bvll6::DistributeBroadcastToNetwork { .. } => 0x0C,
        }
    }

    /// The sender's VMAC, for every function but Secure-BVLL.
    pub fn source(&self) -> Option<Vmac> {
        Some(match *self {
            Bvll6::Result { source, .. }
            | Bvll6::OriginalUnicastNpdu { source, .. }
            | Bvll6::OriginalBroadcastNpdu { source, .. }
            | Bvll6::AddressResolution { source, .. }
            | Bvll6::ForwardedAddressResolution { source, .. }
            | Bvll6::AddressResolutionAck { source, .. }
            | Bvll6::VirtualAddressResolution { source }
            | Bvll6::VirtualAddressResolutionAck { source, .. }
            | Bvll6::ForwardedNpdu { source, .. }
            | Bvll6::RegisterForeignDevice { source, .. }
            | Bvll6::DeleteForeignDeviceTableEntry { source, .. }
            | Bvll6::DistributeBroadcastToNetwork { source, .. } => source,
            Bvll6::SecureBvll(_) => return None,
        })
    }

    /// The NPDU carried, for the functions that carry one.
    pub fn npdu(&self) -> Option<&'a [u8]> {
        match *self {
            Bvll6::OriginalUnicastNpdu { npdu, .. }
            | Bvll6::OriginalBroadcastNpdu { npdu, .. }
            | Bvll6::ForwardedNpdu { npdu, .. }
            | Bvll6::DistributeBroadcastToNetwork { npdu, .. } => Some(npdu),
            _ => None,
        }
    }

    /// Decode one datagram.
    pub fn decode(data: &'a [u8]) -> Result<Bvll6<'a>, DecodeError> {
        let mut r = Reader::new(data);
        if r.u8("the BVLC type")? != BVLC_TYPE_BIP6 {
            return Err(DecodeError::InvalidTag { at: 0, what: "BVLC type 0x82 (BACnet/IPv6)" });
        }
        let function = r.u8("the BVLC function")?;
        let length = r.u16("the BVLC length")? as usize;
        if length != data.len() {
            return Err(DecodeError::Inconsistent { at: 2, what: "the BVLC length differs from the datagram size" });
        }
        let vmac = |r: &mut Reader<'a>, what| -> Result<Vmac, DecodeError> {
            let b = r.take(3, what)?;
            Ok([b[0], b[1], b[2]])
        };
        let m = match function {
            0x00 => Bvll6::Result { source: vmac(&mut r, "the source VMAC")?, code: r.u16("the result code")? },
            0x01 => Bvll6::OriginalUnicastNpdu {
                source: vmac(&mut r, "the source VMAC")?,
                destination: vmac(&mut r, "the destination VMAC")?,
                npdu: r.take_rest(),
            },
            0x02 => Bvll6::OriginalBroadcastNpdu { source: vmac(&mut r, "the source VMAC")?, npdu: r.take_rest() },
            0x03 => Bvll6::AddressResolution {
                source: vmac(&mut r, "the source VMAC")?,
                target: vmac(&mut r, "the target VMAC")?,
            },
            0x04 => Bvll6::ForwardedAddressResolution {
                source: vmac(&mut r, "the source VMAC")?,
                target: vmac(&mut r, "the target VMAC")?,
                original_source: bip6_address(&mut r, "the original source B/IPv6 address")?,
            },
            0x05 => Bvll6::AddressResolutionAck {
                source: vmac(&mut r, "the source VMAC")?,
                destination: vmac(&mut r, "the destination VMAC")?,
            },
            0x06 => Bvll6::VirtualAddressResolution { source: vmac(&mut r, "the source VMAC")? },
            0x07 => Bvll6::VirtualAddressResolutionAck {
                source: vmac(&mut r, "the source VMAC")?,
                destination: vmac(&mut r, "the destination VMAC")?,
            },
            0x08 => Bvll6::ForwardedNpdu {
                source: vmac(&mut r, "the source VMAC")?,
                original_source: bip6_address(&mut r, "the original source B/IPv6 address")?,
                npdu: r.take_rest(),
            },
            0x09 => Bvll6::RegisterForeignDevice {
                source: vmac(&mut r, "the source VMAC")?,
                ttl: r.u16("the time-to-live")?,
            },
            0x0A => Bvll6::DeleteForeignDeviceTableEntry {
                source: vmac(&mut r, "the source VMAC")?,
                entry: bip6_address(&mut r, "the FDT entry's B/IPv6 address")?,
            },
            0x0B => Bvll6::SecureBvll(r.take_rest()),
            0x0C => {
                Bvll6::DistributeBroadcastToNetwork { source: vmac(&mut r, "the source VMAC")?, npdu: r.take_rest() }
            }
            _ => return Err(DecodeError::InvalidTag { at: 1, what: "a BVLC-IPv6 function 0x00..=0x0C" }),
        };
        r.expect_end()?;
        Ok(m)
    }

    /// Append the encoded message.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(&[BVLC_TYPE_BIP6, self.function(), 0, 0]);
        if let Some(source) = self.source() {
            out.extend_from_slice(&source);
        }
        match *self {
            Bvll6::Result { code, .. } => out.extend_from_slice(&code.to_be_bytes()),
            Bvll6::OriginalUnicastNpdu { destination, npdu, .. } => {
                out.extend_from_slice(&destination);
                out.extend_from_slice(npdu);
            }
            Bvll6::OriginalBroadcastNpdu { npdu, .. } | Bvll6::DistributeBroadcastToNetwork { npdu, .. } => {
                out.extend_from_slice(npdu)
            }
            Bvll6::AddressResolution { target, .. } => out.extend_from_slice(&target),
            Bvll6::ForwardedAddressResolution { target, original_source, .. } => {
                out.extend_from_slice(&target);
                push_bip6_address(out, &original_source);
            }
            Bvll6::AddressResolutionAck { destination, .. }
            | Bvll6::VirtualAddressResolutionAck { destination, .. } => out.extend_from_slice(&destination),
            Bvll6::VirtualAddressResolution { .. } => {}
            Bvll6::ForwardedNpdu { original_source, npdu, .. } => {
                push_bip6_address(out, &original_source);
                out.extend_from_slice(npdu);
            }
            Bvll6::RegisterForeignDevice { ttl, .. } => out.extend_from_slice(&ttl.to_be_bytes()),
            Bvll6::DeleteForeignDeviceTableEntry { entry, .. } => push_bip6_address(out, &entry),
            Bvll6::SecureBvll(data) => out.extend_from_slice(data),
        }
        let len = u16::try_from(out.len() - start).map_err(|_| {
            out.truncate(start);
            EncodeError::TooLong("BVLL-IPv6 message")
        })?;
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }
}

/// A B/IPv6 address: 16 octets of address, 2 of port.
fn bip6_address(r: &mut Reader<'_>, what: &'static str) -> Result<SocketAddrV6, DecodeError> {
    let b = r.take(18, what)?;
    let mut ip = [0u8; 16];
    ip.copy_from_slice(&b[..16]);
    Ok(SocketAddrV6::new(Ipv6Addr::from(ip), u16::from_be_bytes([b[16], b[17]]), 0, 0))
}

fn push_bip6_address(out: &mut Vec<u8>, a: &SocketAddrV6) {
    out.extend_from_slice(&a.ip().octets());
    out.extend_from_slice(&a.port().to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const NPDU: &[u8] = &[0x01, 0x00, 0x10, 0x08];

    fn round_trip(m: Bvll6<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        m.encode(&mut out).unwrap();
        assert_eq!(Bvll6::decode(&out).unwrap(), m);
        out
    }

    #[test]
    fn every_function_round_trips_and_the_layout_is_annex_us() {
        let a = SocketAddrV6::new(Ipv6Addr::LOCALHOST, 47808, 0, 0);
        let (me, you) = (vmac_of_instance(1001), vmac_of_instance(2002));
        assert_eq!(me, [0x00, 0x03, 0xE9]);
        let unicast = round_trip(Bvll6::OriginalUnicastNpdu { source: me, destination: you, npdu: NPDU });
        assert_eq!(unicast, [0x82, 0x01, 0x00, 0x0E, 0x00, 0x03, 0xE9, 0x00, 0x07, 0xD2, 0x01, 0x00, 0x10, 0x08]);
        let result = round_trip(Bvll6::Result { source: me, code: result::REGISTER_FOREIGN_DEVICE_NAK });
        assert_eq!(result, [0x82, 0x00, 0x00, 0x09, 0x00, 0x03, 0xE9, 0x00, 0x90]);
        for m in [
            Bvll6::OriginalBroadcastNpdu { source: me, npdu: NPDU },
            Bvll6::AddressResolution { source: me, target: you },
            Bvll6::ForwardedAddressResolution { source: me, target: you, original_source: a },
            Bvll6::AddressResolutionAck { source: you, destination: me },
            Bvll6::VirtualAddressResolution { source: me },
            Bvll6::VirtualAddressResolutionAck { source: you, destination: me },
            Bvll6::ForwardedNpdu { source: me, original_source: a, npdu: NPDU },
            Bvll6::RegisterForeignDevice { source: me, ttl: 300 },
            Bvll6::DeleteForeignDeviceTableEntry { source: me, entry: a },
            Bvll6::SecureBvll(&[1, 2, 3]),
            Bvll6::DistributeBroadcastToNetwork { source: me, npdu: NPDU },
        ] {
            round_trip(m);
        }
    }

    #[test]
    fn lengths_that_lie_and_short_messages_are_refused() {
        let mut out = Vec::new();
        Bvll6::VirtualAddressResolution { source: [1, 2, 3] }.encode(&mut out).unwrap();
        let mut long = out.clone();
        long.push(0);
        assert!(Bvll6::decode(&long).is_err());
        long[3] += 1;
        assert!(Bvll6::decode(&long).is_err(), "trailing octets after a fixed-size message");
        assert!(Bvll6::decode(&out[..6]).is_err());
        assert!(Bvll6::decode(&[0x81, 0x06, 0x00, 0x07, 1, 2, 3]).is_err(), "a BACnet/IPv4 type octet");
        assert!(Bvll6::decode(&[0x82, 0x0D, 0x00, 0x04]).is_err(), "no such function");
    }
}
