//! Reading a plugin's files — its component, `.wasm.sig` and manifest, and
//! a signing key — with a size bound that holds whatever the path names.
//!
//! A vendor package may carry a symlink to `/dev/zero`, a named pipe, or a
//! file that reports 0 bytes and holds more (`/proc`): the length in a
//! file's metadata means nothing there. So [`read`] refuses anything that
//! is not a regular file — checked before opening (opening a device can do
//! something: a serial line raises DTR) and again on the opened handle
//! (the path may have been swapped in between) — opens without blocking
//! (a pipe with no writer would wait forever), and reads at most one byte
//! past the bound to tell "exactly the limit" from "more".
//!
//! This module must never block on opening, read more than `limit + 1`
//! bytes, or read from anything but a regular file.

use std::fs::{FileType, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file was not read. One line, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A named pipe, a device, a socket or a directory.
    #[error("{path} is not a regular file (a {kind})", path = path.display())]
    NotRegular {
        /// The path as given.
        path: PathBuf,
        /// What it is instead ("named pipe", "character device", …).
        kind: &'static str,
    },
    /// It holds more than the bound.
    #[error("{path} is larger than {limit} bytes", path = path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The bound.
        limit: u64,
    },
    /// The system refused.
    #[error("cannot read {path}: {source}", path = path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Read the regular file at `path` (symlinks followed) if it holds at most
/// `limit` bytes; `Ok(None)` if nothing is there.
pub fn read(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let io = |source: std::io::Error| ReadError::Io { path: path.to_path_buf(), source };
    let not_regular = |t: FileType| ReadError::NotRegular { path: path.to_path_buf(), kind: kind(t) };
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err(not_regular(m.file_type())),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    }
    let nonblocking = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = OpenOptions::new().read(true).custom_flags(nonblocking.bits() as i32).open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), limit });
    }
    Ok(Some(bytes))
}

fn kind(t: FileType) -> &'static str {
    if t.is_fifo() {
        "named pipe"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("trellis-bounded-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
        let d = scratch("limit");
        let f = d.join("f");
        std::fs::write(&f, [7u8; 16]).unwrap();
        assert_eq!(read(&f, 16).unwrap(), Some(vec![7u8; 16]));
        let e = read(&f, 15).unwrap_err();
        assert_eq!(e.to_string(), format!("{} is larger than 15 bytes", f.display()));
        assert_eq!(read(&d.join("missing"), 15).unwrap(), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_directories_and_files_that_understate_their_size_are_refused() {
        let e = read(Path::new("/dev/zero"), 4096).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero is not a regular file (a character device)");
        let e = read(Path::new("/"), 4096).unwrap_err();
        assert_eq!(e.to_string(), "/ is not a regular file (a directory)");
        // Reports 0 bytes; holds a line per mapping of this process.
        let e = read(Path::new("/proc/self/maps"), 16).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { limit: 16, .. }), "{e}");
    }
}
