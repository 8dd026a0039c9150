//! Device state that outlives the process: what a client wrote and the
//! device acknowledged, kept on disk so that a restart, a `kill -9` or a
//! power loss does not forget it (issue 42).
//!
//! One [`Journal`] per owner of state (a device's object model, the host's
//! own tables of that device) holds a snapshot of the whole state and the
//! records appended since. The owner decides what a record and a snapshot
//! mean; this crate only makes them durable and reads them back:
//!
//! - [`Journal::append`] writes records before the owner acknowledges what
//!   they describe (and `fsync`s them when the [`Durability`] asks for it,
//!   once per batch of requests inside [`group_commit`]);
//! - [`Journal::replace_snapshot`] writes a new snapshot and starts an
//!   empty journal after it, each through a temporary file renamed into
//!   place, so a crash at any point leaves either the old pair or the new;
//! - [`Journal::open`] reads both back. Damage — a torn last record, a
//!   checksum that does not match, a header that is not ours — is reported
//!   in [`Recovered::notes`], the file is cut at the damage, the octets
//!   after it are set aside in a file beside it, and everything before it
//!   is kept. Opening never fails because of what a file holds, only when
//!   the directory cannot be used at all.
//!
//! Must never: acknowledge (return from `append`) before the records are
//! written, refuse to open because of a damaged file, or delete damaged
//! octets without setting them aside.

mod atomic_file;
mod group_commit;
mod journal;

pub use atomic_file::write_atomically;
pub use group_commit::{group_commit, sync_deferred};
pub use journal::{Durability, Journal, MAX_RECORD, Note, Recovered};
