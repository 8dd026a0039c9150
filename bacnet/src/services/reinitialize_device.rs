//! ReinitializeDevice (Clause 16.4): restart a device, or drive its backup
//! and restore procedure.

use super::ServiceCodec;
use super::common::ctx_field;
use super::device_communication_control::read_password;
use crate::codec::{CharacterString, Reader, write_ctx, write_opt_ctx};
use crate::enums::ReinitializedState;
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A ReinitializeDevice request.
///
/// ```text
/// ReinitializeDevice-Request ::= SEQUENCE {
///     reinitializedStateOfDevice [0] ENUMERATED {
///         coldstart (0),
///         warmstart (1),
///         start-backup (2),
///         end-backup (3),
///         start-restore (4),
///         end-restore (5),
///         abort-restore (6),
///         activate-changes (7)
///     },
///     password [1] CharacterString (SIZE (1..20)) OPTIONAL
/// }
/// ```
///
/// Decoding: a state outside the eight listed is `UndefinedEnumeration`
/// (undefined-enumeration; the enumeration has no extension range); a
/// password of 0 or more than 20 characters is `OutOfRange`
/// (parameter-out-of-range).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReinitializeDeviceRequest {
    /// What the device is to do.
    pub reinitialized_state: ReinitializedState,
    /// The device's password, if it requires one.
    pub password: Option<CharacterString>,
}

impl ServiceCodec for ReinitializeDeviceRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_ctx(out, 0, &self.reinitialized_state);
        write_opt_ctx(out, 1, &self.password);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        let reinitialized_state: ReinitializedState = ctx_field(r, 0, "reinitialized-state-of-device")?;
        if reinitialized_state.name().is_none() {
            return Err(DecodeError::UndefinedEnumeration { at, what: "reinitialized-state-of-device" });
        }
        let password = read_password(r, 1)?;
        Ok(ReinitializeDeviceRequest { reinitialized_state, password })
    }
}
