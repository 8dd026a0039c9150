//! `/api/ports`, `/api/cov`, `/api/config`, `/api/openapi.json`: the
//! gateway's ports and their counters, the COV subscriptions in force, the
//! configuration in effect (secrets removed) and the API's description.

use super::Gateway;
use super::devices::object_text;
use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Where a port's counters are read.
pub enum PortCounters {
    /// BACnet/IP: datagrams in (NPDUs), out, malformed.
    Bip(Arc<trellis_bip::DriverStats>),
    /// BACnet/IPv6.
    Bip6(Arc<trellis_bip6::Bip6Stats>),
    /// BACnet Ethernet: frames in (NPDUs), out, malformed, not BACnet's.
    Ethernet(Arc<trellis_ethernet::EthernetStats>),
    /// MS/TP: the node's state and counters.
    Mstp(trellis_mstp::MstpSender),
    /// BACnet/SC: the node's hub connection and counters.
    Sc(trellis_sc::node::ScNode),
    /// A port without counters of its own here (virtual networks).
    None,
}

/// One port of the gateway.
pub struct PortEntry {
    /// `bip`, `bip6`, `mstp`, `sc` or `virtual`.
    pub kind: &'static str,
    /// What it is, as the start-up lines say (`BACnet/IP 127.0.0.1:47808`).
    pub name: String,
    /// The device served on it, if one is.
    pub device: Option<u32>,
    /// The router's network number, for a router port.
    pub network: Option<u16>,
    /// Its counters.
    pub counters: PortCounters,
}

impl PortEntry {
    /// The counters as JSON.
    pub fn counters_json(&self) -> serde_json::Value {
        match &self.counters {
            PortCounters::Bip(s) => json!({
                "datagrams_received": s.npdus.load(Relaxed),
                "datagrams_sent": s.sent.load(Relaxed),
                "malformed": s.malformed.load(Relaxed),
                "naks_sent": s.naks_sent.load(Relaxed),
            }),
            PortCounters::Bip6(s) => json!({
                "datagrams_received": s.npdus.load(Relaxed),
                "malformed": s.malformed.load(Relaxed),
                "duplicate_vmac": s.duplicate_vmac.load(Relaxed),
            }),
            PortCounters::Ethernet(s) => json!({
                "frames_received": s.npdus.load(Relaxed),
                "frames_sent": s.sent.load(Relaxed),
                "malformed": s.malformed.load(Relaxed),
                "not_bacnet": s.not_bacnet.load(Relaxed),
                "send_errors": s.send_errors.load(Relaxed),
            }),
            PortCounters::Mstp(sender) => {
                let st = sender.status();
                let (m, r, d) = (st.master, st.receive, st.driver);
                let rotation_avg_ms = if d.token_rotations > 0 {
                    d.token_rotation_total_us as f64 / d.token_rotations as f64 / 1e3
                } else {
                    0.0
                };
                json!({
                    "state": format!("{:?}", st.state),
                    "next_station": st.next_station,
                    "sole_master": st.sole_master,
                    "frames_received": r.frames,
                    "frames_sent": d.frames_written,
                    "tokens_received": m.tokens_received,
                    "tokens_sent": m.tokens_sent,
                    "token_retries": m.token_retries,
                    "lost_token": m.lost_token,
                    "polls_sent": m.polls_sent,
                    "reply_timeouts": m.reply_timeouts,
                    "replies_postponed": m.replies_postponed,
                    "bad_header_crc": r.bad_header_crc,
                    "bad_data_crc": r.bad_data_crc,
                    "frame_aborts": r.frame_abort,
                    "garbage_octets": r.garbage,
                    "receive_errors": r.receive_errors,
                    "token_rotations": d.token_rotations,
                    "token_rotation_last_ms": d.token_rotation_last_us as f64 / 1e3,
                    "token_rotation_avg_ms": rotation_avg_ms,
                    "token_rotation_max_ms": d.token_rotation_max_us as f64 / 1e3,
                })
            }
            PortCounters::Sc(node) => {
                let st = node.status();
                json!({
                    "hub": hub_status(st.hub),
                    "vmac": trellis_sc::identity::hex(&st.vmac),
                    "hub_connects": st.counters.connects,
                    "failovers": st.counters.failovers,
                    "failed_attempts": st.counters.failed_attempts,
                    "npdus_unsent": st.counters.unsent,
                    "npdus_dropped": st.dropped,
                    "direct_peers": st.direct_peers,
                    "direct_connects": st.direct.connects,
                })
            }
            PortCounters::None => json!({}),
        }
    }
}

/// A BACnet/SC hub connection status by the standard's names.
fn hub_status(h: bacnet::bvlc_sc::HubConnectionStatus) -> String {
    use bacnet::bvlc_sc::HubConnectionStatus as H;
    match h {
        H::NO_HUB_CONNECTION => "no-hub-connection".into(),
        H::CONNECTED_TO_PRIMARY => "connected-to-primary".into(),
        H::CONNECTED_TO_FAILOVER => "connected-to-failover".into(),
        other => other.0.to_string(),
    }
}

/// `GET /api/ports`.
pub async fn ports(State(g): State<Arc<Gateway>>) -> Json<serde_json::Value> {
    Json(ports_json(&g))
}

/// Every port with its counters (what `GET /api/ports` answers).
pub fn ports_json(g: &Gateway) -> serde_json::Value {
    let ports: Vec<_> = g
        .ports
        .iter()
        .map(|p| {
            json!({
                "kind": p.kind,
                "name": p.name,
                "device": p.device,
                "network": p.network,
                "counters": p.counters_json(),
            })
        })
        .collect();
    json!(ports)
}

/// `GET /api/cov`: per device, its COV subscriptions and notification counters.
pub async fn cov(State(g): State<Arc<Gateway>>) -> Json<serde_json::Value> {
    Json(cov_json(&g))
}

/// Per device, its COV subscriptions and notification counters (what `GET
/// /api/cov` answers).
pub fn cov_json(g: &Gateway) -> serde_json::Value {
    let devices: Vec<_> = g
        .devices
        .iter()
        .map(|(instance, d)| {
            let cov = d.server.cov();
            let (unconfirmed, acknowledged, failed, send_failed) = cov.stats.snapshot();
            let subscriptions: Vec<_> = cov
                .list()
                .into_iter()
                .map(|(who, pid, object, property, confirmed, left)| {
                    json!({
                        "subscriber": who.to_string(),
                        "process_identifier": pid,
                        "object": object_text(object),
                        "property": property.to_string(),
                        "confirmed": confirmed,
                        "seconds_left": left,
                    })
                })
                .collect();
            json!({
                "device": instance,
                "subscriptions": subscriptions,
                "notifications": {
                    "unconfirmed_sent": unconfirmed,
                    "confirmed_acknowledged": acknowledged,
                    "confirmed_failed": failed,
                    "send_failed": send_failed,
                },
            })
        })
        .collect();
    json!(devices)
}

/// `GET /api/config`: the configuration in effect, secrets removed.
pub async fn config(State(g): State<Arc<Gateway>>) -> Json<serde_json::Value> {
    Json(g.config.clone())
}

/// The API's OpenAPI 3.1 description.
pub const OPENAPI: &str = include_str!("openapi.json");

/// `GET /api/openapi.json`.
pub async fn openapi() -> impl IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], OPENAPI)
}
