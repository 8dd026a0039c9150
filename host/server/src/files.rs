//! AtomicReadFile and AtomicWriteFile on the host's File objects
//! ([`super::file_object`]), and the device clock their Modification_Date
//! is told on.

use super::dispatch::{AnswerRoom, Failure, Server};
use bacnet::enums::{ErrorClass, ErrorCode};
use bacnet::services::{AtomicReadFileRequest, AtomicWriteFileRequest, BacnetError, ServiceCodec};
use trellis_model::ObjectModel;

fn unknown_object() -> Failure {
    Failure::Error(BacnetError { class: ErrorClass::OBJECT, code: ErrorCode::UNKNOWN_OBJECT })
}

impl<M: ObjectModel> Server<M> {
    pub(super) fn atomic_read_file(&self, r: AtomicReadFileRequest, room: AnswerRoom) -> Result<Vec<u8>, Failure> {
        let files = self.host().files.as_ref().ok_or_else(unknown_object)?;
        match files.atomic_read(&r, room.octets) {
            Ok(ack) => Ok(ack.to_vec()),
            Err(super::file_object::FileFailure::Error(e)) => Err(Failure::Error(e)),
            Err(super::file_object::FileFailure::TooLong) => Err(Failure::Abort(room.too_long())),
        }
    }

    pub(super) fn atomic_write_file(&self, r: AtomicWriteFileRequest) -> Result<Vec<u8>, Failure> {
        let files = self.host().files.as_ref().ok_or_else(unknown_object)?;
        files.atomic_write(&r).map(|ack| ack.to_vec()).map_err(Failure::Error)
    }

    /// The device clock as File objects need it: its skew from the OS
    /// clock (ms) and its offset from UTC (minutes).
    pub(super) fn file_clock(&self) -> (i64, i16) {
        self.model().clock().map_or((0, 0), |c| (c.skew_ms(), c.now().utc_offset_minutes))
    }
}
