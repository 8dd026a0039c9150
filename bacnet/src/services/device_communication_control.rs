//! DeviceCommunicationControl (Clause 16.1): tell a device to stop initiating,
//! or stop responding to, APDUs for a while.

use super::ServiceCodec;
use super::common::{ctx_field, opt_ctx_field};
use crate::codec::{CharacterSet, CharacterString, Reader, write_ctx, write_opt_ctx};
use crate::enums::EnableDisable;
use crate::error::DecodeError;
use alloc::vec::Vec;

/// A DeviceCommunicationControl request.
///
/// ```text
/// DeviceCommunicationControl-Request ::= SEQUENCE {
///     timeDuration [0] Unsigned16 OPTIONAL,
///     enable-disable [1] ENUMERATED {
///         enable (0),
///         disable (1),
///         disable-initiation (2)
///     },
///     password [2] CharacterString (SIZE (1..20)) OPTIONAL
/// }
/// ```
///
/// Decoding: a duration above 65,535 and a password of 0 or more than 20
/// characters are `OutOfRange` (parameter-out-of-range); an enable-disable
/// value outside the three the production lists is `UndefinedEnumeration`
/// (undefined-enumeration), since the enumeration has no extension range.
/// `encode` writes what it is given; check user input with
/// [`password_in_range`] first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceCommunicationControlRequest {
    /// Minutes until communication is re-enabled; absent = indefinitely.
    pub time_duration: Option<u16>,
    /// What to enable or disable.
    pub enable_disable: EnableDisable,
    /// The device's password, if it requires one.
    pub password: Option<CharacterString>,
}

/// Longest password DeviceCommunicationControl and ReinitializeDevice carry,
/// in characters.
pub const PASSWORD_MAX_CHARACTERS: usize = 20;

/// Characters in `s`: decoded characters where the set is one this crate
/// reads, otherwise a count from the set's fixed width (octets for
/// single-octet and unknown sets).
fn character_count(s: &CharacterString) -> usize {
    match s.charset {
        CharacterSet::UTF_8 => core::str::from_utf8(&s.bytes).map_or(s.bytes.len(), |t| t.chars().count()),
        CharacterSet::ISO_10646_UCS_2 | CharacterSet::JIS_X_0208 => s.bytes.len().div_ceil(2),
        CharacterSet::ISO_10646_UCS_4 => s.bytes.len().div_ceil(4),
        CharacterSet::IBM_MICROSOFT_DBCS => s.to_text().map_or(s.bytes.len().div_ceil(2), |t| t.chars().count()),
        _ => s.bytes.len(),
    }
}

/// True when `password` has 1 to 20 characters, as `CharacterString (SIZE
/// (1..20))` requires.
pub fn password_in_range(password: &CharacterString) -> bool {
    (1..=PASSWORD_MAX_CHARACTERS).contains(&character_count(password))
}

/// Read an optional `password [n]` and check its size.
pub(crate) fn read_password(r: &mut Reader<'_>, n: u8) -> Result<Option<CharacterString>, DecodeError> {
    let at = r.position();
    let password: Option<CharacterString> = opt_ctx_field(r, n, "password")?;
    match &password {
        Some(p) if !password_in_range(p) => Err(DecodeError::OutOfRange { at, what: "password (1..20 characters)" }),
        _ => Ok(password),
    }
}

impl ServiceCodec for DeviceCommunicationControlRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_opt_ctx(out, 0, &self.time_duration);
        write_ctx(out, 1, &self.enable_disable);
        write_opt_ctx(out, 2, &self.password);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let time_duration = opt_ctx_field(r, 0, "time-duration")?;
        let at = r.position();
        let enable_disable: EnableDisable = ctx_field(r, 1, "enable-disable")?;
        if enable_disable.name().is_none() {
            return Err(DecodeError::UndefinedEnumeration { at, what: "enable-disable" });
        }
        let password = read_password(r, 2)?;
        Ok(DeviceCommunicationControlRequest { time_duration, enable_disable, password })
    }
}
