//! `[[device]]`: one served device, its plugin and its limits, and the
//! File objects the host serves for it.

use super::*;
use serde::Deserialize;

/// One `[[device]]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    /// `IP` or `IP/PREFIX` to bind.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// UDP port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Device instance presented on the network; default: the model's.
    pub instance: Option<u32>,
    /// Vendor_Identifier.
    #[serde(default = "default_vendor")]
    pub vendor_id: u16,
    /// `builtin:demo-building`, `builtin:bulk-objects`, or a `.wasm` path
    /// (relative paths are relative to the config file).
    #[serde(default = "default_plugin")]
    pub plugin: String,
    /// Host directory the plugin sees as `/data`.
    pub data_dir: Option<PathBuf>,
    /// Milliseconds between `tick` calls.
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    /// Plugin memory limit in MiB.
    #[serde(default = "default_memory")]
    pub memory_mb: u64,
    /// Per-call time limit in milliseconds.
    #[serde(default = "default_deadline")]
    pub deadline_ms: u64,
    /// Hot-swap the plugin when its file changes (file plugins only; the new
    /// file goes through the same signature and capability policy).
    #[serde(default)]
    pub watch: bool,
    /// `[device.limits]`: admission control and answer bounds.
    #[serde(default)]
    pub limits: LimitsSection,
    /// Password DeviceCommunicationControl and ReinitializeDevice must
    /// carry (1 to 20 characters); without one, any is accepted.
    pub password: Option<String>,
    /// Let Time/UTCTimeSynchronization set the clock the plugin sees.
    #[serde(default = "default_true")]
    pub accept_time_sync: bool,
    /// Serve on this MS/TP port instead of B/IP (`bind` and `port` are
    /// then unused).
    pub mstp: Option<MstpSection>,
    /// Live on this virtual network behind the gateway's router (`[router]`)
    /// instead of on a port of its own (`bind` and `port` are then unused).
    pub virtual_network: Option<u16>,
    /// Make this device's B/IP port a BBMD.
    pub bbmd: Option<BbmdSection>,
    /// Serve on a BACnet/IPv6 port instead of B/IP (`bind` and `port` are
    /// then unused); the device's VMAC is its `instance`.
    pub bip6: Option<Bip6Section>,
    /// Serve on a BACnet/SC port instead of B/IP (`bind` and `port` are
    /// then unused), optionally running the hub function too.
    pub sc: Option<crate::sc_port::ScSection>,
    /// Serve on a BACnet Ethernet port instead of B/IP (`bind` and `port`
    /// are then unused).
    pub ethernet: Option<EthernetSection>,
    /// `[[device.file]]`: File objects over files in `data_dir`.
    #[serde(default, rename = "file", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSection>,
    /// `[[device.notification_class]]`: Notification Class objects.
    #[serde(default, rename = "notification_class", skip_serializing_if = "Vec::is_empty")]
    pub notification_classes: Vec<crate::notification_config::NotificationClassSection>,
    /// `[[device.schedule]]`: Schedule objects.
    #[serde(default, rename = "schedule", skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<crate::schedule_config::ScheduleSection>,
    /// `[[device.calendar]]`: Calendar objects.
    #[serde(default, rename = "calendar", skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<crate::schedule_config::CalendarSection>,
    /// Restart_Notification_Recipients: `"IP:PORT"`, `"device:N"` or
    /// `"broadcast"` (the local network); they are told when the device
    /// starts and after a ReinitializeDevice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_notification_recipients: Vec<String>,
    /// Object types a front end may create with CreateObject (and delete
    /// once created): `"schedule"` and `"calendar"` (the host's), and the
    /// model's types (`"analog-value"`, …) for a plugin that creates them
    /// (its manifest asks for `create_objects`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub create_objects: Vec<String>,
    /// `[device.persistence]`: keep what clients wrote across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<crate::persistence_config::PersistenceSection>,
}

/// One `[[device.file]]`: a File object (Clause 12.13) the host serves from
/// a file in the device's `data_dir`, read and written with
/// AtomicReadFile/AtomicWriteFile.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FileSection {
    /// The File object's instance.
    pub instance: u32,
    /// Object_Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// The file, relative to `data_dir` (no `..`; links never lead out).
    pub path: PathBuf,
    /// `stream` (octets at positions) or `record` (a record is a line).
    #[serde(default = "default_file_access")]
    pub access: String,
    /// File_Type.
    #[serde(default = "default_file_type")]
    pub file_type: String,
    /// Let AtomicWriteFile change it (a plugin file's manifest must also
    /// ask for `data_dir = "write"`, granted by `[policy] allow_data_write`).
    #[serde(default)]
    pub writable: bool,
    /// The most octets it may hold (default 16 MiB).
    #[serde(default = "default_file_max_size")]
    pub max_size: u64,
}

fn default_file_access() -> String {
    "stream".into()
}
fn default_file_type() -> String {
    "application/octet-stream".into()
}
fn default_file_max_size() -> u64 {
    16 << 20
}

impl FileSection {
    /// The server's File object configuration; `may_write` is whether the
    /// device's plugin was granted a writable data directory.
    pub fn resolve(&self, may_write: bool) -> anyhow::Result<trellis_server::file_object::FileConfig> {
        use trellis_server::file_object::{AccessMethod, FileConfig, check_relative};
        let what = || format!("[[device.file]] instance {}", self.instance);
        anyhow::ensure!(self.instance < (1 << 22), "{}: instance out of range (0..4194303)", what());
        check_relative(&self.path).map_err(|e| anyhow::anyhow!("{}: path {e}", what()))?;
        let access = match self.access.as_str() {
            "stream" => AccessMethod::Stream,
            "record" => AccessMethod::Record,
            other => anyhow::bail!("{}: access = {other:?}: expected \"stream\" or \"record\"", what()),
        };
        if self.writable && !may_write {
            tracing::warn!(
                file = self.instance,
                "[[device.file]] is writable, but the plugin's data directory is not granted for writing: read-only"
            );
        }
        Ok(FileConfig {
            instance: self.instance,
            name: self.name.clone(),
            description: self.description.clone(),
            path: self.path.clone(),
            file_type: self.file_type.clone(),
            access,
            writable: self.writable && may_write,
            max_size: self.max_size,
        })
    }
}

/// `[device.limits]`; every field optional, defaults in
/// [`crate::server::Limits`].
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// Confirmed requests in progress per peer (default 16); more are
    /// refused with Abort out-of-resources.
    pub max_requests_per_peer: Option<usize>,
    /// Confirmed requests in progress over all peers (default 1024).
    pub max_requests: Option<usize>,
    /// Results in one ReadPropertyMultiple answer (default 256).
    pub max_rpm_results: Option<usize>,
    /// Octets in one ReadPropertyMultiple answer, segmented or not
    /// (default 16384).
    pub max_rpm_octets: Option<usize>,
    /// Objects one device may serve (default 10000).
    pub max_objects: Option<usize>,
    /// COV subscriptions one subscriber may hold (default 64).
    pub max_cov_per_subscriber: Option<usize>,
    /// COV subscriptions over all subscribers (default 4096).
    pub max_cov_subscriptions: Option<usize>,
    /// COV subscriptions over all ports of one IP address (default 1024).
    pub max_cov_per_address: Option<usize>,
    /// The COV table's last places, kept for addresses holding fewer than
    /// `max_cov_per_subscriber` (default 256).
    pub reserved_cov_subscriptions: Option<usize>,
    /// The longest finite COV lifetime accepted, in seconds (default: no
    /// maximum).
    pub max_cov_lifetime: Option<u32>,
    /// Accept indefinite (lifetime 0) COV subscriptions (default true).
    pub allow_indefinite_cov: Option<bool>,
    /// Octets of segmented answers one requester IP address may draw per
    /// second (default 262144; 0: no bound). The bound that keeps a spoofed
    /// request from turning the device into a reflection amplifier.
    pub answer_octets_per_second: Option<u32>,
    /// What one requester IP address may draw at once (default 524288).
    pub answer_burst_octets: Option<u32>,
}

impl LimitsSection {
    /// The limits in force: these settings over the defaults.
    pub fn resolve(&self) -> anyhow::Result<crate::server::Limits> {
        let d = crate::server::Limits::default();
        let l = crate::server::Limits {
            max_requests_per_peer: self.max_requests_per_peer.unwrap_or(d.max_requests_per_peer),
            max_requests: self.max_requests.unwrap_or(d.max_requests),
            max_rpm_results: self.max_rpm_results.unwrap_or(d.max_rpm_results),
            max_rpm_octets: self.max_rpm_octets.unwrap_or(d.max_rpm_octets),
            max_objects: self.max_objects.unwrap_or(d.max_objects),
            max_cov_per_subscriber: self.max_cov_per_subscriber.unwrap_or(d.max_cov_per_subscriber),
            max_cov_subscriptions: self.max_cov_subscriptions.unwrap_or(d.max_cov_subscriptions),
            max_cov_per_address: self.max_cov_per_address.unwrap_or(d.max_cov_per_address),
            reserved_cov_subscriptions: self.reserved_cov_subscriptions.unwrap_or(d.reserved_cov_subscriptions),
            max_cov_lifetime: self.max_cov_lifetime.or(d.max_cov_lifetime),
            allow_indefinite_cov: self.allow_indefinite_cov.unwrap_or(d.allow_indefinite_cov),
            answer_octets_per_second: self.answer_octets_per_second.unwrap_or(d.answer_octets_per_second),
            answer_burst_octets: self.answer_burst_octets.unwrap_or(d.answer_burst_octets),
        };
        anyhow::ensure!(
            (1..=255).contains(&l.max_requests_per_peer),
            "limits.max_requests_per_peer must be 1..=255 (one per invoke ID)"
        );
        anyhow::ensure!(
            l.max_requests >= l.max_requests_per_peer,
            "limits.max_requests must be ≥ max_requests_per_peer"
        );
        anyhow::ensure!(l.max_rpm_results >= 1, "limits.max_rpm_results must be ≥ 1");
        anyhow::ensure!(l.max_rpm_octets >= 1, "limits.max_rpm_octets must be ≥ 1");
        anyhow::ensure!(l.max_objects >= 1, "limits.max_objects must be ≥ 1");
        anyhow::ensure!(l.max_cov_per_address >= 1, "limits.max_cov_per_address must be ≥ 1");
        anyhow::ensure!(
            l.reserved_cov_subscriptions < l.max_cov_subscriptions.max(1),
            "limits.reserved_cov_subscriptions must be below max_cov_subscriptions"
        );
        anyhow::ensure!(
            l.max_cov_lifetime.is_none_or(|s| s >= 1),
            "limits.max_cov_lifetime must be ≥ 1 second (leave it out for no maximum)"
        );
        anyhow::ensure!(
            l.answer_octets_per_second == 0 || l.answer_burst_octets >= 1476,
            "limits.answer_burst_octets must be ≥ 1476 (one segment) while answers are budgeted"
        );
        Ok(l)
    }
}

pub(super) fn default_bind() -> String {
    "127.0.0.1".into()
}
pub(super) fn default_port() -> u16 {
    trellis_bip::DEFAULT_PORT
}
fn default_vendor() -> u16 {
    999
}
fn default_plugin() -> String {
    "builtin:demo-building".into()
}
fn default_tick() -> u64 {
    1000
}
fn default_memory() -> u64 {
    64
}
fn default_deadline() -> u64 {
    100
}

impl Default for DeviceSection {
    fn default() -> Self {
        DeviceSection {
            bind: default_bind(),
            port: default_port(),
            instance: None,
            vendor_id: default_vendor(),
            plugin: default_plugin(),
            data_dir: None,
            tick_ms: default_tick(),
            memory_mb: default_memory(),
            deadline_ms: default_deadline(),
            watch: false,
            limits: LimitsSection::default(),
            password: None,
            accept_time_sync: true,
            mstp: None,
            virtual_network: None,
            bbmd: None,
            bip6: None,
            sc: None,
            ethernet: None,
            files: Vec::new(),
            notification_classes: Vec::new(),
            schedules: Vec::new(),
            calendars: Vec::new(),
            restart_notification_recipients: Vec::new(),
            create_objects: Vec::new(),
            persistence: None,
        }
    }
}

/// Where a device's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginRef {
    /// Compiled into the binary.
    Builtin(&'static str),
    /// A component file.
    File(PathBuf),
}

impl DeviceSection {
    /// Resolve `plugin` (relative paths against `base`).
    pub fn plugin_ref(&self, base: &Path) -> anyhow::Result<PluginRef> {
        match self.plugin.strip_prefix("builtin:") {
            Some("demo-building") => Ok(PluginRef::Builtin("demo-building")),
            Some("bulk-objects") => Ok(PluginRef::Builtin("bulk-objects")),
            Some(other) => anyhow::bail!("unknown built-in plugin `{other}` (built in: demo-building, bulk-objects)"),
            None => Ok(PluginRef::File(base.join(&self.plugin))),
        }
    }

    /// Whether DeviceCommunicationControl and ReinitializeDevice are open to
    /// anyone who can reach this device: it has no `password` (the standard
    /// then accepts any), and it is reachable from beyond this host — bound
    /// to an address other than loopback, or on an MS/TP line. `trellis run`
    /// warns about each such device once, at start-up.
    pub fn management_open_to_the_network(&self) -> bool {
        if self.password.is_some() {
            return false;
        }
        if self.mstp.is_some() {
            return true;
        }
        let ip = self.bind.split('/').next().unwrap_or_default();
        !ip.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    }
}
