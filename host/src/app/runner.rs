//! One application's task: it owns the [`AppPlugin`], turns what the
//! application asked for (watches, timers, topic subscriptions) into
//! subscriptions on the servers, a timer table and topic filters, and
//! calls the application with each change, firing and message, one at a
//! time.
//!
//! ```text
//! server ──COV (SubscribeCOVProperty, a subscriber inside the gateway)──┐
//! server ◀──ReadProperty every poll period (where no COV is taken)──────┤
//! timer table ──due──────────────────────────────────────────────────────┼──▶ AppPlugin ──effects──▶ (back here)
//! broker link ──messages matching a subscribed filter──────────────────┘
//! ```
//!
//! A point is watched by COV where its device takes SubscribeCOVProperty
//! for it (renewed at three quarters of the lifetime), polled at the
//! configured period otherwise; either way the current value is delivered
//! first, then each change. A failed instance's watches and timers are
//! forgotten: the restarted instance's `start` makes them again.
//!
//! Must never: run on a device's request path, or deliver a change to a
//! point the application no longer watches.

use super::SwapRequest;
use super::services::{GatewayServices, refusal};
use crate::client::DeviceAddress;
use crate::plugin::app::{AppConfig, AppPlugin, AppPoint, AppStatus, Effects, PointAddress, TimerChange, TopicFilter};
use crate::plugin::{PluginEngine, PluginSource};
use crate::server::AnswerRoom;
use bacnet::AnyValue;
use bacnet::enums::ConfirmedServiceChoice as S;
use bacnet::services::{COVNotification, PropertyReference, ServiceCodec, SubscribeCOVPropertyRequest};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use trellis_mqtt::link::Incoming;

/// COV subscription lifetime; renewed at three quarters of it.
const COV_LIFETIME_S: u32 = 600;
/// How often the running instance's state is exported for a restart.
const SNAPSHOT_EVERY: Duration = Duration::from_secs(10);

/// One watched point.
struct Watch {
    /// As the application named it (maybe more than one name).
    names: Vec<AppPoint>,
    /// The last value delivered.
    last: Option<AnyValue>,
    /// Polled at this time (`None`: COV delivers).
    next_poll: Option<Instant>,
}

/// A timer: when it fires next, and its period.
type Timer = (Instant, Option<Duration>);

/// What a swap needs, and where the status goes.
pub struct Reload {
    /// The engine the application was loaded on.
    pub engine: PluginEngine,
    /// Its configuration (names, grants, limits, settings).
    pub config: AppConfig,
    /// Swap requests from the admin socket.
    pub requests: mpsc::Receiver<SwapRequest>,
    /// Its status after each event.
    pub status: watch::Sender<AppStatus>,
}

/// The application's task state.
pub struct Runner {
    reload: Reload,
    app: AppPlugin,
    services: Arc<GatewayServices>,
    poll_every: Duration,
    watches: HashMap<PointAddress, Watch>,
    timers: HashMap<u32, Timer>,
    filters: Vec<TopicFilter>,
    /// Per device: our COV subscriber address there.
    subscribers: HashMap<u32, DeviceAddress>,
    changes_in: mpsc::Sender<(u32, COVNotification)>,
    changes: mpsc::Receiver<(u32, COVNotification)>,
    messages: Option<broadcast::Receiver<Incoming>>,
    renew_at: Instant,
    snapshot_at: Instant,
}

impl Runner {
    /// A runner for `app`.
    pub fn new(
        app: AppPlugin,
        services: Arc<GatewayServices>,
        poll_every: Duration,
        messages: Option<broadcast::Receiver<Incoming>>,
        reload: Reload,
    ) -> Runner {
        let (changes_in, changes) = mpsc::channel(4096);
        let renew = Duration::from_secs(u64::from(COV_LIFETIME_S) * 3 / 4);
        Runner {
            reload,
            app,
            services,
            poll_every,
            watches: HashMap::new(),
            timers: HashMap::new(),
            filters: Vec::new(),
            subscribers: HashMap::new(),
            changes_in,
            changes,
            messages,
            renew_at: Instant::now() + renew,
            snapshot_at: Instant::now() + SNAPSHOT_EVERY,
        }
    }

    /// Run until the gateway stops.
    pub async fn run(mut self) {
        self.apply().await;
        loop {
            let wake = self.next_wake();
            tokio::select! {
                change = self.changes.recv() => {
                    let Some((device, n)) = change else { return };
                    self.notified(device, n).await;
                }
                message = recv(&mut self.messages) => match message {
                    Ok(m) if !self.filters.iter().any(|f| f.matches(&m.topic)) => {}
                    // Counted and logged (rate-limited) by the link; the application never sees a cut payload.
                    Ok(Incoming { topic, oversized: Some(octets), .. }) => {
                        tracing::debug!(app = self.app.name(), topic, octets, "an MQTT message over mqtt.max_incoming_kb was not handed to the application");
                    }
                    Ok(m) => self.app.on_message(&m.topic, &m.payload).await,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(app = self.app.name(), "{n} MQTT messages came faster than the application took them; dropped");
                    }
                    Err(broadcast::error::RecvError::Closed) => self.messages = None,
                },
                _ = tokio::time::sleep_until(wake) => self.due().await,
                request = self.reload.requests.recv() => {
                    if let Some(r) = request {
                        let answer = self.swap(r.bytes, r.memory_mb).await;
                        let _ = r.reply.send(answer);
                    }
                }
            }
            self.apply().await;
            self.reload.status.send_replace(self.app.status());
        }
    }

    /// Load `bytes` as the application's next component and swap it in.
    async fn swap(&mut self, bytes: Vec<u8>, memory_mb: Option<u32>) -> Result<crate::plugin::app::AppInfo, String> {
        let mut config = self.reload.config.clone();
        config.name = format!("{}+", config.name);
        if let Some(mb) = memory_mb {
            config.limits.memory_bytes = config.limits.memory_bytes.min((mb as usize) << 20);
        }
        let services: Arc<dyn crate::plugin::app::AppServices> = self.services.clone();
        let next = AppPlugin::load(&self.reload.engine, PluginSource::Bytes(&bytes), config, services)
            .await
            .map_err(|e| e.to_string())?;
        self.app.swap(next).await.map_err(|e| format!("swap refused, the old application kept: {e}"))
    }

    fn next_wake(&self) -> Instant {
        let far = Instant::now() + Duration::from_secs(3600);
        let timers = self.timers.values().map(|(at, _)| *at);
        let polls = self.watches.values().filter_map(|w| w.next_poll);
        let restart = self.app.restart_due().map(Instant::from_std);
        timers.chain(polls).chain(restart).chain([self.renew_at, self.snapshot_at]).min().unwrap_or(far)
    }

    /// Whatever is due: timers, polls, a restart, renewals, a snapshot.
    async fn due(&mut self) {
        let now = Instant::now();
        let mut fired: Vec<(Instant, u32)> =
            self.timers.iter().filter(|(_, (at, _))| *at <= now).map(|(id, (at, _))| (*at, *id)).collect();
        fired.sort_unstable();
        for (_, id) in fired {
            match self.timers.get_mut(&id) {
                Some((at, Some(every))) => *at = (*at + *every).max(now),
                Some((_, None)) => {
                    self.timers.remove(&id);
                }
                None => continue,
            }
            self.app.on_timer(id).await;
        }
        let polls: Vec<PointAddress> =
            self.watches.iter().filter(|(_, w)| w.next_poll.is_some_and(|at| at <= now)).map(|(p, _)| *p).collect();
        for p in polls {
            if let Some(w) = self.watches.get_mut(&p) {
                w.next_poll = Some(now + self.poll_every);
            }
            match crate::plugin::app::AppServices::read(&*self.services, p).await {
                Ok(value) => self.deliver(p, value).await,
                Err(e) => tracing::debug!(app = self.app.name(), point = %p, "poll failed: {e}"),
            }
        }
        if self.app.restart_due().is_some_and(|at| Instant::from_std(at) <= now) {
            self.app.restart_if_due().await;
        }
        if self.renew_at <= now {
            self.renew_at = now + Duration::from_secs(u64::from(COV_LIFETIME_S) * 3 / 4);
            let covs: Vec<PointAddress> =
                self.watches.iter().filter(|(_, w)| w.next_poll.is_none()).map(|(p, _)| *p).collect();
            for p in covs {
                if !self.subscribe(p, true).await
                    && let Some(w) = self.watches.get_mut(&p)
                {
                    w.next_poll = Some(now);
                }
            }
        }
        if self.snapshot_at <= now {
            self.snapshot_at = now + SNAPSHOT_EVERY;
            self.app.snapshot().await;
        }
    }

    /// Apply what the application's calls asked, until they ask nothing more.
    async fn apply(&mut self) {
        loop {
            let effects = self.app.take_effects();
            if effects == Effects::default() {
                return;
            }
            self.apply_once(effects).await;
        }
    }

    async fn apply_once(&mut self, e: Effects) {
        if e.reset {
            self.watches.clear();
            self.timers.clear();
            self.filters.clear();
        }
        let now = Instant::now();
        for change in e.timers {
            match change {
                TimerChange::Set { id, after, every } => {
                    self.timers.insert(id, (now + after, every));
                }
                TimerChange::Cancel(id) => {
                    self.timers.remove(&id);
                }
            }
        }
        for filter in e.subscribe {
            if let Ok(f) = filter.parse::<TopicFilter>()
                && !self.filters.contains(&f)
            {
                if let Some(link) = self.services.link() {
                    link.subscribe(&filter);
                }
                self.filters.push(f);
            }
        }
        for name in e.unwatch {
            for w in self.watches.values_mut() {
                w.names.retain(|n| n != &name);
            }
            let gone: Vec<PointAddress> =
                self.watches.iter().filter(|(_, w)| w.names.is_empty()).map(|(p, _)| *p).collect();
            for p in gone {
                self.watches.remove(&p);
                self.subscribe(p, false).await;
            }
        }
        for (name, address) in e.watch {
            if let Some(w) = self.watches.get_mut(&address) {
                if !w.names.contains(&name) {
                    w.names.push(name.clone());
                    // The new name gets the current value too.
                    if let Some(v) = w.last.clone() {
                        self.app.on_change(&name, &v).await;
                    }
                }
                continue;
            }
            self.watches.insert(address, Watch { names: vec![name], last: None, next_poll: None });
            if !self.subscribe(address, true).await {
                // No COV here: polled, the first time at once.
                if let Some(w) = self.watches.get_mut(&address) {
                    w.next_poll = Some(now);
                }
            }
        }
    }

    /// SubscribeCOVProperty for `p` (or cancel it); whether the device took it.
    async fn subscribe(&mut self, p: PointAddress, on: bool) -> bool {
        let Ok(server) = self.services.server(p.device) else { return false };
        let me = match self.subscribers.get(&p.device) {
            Some(me) => me.clone(),
            None => {
                let (me, mut notifications) = server.cov().local_subscriber(1024);
                let (out, device) = (self.changes_in.clone(), p.device);
                tokio::spawn(async move {
                    while let Some(n) = notifications.recv().await {
                        if out.send((device, n)).await.is_err() {
                            return;
                        }
                    }
                });
                self.subscribers.insert(p.device, me.clone());
                me
            }
        };
        let request = SubscribeCOVPropertyRequest {
            subscriber_process_identifier: 1,
            monitored_object: p.object,
            issue_confirmed_notifications: on.then_some(false),
            lifetime: on.then_some(COV_LIFETIME_S),
            monitored_property: PropertyReference { property: p.property, array_index: p.array_index },
            cov_increment: None,
        };
        let room = AnswerRoom { octets: 1476, segmented: false };
        match server.execute(&me, S::SUBSCRIBE_COV_PROPERTY, &request.to_vec(), room).await {
            bacnet::tsm::Response::SimpleAck => true,
            other => {
                if on {
                    tracing::debug!(app = self.app.name(), point = %p, "no COV ({}); polled", refusal(other));
                }
                false
            }
        }
    }

    /// A COV notification from `device`.
    async fn notified(&mut self, device: u32, n: COVNotification) {
        for v in n.values {
            let p =
                PointAddress { device, object: n.monitored_object, property: v.property, array_index: v.array_index };
            if self.watches.get(&p).is_some_and(|w| w.next_poll.is_none()) {
                self.deliver(p, v.value).await;
            }
        }
    }

    /// A watched point's value: to every name it is watched by, if it changed.
    async fn deliver(&mut self, p: PointAddress, value: AnyValue) {
        let Some(w) = self.watches.get_mut(&p) else { return };
        if w.last.as_ref() == Some(&value) {
            return;
        }
        w.last = Some(value.clone());
        for name in w.names.clone() {
            self.app.on_change(&name, &value).await;
        }
    }
}

/// The next message, or never when there is no broker.
async fn recv(messages: &mut Option<broadcast::Receiver<Incoming>>) -> Result<Incoming, broadcast::error::RecvError> {
    match messages {
        Some(m) => m.recv().await,
        None => std::future::pending().await,
    }
}
