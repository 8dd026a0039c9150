//! `GET /api/devices/{device}/events`: a device's point changes as
//! server-sent events, fed by COV — the console's live table.
//!
//! While a client watches, the gateway holds a local COV subscription
//! (unconfirmed, inside the process) on each watched object of the device,
//! renewed at three quarters of its lifetime and cancelled when the client
//! goes; nothing is polled. `?objects=analog-value,1;binary-value,2` picks
//! the objects (default: all). A device's table has room for
//! `max_cov_per_subscriber` of them per watcher (64 by default): the first
//! event says which were refused, and why.
//!
//! Events: `watching` `{"objects": n, "refused": [{"object", "reason"}]}` once, then `point`
//! `{"object": "analog-value,1", "values": {"present-value": {"value": …,
//! "text": …}, "status-flags": …}}` per change, and a comment every 15 s
//! to keep proxies from closing the stream.
//!
//! At most [`super::MAX_WATCHERS`] streams are open at once (503 beyond).
//!
//! Must never: leave subscriptions behind a closed stream (they are
//! cancelled, or at worst expire with their lifetime).

use super::Gateway;
use super::devices::{device, object_id, object_text, shown};
use super::error::ApiResult;
use crate::model::ObjectModel;
use crate::plugin::PluginModel;
use crate::server::{AnswerRoom, Server};
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use bacnet::enums::ConfirmedServiceChoice as S;
use bacnet::services::{COVNotification, ServiceCodec, SubscribeCOVRequest};
use bacnet::{ObjectIdentifier, ObjectType};
use serde::Deserialize;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Objects one stream may name (a device's table takes fewer from one
/// subscriber anyway: `max_cov_per_subscriber`).
const MAX_OBJECTS: usize = 256;

/// Seconds a watcher's subscriptions live between renewals.
const LIFETIME_S: u32 = 120;

/// `?objects=…;…`.
#[derive(Debug, Deserialize)]
pub struct Objects {
    objects: Option<String>,
}

/// The handler.
pub async fn events(
    State(g): State<Arc<Gateway>>,
    Path(instance): Path<u32>,
    Query(q): Query<Objects>,
) -> ApiResult<impl IntoResponse> {
    let server = device(&g, instance)?.clone();
    let permit = g.watchers.clone().try_acquire_owned().map_err(|_| {
        super::error::ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!("{} point streams are open already; close one", super::MAX_WATCHERS),
        )
    })?;
    let objects: Vec<ObjectIdentifier> = match q.objects.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(list) => {
            let mut objects = Vec::new();
            for o in list.split(';') {
                let o = object_id(o.trim())?;
                if !objects.contains(&o) {
                    objects.push(o);
                }
            }
            if objects.len() > MAX_OBJECTS {
                return Err(super::error::ApiError::bad_request(format!(
                    "at most {MAX_OBJECTS} objects per stream ({} asked)",
                    objects.len()
                )));
            }
            objects
        }
        None => server
            .model()
            .objects()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|o| reports_changes(o.id.object_type))
            .map(|o| o.id)
            .take(MAX_OBJECTS)
            .collect(),
    };
    let watch = Watch::start(server, objects, permit).await;
    let first = Event::default()
        .event("watching")
        .json_data(json!({
            "objects": watch.objects.len(),
            "refused": watch.refused.iter().map(|(o, why)| json!({"object": object_text(*o), "reason": why})).collect::<Vec<_>>(),
        }))
        .ok();
    let stream = futures_util::stream::unfold((first, watch), |(first, mut w)| async move {
        if let Some(e) = first {
            return Some((Ok::<_, Infallible>(e), (None, w)));
        }
        let n = w.next().await?;
        Some((Ok(point_event(&n)), (None, w)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

fn point_event(n: &COVNotification) -> Event {
    let kind = n.monitored_object.object_type;
    let mut values = serde_json::Map::new();
    for v in &n.values {
        values.insert(v.property.to_string(), shown(kind, v.property, &v.value));
    }
    let data = json!({"object": object_text(n.monitored_object), "values": values});
    Event::default().event("point").data(data.to_string())
}

/// One client's subscriptions and where their notifications arrive.
struct Watch {
    server: Arc<Server<PluginModel>>,
    me: crate::client::DeviceAddress,
    notifications: mpsc::Receiver<COVNotification>,
    objects: Vec<ObjectIdentifier>,
    refused: Vec<(ObjectIdentifier, String)>,
    renew_at: tokio::time::Instant,
    /// Its place among the streams open at once, given back when it ends.
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Watch {
    async fn start(
        server: Arc<Server<PluginModel>>,
        wanted: Vec<ObjectIdentifier>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> Watch {
        let (me, notifications) = server.cov().local_subscriber(1024);
        let mut w = Watch {
            server,
            me,
            notifications,
            objects: Vec::new(),
            refused: Vec::new(),
            renew_at: tokio::time::Instant::now(),
            _permit: permit,
        };
        for o in wanted {
            match w.subscribe(o, Some(LIFETIME_S)).await {
                Ok(()) => w.objects.push(o),
                Err(why) => w.refused.push((o, why)),
            }
        }
        w.renew_at = tokio::time::Instant::now() + Duration::from_secs(u64::from(LIFETIME_S) * 3 / 4);
        w
    }

    async fn subscribe(&self, object: ObjectIdentifier, lifetime: Option<u32>) -> Result<(), String> {
        subscribe(&self.server, &self.me, object, lifetime).await
    }

    /// The next notification, renewing the subscriptions when due; `None`
    /// when the device's COV machinery is gone.
    async fn next(&mut self) -> Option<COVNotification> {
        loop {
            tokio::select! {
                n = self.notifications.recv() => return n,
                _ = tokio::time::sleep_until(self.renew_at) => {
                    for o in self.objects.clone() {
                        if let Err(why) = self.subscribe(o, Some(LIFETIME_S)).await {
                            tracing::debug!(object = %o, "a console's COV subscription was not renewed: {why}");
                        }
                    }
                    self.renew_at = tokio::time::Instant::now() + Duration::from_secs(u64::from(LIFETIME_S) * 3 / 4);
                }
            }
        }
    }
}

impl Drop for Watch {
    /// The client went: cancel its subscriptions (on the runtime, as the
    /// cancellations are requests to the device).
    fn drop(&mut self) {
        let (server, me, objects) = (self.server.clone(), self.me.clone(), std::mem::take(&mut self.objects));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for o in objects {
                    let _ = subscribe(&server, &me, o, None).await;
                }
                server.cov().forget_local(&me);
            });
        }
    }
}

/// Objects whose changes a watcher follows by default: all but those
/// without a Present_Value to report (logs, the Device, files, …).
fn reports_changes(t: ObjectType) -> bool {
    ![
        ObjectType::DEVICE,
        ObjectType::TREND_LOG,
        ObjectType::TREND_LOG_MULTIPLE,
        ObjectType::EVENT_LOG,
        ObjectType::NOTIFICATION_CLASS,
        ObjectType::FILE,
        ObjectType::NETWORK_PORT,
    ]
    .contains(&t)
}

/// SubscribeCOV (unconfirmed) for `lifetime` seconds, or cancel with `None`;
/// a refusal as the device's answer.
async fn subscribe(
    server: &Server<PluginModel>,
    me: &crate::client::DeviceAddress,
    object: ObjectIdentifier,
    lifetime: Option<u32>,
) -> Result<(), String> {
    let request = SubscribeCOVRequest {
        subscriber_process_identifier: 1,
        monitored_object: object,
        issue_confirmed_notifications: lifetime.map(|_| false),
        lifetime,
    };
    let room = AnswerRoom { octets: 1476, segmented: false };
    match server.execute(me, S::SUBSCRIBE_COV, &request.to_vec(), room).await {
        bacnet::tsm::Response::SimpleAck => Ok(()),
        bacnet::tsm::Response::Error(body) => Err(bacnet::services::BacnetError::decode(&body)
            .map_or_else(|_| "an Error".to_string(), |e| format!("{}: {}", e.class, e.code))),
        other => Err(format!("{other:?}")),
    }
}
