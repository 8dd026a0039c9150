//! Devices on shards: each device's requests are answered on its own
//! thread, so a device whose plugin misbehaves holds up only itself.
//!
//! ```text
//! client A ──ReadProperty──▶ device 1 (demo-building, shard 0) ──▶ answered, every time
//! client B ──ReadProperty analog-value,667──▶ device 2 (misbehave, shard 1): a loop to its 1 s deadline
//!                                         ◀── Error device/operational-problem; its instance restarted
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::enums::{ErrorClass, ErrorCode};
use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};
use trellis::client::{Client, ClientConfig, DeviceAddress};
use trellis::plugin::builtin;

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, instance).unwrap()
}

async fn bind_client() -> Client {
    let bip = trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0);
    Client::bind(ClientConfig { bip, ..Default::default() }).await.unwrap()
}

fn local(port: u16) -> DeviceAddress {
    DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// The longest a device-1 read may take while device 2 loops: half of
/// device 2's deadline. On one thread shared with device 2, a read queued
/// behind a runaway call waits up to the whole deadline.
const NEIGHBOUR_BOUND: Duration = Duration::from_millis(500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_whose_plugin_runs_away_does_not_hold_up_its_neighbour_on_another_shard() {
    let _timing = crate::peers::exclusive().await;
    let scratch = Scratch::new("shards", "neighbours");
    std::fs::copy(builtin::MISBEHAVE_PATH, scratch.path("misbehave.wasm")).unwrap();
    let (good, bad) = (free_port(), free_port());
    let config = format!(
        "[engine]\nthreads = 2\n\n[policy]\nallow_unsigned = true\n\n\
         [[device]]\nport = {good}\ninstance = 1001\nplugin = \"builtin:demo-building\"\npassword = \"x\"\n\n\
         [[device]]\nport = {bad}\ninstance = 1002\nplugin = \"misbehave.wasm\"\ndeadline_ms = 1000\npassword = \"x\"\n"
    );
    let path = scratch.path("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));

    let client = bind_client().await;
    let attacker = bind_client().await;
    let runaway = tokio::spawn(async move {
        let mut answers = Vec::new();
        for _ in 0..2 {
            let r = attacker.read_property(&local(bad), av(667), PropertyIdentifier::PRESENT_VALUE, None).await;
            answers.push(r.map(|_| ()).map_err(|e| e.bacnet_error()));
        }
        // Restarted after its back-off (100 ms after a second failure): it serves again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after = attacker.read_property(&local(bad), av(1), PropertyIdentifier::PRESENT_VALUE, None).await;
        (answers, after.is_ok())
    });
    let mut slowest = Duration::ZERO;
    let mut reads = 0;
    while !runaway.is_finished() {
        let started = Instant::now();
        client
            .read_property(
                &local(good),
                ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap(),
                PropertyIdentifier::PRESENT_VALUE,
                None,
            )
            .await
            .unwrap_or_else(|e| panic!("device 1 failed a read while device 2 misbehaved: {e}"));
        slowest = slowest.max(started.elapsed());
        reads += 1;
    }
    let (answers, recovered) = runaway.await.unwrap();
    let operational = Err(Some((ErrorClass::DEVICE, ErrorCode::OPERATIONAL_PROBLEM)));
    assert!(answers.iter().all(|a| *a == operational), "each runaway call answered as a device fault: {answers:?}");
    assert!(recovered, "device 2 serves again after its restarts");
    assert!(reads > 3, "device 1 answered throughout ({reads} reads)");
    assert!(
        slowest < NEIGHBOUR_BOUND,
        "device 1's slowest read took {slowest:?} while device 2 ran to its 1 s deadline: they share a thread"
    );
    assert!(gateway.log().contains("exceeded its time limit of 1000 ms"), "said what happened:\n{}", gateway.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_two_devices_example_serves_both_devices() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("shards", "example");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/two-devices.toml")).unwrap();
    let (first, second) = (free_port(), free_port());
    let moved =
        text.replace("port = 47808", &format!("port = {first}")).replace("port = 47809", &format!("port = {second}"));
    let path = scratch.path("two-devices.toml");
    std::fs::write(&path, moved).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    assert!(gateway.log().contains("trellis: 2 devices on 2 threads"), "{}", gateway.log());
    let client = bind_client().await;
    for (port, instance) in [(first, 389_001), (second, 389_002)] {
        let device = ObjectIdentifier::new(ObjectType::DEVICE, instance).unwrap();
        let id = client.read_property(&local(port), device, PropertyIdentifier::OBJECT_IDENTIFIER, None).await.unwrap();
        assert_eq!(id, bacnet::Value::ObjectIdentifier(device).into(), "device on port {port}");
    }
    drop(gateway);
}
