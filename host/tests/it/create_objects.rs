//! Object lifecycle end to end (`examples/create-objects.toml`): front ends
//! create objects in the demo building's model and delete them again
//! (Clauses 15.3, 15.4), as a commissioning tool does.
//!
//! ```text
//! our CLI ──CreateObject analog-value {name, Present_Value, Units}──▶ gateway ──create-object──▶ plugin
//!         ◀──CreateObject-ACK analog-value,3─────────────────────────
//! rusty   ──CreateObject analog-value {name, 19.5}, binary-value,30──▶ ◀── ACKs analog-value,4, binary-value,30
//! rusty   ──SubscribeCOV both──▶                                       Active_COV_Subscriptions lists both
//! our CLI ──DeleteObject binary-value,30──▶ ◀──SimpleACK               its subscription is gone, the other stays
//! bacpypes3 ──CreateObject multi-state-value {name, State_Text ×4, 4}──▶ ◀── multi-state-value,2
//! bacpypes3 ──DeleteObject──▶ ◀──SimpleACK; ReadProperty ──▶ ◀── object/unknown-object
//! ```

use crate::examples::on_a_free_port;
use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use std::process::Command;

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "trellis {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// What `trellis ARGS` printed on stderr, failing unless it failed.
fn cli_refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis");
    assert!(!out.status.success(), "trellis {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn third_party(stack: &str, port: u16, gateway: &Gateway) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/lifecycle_client.py");
    let out = Command::new(crate::peers::python())
        .arg(&script)
        .args(["--stack", stack, "--target", &format!("127.0.0.1:{port}"), "--port", &free_port().to_string()])
        .output()
        .expect("run lifecycle_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stack}: {stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gateway.log()
    );
    stdout.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn our_cli_rusty_bacnet_and_bacpypes3_create_and_delete_the_models_objects() {
    let _timing = crate::peers::shared_blocking();
    let scratch = Scratch::new("create-objects", "example");
    let (path, port) = on_a_free_port(&scratch, "create-objects.toml");
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let pcap = scratch.path("create-objects.pcap");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let address = format!("127.0.0.1:{port}");
    let device = "device,389001";

    // Our CLI: by type, with a name, a value and creation-only Units.
    let revision = cli(&["read", &address, device, "database-revision"]);
    let created = cli(&[
        "create",
        &address,
        "analog-value",
        "object-name=room-12-setpoint",
        "present-value=22.5",
        "units=enum:62",
    ]);
    assert_eq!(created.trim(), "analog-value,3", "the lowest free instance (1 and 2 are configured)");
    assert_eq!(cli(&["read", &address, "analog-value,3", "units"]).trim(), "degrees-celsius");
    assert_eq!(cli(&["read", &address, "analog-value,3", "present-value"]).trim(), "22.5 degrees-celsius");
    assert_eq!(
        cli(&["read", &address, "analog-value,3", "priority-array", "--index", "16"]).trim(),
        "22.5",
        "commandable"
    );
    assert!(cli(&["read", &address, device, "object-list"]).contains("analog-value,3"));
    assert_ne!(cli(&["read", &address, device, "database-revision"]), revision);
    let refused = cli_refused(&["create", &address, "analog-input"]);
    assert!(refused.contains("dynamic-creation-not-supported"), "not in create_objects: {refused}");
    let refused = cli_refused(&["create", &address, "accumulator"]);
    assert!(refused.contains("unsupported-object-type"), "no accumulator in this device: {refused}");
    let refused = cli_refused(&["delete", &address, "analog-value,99"]);
    assert!(refused.contains("unknown-object"), "{refused}");
    let refused = cli_refused(&["create", &address, "analog-value", "object-name=Zone Setpoint"]);
    assert!(refused.contains("duplicate-name (first failed initial value: 1)"), "{refused}");

    // rusty-bacnet: by type and by identifier, subscribing to both.
    let line = third_party("rusty", port, &gateway);
    // Error codes as rusty-bacnet prints them: 48 duplicate-name (class 2:
    // property), 23 object-deletion-not-permitted (class 1: object).
    for expected in [
        r#""acks": ["2,4", "5,30"]"#,
        r#""present_value": 19.5"#,
        r#""name": "rusty-setpoint""#,
        r#""duplicate_name": "BACnet error: class=2 code=48, first failed element 1""#,
        r#""delete_configured": "BACnet error: class=1 code=23""#,
    ] {
        assert!(line.contains(expected), "rusty-bacnet missing {expected}: {line}");
    }
    // Active_COV_Subscriptions as the CLI prints it: each monitored
    // object's identifier in hex (analog-value,4 00800004, binary-value,30 0140001e).
    let subscriptions = cli(&["read", &address, device, "active-cov-subscriptions"]);
    assert!(subscriptions.contains("00800004") && subscriptions.contains("0140001e"), "{subscriptions}");
    cli(&["delete", &address, "binary-value,30"]);
    let subscriptions = cli(&["read", &address, device, "active-cov-subscriptions"]);
    assert!(subscriptions.contains("00800004") && !subscriptions.contains("0140001e"), "{subscriptions}");
    assert!(!cli(&["read", &address, device, "object-list"]).contains("binary-value,30"));

    // bacpypes3: its own CreateObjectRequest, State_Text at creation.
    let line = third_party("bacpypes3", port, &gateway);
    for expected in [
        r#""created": "multi-state-value,2""#,
        r#""number_of_states": 4"#,
        r#""present_value": 4"#,
        r#""state_text": ["Off", "Low", "High", "Boost"]"#,
        r#""after_delete": "object: unknown-object""#,
    ] {
        assert!(line.contains(expected), "bacpypes3 missing {expected}: {line}");
    }
    drop(gateway);
    capture.finish(&[port], &["createObject", "deleteObject", "subscribeCOV"]);
}
