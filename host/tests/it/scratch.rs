//! A scratch directory for one test, removed on drop. Modules add their own
//! helpers in `impl Scratch` blocks of their own.

use std::path::PathBuf;

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty directory for `test` of `area`, unique to this process.
    pub fn new(area: &str, test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("trellis-{area}-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// The path of `name` inside it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
