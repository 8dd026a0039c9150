//! The log tail the console shows: the last lines of the gateway's log
//! (its `tracing` events at info and above from Trellis's own crates,
//! warnings from everyone else, and the start-up lines), kept in memory and
//! streamed to watchers as server-sent events.
//!
//! `GET /api/logs` answers the lines kept; `GET /api/logs/events` streams
//! new ones (`event: log`).
//!
//! Must never: block the thread that logs (a full or absent watcher loses
//! lines, the ring keeps the last [`KEPT`]), or grow without bound.

use axum::Json;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use serde::Serialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// Lines kept for a console that opens later.
pub const KEPT: usize = 500;

/// One line of the tail.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// RFC 3339, UTC.
    pub time: String,
    /// ERROR, WARN, INFO, DEBUG, TRACE, or NOTE for a start-up line.
    pub level: String,
    /// The module that logged it.
    pub target: String,
    /// The message and its fields.
    pub message: String,
}

struct Tail {
    kept: Mutex<VecDeque<Line>>,
    feed: broadcast::Sender<Line>,
}

fn tail() -> &'static Tail {
    static TAIL: OnceLock<Tail> = OnceLock::new();
    TAIL.get_or_init(|| Tail { kept: Mutex::new(VecDeque::with_capacity(KEPT)), feed: broadcast::channel(256).0 })
}

fn push(line: Line) {
    let t = tail();
    {
        let mut kept = t.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back(line.clone());
    }
    let _ = t.feed.send(line);
}

fn now() -> String {
    jiff::Timestamp::now().round(jiff::Unit::Millisecond).map(|t| t.to_string()).unwrap_or_default()
}

/// Add a line that was said on stderr rather than logged (the start-up lines).
pub fn note(message: impl Into<String>) {
    push(Line { time: now(), level: "NOTE".into(), target: "trellis".into(), message: message.into() });
}

/// The `tracing` layer that feeds the tail.
#[derive(Debug, Default)]
pub struct TailLayer;

impl TailLayer {
    /// What it keeps: info and above from Trellis's crates, warnings from the others.
    pub fn filter() -> tracing_subscriber::filter::Targets {
        tracing_subscriber::filter::Targets::new()
            .with_target("trellis", tracing::Level::INFO)
            .with_target("trellis_server", tracing::Level::INFO)
            .with_target("trellis_plugin", tracing::Level::INFO)
            .with_default(tracing::Level::WARN)
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for TailLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let meta = event.metadata();
        push(Line { time: now(), level: meta.level().to_string(), target: meta.target().to_string(), message: text.0 });
    }
}

/// The message first, then `field=value` pairs.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value:?}");
            if !rest.is_empty() {
                self.0.push(' ');
                self.0.push_str(&rest);
            }
        } else {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else {
            self.record_debug(field, &value);
        }
    }
}

/// `GET /api/logs`.
pub async fn kept() -> Json<Vec<Line>> {
    Json(tail().kept.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect())
}

/// Log streams open at once; more get 503.
pub const MAX_STREAMS: usize = 16;

/// `GET /api/logs/events`.
pub async fn events() -> Result<impl IntoResponse, super::error::ApiError> {
    static OPEN: std::sync::LazyLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::LazyLock::new(|| std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_STREAMS)));
    let permit = OPEN.clone().try_acquire_owned().map_err(|_| {
        super::error::ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_STREAMS} log streams are open already; close one"),
        )
    })?;
    let rx = tail().feed.subscribe();
    let stream = futures_util::stream::unfold((rx, permit), |(mut rx, permit)| async move {
        let event = match rx.recv().await {
            Ok(line) => Event::default().event("log").data(serde_json::to_string(&line).unwrap_or_default()),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                Event::default().event("skipped").data(format!("{{\"skipped\":{n}}}"))
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, Infallible>(event), (rx, permit)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
