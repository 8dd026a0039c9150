//! Replacing a file so that a crash leaves the old content or the new one,
//! never a mixture: write a temporary file beside it, flush it to the
//! disk, rename it over the old one, flush the directory.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Replace `file` with `bytes` atomically (creating the parent directory
/// if missing). When this returns, the new content survives a power loss:
/// the file's data and the directory entry are both flushed.
pub fn write_atomically(file: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp_name = file.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, file)?;
    sync_dir(dir)
}

/// Flush a directory's entries (a rename or a new file in it) to the disk.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_new_content_replaces_the_old_and_no_temporary_file_is_left() {
        let dir = std::env::temp_dir().join(format!("trellis-persist-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("sub").join("state");
        write_atomically(&file, b"one").unwrap();
        write_atomically(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
