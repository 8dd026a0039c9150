//! `[http]`: where the operator's HTTP surface listens and who may use it.
//!
//! ```toml
//! [http]
//! bind = "127.0.0.1:47880"          # the default; "off" turns the console, API and /metrics off
//!
//! [[http.tokens]]                   # bearer tokens (Authorization: Bearer …)
//! name = "grafana"
//! token_sha256 = "9f86d0…"          # SHA-256 of the token, hex (or `token = "…"` in clear)
//! write = false                     # read-only: 403 on writes and plugin swaps
//!
//! [http.tls]                        # HTTPS; with client_ca, clients may present a certificate (mTLS)
//! cert = "console.crt"              # PEM chain, the server's
//! key = "console.key"               # PEM private key
//! client_ca = "operators-ca.crt"    # optional: issuers of client certificates
//! client_access = "read"            # what a client certificate from client_ca grants: read | read-write
//! ```
//!
//! Without tokens and without client certificates the API is open — which
//! is only allowed on a loopback bind. Anything wider is refused at start
//! unless one of the two is configured.
//!
//! Must never: keep a token in clear once parsed (only its SHA-256 is kept),
//! or start open on a non-loopback address.

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The default bind: loopback, BACnet's port number with "80" for the console.
pub const DEFAULT_BIND: &str = "127.0.0.1:47880";

/// `[http]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// `IP:PORT`, or `off`.
    #[serde(default = "default_bind")]
    pub bind: String,
    /// Bearer tokens.
    #[serde(default)]
    pub tokens: Vec<TokenSection>,
    /// HTTPS, and optionally client certificates.
    pub tls: Option<TlsSection>,
    /// Largest plugin upload, in MiB (default: the largest component the runtime loads).
    pub max_upload_mb: Option<u32>,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection { bind: default_bind(), tokens: Vec::new(), tls: None, max_upload_mb: None }
    }
}

fn default_bind() -> String {
    DEFAULT_BIND.into()
}

/// `[[http.tokens]]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenSection {
    /// Who holds it (logs and audit lines).
    pub name: String,
    /// The token in clear (prefer `token_sha256`).
    #[serde(skip_serializing)]
    pub token: Option<String>,
    /// SHA-256 of the token, 64 hex digits.
    #[serde(skip_serializing)]
    pub token_sha256: Option<String>,
    /// May write points and swap plugins (default: read only).
    #[serde(default)]
    pub write: bool,
}

/// `[http.tls]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// The server's certificate chain, PEM.
    pub cert: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
    /// Issuers of client certificates, PEM; without it no client certificate is asked for.
    pub client_ca: Option<PathBuf>,
    /// What a valid client certificate grants: `read` (default) or `read-write`.
    #[serde(default = "default_client_access")]
    pub client_access: String,
}

fn default_client_access() -> String {
    "read".into()
}

impl HttpSection {
    /// The address to bind, or `None` when turned off.
    pub fn bind_addr(&self) -> anyhow::Result<Option<SocketAddr>> {
        if self.bind.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let addr = self
            .bind
            .parse()
            .map_err(|_| anyhow::anyhow!("[http] bind = {:?} is not IP:PORT (or \"off\")", self.bind))?;
        Ok(Some(addr))
    }

    /// Whether anyone must authenticate: tokens or client certificates configured.
    pub fn authenticates(&self) -> bool {
        !self.tokens.is_empty() || self.tls.as_ref().is_some_and(|t| t.client_ca.is_some())
    }

    /// Refuse an open API beyond loopback, and settings that do not parse.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(addr) = self.bind_addr()?
            && !addr.ip().is_loopback()
            && !self.authenticates()
        {
            anyhow::bail!(
                "[http] bind = {addr} is beyond loopback: add [[http.tokens]] or [http.tls] client_ca, \
                 or bind to 127.0.0.1"
            );
        }
        for (i, t) in self.tokens.iter().enumerate() {
            super::auth::digest_of(t).map_err(|e| anyhow::anyhow!("[[http.tokens]] {} ({}): {e}", i + 1, t.name))?;
        }
        if let Some(tls) = &self.tls {
            super::auth::Access::parse(&tls.client_access)
                .ok_or_else(|| anyhow::anyhow!("[http.tls] client_access must be read or read-write"))?;
        }
        Ok(())
    }
}
