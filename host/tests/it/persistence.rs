//! What a client wrote and the device acknowledged outlives the gateway
//! process (`examples/persistence.toml`, issue 42):
//!
//! ```text
//! tool ──WriteProperty AV1 PV 36.0 @8──▶ gateway ──journal (fsync)──▶ disk
//!                                        gateway ◀──SimpleACK── (only then)
//!        kill -9 ──▶ gateway ✗
//!        trellis run ──▶ gateway ◀──snapshot + journal── disk
//! tool ──ReadProperty AV1 Priority_Array──▶ gateway ──[…, 36.0 at 8, …]──▶ tool
//! ```
//!
//! And what a restart must not do: refuse to start over a damaged journal,
//! forget a write it acknowledged while it was being killed, or hand a new
//! plugin version state for objects it no longer has.

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::services::ServiceCodec;
use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// `examples/persistence.toml` on a free port, its state in `scratch`.
fn config(scratch: &Scratch) -> (PathBuf, String, PathBuf) {
    let port = free_port();
    let state = scratch.path("state");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/persistence.toml"))
        .unwrap()
        .replace("instance = 1001", &format!("instance = 1001\nport = {port}"))
        .replace("dir = \"state/1001\"", &format!("dir = \"{}\"", state.display()));
    assert!(text.contains(&format!("port = {port}")) && text.contains(&state.display().to_string()));
    let path = scratch.path("kept.toml");
    std::fs::write(&path, text).unwrap();
    (path, format!("127.0.0.1:{port}"), state)
}

fn start(config: &Path, scratch: &Scratch) -> Gateway {
    Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("the gateway did not start:\n{log}"))
}

/// `trellis ARGS`: its stdout, or its stderr when it fails.
fn cli(args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn ok(args: &[&str]) -> String {
    cli(args).unwrap_or_else(|e| panic!("trellis {args:?}: {e}"))
}

/// A SubscribeCOV from `socket`, confirmed by its SimpleACK.
fn subscribe(socket: &UdpSocket, device: &str, object: ObjectIdentifier, lifetime: u32) {
    let req = bacnet::services::SubscribeCOVRequest {
        subscriber_process_identifier: 42,
        monitored_object: object,
        issue_confirmed_notifications: Some(false),
        lifetime: Some(lifetime),
    };
    let mut apdu = Vec::new();
    bacnet::apdu::Apdu::ConfirmedRequest(bacnet::apdu::ConfirmedRequest {
        segment: None,
        segmented_response_accepted: false,
        max_segments: bacnet::apdu::MaxSegments::UNSPECIFIED,
        max_apdu: bacnet::apdu::MaxApdu::UP_TO_1476,
        invoke_id: 9,
        service: bacnet::enums::ConfirmedServiceChoice::SUBSCRIBE_COV,
        body: &req.to_vec(),
    })
    .encode(&mut apdu);
    let mut npdu = Vec::new();
    bacnet::npdu::Npdu::local_apdu(&apdu, true).encode(&mut npdu).unwrap();
    let mut frame = vec![0x81, 0x0A, 0, 0];
    frame.extend_from_slice(&npdu);
    let len = frame.len() as u16;
    frame[2..4].copy_from_slice(&len.to_be_bytes());
    socket.send_to(&frame, device).unwrap();
    let mut buf = [0u8; 1500];
    loop {
        let n = socket.recv(&mut buf).expect("an answer to the SubscribeCOV within 10 s");
        // BVLC 4, NPDU 2 (no addresses): a SimpleACK is 0x20, invoke 9, service 5.
        if buf[6..n].starts_with(&[0x20, 9, 5]) {
            return;
        }
        assert!(buf[6] != 0x50 && buf[6] != 0x60 && buf[6] != 0x70, "SubscribeCOV refused: {:02x?}", &buf[..n]);
    }
}

/// Whether an UnconfirmedCOVNotification for `object` arrives at `socket`.
fn notified(socket: &UdpSocket, object: ObjectIdentifier) -> bool {
    let mut buf = [0u8; 1500];
    while let Ok(n) = socket.recv(&mut buf) {
        if buf[6..n].starts_with(&[0x10, 0x02])
            && let Ok(note) = bacnet::services::COVNotification::decode(&buf[8..n])
            && note.monitored_object == object
        {
            return true;
        }
    }
    false
}

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).unwrap()
}

#[test]
fn what_clients_wrote_comes_back_after_kill_9() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("persistence", "kill-9");
    let (config, device, state) = config(&scratch);
    let gateway = start(&config, &scratch);
    ok(&["write", &device, "analog-value,1", "present-value", "36.0", "--priority", "8"]);
    ok(&["write", &device, "analog-value,1", "description", "commanded by the BMS"]);
    ok(&["write", &device, "analog-value,1", "cov-increment", "0.25"]);
    ok(&["write", &device, "notification-class,1", "priority", "5", "--index", "2"]);
    let created = ok(&["create", &device, "schedule", "object-name=night-setback"]);
    let subscriber = UdpSocket::bind("127.0.0.1:0").unwrap();
    subscriber.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    subscribe(&subscriber, &device, av(1), 3600);
    drop(gateway); // SIGKILL: nothing is saved at exit.

    let gateway = start(&config, &scratch);
    let array = ok(&["read", &device, "analog-value,1", "priority-array"]);
    assert_eq!(array.split(", ").nth(7), Some("36"), "priority 8 kept: {array}");
    assert!(ok(&["read", &device, "analog-value,1", "present-value"]).starts_with("36"));
    assert_eq!(ok(&["read", &device, "analog-value,1", "description"]), "commanded by the BMS");
    assert!(ok(&["read", &device, "analog-value,1", "cov-increment"]).starts_with("0.25"));
    assert_eq!(ok(&["read", &device, "notification-class,1", "priority", "--index", "2"]), "5");
    assert!(ok(&["read", &device, "device,1001", "object-list"]).contains(created.trim()), "created {created} kept");
    assert_eq!(ok(&["read", &device, &created, "object-name"]), "night-setback");
    // The subscription is back, with what was left of its hour, and says so.
    assert!(notified(&subscriber, av(1)), "a COV notification after the restart");
    let port = subscriber.local_addr().unwrap().port();
    let subscriptions = ok(&["read", &device, "device,1001", "active-cov-subscriptions"]);
    assert!(
        subscriptions.contains(&port.to_string()) || subscriptions.contains(&format!("{port:04x}")),
        "{subscriptions}"
    );
    assert!(state.join("model.journal").exists() && state.join("host.journal").exists());
    drop(gateway);
}

#[test]
fn a_torn_journal_is_cut_at_the_damage_and_the_gateway_still_starts() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("persistence", "torn");
    let (config, device, state) = config(&scratch);
    let gateway = start(&config, &scratch);
    ok(&["write", &device, "analog-value,1", "present-value", "30.0", "--priority", "8"]);
    ok(&["write", &device, "analog-value,1", "present-value", "31.5", "--priority", "8"]);
    drop(gateway);
    // The power went while the second write was on its way to the disk.
    let journal = state.join("model.journal");
    let len = std::fs::metadata(&journal).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(len - 3).unwrap();

    let gateway = start(&config, &scratch);
    assert!(ok(&["read", &device, "analog-value,1", "present-value"]).starts_with("30"), "the whole write kept");
    let log = gateway.log();
    assert!(log.contains("damaged at octet") && log.contains("torn"), "the damage reported:\n{log}");
    let aside: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("model.journal.damaged-"))
        .collect();
    assert_eq!(aside.len(), 1, "the cut octets set aside");
    // And it goes on journaling after the cut.
    ok(&["write", &device, "analog-value,1", "present-value", "32.0", "--priority", "8"]);
    drop(gateway);
    let gateway = start(&config, &scratch);
    assert!(ok(&["read", &device, "analog-value,1", "present-value"]).starts_with("32"));
    assert!(!gateway.log().contains("damaged"), "clean after the cut:\n{}", gateway.log());
}

#[test]
fn kill_9_amid_writes_loses_no_acknowledged_write() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("persistence", "amid-writes");
    let (config, device, _) = config(&scratch);
    let gateway = start(&config, &scratch);
    let acknowledged = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acknowledged, stop, device) = (acknowledged.clone(), stop.clone(), device.clone());
        std::thread::spawn(move || {
            for n in 1..10_000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let value = format!("{n}.0");
                match cli(&["write", &device, "analog-value,1", "present-value", &value, "--priority", "8"]) {
                    Ok(_) => acknowledged.store(n, Ordering::SeqCst),
                    Err(_) => break,
                }
            }
        })
    };
    while acknowledged.load(Ordering::SeqCst) < 20 {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(gateway); // kill -9 while a write is (most likely) in flight
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let last = acknowledged.load(Ordering::SeqCst);

    let _gateway = start(&config, &scratch);
    let back = ok(&["read", &device, "analog-value,1", "present-value"]);
    let back: f32 = back.split_whitespace().next().unwrap().parse().unwrap();
    // The acknowledged one, or the one in flight if it was journaled
    // before the kill took its answer away.
    assert!(back == last as f32 || back == (last + 1) as f32, "acknowledged {last}, read back {back}");
}

/// A hot swap to a version with fewer objects, then a restart: the state
/// on disk is the new version's, and only its objects' values are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_to_a_version_without_an_object_keeps_the_rest_across_a_restart() {
    use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
    use trellis_model::{ObjectModel, PropertyTarget, PropertyWrite};
    let scratch = Scratch::new("persistence", "swap");
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("persistence-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let objects = |dir: &str, extra: &str| {
        let d = scratch.path(dir);
        std::fs::create_dir_all(&d).unwrap();
        let text = format!(
            "[[object]]\ntype = \"analog-value\"\ninstance = 1\nname = \"setpoint\"\nunits = \"degrees-celsius\"\n{extra}"
        );
        std::fs::write(d.join("objects.toml"), text).unwrap();
        d
    };
    let both = objects("v1", "[[object]]\ntype = \"analog-value\"\ninstance = 2\nname = \"limit\"\n");
    let one = objects("v2", "");
    let load = |data: PathBuf| {
        let engine = engine.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut pc = PluginConfig::new("demo");
                pc.data_dir = Some(data);
                PluginModel::load(&engine, builtin::DEMO_BUILDING, pc).expect("load demo-building")
            })
            .await
            .unwrap()
        }
    };
    let open = || {
        trellis_persist::Journal::open(&scratch.path("state"), "model", trellis_persist::Durability::PowerLoss).unwrap()
    };
    let write = |object, value: f32| PropertyWrite {
        target: PropertyTarget { object, property: P::PRESENT_VALUE, array_index: None },
        value: Value::Real(value).into(),
        priority: Some(8),
    };
    let present_value = |model: PluginModel, object| async move {
        let t = PropertyTarget { object, property: P::PRESENT_VALUE, array_index: None };
        model.read(&[t]).await.unwrap().remove(0).remove(0).outcome
    };

    let first = load(both.clone()).await;
    let (journal, recovered) = open();
    assert_eq!(first.persist(journal, recovered).await, trellis::plugin::Restored::default(), "nothing yet");
    let results = first.write(vec![write(av(1), 36.0), write(av(2), 80.0)]).await.unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let second = load(one.clone()).await;
    first.swap(&second).await.unwrap();
    // Written after the swap: journaled by the new version.
    assert!(first.write(vec![write(av(1), 37.0)]).await.unwrap()[0].is_ok());
    assert!(present_value(first.clone(), av(2)).await.is_err(), "the new version has no analog-value,2");
    drop((first, second));

    let again = load(one).await;
    let (journal, recovered) = open();
    let restored = again.persist(journal, recovered).await;
    assert!(restored.state_from.as_deref().is_some_and(|v| v.starts_with("demo-building")), "{restored:?}");
    assert_eq!((restored.writes_applied, restored.writes_dropped), (1, 0), "{restored:?}");
    assert_eq!(present_value(again.clone(), av(1)).await, Ok(Value::Real(37.0).into()));
    // Back to the version with both objects: analog-value,2's value is gone
    // with the version that dropped it; analog-value,1's stays.
    drop(again);
    let back = load(both).await;
    let (journal, recovered) = open();
    back.persist(journal, recovered).await;
    assert_eq!(present_value(back.clone(), av(1)).await, Ok(Value::Real(37.0).into()));
    assert_ne!(present_value(back, av(2)).await, Ok(Value::Real(80.0).into()));
}

/// A state the plugin cannot take is set aside, and the device starts
/// from its configuration instead of refusing to start.
#[test]
fn a_saved_state_the_plugin_refuses_is_set_aside_not_fatal() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("persistence", "refused");
    let (config, device, state) = config(&scratch);
    let (mut journal, _) =
        trellis_persist::Journal::open(&state, "model", trellis_persist::Durability::PowerLoss).unwrap();
    // An envelope (version 1, "other 9.9") around bytes that are no object-model state.
    let mut envelope = vec![1, 5, 0];
    envelope.extend_from_slice(b"other");
    envelope.extend_from_slice(&[3, 0]);
    envelope.extend_from_slice(b"9.9");
    envelope.extend_from_slice(b"not a state at all");
    journal.replace_snapshot(&envelope).unwrap();
    drop(journal);

    let gateway = start(&config, &scratch);
    assert!(ok(&["read", &device, "analog-value,1", "present-value"]).starts_with("21"), "configured state");
    let log = gateway.log();
    assert!(log.contains("refused the saved state exported by other 9.9"), "{log}");
    assert!(
        std::fs::read_dir(&state).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("model.snapshot.refused-")),
        "set aside"
    );
}

/// A clean stop (SIGTERM) writes a last snapshot: the journal is empty
/// after it, and the value is there at the next start.
#[test]
fn a_clean_stop_leaves_a_snapshot_and_an_empty_journal() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("persistence", "sigterm");
    let (config, device, state) = config(&scratch);
    let mut gateway = start(&config, &scratch);
    ok(&["write", &device, "analog-value,1", "present-value", "27.5", "--priority", "9"]);
    let journal = state.join("model.journal");
    assert!(std::fs::metadata(&journal).unwrap().len() > 16, "the write is journaled");
    gateway.terminate();
    assert!(gateway.wait_exit(Duration::from_secs(30)).is_some_and(|s| s.success()), "{}", gateway.log());
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 16, "the stop's snapshot holds it: only the header left");
    let _gateway = start(&config, &scratch);
    assert!(ok(&["read", &device, "analog-value,1", "present-value"]).starts_with("27.5"));
}
