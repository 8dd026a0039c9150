//! Service request and acknowledgement codecs (Clauses 13–16, 21).
//!
//! Each service lives in its own file with one struct per PDU body (request,
//! ack), each implementing [`ServiceCodec`]. The service's ASN.1 production
//! is quoted in the struct's doc. Bodies are the octets after the APDU header
//! (after the service choice); the APDU layer in [`crate::apdu`] carries the
//! choice.

use crate::codec::Reader;
use crate::error::DecodeError;
use alloc::vec::Vec;

pub mod common;

// Group A: device discovery, property access, and the error bodies.
pub mod error;
pub mod i_am;
pub mod i_have;
pub mod read_property;
pub mod read_property_multiple;
pub mod who_has;
pub mod who_is;
pub mod write_property;
pub mod write_property_multiple;

pub use common::{ObjectPropertyReference, PropertyReference, PropertyValue};
pub use error::BacnetError;
pub use i_am::IAm;
pub use i_have::IHave;
pub use read_property::{ReadPropertyAck, ReadPropertyRequest};
pub use read_property_multiple::{
    ReadAccessResult, ReadAccessSpecification, ReadPropertyMultipleAck, ReadPropertyMultipleRequest, ReadResult,
};
pub use who_has::{WhoHas, WhoHasObject};
pub use who_is::WhoIs;
pub use write_property::WritePropertyRequest;
pub use write_property_multiple::{WriteAccessSpecification, WritePropertyMultipleError, WritePropertyMultipleRequest};

// Group B: change of value, ReadRange, and device management.
pub mod cov_notification;
pub mod device_communication_control;
pub mod read_range;
pub mod reinitialize_device;
pub mod subscribe_cov;
pub mod subscribe_cov_property;
pub mod time_synchronization;

pub use cov_notification::COVNotification;
pub use device_communication_control::{DeviceCommunicationControlRequest, PASSWORD_MAX_CHARACTERS, password_in_range};
pub use read_range::{Range, ReadRangeAck, ReadRangeRequest, ResultFlags};
pub use reinitialize_device::ReinitializeDeviceRequest;
pub use subscribe_cov::SubscribeCOVRequest;
pub use subscribe_cov_property::SubscribeCOVPropertyRequest;
pub use time_synchronization::{TimeSynchronizationRequest, UTCTimeSynchronizationRequest};

// Group C: files.
pub mod atomic_read_file;
pub mod atomic_write_file;

pub use atomic_read_file::{AtomicReadFileAck, AtomicReadFileRequest, FileData, ReadAccess};
pub use atomic_write_file::{AtomicWriteFileAck, AtomicWriteFileRequest};

// Group D: alarms and events.
pub mod acknowledge_alarm;
pub mod event_common;
pub mod event_notification;
pub mod get_alarm_summary;
pub mod get_enrollment_summary;
pub mod get_event_information;

pub use acknowledge_alarm::AcknowledgeAlarmRequest;
pub use event_common::{Destination, NotificationParameters, PropertyStates, TimeStamp, Transition};
pub use event_notification::EventNotification;
pub use get_alarm_summary::{AlarmSummary, GetAlarmSummaryAck};
pub use get_enrollment_summary::{EnrollmentSummary, GetEnrollmentSummaryAck, GetEnrollmentSummaryRequest};
pub use get_event_information::{EventSummary, GetEventInformationAck, GetEventInformationRequest};

// Group F: object lifecycle.
pub mod create_object;

pub use create_object::{
    CreateObjectAck, CreateObjectError, CreateObjectRequest, DeleteObjectRequest, ObjectSpecifier,
};

// Group E: COV-multiple (135-2016).
pub mod cov_notification_multiple;
pub mod subscribe_cov_property_multiple;

pub use cov_notification_multiple::{COVNotificationMultiple, CovObjectValues, CovValue};
pub use subscribe_cov_property_multiple::{
    CovReference, CovSubscriptionSpecification, SubscribeCOVPropertyMultipleError, SubscribeCOVPropertyMultipleRequest,
};
pub(crate) use subscribe_cov_property_multiple::{decode_specifications, encode_specifications};

/// Encoding and decoding of one service body.
pub trait ServiceCodec: Sized {
    /// Append the encoded body.
    fn encode(&self, out: &mut Vec<u8>);

    /// Decode from a reader positioned at the body; must consume exactly the
    /// body's octets (callers check for trailing data).
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decode a whole buffer; trailing octets are `TrailingData`
    /// (too-many-arguments).
    fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(body);
        let v = Self::decode_from(&mut r)?;
        r.expect_end()?;
        Ok(v)
    }

    /// The encoded body as a new vector (one allocation for most bodies:
    /// it starts with room for 64 octets, plus the few a ComplexACK's
    /// header needs in front, so the server state machine can make it the
    /// APDU without another allocation).
    fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + crate::apdu::COMPLEX_ACK_HEADER);
        self.encode(&mut v);
        v
    }
}
