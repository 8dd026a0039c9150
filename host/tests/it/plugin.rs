//! The plugin runtime end to end: real components built from `plugins/`,
//! loaded through the `.cwasm` cache, called through the `ObjectModel` trait,
//! and deliberately broken by the `misbehave` plugin (analog-value 666 traps,
//! 667 loops forever, 668 allocates without end).
//!
//! Timing figures are printed (run with `--nocapture`), never asserted.

use bacnet::services::{CreateObjectError, ObjectSpecifier};
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, PropertyIdentifier, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use trellis::model::{EncodedRead, ModelError, ObjectModel, PropertyRead, PropertyTarget, PropertyWrite};
use trellis::plugin::{
    CacheOutcome, EngineConfig, Limits, PluginConfig, PluginEngine, PluginModel, PoolConfig, RestartPolicy, builtin,
};

/// One engine for the whole test binary (its cache lives under the target
/// directory, so reruns hit it).
fn engine() -> &'static PluginEngine {
    static ENGINE: OnceLock<PluginEngine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        PluginEngine::new(&EngineConfig {
            cache_dir: Some(tmp_dir("plugin-cache")),
            pooling: Some(PoolConfig { max_instances: 32, limits: Limits::default() }),
            ..EngineConfig::default()
        })
        .expect("engine")
    })
}

fn tmp_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn misbehave_path() -> PathBuf {
    builtin::MISBEHAVE_PATH.into()
}

fn load_misbehave(name: &str, restart: RestartPolicy) -> PluginModel {
    let config = PluginConfig {
        limits: Limits { memory_bytes: 32 << 20, ..Limits::default() },
        restart,
        ..PluginConfig::new(name)
    };
    PluginModel::load(engine(), misbehave_path().as_path(), config).expect("load misbehave")
}

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).unwrap()
}

fn pv(object: ObjectIdentifier) -> PropertyTarget {
    PropertyTarget { object, property: PropertyIdentifier::PRESENT_VALUE, array_index: None }
}

async fn read_one(model: &impl ObjectModel, target: PropertyTarget) -> Result<AnyValue, ModelError> {
    let mut answer = model.read(&[target]).await?;
    assert_eq!(answer.len(), 1, "one answer per target");
    let PropertyRead { outcome, .. } = answer.remove(0).remove(0);
    Ok(outcome.unwrap_or_else(|e| panic!("{target:?}: {e}")))
}

async fn write_real(model: &impl ObjectModel, object: ObjectIdentifier, v: f32) {
    let w = PropertyWrite { target: pv(object), value: Value::Real(v).into(), priority: Some(8) };
    let results = model.write(vec![w]).await.expect("write call");
    assert_eq!(results, vec![Ok(())]);
}

fn id(object_type: ObjectType, instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(object_type, instance).unwrap()
}

#[tokio::test]
async fn the_demo_building_serves_reads_and_writes_through_the_object_model() {
    let model = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("demo")).expect("load");
    assert_eq!(model.describe().name, "demo-building");
    let objects = model.objects().await.unwrap();
    let names: Vec<_> = objects.iter().map(|o| (o.id, o.name.as_str())).collect();
    assert!(names.contains(&(id(ObjectType::DEVICE, 389001), "Trellis Demo Building")), "{names:?}");
    assert!(names.contains(&(av(1), "Zone Setpoint")), "{names:?}");

    write_real(&model, av(1), 23.5).await;
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(23.5).into());

    // One crossing answers a whole ReadPropertyMultiple, ALL expanded in place.
    let all = PropertyTarget { object: av(1), property: PropertyIdentifier::ALL, array_index: None };
    let unknown = pv(av(999));
    let answer = model.read(&[pv(av(1)), all, unknown]).await.unwrap();
    assert_eq!(answer.len(), 3);
    assert_eq!(answer[0].len(), 1);
    assert!(answer[1].len() > 5 && answer[1].iter().all(|r| r.outcome.is_ok()), "{:?}", answer[1]);
    assert!(answer[2][0].outcome.is_err());
}

/// A hot swap's successor reports into its predecessor's change feed (the
/// one the device's COV notifier reads), and the swap itself says the
/// object list may have changed.
#[tokio::test]
async fn after_a_hot_swap_the_new_instances_changes_reach_the_models_feed() {
    let old = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("feed-old")).unwrap();
    let feed = old.changes();
    let config = PluginConfig { changes: Some(old.changes()), ..PluginConfig::new("feed-new") };
    let next = PluginModel::load(engine(), builtin::DEMO_BUILDING, config).unwrap();
    let _ = feed.take();
    old.swap(&next).await.expect("swap");
    assert!(feed.take().objects, "the swap reports the object list");
    let start = trellis::model::DateTime { unix_ms: 1_750_000_000_000, utc_offset_minutes: 0 };
    for minutes in 0..10u64 {
        let now = trellis::model::DateTime { unix_ms: start.unix_ms + minutes * 300_000, ..start };
        old.tick(now).await.expect("tick through the swapped-in instance");
    }
    assert!(!feed.take().values.is_empty(), "the new instance's value changes reach the feed COV reads");
}

#[tokio::test]
async fn ticks_move_the_demo_building_and_its_changes_reach_the_feed() {
    let model = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("demo-ticks")).unwrap();
    let changes = model.changes();
    let start = trellis::model::DateTime { unix_ms: 1_750_000_000_000, utc_offset_minutes: 0 };
    for minutes in 0..10u64 {
        let now = trellis::model::DateTime { unix_ms: start.unix_ms + minutes * 300_000, ..start };
        model.tick(now).await.expect("tick");
    }
    let c = changes.take();
    assert!(!c.values.is_empty(), "{c:?}");
}

#[tokio::test]
async fn the_data_directory_is_preopened_as_slash_data() {
    let dir = tmp_dir(&format!("demo-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("objects.toml"),
        "[device]\ninstance = 4242\nname = \"From Data\"\n\n[[object]]\ntype = \"analog-value\"\ninstance = 77\nname = \"Seventy-Seven\"\nvalue = 7.0\n",
    )
    .unwrap();
    let config = PluginConfig { data_dir: Some(dir.clone()), ..PluginConfig::new("demo-data") };
    let model = PluginModel::load(engine(), builtin::DEMO_BUILDING, config).unwrap();
    let objects = model.objects().await.unwrap();
    assert!(objects.iter().any(|o| o.id == av(77) && o.name == "Seventy-Seven"), "{objects:?}");
    assert!(objects.iter().any(|o| o.id == id(ObjectType::DEVICE, 4242)), "{objects:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_plugin_that_traps_fails_that_call_then_restarts_with_its_state() {
    let model = load_misbehave("trap", RestartPolicy::default());
    write_real(&model, av(1), 42.5).await;
    let started = Instant::now();
    let err = model.read(&[pv(av(666))]).await.unwrap_err();
    let trapped = started.elapsed();
    assert!(matches!(err, ModelError::Trapped { ref plugin, .. } if plugin == "trap"), "{err}");
    let after = read_one(&model, pv(av(1))).await.expect("the next request succeeds");
    println!(
        "trap answered after {trapped:?}; next request served after {:?} (restart + state restore)",
        started.elapsed() - trapped
    );
    assert_eq!(after, Value::Real(42.5).into(), "state survives the restart");
    assert_eq!(model.health().restarts, 1);
}

/// Concurrent reads on one instance: when one of them traps, only the
/// request at fault fails and counts against the restart policy; the others
/// are answered, before the trap by the old instance and after it by the
/// fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trapping_read_among_concurrent_reads_fails_alone() {
    let model = std::sync::Arc::new(load_misbehave("batched-trap", RestartPolicy::default()));
    write_real(&*model, av(1), 7.5).await;
    for round in 0..3 {
        let calls: Vec<_> = (0..40)
            .map(|i| {
                let model = model.clone();
                let target = if i == 20 { av(666) } else { av(1) };
                tokio::spawn(async move { (i, model.read(&[pv(target)]).await) })
            })
            .collect();
        for call in calls {
            let (i, answer) = call.await.unwrap();
            if i == 20 {
                assert!(matches!(answer, Err(ModelError::Trapped { .. })), "round {round}: {answer:?}");
            } else {
                let answer = answer.unwrap_or_else(|e| panic!("round {round}, read {i}: {e}"));
                assert_eq!(answer[0][0].outcome, Ok(Value::Real(7.5).into()), "round {round}, read {i}");
            }
        }
        // Succeeding calls between the rounds reset the consecutive count.
        assert_eq!(model.health().failures, round + 1, "one failure per trapping read");
    }
}

#[tokio::test]
async fn a_runaway_loop_is_stopped_at_its_deadline_and_the_next_request_succeeds() {
    let model = load_misbehave("loop", RestartPolicy::default());
    write_real(&model, av(1), 7.0).await;
    let started = Instant::now();
    let err = model.read(&[pv(av(667))]).await.unwrap_err();
    println!("runaway loop stopped after {:?}", started.elapsed());
    assert!(matches!(err, ModelError::DeadlineExceeded { limit_ms: 100, .. }), "{err}");
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(7.0).into());
}

/// A guest that asks WASI to sleep an hour suspends its own call, not the
/// thread: a task beside it on the same single-threaded runtime keeps
/// running, the call fails at its deadline like a runaway loop, and the
/// next request is served by a fresh instance with the state it had.
#[tokio::test(flavor = "current_thread")]
async fn a_plugin_sleeping_in_wasi_is_stopped_at_its_deadline_without_blocking_its_thread() {
    let model = load_misbehave("sleeper", RestartPolicy::default());
    write_real(&model, av(1), 5.5).await;
    let beats = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let heart = {
        let beats = beats.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                beats.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    let err = model.read(&[pv(av(670))]).await.unwrap_err();
    let took = started.elapsed();
    heart.abort();
    println!("sleeping plugin stopped after {took:?}");
    assert!(matches!(err, ModelError::DeadlineExceeded { limit_ms: 100, .. }), "{err}");
    assert!(took < Duration::from_secs(10), "the hour-long sleep was cut at the deadline: {took:?}");
    let beats = beats.load(std::sync::atomic::Ordering::Relaxed);
    assert!(beats >= 2, "the thread kept running other tasks while the plugin slept ({beats} beats)");
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(5.5).into());
}

/// An acknowledged write survives a crash without a state export per
/// write: it waits in the journal, and the fresh instance gets the last
/// snapshot plus the journal replayed in order.
#[tokio::test]
async fn an_acknowledged_write_survives_a_trap_through_the_journal_not_a_snapshot_per_write() {
    let model = load_misbehave("journal", RestartPolicy::default());
    let snapshots = model.health().snapshots;
    for v in [1.0, 2.0, 3.0] {
        write_real(&model, av(1), v).await;
    }
    assert_eq!(model.health().snapshots, snapshots, "no export per write");
    assert_eq!(model.journal_len().await, 3);
    assert!(matches!(model.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(3.0).into(), "the last write, replayed");
    let health = model.health();
    assert_eq!((health.restarts, health.replayed), (1, 3), "{health:?}");
    assert_eq!(model.journal_len().await, 0, "the replayed journal became the snapshot");
    // A priority array written at two priorities comes back as it was.
    let at = |v: f32, p: u8| PropertyWrite { target: pv(av(1)), value: Value::Real(v).into(), priority: Some(p) };
    let relinquish = PropertyWrite { target: pv(av(1)), value: Value::Null.into(), priority: Some(8) };
    model.write(vec![at(10.0, 8), at(20.0, 12), relinquish]).await.unwrap();
    assert!(matches!(model.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert_eq!(
        read_one(&model, pv(av(1))).await.unwrap(),
        Value::Real(20.0).into(),
        "priority 12 after 8 relinquished"
    );
}

/// How long a trapping call takes, the fresh instance's start and state
/// import included; printed, not asserted (see the benchmark report).
#[tokio::test]
async fn restart_after_a_trap_is_printed() {
    let model = load_misbehave("restart-time", RestartPolicy::default());
    write_real(&model, av(1), 1.0).await;
    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let _ = model.read(&[pv(av(666))]).await;
        times.push(started.elapsed());
        // Succeed once so the restart policy stays at "at once".
        read_one(&model, pv(av(1))).await.unwrap();
    }
    println!("a trapping call, answered once the fresh instance has its state back: {times:?}");
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit_and_the_next_request_succeeds() {
    let model = load_misbehave("bomb", RestartPolicy::default());
    write_real(&model, av(1), -3.0).await;
    let err = model.read(&[pv(av(668))]).await.unwrap_err();
    assert!(matches!(err, ModelError::MemoryExceeded { limit_bytes, .. } if limit_bytes == 32 << 20), "{err}");
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(-3.0).into());
}

#[tokio::test]
async fn repeated_failures_back_off_then_disable_while_another_instance_keeps_serving() {
    let policy = RestartPolicy {
        immediate: 1,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_millis(200),
        max_failures: 3,
    };
    let bad = load_misbehave("repeat-offender", policy);
    let good = load_misbehave("bystander", RestartPolicy::default());
    write_real(&good, av(1), 1.0).await;

    // First failure: restarted at once.
    assert!(matches!(bad.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    // Second: restarted after a back-off, during which calls fail fast,
    // saying why.
    assert!(matches!(bad.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert!(bad.health().backing_off);
    let e = bad.read(&[pv(av(1))]).await.unwrap_err();
    assert!(matches!(e, ModelError::Restarting { ref cause, .. } if matches!(**cause, ModelError::Trapped { .. })));
    assert!(e.to_string().contains("misbehave: trap on read of analog-value,666"), "{e}");
    assert_eq!(read_one(&good, pv(av(1))).await.unwrap(), Value::Real(1.0).into());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Third consecutive failure: disabled for good.
    assert!(matches!(bad.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert!(bad.health().disabled);
    for _ in 0..3 {
        assert!(matches!(bad.read(&[pv(av(1))]).await, Err(ModelError::Disabled { .. })));
        assert_eq!(read_one(&good, pv(av(1))).await.unwrap(), Value::Real(1.0).into());
    }
}

#[tokio::test]
async fn a_component_that_does_not_fit_the_world_is_refused_with_its_name() {
    // The smallest valid component: magic, version 0x0d, layer 1.
    let empty: &[u8] = b"\0asm\x0d\x00\x01\x00";
    let err = PluginModel::load(engine(), empty, PluginConfig::new("empty")).unwrap_err();
    assert_eq!(err.plugin, "empty");
    assert!(err.reason.contains("object-model"), "{err}");
    let err = PluginModel::load(engine(), &b"not wasm"[..], PluginConfig::new("junk")).unwrap_err();
    assert!(err.to_string().starts_with("cannot load plugin junk"), "{err}");
}

#[tokio::test]
async fn the_second_load_of_a_component_comes_from_the_cwasm_cache() {
    let dir = tmp_dir(&format!("plugin-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = EngineConfig { cache_dir: Some(dir.clone()), pooling: None, ..EngineConfig::default() };
    let path = misbehave_path();
    let mut times = Vec::new();
    for expected in [CacheOutcome::Compiled, CacheOutcome::Hit] {
        let engine = PluginEngine::new(&config).unwrap();
        let started = Instant::now();
        let model = PluginModel::load(&engine, path.as_path(), PluginConfig::new("cached")).unwrap();
        times.push(started.elapsed());
        assert_eq!(model.cache_outcome(), expected);
    }
    println!("load (compile + instantiate): miss {:?}, hit {:?}", times[0], times[1]);

    // A corrupted entry is noticed, recompiled and rewritten.
    let entry = std::fs::read_dir(&dir).unwrap().flatten().find(|e| e.path().extension() == Some("cwasm".as_ref()));
    let entry = entry.expect("a cache entry").path();
    let mut bytes = std::fs::read(&entry).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&entry, bytes).unwrap();
    let engine = PluginEngine::new(&config).unwrap();
    let model = PluginModel::load(&engine, path.as_path(), PluginConfig::new("cached")).unwrap();
    assert_eq!(model.cache_outcome(), CacheOutcome::Replaced);
    // The same engine loading it again (a swap back, a restart) finds it in
    // memory; another engine reads the rewritten entry.
    let model = PluginModel::load(&engine, path.as_path(), PluginConfig::new("cached")).unwrap();
    assert_eq!(model.cache_outcome(), CacheOutcome::InMemory);
    let engine = PluginEngine::new(&config).unwrap();
    let model = PluginModel::load(&engine, path.as_path(), PluginConfig::new("cached")).unwrap();
    assert_eq!(model.cache_outcome(), CacheOutcome::Hit);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_hot_swap_hands_written_state_to_the_new_instance() {
    let old = load_misbehave("swap", RestartPolicy::default());
    let next = load_misbehave("swap-next", RestartPolicy::default());
    write_real(&old, av(1), 12.25).await;
    old.swap(&next).await.expect("swap");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(12.25).into());
    write_real(&old, av(1), 13.0).await;
    assert_eq!(
        read_one(&next, pv(av(1))).await.unwrap(),
        Value::Real(13.0).into(),
        "both handles reach the new instance"
    );
}

#[tokio::test]
async fn crossing_cost_of_one_and_of_256_properties() {
    let model = load_misbehave("crossing", RestartPolicy::default());
    for n in [1usize, 256] {
        let targets = vec![pv(av(1)); n];
        for _ in 0..50 {
            model.read(&targets).await.unwrap();
        }
        let rounds = 2000 / n.min(8) as u32;
        let started = Instant::now();
        for _ in 0..rounds {
            let answer = model.read(&targets).await.unwrap();
            assert_eq!(answer.len(), n);
        }
        println!(
            "read of {n:>3} properties: {:?} per call (async → worker → guest → back)",
            started.elapsed() / rounds
        );
    }
}

#[tokio::test]
async fn a_swap_whose_state_the_new_version_refuses_keeps_the_old_instance_serving() {
    let old = load_misbehave("poisoned", RestartPolicy::default());
    let next = load_misbehave("poisoned-next", RestartPolicy::default());
    write_real(&old, av(1), 7.5).await;
    // binary-value,669 active: the old instance now exports a state every version refuses.
    let poison = ObjectIdentifier::new(ObjectType::BINARY_VALUE, 669).unwrap();
    let w = PropertyWrite {
        target: PropertyTarget { object: poison, property: PropertyIdentifier::PRESENT_VALUE, array_index: None },
        value: Value::Enumerated(1).into(),
        priority: None,
    };
    assert_eq!(old.write(vec![w]).await.unwrap(), vec![Ok(())]);
    let refused = old.swap(&next).await.expect_err("the new version must refuse the state");
    assert!(refused.to_string().contains("refused the state"), "{refused}");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(7.5).into(), "the old instance still serves");
}

#[tokio::test]
async fn a_trap_in_the_constructor_is_reported_as_that_trap_with_its_message_not_as_busy() {
    let dir = tmp_dir(&format!("constructor-trap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("misbehave.toml"), "on_start = \"trap\"\n").unwrap();
    let config = PluginConfig { data_dir: Some(dir.clone()), ..PluginConfig::new("constructor") };
    // `describe` needs no model: the load succeeds, the first call builds it.
    let model = PluginModel::load(engine(), misbehave_path().as_path(), config).expect("load misbehave");
    // At once, restarted at once, then while waiting out the back-off: each
    // answer says what went wrong.
    for call in 0..3 {
        let e = model.objects().await.unwrap_err().to_string();
        assert!(e.starts_with("plugin constructor trapped: misbehave: trap on start"), "call {call}: {e}");
        assert!(!e.contains("busy") && !e.contains('\n'), "call {call}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `demo-building` component as built against `trellis:bacnet@0.1.0`,
/// before `read-encoded` (the fixture's README says from which commit).
fn demo_building_0_1_0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-building-0.1.0.wasm")
}

async fn read_encoded(model: &impl ObjectModel, target: PropertyTarget) -> Result<EncodedRead, ModelError> {
    let mut out = vec![0xEE];
    let answer = model.read_encoded(target, &mut out).await?;
    match answer {
        EncodedRead::Value => assert_eq!(out[0], 0xEE, "appended, not overwritten"),
        _ => assert_eq!(out, [0xEE], "nothing appended for {answer:?}"),
    }
    Ok(answer)
}

/// `read-encoded` answers exactly what `read-properties` answers, value for
/// value and error for error.
#[tokio::test]
async fn an_encoded_read_answers_what_the_general_read_answers() {
    let model = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("encoded")).unwrap();
    assert_eq!(model.interface(), "trellis:bacnet@0.4.0");
    write_real(&model, av(1), 21.25).await;
    let prop = |object, property, array_index| PropertyTarget { object, property, array_index };
    let targets = [
        pv(av(1)),
        prop(av(1), PropertyIdentifier::OBJECT_NAME, None),
        prop(av(1), PropertyIdentifier::STATUS_FLAGS, None),
        prop(av(1), PropertyIdentifier::PRIORITY_ARRAY, Some(8)),
        prop(av(1), PropertyIdentifier::PRIORITY_ARRAY, None),
        prop(av(1), PropertyIdentifier::OBJECT_NAME, Some(1)),
        pv(av(999)),
        prop(av(1), PropertyIdentifier(9999), None),
    ];
    for t in targets {
        let general = model.read(&[t]).await.unwrap().remove(0).remove(0).outcome;
        let mut out = Vec::new();
        match (model.read_encoded(t, &mut out).await.unwrap(), general) {
            (EncodedRead::Value, Ok(v)) => assert_eq!(AnyValue::from_bytes(&out).unwrap(), v, "{t:?}"),
            (EncodedRead::Error(a), Err(b)) => assert_eq!(a, b, "{t:?}"),
            (a, b) => panic!("{t:?}: encoded {a:?}, general {b:?}"),
        }
    }
}

/// A trap in `read-encoded` fails that read like any other call, and the
/// restarted instance answers the next one with the written state.
#[tokio::test]
async fn a_trap_during_an_encoded_read_fails_that_read_and_the_instance_restarts() {
    let model = load_misbehave("encoded-trap", RestartPolicy::default());
    write_real(&model, av(1), 4.5).await;
    let trapped = read_encoded(&model, pv(av(666))).await.expect_err("analog-value,666 traps");
    assert!(matches!(trapped, ModelError::Trapped { .. }), "{trapped}");
    assert_eq!(read_encoded(&model, pv(av(1))).await.unwrap(), EncodedRead::Value);
    assert_eq!(read_one(&model, pv(av(1))).await.unwrap(), Value::Real(4.5).into());
    assert_eq!(model.health().restarts, 1);
}

/// A component built against 0.1.0 loads, serves through the calls it has,
/// and swaps with a current build of the same plugin both ways, state intact.
#[tokio::test]
async fn a_component_built_against_0_1_0_keeps_loading_and_swaps_with_0_2_0_both_ways() {
    let old = PluginModel::load(engine(), demo_building_0_1_0().as_path(), PluginConfig::new("v1")).expect("load");
    assert_eq!(old.interface(), "trellis:bacnet@0.1.0");
    assert_eq!(old.describe().name, "demo-building");
    assert_eq!(read_encoded(&old, pv(av(1))).await.unwrap(), EncodedRead::Unsupported);
    write_real(&old, av(1), 19.5).await;
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(19.5).into());

    let new = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("v2")).unwrap();
    old.swap(&new).await.expect("0.1.0 → 0.4.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.4.0");
    let mut out = Vec::new();
    assert_eq!(old.read_encoded(pv(av(1)), &mut out).await.unwrap(), EncodedRead::Value);
    assert_eq!(AnyValue::from_bytes(&out).unwrap(), Value::Real(19.5).into());
    write_real(&old, av(1), 20.0).await;

    let back = PluginModel::load(engine(), demo_building_0_1_0().as_path(), PluginConfig::new("v1-again")).unwrap();
    old.swap(&back).await.expect("0.4.0 → 0.1.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.1.0");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(20.0).into());
}

/// Swapping in a fixed version is what an operator does about a plugin
/// that has been disabled: the swap does not need the broken instance to
/// export; the new one starts from its snapshot and journal.
#[tokio::test]
async fn a_disabled_plugin_is_swapped_out_with_its_acknowledged_writes() {
    let policy = RestartPolicy { immediate: 0, max_failures: 1, ..RestartPolicy::default() };
    let broken = load_misbehave("broken", policy);
    write_real(&broken, av(1), 8.75).await;
    assert!(matches!(broken.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert!(broken.health().disabled);
    assert!(broken.export_state().await.is_err(), "a disabled plugin cannot export");

    let fixed = load_misbehave("fixed", RestartPolicy::default());
    broken.swap(&fixed).await.expect("a swap from a disabled plugin");
    assert!(!broken.health().disabled);
    assert_eq!(read_one(&broken, pv(av(1))).await.unwrap(), Value::Real(8.75).into(), "the write survived");
}

/// The `demo-building` component as built against `trellis:bacnet@0.2.0`,
/// before alarms (the fixture's README says from which commit).
fn demo_building_0_2_0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-building-0.2.0.wasm")
}

/// A component built against 0.2.0 loads and serves encoded reads, has no
/// alarms to acknowledge (object/no-alarm-configured), and swaps with a
/// current build both ways, state intact.
#[tokio::test]
async fn a_component_built_against_0_2_0_keeps_loading_and_swaps_with_the_current_build_both_ways() {
    let old = PluginModel::load(engine(), demo_building_0_2_0().as_path(), PluginConfig::new("v2")).expect("load");
    assert_eq!(old.interface(), "trellis:bacnet@0.2.0");
    assert_eq!(read_encoded(&old, pv(av(1))).await.unwrap(), EncodedRead::Value);
    let zone = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_INPUT, instance: 1 };
    let refused = old.acknowledge(zone, 0).await.unwrap().unwrap_err();
    assert_eq!(refused.code, bacnet::enums::ErrorCode::NO_ALARM_CONFIGURED);
    write_real(&old, av(1), 19.5).await;

    let new = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("v3")).unwrap();
    old.swap(&new).await.expect("0.2.0 → 0.4.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.4.0");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(19.5).into());
    let high =
        read_one(&old, PropertyTarget { object: zone, property: PropertyIdentifier::HIGH_LIMIT, array_index: None });
    assert_eq!(high.await.unwrap(), Value::Real(28.0).into(), "the current build has the zone's alarm");
    write_real(&old, av(1), 20.0).await;

    let back = PluginModel::load(engine(), demo_building_0_2_0().as_path(), PluginConfig::new("v2-again")).unwrap();
    old.swap(&back).await.expect("0.4.0 → 0.2.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.2.0");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(20.0).into());
}

/// The `demo-building` component as built against `trellis:bacnet@0.3.0`,
/// before object creation (the fixture's README says from which commit).
fn demo_building_0_3_0() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/demo-building-0.3.0.wasm")
}

fn object_code(e: CreateObjectError) -> (bacnet::enums::ErrorCode, u32) {
    (e.error.code, e.first_failed)
}

/// A component built against 0.3.0 loads with its alarms, creates and
/// deletes nothing (the standard's refusals, not a failure), and swaps
/// with a current build both ways: the objects a client created in the
/// current build are skipped by 0.3.0 and the rest of the state kept.
#[tokio::test]
async fn a_component_built_against_0_3_0_creates_nothing_and_swaps_with_the_current_build_both_ways() {
    use bacnet::enums::ErrorCode;
    let old = PluginModel::load(engine(), demo_building_0_3_0().as_path(), PluginConfig::new("v3")).expect("load");
    assert_eq!(old.interface(), "trellis:bacnet@0.3.0");
    let zone = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_INPUT, instance: 1 };
    let high = PropertyTarget { object: zone, property: PropertyIdentifier::HIGH_LIMIT, array_index: None };
    assert_eq!(read_one(&old, high).await.unwrap(), Value::Real(28.0).into(), "0.3.0 has alarms");
    let refused = old.create_object(ObjectSpecifier::Type(bacnet::ObjectType::ANALOG_VALUE), vec![]).await.unwrap();
    assert_eq!(object_code(refused.unwrap_err()), (ErrorCode::DYNAMIC_CREATION_NOT_SUPPORTED, 0));
    let refused = old.delete_object(av(1)).await.unwrap().unwrap_err();
    assert_eq!(refused.code, ErrorCode::OBJECT_DELETION_NOT_PERMITTED);
    write_real(&old, av(1), 19.5).await;

    let new = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("v4")).unwrap();
    old.swap(&new).await.expect("0.3.0 → 0.4.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.4.0");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(19.5).into());
    let created = old.create_object(ObjectSpecifier::Type(bacnet::ObjectType::ANALOG_VALUE), vec![]).await.unwrap();
    let created = created.expect("the current build creates analog values");
    write_real(&old, created, 7.0).await;

    let back = PluginModel::load(engine(), demo_building_0_3_0().as_path(), PluginConfig::new("v3-again")).unwrap();
    old.swap(&back).await.expect("0.4.0 → 0.3.0");
    assert_eq!(old.interface(), "trellis:bacnet@0.3.0");
    assert_eq!(read_one(&old, pv(av(1))).await.unwrap(), Value::Real(19.5).into());
    let gone = old.read(&[pv(created)]).await.unwrap().remove(0).remove(0).outcome.unwrap_err();
    assert_eq!(gone.code, ErrorCode::UNKNOWN_OBJECT, "0.3.0 cannot create it again");
}

/// Objects a client created, and deletions, live through a restart of the
/// instance (a warm ReinitializeDevice).
#[tokio::test]
async fn created_and_deleted_objects_survive_a_restart_of_the_instance() {
    use bacnet::enums::ErrorCode;
    let model = PluginModel::load(engine(), builtin::DEMO_BUILDING, PluginConfig::new("lifecycle")).unwrap();
    let objects = model.objects().await.unwrap().len();
    let name = PropertyWrite {
        target: PropertyTarget {
            object: ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: 50 },
            property: PropertyIdentifier::OBJECT_NAME,
            array_index: None,
        },
        value: bacnet::Value::CharacterString(bacnet::CharacterString::utf8("Created Setpoint")).into(),
        priority: None,
    };
    let kept = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: 50 };
    let asked = ObjectSpecifier::Identifier(kept);
    assert_eq!(model.create_object(asked, vec![name.clone()]).await.unwrap(), Ok(kept));
    let again = model.create_object(asked, vec![]).await.unwrap().unwrap_err();
    assert_eq!(object_code(again), (ErrorCode::OBJECT_IDENTIFIER_ALREADY_EXISTS, 0));
    let duplicate = model.create_object(ObjectSpecifier::Type(kept.object_type), vec![name]).await.unwrap();
    assert_eq!(object_code(duplicate.unwrap_err()), (ErrorCode::DUPLICATE_NAME, 1));
    let temporary = model.create_object(ObjectSpecifier::Type(kept.object_type), vec![]).await.unwrap().unwrap();
    assert_eq!(model.objects().await.unwrap().len(), objects + 2);
    assert_eq!(model.delete_object(temporary).await.unwrap(), Ok(()));
    write_real(&model, kept, 3.5).await;

    model.restart(true).await.unwrap();
    let names = model.objects().await.unwrap();
    assert_eq!(names.len(), objects + 1);
    assert!(names.iter().any(|o| o.id == kept && o.name == "Created Setpoint"), "{names:?}");
    assert_eq!(read_one(&model, pv(kept)).await.unwrap(), Value::Real(3.5).into());
    assert_eq!(model.delete_object(kept).await.unwrap(), Ok(()));
    assert_eq!(model.delete_object(av(1)).await.unwrap().unwrap_err().code, ErrorCode::OBJECT_DELETION_NOT_PERMITTED);
}

/// An object a client created outlives a trap: the instance's snapshot was
/// taken after the creation, and the restarted instance imports it.
#[tokio::test]
async fn a_created_object_outlives_a_trap() {
    let model = load_misbehave("create-then-trap", RestartPolicy::default());
    let created = ObjectIdentifier { object_type: bacnet::ObjectType::ANALOG_VALUE, instance: 2 };
    let asked = ObjectSpecifier::Type(bacnet::ObjectType::ANALOG_VALUE);
    assert_eq!(model.create_object(asked, vec![]).await.unwrap(), Ok(created), "the lowest free instance");
    write_real(&model, created, 6.25).await;
    assert!(matches!(model.read(&[pv(av(666))]).await, Err(ModelError::Trapped { .. })));
    assert_eq!(read_one(&model, pv(created)).await.unwrap(), Value::Real(6.25).into());
    assert_eq!(model.health().restarts, 1);
}
