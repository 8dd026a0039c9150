//! `trellis file read|write`: a File object's contents, over AtomicReadFile
//! and AtomicWriteFile, by its access method (File_Access_Method).

use super::{Failure, device, object};
use crate::client::{Client, DeviceAddress};
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{FileData, ReadAccess};
use bacnet::{ObjectIdentifier, Value};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `trellis file`.
#[derive(Debug, Args)]
pub struct FileArgs {
    #[command(subcommand)]
    command: FileCommand,
}

#[derive(Debug, Subcommand)]
enum FileCommand {
    /// Read a whole File object: a stream file's octets, or a record file's records one per line.
    ///
    /// Example: trellis file read 192.168.1.20 file,3 --output manifest.txt
    Read {
        /// Device address: IP[:PORT][@NET:MAC].
        address: String,
        /// The File object, e.g. file,1.
        object: String,
        /// Write the contents here instead of to stdout.
        #[arg(long, short, value_name = "PATH")]
        output: Option<PathBuf>,
        /// Refuse a file larger than this many octets.
        #[arg(long, value_name = "OCTETS", default_value_t = 64 << 20)]
        max_size: usize,
    },
    /// Replace a File object's contents with a local file's (a record file: one record per line).
    ///
    /// The file is cut first (File_Size 0, or Record_Count 0), then written in chunks.
    ///
    /// Example: trellis file write 192.168.1.20 file,1 notes.txt
    Write {
        /// Device address: IP[:PORT][@NET:MAC].
        address: String,
        /// The File object, e.g. file,1.
        object: String,
        /// The local file to send.
        path: PathBuf,
    },
}

/// Records per AtomicWriteFile of `trellis file write` on a record file.
const RECORDS_PER_WRITE: usize = 32;

async fn is_record_file(client: &Client, dev: &DeviceAddress, file: ObjectIdentifier) -> Result<bool, Failure> {
    let method = client.read_property(dev, file, P::FILE_ACCESS_METHOD, None).await?;
    match method.as_primitive() {
        Some(Value::Enumerated(0)) => Ok(true),
        Some(Value::Enumerated(1)) => Ok(false),
        _ => Err(Failure { code: super::exit::OTHER, message: format!("{file}: File_Access_Method is {method:?}") }),
    }
}

/// Run `trellis file`.
pub async fn run(client: &Client, a: FileArgs) -> Result<(), Failure> {
    match a.command {
        FileCommand::Read { address, object: o, output, max_size } => {
            let (dev, file) = (device(&address)?, object(&o)?);
            let contents = if is_record_file(client, &dev, file).await? {
                read_records(client, &dev, file, max_size).await?
            } else {
                client.read_file(&dev, file, max_size).await?
            };
            match output {
                Some(path) => {
                    std::fs::write(&path, &contents).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?
                }
                None => std::io::stdout().write_all(&contents).map_err(|e| anyhow::anyhow!("stdout: {e}"))?,
            }
            Ok(())
        }
        FileCommand::Write { address, object: o, path } => {
            let (dev, file) = (device(&address)?, object(&o)?);
            let contents = std::fs::read(&path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            if is_record_file(client, &dev, file).await? {
                client.write_property(&dev, file, P::RECORD_COUNT, None, Value::Unsigned(0).into(), None).await?;
                let text = contents.strip_suffix(b"\n").unwrap_or(&contents);
                let records: Vec<Vec<u8>> = if text.is_empty() {
                    Vec::new()
                } else {
                    text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
                };
                for (i, batch) in records.chunks(RECORDS_PER_WRITE).enumerate() {
                    let start_record = (i * RECORDS_PER_WRITE) as i32;
                    client
                        .atomic_write_file(&dev, file, FileData::Record { start_record, records: batch.to_vec() })
                        .await?;
                }
            } else {
                client.write_property(&dev, file, P::FILE_SIZE, None, Value::Unsigned(0).into(), None).await?;
                client.write_file(&dev, file, &contents).await?;
            }
            Ok(())
        }
    }
}

/// Every record of a record file, each followed by a line feed.
async fn read_records(
    client: &Client,
    dev: &DeviceAddress,
    file: ObjectIdentifier,
    max_size: usize,
) -> Result<Vec<u8>, Failure> {
    let mut text = Vec::new();
    let mut next = 0i32;
    loop {
        let access = ReadAccess::Record { start_record: next, record_count: RECORDS_PER_WRITE as u32 };
        let ack = client.atomic_read_file(dev, file, access).await?;
        let FileData::Record { records, .. } = ack.data else { unreachable!("the client checks the access method") };
        for r in &records {
            text.extend_from_slice(r);
            text.push(b'\n');
        }
        if text.len() > max_size {
            return Err(Failure { code: super::exit::OTHER, message: format!("{file} is larger than --max-size") });
        }
        if ack.end_of_file || records.is_empty() {
            return Ok(text);
        }
        next += records.len() as i32;
    }
}
