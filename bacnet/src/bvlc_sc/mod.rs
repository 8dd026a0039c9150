//! BACnet Secure Connect's virtual link layer, BVLC-SC (Annex AB.2): every
//! message, its header options and data options, as zero-copy views.
//!
//! ```text
//! Function(1) | Control(1) | Message-ID(2) | [Originating VMAC 6] | [Destination VMAC 6]
//!             | [Destination Options] | [Data Options] | payload (the rest of the WebSocket frame)
//! ```
//! Every 16-bit field is big-endian (the Annex's own example and every
//! implementation but one that copies host order). A header option is a
//! marker octet (More 0x80, Must-Understand 0x40, Has-Data 0x20, type in
//! the low five bits), then, with data, a 2-octet length and the data.
//!
//! A message that does not decode gets a [`ScDecodeError`] that says what
//! to answer: the BVLC-Result NAK's error code (class communication) and
//! header marker, and whether the message may be answered at all (never a
//! result, an ACK or a broadcast; never one shorter than its fixed header).
//!
//! The decoder is strict — reserved control bits, VMACs or data options
//! where the Annex has none, payloads of the wrong size, and options it
//! must understand but does not are refused — so that every message it
//! accepts encodes back to exactly the octets it came from
//! ([`BvlcSc::encode`]; fuzzed).
//!
//! Must never: panic or allocate on decode, or accept what it would not
//! encode back the same.

use crate::codec::Reader;
use crate::enums::ErrorCode;
use crate::error::EncodeError;
use alloc::vec::Vec;

/// A BACnet/SC virtual MAC address: 6 octets.
pub type ScVmac = [u8; 6];
/// The Local Broadcast VMAC.
pub const BROADCAST_VMAC: ScVmac = [0xFF; 6];
/// Octets in the fixed header.
pub const FIXED_HEADER_LEN: usize = 4;

/// Control flags (AB.2.2).
mod control {
    pub const ORIGINATING_VMAC: u8 = 0x08;
    pub const DESTINATION_VMAC: u8 = 0x04;
    pub const DESTINATION_OPTIONS: u8 = 0x02;
    pub const DATA_OPTIONS: u8 = 0x01;
    pub const RESERVED: u8 = 0xF0;
}

/// Header option marker bits (AB.2.3).
mod marker {
    pub const MORE: u8 = 0x80;
    pub const MUST_UNDERSTAND: u8 = 0x40;
    pub const HAS_DATA: u8 = 0x20;
    pub const TYPE: u8 = 0x1F;
}

/// Header option types.
pub mod option_type {
    /// Secure Path: the message crossed only secure links (a data option, no data).
    pub const SECURE_PATH: u8 = 1;
    /// Proprietary: vendor ID, the vendor's option type, data.
    pub const PROPRIETARY: u8 = 31;
}

/// BVLC-SC function codes (AB.2.1).
pub mod function {
    #![allow(missing_docs)]
    pub const RESULT: u8 = 0x00;
    pub const ENCAPSULATED_NPDU: u8 = 0x01;
    pub const ADDRESS_RESOLUTION: u8 = 0x02;
    pub const ADDRESS_RESOLUTION_ACK: u8 = 0x03;
    pub const ADVERTISEMENT: u8 = 0x04;
    pub const ADVERTISEMENT_SOLICITATION: u8 = 0x05;
    pub const CONNECT_REQUEST: u8 = 0x06;
    pub const CONNECT_ACCEPT: u8 = 0x07;
    pub const DISCONNECT_REQUEST: u8 = 0x08;
    pub const DISCONNECT_ACK: u8 = 0x09;
    pub const HEARTBEAT_REQUEST: u8 = 0x0A;
    pub const HEARTBEAT_ACK: u8 = 0x0B;
    pub const PROPRIETARY_MESSAGE: u8 = 0x0C;
}

/// One header option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderOption<'a> {
    /// The receiver must understand it or refuse the message.
    pub must_understand: bool,
    /// The option type (the low five bits of the marker).
    pub option_type: u8,
    /// Its data, when it carries any (`Some(&[])` is data of length 0,
    /// which encodes differently from none).
    pub data: Option<&'a [u8]>,
}

impl<'a> HeaderOption<'a> {
    /// The Secure Path data option.
    pub const SECURE_PATH: HeaderOption<'static> =
        HeaderOption { must_understand: true, option_type: option_type::SECURE_PATH, data: None };

    /// For a proprietary option: the vendor ID, the vendor's option type
    /// and its data.
    pub fn proprietary(&self) -> Option<(u16, u8, &'a [u8])> {
        match (self.option_type, self.data) {
            (option_type::PROPRIETARY, Some([v1, v2, t, rest @ ..])) => {
                Some((u16::from_be_bytes([*v1, *v2]), *t, rest))
            }
            _ => None,
        }
    }
}

/// A list of header options, as encoded (checked when decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options<'a> {
    encoded: &'a [u8],
}

impl<'a> Options<'a> {
    /// No options.
    pub const NONE: Options<'static> = Options { encoded: &[] };

    /// Encode `options` (the More bits are set here) into `out`, for
    /// [`Options::from_encoded`].
    pub fn encode(options: &[HeaderOption<'_>], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (i, o) in options.iter().enumerate() {
            if o.option_type == 0 || o.option_type > marker::TYPE {
                return Err(EncodeError::OutOfRange("a header option type (1..=31)"));
            }
            let mut m = o.option_type;
            if i + 1 < options.len() {
                m |= marker::MORE;
            }
            if o.must_understand {
                m |= marker::MUST_UNDERSTAND;
            }
            if o.data.is_some() {
                m |= marker::HAS_DATA;
            }
            out.push(m);
            if let Some(data) = o.data {
                let len = u16::try_from(data.len())
                    .map_err(|_| EncodeError::TooLong("a header option's data (at most 65535 octets)"))?;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(data);
            }
        }
        Ok(())
    }

    /// A list encoded by [`Options::encode`] (or received), checked.
    pub fn from_encoded(encoded: &'a [u8]) -> Result<Options<'a>, ScDecodeError> {
        let mut r = Reader::new(encoded);
        read_options(&mut r, false, ScDecodeError::bare)?;
        if !r.is_empty() {
            return Err(ScDecodeError::bare(
                ErrorCode::HEADER_ENCODING_ERROR,
                0,
                "octets after the last header option",
            ));
        }
        Ok(Options { encoded })
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.encoded.is_empty()
    }

    /// The options, in order.
    pub fn iter(&self) -> impl Iterator<Item = HeaderOption<'a>> + 'a {
        let mut rest = self.encoded;
        core::iter::from_fn(move || {
            let (&m, tail) = rest.split_first()?;
            let (data, tail) = if m & marker::HAS_DATA != 0 {
                let len = usize::from(u16::from_be_bytes([*tail.first()?, *tail.get(1)?]));
                let data = tail.get(2..2 + len)?;
                (Some(data), &tail[2 + len..])
            } else {
                (None, tail)
            };
            rest = if m & marker::MORE != 0 { tail } else { &[] };
            Some(HeaderOption {
                must_understand: m & marker::MUST_UNDERSTAND != 0,
                option_type: m & marker::TYPE,
                data,
            })
        })
    }

    /// The encoded octets.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.encoded
    }
}

/// A hub connector's state in an Advertisement (AB.2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubConnectionStatus(pub u8);

impl HubConnectionStatus {
    /// Not connected to a hub.
    pub const NO_HUB_CONNECTION: Self = Self(0);
    /// Connected to the primary hub.
    pub const CONNECTED_TO_PRIMARY: Self = Self(1);
    /// Connected to the failover hub.
    pub const CONNECTED_TO_FAILOVER: Self = Self(2);
}

/// The fields of a Connect-Request or Connect-Accept (AB.2.10, AB.2.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectInfo {
    /// The sender's VMAC.
    pub vmac: ScVmac,
    /// The sender's device UUID (RFC 4122).
    pub uuid: [u8; 16],
    /// The longest BVLC-SC message it accepts.
    pub max_bvlc_len: u16,
    /// The longest NPDU it accepts.
    pub max_npdu_len: u16,
}

/// A BVLC-Result NAK's error (AB.2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScNak<'a> {
    /// The marker of the header option that caused it, or 0.
    pub header_marker: u8,
    /// The error class (BACnetErrorClass; communication for the Annex's own).
    pub class: u16,
    /// The error code (BACnetErrorCode).
    pub code: u16,
    /// Details, UTF-8, maybe empty.
    pub details: &'a str,
}

/// What a message carries after its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// BVLC-Result (0x00): the function answered, and the NAK if it is one.
    Result {
        /// The function the result is for.
        function: u8,
        /// `None`: ACK.
        nak: Option<ScNak<'a>>,
    },
    /// Encapsulated-NPDU (0x01).
    EncapsulatedNpdu(&'a [u8]),
    /// Address-Resolution (0x02).
    AddressResolution,
    /// Address-Resolution-ACK (0x03): the WebSocket URIs of the node's
    /// direct-connect function, separated by single spaces.
    AddressResolutionAck(&'a str),
    /// Advertisement (0x04).
    Advertisement {
        /// Its hub connector's state.
        hub_status: HubConnectionStatus,
        /// It accepts direct connections.
        accepts_direct_connections: bool,
        /// The longest BVLC-SC message it accepts.
        max_bvlc_len: u16,
        /// The longest NPDU it accepts.
        max_npdu_len: u16,
    },
    /// Advertisement-Solicitation (0x05).
    AdvertisementSolicitation,
    /// Connect-Request (0x06).
    ConnectRequest(ConnectInfo),
    /// Connect-Accept (0x07).
    ConnectAccept(ConnectInfo),
    /// Disconnect-Request (0x08).
    DisconnectRequest,
    /// Disconnect-ACK (0x09).
    DisconnectAck,
    /// Heartbeat-Request (0x0A).
    HeartbeatRequest,
    /// Heartbeat-ACK (0x0B).
    HeartbeatAck,
    /// Proprietary-Message (0x0C).
    Proprietary {
        /// The vendor.
        vendor_id: u16,
        /// The vendor's function.
        function: u8,
        /// Its data.
        data: &'a [u8],
    },
}

impl Payload<'_> {
    /// The function code.
    pub fn function(&self) -> u8 {
        use function::*;
        match self {
            Payload::Result { .. } => RESULT,
            Payload::EncapsulatedNpdu(_) => ENCAPSULATED_NPDU,
            Payload::AddressResolution => ADDRESS_RESOLUTION,
            Payload::AddressResolutionAck(_) => ADDRESS_RESOLUTION_ACK,
            Payload::Advertisement { .. } => ADVERTISEMENT,
            Payload::AdvertisementSolicitation => ADVERTISEMENT_SOLICITATION,
            Payload::ConnectRequest(_) => CONNECT_REQUEST,
            Payload::ConnectAccept(_) => CONNECT_ACCEPT,
            Payload::DisconnectRequest => DISCONNECT_REQUEST,
            Payload::DisconnectAck => DISCONNECT_ACK,
            Payload::HeartbeatRequest => HEARTBEAT_REQUEST,
            Payload::HeartbeatAck => HEARTBEAT_ACK,
            Payload::Proprietary { .. } => PROPRIETARY_MESSAGE,
        }
    }

    /// Whether the function is one of the connection's own
    /// (connect, disconnect, heartbeat), which carry no VMACs.
    fn is_link_control(function: u8) -> bool {
        (function::CONNECT_REQUEST..=function::HEARTBEAT_ACK).contains(&function)
    }
}

/// A BVLC-SC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BvlcSc<'a> {
    /// Matches a request with its answer.
    pub message_id: u16,
    /// The originating VMAC (absent: the connection's peer).
    pub origin: Option<ScVmac>,
    /// The destination VMAC (absent: the connection's peer).
    pub destination: Option<ScVmac>,
    /// Destination options.
    pub destination_options: Options<'a>,
    /// Data options (only on an Encapsulated-NPDU).
    pub data_options: Options<'a>,
    /// What it carries.
    pub payload: Payload<'a>,
}

/// Why a message did not decode, and what to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScDecodeError {
    /// The NAK's error code (class communication, or the standard's
    /// general codes for parameter problems).
    pub code: ErrorCode,
    /// The marker of the option at fault, or 0.
    pub header_marker: u8,
    /// The function, message ID and whether it was a unicast, when the
    /// fixed header and VMACs could be read: what the NAK answers.
    pub answer: Option<(u8, u16, bool)>,
    /// What was wrong.
    pub what: &'static str,
}

impl ScDecodeError {
    fn bare(code: ErrorCode, header_marker: u8, what: &'static str) -> ScDecodeError {
        ScDecodeError { code, header_marker, answer: None, what }
    }

    /// Whether the sender gets a BVLC-Result NAK (AB.2.4: a unicast
    /// request — never a result, an ACK or a broadcast), and for which
    /// function and message ID.
    pub fn nak_for(&self) -> Option<(u8, u16)> {
        use function::*;
        let (f, id, unicast) = self.answer?;
        let answered = matches!(
            f,
            ENCAPSULATED_NPDU
                | ADDRESS_RESOLUTION
                | ADVERTISEMENT_SOLICITATION
                | CONNECT_REQUEST
                | DISCONNECT_REQUEST
                | HEARTBEAT_REQUEST
        ) || f > PROPRIETARY_MESSAGE;
        (answered && unicast).then_some((f, id))
    }
}

impl core::fmt::Display for ScDecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "BVLC-SC: {} ({})", self.what, self.code)
    }
}

/// Read a header option list; `data_options`: Secure Path is allowed.
fn read_options<'a>(
    r: &mut Reader<'a>,
    data_options: bool,
    fail: impl Fn(ErrorCode, u8, &'static str) -> ScDecodeError,
) -> Result<(), ScDecodeError> {
    loop {
        let m = r.u8("a header option").map_err(|_| fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "a header option"))?;
        let option = m & marker::TYPE;
        if m & marker::HAS_DATA != 0 {
            let len = r
                .u16("a header option's length")
                .map_err(|_| fail(ErrorCode::MESSAGE_INCOMPLETE, m, "a header option's length"))?;
            r.take(usize::from(len), "a header option's data")
                .map_err(|_| fail(ErrorCode::MESSAGE_INCOMPLETE, m, "a header option's data"))?;
            if option == option_type::PROPRIETARY && len < 3 {
                return Err(fail(ErrorCode::HEADER_ENCODING_ERROR, m, "a proprietary option shorter than 3 octets"));
            }
        }
        match option {
            0 => return Err(fail(ErrorCode::HEADER_ENCODING_ERROR, m, "header option type 0")),
            option_type::SECURE_PATH if !data_options || m & marker::HAS_DATA != 0 => {
                return Err(fail(
                    ErrorCode::HEADER_ENCODING_ERROR,
                    m,
                    "Secure Path outside the data options, or with data",
                ));
            }
            option_type::PROPRIETARY if m & marker::HAS_DATA == 0 => {
                return Err(fail(ErrorCode::HEADER_ENCODING_ERROR, m, "a proprietary option without data"));
            }
            option_type::SECURE_PATH | option_type::PROPRIETARY => {}
            _ if m & marker::MUST_UNDERSTAND != 0 => {
                return Err(fail(ErrorCode::HEADER_NOT_UNDERSTOOD, m, "a header option that must be understood"));
            }
            _ => {}
        }
        if m & marker::MORE == 0 {
            return Ok(());
        }
    }
}

fn vmac(r: &mut Reader<'_>) -> Option<ScVmac> {
    r.take(6, "a VMAC").ok()?.try_into().ok()
}

impl<'a> BvlcSc<'a> {
    /// Decode one message (one WebSocket binary frame).
    pub fn decode(data: &'a [u8]) -> Result<BvlcSc<'a>, ScDecodeError> {
        use function::*;
        if data.len() < FIXED_HEADER_LEN {
            return Err(ScDecodeError::bare(ErrorCode::MESSAGE_INCOMPLETE, 0, "shorter than the fixed header"));
        }
        let (f, flags, message_id) = (data[0], data[1], u16::from_be_bytes([data[2], data[3]]));
        let mut r = Reader::new(&data[FIXED_HEADER_LEN..]);
        let mut answer = (f, message_id, true);
        let fail = |code, m, what| ScDecodeError { code, header_marker: m, answer: Some(answer), what };
        let origin = if flags & control::ORIGINATING_VMAC != 0 {
            Some(vmac(&mut r).ok_or_else(|| fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "the originating VMAC"))?)
        } else {
            None
        };
        let destination = if flags & control::DESTINATION_VMAC != 0 {
            Some(vmac(&mut r).ok_or_else(|| fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "the destination VMAC"))?)
        } else {
            None
        };
        answer.2 = destination != Some(BROADCAST_VMAC);
        let fail = |code, m, what| ScDecodeError { code, header_marker: m, answer: Some(answer), what };
        if flags & control::RESERVED != 0 {
            return Err(fail(ErrorCode::HEADER_ENCODING_ERROR, 0, "reserved control bits set"));
        }
        let options_at = r.position();
        if flags & control::DESTINATION_OPTIONS != 0 {
            read_options(&mut r, false, fail)?;
        }
        let destination_options = Options { encoded: &r.buffer()[options_at..r.position()] };
        let options_at = r.position();
        if flags & control::DATA_OPTIONS != 0 {
            if f != ENCAPSULATED_NPDU {
                return Err(fail(
                    ErrorCode::INCONSISTENT_PARAMETERS,
                    0,
                    "data options on a message other than an NPDU",
                ));
            }
            read_options(&mut r, true, fail)?;
        }
        let data_options = Options { encoded: &r.buffer()[options_at..r.position()] };
        if f > PROPRIETARY_MESSAGE {
            return Err(fail(ErrorCode::BVLC_FUNCTION_UNKNOWN, 0, "an unknown BVLC-SC function"));
        }
        if Payload::is_link_control(f) && (origin.is_some() || destination.is_some()) {
            return Err(fail(
                ErrorCode::HEADER_ENCODING_ERROR,
                0,
                "a VMAC on a connect, disconnect or heartbeat message",
            ));
        }
        let rest = r.take_rest();
        let none = |p: Payload<'a>| {
            if rest.is_empty() {
                Ok(p)
            } else {
                Err(fail(ErrorCode::UNEXPECTED_DATA, 0, "a payload where none belongs"))
            }
        };
        let exactly = |n: usize| {
            if rest.len() < n {
                Err(fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "a payload shorter than its fields"))
            } else if rest.len() > n {
                Err(fail(ErrorCode::UNEXPECTED_DATA, 0, "octets after the payload's fields"))
            } else {
                Ok(())
            }
        };
        let u16_at = |i: usize| u16::from_be_bytes([rest[i], rest[i + 1]]);
        let payload = match f {
            RESULT => match rest {
                [function, 0] => Payload::Result { function: *function, nak: None },
                [_, 0, ..] => return Err(fail(ErrorCode::UNEXPECTED_DATA, 0, "octets after a result's ACK")),
                [function, 1, marker, c1, c2, e1, e2, details @ ..] => {
                    let details = core::str::from_utf8(details).map_err(|_| {
                        fail(ErrorCode::INCONSISTENT_PARAMETERS, 0, "a result's details that are not UTF-8")
                    })?;
                    Payload::Result {
                        function: *function,
                        nak: Some(ScNak {
                            header_marker: *marker,
                            class: u16::from_be_bytes([*c1, *c2]),
                            code: u16::from_be_bytes([*e1, *e2]),
                            details,
                        }),
                    }
                }
                [_, 1, ..] | [_] | [] => {
                    return Err(fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "a result shorter than its fields"));
                }
                [_, _, ..] => {
                    return Err(fail(ErrorCode::PARAMETER_OUT_OF_RANGE, 0, "a result code other than 0 and 1"));
                }
            },
            ENCAPSULATED_NPDU if rest.is_empty() => {
                return Err(fail(ErrorCode::PAYLOAD_EXPECTED, 0, "an Encapsulated-NPDU without an NPDU"));
            }
            ENCAPSULATED_NPDU => Payload::EncapsulatedNpdu(rest),
            ADDRESS_RESOLUTION => none(Payload::AddressResolution)?,
            ADDRESS_RESOLUTION_ACK => Payload::AddressResolutionAck(
                core::str::from_utf8(rest)
                    .map_err(|_| fail(ErrorCode::INCONSISTENT_PARAMETERS, 0, "WebSocket URIs that are not UTF-8"))?,
            ),
            ADVERTISEMENT => {
                exactly(6)?;
                if rest[0] > 2 || rest[1] > 1 {
                    return Err(fail(ErrorCode::PARAMETER_OUT_OF_RANGE, 0, "an Advertisement's status or flag"));
                }
                Payload::Advertisement {
                    hub_status: HubConnectionStatus(rest[0]),
                    accepts_direct_connections: rest[1] == 1,
                    max_bvlc_len: u16_at(2),
                    max_npdu_len: u16_at(4),
                }
            }
            ADVERTISEMENT_SOLICITATION => none(Payload::AdvertisementSolicitation)?,
            CONNECT_REQUEST | CONNECT_ACCEPT => {
                exactly(26)?;
                let info = ConnectInfo {
                    vmac: rest[..6].try_into().expect("six octets"),
                    uuid: rest[6..22].try_into().expect("sixteen octets"),
                    max_bvlc_len: u16_at(22),
                    max_npdu_len: u16_at(24),
                };
                if info.vmac == BROADCAST_VMAC || info.vmac == [0; 6] {
                    return Err(fail(
                        ErrorCode::PARAMETER_OUT_OF_RANGE,
                        0,
                        "a connecting VMAC of all zeros or all ones",
                    ));
                }
                if f == CONNECT_REQUEST { Payload::ConnectRequest(info) } else { Payload::ConnectAccept(info) }
            }
            DISCONNECT_REQUEST => none(Payload::DisconnectRequest)?,
            DISCONNECT_ACK => none(Payload::DisconnectAck)?,
            HEARTBEAT_REQUEST => none(Payload::HeartbeatRequest)?,
            HEARTBEAT_ACK => none(Payload::HeartbeatAck)?,
            _ => match rest {
                [v1, v2, function, data @ ..] => {
                    Payload::Proprietary { vendor_id: u16::from_be_bytes([*v1, *v2]), function: *function, data }
                }
                _ => return Err(fail(ErrorCode::MESSAGE_INCOMPLETE, 0, "a proprietary message shorter than 3 octets")),
            },
        };
        Ok(BvlcSc { message_id, origin, destination, destination_options, data_options, payload })
    }

    /// Encode the message.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let mut flags = 0;
        if self.origin.is_some() {
            flags |= control::ORIGINATING_VMAC;
        }
        if self.destination.is_some() {
            flags |= control::DESTINATION_VMAC;
        }
        if !self.destination_options.is_empty() {
            flags |= control::DESTINATION_OPTIONS;
        }
        if !self.data_options.is_empty() {
            flags |= control::DATA_OPTIONS;
        }
        out.push(self.payload.function());
        out.push(flags);
        out.extend_from_slice(&self.message_id.to_be_bytes());
        for v in [self.origin, self.destination].into_iter().flatten() {
            out.extend_from_slice(&v);
        }
        out.extend_from_slice(self.destination_options.as_bytes());
        out.extend_from_slice(self.data_options.as_bytes());
        match self.payload {
            Payload::Result { function, nak: None } => out.extend_from_slice(&[function, 0]),
            Payload::Result { function, nak: Some(n) } => {
                out.extend_from_slice(&[function, 1, n.header_marker]);
                out.extend_from_slice(&n.class.to_be_bytes());
                out.extend_from_slice(&n.code.to_be_bytes());
                out.extend_from_slice(n.details.as_bytes());
            }
            Payload::EncapsulatedNpdu(npdu) => {
                if npdu.is_empty() {
                    return Err(EncodeError::Inconsistent("an Encapsulated-NPDU without an NPDU"));
                }
                out.extend_from_slice(npdu)
            }
            Payload::AddressResolutionAck(uris) => out.extend_from_slice(uris.as_bytes()),
            Payload::Advertisement { hub_status, accepts_direct_connections, max_bvlc_len, max_npdu_len } => {
                out.extend_from_slice(&[hub_status.0, u8::from(accepts_direct_connections)]);
                out.extend_from_slice(&max_bvlc_len.to_be_bytes());
                out.extend_from_slice(&max_npdu_len.to_be_bytes());
            }
            Payload::ConnectRequest(c) | Payload::ConnectAccept(c) => {
                out.extend_from_slice(&c.vmac);
                out.extend_from_slice(&c.uuid);
                out.extend_from_slice(&c.max_bvlc_len.to_be_bytes());
                out.extend_from_slice(&c.max_npdu_len.to_be_bytes());
            }
            Payload::Proprietary { vendor_id, function, data } => {
                out.extend_from_slice(&vendor_id.to_be_bytes());
                out.push(function);
                out.extend_from_slice(data);
            }
            Payload::AddressResolution
            | Payload::AdvertisementSolicitation
            | Payload::DisconnectRequest
            | Payload::DisconnectAck
            | Payload::HeartbeatRequest
            | Payload::HeartbeatAck => {}
        }
        Ok(())
    }

    /// A BVLC-Result NAK answering `error` (when [`ScDecodeError::nak_for`]
    /// says one is due), from `origin` when the link needs it.
    pub fn nak(error: &ScDecodeError, details: &'a str) -> Option<BvlcSc<'a>> {
        let (function, message_id) = error.nak_for()?;
        Some(BvlcSc {
            message_id,
            origin: None,
            destination: None,
            destination_options: Options::NONE,
            data_options: Options::NONE,
            payload: Payload::Result {
                function,
                nak: Some(ScNak {
                    header_marker: error.header_marker,
                    class: crate::enums::ErrorClass::COMMUNICATION.0 as u16,
                    code: error.code.0 as u16,
                    details,
                }),
            },
        })
    }
}

#[cfg(test)]
mod tests;
