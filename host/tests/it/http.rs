//! The operator's HTTP surface of a real gateway process: who gets in (no
//! token → 401, wrong token → 401, a read-only token → 403 on writes and
//! swaps), the REST API reading and writing points with the device's BACnet
//! errors in JSON, a hot swap by upload, live values over server-sent
//! events, `/metrics` moving with BACnet traffic, HTTPS with client
//! certificates, and the OpenAPI description matching the routes.

use super::gateway::Gateway;
use super::scratch::Scratch;
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};
use trellis::client::{Client, ClientConfig, DeviceAddress};
use trellis_bip::BipConfig;

const VIEWER: &str = "viewer-token-0123456789";
const OPERATOR: &str = "operator-token-0123456789";
const DEVICE: u32 = 389_301;

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    head: String,
    pub(crate) body: String,
}

impl Reply {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One HTTP/1.1 exchange over `stream` (Connection: close), body de-chunked.
pub(crate) fn exchange(
    mut stream: impl Read + Write,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Reply {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(rest) } else { rest.to_string() };
    Reply { status, head: head.to_string(), body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn call(addr: SocketAddr, method: &str, path: &str, token: Option<&str>, json: Option<serde_json::Value>) -> Reply {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("Authorization", format!("Bearer {t}")));
    }
    let body = json.map(|j| j.to_string()).unwrap_or_default();
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json".into()));
    }
    exchange(stream, method, path, &headers, body.as_bytes())
}

/// The console's address, from the gateway's start-up line.
fn console_addr(gw: &Gateway) -> SocketAddr {
    let log = gw.log();
    let url = log
        .lines()
        .find_map(|l| l.strip_prefix("trellis: console "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no console line in:\n{log}"));
    let host = url.trim_start_matches("http://").trim_start_matches("https://").trim_end_matches('/');
    host.parse().unwrap()
}

/// A gateway running the configuration `toml`, and its console's address.
fn run_config(scratch: &Scratch, toml: &str) -> (Gateway, SocketAddr) {
    let path = scratch.path("gateway.toml");
    std::fs::write(&path, toml).unwrap();
    let gw =
        Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    let addr = console_addr(&gw);
    (gw, addr)
}

/// A gateway serving the demo building with viewer and operator tokens.
fn start(scratch: &Scratch, extra: &str) -> (Gateway, SocketAddr, u16) {
    let bacnet_port = crate::peers::free_port();
    let operator_digest: String = Sha256::digest(OPERATOR.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let config = format!(
        r#"
[[device]]
bind = "127.0.0.1"
port = {bacnet_port}
instance = {DEVICE}
plugin = "builtin:demo-building"

[policy]
allow_unsigned = true

[http]
bind = "127.0.0.1:0"

[[http.tokens]]
name = "viewer"
token = "{VIEWER}"

[[http.tokens]]
name = "operator"
token_sha256 = "{operator_digest}"
write = true
{extra}
"#
    );
    let (gw, addr) = run_config(scratch, &config);
    (gw, addr, bacnet_port)
}

#[test]
fn no_token_and_a_wrong_token_get_401_and_a_read_only_token_gets_403_on_writes_and_swaps() {
    let scratch = Scratch::new("http", "auth");
    let (_gw, addr, _) = start(&scratch, "");
    // No token: 401, with the challenge.
    let r = call(addr, "GET", "/api/devices", None, None);
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer realm=\"trellis\""));
    assert_eq!(r.json()["error"]["status"], 401);
    // Wrong token: 401 invalid_token.
    let r = call(addr, "GET", "/api/devices", Some("viewer-token-0123456780"), None);
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().contains("invalid_token"), "{r:?}");
    // Unknown paths do not say more to strangers.
    assert_eq!(call(addr, "GET", "/api/nothing-here", None, None).status, 401);
    assert_eq!(call(addr, "GET", "/metrics", None, None).status, 401);
    // The viewer reads …
    let r = call(addr, "GET", "/api/devices", Some(VIEWER), None);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()[0]["instance"], DEVICE);
    // … but neither writes nor swaps.
    let pv = "/api/devices/389301/objects/analog-value,1/properties/present-value";
    let r = call(addr, "PUT", pv, Some(VIEWER), Some(serde_json::json!({"value": 22.5, "priority": 8})));
    assert_eq!(r.status, 403, "{r:?}");
    assert!(r.header("www-authenticate").unwrap().contains("insufficient_scope"));
    let r = call(addr, "POST", "/api/devices/389301/plugin", Some(VIEWER), None);
    assert_eq!(r.status, 403, "{r:?}");
    // The operator writes.
    let r = call(addr, "PUT", pv, Some(OPERATOR), Some(serde_json::json!({"value": 22.5, "priority": 8})));
    assert_eq!(r.status, 204, "{r:?}");
    let r = call(addr, "GET", pv, Some(VIEWER), None);
    assert_eq!(r.json()["value"], 22.5);
    // The console's page itself carries no secret and is served to anyone, self-contained.
    let page = call(addr, "GET", "/", None, None);
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").unwrap().contains("default-src 'self'"));
}

#[test]
fn a_bind_beyond_loopback_without_credentials_is_refused_at_start() {
    let scratch = Scratch::new("http", "wide");
    let path = scratch.path("gateway.toml");
    let port = crate::peers::free_port();
    std::fs::write(
        &path,
        format!("[[device]]\nbind = \"127.0.0.1\"\nport = {port}\nplugin = \"builtin:demo-building\"\n\n[http]\nbind = \"0.0.0.0:0\"\n"),
    )
    .unwrap();
    let err = match Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0) {
        Ok(_) => panic!("a console open to the network was started"),
        Err(log) => log,
    };
    assert!(err.contains("beyond loopback") && err.contains("[[http.tokens]]"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_reads_and_writes_points_and_answers_bacnet_errors_as_json() {
    let scratch = Scratch::new("http", "rest");
    let (_gw, addr, _) = start(&scratch, "");
    let get = |path: &str| call(addr, "GET", path, Some(OPERATOR), None);
    let objects = get("/api/devices/389301/objects").json();
    let zone = objects.as_array().unwrap().iter().find(|o| o["object"] == "analog-input,1").expect("analog-input,1");
    assert_eq!(zone["name"], "Zone Temperature");
    assert!(zone["present-value"]["text"].as_str().unwrap().ends_with("degrees-celsius"), "{zone}");
    assert_eq!(zone["status-flags"]["value"], serde_json::json!([false, false, false, false]));
    // Every property of an object.
    let all = get("/api/devices/389301/objects/binary-value,1").json();
    assert_eq!(all["properties"]["object-type"]["text"], "binary-value");
    // A binary value by name, relinquished with null.
    let bv = "/api/devices/389301/objects/binary-value,1/properties/present-value";
    let r = call(addr, "PUT", bv, Some(OPERATOR), Some(serde_json::json!({"value": "active", "priority": 8})));
    assert_eq!(r.status, 204, "{r:?}");
    assert_eq!(get(bv).json()["text"], "active");
    let r = call(addr, "PUT", bv, Some(OPERATOR), Some(serde_json::json!({"value": null, "priority": 8})));
    assert_eq!(r.status, 204, "{r:?}");
    // The device's refusals come back with their BACnet error.
    let r =
        call(addr, "GET", "/api/devices/389301/objects/analog-value,99/properties/present-value", Some(VIEWER), None);
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(r.json()["error"]["bacnet"], serde_json::json!({"class": "object", "code": "unknown-object"}));
    let r = call(
        addr,
        "PUT",
        "/api/devices/389301/objects/analog-input,1/properties/object-type",
        Some(OPERATOR),
        Some(serde_json::json!({"value": "enum:1"})),
    );
    assert_eq!(r.status, 422, "{r:?}");
    assert_eq!(r.json()["error"]["bacnet"]["code"], "write-access-denied");
    // Bad requests name what was wrong.
    let r = call(addr, "GET", "/api/devices/389301/objects/no-such-type,1", Some(VIEWER), None);
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("no-such-type,1"));
    let r = call(addr, "PUT", bv, Some(OPERATOR), Some(serde_json::json!({"value": 1, "priority": 17})));
    assert_eq!(r.status, 400);
    assert_eq!(get("/api/devices/7/objects").status, 404);
    // The trend log of the zone temperature (the demo building logs it).
    let trend = get("/api/devices/389301/objects/analog-input,1/trend").json();
    assert_eq!(trend["trend_log"], "trend-log,1");
    // Ports, COV, configuration (without secrets), log.
    let ports = get("/api/ports").json();
    assert_eq!(ports[0]["kind"], "bip");
    assert!(ports[0]["counters"]["datagrams_received"].is_u64());
    let config = get("/api/config").json();
    assert_eq!(config["http"]["tokens"][1]["name"], "operator");
    assert!(!get("/api/config").body.contains(OPERATOR) && !get("/api/config").body.contains(VIEWER));
    assert!(get("/api/cov").json()[0]["subscriptions"].is_array());
    let logs = get("/api/logs").json();
    assert!(logs.as_array().unwrap().iter().any(|l| l["message"] == "serving"), "{logs}");
}

/// Read the server-sent events of `path` until `want` matches one, or fail after `limit`.
fn wait_for_event(
    addr: SocketAddr,
    path: &str,
    ready: impl FnOnce(),
    want: impl Fn(&str, &serde_json::Value) -> bool,
    limit: Duration,
) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {VIEWER}\r\nAccept: text/event-stream\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let deadline = Instant::now() + limit;
    let mut raw = String::new();
    let mut ready = Some(ready);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        if let Ok(n) = s.read(&mut buf) {
            raw.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        // The `watching` event says the subscriptions are in place.
        if raw.contains("event: watching")
            && let Some(go) = ready.take()
        {
            go();
        }
        let body = raw.split_once("\r\n\r\n").map(|(_, b)| dechunk_partial(b)).unwrap_or_default();
        for block in body.split("\n\n") {
            let name = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("");
            let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("");
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(data)
                && want(name, &v)
            {
                return;
            }
        }
    }
    panic!("no matching event within {limit:?}; got:\n{raw}");
}

/// The chunks received so far, joined.
fn dechunk_partial(s: &str) -> String {
    dechunk(&format!("{s}\r\n0\r\n\r\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_written_over_bacnet_arrives_as_a_server_sent_event() {
    let scratch = Scratch::new("http", "sse");
    let (_gw, addr, bacnet_port) = start(&scratch, "");
    let client =
        Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() }).await.unwrap();
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, bacnet_port));
    let setpoint = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let rt = tokio::runtime::Handle::current();
    let write = move || {
        rt.spawn(async move {
            client
                .write_property(&device, setpoint, P::PRESENT_VALUE, None, AnyValue::from(Value::Real(23.25)), Some(8))
                .await
                .expect("write over BACnet");
        });
    };
    tokio::task::spawn_blocking(move || {
        wait_for_event(
            addr,
            "/api/devices/389301/events?objects=analog-value,1",
            write,
            |name, v| name == "point" && v["values"]["present-value"]["value"] == 23.25,
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
}

/// The value of the first sample of `metric` whose labels contain every one of `labels`.
fn sample(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(metric)?;
        if !(rest.starts_with('{') || rest.starts_with(' ')) || !labels.iter().all(|x| rest.contains(x)) {
            return None;
        }
        rest.rsplit(' ').next()?.parse().ok()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_bacnet_requests_and_datagrams_as_they_happen() {
    let scratch = Scratch::new("http", "metrics");
    let (_gw, addr, bacnet_port) = start(&scratch, "");
    let scrape = move || {
        let r = call(addr, "GET", "/metrics", Some(VIEWER), None);
        assert_eq!(r.status, 200, "{r:?}");
        assert!(r.header("content-type").unwrap().starts_with("application/openmetrics-text"));
        assert!(r.body.ends_with("# EOF\n"), "{}", r.body);
        r.body
    };
    let reads = r#"service="readProperty""#;
    let before = scrape();
    let count = |t: &str| sample(t, "trellis_bacnet_requests_total", &[reads, r#"result="ack""#]).unwrap_or(0.0);
    let received = |t: &str| sample(t, "trellis_port_datagrams_total", &[r#"direction="received""#]).unwrap_or(0.0);
    let client =
        Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() }).await.unwrap();
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, bacnet_port));
    let zone = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap();
    for _ in 0..25 {
        client.read_property(&device, zone, P::PRESENT_VALUE, None).await.unwrap();
    }
    let after = tokio::task::spawn_blocking(scrape).await.unwrap();
    assert!(count(&after) >= count(&before) + 25.0, "before:\n{before}\nafter:\n{after}");
    assert!(received(&after) >= received(&before) + 25.0, "{after}");
    let histogram = sample(&after, "trellis_bacnet_request_duration_seconds_count", &[reads]).unwrap();
    assert!(histogram >= 25.0, "{after}");
    for name in [
        "trellis_admission_refusals_total",
        "trellis_plugin_call_duration_seconds_bucket",
        "trellis_plugin_traps_total",
        "trellis_plugin_restarts_total",
        "trellis_plugin_limit_hits_total",
        "trellis_cov_subscriptions",
        "trellis_cov_notifications_total",
        "trellis_build_info",
    ] {
        assert!(after.lines().any(|l| l.starts_with(name)), "{name} missing:\n{after}");
    }
}

#[test]
fn a_plugin_swapped_by_upload_serves_and_a_refused_one_leaves_the_old_serving() {
    let scratch = Scratch::new("http", "upload");
    let (_gw, addr, _) = start(&scratch, "");
    let component = std::fs::read(trellis::plugin::builtin::DEMO_BUILDING_PATH).unwrap();
    let post = |body: &[u8]| {
        let stream = TcpStream::connect(addr).unwrap();
        let headers = [("Authorization", format!("Bearer {OPERATOR}")), ("Content-Type", "application/wasm".into())];
        exchange(stream, "POST", "/api/devices/389301/plugin", &headers, body)
    };
    let r = post(&component);
    assert_eq!(r.status, 200, "{r:?}");
    let swapped = r.json();
    assert_eq!(swapped["plugin"].as_str().unwrap().split(' ').next(), Some("demo-building"));
    assert!(swapped["pause_us"].as_f64().unwrap() > 0.0);
    let plugins = call(addr, "GET", "/api/plugins", Some(VIEWER), None).json();
    assert!(plugins["devices"][0]["last_swap"]["pause_us"].as_f64().unwrap() > 0.0, "{plugins}");
    assert_eq!(plugins["devices"][0]["provenance"]["signed_by"], serde_json::Value::Null);
    // Not a component: refused, the old plugin keeps serving.
    let r = post(b"not a component");
    assert_eq!(r.status, 422, "{r:?}");
    let r = call(addr, "GET", "/api/devices/389301/objects/analog-input,1/properties/object-name", Some(VIEWER), None);
    assert_eq!(r.json()["value"], "Zone Temperature");
    // Nothing uploaded is left behind.
    let uploads = scratch.0.join("trellis").join("uploads");
    let left: Vec<_> = std::fs::read_dir(&uploads).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_openapi_description_lists_every_route_and_declares_the_errors() {
    let scratch = Scratch::new("http", "openapi");
    let (_gw, addr, _) = start(&scratch, "");
    let doc = call(addr, "GET", "/api/openapi.json", Some(VIEWER), None).json();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for (method, path, probe) in [
        ("get", "/api/devices", "/api/devices"),
        ("get", "/api/devices/{device}/objects", "/api/devices/389301/objects"),
        ("get", "/api/devices/{device}/objects/{object}", "/api/devices/389301/objects/analog-input,1"),
        (
            "get",
            "/api/devices/{device}/objects/{object}/properties/{property}",
            "/api/devices/389301/objects/analog-input,1/properties/units",
        ),
        ("get", "/api/devices/{device}/objects/{object}/trend", "/api/devices/389301/objects/analog-input,1/trend"),
        ("get", "/api/plugins", "/api/plugins"),
        ("get", "/api/ports", "/api/ports"),
        ("get", "/api/cov", "/api/cov"),
        ("get", "/api/config", "/api/config"),
        ("get", "/api/logs", "/api/logs"),
        ("get", "/api/openapi.json", "/api/openapi.json"),
        ("get", "/metrics", "/metrics"),
    ] {
        let op = &paths[path][method];
        assert!(op.is_object(), "{method} {path} is not described");
        for code in ["200", "401"] {
            assert!(op["responses"][code].is_object(), "{method} {path} does not declare {code}");
        }
        assert_eq!(call(addr, "GET", probe, Some(VIEWER), None).status, 200, "{probe}");
    }
    for (method, path) in [
        ("put", "/api/devices/{device}/objects/{object}/properties/{property}"),
        ("post", "/api/devices/{device}/plugin"),
    ] {
        assert!(paths[path][method]["responses"]["403"].is_object(), "{method} {path} does not declare 403");
    }
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    // And the document is valid OpenAPI 3.1 by an independent validator.
    let file = scratch.path("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::new(crate::peers::python())
        .args(["-m", "openapi_spec_validator", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// `trellis sc certs` into `dir`: a CA, a server certificate for 127.0.0.1, two client certificates.
fn pki(dir: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["sc", "certs", "--out", dir.to_str().unwrap(), "--hub-host", "127.0.0.1", "--nodes", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A TLS connection to `addr` trusting `ca`, presenting `client` (certificate, key) when given.
fn tls(
    addr: SocketAddr,
    ca: &std::path::Path,
    client: Option<(&std::path::Path, &std::path::Path)>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(cert).unwrap().map(|c| c.unwrap()).collect(),
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

#[test]
fn over_https_a_client_certificate_from_the_configured_issuer_is_a_credential() {
    let scratch = Scratch::new("http", "mtls");
    let (ours, theirs) = (scratch.path("pki"), scratch.path("other-pki"));
    pki(&ours);
    pki(&theirs);
    let tls_section = format!(
        "\n[http.tls]\ncert = \"{}\"\nkey = \"{}\"\nclient_ca = \"{}\"\nclient_access = \"read-write\"\n",
        ours.join("hub.pem").display(),
        ours.join("hub.key").display(),
        ours.join("ca.pem").display()
    );
    let (gw, addr, _) = start(&scratch, &tls_section);
    assert!(gw.log().contains("trellis: console https://"), "{}", gw.log());
    let ca = ours.join("ca.pem");
    let (cert, key) = (ours.join("node1.pem"), ours.join("node1.key"));
    // A certificate from our issuer: in, and allowed to write.
    let r = exchange(tls(addr, &ca, Some((&cert, &key))), "GET", "/api/devices", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    let body = br#"{"value": 20.5, "priority": 9}"#;
    let headers = [("Content-Type", "application/json".to_string())];
    let pv = "/api/devices/389301/objects/analog-value,1/properties/present-value";
    let r = exchange(tls(addr, &ca, Some((&cert, &key))), "PUT", pv, &headers, body);
    assert_eq!(r.status, 204, "{r:?}");
    // No certificate: a token is still accepted; nothing at all is not.
    let r = exchange(tls(addr, &ca, None), "GET", "/api/devices", &[], b"");
    assert_eq!(r.status, 401, "{r:?}");
    let r =
        exchange(tls(addr, &ca, None), "GET", "/api/devices", &[("Authorization", format!("Bearer {VIEWER}"))], b"");
    assert_eq!(r.status, 200, "{r:?}");
    // A certificate from another issuer: the handshake fails.
    let (cert, key) = (theirs.join("node1.pem"), theirs.join("node1.key"));
    let mut stranger = tls(addr, &ca, Some((&cert, &key)));
    let _ = stranger.write_all(b"GET /api/devices HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    assert!(stranger.read_to_end(&mut answer).is_err() || answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_headless_chromium_shows_a_bacnet_write_within_a_second_and_swaps_by_drag_and_drop() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let scratch = Scratch::new("http", "console");
    let (_gw, addr, bacnet_port) = start(&scratch, "");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/console.mjs");
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-shots");
    let mut node = Command::new("node")
        .arg(&script)
        .env("TRELLIS_URL", format!("http://{addr}/"))
        .env("TRELLIS_TOKEN", OPERATOR)
        .env("TRELLIS_DEVICE", DEVICE.to_string())
        .env("TRELLIS_PLUGIN", trellis::plugin::builtin::DEMO_BUILDING_PATH)
        .env("TRELLIS_SHOTS", &shots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run node (the README's test command installs Node.js, Chromium and playwright-core)");
    let mut stdin = node.stdin.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stdout = node.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut last = String::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(120), rx.recv()).await.ok().flatten() {
        if line == "table-ready" {
            let client =
                Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
                    .await
                    .unwrap();
            let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, bacnet_port));
            let setpoint = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
            client
                .write_property(&device, setpoint, P::PRESENT_VALUE, None, AnyValue::from(Value::Real(23.75)), Some(8))
                .await
                .expect("write over BACnet");
            stdin.write_all(b"written 23.75\n").unwrap();
            stdin.flush().unwrap();
        } else {
            last = line;
        }
    }
    let status = node.wait().unwrap();
    let result: serde_json::Value = serde_json::from_str(&last).unwrap_or_else(|_| panic!("node said: {last}"));
    assert!(status.success() && result["ok"] == true, "{result:#}");
    assert!(result["shown_after_ms"].as_u64().unwrap() <= 1000, "{result}");
    for page in ["points", "point", "plugins", "ports", "log"] {
        assert!(shots.join(format!("{page}.png")).exists(), "no screenshot of {page}");
    }
}

#[test]
fn the_console_example_runs_with_its_two_tokens() {
    let scratch = Scratch::new("http", "example");
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/console.toml"))
            .unwrap();
    let port = crate::peers::free_port();
    let moved = text.replace("port = 47808", &format!("port = {port}")).replace("127.0.0.1:47880", "127.0.0.1:0");
    let path = scratch.path("console.toml");
    std::fs::write(&path, moved).unwrap();
    let gw =
        Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    let addr = console_addr(&gw);
    assert_eq!(call(addr, "GET", "/api/devices", Some("change-me-viewer-token"), None).status, 200);
    let pv = "/api/devices/389001/objects/analog-value,1/properties/present-value";
    let write = Some(serde_json::json!({"value": 21.0}));
    assert_eq!(call(addr, "PUT", pv, Some("change-me-viewer-token"), write.clone()).status, 403);
    assert_eq!(call(addr, "PUT", pv, Some("change-me-operator-token"), write).status, 204);
}

#[test]
fn with_log_format_json_each_log_line_is_one_json_object() {
    let scratch = Scratch::new("http", "jsonlog");
    let bacnet_port = crate::peers::free_port();
    let path = scratch.path("gateway.toml");
    std::fs::write(
        &path,
        format!(
            "[[device]]\nbind = \"127.0.0.1\"\nport = {bacnet_port}\nplugin = \"builtin:demo-building\"\n\n\
             [http]\nbind = \"127.0.0.1:0\"\n\n[[http.tokens]]\nname = \"viewer\"\ntoken = \"{VIEWER}\"\n"
        ),
    )
    .unwrap();
    let gw = Gateway::start(&["--log-format", "json", "run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("{log}"));
    let addr = console_addr(&gw);
    // A refused token is logged at warn.
    assert_eq!(call(addr, "GET", "/api/devices", Some("not-the-token-at-all"), None).status, 401);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = gw.log();
        if let Some(line) = log.lines().find(|l| l.contains("invalid token")) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert_eq!(v["level"], "WARN");
            assert_eq!(v["fields"]["message"], "HTTP request with an invalid token refused");
            assert_eq!(v["fields"]["path"], "/api/devices");
            assert!(v["timestamp"].is_string() && v["target"].is_string(), "{v}");
            assert!(!line.contains("not-the-token-at-all"), "the token was logged: {line}");
            break;
        }
        assert!(Instant::now() < deadline, "no warning logged:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_open_console_answers_only_to_this_hosts_names_and_no_page_of_another_site_changes_anything() {
    let scratch = Scratch::new("http", "open");
    let bacnet_port = crate::peers::free_port();
    let path = scratch.path("gateway.toml");
    std::fs::write(
        &path,
        format!("[[device]]\nbind = \"127.0.0.1\"\nport = {bacnet_port}\ninstance = {DEVICE}\nplugin = \"builtin:demo-building\"\n\n[http]\nbind = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
    let gw =
        Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0).unwrap_or_else(|log| panic!("{log}"));
    let addr = console_addr(&gw);
    let send = |method: &str, path: &str, headers: &[(&str, String)], body: &[u8]| {
        // `exchange` names localhost as the Host; a second Host header is how a rebound name arrives here.
        exchange(TcpStream::connect(addr).unwrap(), method, path, headers, body)
    };
    // Open: no credential needed, a stale one ignored.
    assert_eq!(send("GET", "/api/devices", &[], b"").status, 200);
    assert_eq!(send("GET", "/api/devices", &[("Authorization", "Bearer stale-token".into())], b"").status, 200);
    // A name rebound to 127.0.0.1 by another site's DNS: refused.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /api/devices HTTP/1.1\r\nHost: evil.example:47880\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 403"), "{raw}");
    // A change another site's page asked for: refused; the same from this origin (or a tool) goes.
    let pv = "/api/devices/389301/objects/analog-value,1/properties/present-value";
    let json = [("Content-Type", "application/json".to_string())];
    let body = br#"{"value": 20.0}"#;
    let from = |origin: &str| [json[0].clone(), ("Origin", origin.to_string())];
    assert_eq!(send("PUT", pv, &from("http://evil.example"), body).status, 403);
    assert_eq!(send("PUT", pv, &[json[0].clone(), ("Sec-Fetch-Site", "cross-site".into())], body).status, 403);
    assert_eq!(send("PUT", pv, &from("http://localhost"), body).status, 204);
    assert_eq!(send("PUT", pv, &json, body).status, 204);
    // An upload must say it is a component (a type no page may send unasked).
    let r = send("POST", "/api/devices/389301/plugin", &[("Content-Type", "text/plain".into())], b"x");
    assert_eq!(r.status, 415, "{r:?}");
    // Axum's own refusals come as the API's JSON errors too.
    let r = send("GET", "/api/devices/not-a-number/objects", &[], b"");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["status"], 400);
    let r = send("DELETE", "/api/devices", &[], b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["error"]["status"], 405);
}

#[test]
fn an_mstp_ports_line_statistics_and_token_rotation_show_in_the_api_and_the_metrics() {
    let scratch = Scratch::new("http", "mstp");
    let (_line, paths) = crate::mstp::SimLineProcess::start(&["--baud", "38400", "--stations", "2"]);
    let mut toml = String::from("[http]\nbind = \"127.0.0.1:0\"\n\n");
    for (path, (mac, instance)) in paths.iter().zip([(5, 530_005), (6, 530_006)]) {
        toml.push_str(&format!(
            "[[device]]\ninstance = {instance}\nmstp = {{ device = \"{path}\", baud = 38400, mac = {mac}, max_master = 7 }}\n"
        ));
    }
    let (_gw, addr) = run_config(&scratch, &toml);
    // The two stations pass the token between them: rotations are timed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ports = loop {
        let ports = call(addr, "GET", "/api/ports", None, None).json();
        let rotating = ports.as_array().unwrap().iter().all(|p| p["counters"]["token_rotations"].as_u64() > Some(3));
        if rotating || Instant::now() > deadline {
            break ports;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for p in ports.as_array().unwrap() {
        assert_eq!(p["kind"], "mstp", "{ports}");
        let c = &p["counters"];
        assert!(c["token_rotations"].as_u64() > Some(3), "{ports}");
        assert!(c["token_rotation_avg_ms"].as_f64().unwrap() > 0.0, "{ports}");
        assert!(c["frames_received"].as_u64() > Some(0) && c["frames_sent"].as_u64() > Some(0), "{ports}");
        // Counted, not asserted zero: a loaded 2-core machine may garble the line's first frames.
        assert!(c["bad_header_crc"].is_u64() && c["frame_aborts"].is_u64(), "{ports}");
    }
    let metrics = call(addr, "GET", "/metrics", None, None).body;
    assert!(sample(&metrics, "trellis_mstp_token_rotations_total", &[]).unwrap() > 3.0, "{metrics}");
    assert!(sample(&metrics, "trellis_mstp_token_rotation_seconds_total", &[]).unwrap() > 0.0, "{metrics}");
    assert!(sample(&metrics, "trellis_mstp_frames_total", &[r#"direction="sent""#]).unwrap() > 0.0, "{metrics}");
    assert!(metrics.contains("trellis_mstp_frame_errors_total{"), "{metrics}");
}

#[test]
fn a_bacnet_sc_ports_hub_connection_shows_in_the_api_and_the_metrics() {
    let scratch = Scratch::new("http", "sc");
    pki(&scratch.path("sc-pki"));
    let hub_port = crate::peers::free_port();
    let (_gw, addr) = run_config(
        &scratch,
        &format!(
            "[http]\nbind = \"127.0.0.1:0\"\n\n[[device]]\ninstance = 702\nplugin = \"builtin:demo-building\"\n\
             sc = {{ hub_function = \"127.0.0.1:{hub_port}\", certificate = \"sc-pki/hub.pem\", key = \"sc-pki/hub.key\", \
             issuers = \"sc-pki/ca.pem\" }}\n"
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let ports = loop {
        let ports = call(addr, "GET", "/api/ports", None, None).json();
        if ports[0]["counters"]["hub"] == "connected-to-primary" || Instant::now() > deadline {
            break ports;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(ports[0]["kind"], "sc", "{ports}");
    assert_eq!(ports[0]["counters"]["hub"], "connected-to-primary", "{ports}");
    assert!(ports[0]["counters"]["hub_connects"].as_u64() >= Some(1), "{ports}");
    let metrics = call(addr, "GET", "/metrics", None, None).body;
    assert_eq!(sample(&metrics, "trellis_sc_hub_connected", &[]), Some(1.0), "{metrics}");
    assert!(metrics.contains("trellis_sc_npdus_unsent_total{"), "{metrics}");
}
