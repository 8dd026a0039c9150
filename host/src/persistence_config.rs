//! `[device.persistence]`: where a device keeps what clients wrote and it
//! acknowledged, so a restart, a crash or a power loss does not forget it
//! (issue 42).
//!
//! ```toml
//! [device.persistence]
//! dir = "/var/lib/trellis/1001"   # one directory per device (relative: to the configuration file)
//! durability = "power-loss"       # each write flushed to the disk before it is acknowledged (default);
//!                                 # "process": written, not flushed — survives a crash, not a power loss
//! ```
//!
//! Two journals live in the directory: `model.*` (the object model's
//! priority arrays, Out_Of_Service, written configuration, created
//! objects, trend logs: `trellis_plugin`'s disk state) and `host.*` (the
//! host's objects — Notification Classes, Schedules, Calendars,
//! Restart_Notification_Recipients — and COV subscriptions:
//! `trellis_server::retained`). Without the section nothing is kept: a
//! restart starts from the configuration.
//!
//! Must never: let two devices share a directory.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use trellis_persist::{Durability, Journal, Recovered};

/// `[device.persistence]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PersistenceSection {
    /// The device's state directory (created if missing).
    pub dir: PathBuf,
    /// `"power-loss"` (default) or `"process"`.
    #[serde(default)]
    pub durability: DurabilitySetting,
}

/// How hard an acknowledged write is kept.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DurabilitySetting {
    /// Flushed to the disk before the acknowledgment.
    #[default]
    PowerLoss,
    /// Written to the operating system before the acknowledgment.
    Process,
}

/// The two journals of one device, opened.
pub struct DeviceJournals {
    /// The object model's.
    pub model: (Journal, Recovered),
    /// The host objects'.
    pub host: (Journal, Recovered),
    /// The directory, resolved.
    pub dir: PathBuf,
}

impl PersistenceSection {
    /// The directory, relative paths taken from `base` (the configuration
    /// file's directory).
    pub fn resolved_dir(&self, base: &Path) -> PathBuf {
        if self.dir.is_absolute() { self.dir.clone() } else { base.join(&self.dir) }
    }

    /// Open both journals (reading back what they hold).
    pub fn open(&self, base: &Path) -> anyhow::Result<DeviceJournals> {
        let dir = self.resolved_dir(base);
        let durability = match self.durability {
            DurabilitySetting::PowerLoss => Durability::PowerLoss,
            DurabilitySetting::Process => Durability::Process,
        };
        let open = |name| {
            Journal::open(&dir, name, durability)
                .with_context(|| format!("persistence.dir {}: the {name} journal", dir.display()))
        };
        Ok(DeviceJournals { model: open("model")?, host: open("host")?, dir: dir.clone() })
    }
}

/// Refuse two devices keeping their state in one directory.
pub fn check_distinct<'a>(
    sections: impl Iterator<Item = Option<&'a PersistenceSection>>,
    base: &Path,
) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeMap::new();
    for (i, s) in sections.enumerate() {
        let Some(s) = s else { continue };
        if let Some(first) = seen.insert(s.resolved_dir(base), i + 1) {
            anyhow::bail!(
                "devices {first} and {} both keep their state in persistence.dir {}: give each its own",
                i + 1,
                s.dir.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_parses_with_its_default_and_refuses_unknown_words() {
        let s: PersistenceSection = toml::from_str("dir = \"state\"").unwrap();
        assert_eq!(s.durability, DurabilitySetting::PowerLoss);
        let s: PersistenceSection = toml::from_str("dir = \"s\"\ndurability = \"process\"").unwrap();
        assert_eq!(s.durability, DurabilitySetting::Process);
        assert!(toml::from_str::<PersistenceSection>("dir = \"s\"\ndurability = \"always\"").is_err());
        assert!(toml::from_str::<PersistenceSection>("dir = \"s\"\nsync = true").is_err());
    }

    #[test]
    fn two_devices_may_not_share_a_directory() {
        let a: PersistenceSection = toml::from_str("dir = \"state\"").unwrap();
        let b: PersistenceSection = toml::from_str("dir = \"/etc/../base/state\"").unwrap();
        let base = Path::new("/base");
        assert!(check_distinct([Some(&a), None].into_iter(), base).is_ok());
        let err = check_distinct([Some(&a), Some(&a)].into_iter(), base).unwrap_err().to_string();
        assert!(err.contains("devices 1 and 2"), "{err}");
        assert!(check_distinct([Some(&a), Some(&b)].into_iter(), base).is_ok(), "paths compared as written");
    }
}
