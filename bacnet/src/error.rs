//! Typed decode and encode errors, and the one place where a decode failure
//! becomes the protocol's answer.
//!
//! Every decoder in this crate returns [`DecodeError`]. Each variant names what
//! was wrong and at which octet (relative to the buffer the decoder was given),
//! so an operator reading a log can find the fault in a capture. The mapping to
//! a BACnet `Reject` reason lives in [`DecodeError::reject_reason`] and nowhere
//! else, following the choices bacnet-stack and the standard's Clause 18.8 make:
//!
//! | failure | Reject reason |
//! |---|---|
//! | data ends where a required parameter is expected | missing-required-parameter |
//! | a tag with the wrong number or class, or a malformed tag header | invalid-tag |
//! | an application tag of the wrong datatype | invalid-parameter-data-type |
//! | a value outside its range (instance > 4,194,303, an Unsigned wider than its field) | parameter-out-of-range |
//! | octets left after the last parameter | too-many-arguments |
//! | an enumeration value the service forbids to be unknown | undefined-enumeration |
//! | parameters present together that exclude each other | inconsistent-parameters |
//! | nesting or size beyond the decoder's bound | buffer-overflow |
//! | a service choice this crate does not know | unrecognized-service |

use crate::enums::RejectReason;
use core::fmt;

/// Why a decoder refused its input. `at` is an octet offset into the buffer the
/// decoder was handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The data ended where `what` was expected.
    Truncated {
        /// Offset of the end of the data.
        at: usize,
        /// What the decoder expected to find.
        what: &'static str,
    },
    /// A tag of the wrong number or class, or a malformed tag header.
    InvalidTag {
        /// Offset of the tag.
        at: usize,
        /// What the decoder expected to find.
        what: &'static str,
    },
    /// An application-tagged value of the wrong datatype.
    WrongDataType {
        /// Offset of the tag.
        at: usize,
        /// What the decoder expected to find.
        what: &'static str,
    },
    /// A value outside the range its field allows.
    OutOfRange {
        /// Offset of the value.
        at: usize,
        /// Which field.
        what: &'static str,
    },
    /// Octets remain after the last parameter.
    TrailingData {
        /// Offset of the first unexpected octet.
        at: usize,
    },
    /// An enumeration value the production does not allow to be unknown.
    UndefinedEnumeration {
        /// Offset of the value.
        at: usize,
        /// Which enumeration.
        what: &'static str,
    },
    /// Parameters that are inconsistent with each other.
    Inconsistent {
        /// Offset of the offending parameter.
        at: usize,
        /// What is inconsistent.
        what: &'static str,
    },
    /// Nesting deeper, or more elements, than the decoder's bound.
    LimitExceeded {
        /// Offset where the bound was hit.
        at: usize,
        /// Which bound.
        what: &'static str,
    },
    /// A confirmed or unconfirmed service choice this crate does not implement.
    UnrecognizedService {
        /// The service choice octet.
        choice: u8,
    },
}

impl DecodeError {
    /// The BACnet Reject reason a server answers a confirmed request with when
    /// its service parameters fail to decode this way.
    pub fn reject_reason(&self) -> RejectReason {
        match self {
            DecodeError::Truncated { .. } => RejectReason::MISSING_REQUIRED_PARAMETER,
            DecodeError::InvalidTag { .. } => RejectReason::INVALID_TAG,
            DecodeError::WrongDataType { .. } => RejectReason::INVALID_PARAMETER_DATA_TYPE,
            DecodeError::OutOfRange { .. } => RejectReason::PARAMETER_OUT_OF_RANGE,
            DecodeError::TrailingData { .. } => RejectReason::TOO_MANY_ARGUMENTS,
            DecodeError::UndefinedEnumeration { .. } => RejectReason::UNDEFINED_ENUMERATION,
            DecodeError::Inconsistent { .. } => RejectReason::INCONSISTENT_PARAMETERS,
            DecodeError::LimitExceeded { .. } => RejectReason::BUFFER_OVERFLOW,
            DecodeError::UnrecognizedService { .. } => RejectReason::UNRECOGNIZED_SERVICE,
        }
    }

    /// The same error with its offset moved by `base`, for errors raised by a
    /// decoder that was handed a sub-slice.
    pub fn offset_by(self, base: usize) -> Self {
        use DecodeError::*;
        match self {
            Truncated { at, what } => Truncated { at: at + base, what },
            InvalidTag { at, what } => InvalidTag { at: at + base, what },
            WrongDataType { at, what } => WrongDataType { at: at + base, what },
            OutOfRange { at, what } => OutOfRange { at: at + base, what },
            TrailingData { at } => TrailingData { at: at + base },
            UndefinedEnumeration { at, what } => UndefinedEnumeration { at: at + base, what },
            Inconsistent { at, what } => Inconsistent { at: at + base, what },
            LimitExceeded { at, what } => LimitExceeded { at: at + base, what },
            UnrecognizedService { choice } => UnrecognizedService { choice },
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { at, what } => {
                write!(f, "data ends at octet {at} where {what} was expected")
            }
            DecodeError::InvalidTag { at, what } => {
                write!(f, "invalid tag at octet {at}: expected {what}")
            }
            DecodeError::WrongDataType { at, what } => {
                write!(f, "wrong datatype at octet {at}: expected {what}")
            }
            DecodeError::OutOfRange { at, what } => {
                write!(f, "{what} out of range at octet {at}")
            }
            DecodeError::TrailingData { at } => {
                write!(f, "unexpected octets after the last parameter, from octet {at}")
            }
            DecodeError::UndefinedEnumeration { at, what } => {
                write!(f, "undefined {what} value at octet {at}")
            }
            DecodeError::Inconsistent { at, what } => {
                write!(f, "inconsistent parameters at octet {at}: {what}")
            }
            DecodeError::LimitExceeded { at, what } => {
                write!(f, "{what} exceeded at octet {at}")
            }
            DecodeError::UnrecognizedService { choice } => {
                write!(f, "unrecognized service choice {choice}")
            }
        }
    }
}

impl core::error::Error for DecodeError {}

/// Why an encoder refused its input. Encoders only fail for values that cannot
/// be represented on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// A value exceeds the range of its wire field (e.g. an instance number
    /// above 4,194,303 or a network number of 65,535 as a destination).
    OutOfRange(&'static str),
    /// A length that does not fit the field that carries it.
    TooLong(&'static str),
    /// Fields that cannot appear together.
    Inconsistent(&'static str),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::OutOfRange(what) => write!(f, "{what} out of range for its wire field"),
            EncodeError::TooLong(what) => write!(f, "{what} too long for its wire field"),
            EncodeError::Inconsistent(what) => write!(f, "inconsistent fields: {what}"),
        }
    }
}

impl core::error::Error for EncodeError {}
