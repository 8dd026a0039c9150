//! AtomicWriteFile (Clause 15.2): write octets (stream access) or records
//! (record access) of a File object in one indivisible operation.

use super::ServiceCodec;
use super::atomic_read_file::FileData;
use super::common::app_field;
use crate::codec::{ObjectIdentifier, Reader, next_is_primitive_ctx, write_app, write_ctx};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// An AtomicWriteFile request.
///
/// ```text
/// AtomicWriteFile-Request ::= SEQUENCE {
///     fileIdentifier BACnetObjectIdentifier,
///     accessMethod CHOICE {
///         streamAccess [0] SEQUENCE { fileStartPosition INTEGER, fileData OCTET STRING },
///         recordAccess [1] SEQUENCE {
///             fileStartRecord INTEGER,
///             recordCount Unsigned,
///             fileRecordData SEQUENCE OF OCTET STRING
///         }
///     }
/// }
/// ```
///
/// A start of -1 appends at the end of the file. `recordCount` is not
/// stored: it is the number of records, and a body where the two disagree
/// is `Inconsistent`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtomicWriteFileRequest {
    /// The File object written.
    pub file: ObjectIdentifier,
    /// What to write, and where.
    pub data: FileData,
}

impl ServiceCodec for AtomicWriteFileRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.file);
        self.data.encode(out);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let file = app_field(r, "file-identifier")?;
        let data = FileData::decode_from(r, "record-count")?;
        Ok(AtomicWriteFileRequest { file, data })
    }
}

/// An AtomicWriteFile acknowledgement: where the data went (the actual
/// position or record number when the request appended).
///
/// ```text
/// AtomicWriteFile-ACK ::= CHOICE {
///     fileStartPosition [0] INTEGER,
///     fileStartRecord [1] INTEGER
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicWriteFileAck {
    /// Stream access: the position of the first octet written.
    Stream(i32),
    /// Record access: the number of the first record written.
    Record(i32),
}

impl ServiceCodec for AtomicWriteFileAck {
    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            AtomicWriteFileAck::Stream(p) => write_ctx(out, 0, &p),
            AtomicWriteFileAck::Record(p) => write_ctx(out, 1, &p),
        }
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        if next_is_primitive_ctx(r, 0) {
            return Ok(AtomicWriteFileAck::Stream(super::common::ctx_field(r, 0, "file-start-position")?));
        }
        if next_is_primitive_ctx(r, 1) {
            return Ok(AtomicWriteFileAck::Record(super::common::ctx_field(r, 1, "file-start-record")?));
        }
        let (at, what) = (r.position(), "file-start-position [0] or file-start-record [1]");
        Err(if r.is_empty() { DecodeError::Truncated { at, what } } else { DecodeError::InvalidTag { at, what } })
    }
}
