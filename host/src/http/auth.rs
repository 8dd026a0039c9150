//! Who may use the HTTP surface: bearer tokens (RFC 6750) and client
//! certificates (mTLS), mapped to an [`Access`].
//!
//! - no credentials where some are required → 401 with
//!   `WWW-Authenticate: Bearer realm="trellis"`;
//! - a token that matches none → 401 with `error="invalid_token"`;
//! - a read-only credential on a method that changes something (POST, PUT,
//!   PATCH, DELETE) → 403 with `error="insufficient_scope"`.
//!
//! Tokens are kept as SHA-256 digests and every configured digest is
//! compared, in constant time, whatever the request carries.
//!
//! Must never: say which part of a token was wrong, log a token, or let a
//! request through on a non-loopback bind without a credential.

use super::config::{HttpSection, TokenSection};
use super::error::ApiError;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Look.
    Read,
    /// Look, write points, swap plugins.
    ReadWrite,
}

impl Access {
    /// `read` or `read-write`.
    pub fn parse(s: &str) -> Option<Access> {
        match s {
            "read" => Some(Access::Read),
            "read-write" => Some(Access::ReadWrite),
            _ => None,
        }
    }
}

/// The credential a request was accepted with, for handlers and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's name, `client-certificate SHA256`, or `loopback` when none is required.
    pub name: String,
    /// What it may do.
    pub access: Access,
}

/// A connection's peer, as the listener saw it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Its address.
    pub addr: std::net::SocketAddr,
    /// SHA-256 of its verified client certificate (mTLS), if it gave one.
    pub client_cert: Option<[u8; 32]>,
}

/// The configured credentials.
#[derive(Debug, Clone)]
pub struct Credentials {
    tokens: Vec<(String, [u8; 32], Access)>,
    client_access: Option<Access>,
    required: bool,
}

/// A token section's digest: `token_sha256` as given, or the digest of `token`.
pub fn digest_of(t: &TokenSection) -> Result<[u8; 32], String> {
    match (&t.token, &t.token_sha256) {
        (Some(clear), None) if clear.len() >= 16 => Ok(Sha256::digest(clear.as_bytes()).into()),
        (Some(_), None) => Err("a token must have at least 16 characters".into()),
        (None, Some(hex)) => {
            let hex = hex.trim();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err("token_sha256 must be 64 hex digits".into());
            }
            let mut d = [0u8; 32];
            for (i, out) in d.iter_mut().enumerate() {
                *out = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
            }
            Ok(d)
        }
        (Some(_), Some(_)) => Err("give token or token_sha256, not both".into()),
        (None, None) => Err("give token or token_sha256".into()),
    }
}

impl Credentials {
    /// From a checked `[http]` section.
    pub fn new(section: &HttpSection) -> Result<Credentials, String> {
        let mut tokens = Vec::new();
        for t in &section.tokens {
            let access = if t.write { Access::ReadWrite } else { Access::Read };
            tokens.push((t.name.clone(), digest_of(t)?, access));
        }
        let client_access = section
            .tls
            .as_ref()
            .filter(|t| t.client_ca.is_some())
            .map(|t| Access::parse(&t.client_access).unwrap_or(Access::Read));
        Ok(Credentials { tokens, client_access, required: section.authenticates() })
    }

    /// Who `peer` with `authorization` is, or why not.
    pub fn identify(&self, peer: Option<&Peer>, authorization: Option<&[u8]>) -> Result<Principal, Refusal> {
        if let (Some(access), Some(cert)) = (self.client_access, peer.and_then(|p| p.client_cert)) {
            return Ok(Principal { name: format!("client-certificate {}", hex8(&cert)), access });
        }
        if !self.required {
            // Nothing to check a credential against: a stale token a
            // browser still sends must not lock the console out.
            return Ok(Principal { name: "loopback".into(), access: Access::ReadWrite });
        }
        let Some(header) = authorization else { return Err(Refusal::Missing) };
        let token = bearer(header).ok_or(Refusal::Invalid)?;
        let digest: [u8; 32] = Sha256::digest(token).into();
        // Every digest is compared, so the time taken says nothing about which matched.
        let mut found = None;
        for (name, d, access) in &self.tokens {
            if bool::from(d.ct_eq(&digest)) {
                found = Some(Principal { name: name.clone(), access: *access });
            }
        }
        found.ok_or(Refusal::Invalid)
    }
}

fn hex8(d: &[u8; 32]) -> String {
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// `Bearer TOKEN` (the scheme in any case, RFC 9110 §11.1) → TOKEN.
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token.as_bytes())
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No credential.
    Missing,
    /// A credential that matches none.
    Invalid,
}

/// The middleware on `/api` and `/metrics`.
pub async fn require(
    State(credentials): State<Arc<Credentials>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    mut req: Request,
    next: Next,
) -> Response {
    let authorization = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes().to_vec());
    let principal = match credentials.identify(Some(&peer), authorization.as_deref()) {
        Ok(p) => p,
        Err(Refusal::Missing) => {
            return challenge(StatusCode::UNAUTHORIZED, "Bearer realm=\"trellis\"", "a bearer token is required");
        }
        Err(Refusal::Invalid) => {
            tracing::warn!(peer = %peer.addr, path = %req.uri().path(), "HTTP request with an invalid token refused");
            return challenge(
                StatusCode::UNAUTHORIZED,
                "Bearer realm=\"trellis\", error=\"invalid_token\"",
                "the token is not valid",
            );
        }
    };
    // Open (loopback, no credentials): only names of this host, so that a
    // web page whose name was rebound to 127.0.0.1 cannot use the API.
    if !credentials.required && !req.headers().get(header::HOST).is_some_and(|h| loopback_host(h.as_bytes())) {
        return challenge(StatusCode::FORBIDDEN, "Bearer realm=\"trellis\"", "the Host header does not name this host");
    }
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    // A change another site's page asked the browser for (which would send
    // a client certificate by itself): refused, whatever the credential.
    if changes && cross_site(req.headers()) {
        return challenge(StatusCode::FORBIDDEN, "Bearer realm=\"trellis\"", "a change asked from another site's page");
    }
    if changes && principal.access < Access::ReadWrite {
        return challenge(
            StatusCode::FORBIDDEN,
            "Bearer realm=\"trellis\", error=\"insufficient_scope\"",
            &format!("{} may read but not write", principal.name),
        );
    }
    if changes {
        tracing::info!(who = %principal.name, peer = %peer.addr, method = %req.method(), path = %req.uri().path(), "HTTP change");
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn loopback_host(host: &[u8]) -> bool {
    let Ok(host) = std::str::from_utf8(host) else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The browser says the request comes from another site: `Sec-Fetch-Site`
/// cross-site or same-site, or an `Origin` that is not the `Host` asked.
fn cross_site(headers: &axum::http::HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return !matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    match (headers.get(header::ORIGIN), headers.get(header::HOST)) {
        (Some(origin), Some(host)) => {
            let origin = origin.to_str().unwrap_or("");
            let authority = origin.split_once("://").map_or("", |(_, a)| a);
            authority.as_bytes() != host.as_bytes()
        }
        (Some(_), None) => true,
        _ => false,
    }
}

fn challenge(status: StatusCode, www: &'static str, message: &str) -> Response {
    let mut r = ApiError::new(status, message).into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static(www));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(tokens: &[(&str, &str, bool)]) -> HttpSection {
        HttpSection {
            tokens: tokens
                .iter()
                .map(|(n, t, w)| TokenSection {
                    name: n.to_string(),
                    token: Some(t.to_string()),
                    token_sha256: None,
                    write: *w,
                })
                .collect(),
            ..HttpSection::default()
        }
    }

    #[test]
    fn tokens_are_matched_by_digest_and_scheme_case_does_not_matter() {
        let c =
            Credentials::new(&section(&[("ro", "read-only-token-1234", false), ("rw", "read-write-token-1234", true)]))
                .unwrap();
        let p = c.identify(None, Some(b"bearer read-write-token-1234")).unwrap();
        assert_eq!((p.name.as_str(), p.access), ("rw", Access::ReadWrite));
        let p = c.identify(None, Some(b"Bearer read-only-token-1234")).unwrap();
        assert_eq!(p.access, Access::Read);
        assert_eq!(c.identify(None, Some(b"Bearer read-only-token-123")), Err(Refusal::Invalid));
        assert_eq!(c.identify(None, Some(b"Basic cmVhZA==")), Err(Refusal::Invalid));
        assert_eq!(c.identify(None, None), Err(Refusal::Missing));
    }

    #[test]
    fn without_credentials_configured_loopback_is_open() {
        let c = Credentials::new(&HttpSection::default()).unwrap();
        assert_eq!(c.identify(None, None).unwrap().access, Access::ReadWrite);
        assert_eq!(c.identify(None, Some(b"Bearer stale")).unwrap().access, Access::ReadWrite);
    }

    #[test]
    fn only_this_hosts_names_are_loopback_hosts() {
        for ok in ["localhost", "localhost:47880", "127.0.0.1:47880", "127.1.2.3", "[::1]:47880", "[::1]"] {
            assert!(loopback_host(ok.as_bytes()), "{ok}");
        }
        for bad in ["evil.example:47880", "192.168.1.10:47880", "localhost.evil.example", "[::2]:80", ""] {
            assert!(!loopback_host(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn changes_from_another_sites_page_are_told_apart() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = axum::http::HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, axum::http::HeaderValue::from_static(v));
            }
            h
        };
        assert!(cross_site(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!cross_site(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(cross_site(&headers(&[("origin", "http://evil.example"), ("host", "127.0.0.1:47880")])));
        assert!(!cross_site(&headers(&[("origin", "http://127.0.0.1:47880"), ("host", "127.0.0.1:47880")])));
        // curl and other tools send neither.
        assert!(!cross_site(&headers(&[("host", "127.0.0.1:47880")])));
    }

    #[test]
    fn a_short_token_or_a_bad_digest_is_refused_at_start() {
        assert!(digest_of(&section(&[("x", "short", false)]).tokens[0]).is_err());
        let t = TokenSection { name: "x".into(), token: None, token_sha256: Some("abc".into()), write: false };
        assert!(digest_of(&t).is_err());
        let open_wide = HttpSection { bind: "0.0.0.0:8080".into(), ..HttpSection::default() };
        assert!(open_wide.check().is_err());
    }
}
