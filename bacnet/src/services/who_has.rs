//! Who-Has (Clause 16.9): find the devices that hold an object, by
//! identifier or by name.

use super::ServiceCodec;
use super::common::ctx_field;
use super::who_is::{decode_limits, encode_limits};
use crate::codec::{CharacterString, ObjectIdentifier, Reader, next_is_primitive_ctx, tag, write_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// The object a Who-Has asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WhoHasObject {
    /// `object-identifier [2]`.
    Identifier(ObjectIdentifier),
    /// `object-name [3]`.
    Name(CharacterString),
}

/// A Who-Has request.
///
/// ```text
/// Who-Has-Request ::= SEQUENCE {
///     limits SEQUENCE {
///         device-instance-range-low-limit [0] Unsigned (0..4194303),
///         device-instance-range-high-limit [1] Unsigned (0..4194303)
///     } OPTIONAL,
///     object CHOICE {
///         object-identifier [2] BACnetObjectIdentifier,
///         object-name [3] CharacterString
///     }
/// }
/// ```
///
/// Decoding: the limits follow the same rules as [`WhoIs`](super::WhoIs)
/// (a lone high limit is `Inconsistent`, a low limit followed by anything but
/// `[1]` is `InvalidTag`, or `Truncated` at the end of the data). A missing
/// `object` is `Truncated`; any tag other than `[2]` or `[3]` in its place is
/// `InvalidTag`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WhoHas {
    /// The device instance range, low and high limits inclusive; `None`
    /// addresses every device.
    pub range: Option<(u32, u32)>,
    /// The object sought.
    pub object: WhoHasObject,
}

impl ServiceCodec for WhoHas {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_limits(out, self.range);
        match &self.object {
            WhoHasObject::Identifier(id) => write_ctx(out, 2, id),
            WhoHasObject::Name(name) => write_ctx(out, 3, name),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let range = decode_limits(r)?;
        let object = if next_is_primitive_ctx(r, 2) {
            WhoHasObject::Identifier(ctx_field(r, 2, "object-identifier")?)
        } else if next_is_primitive_ctx(r, 3) {
            WhoHasObject::Name(ctx_field(r, 3, "object-name")?)
        } else {
            let at = r.position();
            return Err(match tag::peek_tag(r) {
                None => DecodeError::Truncated { at, what: "object (object-identifier or object-name)" },
                Some(_) => DecodeError::InvalidTag { at, what: "object-identifier [2] or object-name [3]" },
            });
        };
        Ok(WhoHas { range, object })
    }
}
