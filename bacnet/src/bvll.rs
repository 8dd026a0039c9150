//! BACnet Virtual Link Layer for BACnet/IP (Annex J.2): every BVLC function,
//! including the BBMD and foreign-device ones.
//!
//! ```text
//! type(0x81) | function(1) | length(2, the whole BVLL message) | function data
//! ```
//! B/IP addresses (`BIP-address`) are 4 octets of IPv4 address and 2 of UDP
//! port. A BVLL message whose length field differs from the datagram's size is
//! malformed and dropped (Annex J gives no answer for it).

use crate::codec::Reader;
use crate::enums::{BvlcFunction, BvlcResultCode};
use crate::error::{DecodeError, EncodeError};
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddrV4};

/// The BVLC type octet for BACnet/IP.
pub const BVLC_TYPE_BIP: u8 = 0x81;
/// Octets in the BVLL header.
pub const HEADER_LEN: usize = 4;

/// One Broadcast Distribution Table entry (Annex J.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BdtEntry {
    /// The BBMD's B/IP address.
    pub address: SocketAddrV4,
    /// The broadcast distribution mask.
    pub mask: Ipv4Addr,
}

/// One Foreign Device Table entry (Annex J.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FdtEntry {
    /// The foreign device's B/IP address.
    pub address: SocketAddrV4,
    /// Time-to-live it registered with, in seconds.
    pub ttl: u16,
    /// Seconds remaining before the entry is purged.
    pub remaining: u16,
}

/// A decoded BVLL message, borrowing NPDUs and tables from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bvll<'a> {
    /// BVLC-Result.
    Result(BvlcResultCode),
    /// Write-Broadcast-Distribution-Table.
    WriteBroadcastDistributionTable(Table<'a, 10>),
    /// Read-Broadcast-Distribution-Table.
    ReadBroadcastDistributionTable,
    /// Read-Broadcast-Distribution-Table-Ack.
    ReadBroadcastDistributionTableAck(Table<'a, 10>),
    /// Forwarded-NPDU: an NPDU a BBMD forwarded, with its original source.
    ForwardedNpdu {
        /// The B/IP address of the station that originated it.
        original_source: SocketAddrV4,
        /// The NPDU.
        npdu: &'a [u8],
    },
    /// Register-Foreign-Device with its time-to-live in seconds.
    RegisterForeignDevice {
        /// Time-to-live in seconds.
        ttl: u16,
    },
    /// Read-Foreign-Device-Table.
    ReadForeignDeviceTable,
    /// Read-Foreign-Device-Table-Ack.
    ReadForeignDeviceTableAck(Table<'a, 10>),
    /// Delete-Foreign-Device-Table-Entry.
    DeleteForeignDeviceTableEntry(SocketAddrV4),
    /// Distribute-Broadcast-To-Network (from a foreign device to its BBMD).
    DistributeBroadcastToNetwork(&'a [u8]),
    /// Original-Unicast-NPDU.
    OriginalUnicastNpdu(&'a [u8]),
    /// Original-Broadcast-NPDU.
    OriginalBroadcastNpdu(&'a [u8]),
    /// Secure-BVLL (Clause 24), kept as received.
    SecureBvll(&'a [u8]),
}

/// A table of fixed-size entries, borrowed and validated for length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table<'a, const N: usize>(&'a [u8]);

impl<'a, const N: usize> Table<'a, N> {
    /// Wrap encoded entries; fails unless the length is a multiple of `N`.
    pub fn from_bytes(b: &'a [u8], at: usize) -> Result<Self, DecodeError> {
        if !b.len().is_multiple_of(N) {
            return Err(DecodeError::InvalidTag { at, what: "a table of whole entries" });
        }
        Ok(Table(b))
    }

    /// The encoded entries.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len() / N
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn bip_address(b: &[u8]) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(b[0], b[1], b[2], b[3]), u16::from_be_bytes([b[4], b[5]]))
}

fn push_bip_address(out: &mut Vec<u8>, a: &SocketAddrV4) {
    out.extend_from_slice(&a.ip().octets());
    out.extend_from_slice(&a.port().to_be_bytes());
}

impl<'a> Table<'a, 10> {
    /// Entries read as a Broadcast Distribution Table.
    pub fn bdt_entries(&self) -> impl Iterator<Item = BdtEntry> + 'a {
        self.0
            .chunks_exact(10)
            .map(|c| BdtEntry { address: bip_address(c), mask: Ipv4Addr::new(c[6], c[7], c[8], c[9]) })
    }

    /// Entries read as a Foreign Device Table.
    pub fn fdt_entries(&self) -> impl Iterator<Item = FdtEntry> + 'a {
        self.0.chunks_exact(10).map(|c| FdtEntry {
            address: bip_address(c),
            ttl: u16::from_be_bytes([c[6], c[7]]),
            remaining: u16::from_be_bytes([c[8], c[9]]),
        })
    }
}

/// Encode BDT entries for a Write-BDT or Read-BDT-Ack.
pub fn encode_bdt(entries: &[BdtEntry], out: &mut Vec<u8>) {
    for e in entries {
        push_bip_address(out, &e.address);
        out.extend_from_slice(&e.mask.octets());
    }
}

/// Encode FDT entries for a Read-FDT-Ack.
pub fn encode_fdt(entries: &[FdtEntry], out: &mut Vec<u8>) {
    for e in entries {
        push_bip_address(out, &e.address);
        out.extend_from_slice(&e.ttl.to_be_bytes());
        out.extend_from_slice(&e.remaining.to_be_bytes());
    }
}

impl<'a> Bvll<'a> {
    /// The function octet.
    pub fn function(&self) -> BvlcFunction {
        match self {
            Bvll::Result(_) => BvlcFunction::RESULT,
            Bvll::WriteBroadcastDistributionTable(_) => BvlcFunction::WRITE_BROADCAST_DISTRIBUTION_TABLE,
            Bvll::ReadBroadcastDistributionTable => BvlcFunction::READ_BROADCAST_DISTRIBUTION_TABLE,
            Bvll::ReadBroadcastDistributionTableAck(_) => BvlcFunction::READ_BROADCAST_DISTRIBUTION_TABLE_ACK,
            Bvll::ForwardedNpdu { .. } => BvlcFunction::FORWARDED_NPDU,
            Bvll::RegisterForeignDevice { .. } => BvlcFunction::REGISTER_FOREIGN_DEVICE,
            Bvll::ReadForeignDeviceTable => BvlcFunction::READ_FOREIGN_DEVICE_TABLE,
            Bvll::ReadForeignDeviceTableAck(_) => BvlcFunction::READ_FOREIGN_DEVICE_TABLE_ACK,
            Bvll::DeleteForeignDeviceTableEntry(_) => BvlcFunction::DELETE_FOREIGN_DEVICE_TABLE_ENTRY,
            Bvll::DistributeBroadcastToNetwork(_) => BvlcFunction::DISTRIBUTE_BROADCAST_TO_NETWORK,
            Bvll::OriginalUnicastNpdu(_) => BvlcFunction::ORIGINAL_UNICAST_NPDU,
            Bvll::OriginalBroadcastNpdu(_) => BvlcFunction::ORIGINAL_BROADCAST_NPDU,
            Bvll::SecureBvll(_) => BvlcFunction::SECURE_BVLL,
        }
    }

    /// The NPDU carried, for the functions that carry one.
    pub fn npdu(&self) -> Option<&'a [u8]> {
        match self {
            Bvll::ForwardedNpdu { npdu, .. } => Some(npdu),
            Bvll::DistributeBroadcastToNetwork(n) | Bvll::OriginalUnicastNpdu(n) | Bvll::OriginalBroadcastNpdu(n) => {
                Some(n)
            }
            _ => None,
        }
    }

    /// Decode one datagram.
    pub fn decode(data: &'a [u8]) -> Result<Bvll<'a>, DecodeError> {
        let mut r = Reader::new(data);
        if r.u8("the BVLC type")? != BVLC_TYPE_BIP {
            return Err(DecodeError::InvalidTag { at: 0, what: "BVLC type 0x81 (BACnet/IP)" });
        }
        let function = BvlcFunction(r.u8("the BVLC function")?);
        let length = r.u16("the BVLC length")? as usize;
        if length != data.len() {
            return Err(DecodeError::Inconsistent { at: 2, what: "the BVLC length differs from the datagram size" });
        }
        let at = r.position();
        let m = match function {
            BvlcFunction::RESULT => {
                let code = BvlcResultCode(r.u16("the result code")?);
                r.expect_end()?;
                Bvll::Result(code)
            }
            BvlcFunction::WRITE_BROADCAST_DISTRIBUTION_TABLE => {
                Bvll::WriteBroadcastDistributionTable(Table::from_bytes(r.take_rest(), at)?)
            }
            BvlcFunction::READ_BROADCAST_DISTRIBUTION_TABLE => {
                r.expect_end()?;
                Bvll::ReadBroadcastDistributionTable
            }
            BvlcFunction::READ_BROADCAST_DISTRIBUTION_TABLE_ACK => {
                Bvll::ReadBroadcastDistributionTableAck(Table::from_bytes(r.take_rest(), at)?)
            }
            BvlcFunction::FORWARDED_NPDU => {
                let original_source = bip_address(r.take(6, "the original source B/IP address")?);
                Bvll::ForwardedNpdu { original_source, npdu: r.take_rest() }
            }
            BvlcFunction::REGISTER_FOREIGN_DEVICE => {
                let ttl = r.u16("the time-to-live")?;
                r.expect_end()?;
                Bvll::RegisterForeignDevice { ttl }
            }
            BvlcFunction::READ_FOREIGN_DEVICE_TABLE => {
                r.expect_end()?;
                Bvll::ReadForeignDeviceTable
            }
            BvlcFunction::READ_FOREIGN_DEVICE_TABLE_ACK => {
                Bvll::ReadForeignDeviceTableAck(Table::from_bytes(r.take_rest(), at)?)
            }
            BvlcFunction::DELETE_FOREIGN_DEVICE_TABLE_ENTRY => {
                let a = bip_address(r.take(6, "the FDT entry's B/IP address")?);
                r.expect_end()?;
                Bvll::DeleteForeignDeviceTableEntry(a)
            }
            BvlcFunction::DISTRIBUTE_BROADCAST_TO_NETWORK => Bvll::DistributeBroadcastToNetwork(r.take_rest()),
            BvlcFunction::ORIGINAL_UNICAST_NPDU => Bvll::OriginalUnicastNpdu(r.take_rest()),
            BvlcFunction::ORIGINAL_BROADCAST_NPDU => Bvll::OriginalBroadcastNpdu(r.take_rest()),
            BvlcFunction::SECURE_BVLL => Bvll::SecureBvll(r.take_rest()),
            _ => return Err(DecodeError::InvalidTag { at: 1, what: "a BVLC function 0x00..=0x0C" }),
        };
        Ok(m)
    }

    /// Append the encoded message.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(&[BVLC_TYPE_BIP, self.function().0, 0, 0]);
        match self {
            Bvll::Result(code) => out.extend_from_slice(&code.0.to_be_bytes()),
            Bvll::WriteBroadcastDistributionTable(t)
            | Bvll::ReadBroadcastDistributionTableAck(t)
            | Bvll::ReadForeignDeviceTableAck(t) => out.extend_from_slice(t.as_bytes()),
            Bvll::ReadBroadcastDistributionTable | Bvll::ReadForeignDeviceTable => {}
            Bvll::ForwardedNpdu { original_source, npdu } => {
                push_bip_address(out, original_source);
                out.extend_from_slice(npdu);
            }
            Bvll::RegisterForeignDevice { ttl } => out.extend_from_slice(&ttl.to_be_bytes()),
            Bvll::DeleteForeignDeviceTableEntry(a) => push_bip_address(out, a),
            Bvll::DistributeBroadcastToNetwork(n)
            | Bvll::OriginalUnicastNpdu(n)
            | Bvll::OriginalBroadcastNpdu(n)
            | Bvll::SecureBvll(n) => out.extend_from_slice(n),
        }
        let len = u16::try_from(out.len() - start).map_err(|_| {
            out.truncate(start);
            EncodeError::TooLong("BVLL message")
        })?;
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }
}
