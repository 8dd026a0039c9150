//! Typed client errors: a caller matches on what went wrong, never parses a
//! string.

use bacnet::enums::{AbortReason, ErrorClass, ErrorCode, RejectReason};
use bacnet::services::ObjectPropertyReference;

/// Why a confirmed request did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The device answered with a BACnet Error PDU.
    #[error("BACnet error {class}: {code}")]
    Bacnet {
        /// Error class.
        class: ErrorClass,
        /// Error code.
        code: ErrorCode,
    },
    /// A WritePropertyMultiple failed at `first_failed`.
    #[error("BACnet error {class}: {code} (first failed write: {first_failed})")]
    WriteFailed {
        /// Error class.
        class: ErrorClass,
        /// Error code.
        code: ErrorCode,
        /// The first write that failed; the ones before it were applied.
        first_failed: ObjectPropertyReference,
    },
    /// A SubscribeCOVPropertyMultiple was refused at `first_failed`; none of
    /// its references was subscribed.
    #[error("BACnet error {class}: {code} (first failed subscription: {first_failed})")]
    SubscriptionFailed {
        /// Error class.
        class: ErrorClass,
        /// Error code.
        code: ErrorCode,
        /// The reference that failed.
        first_failed: ObjectPropertyReference,
    },
    /// A CreateObject was refused; `first_failed` is the position (from 1)
    /// of the initial value that failed, 0 when the refusal is not about
    /// one.
    #[error("BACnet error {class}: {code} (first failed initial value: {first_failed})")]
    CreateFailed {
        /// Error class.
        class: ErrorClass,
        /// Error code.
        code: ErrorCode,
        /// The initial value that failed, from 1; 0 for none.
        first_failed: u32,
    },
    /// The device rejected the request.
    #[error("request rejected: {0}")]
    Reject(RejectReason),
    /// The transaction was aborted by the device (`from_server`) or by us.
    #[error("request aborted by the {}: {reason}", if *.from_server { "device" } else { "client" })]
    Abort {
        /// Why.
        reason: AbortReason,
        /// The device sent the Abort.
        from_server: bool,
    },
    /// No answer after the APDU timeout and every retry.
    #[error("no answer after {attempts} attempts ({timeout_ms} ms each)")]
    Timeout {
        /// Transmissions made.
        attempts: u32,
        /// APDU timeout per attempt.
        timeout_ms: u64,
    },
    /// The device answered with something that does not decode.
    #[error("malformed reply from the device: {0}")]
    MalformedReply(bacnet::DecodeError),
    /// The device answered with a reply to a different request.
    #[error("unexpected reply from the device: {0}")]
    UnexpectedReply(&'static str),
    /// The request could not be queued (too many waiting for this device).
    #[error("too many requests queued for this device")]
    QueueFull,
    /// The request is longer than the device's Max-APDU and the device
    /// does not accept segmented requests, or needs more segments than it
    /// accepts.
    #[error("request too long for the device: {0}")]
    TooLong(bacnet::tsm::StartError),
    /// The request cannot be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(bacnet::EncodeError),
    /// The request could not be sent (e.g. no route from the bound address).
    #[error("cannot send: {0}")]
    Io(#[source] std::io::Error),
    /// The client has shut down.
    #[error("the client has shut down")]
    Closed,
    /// A router on the way answered Reject-Message-To-Network (Clause
    /// 6.4.4) for the device's network: a routing policy's refusal
    /// (security-error), an unknown network, a busy router, ….
    #[error("refused by the router at {router}: Reject-Message-To-Network for network {net} ({reason})")]
    NetworkRejected {
        /// The router that sent it (its link address).
        router: String,
        /// The network it refuses to reach.
        net: u16,
        /// Its reason.
        reason: bacnet::enums::RejectMessageReason,
    },
}

impl ClientError {
    /// The error class and code, when the device answered with an Error.
    pub fn bacnet_error(&self) -> Option<(ErrorClass, ErrorCode)> {
        match self {
            ClientError::Bacnet { class, code }
            | ClientError::WriteFailed { class, code, .. }
            | ClientError::SubscriptionFailed { class, code, .. } => Some((*class, *code)),
            _ => None,
        }
    }

    /// The device refused the request because it is overloaded (Abort
    /// out-of-resources, what admission control answers): worth retrying
    /// later, unlike other aborts.
    pub fn is_admission_refusal(&self) -> bool {
        matches!(self, ClientError::Abort { reason: AbortReason::OUT_OF_RESOURCES, from_server: true })
    }
}
