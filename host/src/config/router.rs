//! `[router]`: the router's B/IP ports and its routing-policy plugins.

use super::*;
use serde::Deserialize;

/// `[router]`.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RouterSection {
    /// `[[router.port]]`: its B/IP ports.
    #[serde(rename = "port")]
    pub ports: Vec<RouterPortSection>,
    /// `[[router.policy]]`: routing-policy plugins, asked in order about
    /// every NPDU the router would send on; the first that does not say
    /// "forward" decides.
    #[serde(rename = "policy", default)]
    pub policies: Vec<RoutingPolicySection>,
}

/// One `[[router.policy]]`: a routing-policy plugin and its settings.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoutingPolicySection {
    /// `builtin:firewall`, `builtin:broadcast-guard`, or a component file
    /// (vetted by `[policy]` like any plugin file).
    pub plugin: String,
    /// What routed NPDUs get while the plugin cannot answer: `closed`
    /// (dropped, the default) or `open` (forwarded unchecked).
    #[serde(default = "default_on_failure")]
    pub on_failure: String,
    /// Wall-clock limit of one call, in ms (the router waits for it).
    #[serde(default = "default_policy_deadline_ms")]
    pub deadline_ms: u64,
    /// Memory limit, in MiB.
    #[serde(default = "default_policy_memory_mb")]
    pub memory_mb: u64,
    /// The plugin's own settings, handed to it as TOML.
    #[serde(default)]
    pub settings: toml::Table,
}

fn default_on_failure() -> String {
    "closed".into()
}

fn default_policy_deadline_ms() -> u64 {
    10
}

fn default_policy_memory_mb() -> u64 {
    16
}

impl RoutingPolicySection {
    /// Whether it fails open (`on_failure = "open"`).
    pub fn fails_open(&self) -> anyhow::Result<bool> {
        match self.on_failure.as_str() {
            "closed" => Ok(false),
            "open" => Ok(true),
            other => anyhow::bail!("on_failure must be \"closed\" or \"open\", not {other:?}"),
        }
    }

    /// The settings as the TOML text the plugin parses.
    pub fn settings_text(&self) -> String {
        toml::to_string(&self.settings).unwrap_or_default()
    }

    /// Resolve `plugin` (relative paths against `base`).
    pub fn plugin_ref(&self, base: &Path) -> anyhow::Result<PluginRef> {
        match self.plugin.strip_prefix("builtin:") {
            Some("firewall") => Ok(PluginRef::Builtin("firewall")),
            Some("broadcast-guard") => Ok(PluginRef::Builtin("broadcast-guard")),
            Some(other) => {
                anyhow::bail!("unknown built-in routing policy `{other}` (built in: firewall, broadcast-guard)")
            }
            None => Ok(PluginRef::File(base.join(&self.plugin))),
        }
    }
}

/// One `[[router.port]]`: a B/IP port of the router, or with `mstp`, an
/// MS/TP port (a trunk: the router routes to it; no device of the
/// gateway's own is on it).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RouterPortSection {
    /// `IP` or `IP/PREFIX` to bind.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// UDP port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The network number of the network on this port (1..=65534).
    pub network: u16,
    /// An MS/TP port instead of B/IP (`bind` and `port` are then unused).
    pub mstp: Option<MstpSection>,
    /// Make this B/IP port a BBMD.
    pub bbmd: Option<BbmdSection>,
    /// A BACnet/IPv6 port instead of B/IP (`bind` and `port` are then
    /// unused); its VMAC is `vmac_instance` in three octets, by default
    /// 0x3F0000 plus the network number.
    pub bip6: Option<Bip6Section>,
    /// A BACnet/SC port instead of B/IP (`bind` and `port` are then
    /// unused): a node on its hubs, optionally running the hub function.
    pub sc: Option<crate::sc_port::ScSection>,
    /// A BACnet Ethernet port instead of B/IP (`bind` and `port` are then
    /// unused).
    pub ethernet: Option<EthernetSection>,
}

impl RouterSection {
    /// The router port a device bound to `bind`:`port` is served on, if any.
    pub fn port_of(&self, d: &DeviceSection) -> Option<usize> {
        if d.virtual_network.is_some() || d.mstp.is_some() || d.sc.is_some() || d.ethernet.is_some() {
            return None;
        }
        self.ports.iter().position(|p| {
            p.mstp.is_none()
                && p.bip6.is_none()
                && p.sc.is_none()
                && p.ethernet.is_none()
                && p.bind == d.bind
                && p.port == d.port
        })
    }
}
