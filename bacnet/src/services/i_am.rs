//! I-Am (Clause 16.1): a device announces itself.

use super::ServiceCodec;
use super::common::app_field;
use crate::codec::{ObjectIdentifier, Reader, write_app};
use crate::enums::{ObjectType, Segmentation};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// An I-Am request.
///
/// ```text
/// I-Am-Request ::= SEQUENCE {
///     iAm-device-identifier BACnetObjectIdentifier,
///     max-apdu-length-accepted Unsigned,
///     segmentation-supported BACnetSegmentation,
///     vendor-id Unsigned16
/// }
/// ```
///
/// Decoding: an identifier whose object type is not `device` is `OutOfRange`
/// (parameter-out-of-range): the tag and the datatype are right, the value is
/// outside what the field admits, just as an instance above 4,194,303 would
/// be. A vendor identifier above 65,535 is `OutOfRange`. Segmentation values
/// this crate does not name decode as they are (the newtype keeps them), so
/// an I-Am from a newer device is not lost; treat them as no segmentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IAm {
    /// The device's Device object identifier.
    pub device: ObjectIdentifier,
    /// The largest APDU the device accepts, in octets.
    pub max_apdu_length_accepted: u32,
    /// Which directions the device can segment.
    pub segmentation_supported: Segmentation,
    /// The device's vendor identifier.
    pub vendor_id: u16,
}

impl ServiceCodec for IAm {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.device);
        write_app(out, &self.max_apdu_length_accepted);
        write_app(out, &self.segmentation_supported);
        write_app(out, &self.vendor_id);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let device = read_device_identifier(r, "iAm-device-identifier")?;
        Ok(IAm {
            device,
            max_apdu_length_accepted: app_field(r, "max-apdu-length-accepted")?,
            segmentation_supported: app_field(r, "segmentation-supported")?,
            vendor_id: app_field(r, "vendor-id")?,
        })
    }
}

/// Read an application-tagged object identifier that must name a Device object.
pub(crate) fn read_device_identifier(r: &mut Reader<'_>, what: &'static str) -> Result<ObjectIdentifier, DecodeError> {
    let at = r.position();
    let id: ObjectIdentifier = app_field(r, what)?;
    if id.object_type != ObjectType::DEVICE {
        return Err(DecodeError::OutOfRange { at, what });
    }
    Ok(id)
}
