//! Application-logic plugins in the gateway (`[[app]]`): each a sandboxed
//! component (`trellis:app@0.1.0`) that watches, reads and writes the
//! served devices' points, keeps timers, and talks MQTT through the
//! gateway's broker link — only as far as its grants go.
//!
//! ```toml
//! [[app]]
//! plugin = "builtin:alarm-threshold"        # or a component file, vetted by [policy]
//! points = { zone-temp = "1001/analog-input,1/present-value" }   # names for the application (readable)
//! read = ["1001/analog-value,*"]            # further point patterns it may read and watch
//! write = ["1001/binary-value,1"]           # point patterns it may write
//! publish = ["building/alarms/#"]           # topics it may publish on
//! subscribe = ["building/commands/+"]       # topic filters it may subscribe to
//! poll_s = 10                               # period for points whose device takes no COV subscription
//! settings = { point = "zone-temp", high_limit = 26.0, topic = "building/alarms/zone-temp" }
//! ```
//!
//! Each application runs on a task of its own on the gateway's runtime
//! (`runner`), never on a device's request path. Its persisted state lives
//! in the cache directory (`apps/<name>.state`).
//!
//! Remote devices (`[[remote]]`, reached through the gateway's own client,
//! `[client]`) are polled; COV subscriptions to them: not yet. A plugin
//! file's manifest `[app]` caps the section's grants. `trellis plugin
//! swap-app` swaps one through the admin socket ([`AppHandle`]).
//!
//! Must never: grant what the section (and the plugin's manifest) does not
//! name.

mod runner;
pub mod services;

use crate::config::PluginRef;
use crate::plugin::app::{AppConfig, AppPlugin, Grants, PointAddress};
use crate::plugin::app::{AppInfo, AppStatus};
use crate::plugin::{PluginEngine, PluginSource, policy};
use anyhow::Context;
use serde::Deserialize;
use services::GatewayServices;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use trellis_mqtt::link::Incoming;

/// One `[[remote]]`: a device the gateway does not serve that the
/// applications may reach (their grants permitting), at a fixed address.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteSection {
    /// Its device instance.
    pub device: u32,
    /// Where it is: `IP[:PORT][@NET:MAC]` (through a router on the way).
    pub address: String,
}

/// `[client]`: the gateway's own BACnet client, which reaches the
/// `[[remote]]` devices.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClientSection {
    /// The IPv4 address to bind (default 0.0.0.0).
    #[serde(default = "default_client_bind")]
    pub bind: String,
    /// The UDP port (default 0: an ephemeral one).
    #[serde(default)]
    pub port: u16,
    /// APDU timeout in ms (default 3000).
    #[serde(default = "default_client_timeout")]
    pub timeout_ms: u64,
    /// Retries after the first attempt (default 3).
    #[serde(default = "default_client_retries")]
    pub retries: u8,
}

impl Default for ClientSection {
    fn default() -> Self {
        ClientSection {
            bind: default_client_bind(),
            port: 0,
            timeout_ms: default_client_timeout(),
            retries: default_client_retries(),
        }
    }
}

fn default_client_bind() -> String {
    "0.0.0.0".into()
}
fn default_client_timeout() -> u64 {
    3000
}
fn default_client_retries() -> u8 {
    3
}

/// The remote devices and the client that reaches them, checked.
pub fn remotes(sections: &[RemoteSection], client: &ClientSection) -> anyhow::Result<services::Remotes> {
    let mut r = services::Remotes::default();
    for s in sections {
        let address: crate::client::DeviceAddress =
            s.address.parse().with_context(|| format!("[[remote]] device {}", s.device))?;
        anyhow::ensure!(
            r.devices.insert(s.device, address).is_none(),
            "[[remote]] device {} is listed twice",
            s.device
        );
    }
    let ip: std::net::Ipv4Addr =
        client.bind.parse().with_context(|| format!("[client] bind `{}` is not an IPv4 address", client.bind))?;
    anyhow::ensure!((1..=600_000).contains(&client.timeout_ms), "[client] timeout_ms must be 1..=600000");
    r.client.bip.bind = std::net::SocketAddrV4::new(ip, client.port);
    r.client.tsm.apdu_timeout = Duration::from_millis(client.timeout_ms);
    r.client.tsm.retries = client.retries;
    Ok(r)
}

/// One `[[app]]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppSection {
    /// Its name in logs and status (default: the plugin's name).
    pub name: Option<String>,
    /// `builtin:alarm-threshold`, or a component file.
    pub plugin: String,
    /// Point names the application uses, each `DEVICE/OBJECT[/PROPERTY]`;
    /// named points may be read and watched.
    #[serde(default)]
    pub points: BTreeMap<String, String>,
    /// Point patterns it may read and watch.
    #[serde(default)]
    pub read: Vec<String>,
    /// Point patterns it may write (and read).
    #[serde(default)]
    pub write: Vec<String>,
    /// Topic filters it may publish on.
    #[serde(default)]
    pub publish: Vec<String>,
    /// Topic filters it may subscribe to.
    #[serde(default)]
    pub subscribe: Vec<String>,
    /// Poll period, in seconds, of points whose device takes no COV
    /// subscription (default 10).
    #[serde(default = "default_poll_s")]
    pub poll_s: u64,
    /// Wall-clock limit of one call, device answers included, in ms
    /// (default 2000).
    #[serde(default = "default_deadline_ms")]
    pub deadline_ms: u64,
    /// Memory limit in MiB (default 32).
    #[serde(default = "default_memory_mb")]
    pub memory_mb: u64,
    /// Bound of its persisted state in KiB (default 64).
    #[serde(default = "default_state_kb")]
    pub state_kb: u64,
    /// The application's own settings, handed to it as TOML.
    #[serde(default)]
    pub settings: toml::Table,
}

fn default_poll_s() -> u64 {
    10
}
fn default_deadline_ms() -> u64 {
    2000
}
fn default_memory_mb() -> u64 {
    32
}
fn default_state_kb() -> u64 {
    64
}

impl AppSection {
    /// Its name: as configured, or the plugin's.
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            let p = self.plugin.strip_prefix("builtin:").unwrap_or(&self.plugin);
            Path::new(p).file_stem().and_then(|s| s.to_str()).unwrap_or(p).to_string()
        })
    }

    /// Resolve `plugin` (relative paths against `base`).
    pub fn plugin_ref(&self, base: &Path) -> anyhow::Result<PluginRef> {
        match self.plugin.strip_prefix("builtin:") {
            Some(name) => crate::plugin::builtin::APPLICATIONS
                .iter()
                .find(|n| **n == name)
                .map(|n| PluginRef::Builtin(n))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown built-in application `{name}` (built in: {})",
                        crate::plugin::builtin::APPLICATIONS.join(", ")
                    )
                }),
            None => Ok(PluginRef::File(base.join(&self.plugin))),
        }
    }

    /// The host's configuration for it: names, grants, limits.
    pub fn app_config(&self, state_dir: &Path) -> anyhow::Result<AppConfig> {
        let name = self.display_name();
        anyhow::ensure!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "app name `{name}`: letters, digits, - _ . only"
        );
        anyhow::ensure!(self.poll_s >= 1, "poll_s must be at least 1");
        anyhow::ensure!((1..=60_000).contains(&self.deadline_ms), "deadline_ms must be 1..=60000");
        let mut config = AppConfig::new(&name, toml::to_string(&self.settings).unwrap_or_default());
        for (point_name, text) in &self.points {
            let address: PointAddress =
                text.parse().map_err(|e: String| anyhow::anyhow!("points.{point_name}: {e}"))?;
            config.points.insert(point_name.clone(), address);
        }
        let mut read = parsed(&self.read, "read")?;
        // A named point is readable: the operator named it for the application.
        for address in config.points.values() {
            read.push(
                format!("{}/{}/{}", address.device, address.object, address.property)
                    .parse()
                    .map_err(|e: String| anyhow::anyhow!(e))?,
            );
        }
        config.grants = Grants {
            read,
            write: parsed(&self.write, "write")?,
            publish: parsed(&self.publish, "publish")?,
            subscribe: parsed(&self.subscribe, "subscribe")?,
            ceiling: None,
        };
        config.limits.memory_bytes = usize::try_from(self.memory_mb << 20).context("memory_mb")?;
        config.deadline = Duration::from_millis(self.deadline_ms);
        config.state_bytes = usize::try_from(self.state_kb << 10).context("state_kb")?;
        config.state_file = Some(state_dir.join(format!("{name}.state")));
        Ok(config)
    }
}

/// A request to put another component in an application's place.
pub struct SwapRequest {
    /// The vetted component.
    pub bytes: Vec<u8>,
    /// The memory its manifest was granted, in MiB (`None`: as configured).
    pub memory_mb: Option<u32>,
    /// The answer: what runs now, or why the old one still does.
    pub reply: oneshot::Sender<Result<AppInfo, String>>,
}

/// A running application, as the admin socket sees it.
#[derive(Debug, Clone)]
pub struct AppHandle {
    /// Its name.
    pub name: String,
    swaps: mpsc::Sender<SwapRequest>,
    status: watch::Receiver<AppStatus>,
}

impl AppHandle {
    /// Its health now.
    pub fn status(&self) -> AppStatus {
        self.status.borrow().clone()
    }

    /// Swap its component for `bytes` (already vetted), state handed across.
    pub async fn swap(&self, bytes: Vec<u8>, memory_mb: Option<u32>) -> Result<AppInfo, String> {
        let (reply, answer) = oneshot::channel();
        self.swaps
            .send(SwapRequest { bytes, memory_mb, reply })
            .await
            .map_err(|_| format!("application {} is not running", self.name))?;
        answer.await.map_err(|_| format!("application {} stopped during the swap", self.name))?
    }
}

/// Load and start every `[[app]]` on the current runtime.
pub async fn start(
    sections: &[AppSection],
    engine: &PluginEngine,
    services: Arc<GatewayServices>,
    messages: Option<&broadcast::Sender<Incoming>>,
    base: &Path,
    state_dir: PathBuf,
    plugin_policy: &policy::PolicySection,
) -> anyhow::Result<Vec<AppHandle>> {
    let mut names = std::collections::HashSet::new();
    let mut handles = Vec::new();
    for section in sections {
        let name = section.display_name();
        anyhow::ensure!(names.insert(name.clone()), "two [[app]] are named `{name}` (give one a `name`)");
        let mut config = section.app_config(&state_dir).with_context(|| format!("[[app]] {name}"))?;
        let file_bytes;
        let source = match section.plugin_ref(base)? {
            PluginRef::Builtin(n) => {
                PluginSource::Bytes(crate::plugin::builtin::application(n).expect("listed in APPLICATIONS"))
            }
            PluginRef::File(path) => {
                let (component, caps) =
                    policy::check_file(&path, plugin_policy).with_context(|| format!("[[app]] {name}"))?;
                // The smaller of what the manifest (and policy) grant and the section's memory_mb.
                let memory_mb = (config.limits.memory_bytes >> 20) as u64;
                config.limits.memory_bytes = (u64::from(caps.memory_mb).min(memory_mb) << 20) as usize;
                // Nothing beyond what the plugin's manifest asks for.
                if let Some(asks) = &caps.app {
                    config.grants.ceiling = Some(Box::new(
                        asks_to_grants(asks)
                            .with_context(|| format!("[[app]] {name}: the manifest's [app] of {}", path.display()))?,
                    ));
                }
                file_bytes = component;
                PluginSource::Bytes(&file_bytes)
            }
        };
        let poll = Duration::from_secs(section.poll_s);
        let app = AppPlugin::load(engine, source, config.clone(), services.clone())
            .await
            .map_err(|e| anyhow::anyhow!("[[app]] {name}: {e}"))?;
        let status = app.status();
        eprintln!("trellis: app {name}: {} {} — {}", status.info.name, status.info.version, status.info.summary);
        let (swaps, swap_requests) = mpsc::channel(4);
        let (status_out, status_in) = watch::channel(status);
        let reload = runner::Reload { engine: engine.clone(), config, requests: swap_requests, status: status_out };
        let runner = runner::Runner::new(app, services.clone(), poll, messages.map(|m| m.subscribe()), reload);
        tokio::spawn(runner.run());
        handles.push(AppHandle { name, swaps, status: status_in });
    }
    Ok(handles)
}

/// Each entry of `list` parsed (point patterns, topic filters); an error names `key`.
fn parsed<T: std::str::FromStr<Err = String>>(list: &[String], key: &str) -> anyhow::Result<Vec<T>> {
    list.iter().map(|p| p.parse().map_err(|e: String| anyhow::anyhow!("{key}: {e}"))).collect()
}

/// A manifest's `[app]` asks as grants.
fn asks_to_grants(asks: &policy::AppAsks) -> anyhow::Result<Grants> {
    Ok(Grants {
        read: parsed(&asks.read, "read")?,
        write: parsed(&asks.write, "write")?,
        publish: parsed(&asks.publish, "publish")?,
        subscribe: parsed(&asks.subscribe, "subscribe")?,
        ceiling: None,
    })
}
