//! I-Have (Clause 16.8): a device answers a Who-Has.

use super::ServiceCodec;
use super::common::app_field;
use super::i_am::read_device_identifier;
use crate::codec::{CharacterString, ObjectIdentifier, Reader, write_app};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// An I-Have request.
///
/// ```text
/// I-Have-Request ::= SEQUENCE {
///     device-identifier BACnetObjectIdentifier,
///     object-identifier BACnetObjectIdentifier,
///     object-name CharacterString
/// }
/// ```
///
/// Decoding: as for [`IAm`](super::IAm), a `device-identifier` whose object
/// type is not `device` is `OutOfRange`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IHave {
    /// The answering device's Device object identifier.
    pub device: ObjectIdentifier,
    /// The object found.
    pub object_id: ObjectIdentifier,
    /// Its Object_Name.
    pub object_name: CharacterString,
}

impl ServiceCodec for IHave {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.device);
        write_app(out, &self.object_id);
        write_app(out, &self.object_name);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(IHave {
            device: read_device_identifier(r, "device-identifier")?,
            object_id: app_field(r, "object-identifier")?,
            object_name: app_field(r, "object-name")?,
        })
    }
}
