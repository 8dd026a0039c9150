//! BACnet enumerations (ASHRAE 135 Clause 21) as open newtypes.
//!
//! BACnet enumerations are open: vendors add proprietary values and newer
//! revisions add standard ones. A Rust `enum` would drop or reject them, so
//! each enumeration is a newtype over its wire integer with associated
//! constants; unknown values decode, round-trip and print as their number.
//! Each file holds one enumeration (or a few small related ones), with the
//! standard's names.

pub(crate) mod macros;

mod error_code;
mod network;
mod object_type;
mod pdu;
mod property_id;
mod services;
mod small;
mod units;

pub use error_code::ErrorCode;
pub use network::{BvlcFunction, BvlcResultCode, NetworkMessageType, RejectMessageReason};
pub use object_type::ObjectType;
pub use pdu::{AbortReason, ErrorClass, RejectReason, Segmentation};
pub use property_id::PropertyIdentifier;
pub use services::{ConfirmedServiceChoice, UnconfirmedServiceChoice};
pub use small::{
    AcknowledgmentFilter, BinaryPV, DeviceStatus, EnableDisable, EventState, EventStateFilter, EventType,
    NetworkPriority, NotifyType, Polarity, ReinitializedState, Reliability, RestartReason, TimeStampKind,
};
pub use units::EngineeringUnits;
