//! Who-Is (Clause 16.10): find devices, optionally by instance range.

use super::ServiceCodec;
use super::common::{ctx_field, opt_ctx_field};
use crate::codec::{ObjectIdentifier, Reader, next_is_primitive_ctx, write_ctx};
use crate::error::{DecodeError, EncodeError};
use alloc::vec::Vec;

const LOW: &str = "device-instance-range-low-limit";
const HIGH: &str = "device-instance-range-high-limit";

/// A Who-Is request.
///
/// ```text
/// Who-Is-Request ::= SEQUENCE {
///     device-instance-range-low-limit [0] Unsigned (0..4194303) OPTIONAL, -- must be used as a pair, see 16.10
///     device-instance-range-high-limit [1] Unsigned (0..4194303) OPTIONAL -- must be used as a pair, see 16.10
/// }
/// ```
///
/// Decoding: a low limit with nothing after it is `Truncated` (the high limit
/// is missing); a high limit without a low limit is `Inconsistent`; a limit
/// above 4,194,303 is `OutOfRange`. A low limit above the high limit is
/// accepted and matches no device. The encoder writes the limits it is given;
/// build ranges with [`WhoIs::between`] to have them checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WhoIs {
    /// The device instance range, low and high limits inclusive; `None`
    /// addresses every device.
    pub range: Option<(u32, u32)>,
}

impl WhoIs {
    /// A Who-Is every device answers.
    pub const ALL: WhoIs = WhoIs { range: None };

    /// A Who-Is for devices with instances in `low..=high`.
    pub fn between(low: u32, high: u32) -> Result<Self, EncodeError> {
        if low > ObjectIdentifier::MAX_INSTANCE {
            return Err(EncodeError::OutOfRange(LOW));
        }
        if high > ObjectIdentifier::MAX_INSTANCE {
            return Err(EncodeError::OutOfRange(HIGH));
        }
        if low > high {
            return Err(EncodeError::Inconsistent("device instance range low limit above its high limit"));
        }
        Ok(WhoIs { range: Some((low, high)) })
    }

    /// True when a device with this instance number must answer.
    pub fn matches(&self, instance: u32) -> bool {
        match self.range {
            None => true,
            Some((low, high)) => (low..=high).contains(&instance),
        }
    }
}

impl ServiceCodec for WhoIs {
    fn encode(&self, out: &mut Vec<u8>) {
        encode_limits(out, self.range);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(WhoIs { range: decode_limits(r)? })
    }
}

/// Write the `[0]`/`[1]` device instance limits shared by Who-Is and Who-Has.
pub(crate) fn encode_limits(out: &mut Vec<u8>, range: Option<(u32, u32)>) {
    if let Some((low, high)) = range {
        write_ctx(out, 0, &low);
        write_ctx(out, 1, &high);
    }
}

/// Read the optional `[0]`/`[1]` device instance limits shared by Who-Is and
/// Who-Has: both or neither.
pub(crate) fn decode_limits(r: &mut Reader<'_>) -> Result<Option<(u32, u32)>, DecodeError> {
    let low_at = r.position();
    if next_is_primitive_ctx(r, 1) {
        return Err(DecodeError::Inconsistent { at: low_at, what: "a high limit without a low limit" });
    }
    let Some(low) = opt_ctx_field::<u32>(r, 0, LOW)? else {
        return Ok(None);
    };
    check_instance(low, low_at, LOW)?;
    let high_at = r.position();
    let high = ctx_field::<u32>(r, 1, HIGH)?;
    check_instance(high, high_at, HIGH)?;
    Ok(Some((low, high)))
}

fn check_instance(v: u32, at: usize, what: &'static str) -> Result<(), DecodeError> {
    if v > ObjectIdentifier::MAX_INSTANCE { Err(DecodeError::OutOfRange { at, what }) } else { Ok(()) }
}
