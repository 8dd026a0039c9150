//! Application-layer PDUs (Clause 20.1): the eight PDU types with every
//! header field.
//!
//! [`Apdu`] is a validated view that borrows its service body from the
//! received buffer: decoding copies nothing. Service bodies are decoded by the
//! codecs in [`crate::services`].
//!
//! ```text
//! Confirmed-Request  0000 SEG MOR SA 0 | 0 maxsegs(3) maxapdu(4) | invoke-id | [seq | window] | service | body
//! Unconfirmed-Req    0001 0000         | service | body
//! SimpleACK          0010 0000         | invoke-id | service
//! ComplexACK         0011 SEG MOR 0 0  | invoke-id | [seq | window] | service | body
//! SegmentACK         0100 00 NAK SRV   | invoke-id | seq | actual-window
//! Error              0101 0000         | invoke-id | service | error body
//! Reject             0110 0000         | invoke-id | reject-reason
//! Abort              0111 000 SRV      | invoke-id | abort-reason
//! ```
//! Reserved header bits are ignored on receipt and sent as zero.

use crate::codec::Reader;
use crate::enums::{AbortReason, ConfirmedServiceChoice, RejectReason, UnconfirmedServiceChoice};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// The "maximum segments accepted" field (3 bits, Clause 20.1.2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MaxSegments(u8);

impl MaxSegments {
    /// Unspecified.
    pub const UNSPECIFIED: MaxSegments = MaxSegments(0);
    /// More than 64 segments.
    pub const MORE_THAN_64: MaxSegments = MaxSegments(7);

    /// From the 3-bit code (higher bits are masked).
    pub fn from_code(code: u8) -> Self {
        MaxSegments(code & 0x07)
    }

    /// The 3-bit code.
    pub fn code(self) -> u8 {
        self.0
    }

    /// The smallest code that accepts at least `n` segments.
    pub fn at_least(n: u32) -> Self {
        match n {
            0 => Self::UNSPECIFIED,
            1..=2 => MaxSegments(1),
            3..=4 => MaxSegments(2),
            5..=8 => MaxSegments(3),
            9..=16 => MaxSegments(4),
            17..=32 => MaxSegments(5),
            33..=64 => MaxSegments(6),
            _ => Self::MORE_THAN_64,
        }
    }

    /// The number of segments, `None` for "unspecified" and for "more than 64".
    pub fn count(self) -> Option<u32> {
        match self.0 {
            1..=6 => Some(1 << self.0),
            _ => None,
        }
    }
}

/// The "maximum APDU length accepted" field (4 bits, Clause 20.1.2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MaxApdu(u8);

impl MaxApdu {
    /// 50 octets (MS/TP minimum).
    pub const UP_TO_50: MaxApdu = MaxApdu(0);
    /// 128 octets.
    pub const UP_TO_128: MaxApdu = MaxApdu(1);
    /// 206 octets (LonTalk).
    pub const UP_TO_206: MaxApdu = MaxApdu(2);
    /// 480 octets (ARCNET, MS/TP).
    pub const UP_TO_480: MaxApdu = MaxApdu(3);
    /// 1024 octets.
    pub const UP_TO_1024: MaxApdu = MaxApdu(4);
    /// 1476 octets (BACnet/IP).
    pub const UP_TO_1476: MaxApdu = MaxApdu(5);

    /// From the 4-bit code (higher bits are masked).
    pub fn from_code(code: u8) -> Self {
        MaxApdu(code & 0x0F)
    }

    /// The 4-bit code.
    pub fn code(self) -> u8 {
        self.0
    }

    /// The largest code whose length does not exceed `octets`.
    pub fn at_most(octets: u32) -> Self {
        match octets {
            0..=127 => Self::UP_TO_50,
            128..=205 => Self::UP_TO_128,
            206..=479 => Self::UP_TO_206,
            480..=1023 => Self::UP_TO_480,
            1024..=1475 => Self::UP_TO_1024,
            _ => Self::UP_TO_1476,
        }
    }

    /// Octets; reserved codes (6..=15) are read as the largest defined, 1476,
    /// which is what a conservative sender can rely on.
    pub fn octets(self) -> u32 {
        match self.0 {
            0 => 50,
            1 => 128,
            2 => 206,
            3 => 480,
            4 => 1024,
            _ => 1476,
        }
    }
}

/// Segmentation fields present when the SEG bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentInfo {
    /// Sequence number of this segment.
    pub sequence_number: u8,
    /// Proposed window size (1..=127).
    pub proposed_window_size: u8,
    /// More segments follow.
    pub more_follows: bool,
}

/// A BACnet-Confirmed-Request-PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfirmedRequest<'a> {
    /// Present when this is one segment of a segmented request.
    pub segment: Option<SegmentInfo>,
    /// The sender accepts a segmented response.
    pub segmented_response_accepted: bool,
    /// Maximum segments the sender accepts.
    pub max_segments: MaxSegments,
    /// Maximum APDU length the sender accepts.
    pub max_apdu: MaxApdu,
    /// Invoke ID.
    pub invoke_id: u8,
    /// Service choice.
    pub service: ConfirmedServiceChoice,
    /// Service request body (or this segment of it).
    pub body: &'a [u8],
}

/// Octets in front of an unsegmented ComplexACK's body.
pub const COMPLEX_ACK_HEADER: usize = 3;

/// The header of an unsegmented ComplexACK (what [`Apdu::encode`] writes
/// before the body), for answers encoded in place behind it.
pub fn complex_ack_header(invoke_id: u8, service: ConfirmedServiceChoice) -> [u8; COMPLEX_ACK_HEADER] {
    [pdu_type::COMPLEX_ACK << 4, invoke_id, service.0]
}

/// A BACnet-ComplexACK-PDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComplexAck<'a> {
    /// Present when this is one segment of a segmented ack.
    pub segment: Option<SegmentInfo>,
    /// Invoke ID.
    pub invoke_id: u8,
    /// Service ack choice.
    pub service: ConfirmedServiceChoice,
    /// Service ack body (or this segment of it).
    pub body: &'a [u8],
}

/// An application PDU, borrowing its body from the received octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apdu<'a> {
    /// Confirmed-Request.
    ConfirmedRequest(ConfirmedRequest<'a>),
    /// Unconfirmed-Request.
    UnconfirmedRequest {
        /// Service choice.
        service: UnconfirmedServiceChoice,
        /// Service request body.
        body: &'a [u8],
    },
    /// SimpleACK.
    SimpleAck {
        /// Invoke ID.
        invoke_id: u8,
        /// Service ack choice.
        service: ConfirmedServiceChoice,
    },
    /// ComplexACK.
    ComplexAck(ComplexAck<'a>),
    /// SegmentACK.
    SegmentAck {
        /// Negative acknowledgement: a segment was missing.
        negative: bool,
        /// Sent by the server (true) or the client (false).
        server: bool,
        /// Invoke ID.
        invoke_id: u8,
        /// Sequence number of the last segment received in order.
        sequence_number: u8,
        /// Actual window size (1..=127).
        actual_window_size: u8,
    },
    /// Error.
    Error {
        /// Invoke ID.
        invoke_id: u8,
        /// The service that failed.
        service: ConfirmedServiceChoice,
        /// The error body (see `services::error`).
        body: &'a [u8],
    },
    /// Reject.
    Reject {
        /// Invoke ID.
        invoke_id: u8,
        /// Why.
        reason: RejectReason,
    },
    /// Abort.
    Abort {
        /// Sent by the server (true) or the client (false).
        server: bool,
        /// Invoke ID.
        invoke_id: u8,
        /// Why.
        reason: AbortReason,
    },
}

/// PDU type numbers (high nibble of the first octet).
pub mod pdu_type {
    #![allow(missing_docs)]
    pub const CONFIRMED_REQUEST: u8 = 0;
    pub const UNCONFIRMED_REQUEST: u8 = 1;
    pub const SIMPLE_ACK: u8 = 2;
    pub const COMPLEX_ACK: u8 = 3;
    pub const SEGMENT_ACK: u8 = 4;
    pub const ERROR: u8 = 5;
    pub const REJECT: u8 = 6;
    pub const ABORT: u8 = 7;
}

impl<'a> Apdu<'a> {
    /// Decode an APDU. Unknown PDU types (8..=15) are `InvalidTag`; the
    /// standard has the receiver drop them.
    pub fn decode(data: &'a [u8]) -> Result<Apdu<'a>, DecodeError> {
        let mut r = Reader::new(data);
        let first = r.u8("the PDU type")?;
        let apdu = match first >> 4 {
            pdu_type::CONFIRMED_REQUEST => {
                let seg = first & 0x08 != 0;
                let mor = first & 0x04 != 0;
                let sa = first & 0x02 != 0;
                let sizes = r.u8("max-segments and max-APDU")?;
                let invoke_id = r.u8("the invoke ID")?;
                let segment = if seg {
                    let sequence_number = r.u8("the sequence number")?;
                    let proposed_window_size = r.u8("the proposed window size")?;
                    Some(SegmentInfo { sequence_number, proposed_window_size, more_follows: mor })
                } else {
                    None
                };
                let service = ConfirmedServiceChoice(r.u8("the service choice")?);
                Apdu::ConfirmedRequest(ConfirmedRequest {
                    segment,
                    segmented_response_accepted: sa,
                    max_segments: MaxSegments::from_code(sizes >> 4),
                    max_apdu: MaxApdu::from_code(sizes),
                    invoke_id,
                    service,
                    body: r.take_rest(),
                })
            }
            pdu_type::UNCONFIRMED_REQUEST => {
                let service = UnconfirmedServiceChoice(r.u8("the service choice")?);
                Apdu::UnconfirmedRequest { service, body: r.take_rest() }
            }
            pdu_type::SIMPLE_ACK => {
                let invoke_id = r.u8("the invoke ID")?;
                let service = ConfirmedServiceChoice(r.u8("the service ack choice")?);
                r.expect_end()?;
                Apdu::SimpleAck { invoke_id, service }
            }
            pdu_type::COMPLEX_ACK => {
                let seg = first & 0x08 != 0;
                let mor = first & 0x04 != 0;
                let invoke_id = r.u8("the invoke ID")?;
                let segment = if seg {
                    let sequence_number = r.u8("the sequence number")?;
                    let proposed_window_size = r.u8("the proposed window size")?;
                    Some(SegmentInfo { sequence_number, proposed_window_size, more_follows: mor })
                } else {
                    None
                };
                let service = ConfirmedServiceChoice(r.u8("the service ack choice")?);
                Apdu::ComplexAck(ComplexAck { segment, invoke_id, service, body: r.take_rest() })
            }
            pdu_type::SEGMENT_ACK => {
                let invoke_id = r.u8("the invoke ID")?;
                let sequence_number = r.u8("the sequence number")?;
                let actual_window_size = r.u8("the actual window size")?;
                r.expect_end()?;
                Apdu::SegmentAck {
                    negative: first & 0x02 != 0,
                    server: first & 0x01 != 0,
                    invoke_id,
                    sequence_number,
                    actual_window_size,
                }
            }
            pdu_type::ERROR => {
                let invoke_id = r.u8("the invoke ID")?;
                let service = ConfirmedServiceChoice(r.u8("the error choice")?);
                Apdu::Error { invoke_id, service, body: r.take_rest() }
            }
            pdu_type::REJECT => {
                let invoke_id = r.u8("the invoke ID")?;
                let reason = RejectReason(r.u8("the reject reason")?);
                r.expect_end()?;
                Apdu::Reject { invoke_id, reason }
            }
            pdu_type::ABORT => {
                let invoke_id = r.u8("the invoke ID")?;
                let reason = AbortReason(r.u8("the abort reason")?);
                r.expect_end()?;
                Apdu::Abort { server: first & 0x01 != 0, invoke_id, reason }
            }
            _ => return Err(DecodeError::InvalidTag { at: 0, what: "a PDU type 0..=7" }),
        };
        Ok(apdu)
    }

    /// At least the encoded length: the body plus the longest header (a
    /// segmented Confirmed-Request's six octets), for sizing a buffer once.
    pub fn encoded_len_bound(&self) -> usize {
        const LONGEST_HEADER: usize = 6;
        let body = match self {
            Apdu::ConfirmedRequest(c) => c.body.len(),
            Apdu::UnconfirmedRequest { body, .. } | Apdu::Error { body, .. } => body.len(),
            Apdu::ComplexAck(c) => c.body.len(),
            _ => 0,
        };
        LONGEST_HEADER + body
    }

    /// Append the encoded APDU.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Apdu::ConfirmedRequest(c) => {
                let mut first = pdu_type::CONFIRMED_REQUEST << 4;
                if let Some(s) = c.segment {
                    first |= 0x08;
                    if s.more_follows {
                        first |= 0x04;
                    }
                }
                if c.segmented_response_accepted {
                    first |= 0x02;
                }
                out.push(first);
                out.push((c.max_segments.code() << 4) | c.max_apdu.code());
                out.push(c.invoke_id);
                if let Some(s) = c.segment {
                    out.push(s.sequence_number);
                    out.push(s.proposed_window_size);
                }
                out.push(c.service.0);
                out.extend_from_slice(c.body);
            }
            Apdu::UnconfirmedRequest { service, body } => {
                out.push(pdu_type::UNCONFIRMED_REQUEST << 4);
                out.push(service.0);
                out.extend_from_slice(body);
            }
            Apdu::SimpleAck { invoke_id, service } => {
                out.extend_from_slice(&[pdu_type::SIMPLE_ACK << 4, *invoke_id, service.0]);
            }
            Apdu::ComplexAck(c) => {
                let mut first = pdu_type::COMPLEX_ACK << 4;
                if let Some(s) = c.segment {
                    first |= 0x08;
                    if s.more_follows {
                        first |= 0x04;
                    }
                }
                out.push(first);
                out.push(c.invoke_id);
                if let Some(s) = c.segment {
                    out.push(s.sequence_number);
                    out.push(s.proposed_window_size);
                }
                out.push(c.service.0);
                out.extend_from_slice(c.body);
            }
            Apdu::SegmentAck { negative, server, invoke_id, sequence_number, actual_window_size } => {
                let first = (pdu_type::SEGMENT_ACK << 4) | ((*negative as u8) << 1) | (*server as u8);
                out.extend_from_slice(&[first, *invoke_id, *sequence_number, *actual_window_size]);
            }
            Apdu::Error { invoke_id, service, body } => {
                out.extend_from_slice(&[pdu_type::ERROR << 4, *invoke_id, service.0]);
                out.extend_from_slice(body);
            }
            Apdu::Reject { invoke_id, reason } => {
                out.extend_from_slice(&[pdu_type::REJECT << 4, *invoke_id, reason.0]);
            }
            Apdu::Abort { server, invoke_id, reason } => {
                out.extend_from_slice(&[(pdu_type::ABORT << 4) | (*server as u8), *invoke_id, reason.0]);
            }
        }
    }

    /// The invoke ID, for every PDU type that has one.
    pub fn invoke_id(&self) -> Option<u8> {
        match self {
            Apdu::ConfirmedRequest(c) => Some(c.invoke_id),
            Apdu::UnconfirmedRequest { .. } => None,
            Apdu::SimpleAck { invoke_id, .. }
            | Apdu::SegmentAck { invoke_id, .. }
            | Apdu::Error { invoke_id, .. }
            | Apdu::Reject { invoke_id, .. }
            | Apdu::Abort { invoke_id, .. } => Some(*invoke_id),
            Apdu::ComplexAck(c) => Some(c.invoke_id),
        }
    }
}
