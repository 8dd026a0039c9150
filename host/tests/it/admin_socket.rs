//! Where the admin socket may live (issue #5 item 4): `admin::bind` creates
//! a missing directory private, and refuses — without changing it — a
//! directory that is a symbolic link, that others may enter, or that belongs
//! to someone else. Each refusal is one line naming the directory.

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

impl Scratch {
    /// A directory `name` with permissions `mode`.
    fn dir(&self, name: &str, mode: u32) -> PathBuf {
        let d = self.0.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

fn refusal(socket: &Path) -> String {
    let e = trellis::admin::bind(socket).expect_err("the directory must be refused").to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(!socket.exists(), "no socket may be made in a refused directory");
    e
}

fn my_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[tokio::test]
async fn a_missing_socket_directory_is_created_private_and_the_socket_is_owner_only() {
    let scratch = Scratch::new("admin", "missing");
    let dir = scratch.0.join("run").join("trellis");
    let socket = dir.join("admin.sock");
    let listener = trellis::admin::bind(&socket).unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(std::fs::symlink_metadata(&dir).unwrap().uid(), my_uid());
    assert_eq!(mode(&socket), 0o600);
    drop(listener);
    // A stale socket from a gateway that died is replaced; a private
    // directory we made before is used as it is.
    let again = trellis::admin::bind(&socket).unwrap();
    drop(again);
}

#[tokio::test]
async fn a_symlinked_socket_directory_is_refused_and_its_target_left_as_it_was() {
    let scratch = Scratch::new("admin", "symlink");
    let target = scratch.dir("elsewhere", 0o755);
    let link = scratch.0.join("trellis-link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let e = refusal(&link.join("admin.sock"));
    assert_eq!(e, format!("admin socket directory {} is a symbolic link; refusing it", link.display()));
    assert_eq!(mode(&target), 0o755, "the link's target was changed");
    assert!(!target.join("admin.sock").exists());
}

#[tokio::test]
async fn a_socket_directory_others_may_enter_is_refused_and_not_chmodded() {
    let scratch = Scratch::new("admin", "mode");
    let dir = scratch.dir("open", 0o755);
    let e = refusal(&dir.join("admin.sock"));
    assert_eq!(e, format!("admin socket directory {} has mode 0755, not 0700; refusing it", dir.display()));
    assert_eq!(mode(&dir), 0o755, "the directory was changed");
    let dir = scratch.dir("group", 0o770);
    let e = refusal(&dir.join("admin.sock"));
    assert!(e.contains("has mode 0770, not 0700"), "{e}");
}

#[tokio::test]
async fn a_socket_directory_owned_by_another_user_is_refused() {
    if my_uid() != 0 {
        println!("NOTE: not root, so no directory can be given to another user here; test skipped");
        return;
    }
    let scratch = Scratch::new("admin", "owner");
    let dir = scratch.dir("theirs", 0o700);
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let e = refusal(&dir.join("admin.sock"));
    assert_eq!(
        e,
        format!("admin socket directory {} belongs to uid 65534, not to us (uid 0); refusing it", dir.display())
    );
    assert_eq!(std::fs::symlink_metadata(&dir).unwrap().uid(), 65534);
}

#[test]
fn trellis_run_names_a_refused_socket_directory_and_serves_without_it() {
    let scratch = Scratch::new("admin", "run");
    // The gateway helper's socket directory, made beforehand and open to all.
    let socket = Gateway::socket_in(&scratch.0);
    std::fs::create_dir(socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(socket.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = free_port().to_string();
    let gateway = Gateway::start(&["run", "--port", &port], &scratch.0).unwrap_or_else(|log| panic!("exited:\n{log}"));
    let log = gateway.log();
    let line = log.lines().find(|l| l.contains("no admin socket")).unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        line,
        format!(
            "trellis: no admin socket (admin socket directory {} has mode 0755, not 0700; refusing it); \
             hot swap is unavailable",
            socket.parent().unwrap().display()
        )
    );
    assert!(!socket.exists());
}
