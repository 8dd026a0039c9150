//! The directory the admin socket lives in: made, or accepted, only if
//! nobody but the gateway's user can put anything there.
//!
//! The socket is only as safe as its directory: whoever may write there can
//! replace the socket with one of their own, and a predictable path under
//! `/tmp` can be planted by anyone before the gateway starts — as a
//! directory of theirs, or as a symlink to somewhere else. So [`prepare`]
//! creates a missing directory with mode 0700 in one step, and accepts an
//! existing one only if it is a directory (not a symlink to one), belongs to
//! our effective uid and has mode 0700. It looks with `lstat` and then at the
//! directory itself, opened with `O_NOFOLLOW`, so no check follows a symlink.
//!
//! Must never: change a directory it did not create (no chmod, no chown),
//! follow a symlink, or accept a directory another user could write to.

use std::fs::{Metadata, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why the admin socket's directory was refused. One line, naming it.
#[derive(Debug, thiserror::Error)]
pub enum SocketDirError {
    /// A symbolic link (to wherever).
    #[error("admin socket directory {path} is a symbolic link; refusing it", path = path.display())]
    Symlink {
        /// The directory.
        path: PathBuf,
    },
    /// Something other than a directory.
    #[error("admin socket directory {path} is not a directory; refusing it", path = path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// Another user's.
    #[error("admin socket directory {path} belongs to uid {owner}, not to us (uid {me}); refusing it", path = path.display())]
    Owner {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        me: u32,
    },
    /// Others (or the group) may enter or write.
    #[error("admin socket directory {path} has mode {mode:04o}, not 0700; refusing it", path = path.display())]
    Mode {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The system refused.
    #[error("cannot {action} admin socket directory {path}: {error}", path = path.display())]
    Io {
        /// "create", "inspect" or "open".
        action: &'static str,
        /// The directory.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Our effective uid: the owner of what we create.
pub fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Make sure `dir` is a private directory of ours: create it (and missing
/// parents) with mode 0700, or check the one that is there.
pub fn prepare(dir: &Path) -> Result<(), SocketDirError> {
    let io = |action, error| SocketDirError::Io { action, path: dir.to_path_buf(), error };
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| io("create", e))?;
        }
        Err(e) => return Err(io("inspect", e)),
        Ok(_) => {}
    }
    // Whatever is there now, made by us a moment ago or not: the path
    // itself, then the directory it names, opened without following a link.
    check(dir, &std::fs::symlink_metadata(dir).map_err(|e| io("inspect", e))?)?;
    let flags = rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NOFOLLOW;
    let opened = OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(dir).map_err(|e| {
        if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
            SocketDirError::Symlink { path: dir.to_path_buf() }
        } else {
            io("open", e)
        }
    })?;
    check(dir, &opened.metadata().map_err(|e| io("inspect", e))?)
}

fn check(path: &Path, meta: &Metadata) -> Result<(), SocketDirError> {
    let path = path.to_path_buf();
    let me = my_uid();
    if meta.file_type().is_symlink() {
        return Err(SocketDirError::Symlink { path });
    }
    if !meta.is_dir() {
        return Err(SocketDirError::NotADirectory { path });
    }
    if meta.uid() != me {
        return Err(SocketDirError::Owner { path, owner: meta.uid(), me });
    }
    let mode = meta.mode() & 0o777;
    if mode != 0o700 {
        return Err(SocketDirError::Mode { path, mode });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_where_the_directory_should_be_is_refused() {
        let d = std::env::temp_dir().join(format!("trellis-admin-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        prepare(&d).unwrap();
        let f = d.join("file");
        std::fs::write(&f, b"").unwrap();
        let e = prepare(&f).unwrap_err().to_string();
        assert_eq!(e, format!("admin socket directory {} is not a directory; refusing it", f.display()));
        let _ = std::fs::remove_dir_all(&d);
    }
}
