//! File objects (Clause 12.13) and the services on them, AtomicReadFile and
//! AtomicWriteFile (Clauses 15.1, 15.2), answered by the host from files in
//! the device's plugin data directory.
//!
//! The operator lists the files (`[[device.file]]`): instance, name, path
//! inside the data directory, access method (stream or record), whether a
//! network write may change it and how large it may grow. The host owns
//! these objects as it owns the Network Port objects: they are appended to
//! the model's Object_List, and the plugin never sees the requests (it may
//! read or write the same files through its `/data`, under its own grant).
//!
//! Errors, as Clause 15 lists them: not a File object of this device →
//! object/unknown-object; the other access method → services/
//! invalid-file-access-method; a start past the end → services/
//! invalid-file-start-position; a read-only file → services/
//! file-access-denied; a write past `max_size` → services/file-full; a
//! record holding a line feed → services/parameter-out-of-range (records
//! are lines); the file system failing → device/operational-problem
//! (logged with the file and the error). A read asking for more than the
//! answer can carry is aborted as any answer too long.
//!
//! File I/O runs on the device's shard: a read is bounded by the answer
//! (at most `max_apdu × segments`), a stream write by the request, and a
//! record write rewrites at most `max_size` octets.
//!
//! Must never: touch a path outside the data directory (see the `storage` module),
//! let a network write change a read-only file, or grow a file past its
//! `max_size`.

mod storage;

use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::{
    AtomicReadFileAck, AtomicReadFileRequest, AtomicWriteFileAck, AtomicWriteFileRequest, BacnetError, FileData,
    ReadAccess,
};
use bacnet::{AnyValue, CharacterString, Date, Element, ObjectIdentifier, Time, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
pub use storage::check_relative;
use storage::{Storage, StorageError};

/// How a file's contents are addressed (BACnetFileAccessMethod).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMethod {
    /// By record (a line of the file).
    Record,
    /// By octet position.
    Stream,
}

impl AccessMethod {
    fn enumerated(self) -> u32 {
        match self {
            AccessMethod::Record => 0,
            AccessMethod::Stream => 1,
        }
    }
}

/// One configured File object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileConfig {
    /// Its instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description, if any.
    pub description: Option<String>,
    /// Path inside the data directory.
    pub path: PathBuf,
    /// File_Type (a MIME type, by convention).
    pub file_type: String,
    /// File_Access_Method.
    pub access: AccessMethod,
    /// AtomicWriteFile (and writes of File_Size, Record_Count) allowed;
    /// Read_Only is its negation.
    pub writable: bool,
    /// The most octets the file may hold.
    pub max_size: u64,
}

/// Stream-read overhead in an AtomicReadFile-ACK: end-of-file (1), the
/// opening and closing tags (2), the start position (5), the octet
/// string's header (5).
const READ_ACK_OVERHEAD: usize = 13;

/// The File objects of one device, over its data directory.
#[derive(Debug)]
pub struct FileObjects {
    files: Vec<(FileConfig, AtomicBool)>,
    storage: Storage,
    /// One operation at a time: requests from the network (on the shard)
    /// and from the operator's HTTP API (elsewhere) never interleave.
    busy: Mutex<()>,
}

/// A full disk or quota: the client hears File_Full, not a device problem.
fn is_out_of_space(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(e.kind(), K::StorageFull | K::QuotaExceeded | K::FileTooLarge)
}

fn error(class: ErrorClass, code: ErrorCode) -> BacnetError {
    BacnetError { class, code }
}

/// How a [`FileObjects`] call failed: a BACnet Error, or an answer that
/// does not fit.
#[derive(Debug, PartialEq, Eq)]
pub enum FileFailure {
    /// The Error the request gets.
    Error(BacnetError),
    /// The answer would need more than the room the requester gave.
    TooLong,
}

impl From<BacnetError> for FileFailure {
    fn from(e: BacnetError) -> Self {
        FileFailure::Error(e)
    }
}

impl FileObjects {
    /// The File objects `files`, stored in `dir` (which must exist).
    pub fn open(dir: &Path, files: Vec<FileConfig>) -> anyhow::Result<FileObjects> {
        use anyhow::Context;
        for f in &files {
            check_relative(&f.path).map_err(|e| anyhow::anyhow!("file {} ({}): {e}", f.instance, f.name))?;
        }
        let storage = Storage::open(dir).with_context(|| format!("opening the data directory {}", dir.display()))?;
        Ok(FileObjects {
            files: files.into_iter().map(|f| (f, AtomicBool::new(false))).collect(),
            storage,
            busy: Mutex::new(()),
        })
    }

    /// Their object identifiers, in Object_List order.
    pub fn ids(&self) -> impl Iterator<Item = ObjectIdentifier> + '_ {
        self.files.iter().map(|(f, _)| ObjectIdentifier { object_type: ObjectType::FILE, instance: f.instance })
    }

    /// True when `o` is one of them.
    pub fn has(&self, o: ObjectIdentifier) -> bool {
        self.find(o).is_some()
    }

    fn find(&self, o: ObjectIdentifier) -> Option<&(FileConfig, AtomicBool)> {
        if o.object_type != ObjectType::FILE {
            return None;
        }
        self.files.iter().find(|(f, _)| f.instance == o.instance)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn failed(&self, f: &FileConfig, e: StorageError) -> BacnetError {
        match e {
            StorageError::StartPosition => error(ErrorClass::SERVICES, ErrorCode::INVALID_FILE_START_POSITION),
            StorageError::Full => error(ErrorClass::SERVICES, ErrorCode::FILE_FULL),
            StorageError::RecordWithLineFeed => error(ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE),
            StorageError::Io(e) if is_out_of_space(&e) => {
                tracing::warn!(
                    file = f.instance,
                    path = %self.storage.shown().join(&f.path).display(),
                    error = %e,
                    "File object: no space left for the write; nothing of it was kept"
                );
                error(ErrorClass::SERVICES, ErrorCode::FILE_FULL)
            }
            StorageError::Io(e) => {
                tracing::warn!(
                    file = f.instance,
                    path = %self.storage.shown().join(&f.path).display(),
                    error = %e,
                    "File object: the file system refused"
                );
                error(ErrorClass::DEVICE, ErrorCode::OPERATIONAL_PROBLEM)
            }
        }
    }

    /// Property_List order.
    fn properties(f: &FileConfig) -> Vec<P> {
        let mut list = vec![
            P::OBJECT_IDENTIFIER,
            P::OBJECT_NAME,
            P::OBJECT_TYPE,
            P::FILE_TYPE,
            P::FILE_SIZE,
            P::MODIFICATION_DATE,
            P::ARCHIVE,
            P::READ_ONLY,
            P::FILE_ACCESS_METHOD,
            P::PROPERTY_LIST,
        ];
        if f.description.is_some() {
            list.push(P::DESCRIPTION);
        }
        if f.access == AccessMethod::Record {
            list.push(P::RECORD_COUNT);
        }
        list
    }

    /// The properties ALL and REQUIRED name (Property_List left out, 135.1
    /// §9.20.1.7), or OPTIONAL.
    pub fn expand(&self, o: ObjectIdentifier, which: P) -> Vec<P> {
        let Some((f, _)) = self.find(o) else { return Vec::new() };
        crate::host_object::expand(&Self::properties(f), &[P::DESCRIPTION, P::RECORD_COUNT], which)
    }

    /// Read property `p` of file `o`; `clock` is the device's (skew from
    /// the OS clock in ms, minutes east of UTC) for Modification_Date.
    pub fn read(
        &self,
        o: ObjectIdentifier,
        p: P,
        index: Option<u32>,
        clock: (i64, i16),
    ) -> Result<AnyValue, BacnetError> {
        let Some((f, archive)) = self.find(o) else {
            return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
        };
        let properties = Self::properties(f);
        if !properties.contains(&p) {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY));
        }
        if p == P::PROPERTY_LIST {
            return crate::host_object::property_list(&properties, index);
        }
        if index.is_some() {
            return Err(error(ErrorClass::PROPERTY, ErrorCode::PROPERTY_IS_NOT_AN_ARRAY));
        }
        let text = |s: &str| Value::CharacterString(CharacterString::utf8(s)).into();
        Ok(match p {
            P::OBJECT_IDENTIFIER => Value::ObjectIdentifier(o).into(),
            P::OBJECT_NAME => text(&f.name),
            P::OBJECT_TYPE => Value::Enumerated(ObjectType::FILE.0).into(),
            P::DESCRIPTION => text(f.description.as_deref().unwrap_or_default()),
            P::FILE_TYPE => text(&f.file_type),
            P::ARCHIVE => Value::Boolean(archive.load(Ordering::Relaxed)).into(),
            P::READ_ONLY => Value::Boolean(!f.writable).into(),
            P::FILE_ACCESS_METHOD => Value::Enumerated(f.access.enumerated()).into(),
            P::FILE_SIZE | P::MODIFICATION_DATE => {
                let _busy = self.lock();
                let (size, modified) = self.storage.stat(&f.path).map_err(|e| self.failed(f, e.into()))?;
                if p == P::FILE_SIZE {
                    Value::Unsigned(size).into()
                } else {
                    let (date, time) = modified.map_or((UNSPECIFIED_DATE, UNSPECIFIED_TIME), |m| local(m, clock));
                    AnyValue(vec![Element::Application(Value::Date(date)), Element::Application(Value::Time(time))])
                }
            }
            P::RECORD_COUNT => {
                let _busy = self.lock();
                let records = self.storage.records(&f.path, f.max_size).map_err(|e| self.failed(f, e))?;
                Value::Unsigned(records.len() as u64).into()
            }
            _ => return Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)),
        })
    }

    /// Write property `p` of file `o`: Archive, and on a writable file
    /// File_Size (stream; only to cut it) or Record_Count (record; only to
    /// cut it). Everything else is write-access-denied.
    pub fn write(&self, o: ObjectIdentifier, p: P, value: &AnyValue) -> Result<(), BacnetError> {
        let Some((f, archive)) = self.find(o) else {
            return Err(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT));
        };
        let denied = error(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED);
        let wrong_type = error(ErrorClass::PROPERTY, ErrorCode::INVALID_DATA_TYPE);
        let out_of_range = error(ErrorClass::PROPERTY, ErrorCode::VALUE_OUT_OF_RANGE);
        match (p, value.as_primitive()) {
            (P::ARCHIVE, Some(Value::Boolean(b))) => {
                archive.store(*b, Ordering::Relaxed);
                Ok(())
            }
            (P::ARCHIVE, _) => Err(wrong_type),
            (P::FILE_SIZE, v) if f.writable && f.access == AccessMethod::Stream => {
                let Some(Value::Unsigned(len)) = v else { return Err(wrong_type) };
                let _busy = self.lock();
                match self.storage.truncate(&f.path, *len) {
                    Ok(()) => {
                        archive.store(false, Ordering::Relaxed);
                        Ok(())
                    }
                    Err(StorageError::StartPosition) => Err(out_of_range),
                    Err(e) => Err(self.failed(f, e)),
                }
            }
            (P::RECORD_COUNT, v) if f.writable && f.access == AccessMethod::Record => {
                let Some(Value::Unsigned(count)) = v else { return Err(wrong_type) };
                let count = usize::try_from(*count).map_err(|_| out_of_range)?;
                let _busy = self.lock();
                match self.storage.truncate_records(&f.path, count, f.max_size) {
                    Ok(()) => {
                        archive.store(false, Ordering::Relaxed);
                        Ok(())
                    }
                    Err(StorageError::StartPosition) => Err(out_of_range),
                    Err(e) => Err(self.failed(f, e)),
                }
            }
            _ if Self::properties(f).contains(&p) => Err(denied),
            _ => Err(error(ErrorClass::PROPERTY, ErrorCode::UNKNOWN_PROPERTY)),
        }
    }

    /// AtomicReadFile; `room` is the octets the acknowledgement may take.
    pub fn atomic_read(&self, r: &AtomicReadFileRequest, room: usize) -> Result<AtomicReadFileAck, FileFailure> {
        let (f, _) = self.find(r.file).ok_or(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT))?;
        let start_error = error(ErrorClass::SERVICES, ErrorCode::INVALID_FILE_START_POSITION);
        let _busy = self.lock();
        match (r.access, f.access) {
            (ReadAccess::Stream { start_position, octet_count }, AccessMethod::Stream) => {
                let start = u64::try_from(start_position).map_err(|_| start_error)?;
                if octet_count as usize > room.saturating_sub(READ_ACK_OVERHEAD) {
                    return Err(FileFailure::TooLong);
                }
                let (data, end_of_file) =
                    self.storage.read_stream(&f.path, start, octet_count as usize).map_err(|e| self.failed(f, e))?;
                Ok(AtomicReadFileAck { end_of_file, data: FileData::Stream { start_position, data } })
            }
            (ReadAccess::Record { start_record, record_count }, AccessMethod::Record) => {
                let start = usize::try_from(start_record).map_err(|_| start_error)?;
                let all = self.storage.records(&f.path, f.max_size).map_err(|e| self.failed(f, e))?;
                if start > all.len() {
                    return Err(start_error.into());
                }
                let end = start.saturating_add(record_count as usize).min(all.len());
                let records: Vec<Vec<u8>> = all[start..end].to_vec();
                // Each record: its octets and a header of at most 5.
                let size: usize = READ_ACK_OVERHEAD + 5 + records.iter().map(|r| r.len() + 5).sum::<usize>();
                if size > room {
                    return Err(FileFailure::TooLong);
                }
                Ok(AtomicReadFileAck {
                    end_of_file: end == all.len(),
                    data: FileData::Record { start_record, records },
                })
            }
            _ => Err(error(ErrorClass::SERVICES, ErrorCode::INVALID_FILE_ACCESS_METHOD).into()),
        }
    }

    /// AtomicWriteFile.
    pub fn atomic_write(&self, r: &AtomicWriteFileRequest) -> Result<AtomicWriteFileAck, BacnetError> {
        let (f, archive) = self.find(r.file).ok_or(error(ErrorClass::OBJECT, ErrorCode::UNKNOWN_OBJECT))?;
        let start_error = error(ErrorClass::SERVICES, ErrorCode::INVALID_FILE_START_POSITION);
        let method_error = error(ErrorClass::SERVICES, ErrorCode::INVALID_FILE_ACCESS_METHOD);
        let ack = match (&r.data, f.access) {
            (FileData::Stream { start_position, data }, AccessMethod::Stream) => {
                let start = match *start_position {
                    -1 => None,
                    p => Some(u64::try_from(p).map_err(|_| start_error)?),
                };
                if !f.writable {
                    return Err(error(ErrorClass::SERVICES, ErrorCode::FILE_ACCESS_DENIED));
                }
                let _busy = self.lock();
                let at = self.storage.write_stream(&f.path, start, data, f.max_size).map_err(|e| self.failed(f, e))?;
                AtomicWriteFileAck::Stream(i32::try_from(at).map_err(|_| start_error)?)
            }
            (FileData::Record { start_record, records }, AccessMethod::Record) => {
                let start = match *start_record {
                    -1 => None,
                    p => Some(usize::try_from(p).map_err(|_| start_error)?),
                };
                if !f.writable {
                    return Err(error(ErrorClass::SERVICES, ErrorCode::FILE_ACCESS_DENIED));
                }
                let _busy = self.lock();
                let at =
                    self.storage.write_records(&f.path, start, records, f.max_size).map_err(|e| self.failed(f, e))?;
                AtomicWriteFileAck::Record(i32::try_from(at).map_err(|_| start_error)?)
            }
            _ => return Err(method_error),
        };
        archive.store(false, Ordering::Relaxed);
        Ok(ack)
    }
}

const UNSPECIFIED_DATE: Date = Date { year: 255, month: 255, day: 255, weekday: 255 };
const UNSPECIFIED_TIME: Time = Time { hour: 255, minute: 255, second: 255, hundredths: 255 };

/// A file's modification time on the device's clock, as local date and time.
fn local(modified: std::time::SystemTime, (skew_ms, offset_minutes): (i64, i16)) -> (Date, Time) {
    let unspecified = (UNSPECIFIED_DATE, UNSPECIFIED_TIME);
    let Ok(since) = modified.duration_since(std::time::UNIX_EPOCH) else { return unspecified };
    let ms = (since.as_millis() as i64).saturating_add(skew_ms);
    let Ok(ts) = jiff::Timestamp::from_millisecond(ms) else { return unspecified };
    let Ok(offset) = jiff::tz::Offset::from_seconds(offset_minutes as i32 * 60) else { return unspecified };
    let dt = offset.to_datetime(ts);
    let Ok(year) = u8::try_from(dt.year() - 1900) else { return unspecified };
    (
        Date { year, month: dt.month() as u8, day: dt.day() as u8, weekday: dt.weekday().to_monday_one_offset() as u8 },
        Time {
            hour: dt.hour() as u8,
            minute: dt.minute() as u8,
            second: dt.second() as u8,
            hundredths: (dt.subsec_nanosecond() / 10_000_000) as u8,
        },
    )
}
