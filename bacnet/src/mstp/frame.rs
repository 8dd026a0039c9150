//! The MS/TP frame (Clause 9.3): its header, its types, and the codec.
//!
//! ```text
//! 55 FF | Frame Type | Destination | Source | Length (2, MSB first) | HeaderCRC
//!       | Data (Length octets) | DataCRC (2, LSB first)        -- only when Length > 0
//!       | pad (optional, at most one X'FF')
//! ```
//!
//! Frame types 32..=127 are COBS-encoded ([`super::cobs`]): the field after
//! the header is the Encoded Data and the Encoded CRC-32K, and Length is that
//! field's size minus two, so a station that does not know the encoding still
//! skips it as Length octets of data and two of CRC.
//!
//! [`Frame`] is one frame with borrowed data. [`Frame::encode`] writes it
//! into a caller's buffer of at least [`Frame::encoded_len`] octets without
//! allocating; [`Frame::decode`] reads one complete frame from a buffer (the
//! receive state machine in [`super::receive`] does the same octet by octet).
//! The codec passes every frame type through, including the reserved and the
//! proprietary ones, and does not check that a frame's data suits its type:
//! that is the node state machines' business.

use super::cobs::{self, CobsError};
use super::crc::{data_crc, data_crc_ok, header_crc, header_crc_ok};
use crate::enums::macros::bacnet_enum;
use crate::error::EncodeError;
#[cfg(feature = "alloc")]
use alloc::{vec, vec::Vec};

bacnet_enum! {
    /// The Frame Type octet (Clause 9.3). 8..=31 and 35..=127 are reserved
    /// by ASHRAE (32..=127 for COBS-encoded frames); 128..=255 are
    /// proprietary, their data starting with the vendor identifier.
    pub struct FrameType(u8) {
        /// The token, passed from one master to the next.
        TOKEN = 0 => "Token",
        /// Poll For Master: is there a master at this address?
        POLL_FOR_MASTER = 1 => "Poll For Master",
        /// Reply To Poll For Master: yes.
        REPLY_TO_POLL_FOR_MASTER = 2 => "Reply To Poll For Master",
        /// Test_Request, answered by a Test_Response with the same data.
        TEST_REQUEST = 3 => "Test_Request",
        /// Test_Response.
        TEST_RESPONSE = 4 => "Test_Response",
        /// An NPDU whose sender waits for the reply.
        BACNET_DATA_EXPECTING_REPLY = 5 => "BACnet Data Expecting Reply",
        /// An NPDU that needs no immediate reply.
        BACNET_DATA_NOT_EXPECTING_REPLY = 6 => "BACnet Data Not Expecting Reply",
        /// The reply will come later, when the answering node has the token.
        REPLY_POSTPONED = 7 => "Reply Postponed",
        /// An NPDU of 502..=1497 octets, COBS-encoded, whose sender waits for
        /// the reply.
        BACNET_EXTENDED_DATA_EXPECTING_REPLY = 32 => "BACnet Extended Data Expecting Reply",
        /// An NPDU of 502..=1497 octets, COBS-encoded, needing no immediate
        /// reply.
        BACNET_EXTENDED_DATA_NOT_EXPECTING_REPLY = 33 => "BACnet Extended Data Not Expecting Reply",
        /// An IPv6 packet over MS/TP (Annex U, RFC 8163), COBS-encoded.
        IPV6_ENCAPSULATION = 34 => "IPv6 Encapsulation",
    }
}

impl FrameType {
    /// Types 32..=127: the data field is COBS-encoded with a CRC-32K.
    pub fn is_cobs(self) -> bool {
        (32..=127).contains(&self.0)
    }

    /// Types 128..=255: proprietary frames.
    pub fn is_proprietary(self) -> bool {
        self.0 >= 128
    }

    /// The frame carries an NPDU (BACnet Data, standard or extended).
    pub fn carries_npdu(self) -> bool {
        matches!(self.0, 5 | 6 | 32 | 33)
    }

    /// The sender waits for a reply (BACnet Data Expecting Reply, standard or
    /// extended, and Test_Request): the master that sends one goes to
    /// WAIT_FOR_REPLY.
    pub fn expects_reply(self) -> bool {
        matches!(self.0, 3 | 5 | 32)
    }
}

/// The two preamble octets.
pub const PREAMBLE: [u8; 2] = [0x55, 0xFF];
/// Octets of the header, preamble and HeaderCRC included.
pub const HEADER_LEN: usize = 8;
/// The Destination of a broadcast frame.
pub const BROADCAST: u8 = 255;
/// The longest NPDU a standard BACnet Data frame carries (and the longest
/// data of a Test_Request or Test_Response).
pub const MAX_NPDU_STANDARD: usize = 501;
/// The longest NPDU an extended (COBS-encoded) BACnet Data frame carries.
pub const MAX_NPDU_EXTENDED: usize = 1497;
/// Nmin_COBS_length: the smallest Length of a COBS-encoded frame (one
/// octet of data).
pub const MIN_COBS_LENGTH: u16 = 5;
/// The Length of an extended BACnet Data frame carrying
/// [`MAX_NPDU_EXTENDED`] octets: the largest Length a BACnet frame has.
pub const MAX_EXTENDED_LENGTH: u16 = 1506;

/// Why a frame was refused. [`Frame::decode`] and the receive state machine
/// share it; some variants come only from one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The buffer does not start with the preamble `55 FF` ([`Frame::decode`]).
    NoPreamble,
    /// The buffer ends before the frame does ([`Frame::decode`]).
    Truncated,
    /// The HeaderCRC does not check: the header is unusable.
    BadHeaderCrc,
    /// The DataCRC (or an extended frame's CRC-32K) does not check.
    BadDataCrc,
    /// An extended frame's data field is not a valid COBS encoding (or is too
    /// short to be one).
    BadEncoding,
    /// Length exceeds the receiver's InputBufferSize; its data is skipped.
    FrameTooLong,
    /// Tframe_abort passed without an octet in the middle of a frame.
    FrameAbort,
    /// The UART reported an error (framing, overrun) in the middle of a frame.
    ReceiveError,
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            FrameError::NoPreamble => "no MS/TP preamble",
            FrameError::Truncated => "MS/TP frame truncated",
            FrameError::BadHeaderCrc => "MS/TP header CRC does not check",
            FrameError::BadDataCrc => "MS/TP data CRC does not check",
            FrameError::BadEncoding => "MS/TP extended frame is not valid COBS",
            FrameError::FrameTooLong => "MS/TP frame longer than the input buffer",
            FrameError::FrameAbort => "MS/TP frame aborted: Tframe_abort without an octet",
            FrameError::ReceiveError => "UART error inside an MS/TP frame",
        })
    }
}

impl core::error::Error for FrameError {}

/// The fields of a frame header whose HeaderCRC checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Frame Type.
    pub frame_type: FrameType,
    /// Destination Address (255 for broadcast).
    pub destination: u8,
    /// Source Address.
    pub source: u8,
    /// The Length field as sent (for a COBS-encoded frame, the encoded data
    /// field's size minus two).
    pub length: u16,
}

impl Header {
    /// The eight header octets, preamble and HeaderCRC included.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let [hi, lo] = self.length.to_be_bytes();
        let fields = [self.frame_type.0, self.destination, self.source, hi, lo];
        let crc = header_crc(&fields);
        [PREAMBLE[0], PREAMBLE[1], fields[0], fields[1], fields[2], fields[3], fields[4], crc]
    }

    /// Read the eight header octets at the start of `octets`, checking the
    /// preamble and the HeaderCRC.
    pub fn decode(octets: &[u8]) -> Result<Header, FrameError> {
        let octets = octets.get(..HEADER_LEN).ok_or(FrameError::Truncated)?;
        if octets[..2] != PREAMBLE {
            return Err(FrameError::NoPreamble);
        }
        if !header_crc_ok(&octets[2..7], octets[7]) {
            return Err(FrameError::BadHeaderCrc);
        }
        Ok(Header::from_fields(&[octets[2], octets[3], octets[4], octets[5], octets[6]]))
    }

    /// The header from its five CRC-protected octets.
    pub(crate) fn from_fields(f: &[u8; 5]) -> Header {
        Header {
            frame_type: FrameType(f[0]),
            destination: f[1],
            source: f[2],
            length: u16::from_be_bytes([f[3], f[4]]),
        }
    }

    /// Octets after the header: none when Length is 0, else Length + 2.
    pub fn data_field_len(&self) -> usize {
        if self.length == 0 { 0 } else { usize::from(self.length) + 2 }
    }
}

/// One MS/TP frame, its data borrowed (for an extended frame, the decoded
/// client data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame<'a> {
    /// Frame Type.
    pub frame_type: FrameType,
    /// Destination Address (255 for broadcast).
    pub destination: u8,
    /// Source Address.
    pub source: u8,
    /// The data: for BACnet Data frames the NPDU, for extended frames the
    /// client data before COBS encoding.
    pub data: &'a [u8],
}

impl<'a> Frame<'a> {
    fn no_data(frame_type: FrameType, destination: u8, source: u8) -> Frame<'static> {
        Frame { frame_type, destination, source, data: &[] }
    }

    /// A Token frame.
    pub fn token(destination: u8, source: u8) -> Frame<'static> {
        Frame::no_data(FrameType::TOKEN, destination, source)
    }

    /// A Poll For Master frame.
    pub fn poll_for_master(destination: u8, source: u8) -> Frame<'static> {
        Frame::no_data(FrameType::POLL_FOR_MASTER, destination, source)
    }

    /// A Reply To Poll For Master frame.
    pub fn reply_to_poll_for_master(destination: u8, source: u8) -> Frame<'static> {
        Frame::no_data(FrameType::REPLY_TO_POLL_FOR_MASTER, destination, source)
    }

    /// A Reply Postponed frame.
    pub fn reply_postponed(destination: u8, source: u8) -> Frame<'static> {
        Frame::no_data(FrameType::REPLY_POSTPONED, destination, source)
    }

    /// A Test_Request frame with optional data.
    pub fn test_request(destination: u8, source: u8, data: &'a [u8]) -> Frame<'a> {
        Frame { frame_type: FrameType::TEST_REQUEST, destination, source, data }
    }

    /// A Test_Response frame, echoing a Test_Request's data.
    pub fn test_response(destination: u8, source: u8, data: &'a [u8]) -> Frame<'a> {
        Frame { frame_type: FrameType::TEST_RESPONSE, destination, source, data }
    }

    /// A BACnet Data frame for `npdu`: the standard type for up to 501
    /// octets, the extended (COBS-encoded) type for 502..=1497.
    pub fn bacnet_data(
        destination: u8,
        source: u8,
        npdu: &'a [u8],
        expecting_reply: bool,
    ) -> Result<Frame<'a>, EncodeError> {
        let frame_type = match (npdu.len(), expecting_reply) {
            (0, _) => return Err(EncodeError::OutOfRange("empty NPDU for an MS/TP BACnet Data frame")),
            (..=MAX_NPDU_STANDARD, true) => FrameType::BACNET_DATA_EXPECTING_REPLY,
            (..=MAX_NPDU_STANDARD, false) => FrameType::BACNET_DATA_NOT_EXPECTING_REPLY,
            (..=MAX_NPDU_EXTENDED, true) => FrameType::BACNET_EXTENDED_DATA_EXPECTING_REPLY,
            (..=MAX_NPDU_EXTENDED, false) => FrameType::BACNET_EXTENDED_DATA_NOT_EXPECTING_REPLY,
            _ => return Err(EncodeError::TooLong("NPDU for an MS/TP frame (1497 octets at most)")),
        };
        Ok(Frame { frame_type, destination, source, data: npdu })
    }

    /// The header this frame is sent with (its Length field computed).
    pub fn header(&self) -> Result<Header, EncodeError> {
        let length = if self.frame_type.is_cobs() {
            if self.data.is_empty() {
                return Err(EncodeError::OutOfRange("empty data for a COBS-encoded MS/TP frame"));
            }
            cobs::frame_data_len(self.data) - 2
        } else {
            self.data.len()
        };
        let length = u16::try_from(length).map_err(|_| EncodeError::TooLong("MS/TP Length field"))?;
        Ok(Header { frame_type: self.frame_type, destination: self.destination, source: self.source, length })
    }

    /// Octets [`Frame::encode`] writes (no pad).
    pub fn encoded_len(&self) -> Result<usize, EncodeError> {
        Ok(HEADER_LEN + self.header()?.data_field_len())
    }

    /// Write the frame (no pad) at the start of `out`; returns the octets
    /// written, [`Frame::encoded_len`]. Does not allocate.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let header = self.header()?;
        let len = HEADER_LEN + header.data_field_len();
        let out = out.get_mut(..len).ok_or(EncodeError::TooLong("MS/TP frame for the output buffer"))?;
        out[..HEADER_LEN].copy_from_slice(&header.encode());
        if header.length == 0 {
            return Ok(len);
        }
        let field = &mut out[HEADER_LEN..];
        if self.frame_type.is_cobs() {
            let n = cobs::encode_frame_data(self.data, field)
                .map_err(|_| EncodeError::TooLong("MS/TP frame for the output buffer"))?;
            debug_assert_eq!(n, field.len());
        } else {
            let n = self.data.len();
            field[..n].copy_from_slice(self.data);
            field[n..].copy_from_slice(&data_crc(self.data));
        }
        Ok(len)
    }

    /// The encoded frame in a new vector.
    #[cfg(feature = "alloc")]
    pub fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = vec![0; self.encoded_len()?];
        self.encode(&mut out)?;
        Ok(out)
    }

    /// Read one complete frame from the start of `octets`; returns it and the
    /// octets it took (a pad after it is not taken). An extended frame's data
    /// is decoded into `scratch`, which must hold at least as many octets as
    /// the encoded field; a standard frame's data is borrowed from `octets`.
    pub fn decode(octets: &'a [u8], scratch: &'a mut [u8]) -> Result<(Frame<'a>, usize), FrameError> {
        let header = Header::decode(octets)?;
        let len = HEADER_LEN + header.data_field_len();
        let field = octets.get(HEADER_LEN..len).ok_or(FrameError::Truncated)?;
        let data = if header.frame_type.is_cobs() {
            if header.length == 0 {
                return Err(FrameError::BadEncoding);
            }
            let n = cobs::decode_frame_data(field, scratch).map_err(cobs_error)?;
            &scratch[..n]
        } else if header.length == 0 {
            &[][..]
        } else {
            if !data_crc_ok(field) {
                return Err(FrameError::BadDataCrc);
            }
            &field[..field.len() - 2]
        };
        let frame =
            Frame { frame_type: header.frame_type, destination: header.destination, source: header.source, data };
        Ok((frame, len))
    }
}

/// The frame error a COBS failure amounts to.
pub(crate) fn cobs_error(e: CobsError) -> FrameError {
    match e {
        CobsError::BadCrc => FrameError::BadDataCrc,
        CobsError::Malformed | CobsError::TooShort | CobsError::BufferTooSmall => FrameError::BadEncoding,
    }
}
