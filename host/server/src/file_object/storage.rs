//! The octets behind File objects: one directory (the device's plugin data
//! directory), opened once, every path resolved beneath it.
//!
//! Paths are resolved with `cap-primitives` (what WASI's preopens use):
//! `..`, absolute paths and symbolic links that lead out of the directory
//! fail to open, however the directory's contents change between calls —
//! including when a plugin with a writable `/data` plants links there.
//!
//! Stream files are read and written in place (`pread`/`pwrite`). Record
//! files are text: a record is a line, its `\n` not part of it; a record
//! write rewrites the file through a temporary file renamed over it, so a
//! reader sees the records before or after, never a mix.
//!
//! A stream write the disk refuses part of (a full disk) is cut back to the
//! file's old end: an append is whole or not there. (An overwrite inside
//! the file needs no new blocks, so a full disk does not cut it.)
//!
//! Must never: open anything outside the directory, read or write more than
//! the file's `max_size`, or leave a partly written record file in place.

use cap_primitives::fs::{DirOptions, OpenOptions};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};

/// The directory files live in.
#[derive(Debug)]
pub struct Storage {
    dir: File,
    shown: PathBuf,
}

/// Why a file operation failed, as the File object reports it.
#[derive(Debug)]
pub enum StorageError {
    /// A start position or record past the end (invalid-file-start-position).
    StartPosition,
    /// The file would grow past its `max_size` (file-full).
    Full,
    /// A record holds a line feed, which would split it in two.
    RecordWithLineFeed,
    /// The file system refused.
    Io(io::Error),
}

impl From<io::Error> for StorageError {
    fn from(e: io::Error) -> Self {
        StorageError::Io(e)
    }
}

/// Check that `path` is relative and only descends (no `..`, no root): the
/// configuration error is caught at start, before any request.
pub fn check_relative(path: &Path) -> Result<(), String> {
    if path.as_os_str().is_empty() {
        return Err("the path is empty".into());
    }
    for c in path.components() {
        match c {
            Component::Normal(_) => {}
            Component::CurDir => {}
            _ => return Err(format!("{} must stay inside the data directory (relative, no `..`)", path.display())),
        }
    }
    Ok(())
}

impl Storage {
    /// Open the directory `dir`.
    pub fn open(dir: &Path) -> io::Result<Storage> {
        let handle = cap_primitives::fs::open_ambient_dir(dir, cap_primitives::ambient_authority())?;
        Ok(Storage { dir: handle, shown: dir.to_path_buf() })
    }

    /// The directory, for messages.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    fn open_file(&self, path: &Path, write: bool) -> io::Result<Option<File>> {
        let mut o = OpenOptions::new();
        o.read(true).write(write).create(write);
        match cap_primitives::fs::open(&self.dir, path, &o) {
            Ok(f) => {
                if !f.metadata()?.is_file() {
                    return Err(io::Error::other("not a regular file"));
                }
                Ok(Some(f))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && !write => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.create_parents(path)?;
                cap_primitives::fs::open(&self.dir, path, &o).map(Some)
            }
            Err(e) => Err(e),
        }
    }

    fn create_parents(&self, path: &Path) -> io::Result<()> {
        let mut at = PathBuf::new();
        let parents: Vec<_> = path.parent().map(|p| p.components().collect()).unwrap_or_default();
        for c in parents {
            at.push(c);
            match cap_primitives::fs::create_dir(&self.dir, &at, &DirOptions::new()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Size and modification time; a file not yet written is empty.
    pub fn stat(&self, path: &Path) -> io::Result<(u64, Option<std::time::SystemTime>)> {
        match self.open_file(path, false)? {
            Some(f) => {
                let m = f.metadata()?;
                Ok((m.len(), m.modified().ok()))
            }
            None => Ok((0, None)),
        }
    }

    /// Up to `count` octets from `start`; true when they reach the end.
    pub fn read_stream(&self, path: &Path, start: u64, count: usize) -> Result<(Vec<u8>, bool), StorageError> {
        let Some(f) = self.open_file(path, false)? else {
            return if start == 0 { Ok((Vec::new(), true)) } else { Err(StorageError::StartPosition) };
        };
        let size = f.metadata()?.len();
        if start > size {
            return Err(StorageError::StartPosition);
        }
        let n = (size - start).min(count as u64) as usize;
        let mut data = vec![0; n];
        f.read_exact_at(&mut data, start)?;
        Ok((data, start + n as u64 >= size))
    }

    /// Write `data` at `start` (`None`: append); the position written at.
    pub fn write_stream(
        &self,
        path: &Path,
        start: Option<u64>,
        data: &[u8],
        max_size: u64,
    ) -> Result<u64, StorageError> {
        let f = self.open_file(path, true)?.ok_or(StorageError::StartPosition)?;
        let size = f.metadata()?.len();
        let at = start.unwrap_or(size);
        if at > size {
            return Err(StorageError::StartPosition);
        }
        if at + data.len() as u64 > max_size {
            return Err(StorageError::Full);
        }
        if let Err(e) = f.write_all_at(data, at) {
            // A disk that took only part of it (full): what it added past
            // the old end is cut, so no later append lands behind a torn one.
            if f.metadata().is_ok_and(|m| m.len() > size) {
                let _ = f.set_len(size);
            }
            return Err(e.into());
        }
        Ok(at)
    }

    /// Cut the file to `len` octets (never longer).
    pub fn truncate(&self, path: &Path, len: u64) -> Result<(), StorageError> {
        let f = self.open_file(path, true)?.ok_or(StorageError::StartPosition)?;
        if len > f.metadata()?.len() {
            return Err(StorageError::StartPosition);
        }
        f.set_len(len)?;
        Ok(())
    }

    /// Every record of a record file (bounded by `max_size`).
    pub fn records(&self, path: &Path, max_size: u64) -> Result<Vec<Vec<u8>>, StorageError> {
        let Some(mut f) = self.open_file(path, false)? else { return Ok(Vec::new()) };
        // Larger than its bound (put there by someone else): refused whole,
        // so no write ever cuts what was not read.
        if f.metadata()?.len() > max_size {
            return Err(StorageError::Full);
        }
        let mut text = Vec::new();
        f.read_to_end(&mut text)?;
        if text.is_empty() {
            return Ok(Vec::new());
        }
        if text.last() == Some(&b'\n') {
            text.pop();
        }
        Ok(text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect())
    }

    /// Replace the records from `start` (`None`: append) with `new`; the
    /// record number written at. The file is replaced whole, by rename.
    pub fn write_records(
        &self,
        path: &Path,
        start: Option<usize>,
        new: &[Vec<u8>],
        max_size: u64,
    ) -> Result<usize, StorageError> {
        if new.iter().any(|r| r.contains(&b'\n')) {
            return Err(StorageError::RecordWithLineFeed);
        }
        let mut records = self.records(path, max_size)?;
        let at = start.unwrap_or(records.len());
        if at > records.len() {
            return Err(StorageError::StartPosition);
        }
        let end = (at + new.len()).min(records.len());
        records.splice(at..end, new.iter().cloned());
        self.replace_records(path, &records, max_size)?;
        Ok(at)
    }

    /// Keep the first `count` records.
    pub fn truncate_records(&self, path: &Path, count: usize, max_size: u64) -> Result<(), StorageError> {
        let mut records = self.records(path, max_size)?;
        if count > records.len() {
            return Err(StorageError::StartPosition);
        }
        records.truncate(count);
        self.replace_records(path, &records, max_size)
    }

    fn replace_records(&self, path: &Path, records: &[Vec<u8>], max_size: u64) -> Result<(), StorageError> {
        let size: u64 = records.iter().map(|r| r.len() as u64 + 1).sum();
        if size > max_size {
            return Err(StorageError::Full);
        }
        let mut text = Vec::with_capacity(size as usize);
        for r in records {
            text.extend_from_slice(r);
            text.push(b'\n');
        }
        let mut temp = path.as_os_str().to_owned();
        temp.push(".trellis-new");
        let temp = PathBuf::from(temp);
        let mut o = OpenOptions::new();
        o.write(true).create(true).truncate(true);
        self.create_parents(path)?;
        let f = cap_primitives::fs::open(&self.dir, &temp, &o)?;
        f.write_all_at(&text, 0)?;
        f.sync_data()?;
        cap_primitives::fs::rename(&self.dir, &temp, &self.dir, path)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trellis-storage-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn no_path_leads_out_of_the_directory() {
        let root = scratch("escape");
        let outside = root.with_extension("outside");
        std::fs::write(&outside, b"secret").unwrap();
        let data = root.join("data");
        std::fs::create_dir(&data).unwrap();
        std::os::unix::fs::symlink(&outside, data.join("link")).unwrap();
        std::os::unix::fs::symlink("..", data.join("up")).unwrap();
        let s = Storage::open(&data).unwrap();
        for path in ["link", "../data.outside", "up/data.outside", "/etc/hostname"] {
            assert!(s.read_stream(Path::new(path), 0, 10).is_err(), "{path} was read");
            assert!(s.write_stream(Path::new(path), Some(0), b"x", 100).is_err(), "{path} was written");
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
        assert!(check_relative(Path::new("a/../b")).is_err() && check_relative(Path::new("/a")).is_err());
        assert!(check_relative(Path::new("a/b.txt")).is_ok());
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_file(&outside).unwrap();
    }

    #[test]
    fn streams_grow_within_their_bound_and_records_are_lines() {
        let root = scratch("ops");
        let s = Storage::open(&root).unwrap();
        let p = Path::new("sub/dir/f.bin");
        assert_eq!(s.read_stream(p, 0, 10).unwrap(), (vec![], true), "a file not yet written is empty");
        assert_eq!(s.write_stream(p, None, b"hello", 8).unwrap(), 0);
        assert_eq!(s.write_stream(p, None, b"!", 8).unwrap(), 5);
        assert!(matches!(s.write_stream(p, Some(7), b"x", 8), Err(StorageError::StartPosition)));
        assert!(matches!(s.write_stream(p, Some(6), b"xyz", 8), Err(StorageError::Full)));
        assert_eq!(s.read_stream(p, 1, 3).unwrap(), (b"ell".to_vec(), false));
        assert_eq!(s.read_stream(p, 4, 30).unwrap(), (b"o!".to_vec(), true));
        s.truncate(p, 2).unwrap();
        assert_eq!(s.stat(p).unwrap().0, 2);

        let r = Path::new("log.csv");
        assert_eq!(s.write_records(r, None, &[b"a".to_vec(), b"b".to_vec()], 100).unwrap(), 0);
        assert_eq!(s.write_records(r, Some(1), &[b"B".to_vec(), b"c".to_vec()], 100).unwrap(), 1);
        assert_eq!(s.records(r, 100).unwrap(), vec![b"a".to_vec(), b"B".to_vec(), b"c".to_vec()]);
        assert!(matches!(s.write_records(r, None, &[b"x\ny".to_vec()], 100), Err(StorageError::RecordWithLineFeed)));
        assert!(matches!(s.write_records(r, Some(4), &[b"x".to_vec()], 100), Err(StorageError::StartPosition)));
        assert!(matches!(s.write_records(r, None, &[vec![b'z'; 100]], 100), Err(StorageError::Full)));
        s.truncate_records(r, 1, 100).unwrap();
        assert_eq!(std::fs::read(root.join(r)).unwrap(), b"a\n");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
