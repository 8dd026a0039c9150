//! `sc-failover`: the BACnet/SC primary hub dies under load, and comes
//! back (issue 41, item 4, the SC part). Trellis only: two `trellis sc
//! hub`s, the demo building as a node of both (hub A primary, hub B
//! failover), and a client node of this process reading through them.
//!
//! ```text
//! client lanes ──RP (paced)──▶ hub A ──▶ device 801     (both nodes on the primary)
//!              hub A SIGKILLed: both nodes see the close, switch to B
//! client lanes ──RP──▶ hub B ──▶ device 801             (reads in flight at the kill, and until the switch, fail)
//!              hub A started again: each node returns at its reconnect interval
//! client lanes ──RP──▶ hub A ──▶ device 801
//! ```
//!
//! A read fails when unanswered within the APDU timeout (no retries: the
//! count is what a BACnet client would retry), and counts in the phase in
//! which its outcome was known (a read in flight at the kill fails after
//! it). One JSON line per round, a table on stderr: reads answered, failed
//! while failing over and while returning, the time each switch took (from
//! the kill to the first read of a run of answered ones, once the client
//! is on hub B; from the restart to the client back on the primary), and
//! the gateway's resident memory before and after. While returning, the
//! client and the device each go back at their own reconnect interval, and
//! reads between the two moments fail: two hubs do not carry each other's
//! traffic (Annex AB). Fails if a read fails before the kill or once a
//! switch is done, if the reads never settle after a switch (a node that
//! stays on the other hub), or if the gateway dies.
//!
//! A benchmark, not a test (the integration test
//! `a_device_and_a_client_fail_over_to_the_second_hub_and_back_while_reading`
//! asserts the sequence with one reader).

use super::Env;
use crate::json_line::JsonLine;
use crate::procfs;
use crate::target::{Spawned, free_port};
use anyhow::{Context, bail};
use bacnet::ObjectIdentifier;
use bacnet::bvlc_sc::HubConnectionStatus;
use bacnet::enums::PropertyIdentifier as P;
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trellis::client::{Client, Destination};

/// The device's instance.
const DEVICE: u32 = 801;
/// Both nodes' reconnect interval and heartbeat (seconds).
const RECONNECT_S: u32 = 1;
const HEARTBEAT_S: u32 = 10;
/// An unanswered read fails after this.
const APDU_TIMEOUT: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct FailoverOptions {
    /// Rounds, fresh hubs and gateway each.
    pub rounds: u32,
    /// Reads per second, over all lanes.
    pub rate: u32,
    /// Reads kept in flight at most (one lane each).
    pub lanes: usize,
    /// Reading before the kill, on the failover, and after the return.
    pub phase: Duration,
}

/// One read: when it was sent, how long it took, whether it was answered.
type Reads = Arc<Mutex<Vec<(Instant, Duration, bool)>>>;

/// Run the scenario.
pub fn run(env: &Env, o: &FailoverOptions) -> anyhow::Result<()> {
    anyhow::ensure!(o.rounds >= 1 && o.rate >= 1 && o.lanes >= 1, "--rounds, --rate and --lanes: at least 1");
    let pki = env.programs.work_dir.join("sc-failover-pki");
    trellis_sc::pki::write_test_pki(&pki, &["127.0.0.1", "localhost"], 2, 1, &[]).context("write the test PKI")?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut rows = Vec::new();
    for round in 1..=o.rounds {
        let line = runtime.block_on(one_round(env, o, &pki, round))?.finish();
        println!("{line}");
        rows.push(serde_json::from_str::<serde_json::Value>(&line)?);
    }
    eprintln!(
        "| round | reads answered | failed while failing over | failover (s) | failed while returning | return (s) | failed outside the switches | RSS before → after (KiB) |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let mut after = 0;
    let mut unsettled = Vec::new();
    for v in &rows {
        after += v["failed_outside_switches"].as_u64().unwrap_or(0);
        if v["failover_s"].is_null() || v["return_settled_s"].is_null() {
            unsettled.push(v["round"].to_string());
        }
        eprintln!(
            "| {} | {} | {} | {} | {} | {} | {} | {} → {} |",
            v["round"],
            v["answered"],
            v["failed_failing_over"],
            v["failover_s"],
            v["failed_returning"],
            v["return_s"],
            v["failed_outside_switches"],
            v["rss_before_kib"],
            v["rss_after_kib"]
        );
    }
    if !unsettled.is_empty() {
        bail!(
            "round(s) {}: the reads never settled after a switch (a node stayed on the other hub)",
            unsettled.join(", ")
        );
    }
    if after > 0 {
        bail!("{after} reads failed before the kill or after a switch had completed");
    }
    Ok(())
}

/// A `trellis sc hub` on `port`, listening when this returns.
pub(super) fn hub(env: &Env, pki: &Path, port: u16, name: &str) -> anyhow::Result<Spawned> {
    super::sc::hub_on(env, pki, "trellis", port, name)
}

async fn one_round(env: &Env, o: &FailoverOptions, pki: &Path, round: u32) -> anyhow::Result<JsonLine> {
    let dir = env.programs.work_dir.join(format!("sc-failover-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let (pa, pb) = (free_port()?, free_port()?);
    let (uri_a, uri_b) = (format!("wss://127.0.0.1:{pa}/"), format!("wss://127.0.0.1:{pb}/"));
    let hub_a = hub(env, pki, pa, &format!("sc-hub-a-{round}"))?;
    let _hub_b = hub(env, pki, pb, &format!("sc-hub-b-{round}"))?;
    let file = |f: &str| pki.join(f).display().to_string();
    let config = dir.join("trellis.toml");
    std::fs::write(
        &config,
        format!(
            "# Generated by stress-test sc-failover.\n[[device]]\ninstance = {DEVICE}\nplugin = \"builtin:demo-building\"\n\
             sc = {{ primary_hub = \"{uri_a}\", failover_hub = \"{uri_b}\", certificate = \"{}\", key = \"{}\", \
             issuers = \"{}\", reconnect_s = {RECONNECT_S}, heartbeat_s = {HEARTBEAT_S} }}\n",
            file("node1.pem"),
            file("node1.key"),
            file("ca.pem")
        ),
    )?;
    let admin = dir.join("admin").join("admin.sock");
    let args = ["run", "--config", &config.display().to_string(), "--admin-socket", &admin.display().to_string()]
        .map(String::from);
    let gateway =
        Spawned::start(&format!("trellis-sc-failover-{round}"), &env.programs.trellis, &args, &env.programs, None)?;

    let mut section = trellis::sc_port::ScSection::for_cli(
        uri_a.clone(),
        Some(uri_b.clone()),
        pki.join("node2.pem"),
        pki.join("node2.key"),
        pki.join("ca.pem"),
    );
    section.reconnect_s = RECONNECT_S;
    section.heartbeat_s = HEARTBEAT_S;
    let started = trellis::sc_port::start(&section, 0x3F_FFFE, &dir)?;
    let node = started.port.node.clone();
    let tsm = bacnet::tsm::TsmConfig {
        apdu_timeout: APDU_TIMEOUT,
        retries: 0,
        max_in_flight_per_peer: o.lanes,
        ..Default::default()
    };
    let client = Client::on_sc(started.port.node, started.port.up, tsm);
    let on = |status: HubConnectionStatus| node.status().hub == status;
    let found_by = Instant::now() + Duration::from_secs(60);
    let device = loop {
        anyhow::ensure!(gateway.exited().is_none(), "the gateway exited: {}", gateway.log_tail());
        anyhow::ensure!(Instant::now() < found_by, "device {DEVICE} not found on hub A: {}", gateway.log_tail());
        if on(HubConnectionStatus::CONNECTED_TO_PRIMARY) {
            let found = client
                .who_is(Destination::GlobalBroadcast, Some((DEVICE, DEVICE)), Duration::from_secs(1))
                .await?
                .collect()
                .await;
            if let Some(d) = found.first() {
                break d.address.clone();
            }
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let rss_before_kib = procfs::status_kib(gateway.pid, "VmRSS");

    // The load: paced lanes of reads.
    let reads: Reads = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let interval = Duration::from_secs_f64(o.lanes as f64 / f64::from(o.rate));
    let av1 = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: 1 };
    let t0 = Instant::now();
    let mut lanes = Vec::new();
    for lane in 0..o.lanes {
        let (client, device, reads, stop) = (client.clone(), device.clone(), reads.clone(), stop.clone());
        let mut next = t0 + interval.mul_f64(lane as f64 / o.lanes as f64);
        lanes.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep_until(next.into()).await;
                next = (next + interval).max(Instant::now());
                let sent = Instant::now();
                let ok = client.read_property(&device, av1, P::PRESENT_VALUE, None).await.is_ok();
                reads.lock().unwrap().push((sent, sent.elapsed(), ok));
            }
        }));
    }

    tokio::time::sleep(o.phase).await;
    let killed = Instant::now();
    drop(hub_a); // SIGKILL, reaped
    let deadline = killed + Duration::from_secs(60);
    while !on(HubConnectionStatus::CONNECTED_TO_FAILOVER) {
        anyhow::ensure!(Instant::now() < deadline, "the client did not reach hub B within 60 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let on_b = Instant::now();
    tokio::time::sleep(o.phase).await;
    let restarted = Instant::now();
    let _hub_a = hub(env, pki, pa, &format!("sc-hub-a-{round}-again"))?;
    let deadline = restarted + Duration::from_secs(60);
    while !on(HubConnectionStatus::CONNECTED_TO_PRIMARY) {
        anyhow::ensure!(Instant::now() < deadline, "the client did not return to hub A within 60 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let on_a = Instant::now();
    let returned = restarted.elapsed();
    // The device returns at its own reconnect interval: give it two, then read on.
    tokio::time::sleep(Duration::from_secs(2 * u64::from(RECONNECT_S)) + o.phase).await;
    stop.store(true, Ordering::Relaxed);
    for l in lanes {
        l.await?;
    }
    if let Some(status) = gateway.exited() {
        bail!("the gateway exited during the round ({status}): {}", gateway.log_tail());
    }
    let rss_after_kib = procfs::status_kib(gateway.pid, "VmRSS");
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);

    let reads = reads.lock().unwrap().clone();
    let failover = Phase::of(&reads, killed, restarted, on_b);
    let back = Phase::of(&reads, restarted, Instant::now(), on_a);
    let failed_before = reads.iter().filter(|r| r.0 + r.1 < killed && !r.2).count();
    // When each failed read was sent, from the kill (negative: before it).
    let ms_after = |t: Instant| {
        let ms = |d: Duration| (d.as_secs_f64() * 10_000.0).round() / 10.0;
        if t >= killed { ms(t - killed) } else { -ms(killed - t) }
    };
    let failed_at: Vec<f64> = reads.iter().filter(|r| !r.2).map(|r| ms_after(r.0)).collect();
    Ok(JsonLine::new()
        .put("scenario", json!("sc-failover"))
        .put("round", json!(round))
        .put("rate", json!(o.rate))
        .put("lanes", json!(o.lanes))
        .put("reads", json!(reads.len()))
        .put("answered", json!(reads.iter().filter(|r| r.2).count()))
        .put("failed_before_kill", json!(failed_before))
        .put("failed_failing_over", json!(failover.failed_in_switch))
        .put("failover_s", json!(failover.switch_s))
        .put("failed_returning", json!(back.failed_in_switch))
        .put("return_s", json!((returned.as_secs_f64() * 100.0).round() / 100.0))
        .put("return_settled_s", json!(back.switch_s))
        .put("failed_outside_switches", json!(failed_before + failover.failed_after + back.failed_after))
        .put("failed_sent_ms_after_kill", json!(failed_at))
        .put("on_b_ms", json!(ms_after(on_b)))
        .put("restart_ms", json!(ms_after(restarted)))
        .put("on_a_ms", json!(ms_after(on_a)))
        .put("rss_before_kib", json!(rss_before_kib))
        .put("rss_after_kib", json!(rss_after_kib)))
}

/// The reads that completed in one phase (from `from` to `to`), in the
/// order they were sent: its switch ends at the first answered read sent
/// once the client had switched (`switched`) that begins a run of
/// [`SETTLED`] answered ones.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Phase {
    failed_in_switch: usize,
    /// From `from` to the send of the read that starts the settled run.
    switch_s: Option<f64>,
    /// Failures after the settled run began.
    failed_after: usize,
}

/// Answered reads in a row that end a switch.
const SETTLED: usize = 20;

impl Phase {
    fn of(reads: &[(Instant, Duration, bool)], from: Instant, to: Instant, switched: Instant) -> Phase {
        let done = |r: &(Instant, Duration, bool)| r.0 + r.1;
        let mut phase: Vec<_> = reads.iter().filter(|r| done(r) >= from && done(r) < to).collect();
        // Settling is judged in the order the reads were sent: a read sent
        // before the switch fails a timeout later, after reads sent since.
        phase.sort_by_key(|r| r.0);
        let settled =
            (0..phase.len()).find(|&i| phase[i].0 >= switched && phase[i..].iter().take(SETTLED).all(|r| r.2));
        let (switching, after) = phase.split_at(settled.unwrap_or(phase.len()));
        Phase {
            failed_in_switch: switching.iter().filter(|r| !r.2).count(),
            switch_s: settled.map(|i| (phase[i].0.duration_since(from).as_secs_f64() * 1000.0).round() / 1000.0),
            failed_after: after.iter().filter(|r| !r.2).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_ends_where_the_reads_settle_once_the_client_switched_and_later_failures_count_apart() {
        let t0 = Instant::now();
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let (answered, timed_out) = (Duration::from_millis(1), Duration::from_millis(50));
        // In flight at the kill (t0), it fails after it: the switch's.
        let mut reads = vec![(ms(0) - Duration::from_millis(10), timed_out, false)];
        // Answered on the old hub before the client moved (at 100 ms): no settling yet.
        for i in 0..30 {
            reads.push((ms(i), answered, true));
        }
        reads.push((ms(100), timed_out, false));
        for i in 0..30 {
            reads.push((ms(200 + i), answered, true));
        }
        reads.push((ms(300), timed_out, false));
        let p = Phase::of(&reads, t0, ms(1000), ms(100));
        assert_eq!(p, Phase { failed_in_switch: 2, switch_s: Some(0.2), failed_after: 1 });
        let none = Phase::of(&reads[..1], t0, ms(1000), ms(100));
        assert_eq!(none, Phase { failed_in_switch: 1, switch_s: None, failed_after: 0 });
    }
}
