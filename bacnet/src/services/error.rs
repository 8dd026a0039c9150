//! The `Error` production: the body of an Error PDU for most confirmed
//! services, and the `property-access-error` of ReadPropertyMultiple.

use super::ServiceCodec;
use super::common::app_field;
use crate::codec::{Reader, write_app};
use crate::enums::{ErrorClass, ErrorCode};
use crate::error::DecodeError;
use alloc::vec::Vec;
use core::fmt;

/// An error class and code, as a server reports a failed service.
///
/// ```text
/// Error ::= SEQUENCE {
///     -- NOTE: The valid combinations of error-class and error-code are defined in Clause 18.
///     error-class ENUMERATED { ... },
///     error-code ENUMERATED { ... }
/// }
/// ```
///
/// Both are open enumerations: proprietary and newer values decode and
/// round-trip. The `ServiceCodec` form is the plain body of an Error PDU (two
/// application-tagged Enumerated, no enclosing tags); productions that carry
/// an `Error` inside a context tag (`[5]` in ReadPropertyMultiple, `[0]` in
/// WritePropertyMultiple-Error) wrap this encoding in an opening/closing pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BacnetError {
    /// The error class.
    pub class: ErrorClass,
    /// The error code.
    pub code: ErrorCode,
}

impl BacnetError {
    /// An error of `class` and `code`.
    pub fn new(class: ErrorClass, code: ErrorCode) -> Self {
        BacnetError { class, code }
    }
}

/// `object: unknown-object`, with numbers for values this crate does not name.
impl fmt::Display for BacnetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.code)
    }
}

impl core::error::Error for BacnetError {}

impl ServiceCodec for BacnetError {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.class);
        write_app(out, &self.code);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(BacnetError { class: app_field(r, "error-class")?, code: app_field(r, "error-code")? })
    }
}
