//! A BACnet/SC port from the configuration (`sc = { … }` in a `[[device]]`)
//! or the CLI's `--sc-hub` flags: its credentials read, its identity (VMAC,
//! device UUID) settled, the hub function started when asked for, and the
//! node connected to its hubs.
//!
//! ```toml
//! [[device]]
//! sc = { primary_hub = "wss://127.0.0.1:47843/", certificate = "pki/node1.pem",
//!        key = "pki/node1.key", issuers = "pki/ca.pem", hub_function = "127.0.0.1:47843" }
//! ```
//!
//! Must never: connect without TLS (a hub URI is `wss://`), or start a hub
//! function on credentials that did not load.

use crate::server::ScPort;
use crate::server::network_port::ScView;
use anyhow::Context;
use bacnet::bvlc_sc::ConnectInfo;
use bacnet::sc::connection::ConnectionConfig;
use bacnet::sc::connector::ConnectorConfig;
use bacnet::sc::hub::HubConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use trellis_sc::hub::HubPortStats;
use trellis_sc::identity;
use trellis_sc::node::{NodeConfig, ScNode};
use trellis_sc::tls::ScCredentials;

/// The largest BVLC-SC message and NPDU we accept (Annex AB.7.5: at least
/// 1497 octets of NPDU; 1600 octets of BVLC message leave room for options).
const MAX_BVLC: u16 = 1600;
const MAX_NPDU: u16 = 1497;

/// `sc = { … }` in a `[[device]]`: a BACnet/SC port (Annex AB).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScSection {
    /// `wss://HOST:PORT/PATH` of the primary hub; default: this port's own
    /// hub function.
    pub primary_hub: Option<String>,
    /// `wss://…` of the failover hub.
    pub failover_hub: Option<String>,
    /// The operational certificate (PEM; intermediates after it).
    pub certificate: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The issuer (CA) certificates peers must chain to (PEM, one or more).
    pub issuers: PathBuf,
    /// Certificate revocation lists (PEM, one or more X509 CRLs) peers'
    /// certificates are checked against; without, revocation is not checked.
    pub revocation_lists: Option<PathBuf>,
    /// Run the hub function, listening on `IP:PORT`.
    pub hub_function: Option<String>,
    /// The VMAC, 12 hex digits; default: a Random-48 one at each start.
    pub vmac: Option<String>,
    /// The device UUID (`8-4-4-4-12`); default: derived from the instance
    /// and the certificate (stable until the certificate is renewed).
    pub uuid: Option<String>,
    /// Seconds of silence before a heartbeat (default 300).
    #[serde(default = "default_heartbeat")]
    pub heartbeat_s: u32,
    /// Seconds a connection may take to be established (default 10).
    #[serde(default = "default_wait")]
    pub connect_wait_s: u32,
    /// Seconds a Disconnect-ACK may take (default 10).
    #[serde(default = "default_wait")]
    pub disconnect_wait_s: u32,
    /// The first wait between reconnection attempts, and how often the
    /// primary is retried while on the failover (default 10).
    #[serde(default = "default_wait")]
    pub reconnect_s: u32,
    /// The longest wait between attempts (default 120).
    #[serde(default = "default_max_reconnect")]
    pub max_reconnect_s: u32,
    /// Direct connections between nodes (the node switch): `{ initiate =
    /// true }` opens them to the nodes we send to; `{ accept =
    /// "IP:PORT" }` takes them there (and tells peers `uris`, by default
    /// `wss://IP:PORT/`). Without it, everything goes through the hub.
    pub direct_connect: Option<DirectSection>,
}

/// `direct_connect = { … }` in an `sc = { … }`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DirectSection {
    /// Open direct connections to the nodes we send to (default true).
    #[serde(default = "default_true")]
    pub initiate: bool,
    /// Take direct connections on `IP:PORT`.
    pub accept: Option<String>,
    /// The URIs peers are told to connect to (default: `wss://` + accept).
    #[serde(default)]
    pub uris: Vec<String>,
}

fn default_true() -> bool {
    true
}

impl DirectSection {
    fn accept_uris(&self) -> Vec<String> {
        match (&self.accept, self.uris.is_empty()) {
            (Some(bind), true) => vec![format!("wss://{bind}/")],
            _ => self.uris.clone(),
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        if let Some(a) = &self.accept {
            let bind = a
                .parse::<std::net::SocketAddr>()
                .map_err(|_| anyhow::anyhow!("sc.direct_connect.accept `{a}` must be IP:PORT to listen on"))?;
            anyhow::ensure!(bind.port() != 0, "sc.direct_connect.accept `{a}` needs a port of its own (not 0)");
            anyhow::ensure!(
                !self.uris.is_empty() || !bind.ip().is_unspecified(),
                "sc.direct_connect.accept `{a}` listens on every address: say where peers reach it (sc.direct_connect.uris)"
            );
        } else {
            anyhow::ensure!(self.uris.is_empty(), "sc.direct_connect.uris without accept: nothing would take them");
        }
        for uri in &self.uris {
            trellis_sc::node::check_hub_uri(uri).map_err(|why| {
                anyhow::anyhow!("sc.direct_connect.uris `{uri}` must be a wss://HOST:PORT/ URI: {why}")
            })?;
        }
        anyhow::ensure!(
            self.initiate || self.accept.is_some(),
            "sc.direct_connect neither initiates nor accepts: leave it out instead"
        );
        Ok(())
    }
}

fn default_heartbeat() -> u32 {
    300
}
fn default_wait() -> u32 {
    10
}
fn default_max_reconnect() -> u32 {
    120
}

impl ScSection {
    /// A section for the CLI's flags.
    pub fn for_cli(
        primary_hub: String,
        failover_hub: Option<String>,
        cert: PathBuf,
        key: PathBuf,
        ca: PathBuf,
    ) -> Self {
        ScSection {
            primary_hub: Some(primary_hub),
            failover_hub,
            certificate: cert,
            key,
            issuers: ca,
            revocation_lists: None,
            hub_function: None,
            vmac: None,
            uuid: None,
            heartbeat_s: default_heartbeat(),
            connect_wait_s: default_wait(),
            disconnect_wait_s: default_wait(),
            reconnect_s: default_wait(),
            max_reconnect_s: default_max_reconnect(),
            direct_connect: None,
        }
    }

    /// What can be checked without touching files: URIs, VMAC, UUID,
    /// timers.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.primary_hub.is_some() || self.hub_function.is_some(),
            "sc needs a primary_hub (wss://HOST:PORT/) or a hub_function of its own to connect to"
        );
        for (what, uri) in [("primary_hub", &self.primary_hub), ("failover_hub", &self.failover_hub)] {
            if let Some(uri) = uri {
                trellis_sc::node::check_hub_uri(uri).map_err(|why| {
                    anyhow::anyhow!(
                        "sc.{what} `{uri}` must be a wss://HOST:PORT/ URI (BACnet/SC never runs without TLS): {why}"
                    )
                })?;
            }
        }
        anyhow::ensure!(
            self.failover_hub.is_none() || self.failover_hub != self.primary_hub,
            "sc.failover_hub is the primary_hub: name another hub, or none"
        );
        if let Some(h) = &self.hub_function {
            let bind = h
                .parse::<std::net::SocketAddr>()
                .map_err(|_| anyhow::anyhow!("sc.hub_function `{h}` must be IP:PORT to listen on"))?;
            anyhow::ensure!(
                bind.port() != 0,
                "sc.hub_function `{h}` needs a port of its own (not 0): nodes are told it"
            );
            anyhow::ensure!(
                self.primary_hub.is_some() || !bind.ip().is_unspecified(),
                "sc.hub_function `{h}` listens on every address: say which one this node connects to (sc.primary_hub)"
            );
        }
        if let Some(v) = &self.vmac {
            anyhow::ensure!(
                identity::parse_vmac(v).is_some(),
                "sc.vmac `{v}` must be 12 hex digits, neither all zeros nor all ones"
            );
        }
        if let Some(u) = &self.uuid {
            anyhow::ensure!(identity::parse_uuid(u).is_some(), "sc.uuid `{u}` must be a UUID (8-4-4-4-12 hex digits)");
        }
        anyhow::ensure!(self.heartbeat_s >= 1, "sc.heartbeat_s must be at least 1");
        anyhow::ensure!(
            self.connect_wait_s >= 1 && self.disconnect_wait_s >= 1,
            "sc.connect_wait_s and sc.disconnect_wait_s must be at least 1"
        );
        anyhow::ensure!(
            self.reconnect_s >= 1 && self.max_reconnect_s >= self.reconnect_s,
            "sc.reconnect_s must be at least 1 and at most sc.max_reconnect_s"
        );
        if let Some(d) = &self.direct_connect {
            d.validate()?;
        }
        Ok(())
    }

    fn primary(&self) -> String {
        match (&self.primary_hub, &self.hub_function) {
            (Some(uri), _) => uri.clone(),
            (None, Some(bind)) => format!("wss://{bind}/"),
            (None, None) => unreachable!("validate() requires one"),
        }
    }
}

/// A started BACnet/SC port.
pub struct StartedSc {
    /// The node, for the server or the client.
    pub port: ScPort,
    /// Its Network Port object's view.
    pub view: ScView,
    /// The hub function's counters, when it runs.
    pub hub: Option<Arc<HubPortStats>>,
    /// Our device UUID.
    pub uuid: [u8; 16],
}

/// Start the port `section` describes for device `instance` (relative
/// paths are relative to `base`). Call within the runtime that is to run
/// the node and the hub function (it spawns their tasks there).
pub fn start(section: &ScSection, instance: u32, base: &Path) -> anyhow::Result<StartedSc> {
    section.validate()?;
    let file = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { base.join(p) };
    let mut creds =
        ScCredentials::from_pem_files(&file(&section.certificate), &file(&section.key), &file(&section.issuers))
            .context("BACnet/SC credentials")?;
    if let Some(crl) = &section.revocation_lists {
        creds = creds.with_revocation_lists(&file(crl)).context("BACnet/SC revocation lists")?;
    }
    let uuid = match &section.uuid {
        Some(u) => identity::parse_uuid(u).context("sc.uuid")?,
        None => identity::derived_uuid(instance, creds.chain[0].as_ref()),
    };
    let vmac = match &section.vmac {
        Some(v) => identity::parse_vmac(v).context("sc.vmac")?,
        None => identity::random_vmac(),
    };
    let me = ConnectInfo { vmac, uuid, max_bvlc_len: MAX_BVLC, max_npdu_len: MAX_NPDU };
    let mut connection = ConnectionConfig::new(me);
    connection.heartbeat = Duration::from_secs(section.heartbeat_s.into());
    connection.connect_wait = Duration::from_secs(section.connect_wait_s.into());
    connection.disconnect_wait = Duration::from_secs(section.disconnect_wait_s.into());

    // Both TLS configurations first: nothing starts on credentials that fail.
    let client_tls = creds.client_config().context("BACnet/SC node TLS")?;
    let server_tls = match &section.hub_function {
        Some(_) => Some(creds.server_config().context("BACnet/SC hub function TLS")?),
        None => None,
    };
    let hub = match (&section.hub_function, server_tls) {
        (Some(bind), Some(server_tls)) => {
            let listener = std::net::TcpListener::bind(bind)
                .and_then(|l| {
                    l.set_nonblocking(true)?;
                    tokio::net::TcpListener::from_std(l)
                })
                .with_context(|| format!("BACnet/SC hub function: cannot listen on {bind}"))?;
            let stats = Arc::new(HubPortStats::default());
            // The hub function answers with the device's own identity.
            let hub_id = ConnectInfo { vmac: identity::random_vmac(), ..me };
            let serving = trellis_sc::hub::serve_hub(
                listener,
                server_tls,
                HubConfig::new(ConnectionConfig { local: hub_id, ..connection }),
                stats.clone(),
            );
            tracing::info!(%bind, "BACnet/SC hub function listening");
            let bind = bind.clone();
            tokio::spawn(async move {
                if let Err(e) = serving.await {
                    tracing::error!(%bind, "BACnet/SC hub function stopped: {e}");
                }
            });
            Some(stats)
        }
        _ => None,
    };

    let direct = match &section.direct_connect {
        None => None,
        Some(d) => {
            let accept = match &d.accept {
                None => None,
                Some(bind) => {
                    let listener = std::net::TcpListener::bind(bind)
                        .and_then(|l| l.set_nonblocking(true).map(|()| l))
                        .with_context(|| format!("BACnet/SC direct connections: cannot listen on {bind}"))?;
                    let tls = creds.server_config().context("BACnet/SC direct connections TLS")?;
                    tracing::info!(%bind, "BACnet/SC direct connections taken");
                    Some(trellis_sc::direct::DirectAccept { listener, tls, uris: d.accept_uris() })
                }
            };
            Some(trellis_sc::direct::DirectConfig { accept, initiate: d.initiate })
        }
    };
    let mut connector = ConnectorConfig::new(connection, section.failover_hub.is_some());
    connector.reconnect = Duration::from_secs(section.reconnect_s.into());
    connector.max_reconnect = Duration::from_secs(section.max_reconnect_s.into());
    let primary = section.primary();
    let direct_view = section.direct_connect.as_ref().map(|d| (d.initiate, d.accept.clone(), d.accept_uris()));
    let (node, up) = ScNode::start(NodeConfig {
        direct,
        primary: primary.clone(),
        failover: section.failover_hub.clone(),
        tls: client_tls,
        connector,
    });
    tracing::info!(
        hub = %primary, vmac = %identity::hex(&vmac), uuid = %identity::format_uuid(&uuid),
        "BACnet/SC node started"
    );
    let view = ScView {
        primary_hub: primary,
        failover_hub: section.failover_hub.clone(),
        hub_function: section.hub_function.clone(),
        heartbeat_s: section.heartbeat_s,
        connect_wait_s: section.connect_wait_s,
        disconnect_wait_s: section.disconnect_wait_s,
        reconnect_s: (section.reconnect_s, section.max_reconnect_s),
        max_bvlc: MAX_BVLC,
        max_npdu: MAX_NPDU,
        direct_initiate: direct_view.as_ref().is_some_and(|d| d.0),
        direct_accept: direct_view.as_ref().and_then(|d| d.1.clone()),
        direct_accept_uris: direct_view.map(|d| d.2).unwrap_or_default(),
        node: node.clone(),
    };
    Ok(StartedSc { port: ScPort { node, up }, view, hub, uuid })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(extra: &str) -> Result<ScSection, toml::de::Error> {
        toml::from_str(&format!("certificate = \"n.pem\"\nkey = \"n.key\"\nissuers = \"ca.pem\"\n{extra}"))
    }

    #[test]
    fn mistakes_are_named() {
        let ok = section("primary_hub = \"wss://127.0.0.1:47843/\"").unwrap();
        ok.validate().unwrap();
        for (extra, named) in [
            ("", "primary_hub"),
            ("primary_hub = \"ws://127.0.0.1:47843/\"", "wss://"),
            ("primary_hub = \"wss://h/\"\nfailover_hub = \"http://h/\"", "failover_hub"),
            ("hub_function = \"localhost\"", "hub_function"),
            ("hub_function = \"127.0.0.1:0\"", "not 0"),
            ("hub_function = \"0.0.0.0:47843\"", "sc.primary_hub"),
            ("primary_hub = \"wss://:47843/\"", "primary_hub"),
            ("primary_hub = \"wss://h:1/\"\nfailover_hub = \"wss://h:1/\"", "failover_hub is the primary_hub"),
            ("hub_function = \"127.0.0.1:1\"\nconnect_wait_s = 0", "connect_wait_s"),
            ("hub_function = \"127.0.0.1:1\"\nvmac = \"ffffffffffff\"", "sc.vmac"),
            ("hub_function = \"127.0.0.1:1\"\nuuid = \"12\"", "sc.uuid"),
            ("hub_function = \"127.0.0.1:1\"\ndirect_connect = { accept = \"127.0.0.1:0\" }", "not 0"),
            ("hub_function = \"127.0.0.1:1\"\ndirect_connect = { initiate = false }", "neither"),
            ("hub_function = \"127.0.0.1:1\"\ndirect_connect = { uris = [\"wss://h:1/\"] }", "without accept"),
            ("hub_function = \"127.0.0.1:1\"\nreconnect_s = 200", "max_reconnect_s"),
        ] {
            let e = section(extra).unwrap().validate().unwrap_err().to_string();
            assert!(e.contains(named), "{extra}: {e}");
        }
        assert!(section("primary = \"wss://h/\"").is_err(), "unknown keys are refused");
        let own = section("hub_function = \"127.0.0.1:47843\"").unwrap();
        assert_eq!(own.primary(), "wss://127.0.0.1:47843/", "a hub function's own node connects to it");
    }
}
