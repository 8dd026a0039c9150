//! `cov`: change-of-value at scale — 1,024 subscriptions (16 subscribers ×
//! 64 commandable Analog Values, every value watched by all 16), then a
//! writer changing the values at a fixed rate. Every write the server
//! acknowledges owes one notification to each of the 16 subscribers; the
//! scenario counts every one that arrives (matched by object and value, so
//! a stale or duplicate notification is not counted) and times it from the
//! write's send to its arrival.
//!
//! All targets are subscribed before the first step, then the steps (one
//! per write rate) rotate between them. Subscriptions use our client
//! ([`trellis::client::Client`], one UDP port per subscriber), unconfirmed
//! notifications unless `--confirmed`, lifetime one hour.

use super::{CpuWindow, Env, bacnet_targets, check_alive, micros, round_to, server_fields};
use crate::json_line::JsonLine;
use crate::stats::{Latencies, Outcomes};
use crate::target::{Server, Setup, TargetKind};
use crate::workload::{Op, classify, client_config, execute};
use bacnet::enums::PropertyIdentifier;
use bacnet::{ObjectIdentifier, Value};
use serde_json::json;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};
use trellis::client::{Client, CovSubscription, DeviceAddress};

/// The scenario's sizes and pace.
#[derive(Debug, Clone)]
pub struct CovOptions {
    /// Subscribers (one client, one UDP port each).
    pub subscribers: usize,
    /// Values each subscriber watches (all subscribers watch the same ones).
    pub values: u32,
    /// Writes per second, one step each.
    pub rates: Vec<u32>,
    /// Confirmed notifications.
    pub confirmed: bool,
    /// The writer's window per step.
    pub measure: Duration,
    /// How long notifications may take to arrive after the window; the
    /// request timeout of the subscriptions and writes.
    pub timeout: Duration,
    /// Repeats of the sequence of steps.
    pub rounds: u32,
}

/// The APDU timeout of the subscriptions.
const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Notifications received by one target's subscribers, matched to writes.
#[derive(Default)]
struct Tally {
    /// (object, value bits) → when the write was sent.
    writes: HashMap<(ObjectIdentifier, u32), Instant>,
    /// Matched notifications' delays.
    latencies: Latencies,
    /// Notifications that matched a write of the current step.
    matched: u64,
    /// Notifications that matched nothing (initial values, repeats).
    unmatched: u64,
}

/// One target with its subscribers.
struct Subscribed {
    server: Server,
    device: DeviceAddress,
    tally: Rc<RefCell<Tally>>,
    _subscribers: Vec<Client>,
    subscribe_ms: f64,
    subscribe_failures: Outcomes,
    initial: u64,
}

/// Run the scenario: one JSON line per write rate and target.
pub fn run(env: &Env, targets: &[TargetKind], o: &CovOptions) -> anyhow::Result<()> {
    anyhow::ensure!(o.subscribers >= 1 && o.values >= 1, "--subscribers and --values ≥ 1");
    anyhow::ensure!(o.rates.iter().all(|&r| r >= 1), "--rates: writes per second ≥ 1");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, run_async(env, targets, o))
}

async fn run_async(env: &Env, targets: &[TargetKind], o: &CovOptions) -> anyhow::Result<()> {
    let setup = Setup { values: o.values, ..Setup::default() };
    let mut all = Vec::new();
    for kind in bacnet_targets(targets) {
        let server = env.start(kind, &setup)?;
        all.push(subscribe_all(server, o).await?);
    }
    let writer = Client::bind(client_config(o.timeout, 64)).await?;
    let mut step = 0usize;
    for round in 1..=o.rounds {
        for &rate in &o.rates {
            for k in 0..all.len() {
                let s = &all[(step + k) % all.len()];
                let line = write_step(env, s, &writer, rate, round, o).await?;
                println!("{line}");
                check_alive(&s.server)?;
            }
            step += 1;
        }
    }
    for s in &all {
        super::clients::report_log(&s.server, env);
    }
    Ok(())
}

/// Subscribe every subscriber to every value; count the initial notifications.
async fn subscribe_all(server: Server, o: &CovOptions) -> anyhow::Result<Subscribed> {
    let device = DeviceAddress::direct(server.addr);
    let tally = Rc::new(RefCell::new(Tally::default()));
    let mut subscribers = Vec::with_capacity(o.subscribers);
    for _ in 0..o.subscribers {
        // Subscribing is set-up, not the measurement: a generous timeout, so
        // a slow server gets all its subscriptions rather than fewer.
        let client = Client::bind(client_config(o.timeout.max(SUBSCRIBE_TIMEOUT), 4)).await?;
        let mut notifications = client.cov_notifications();
        let tally = tally.clone();
        tokio::task::spawn_local(async move {
            while let Ok(n) = notifications.recv().await {
                let at = Instant::now();
                let value = n.notification.values.iter().find(|v| v.property == PropertyIdentifier::PRESENT_VALUE);
                let real = value.and_then(|v| match v.value.as_primitive() {
                    Some(Value::Real(f)) => Some(f.to_bits()),
                    _ => None,
                });
                let mut t = tally.borrow_mut();
                let sent = real.and_then(|bits| t.writes.get(&(n.notification.monitored_object, bits)).copied());
                match sent {
                    Some(sent) => {
                        t.matched += 1;
                        t.latencies.record(at - sent);
                    }
                    None => t.unmatched += 1,
                }
            }
        });
        subscribers.push(client);
    }
    let started = Instant::now();
    let mut failures = Outcomes::default();
    let mut tasks = Vec::new();
    for client in &subscribers {
        for i in 0..o.values {
            let object = Setup::value(server.kind, i);
            let s = CovSubscription::new(i + 1, object).confirmed(o.confirmed).lifetime(3600);
            let (client, device) = (client.clone(), device.clone());
            tasks.push(tokio::task::spawn_local(async move { client.subscribe_cov(&device, &s).await }));
        }
    }
    for t in tasks {
        match t.await? {
            Ok(()) => failures.ok += 1,
            Err(e) => classify(&e, &mut failures),
        }
    }
    let subscribe_ms = started.elapsed().as_secs_f64() * 1e3;
    // The initial notifications (one per subscription) arrive meanwhile.
    tokio::time::sleep(o.timeout.min(Duration::from_secs(2))).await;
    let initial = std::mem::take(&mut tally.borrow_mut().unmatched);
    eprintln!(
        "stress-test: cov {}: {} of {} subscriptions in {subscribe_ms:.0} ms, {initial} initial notifications",
        server.kind.name(),
        failures.ok,
        o.subscribers * o.values as usize
    );
    Ok(Subscribed {
        server,
        device,
        tally,
        _subscribers: subscribers,
        subscribe_ms,
        subscribe_failures: failures,
        initial,
    })
}

/// One step: `rate` writes per second for the window, then wait for the
/// notifications they owe.
async fn write_step(
    env: &Env,
    s: &Subscribed,
    writer: &Client,
    rate: u32,
    round: u32,
    o: &CovOptions,
) -> anyhow::Result<String> {
    {
        let mut t = s.tally.borrow_mut();
        *t = Tally::default();
    }
    let kind = s.server.kind;
    let mut cpu = CpuWindow::new(s.server.pid, env.ticks);
    let writes = Rc::new(RefCell::new(Outcomes::default()));
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let count = (o.measure.as_secs_f64() * f64::from(rate)).round().max(1.0) as u64;
    // Each step writes values no earlier step wrote, so a notification
    // always names the write it answers.
    let base = 1000.0 * (round as f32) + 100_000.0 * (rate as f32 % 97.0);
    let t0 = Instant::now();
    cpu.mark(crate::load::Mark::WindowStart);
    let mut tasks = Vec::with_capacity(count as usize);
    for n in 0..count {
        tokio::time::sleep_until((t0 + interval * n as u32).into()).await;
        let object = Setup::value(kind, (n % u64::from(o.values)) as u32);
        let value = base + 2.0 * (n / u64::from(o.values)) as f32;
        s.tally.borrow_mut().writes.insert((object, value.to_bits()), Instant::now());
        let (writer, device, writes) = (writer.clone(), s.device.clone(), writes.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let r = execute(&writer, &device, &Op::Write(object, value)).await;
            let mut w = writes.borrow_mut();
            match r {
                Ok(()) => w.ok += 1,
                Err(e) => classify(&e, &mut w),
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let window = t0.elapsed();
    cpu.mark(crate::load::Mark::WindowEnd);
    let writes = *writes.borrow();
    let expected = writes.ok * o.subscribers as u64;
    // Wait for the owed notifications, at most the timeout.
    let until = Instant::now() + o.timeout;
    while s.tally.borrow().matched < expected && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let secs = window.as_secs_f64();
    let mut t = s.tally.borrow_mut();
    let summary = t.latencies.summary();
    let subscribe_failures = s.subscribe_failures.requests() - s.subscribe_failures.ok;
    let line = JsonLine::new()
        .put("scenario", json!("cov"))
        .put("target", json!(kind.name()))
        .put("subscribers", json!(o.subscribers))
        .put("subscriptions", json!(s.subscribe_failures.ok))
        .put("subscription_failures", json!(subscribe_failures))
        .put("subscribe_ms", json!(round_to(s.subscribe_ms, 10.0)))
        .put("initial_notifications", json!(s.initial))
        .put("confirmed", json!(o.confirmed))
        .put("writes_per_sec", json!(rate))
        .put("secs", json!(round_to(secs, 1000.0)))
        .put("writes", json!(writes.ok))
        .put("write_failures", json!(writes.requests() - writes.ok))
        .put("expected", json!(expected))
        .put("received", json!(t.matched))
        .put("missing", json!(expected.saturating_sub(t.matched)))
        .put("unmatched", json!(t.unmatched))
        .put("notifications_per_sec", json!(round_to(t.matched as f64 / secs, 10.0)))
        .put("p50_us", micros(summary.as_ref(), |s| s.p50))
        .put("p99_us", micros(summary.as_ref(), |s| s.p99))
        .put("max_us", micros(summary.as_ref(), |s| s.max));
    let line = server_fields(line, env, &s.server, &cpu, secs).put("round", json!(round)).finish();
    eprintln!(
        "stress-test: cov {:>9} {rate:>4} writes/s: {} writes, {} of {expected} notifications, p99 {} µs",
        kind.name(),
        writes.ok,
        t.matched,
        summary.map(|s| format!("{:.0}", s.p99.as_secs_f64() * 1e6)).unwrap_or_else(|| "-".into())
    );
    Ok(line)
}
