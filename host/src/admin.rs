//! The local admin API of a running gateway: a Unix-domain socket that
//! `trellis plugin swap`, `swap-policy`, `swap-app` and `status` talk to.
//!
//! Local-only by construction: the socket lives in a directory only the
//! gateway's user can enter — created mode 0700, or refused when it is a
//! symlink, someone else's or open to others (see [`crate::admin_dir`]) —
//! the socket itself is mode 0600, and every connection's peer credentials
//! are checked — only the same user or root is served. One JSON request per
//! line, one JSON answer per line.
//!
//! A swap reads, checks and compiles files a vendor supplied: that runs on a
//! thread of its own under a time limit ([`crate::offload`]), never on a
//! runtime worker, so no file can stall the BACnet service meanwhile.
//!
//! Must never: listen on a network address, follow a request from another
//! user, or leave a device without a working plugin (a failed swap keeps the
//! old instance serving).

use crate::admin_dir::my_uid;
use crate::config::PolicySection;
use crate::plugin::routing::{PolicyConfig, PolicyPlugin};
use crate::plugin::{LOAD_TIME_LIMIT, PluginConfig, PluginEngine, PluginModel, PluginSource, VET_TIME_LIMIT};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// A request to the gateway.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    /// Replace a device's plugin with the component in `file`, handing its
    /// state across.
    Swap {
        /// Device instance as served on the network.
        device: u32,
        /// Path of the new component, as the gateway sees it.
        file: PathBuf,
    },
    /// Replace the router's routing policy number `policy` (1-based, in
    /// `[[router.policy]]` order) with the component in `file`, same
    /// settings, handing its state across.
    SwapPolicy {
        /// Which policy.
        policy: usize,
        /// Path of the new component, as the gateway sees it.
        file: PathBuf,
    },
    /// Replace the application named `app` (`[[app]]`) with the component
    /// in `file`, same grants and settings, handing its state across.
    SwapApp {
        /// Which application.
        app: String,
        /// Path of the new component, as the gateway sees it.
        file: PathBuf,
    },
    /// What is served.
    Status,
}

/// The gateway's answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Response {
    /// The swap happened.
    Swapped {
        /// Device instance.
        device: u32,
        /// The plugin now serving, "name version".
        plugin: String,
        /// Time to load and instantiate the new component, in milliseconds.
        load_ms: f64,
        /// Time from the state export to the new instance serving, in microseconds.
        pause_us: f64,
    },
    /// A routing policy was swapped.
    PolicySwapped {
        /// Which policy (1-based).
        policy: usize,
        /// The policy now deciding, "name version".
        plugin: String,
        /// Time to vet, load and configure the new component, in milliseconds.
        load_ms: f64,
    },
    /// An application was swapped.
    AppSwapped {
        /// Which application.
        app: String,
        /// The application now running, "name version".
        plugin: String,
        /// Time to vet, load and start the new component and hand the state over, in milliseconds.
        load_ms: f64,
    },
    /// Devices served and their plugins.
    Status {
        /// One entry per device.
        devices: Vec<DeviceStatus>,
        /// The router's routing policies, in order (absent from older gateways).
        #[serde(default)]
        policies: Vec<PolicyLine>,
        /// The applications (absent from older gateways).
        #[serde(default)]
        apps: Vec<AppLine>,
    },
    /// The request failed; the gateway is unchanged.
    Failed {
        /// Why, in one line.
        error: String,
    },
}

/// One served device in a status answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeviceStatus {
    /// Device instance.
    pub device: u32,
    /// The plugin serving it, "name version".
    pub plugin: String,
    /// How its plugin instance is doing (absent from older gateways).
    #[serde(default)]
    pub health: Option<PluginHealth>,
    /// The interface its component exports, e.g. "trellis:bacnet@0.2.0"
    /// (absent from older gateways).
    #[serde(default)]
    pub interface: Option<String>,
}

/// One application in a status answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AppLine {
    /// Its `[[app]]` name.
    pub name: String,
    /// "name version" of the running component.
    pub plugin: String,
    /// What its configuration does.
    pub summary: String,
    /// "running", "restarting (back-off)" or "disabled".
    pub state: String,
    /// Instances started after the first.
    pub restarts: u64,
    /// Calls that trapped, overran or ran out of memory.
    pub failures: u64,
    /// The last failure.
    pub last_failure: Option<String>,
    /// Changes, timer firings and messages delivered.
    pub events: u64,
    /// Events dropped while no instance ran.
    pub missed: u64,
    /// Points and topics it asked for and was refused.
    pub refused: u64,
}

impl AppLine {
    /// An application's line, as it stands.
    pub fn of(a: &crate::app::AppHandle) -> AppLine {
        let s = a.status();
        let state = if s.disabled {
            "disabled"
        } else if s.failing {
            "restarting (back-off)"
        } else {
            "running"
        };
        AppLine {
            name: a.name.clone(),
            plugin: format!("{} {}", s.info.name, s.info.version),
            summary: s.info.summary,
            state: state.into(),
            restarts: s.restarts,
            failures: s.failures,
            last_failure: s.last_failure,
            events: s.events,
            missed: s.missed,
            refused: s.refused,
        }
    }
}

/// One routing policy in a status answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PolicyLine {
    /// "name version".
    pub plugin: String,
    /// What its configuration does.
    pub summary: String,
    /// "closed" or "open": what routed NPDUs get while it fails.
    pub on_failure: String,
    /// "running", "restarting (back-off)" or "disabled".
    pub state: String,
    /// Restarts and failures.
    pub restarts: u64,
    /// Calls that trapped, overran or ran out of memory.
    pub failures: u64,
    /// The last failure.
    pub last_failure: Option<String>,
    /// Verdicts given.
    pub decided: u64,
    /// Drops by reason, and the NPDUs dropped or forwarded unchecked while it failed.
    pub drops: Vec<(String, u64)>,
    /// Rejects sent.
    pub rejected: u64,
    /// NPDUs dropped because it failed closed.
    pub failed_closed: u64,
    /// NPDUs forwarded unchecked because it failed open.
    pub failed_open: u64,
}

impl PolicyLine {
    /// A routing policy's line, as it stands.
    pub fn of(p: &PolicyPlugin) -> PolicyLine {
        let s = p.status();
        PolicyLine {
            plugin: format!("{} {}", s.info.name, s.info.version),
            summary: s.info.summary,
            on_failure: s.on_failure.to_string(),
            state: if s.disabled {
                "disabled"
            } else if s.failing {
                "restarting (back-off)"
            } else {
                "running"
            }
            .into(),
            restarts: s.restarts,
            failures: s.failures,
            last_failure: s.last_failure,
            decided: s.decided,
            drops: s.drops,
            rejected: s.rejected,
            failed_closed: s.failed_closed,
            failed_open: s.failed_open,
        }
    }
}

/// A plugin's health in a status answer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct PluginHealth {
    /// Failed for good: every call fails.
    pub disabled: bool,
    /// Waiting out a restart back-off.
    pub backing_off: bool,
    /// Instances started after the first.
    pub restarts: u64,
    /// Calls that trapped, overran their deadline or ran out of memory.
    pub failures: u64,
    /// State snapshots taken.
    pub snapshots: u64,
    /// Accepted writes since the last snapshot (replayed if it fails now).
    pub journal: usize,
}

impl std::fmt::Display for PluginHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.disabled {
            "disabled"
        } else if self.backing_off {
            "restarting (back-off)"
        } else {
            "running"
        };
        write!(
            f,
            "{state}; {} restarts, {} failures; {} snapshots, {} writes journaled since the last",
            self.restarts, self.failures, self.snapshots, self.journal
        )
    }
}

/// Checks a component file against the operator's policy before it may
/// replace a running plugin: given the file and the device's base plugin
/// configuration, returns the component bytes to load (exactly the bytes
/// checked) and the configuration with the granted capabilities applied.
pub type Vetting =
    Arc<dyn Fn(&Path, PluginConfig) -> Result<(Vec<u8>, PluginConfig, Provenance), String> + Send + Sync>;

/// Where a device's running plugin came from and what it was granted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Provenance {
    /// `builtin:NAME`, or the file it was loaded from.
    pub source: String,
    /// The trusted key that signed it (hex), when it loaded as signed.
    pub signed_by: Option<String>,
    /// What it was granted (`data_dir = …, clock = …, …`), or "built-in (trusted)".
    pub capabilities: String,
    /// SHA-256 of the component, hex.
    pub sha256: Option<String>,
}

impl Provenance {
    /// A file's, from what the policy granted it.
    pub fn of_file(path: &Path, component: &[u8], caps: &crate::plugin::policy::Capabilities) -> Provenance {
        use sha2::Digest;
        Provenance {
            source: path.display().to_string(),
            signed_by: caps.signed_by.as_ref().map(|k| crate::plugin::signing::hex(k)),
            capabilities: caps.summary(),
            sha256: Some(sha2::Sha256::digest(component).iter().map(|b| format!("{b:02x}")).collect()),
        }
    }

    /// A built-in plugin's.
    pub fn builtin(name: &str) -> Provenance {
        Provenance {
            source: name.to_string(),
            signed_by: None,
            capabilities: "built-in (trusted)".into(),
            sha256: None,
        }
    }
}

/// The last hot swap of a device, for the console.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SwapRecord {
    /// Seconds since the Unix epoch.
    pub at: u64,
    /// The plugin now serving, "name version".
    pub plugin: String,
    /// Time to load the new component, ms.
    pub load_ms: f64,
    /// Time the device paused, µs.
    pub pause_us: f64,
}

/// What the admin API may act on.
pub struct Admin {
    engine: PluginEngine,
    devices: BTreeMap<u32, (PluginModel, PluginConfig)>,
    vet: Vetting,
    policies: Vec<(PolicyPlugin, PolicyConfig)>,
    rules: PolicySection,
    apps: Vec<crate::app::AppHandle>,
    provenance: std::sync::Mutex<BTreeMap<u32, Provenance>>,
    swaps: std::sync::Mutex<BTreeMap<u32, SwapRecord>>,
    /// One swap at a time (from the socket, the HTTP API or a watched
    /// file): what the records say is what runs.
    swapping: tokio::sync::Mutex<()>,
}

impl Admin {
    /// An admin API over `devices` (instance → running model and its base
    /// plugin configuration, before capabilities). `vet` runs the
    /// signature/capability policy on every component before it is loaded.
    pub fn new(engine: PluginEngine, devices: BTreeMap<u32, (PluginModel, PluginConfig)>, vet: Vetting) -> Self {
        Admin {
            engine,
            devices,
            vet,
            policies: Vec::new(),
            rules: PolicySection::default(),
            apps: Vec::new(),
            provenance: Default::default(),
            swaps: Default::default(),
            swapping: Default::default(),
        }
    }

    /// And where each device's plugin came from.
    pub fn with_provenance(self, provenance: BTreeMap<u32, Provenance>) -> Self {
        *self.provenance.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = provenance;
        self
    }

    /// The devices whose plugins may be swapped, and their running models.
    pub fn devices(&self) -> impl Iterator<Item = (u32, &PluginModel)> {
        self.devices.iter().map(|(d, (m, _))| (*d, m))
    }

    /// Where `device`'s plugin came from.
    pub fn provenance(&self, device: u32) -> Option<Provenance> {
        self.provenance.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&device).cloned()
    }

    /// `device`'s last hot swap.
    pub fn last_swap(&self, device: u32) -> Option<SwapRecord> {
        self.swaps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&device).cloned()
    }

    /// The routing policies, in order.
    pub fn policies(&self) -> impl Iterator<Item = &PolicyPlugin> {
        self.policies.iter().map(|(p, _)| p)
    }

    /// The applications.
    pub fn apps(&self) -> &[crate::app::AppHandle] {
        &self.apps
    }

    /// And the applications, whose files `rules` (given with the policies,
    /// or here) vets on a swap.
    pub fn with_apps(mut self, apps: Vec<crate::app::AppHandle>, rules: PolicySection) -> Self {
        self.apps = apps;
        self.rules = rules;
        self
    }

    /// And the router's routing policies (each with the configuration it
    /// was loaded with), whose files `rules` vets on a swap.
    pub fn with_policies(mut self, policies: Vec<(PolicyPlugin, PolicyConfig)>, rules: PolicySection) -> Self {
        self.policies = policies;
        self.rules = rules;
        self
    }

    /// Answer one request.
    pub async fn handle(&self, req: Request) -> Response {
        match req {
            Request::Status => {
                let mut devices = Vec::with_capacity(self.devices.len());
                for (d, (m, _)) in &self.devices {
                    let i = m.describe();
                    let h = m.health();
                    let health = PluginHealth {
                        disabled: h.disabled,
                        backing_off: h.backing_off,
                        restarts: h.restarts,
                        failures: h.failures,
                        snapshots: h.snapshots,
                        journal: m.journal_len().await,
                    };
                    devices.push(DeviceStatus {
                        device: *d,
                        plugin: format!("{} {}", i.name, i.version),
                        health: Some(health),
                        interface: Some(m.interface().to_owned()),
                    });
                }
                Response::Status {
                    devices,
                    policies: self.policies.iter().map(|(p, _)| PolicyLine::of(p)).collect(),
                    apps: self.apps.iter().map(AppLine::of).collect(),
                }
            }
            Request::SwapApp { app, file } => match self.one_at_a_time(self.swap_app(&app, &file)).await {
                Ok(r) => r,
                Err(error) => Response::Failed { error },
            },
            Request::SwapPolicy { policy, file } => match self.one_at_a_time(self.swap_policy(policy, &file)).await {
                Ok(r) => r,
                Err(error) => Response::Failed { error },
            },
            Request::Swap { device, file } => match self.one_at_a_time(self.swap(device, &file)).await {
                Ok(r) => r,
                Err(error) => Response::Failed { error },
            },
        }
    }

    async fn one_at_a_time<T>(&self, swap: impl std::future::Future<Output = T>) -> T {
        let _one = self.swapping.lock().await;
        swap.await
    }

    async fn swap(&self, device: u32, file: &Path) -> Result<Response, String> {
        let (current, config) =
            self.devices.get(&device).ok_or_else(|| format!("no device {device} is served here"))?;
        let (vet, path, base) = (self.vet.clone(), file.to_path_buf(), config.clone());
        let (bytes, mut next_config, provenance) =
            crate::offload::run(format!("vetting {}", file.display()), VET_TIME_LIMIT, move || vet(&path, base))
                .await
                .map_err(|e| e.to_string())??;
        let started = Instant::now();
        let engine = self.engine.clone();
        next_config.name = format!("{}+", config.name);
        // The successor reports into the same feed the device's COV machinery reads.
        next_config.changes = Some(current.changes());
        let next = crate::offload::run(format!("loading {}", file.display()), LOAD_TIME_LIMIT, move || {
            PluginModel::load(&engine, PluginSource::Bytes(&bytes), next_config)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        let (info, pause) =
            current.swap_timed(&next).await.map_err(|e| format!("swap refused, old plugin kept: {e}"))?;
        let pause_us = pause.as_secs_f64() * 1e6;
        tracing::info!(device, plugin = %info.name, version = %info.version, load_ms, pause_us, "plugin swapped");
        let plugin = format!("{} {}", info.name, info.version);
        self.provenance.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(device, provenance);
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let record = SwapRecord { at, plugin: plugin.clone(), load_ms, pause_us };
        self.swaps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(device, record);
        Ok(Response::Swapped { device, plugin, load_ms, pause_us })
    }
}

impl Admin {
    async fn swap_app(&self, name: &str, file: &Path) -> Result<Response, String> {
        let handle = self.apps.iter().find(|a| a.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.apps.iter().map(|a| a.name.as_str()).collect();
            format!(
                "no application {name} here (running: {})",
                if names.is_empty() { "none".into() } else { names.join(", ") }
            )
        })?;
        let started = Instant::now();
        let (rules, path) = (self.rules.clone(), file.to_path_buf());
        let (bytes, caps) = crate::offload::run(format!("vetting {}", file.display()), VET_TIME_LIMIT, move || {
            crate::plugin::policy::check_file(&path, &rules)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let info = handle.swap(bytes, Some(caps.memory_mb)).await?;
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(app = name, plugin = %info.name, version = %info.version, load_ms, "application swapped");
        Ok(Response::AppSwapped { app: name.to_string(), plugin: format!("{} {}", info.name, info.version), load_ms })
    }

    async fn swap_policy(&self, index: usize, file: &Path) -> Result<Response, String> {
        let (current, config) = index
            .checked_sub(1)
            .and_then(|i| self.policies.get(i))
            .ok_or_else(|| format!("no routing policy {index} here ({} configured)", self.policies.len()))?;
        let started = Instant::now();
        let (rules, path) = (self.rules.clone(), file.to_path_buf());
        let (bytes, caps) = crate::offload::run(format!("vetting {}", file.display()), VET_TIME_LIMIT, move || {
            crate::plugin::policy::check_file(&path, &rules)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let mut next_config = config.clone();
        next_config.name = format!("{}+", config.name);
        let granted = usize::try_from(u64::from(caps.memory_mb) << 20).unwrap_or(usize::MAX);
        next_config.limits.memory_bytes = next_config.limits.memory_bytes.min(granted);
        let engine = self.engine.clone();
        let next = crate::offload::run(format!("loading {}", file.display()), LOAD_TIME_LIMIT, move || {
            PolicyPlugin::load(&engine, PluginSource::Bytes(&bytes), next_config)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let info = current.swap(next).map_err(|e| format!("swap refused, old policy kept: {e}"))?;
        let load_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(Response::PolicySwapped { policy: index, plugin: format!("{} {}", info.name, info.version), load_ms })
    }
}

/// The default socket path, the same for the gateway and for `trellis
/// plugin swap/status`: `$TRELLIS_ADMIN_SOCKET`; else, for root,
/// `/run/trellis/admin.sock`; else `$XDG_RUNTIME_DIR/trellis/admin.sock`;
/// else `/tmp/trellis-<uid>/admin.sock`.
pub fn default_socket() -> PathBuf {
    socket_path(std::env::var_os("TRELLIS_ADMIN_SOCKET"), std::env::var_os("XDG_RUNTIME_DIR"), my_uid())
}

/// [`default_socket`] given the override, `$XDG_RUNTIME_DIR` and our uid.
fn socket_path(explicit: Option<OsString>, runtime_dir: Option<OsString>, uid: u32) -> PathBuf {
    if let Some(p) = explicit.filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    if uid == 0 {
        return PathBuf::from("/run/trellis/admin.sock");
    }
    if let Some(d) = runtime_dir.filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("trellis").join("admin.sock");
    }
    PathBuf::from(format!("/tmp/trellis-{uid}")).join("admin.sock")
}

/// Serve requests on a socket from [`bind`] until the future is dropped.
pub async fn serve(listener: UnixListener, admin: Arc<Admin>) -> anyhow::Result<()> {
    let me = my_uid();
    loop {
        let (stream, _) = listener.accept().await?;
        let peer = stream.peer_cred().map(|c| c.uid()).unwrap_or(u32::MAX);
        if peer != me && peer != 0 {
            tracing::warn!(peer_uid = peer, "admin connection from another user refused");
            continue;
        }
        let admin = admin.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(stream, &admin).await {
                tracing::debug!(error = %e, "admin connection ended");
            }
        });
    }
}

/// Create the admin socket at `path`, mode 0600, in a private directory
/// ([`crate::admin_dir::prepare`]: created mode 0700, or refused). Fails if
/// another live gateway holds it; a stale one is replaced.
pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    crate::admin_dir::prepare(dir)?;
    if std::fs::symlink_metadata(path).is_ok() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            anyhow::bail!("admin socket {} is in use: is another gateway running?", path.display());
        }
        // Stale, from a gateway that died.
        std::fs::remove_file(path).map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
    }
    let listener = UnixListener::bind(path).map_err(|e| anyhow::anyhow!("cannot bind {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| anyhow::anyhow!("cannot restrict {} to its owner: {e}", path.display()))?;
    Ok(listener)
}

async fn connection(stream: UnixStream, admin: &Admin) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read.take(64 * 1024)).lines();
    while let Some(line) = lines.next_line().await? {
        let response = match serde_json::from_str::<Request>(&line) {
            Ok(req) => admin.handle(req).await,
            Err(e) => Response::Failed { error: format!("bad request: {e}") },
        };
        let mut out = serde_json::to_vec(&response)?;
        out.push(b'\n');
        write.write_all(&out).await?;
    }
    Ok(())
}

/// Send one request to the gateway listening on `path`.
pub async fn request(path: &Path, req: &Request, timeout: Duration) -> anyhow::Result<Response> {
    let stream = UnixStream::connect(path)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the gateway's admin socket {}: {e}", path.display()))?;
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(req)?;
    line.push(b'\n');
    write.write_all(&line).await?;
    let mut lines = BufReader::new(read).lines();
    let answer = tokio::time::timeout(timeout, lines.next_line())
        .await
        .map_err(|_| anyhow::anyhow!("the gateway did not answer within {timeout:?}"))??
        .ok_or_else(|| anyhow::anyhow!("the gateway closed the admin connection"))?;
    Ok(serde_json::from_str(&answer)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_path_is_the_override_else_by_user() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(socket_path(os("/x/a.sock"), os("/run/user/1000"), 1000), Path::new("/x/a.sock"));
        assert_eq!(socket_path(os(""), None, 0), Path::new("/run/trellis/admin.sock"));
        // Root: the system's runtime directory, whatever its login session says.
        assert_eq!(socket_path(None, os("/run/user/0"), 0), Path::new("/run/trellis/admin.sock"));
        assert_eq!(socket_path(None, os("/run/user/1000"), 1000), Path::new("/run/user/1000/trellis/admin.sock"));
        assert_eq!(socket_path(None, os(""), 1000), Path::new("/tmp/trellis-1000/admin.sock"));
        assert_eq!(socket_path(None, None, 1000), Path::new("/tmp/trellis-1000/admin.sock"));
    }
}
