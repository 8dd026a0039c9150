//! Every configuration under `examples/` parses, and each one runs: a
//! `trellis run` of it (moved to a free port) serves, and the bounds it sets
//! are the ones a peer meets.

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::enums::{ErrorClass, ErrorCode};
use bacnet::{ObjectIdentifier, ObjectType};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use trellis::client::{Client, ClientConfig, CovSubscription, DeviceAddress};
use trellis::config::Config;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// `examples/NAME` with its port replaced by a free one, in `scratch`.
pub(crate) fn on_a_free_port(scratch: &Scratch, name: &str) -> (PathBuf, u16) {
    let text = std::fs::read_to_string(examples().join(name)).unwrap();
    let port = free_port();
    let moved = text.replace("port = 47808", &format!("port = {port}"));
    assert_ne!(moved, text, "{name} names port 47808");
    let path = scratch.path(name);
    std::fs::write(&path, moved).unwrap();
    (path, port)
}

#[test]
fn every_example_configuration_parses_and_its_limits_resolve() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let config = Config::load(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            for d in &config.devices {
                d.limits.resolve().unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                for c in &d.notification_classes {
                    c.resolve().unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                }
                for s in &d.schedules {
                    s.resolve().unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                }
                for c in &d.calendars {
                    c.resolve().unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                }
            }
            seen += 1;
        }
    }
    assert!(seen >= 1, "no example configuration found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hardened_gateway_example_serves_and_bounds_cov_lifetimes() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("examples", "hardened");
    let (config, port) = on_a_free_port(&scratch, "hardened-gateway.toml");
    let gateway = Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let device = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let client =
        Client::bind(ClientConfig { bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0), ..Default::default() })
            .await
            .unwrap();
    let zone = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    // max_cov_lifetime = 86400: a day is accepted, a day and a second is not.
    client.subscribe_cov(&device, &CovSubscription::new(1, zone).lifetime(86_400)).await.unwrap();
    let refused = client.subscribe_cov(&device, &CovSubscription::new(2, zone).lifetime(86_401)).await.unwrap_err();
    assert_eq!(refused.bacnet_error(), Some((ErrorClass::SERVICES, ErrorCode::PARAMETER_OUT_OF_RANGE)));
    // A password is set: no warning about its absence.
    assert!(!gateway.log().contains("password"), "{}", gateway.log());
}
