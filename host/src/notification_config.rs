//! `[[device.notification_class]]`: Notification Class objects (Clause
//! 12.21) in the configuration file, and their recipients.
//!
//! ```toml
//! [[device.notification_class]]
//! instance = 1
//! name = "zone-alarms"
//! priority = [100, 100, 200]              # to-offnormal, to-fault, to-normal (0 highest)
//! ack_required = ["to-offnormal", "to-fault"]
//! writable = true                         # a commissioning tool may rewrite the three above (default false)
//!
//! [[device.notification_class.recipient]]
//! address = "127.0.0.1:47809"             # a B/IP station on this network; or device = 1234
//! process = 7                             # echoed in each notification
//! confirmed = true                        # ConfirmedEventNotification
//! days = ["mon", "tue", "wed", "thu", "fri"]   # default: every day
//! from = "07:00"                          # default: the whole day
//! to = "18:30"
//! transitions = ["to-offnormal", "to-normal"]  # default: all three
//! ```
//!
//! Must never: accept a recipient that names no one (neither `address` nor
//! `device`, or both), a day or transition it does not know, or a time
//! that is not a time of day.

use anyhow::{Context, bail, ensure};
use bacnet::cov::Recipient;
use bacnet::services::Destination;
use bacnet::{BitString, ObjectIdentifier, ObjectType, Time};
use serde::{Deserialize, Serialize};
use std::net::SocketAddrV4;
use trellis_server::notification_class::NotificationClassConfig;

/// One `[[device.notification_class]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NotificationClassSection {
    /// Its instance, which is also its class number.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Priority of to-offnormal, to-fault and to-normal notifications.
    #[serde(default = "default_priority")]
    pub priority: [u32; 3],
    /// The transitions that wait for an acknowledgment.
    #[serde(default)]
    pub ack_required: Vec<String>,
    /// Recipient_List.
    #[serde(default, rename = "recipient")]
    pub recipients: Vec<RecipientSection>,
    /// Let WriteProperty change Priority, Ack_Required and Recipient_List
    /// (default false: whoever writes them can redirect or silence alarms).
    #[serde(default)]
    pub writable: bool,
}

fn default_priority() -> [u32; 3] {
    [255, 255, 255]
}

/// One `[[device.notification_class.recipient]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RecipientSection {
    /// A B/IP station on the local network, `IP:PORT`.
    pub address: Option<SocketAddrV4>,
    /// A device, by instance.
    pub device: Option<u32>,
    /// The recipient's process identifier.
    #[serde(default)]
    pub process: u32,
    /// Confirmed notifications.
    #[serde(default)]
    pub confirmed: bool,
    /// Valid days (`mon` … `sun`); default every day.
    pub days: Option<Vec<String>>,
    /// From this time of day (`HH:MM[:SS[.hh]]`); default 00:00.
    pub from: Option<String>,
    /// To this time of day, inclusive; default 23:59:59.99.
    pub to: Option<String>,
    /// Which transitions; default all three.
    pub transitions: Option<Vec<String>>,
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const TRANSITIONS: [&str; 3] = ["to-offnormal", "to-fault", "to-normal"];

/// Bits named by `names` among `known` (in `known`'s order).
fn bits(names: &[String], known: &[&str], what: &str) -> anyhow::Result<BitString> {
    let mut set = vec![false; known.len()];
    for n in names {
        let Some(i) = known.iter().position(|k| k.eq_ignore_ascii_case(n.trim())) else {
            bail!("{what} {n:?}: expected one of {}", known.join(", "));
        };
        set[i] = true;
    }
    Ok(BitString::from_bits(&set))
}

/// `HH:MM[:SS[.hh]]` as a Time.
pub(crate) fn time_of_day(text: &str) -> anyhow::Result<Time> {
    let bad = || anyhow::anyhow!("time {text:?}: expected HH:MM, HH:MM:SS or HH:MM:SS.hh");
    let (hms, hundredths) = match text.split_once('.') {
        Some((hms, h)) => (hms, h.parse::<u8>().ok().filter(|h| *h < 100).ok_or_else(bad)?),
        None => (text, 0),
    };
    let parts: Vec<u8> = hms.split(':').map(|p| p.parse::<u8>()).collect::<Result<_, _>>().map_err(|_| bad())?;
    let (hour, minute, second) = match parts.as_slice() {
        [h, m] => (*h, *m, 0),
        [h, m, s] => (*h, *m, *s),
        _ => return Err(bad()),
    };
    ensure!(hour < 24 && minute < 60 && second < 60, bad());
    Ok(Time { hour, minute, second, hundredths })
}

/// A restart notification recipient: `IP:PORT` (a B/IP station on this
/// network), `device:N`, or `broadcast` (this network's broadcast).
pub fn restart_recipient(text: &str) -> anyhow::Result<Recipient> {
    let text = text.trim();
    if text == "broadcast" {
        return Ok(Recipient::Address { network_number: 0, mac_address: Vec::new() });
    }
    if let Some(instance) = text.strip_prefix("device:") {
        let instance: u32 = instance.parse().with_context(|| format!("{text:?}: device:N"))?;
        return Ok(Recipient::Device(
            ObjectIdentifier::new(ObjectType::DEVICE, instance).context("device instance out of range")?,
        ));
    }
    let a: SocketAddrV4 =
        text.parse().with_context(|| format!("recipient {text:?}: expected IP:PORT, device:N or broadcast"))?;
    let mut mac = a.ip().octets().to_vec();
    mac.extend_from_slice(&a.port().to_be_bytes());
    Ok(Recipient::Address { network_number: 0, mac_address: mac })
}

impl RecipientSection {
    /// The Recipient_List entry.
    pub fn resolve(&self) -> anyhow::Result<Destination> {
        let recipient = match (self.address, self.device) {
            (Some(a), None) => {
                let mut mac = a.ip().octets().to_vec();
                mac.extend_from_slice(&a.port().to_be_bytes());
                Recipient::Address { network_number: 0, mac_address: mac }
            }
            (None, Some(d)) => {
                Recipient::Device(ObjectIdentifier::new(ObjectType::DEVICE, d).context("device instance out of range")?)
            }
            _ => bail!("a recipient names either an address or a device"),
        };
        let days = match &self.days {
            Some(d) => bits(d, &DAYS, "day")?,
            None => BitString::from_bits(&[true; 7]),
        };
        let transitions = match &self.transitions {
            Some(t) => bits(t, &TRANSITIONS, "transition")?,
            None => BitString::from_bits(&[true; 3]),
        };
        Ok(Destination {
            valid_days: days,
            from_time: time_of_day(self.from.as_deref().unwrap_or("00:00"))?,
            to_time: time_of_day(self.to.as_deref().unwrap_or("23:59:59.99"))?,
            recipient,
            process_identifier: self.process,
            issue_confirmed_notifications: self.confirmed,
            transitions,
        })
    }
}

impl NotificationClassSection {
    /// The server's Notification Class configuration.
    pub fn resolve(&self) -> anyhow::Result<NotificationClassConfig> {
        let what = || format!("[[device.notification_class]] instance {}", self.instance);
        ensure!(self.instance < (1 << 22), "{}: instance out of range (0..4194303)", what());
        ensure!(self.priority.iter().all(|p| *p <= 255), "{}: a priority is 0..255", what());
        ensure!(
            self.recipients.len() <= trellis_server::notification_class::MAX_RECIPIENTS,
            "{}: at most {} recipients",
            what(),
            trellis_server::notification_class::MAX_RECIPIENTS
        );
        let ack = bits(&self.ack_required, &TRANSITIONS, "ack_required").with_context(what)?;
        let recipients = self
            .recipients
            .iter()
            .enumerate()
            .map(|(i, r)| r.resolve().with_context(|| format!("{}: recipient {}", what(), i + 1)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(NotificationClassConfig {
            instance: self.instance,
            name: self.name.clone(),
            description: self.description.clone(),
            priority: self.priority,
            ack_required: [ack.get(0), ack.get(1), ack.get(2)],
            recipients,
            writable: self.writable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> anyhow::Result<NotificationClassConfig> {
        toml::from_str::<NotificationClassSection>(text)?.resolve()
    }

    #[test]
    fn a_class_with_an_address_and_a_device_recipient() {
        let c = section(
            r#"
            instance = 4
            name = "zone-alarms"
            priority = [100, 100, 200]
            ack_required = ["to-offnormal", "to-fault"]
            [[recipient]]
            address = "127.0.0.1:47809"
            process = 7
            confirmed = true
            days = ["mon", "fri"]
            from = "07:00"
            to = "18:30:15.50"
            transitions = ["to-offnormal"]
            [[recipient]]
            device = 1234
            "#,
        )
        .unwrap();
        assert_eq!((c.priority, c.ack_required), ([100, 100, 200], [true, true, false]));
        let r = &c.recipients[0];
        assert_eq!(r.recipient, Recipient::Address { network_number: 0, mac_address: vec![127, 0, 0, 1, 0xBA, 0xC1] });
        assert_eq!(r.valid_days, BitString::from_bits(&[true, false, false, false, true, false, false]));
        assert_eq!((r.from_time.hour, r.to_time.minute, r.to_time.hundredths), (7, 30, 50));
        assert_eq!(r.transitions, BitString::from_bits(&[true, false, false]));
        assert!(r.issue_confirmed_notifications);
        let d = &c.recipients[1];
        assert_eq!(d.recipient, Recipient::Device(ObjectIdentifier::new(ObjectType::DEVICE, 1234).unwrap()));
        assert_eq!(d.transitions, BitString::from_bits(&[true; 3]), "all transitions by default");
    }

    #[test]
    fn mistakes_are_named() {
        let err = |t: &str| format!("{:#}", section(t).unwrap_err());
        assert!(
            err("instance = 1\nname = \"a\"\n[[recipient]]\nprocess = 1").contains("either an address or a device")
        );
        assert!(err("instance = 1\nname = \"a\"\n[[recipient]]\ndevice = 1\ndays = [\"funday\"]").contains("funday"));
        assert!(err("instance = 1\nname = \"a\"\n[[recipient]]\ndevice = 1\nfrom = \"25:00\"").contains("25:00"));
        assert!(err("instance = 1\nname = \"a\"\nack_required = [\"to-lunch\"]").contains("to-lunch"));
        assert!(err("instance = 1\nname = \"a\"\npriority = [1, 2, 300]").contains("0..255"));
    }
}
