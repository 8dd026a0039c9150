//! `GET /metrics`: the gateway's counters in the OpenMetrics text format
//! (`prometheus-client`), read from the atomics the code already keeps at
//! the moment of the scrape — nothing is counted twice, and nothing here
//! runs on a device's request path.
//!
//! Names follow Prometheus's conventions: a `trellis_` prefix, `_total` on
//! counters, base units (`_seconds`). Labels are bounded: the device
//! instance, the port, the service, the plugin — never an object or a peer.
//!
//! | metric | labels |
//! |---|---|
//! | `trellis_bacnet_requests_total` | device, service, result (ack, error, reject, abort) |
//! | `trellis_bacnet_request_duration_seconds` (histogram) | device, service |
//! | `trellis_admission_refusals_total` | device, reason (transactions, model_busy, answer_budget, unconfirmed_queue) |
//! | `trellis_plugin_call_duration_seconds` (histogram) | device, plugin |
//! | `trellis_plugin_traps_total`, `trellis_plugin_restarts_total`, `trellis_plugin_failures_total` | device, plugin |
//! | `trellis_plugin_limit_hits_total` | device, plugin, limit (time, memory) |
//! | `trellis_persist_journaled_total`, `trellis_persist_snapshots_total` | device (`[device.persistence]` only) |
//! | `trellis_persist_failures_total` | device, journal (model, host) |
//! | `trellis_cov_subscriptions` (gauge) | device |
//! | `trellis_cov_notifications_total` | device, result (unconfirmed_sent, confirmed_acknowledged, confirmed_failed, send_failed) |
//! | `trellis_port_datagrams_total` | port, direction (received, sent) |
//! | `trellis_port_malformed_total` | port |
//! | `trellis_mstp_frames_total` | port, direction |
//! | `trellis_mstp_frame_errors_total` | port, error (header_crc, data_crc, frame_abort, receive_error) |
//! | `trellis_mstp_token_rotations_total`, `trellis_mstp_token_rotation_seconds_total` | port |
//! | `trellis_mstp_token_rotation_max_seconds` (gauge) | port |
//! | `trellis_sc_hub_connected` (gauge), `trellis_sc_npdus_unsent_total` | port |
//! | `trellis_mqtt_connected` (gauge), `trellis_mqtt_spool_pending` (gauge) | (`[mqtt]` only) |
//! | `trellis_mqtt_connections_total`, `trellis_mqtt_connection_losses_total`, `trellis_mqtt_delivered_total` | |
//! | `trellis_mqtt_incoming_discarded_total` | reason (oversized, queue_full) |
//! | `trellis_mqtt_live_dropped_total` | |
//! | `trellis_mqtt_spool_memory_only` (gauge), `trellis_mqtt_spool_disk_errors_total`, `trellis_mqtt_spool_dropped_total` | |
//! | `trellis_mqtt_commands_total` | result (written, refused) |
//! | `trellis_build_info` (gauge, 1) | version |

use super::Gateway;
use super::gateway::PortCounters;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use trellis_model::latency::{BOUNDS_SECONDS, LatencySnapshot};

/// The content type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The handler.
pub async fn metrics(State(g): State<Arc<Gateway>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&g))
}

/// Everything, as text.
pub fn render(g: &Arc<Gateway>) -> String {
    let mut registry = prometheus_client::registry::Registry::with_prefix("trellis");
    registry.register_collector(Box::new(Scrape(g.clone())));
    let mut out = String::with_capacity(64 * 1024);
    if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
        out.clear();
        out.push_str("# the metrics could not be encoded\n# EOF\n");
    }
    out
}

/// The gateway, read at a scrape.
struct Scrape(Arc<Gateway>);

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

type Labels<'a> = Vec<(&'static str, std::borrow::Cow<'a, str>)>;

fn counter(e: &mut MetricEncoder<'_>, labels: &Labels<'_>, v: u64) -> std::fmt::Result {
    e.encode_family(labels)?.encode_counter::<NoLabelSet, _, f64>(&v, None)
}

fn counter_f(e: &mut MetricEncoder<'_>, labels: &Labels<'_>, v: f64) -> std::fmt::Result {
    e.encode_family(labels)?.encode_counter::<NoLabelSet, _, f64>(&v, None)
}

fn gauge(e: &mut MetricEncoder<'_>, labels: &Labels<'_>, v: f64) -> std::fmt::Result {
    e.encode_family(labels)?.encode_gauge(&v)
}

fn histogram(e: &mut MetricEncoder<'_>, labels: &Labels<'_>, s: &LatencySnapshot) -> std::fmt::Result {
    let mut buckets = Vec::with_capacity(BOUNDS_SECONDS.len() + 1);
    let mut below = 0;
    for (bound, cumulative) in BOUNDS_SECONDS.iter().zip(s.cumulative) {
        buckets.push((*bound, cumulative - below));
        below = cumulative;
    }
    buckets.push((f64::INFINITY, s.count - below));
    e.encode_family(labels)?.encode_histogram::<NoLabelSet>(s.sum_seconds, s.count, &buckets, None)
}

impl prometheus_client::collector::Collector for Scrape {
    fn encode(&self, mut d: DescriptorEncoder) -> std::fmt::Result {
        let g = &self.0;
        let seconds = Unit::Seconds;
        let devices: Vec<(String, &super::DeviceEntry)> = g.devices.iter().map(|(i, d)| (i.to_string(), d)).collect();

        {
            let mut e = d.encode_descriptor("build_info", "The running gateway's version", None, MetricType::Gauge)?;
            gauge(&mut e, &vec![("version", env!("CARGO_PKG_VERSION").into())], 1.0)?;
        }
        {
            let mut e = d.encode_descriptor(
                "bacnet_requests",
                "Confirmed requests a served device executed, by service and how they were answered",
                None,
                MetricType::Counter,
            )?;
            for (device, entry) in &devices {
                for s in entry.server.request_metrics().snapshot() {
                    for (outcome, n) in crate::server::request_metrics::Outcome::ALL.iter().zip(s.outcomes) {
                        let labels = vec![
                            ("device", device.as_str().into()),
                            ("service", s.service.to_string().into()),
                            ("result", outcome.name().into()),
                        ];
                        counter(&mut e, &labels, n)?;
                    }
                }
            }
        }
        {
            let mut e = d.encode_descriptor(
                "bacnet_request_duration",
                "Time from a confirmed request's arrival at its device to its answer",
                Some(&seconds),
                MetricType::Histogram,
            )?;
            for (device, entry) in &devices {
                for s in entry.server.request_metrics().snapshot() {
                    let labels = vec![("device", device.as_str().into()), ("service", s.service.to_string().into())];
                    histogram(&mut e, &labels, &s.latency)?;
                }
            }
        }
        {
            let mut e = d.encode_descriptor(
                "admission_refusals",
                "Requests a device refused to take on (Abort out-of-resources, or dropped), by reason",
                None,
                MetricType::Counter,
            )?;
            for (device, entry) in &devices {
                let st = entry.server.stats();
                for (reason, v) in [
                    ("transactions", st.refused.load(Relaxed)),
                    ("model_busy", st.model_busy.load(Relaxed)),
                    ("answer_budget", st.budget_refused.load(Relaxed)),
                    ("unconfirmed_queue", st.dropped_unconfirmed.load(Relaxed)),
                ] {
                    counter(&mut e, &vec![("device", device.as_str().into()), ("reason", reason.into())], v)?;
                }
            }
        }
        let plugins: Vec<_> = g
            .admin
            .devices()
            .map(|(device, m)| (device.to_string(), m.describe().name, m.health(), m.call_latency()))
            .collect();
        {
            let mut e = d.encode_descriptor(
                "plugin_call_duration",
                "Time an object-model plugin took per call (the guest's time)",
                Some(&seconds),
                MetricType::Histogram,
            )?;
            for (device, name, _, calls) in &plugins {
                histogram(&mut e, &vec![("device", device.as_str().into()), ("plugin", name.as_str().into())], calls)?;
            }
        }
        for (metric, help, pick) in [
            ("plugin_traps", "Plugin calls that trapped", (|h: &crate::plugin::HealthReport| h.traps) as fn(&_) -> u64),
            ("plugin_restarts", "Plugin instances started after the first", |h| h.restarts),
            ("plugin_failures", "Plugin calls that trapped, overran or ran out of memory", |h| h.failures),
        ] {
            let mut e = d.encode_descriptor(metric, help, None, MetricType::Counter)?;
            for (device, name, h, _) in &plugins {
                counter(&mut e, &vec![("device", device.as_str().into()), ("plugin", name.as_str().into())], pick(h))?;
            }
        }
        {
            let mut e =
                d.encode_descriptor("plugin_limit_hits", "Plugin calls stopped by a limit", None, MetricType::Counter)?;
            for (device, name, h, _) in &plugins {
                for (limit, v) in [("time", h.deadline_hits), ("memory", h.memory_hits)] {
                    let labels = vec![
                        ("device", device.as_str().into()),
                        ("plugin", name.as_str().into()),
                        ("limit", limit.into()),
                    ];
                    counter(&mut e, &labels, v)?;
                }
            }
        }
        {
            // What the devices that keep their state on disk wrote, and what the disk refused.
            let disks: Vec<_> =
                g.admin.devices().filter_map(|(device, m)| Some((device.to_string(), m.disk_counters()?))).collect();
            for (metric, help, pick) in [
                (
                    "persist_journaled",
                    "Accepted writes journaled on disk",
                    (|c: &(u64, u64, u64)| c.0) as fn(&_) -> u64,
                ),
                ("persist_snapshots", "State snapshots written to disk", |c| c.1),
            ] {
                let mut e = d.encode_descriptor(metric, help, None, MetricType::Counter)?;
                for (device, c) in &disks {
                    counter(&mut e, &vec![("device", device.as_str().into())], pick(c))?;
                }
            }
            let mut e = d.encode_descriptor(
                "persist_failures",
                "Journal appends or snapshots the disk refused (the change held in memory)",
                None,
                MetricType::Counter,
            )?;
            for (device, c) in &disks {
                counter(&mut e, &vec![("device", device.as_str().into()), ("journal", "model".into())], c.2)?;
            }
            for (device, entry) in &devices {
                if let Some(n) = entry.server.retained_failures() {
                    counter(&mut e, &vec![("device", device.as_str().into()), ("journal", "host".into())], n)?;
                }
            }
        }
        {
            let mut e =
                d.encode_descriptor("cov_subscriptions", "COV subscriptions in force", None, MetricType::Gauge)?;
            for (device, entry) in &devices {
                gauge(&mut e, &vec![("device", device.as_str().into())], entry.server.cov().subscriptions() as f64)?;
            }
        }
        {
            let mut e = d.encode_descriptor(
                "cov_notifications",
                "COV notifications, by what became of them",
                None,
                MetricType::Counter,
            )?;
            for (device, entry) in &devices {
                let (unconfirmed, acknowledged, failed, send_failed) = entry.server.cov().stats.snapshot();
                for (result, v) in [
                    ("unconfirmed_sent", unconfirmed),
                    ("confirmed_acknowledged", acknowledged),
                    ("confirmed_failed", failed),
                    ("send_failed", send_failed),
                ] {
                    counter(&mut e, &vec![("device", device.as_str().into()), ("result", result.into())], v)?;
                }
            }
        }
        self.ports(&mut d)?;
        self.mqtt(&mut d)
    }
}

impl Scrape {
    fn mqtt(&self, d: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(link) = &self.0.mqtt else { return Ok(()) };
        let s = link.status();
        let mut e =
            d.encode_descriptor("mqtt_connected", "1 while connected to the MQTT broker", None, MetricType::Gauge)?;
        e.encode_gauge(&if s.connected { 1.0 } else { 0.0 })?;
        let mut e = d.encode_descriptor(
            "mqtt_spool_pending",
            "Messages in the MQTT spool the broker does not have yet",
            None,
            MetricType::Gauge,
        )?;
        e.encode_gauge(&(link.pending() as f64))?;
        let (health, spooled) = link.spool_state();
        let mut e = d.encode_descriptor(
            "mqtt_spool_memory_only",
            "Messages in the MQTT spool the disk refused: they wait in memory only, and a crash now loses them",
            None,
            MetricType::Gauge,
        )?;
        e.encode_gauge(&(health.memory_only as f64))?;
        for (name, help, v) in [
            ("mqtt_connections", "Connections made to the MQTT broker", s.connects),
            ("mqtt_connection_losses", "Connections to the MQTT broker lost or refused", s.losses),
            ("mqtt_delivered", "Messages the MQTT broker acknowledged (or took at QoS 0)", s.delivered),
            ("mqtt_live_dropped", "Sparkplug messages dropped because their connection was gone", s.live_dropped),
            (
                "mqtt_spool_disk_errors",
                "Writes to the MQTT spool's directory that failed (records, the watermark, deleting segments)",
                health.disk_errors,
            ),
            (
                "mqtt_spool_dropped",
                "Messages the MQTT spool dropped, oldest first, because it held mqtt.spool_mb",
                spooled.dropped_full,
            ),
        ] {
            let mut e = d.encode_descriptor(name, help, None, MetricType::Counter)?;
            e.encode_counter::<NoLabelSet, _, f64>(&v, None)?;
        }
        let mut e = d.encode_descriptor(
            "mqtt_incoming_discarded",
            "Messages from subscribed MQTT topics discarded, once per reason: the payload over mqtt.max_incoming_kb (handed on without it), or the message itself because messages came faster than they were taken",
            None,
            MetricType::Counter,
        )?;
        counter(&mut e, &vec![("reason", "oversized".into())], s.incoming_oversized)?;
        counter(&mut e, &vec![("reason", "queue_full".into())], s.incoming_dropped)?;
        let Some(commands) = &self.0.mqtt_commands else { return Ok(()) };
        let mut e = d.encode_descriptor(
            "mqtt_commands",
            "Writes asked over MQTT: JSON …/set messages and Sparkplug DCMD metrics written, or refused (a command refused as a whole counts once)",
            None,
            MetricType::Counter,
        )?;
        counter(&mut e, &vec![("result", "written".into())], commands.written.load(Relaxed))?;
        counter(&mut e, &vec![("result", "refused".into())], commands.refused.load(Relaxed))
    }

    fn ports(&self, d: &mut DescriptorEncoder) -> std::fmt::Result {
        let ports = &self.0.ports;
        {
            let mut e = d.encode_descriptor("port_datagrams", "Datagrams through a port", None, MetricType::Counter)?;
            for p in ports {
                let (received, sent) = match &p.counters {
                    PortCounters::Bip(s) => (s.npdus.load(Relaxed), Some(s.sent.load(Relaxed))),
                    PortCounters::Bip6(s) => (s.npdus.load(Relaxed), None),
                    PortCounters::Ethernet(s) => (s.npdus.load(Relaxed), Some(s.sent.load(Relaxed))),
                    _ => continue,
                };
                counter(&mut e, &vec![("port", p.name.as_str().into()), ("direction", "received".into())], received)?;
                if let Some(sent) = sent {
                    counter(&mut e, &vec![("port", p.name.as_str().into()), ("direction", "sent".into())], sent)?;
                }
            }
        }
        {
            let mut e =
                d.encode_descriptor("port_malformed", "Datagrams dropped as malformed", None, MetricType::Counter)?;
            for p in ports {
                let v = match &p.counters {
                    PortCounters::Bip(s) => s.malformed.load(Relaxed),
                    PortCounters::Bip6(s) => s.malformed.load(Relaxed),
                    PortCounters::Ethernet(s) => s.malformed.load(Relaxed),
                    _ => continue,
                };
                counter(&mut e, &vec![("port", p.name.as_str().into())], v)?;
            }
        }
        {
            let mut e = d.encode_descriptor(
                "sc_hub_connected",
                "1 while a BACnet/SC port is connected to a hub (primary or failover)",
                None,
                MetricType::Gauge,
            )?;
            for p in ports {
                if let PortCounters::Sc(node) = &p.counters {
                    let hub = node.status().hub;
                    let connected = hub == bacnet::bvlc_sc::HubConnectionStatus::CONNECTED_TO_PRIMARY
                        || hub == bacnet::bvlc_sc::HubConnectionStatus::CONNECTED_TO_FAILOVER;
                    gauge(&mut e, &vec![("port", p.name.as_str().into())], f64::from(u8::from(connected)))?;
                }
            }
        }
        {
            let mut e = d.encode_descriptor(
                "sc_npdus_unsent",
                "NPDUs a BACnet/SC port could not send (no hub connected, or its queue full)",
                None,
                MetricType::Counter,
            )?;
            for p in ports {
                if let PortCounters::Sc(node) = &p.counters {
                    counter(&mut e, &vec![("port", p.name.as_str().into())], node.status().counters.unsent)?;
                }
            }
        }
        let mstp: Vec<_> = ports
            .iter()
            .filter_map(|p| match &p.counters {
                PortCounters::Mstp(s) => Some((p.name.as_str(), s.status())),
                _ => None,
            })
            .collect();
        {
            let mut e = d.encode_descriptor("mstp_frames", "MS/TP frames", None, MetricType::Counter)?;
            for (port, st) in &mstp {
                counter(&mut e, &vec![("port", (*port).into()), ("direction", "received".into())], st.receive.frames)?;
                counter(
                    &mut e,
                    &vec![("port", (*port).into()), ("direction", "sent".into())],
                    st.driver.frames_written,
                )?;
            }
        }
        {
            let mut e = d.encode_descriptor("mstp_frame_errors", "MS/TP frames refused", None, MetricType::Counter)?;
            for (port, st) in &mstp {
                let r = st.receive;
                for (error, v) in [
                    ("header_crc", r.bad_header_crc),
                    ("data_crc", r.bad_data_crc),
                    ("frame_abort", r.frame_abort),
                    ("receive_error", r.receive_error_frames),
                ] {
                    counter(&mut e, &vec![("port", (*port).into()), ("error", error.into())], v)?;
                }
            }
        }
        {
            let mut e = d.encode_descriptor(
                "mstp_token_rotations",
                "Tokens received after an earlier one (each ends a rotation)",
                None,
                MetricType::Counter,
            )?;
            for (port, st) in &mstp {
                counter(&mut e, &vec![("port", (*port).into())], st.driver.token_rotations)?;
            }
        }
        {
            let mut e = d.encode_descriptor(
                "mstp_token_rotation",
                "Time the token took around the ring, summed over the rotations counted",
                Some(&Unit::Seconds),
                MetricType::Counter,
            )?;
            for (port, st) in &mstp {
                counter_f(&mut e, &vec![("port", (*port).into())], st.driver.token_rotation_total_us as f64 / 1e6)?;
            }
        }
        {
            let mut e = d.encode_descriptor(
                "mstp_token_rotation_max",
                "The longest token rotation seen",
                Some(&Unit::Seconds),
                MetricType::Gauge,
            )?;
            for (port, st) in &mstp {
                gauge(&mut e, &vec![("port", (*port).into())], st.driver.token_rotation_max_us as f64 / 1e6)?;
            }
        }
        Ok(())
    }
}
