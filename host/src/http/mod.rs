//! The operator's HTTP surface (issue 18): a web console, a REST API with
//! its OpenAPI description, and Prometheus `/metrics` — on the host's
//! runtime, never on a device's thread: everything a handler needs from a
//! device it asks that device's server for, and awaits.
//!
//! ```text
//! browser ──GET / (embedded console)──▶ assets
//!         ──/api/… (JSON, SSE)───────▶ auth (token / client certificate) ──▶ devices · plugins · ports · cov · config · logs
//! Prometheus ──/metrics──────────────▶ auth ──▶ the counters, read at the scrape
//! ```
//!
//! On by default on `127.0.0.1:47880` (loopback, open); `[http]` moves it
//! and adds credentials, and a bind beyond loopback needs them (see
//! [`config`]). When `[http]` is absent and the default port is taken, the
//! gateway says so and serves BACnet without a console.
//!
//! Must never: run on a device's shard, answer from a plugin directly what
//! the device's server would refuse, or serve `/api` or `/metrics` beyond
//! loopback without a credential.

pub mod assets;
pub mod auth;
pub mod config;
pub mod devices;
pub mod error;
pub mod gateway;
pub mod logs;
pub mod metrics;
pub mod plugins;
pub mod tls;
pub mod trend;
pub mod watch;

pub use config::HttpSection;
pub use gateway::{PortCounters, PortEntry};

use crate::plugin::PluginModel;
use crate::server::Server;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::routing::{get, post};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// A served device, for the API.
pub struct DeviceEntry {
    /// Its server.
    pub server: Arc<Server<PluginModel>>,
    /// Where it is served, as the start-up line says.
    pub on: String,
}

/// What the HTTP surface shows and acts on.
pub struct Gateway {
    /// Served devices by instance.
    pub devices: BTreeMap<u32, DeviceEntry>,
    /// Plugin status and hot swaps.
    pub admin: Arc<crate::admin::Admin>,
    /// Ports and their counters.
    pub ports: Vec<PortEntry>,
    /// The configuration in effect, secrets removed.
    pub config: serde_json::Value,
    /// A private directory for uploaded plugins.
    pub uploads: PathBuf,
    /// Point streams open at once (each holds COV subscriptions in a
    /// device's table): at most [`MAX_WATCHERS`].
    pub watchers: Arc<tokio::sync::Semaphore>,
    /// The MQTT broker link, with `[mqtt]`.
    pub mqtt: Option<trellis_mqtt::link::Link>,
    /// Writes asked over MQTT, with `[mqtt]`.
    pub mqtt_commands: Option<Arc<crate::mqtt_bridge::CommandCounts>>,
}

/// Point streams (`/api/devices/{device}/events`) open at once; more get 503.
pub const MAX_WATCHERS: usize = 16;

/// The HTTP surface, listening.
#[derive(Debug, Clone)]
pub struct Running {
    /// Where it listens.
    pub local_addr: SocketAddr,
    /// The console's URL.
    pub url: String,
}

/// The whole router: the console's files, then `/api` and `/metrics` behind
/// authentication.
pub fn router(gateway: Arc<Gateway>, credentials: auth::Credentials, max_upload: usize) -> Router {
    let api = Router::new()
        .route("/api/devices", get(devices::list))
        .route("/api/devices/{device}/objects", get(devices::objects))
        .route("/api/devices/{device}/objects/{object}", get(devices::object))
        .route("/api/devices/{device}/objects/{object}/properties/{property}", get(devices::read).put(devices::write))
        .route("/api/devices/{device}/objects/{object}/trend", get(trend::trend))
        .route("/api/devices/{device}/events", get(watch::events))
        .route("/api/devices/{device}/plugin", post(plugins::swap).layer(DefaultBodyLimit::max(max_upload)))
        .route("/api/apps/{app}/plugin", post(plugins::swap_app).layer(DefaultBodyLimit::max(max_upload)))
        .route("/api/policies/{policy}/plugin", post(plugins::swap_policy).layer(DefaultBodyLimit::max(max_upload)))
        .route("/api/plugins", get(plugins::list))
        .route("/api/ports", get(gateway::ports))
        .route("/api/cov", get(gateway::cov))
        .route("/api/config", get(gateway::config))
        .route("/api/logs", get(logs::kept))
        .route("/api/logs/events", get(logs::events))
        .route("/api/openapi.json", get(gateway::openapi))
        .route("/metrics", get(metrics::metrics))
        .fallback(not_found)
        .with_state(gateway)
        .layer(axum::middleware::map_response(error::as_json))
        .layer(axum::middleware::from_fn_with_state(Arc::new(credentials), auth::require));
    Router::new()
        .route("/", get(assets::index))
        .route("/console/{file}", get(assets::file))
        .route("/favicon.ico", get(assets::favicon))
        .merge(api)
        .layer(axum::middleware::map_response(security_headers))
}

async fn not_found(uri: axum::http::Uri) -> error::ApiError {
    error::ApiError::not_found(format!("no such resource: {}", uri.path()))
}

/// Headers every answer carries: nothing sniffed, framed or loaded from
/// elsewhere (the console is self-contained: a CDN load would be refused).
async fn security_headers(mut r: axum::response::Response) -> axum::response::Response {
    let h = r.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; \
             frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    r
}

/// The configuration as JSON with every secret replaced by `"(set)"`: any
/// key naming a password, secret, token, key or credential, at any depth
/// (plugins' own settings included).
pub fn redacted(config: &crate::config::Config) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    let k = k.to_ascii_lowercase();
                    let secret = ["pass", "secret", "token", "key", "credential"].iter().any(|w| k.contains(w));
                    // A list or table under such a name (`tokens`) is looked into, not hidden.
                    if secret && !v.is_null() && !v.is_array() && !v.is_object() {
                        *v = serde_json::Value::String("(set)".into());
                    } else {
                        walk(v);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(config).unwrap_or_default();
    walk(&mut v);
    v
}

/// Bind and serve on the runtime this is called on. `Ok(None)` when turned off.
pub async fn start(section: &HttpSection, gateway: Arc<Gateway>) -> anyhow::Result<Option<Running>> {
    let Some(addr) = section.bind_addr()? else { return Ok(None) };
    section.check()?;
    let credentials = auth::Credentials::new(section).map_err(|e| anyhow::anyhow!("[http]: {e}"))?;
    let max_upload =
        section.max_upload_mb.map_or(crate::plugin::MAX_COMPONENT_BYTES as usize, |mb| (mb as usize) << 20);
    let app = router(gateway, credentials, max_upload);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("cannot bind {addr}: {e}"))?;
    let local_addr = listener.local_addr()?;
    let url = match &section.tls {
        Some(tls) => {
            let config = tls::server_config(tls).map_err(|e| anyhow::anyhow!("[http.tls]: {e:#}"))?;
            let listener = tls::TlsListener::new(listener, config)?;
            tokio::spawn(async move {
                let serving = axum::serve(listener, app.into_make_service_with_connect_info::<auth::Peer>());
                if let Err(e) = serving.await {
                    tracing::error!("the HTTPS server stopped: {e}");
                }
            });
            format!("https://{}/", shown(local_addr))
        }
        None => {
            let listener = tls::PlainListener(listener);
            tokio::spawn(async move {
                let serving = axum::serve(listener, app.into_make_service_with_connect_info::<auth::Peer>());
                if let Err(e) = serving.await {
                    tracing::error!("the HTTP server stopped: {e}");
                }
            });
            format!("http://{}/", shown(local_addr))
        }
    };
    if !addr.ip().is_loopback() && section.tls.is_none() {
        tracing::warn!(
            "[http] bind = {addr} without [http.tls]: bearer tokens cross the network in clear; add [http.tls]"
        );
    }
    Ok(Some(Running { local_addr, url }))
}

/// An address as a browser takes it.
fn shown(a: SocketAddr) -> String {
    match a {
        SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
        v4 => v4.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_configuration_shown_keeps_no_secret_at_any_depth() {
        let config = crate::config::Config::parse(
            r#"
[[device]]
plugin = "builtin:demo-building"
password = "device-password"

[[app]]
plugin = "builtin:alarm-threshold"
settings = { point = "x", api_key = "vendor-secret", nested = { mqtt_pass = "p" } }

[http]
[[http.tokens]]
name = "viewer"
token = "viewer-token-0123456789"
"#,
        )
        .unwrap();
        let shown = super::redacted(&config).to_string();
        for secret in ["device-password", "vendor-secret", "\"p\"", "viewer-token-0123456789"] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        assert!(shown.contains("\"viewer\"") && shown.contains("\"point\":\"x\""), "{shown}");
    }
}
