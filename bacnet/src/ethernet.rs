//! BACnet on ISO 8802-3 (Ethernet) with ISO 8802-2 LLC (Clause 7): the
//! frame around an NPDU.
//!
//! ```text
//! destination MAC(6) | source MAC(6) | length(2) | DSAP 0x82 | SSAP 0x82 | control 0x03 (UI) | NPDU
//! ```
//!
//! The length field counts the LLC header and the NPDU (so at most 1500,
//! an NPDU of at most [`MAX_NPDU`] octets). A field of 0x0600 or more is an
//! EtherType (Ethernet II: IPv6, ARP …) and the frame is not BACnet's; an
//! 802.3 frame with other service access points is someone else's LLC.
//! Both are [`Frame::NotBacnet`], to be skipped, not errors. Frames shorter
//! than the 60-octet minimum are padded by whoever sends them (the NIC or
//! the kernel), so a received frame may carry octets after its length;
//! they are ignored. [`encode`] never pads.
//!
//! Must never: take the padding for part of the NPDU, or accept a length
//! field that runs past the frame.

use crate::codec::Reader;
use crate::error::{DecodeError, EncodeError};
use alloc::vec::Vec;

/// The LLC service access point of BACnet (DSAP and SSAP).
pub const BACNET_SAP: u8 = 0x82;
/// The LLC control field of an unnumbered information (UI) frame.
pub const LLC_UI: u8 = 0x03;
/// Octets of MAC header (two addresses and the length).
pub const MAC_HEADER_LEN: usize = 14;
/// Octets of LLC header.
pub const LLC_HEADER_LEN: usize = 3;
/// The largest 802.3 length field (the MAC client data).
pub const MAX_LENGTH: usize = 1500;
/// The largest NPDU a BACnet Ethernet frame carries (Clause 7: 1497).
pub const MAX_NPDU: usize = MAX_LENGTH - LLC_HEADER_LEN;
/// The smallest value of the type/length field that is an EtherType.
pub const MIN_ETHERTYPE: u16 = 0x0600;
/// The broadcast MAC address (Clause 7: a BACnet broadcast on Ethernet).
pub const BROADCAST: [u8; 6] = [0xFF; 6];

/// A received Ethernet frame, borrowing its NPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A BACnet frame.
    Bacnet {
        /// Where it was sent (a station's MAC, or [`BROADCAST`]).
        destination: [u8; 6],
        /// Who sent it.
        source: [u8; 6],
        /// The NPDU, without padding.
        npdu: &'a [u8],
    },
    /// Not BACnet (an EtherType frame, or LLC with other service access
    /// points): to be skipped.
    NotBacnet,
}

impl<'a> Frame<'a> {
    /// Decode a frame as it came off the wire (without the FCS).
    pub fn decode(data: &'a [u8]) -> Result<Frame<'a>, DecodeError> {
        let mut r = Reader::new(data);
        let destination = mac(r.take(6, "the destination MAC address")?);
        let source = mac(r.take(6, "the source MAC address")?);
        let length = r.u16("the length field")?;
        if length >= MIN_ETHERTYPE {
            return Ok(Frame::NotBacnet);
        }
        let length = usize::from(length);
        if length > MAX_LENGTH {
            return Err(DecodeError::OutOfRange { at: 12, what: "the 802.3 length field (at most 1500)" });
        }
        let body = data
            .get(MAC_HEADER_LEN..MAC_HEADER_LEN + length)
            .ok_or(DecodeError::Truncated { at: data.len(), what: "the octets the 802.3 length field counts" })?;
        let mut r = Reader::new(body);
        let (dsap, ssap) = (r.u8("the DSAP")?, r.u8("the SSAP")?);
        let control = r.u8("the LLC control field")?;
        if dsap != BACNET_SAP || ssap != BACNET_SAP {
            return Ok(Frame::NotBacnet);
        }
        if control != LLC_UI {
            return Err(DecodeError::InvalidTag { at: MAC_HEADER_LEN + 2, what: "LLC control 0x03 (UI)" });
        }
        Ok(Frame::Bacnet { destination, source, npdu: r.take_rest() })
    }
}

/// Append a BACnet frame carrying `npdu` from `source` to `destination`
/// (not padded: the sender's NIC or kernel pads a short frame).
pub fn encode(destination: [u8; 6], source: [u8; 6], npdu: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    if npdu.len() > MAX_NPDU {
        return Err(EncodeError::TooLong("an NPDU on Ethernet (at most 1497 octets)"));
    }
    out.reserve(MAC_HEADER_LEN + LLC_HEADER_LEN + npdu.len());
    out.extend_from_slice(&destination);
    out.extend_from_slice(&source);
    out.extend_from_slice(&((LLC_HEADER_LEN + npdu.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[BACNET_SAP, BACNET_SAP, LLC_UI]);
    out.extend_from_slice(npdu);
    Ok(())
}

fn mac(octets: &[u8]) -> [u8; 6] {
    let mut m = [0; 6];
    m.copy_from_slice(octets);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// bacnet-stack's Who-Is, as captured (`../shared/vectors`, frame 1).
    const WHO_IS: [u8; 25] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x76, 0x4A, 0xAC, 0xD4, 0x06, 0xA2, 0x00, 0x0B, 0x82, 0x82, 0x03, 0x01,
        0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08,
    ];

    #[test]
    fn a_who_is_decodes_and_encodes_back_octet_for_octet() {
        let Frame::Bacnet { destination, source, npdu } = Frame::decode(&WHO_IS).unwrap() else { panic!("not BACnet") };
        assert_eq!(destination, BROADCAST);
        assert_eq!(source, [0x76, 0x4A, 0xAC, 0xD4, 0x06, 0xA2]);
        assert_eq!(npdu, [0x01, 0x20, 0xFF, 0xFF, 0x00, 0xFF, 0x10, 0x08]);
        let mut out = Vec::new();
        encode(destination, source, npdu, &mut out).unwrap();
        assert_eq!(out, WHO_IS);
    }

    #[test]
    fn padding_after_the_length_is_not_part_of_the_npdu() {
        let mut padded = WHO_IS.to_vec();
        padded.resize(60, 0);
        let Frame::Bacnet { npdu, .. } = Frame::decode(&padded).unwrap() else { panic!("not BACnet") };
        assert_eq!(npdu.len(), 8);
    }

    #[test]
    fn other_protocols_are_skipped_and_broken_frames_refused() {
        let mut ipv6 = WHO_IS.to_vec();
        ipv6[12..14].copy_from_slice(&[0x86, 0xDD]);
        assert_eq!(Frame::decode(&ipv6), Ok(Frame::NotBacnet));
        let mut snap = WHO_IS.to_vec();
        snap[14..17].copy_from_slice(&[0xAA, 0xAA, 0x03]);
        assert_eq!(Frame::decode(&snap), Ok(Frame::NotBacnet));
        let mut long = WHO_IS.to_vec();
        long[13] = 0x20;
        assert!(matches!(Frame::decode(&long), Err(DecodeError::Truncated { .. })));
        let mut big = WHO_IS.to_vec();
        big[12..14].copy_from_slice(&1501u16.to_be_bytes());
        assert!(matches!(Frame::decode(&big), Err(DecodeError::OutOfRange { .. })));
        let mut control = WHO_IS.to_vec();
        control[16] = 0x13;
        assert!(matches!(Frame::decode(&control), Err(DecodeError::InvalidTag { .. })));
        assert!(Frame::decode(&WHO_IS[..13]).is_err());
        assert!(encode(BROADCAST, BROADCAST, &[0; MAX_NPDU + 1], &mut Vec::new()).is_err());
    }
}
