//! The OPC UA server (issue 17): the served devices' points as an OPC UA
//! address space (`trellis_opcua`), fed by COV.
//!
//! ```text
//! served device ──COV (a local subscriber, in process)──▶ Updater ──▶ MonitoredItems (DataChange)
//! OPC UA Read  ──▶ the device's object model (maxAge 0) or the value COV keeps (maxAge > 0)
//! OPC UA Write ──▶ WriteProperty at `write_priority` (in process) ──▶ status code from the BACnet error
//! ```
//!
//! The object lists are looked at every `resync_s`; when one changed (a hot
//! swap, an object created or deleted), the address space follows, with
//! the NodeIds it had.
//!
//! [`pull`] is the other direction: `[[opcua_client]]` pulls an OPC UA
//! server's points into BACnet objects of a served device.
//!
//! Remote devices (`[[remote]]`) are in the address space too: read and
//! written with the gateway's BACnet client, their changes by SubscribeCOV
//! (their object lists are read at start).
//!
//! Must never: block a device's thread on an OPC UA client, or show a device
//! the gateway does not serve.

mod points;
pub mod pull;
mod remote;

use crate::plugin::PluginModel;
use crate::server::Server;
use anyhow::Context;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trellis_opcua::auth::{Access, User};
use trellis_opcua::server::{Running, Security, Settings};
use trellis_opcua::source::PointSource;

pub use points::GatewayPoints;

/// `[opcua]`: serve the points over OPC UA.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpcUaSection {
    /// Where to listen, `IP:PORT` (default `127.0.0.1:4840`: loopback only).
    #[serde(default = "default_bind")]
    pub bind: String,
    /// The host name in endpoint URLs and the certificate (default: the
    /// bind address, `localhost` for loopback).
    pub host_name: Option<String>,
    /// Endpoints: any of `none`, `basic256sha256-sign`,
    /// `basic256sha256-sign-encrypt` (default all three).
    #[serde(default = "default_security")]
    pub security: Vec<String>,
    /// Anonymous sessions: `none`, `read` (default) or `read-write`.
    #[serde(default = "default_anonymous")]
    pub anonymous: String,
    /// User-name identities.
    #[serde(default)]
    pub users: Vec<OpcUaUser>,
    /// The BACnet priority of OPC UA writes (default 8, manual operator).
    #[serde(default = "default_priority")]
    pub write_priority: u8,
    /// The certificate store (default: `opcua/pki` under the cache directory).
    pub pki_dir: Option<PathBuf>,
    /// Trust every client certificate instead of `pki/trusted/` (commissioning only).
    #[serde(default)]
    pub trust_client_certs: bool,
    /// The NodeId table (default: `opcua/node-ids` under the cache directory).
    pub node_ids: Option<PathBuf>,
    /// Sessions at once (default 50).
    #[serde(default = "default_sessions")]
    pub max_sessions: usize,
    /// COV subscription lifetime in seconds, renewed at three quarters (default 300).
    #[serde(default = "default_lifetime")]
    pub lifetime_s: u32,
    /// How often the object lists are compared with the address space, in
    /// seconds (default 5).
    #[serde(default = "default_resync")]
    pub resync_s: u32,
    /// The shortest publishing interval a subscription gets, in ms, and how
    /// often subscriptions are looked at: the floor of the COV → DataChange
    /// latency (default 1; a larger value saves wake-ups on a small box).
    #[serde(default = "default_min_publishing")]
    pub min_publishing_interval_ms: u64,
}

/// `[[opcua.users]]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpcUaUser {
    /// The user name.
    pub name: String,
    /// The password (keep the configuration file readable by the gateway only).
    pub password: String,
    /// May write (default false: read, browse, subscribe).
    #[serde(default)]
    pub write: bool,
}

fn default_bind() -> String {
    "127.0.0.1:4840".into()
}
fn default_security() -> Vec<String> {
    [Security::None, Security::Basic256Sha256Sign, Security::Basic256Sha256SignAndEncrypt]
        .map(|s| s.name().to_owned())
        .to_vec()
}
fn default_anonymous() -> String {
    "read".into()
}
fn default_priority() -> u8 {
    8
}
fn default_sessions() -> usize {
    50
}
fn default_lifetime() -> u32 {
    300
}
fn default_resync() -> u32 {
    5
}
fn default_min_publishing() -> u64 {
    1
}

impl OpcUaSection {
    /// The server's settings; relative paths are relative to `base`,
    /// defaults under `cache`.
    pub fn settings(&self, base: &Path, cache: &Path) -> anyhow::Result<Settings> {
        let bind: std::net::SocketAddr =
            self.bind.parse().with_context(|| format!("bind: {:?} is not IP:PORT", self.bind))?;
        let security = self
            .security
            .iter()
            .map(|s| {
                Security::from_name(s).with_context(|| {
                    format!("security: {s:?} is not none, basic256sha256-sign or basic256sha256-sign-encrypt")
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let anonymous = match self.anonymous.as_str() {
            "none" => Access::None,
            "read" => Access::Read,
            "read-write" => Access::ReadWrite,
            other => anyhow::bail!("anonymous: {other:?} is not none, read or read-write"),
        };
        let mut names = std::collections::HashSet::new();
        for u in &self.users {
            anyhow::ensure!(!u.name.is_empty(), "users: a user has an empty name");
            anyhow::ensure!(
                u.name != trellis_opcua::opcua::server::ANONYMOUS_USER_TOKEN_ID,
                "users: {:?} is reserved for anonymous sessions",
                u.name
            );
            anyhow::ensure!(names.insert(&u.name), "users: {:?} is given twice", u.name);
            anyhow::ensure!(!u.password.is_empty(), "users: {:?} has an empty password", u.name);
        }
        anyhow::ensure!((1..=16).contains(&self.write_priority), "write_priority must be 1..=16");
        anyhow::ensure!(self.resync_s > 0 && self.lifetime_s >= 4, "resync_s must be > 0 and lifetime_s ≥ 4");
        anyhow::ensure!(
            (1..=60_000).contains(&self.min_publishing_interval_ms),
            "min_publishing_interval_ms must be 1..=60000"
        );
        let file = |p: &PathBuf| if p.is_absolute() { p.clone() } else { base.join(p) };
        let host_name = self.host_name.clone().unwrap_or_else(|| match bind.ip() {
            ip if ip.is_loopback() || ip.is_unspecified() => "localhost".into(),
            ip => ip.to_string(),
        });
        Ok(Settings {
            bind,
            application_uri: format!("urn:trellis:gateway:{host_name}"),
            host_name,
            application_name: "Trellis gateway".into(),
            security,
            anonymous,
            users: self
                .users
                .iter()
                .map(|u| User { name: u.name.clone(), password: u.password.clone(), write: u.write })
                .collect(),
            pki_dir: self.pki_dir.as_ref().map(file).unwrap_or_else(|| cache.join("opcua").join("pki")),
            trust_client_certs: self.trust_client_certs,
            node_ids: Some(self.node_ids.as_ref().map(file).unwrap_or_else(|| cache.join("opcua").join("node-ids"))),
            write_priority: self.write_priority,
            max_sessions: self.max_sessions,
            min_publishing_interval_ms: self.min_publishing_interval_ms,
        })
    }
}

/// Start the server for `servers` (within the runtime that is to run it).
pub async fn start(
    section: &OpcUaSection,
    servers: Vec<Arc<Server<PluginModel>>>,
    remotes: Option<crate::app::services::Remotes>,
    base: &Path,
    cache: &Path,
) -> anyhow::Result<Running<GatewayPoints>> {
    let settings = section.settings(base, cache)?;
    if !settings.bind.ip().is_loopback() {
        if settings.security.contains(&Security::None) {
            tracing::warn!(
                bind = %settings.bind,
                "OPC UA: an endpoint without security is open beyond this host: requests and values cross the \
                 network in clear (list only basic256sha256-sign-encrypt in [opcua] security to refuse that)"
            );
        }
        if settings.anonymous != Access::None {
            tracing::warn!(
                bind = %settings.bind,
                "OPC UA: anonymous sessions are allowed beyond this host: anyone who reaches it can read every \
                 point{} (anonymous = \"none\" in [opcua] to refuse them)",
                if settings.anonymous == Access::ReadWrite { " and write them" } else { "" }
            );
        }
    }
    let remote = remotes.filter(|r| !r.devices.is_empty()).map(|r| Arc::new(remote::RemotePoints::new(r)));
    let source = Arc::new(GatewayPoints::new(&servers, remote.clone()));
    let running = trellis_opcua::server::start(settings, source.clone()).await?;
    let (changes_in, mut changes) = tokio::sync::mpsc::channel(4096);
    for server in &servers {
        tokio::spawn(crate::local_points::follow(server.clone(), section.lifetime_s, changes_in.clone()));
    }
    let updater = running.updater.clone();
    tokio::spawn(async move {
        while let Some((device, n)) = changes.recv().await {
            let n: bacnet::services::COVNotification = n;
            updater.changed(device, n.monitored_object, n.values.into_iter().map(|v| (v.property, v.value)));
        }
    });
    if let Some(remote) = remote {
        let updater = running.updater.clone();
        let lifetime = section.lifetime_s;
        tokio::spawn(async move {
            let devices = remote.devices().await;
            remote
                .follow(devices, lifetime, move |device, n| {
                    updater.changed(device, n.monitored_object, n.values.into_iter().map(|v| (v.property, v.value)));
                })
                .await;
        });
    }
    let updater = running.updater.clone();
    let every = std::time::Duration::from_secs(u64::from(section.resync_s));
    tokio::spawn(async move {
        let mut seen = source.outline().await;
        loop {
            tokio::time::sleep(every).await;
            let now = source.outline().await;
            if now == seen {
                continue;
            }
            let devices = source.devices().await;
            match updater.sync(&devices) {
                Ok(()) => {
                    tracing::info!(points = updater.points(), "OPC UA: the address space follows a changed object list")
                }
                Err(e) => {
                    tracing::error!("OPC UA: node ids could not be saved ({e}): they may change at the next start")
                }
            }
            seen = now;
        }
    });
    Ok(running)
}
