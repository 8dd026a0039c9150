//! AtomicReadFile (Clause 15.1): read octets (stream access) or records
//! (record access) of a File object in one indivisible operation.

use super::ServiceCodec;
use super::common::app_field;
use crate::codec::{
    ObjectIdentifier, Reader, expect_closing, expect_opening, next_is_closing, next_is_opening, write_app,
    write_constructed,
};
use crate::error::DecodeError;
use alloc::vec::Vec;

/// An AtomicReadFile request.
///
/// ```text
/// AtomicReadFile-Request ::= SEQUENCE {
///     fileIdentifier BACnetObjectIdentifier,
///     accessMethod CHOICE {
///         streamAccess [0] SEQUENCE { fileStartPosition INTEGER, requestedOctetCount Unsigned },
///         recordAccess [1] SEQUENCE { fileStartRecord INTEGER, requestedRecordCount Unsigned }
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicReadFileRequest {
    /// The File object read.
    pub file: ObjectIdentifier,
    /// Where to start and how much to read.
    pub access: ReadAccess,
}

/// The `accessMethod` of an AtomicReadFile request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadAccess {
    /// `streamAccess [0]`: octets from a position (0 is the first octet).
    Stream {
        /// The first octet to read.
        start_position: i32,
        /// How many octets to read.
        octet_count: u32,
    },
    /// `recordAccess [1]`: records from a record number (0 is the first).
    Record {
        /// The first record to read.
        start_record: i32,
        /// How many records to read.
        record_count: u32,
    },
}

impl ServiceCodec for AtomicReadFileRequest {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.file);
        let (n, start, count) = match self.access {
            ReadAccess::Stream { start_position, octet_count } => (0, start_position, octet_count),
            ReadAccess::Record { start_record, record_count } => (1, start_record, record_count),
        };
        write_constructed(out, n, |o| {
            write_app(o, &start);
            write_app(o, &count);
        });
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let file = app_field(r, "file-identifier")?;
        let access = if next_is_opening(r, 0) {
            expect_opening(r, 0, "stream-access")?;
            let start_position = app_field(r, "file-start-position")?;
            let octet_count = app_field(r, "requested-octet-count")?;
            expect_closing(r, 0, "end of stream-access")?;
            ReadAccess::Stream { start_position, octet_count }
        } else {
            access_opening(r, 1)?;
            let start_record = app_field(r, "file-start-record")?;
            let record_count = app_field(r, "requested-record-count")?;
            expect_closing(r, 1, "end of record-access")?;
            ReadAccess::Record { start_record, record_count }
        };
        Ok(AtomicReadFileRequest { file, access })
    }
}

/// Consume the opening tag of `recordAccess [1]`, the access method left
/// when `streamAccess [0]` is not next: nothing there is a missing
/// parameter, anything else a wrong tag.
pub(super) fn access_opening(r: &mut Reader<'_>, n: u8) -> Result<(), DecodeError> {
    if r.is_empty() {
        return Err(DecodeError::Truncated { at: r.position(), what: "access-method" });
    }
    let at = r.position();
    expect_opening(r, n, "access-method")
        .map_err(|_| DecodeError::InvalidTag { at, what: "access-method (stream-access [0] or record-access [1])" })
}

/// An AtomicReadFile acknowledgement.
///
/// ```text
/// AtomicReadFile-ACK ::= SEQUENCE {
///     endOfFile BOOLEAN,
///     accessMethod CHOICE {
///         streamAccess [0] SEQUENCE { fileStartPosition INTEGER, fileData OCTET STRING },
///         recordAccess [1] SEQUENCE {
///             fileStartRecord INTEGER,
///             returnedRecordCount Unsigned,
///             fileRecordData SEQUENCE OF OCTET STRING
///         }
///     }
/// }
/// ```
///
/// `returnedRecordCount` is not stored: it is the number of records, and a
/// body where the two disagree is `Inconsistent`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtomicReadFileAck {
    /// The data returned ends at the end of the file.
    pub end_of_file: bool,
    /// What was read, and from where.
    pub data: FileData,
}

/// File contents in an AtomicReadFile acknowledgement or an AtomicWriteFile
/// request: octets at a position, or records from a record number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileData {
    /// `streamAccess [0]`.
    Stream {
        /// Position of the first octet (in a write, -1 appends).
        start_position: i32,
        /// The octets.
        data: Vec<u8>,
    },
    /// `recordAccess [1]`.
    Record {
        /// Number of the first record (in a write, -1 appends).
        start_record: i32,
        /// The records.
        records: Vec<Vec<u8>>,
    },
}

impl FileData {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FileData::Stream { start_position, data } => write_constructed(out, 0, |o| {
                write_app(o, start_position);
                write_app(o, data);
            }),
            FileData::Record { start_record, records } => write_constructed(out, 1, |o| {
                write_app(o, start_record);
                write_app(o, &(records.len() as u64));
                for record in records {
                    write_app(o, record);
                }
            }),
        }
    }

    pub(super) fn decode_from(r: &mut Reader<'_>, count_name: &'static str) -> Result<Self, DecodeError> {
        if next_is_opening(r, 0) {
            expect_opening(r, 0, "stream-access")?;
            let start_position = app_field(r, "file-start-position")?;
            let data = app_field(r, "file-data")?;
            expect_closing(r, 0, "end of stream-access")?;
            return Ok(FileData::Stream { start_position, data });
        }
        access_opening(r, 1)?;
        let start_record = app_field(r, "file-start-record")?;
        let count_at = r.position();
        let count: u64 = app_field(r, count_name)?;
        let mut records = Vec::new();
        while !next_is_closing(r, 1) {
            records.push(app_field(r, "file-record-data")?);
        }
        expect_closing(r, 1, "end of record-access")?;
        if count != records.len() as u64 {
            return Err(DecodeError::Inconsistent { at: count_at, what: "record count and the records given" });
        }
        Ok(FileData::Record { start_record, records })
    }
}

impl ServiceCodec for AtomicReadFileAck {
    fn encode(&self, out: &mut Vec<u8>) {
        write_app(out, &self.end_of_file);
        self.data.encode(out);
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let end_of_file = app_field(r, "end-of-file")?;
        let data = FileData::decode_from(r, "returned-record-count")?;
        Ok(AtomicReadFileAck { end_of_file, data })
    }
}
