//! File transfer: AtomicReadFile and AtomicWriteFile (Clauses 15.1, 15.2),
//! and whole-file reads and writes over them in chunks.
//!
//! A chunk larger than one APDU travels in segments when both sides
//! segment; each chunk is one transaction, retried as any request.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use trellis_client::{Client, ClientConfig};
//! let client = Client::bind(ClientConfig::default()).await?;
//! let device = "127.0.0.1:47809".parse()?;
//! let file = bacnet::ObjectIdentifier::new(bacnet::ObjectType::FILE, 1)?;
//! let contents = client.read_file(&device, file, 16 << 20).await?;
//! client.write_file(&device, file, &contents).await?;
//! # Ok(()) }
//! ```

use super::{Client, ClientError, DeviceAddress};
use bacnet::ObjectIdentifier;
use bacnet::enums::ConfirmedServiceChoice as Service;
use bacnet::services::{
    AtomicReadFileAck, AtomicReadFileRequest, AtomicWriteFileAck, AtomicWriteFileRequest, FileData, ReadAccess,
    ServiceCodec,
};

/// How often one chunk of a whole-file transfer is asked again after the
/// device refused it as overloaded (Abort out-of-resources: its admission
/// control, or its budget of segmented-answer octets per requester), and
/// the pause before each time.
const OVERLOAD_RETRIES: u32 = 50;
const OVERLOAD_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// Octets per AtomicReadFile/AtomicWriteFile of a whole-file transfer: a
/// few segments of a 1476-octet APDU each.
pub const FILE_CHUNK: usize = 4096;

impl Client {
    /// AtomicReadFile: `access` says from where and how much.
    pub async fn atomic_read_file(
        &self,
        device: &DeviceAddress,
        file: ObjectIdentifier,
        access: ReadAccess,
    ) -> Result<AtomicReadFileAck, ClientError> {
        let req = AtomicReadFileRequest { file, access };
        let body = self.confirmed_ack(device, Service::ATOMIC_READ_FILE, req.to_vec()).await?;
        let ack = AtomicReadFileAck::decode(&body).map_err(ClientError::MalformedReply)?;
        let same_method = matches!(
            (&access, &ack.data),
            (ReadAccess::Stream { .. }, FileData::Stream { .. }) | (ReadAccess::Record { .. }, FileData::Record { .. })
        );
        if !same_method {
            return Err(ClientError::UnexpectedReply("an AtomicReadFile-ACK with the other access method"));
        }
        Ok(ack)
    }

    /// AtomicWriteFile: `data` says what and where (a start of -1 appends).
    pub async fn atomic_write_file(
        &self,
        device: &DeviceAddress,
        file: ObjectIdentifier,
        data: FileData,
    ) -> Result<AtomicWriteFileAck, ClientError> {
        let req = AtomicWriteFileRequest { file, data };
        let body = self.confirmed_ack(device, Service::ATOMIC_WRITE_FILE, req.to_vec()).await?;
        AtomicWriteFileAck::decode(&body).map_err(ClientError::MalformedReply)
    }

    /// The whole of stream file `file`, read [`FILE_CHUNK`] octets at a
    /// time; more than `max_len` octets is `UnexpectedReply`. A chunk the
    /// device refuses as overloaded (its answer budget spent: a large file
    /// outruns `answer_octets_per_second`) is asked again after a pause, up
    /// to 50 times.
    pub async fn read_file(
        &self,
        device: &DeviceAddress,
        file: ObjectIdentifier,
        max_len: usize,
    ) -> Result<Vec<u8>, ClientError> {
        let mut contents = Vec::new();
        loop {
            let start_position = i32::try_from(contents.len())
                .map_err(|_| ClientError::UnexpectedReply("a file larger than AtomicReadFile can address"))?;
            let access = ReadAccess::Stream { start_position, octet_count: FILE_CHUNK as u32 };
            let mut refused = 0;
            let ack = loop {
                match self.atomic_read_file(device, file, access).await {
                    Err(e) if e.is_admission_refusal() && refused < OVERLOAD_RETRIES => {
                        refused += 1;
                        tokio::time::sleep(OVERLOAD_PAUSE).await;
                    }
                    other => break other?,
                }
            };
            let FileData::Stream { start_position: at, data } = ack.data else { unreachable!("checked") };
            if at != start_position || data.len() > FILE_CHUNK {
                return Err(ClientError::UnexpectedReply("an AtomicReadFile-ACK for another part of the file"));
            }
            if contents.len() + data.len() > max_len {
                return Err(ClientError::UnexpectedReply("a file longer than asked for"));
            }
            let progress = !data.is_empty();
            contents.extend_from_slice(&data);
            if ack.end_of_file {
                return Ok(contents);
            }
            if !progress {
                return Err(ClientError::UnexpectedReply("an empty AtomicReadFile-ACK before the end of the file"));
            }
        }
    }

    /// Write `contents` over stream file `file` from position 0, in
    /// [`FILE_CHUNK`]-octet writes. The file is not cut first: octets past
    /// `contents.len()` stay (write File_Size 0 before to replace it).
    pub async fn write_file(
        &self,
        device: &DeviceAddress,
        file: ObjectIdentifier,
        contents: &[u8],
    ) -> Result<(), ClientError> {
        for (i, chunk) in contents.chunks(FILE_CHUNK).enumerate() {
            let start_position = i32::try_from(i * FILE_CHUNK)
                .map_err(|_| ClientError::UnexpectedReply("a file larger than AtomicWriteFile can address"))?;
            let ack =
                self.atomic_write_file(device, file, FileData::Stream { start_position, data: chunk.to_vec() }).await?;
            if ack != AtomicWriteFileAck::Stream(start_position) {
                return Err(ClientError::UnexpectedReply("an AtomicWriteFile-ACK for another position"));
            }
        }
        Ok(())
    }
}
