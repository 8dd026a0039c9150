//! BACnet enumerations (ASHRAE 135 Clause 21) as open newtypes.
//!
//! See [`macros`] for why these are newtypes rather than Rust enums. Each file
//! holds one enumeration (or a few small related ones), with the standard's
//! names.

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
    BinaryPV, DeviceStatus, EnableDisable, EventState, NetworkPriority, Polarity, ReinitializedState, Reliability,
    TimeStampKind,
};
pub use units::EngineeringUnits;
