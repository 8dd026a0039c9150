//! BACnet Ethernet (Clause 7) on a real link: a Linux bridge inside a
//! network namespace the test makes (and removes), with veth ports for
//! the router's Ethernet port, two devices of ours and a station of raw
//! frames; the router's other port is B/IP on the namespace's loopback,
//! where the third-party clients are.
//!
//! ```text
//!  bacpypes3 127.0.0.3 ─┐                          ┌─ d1 02:00:00:00:75:01  device 7501 ┐
//!  rusty 127.0.0.4:P  ──┼─ B/IP network 1 ─ router ┤  r2 (router port, network 5)     ├ br0
//!  our CLI            ──┘    127.0.0.1:P           ├─ d2 02:00:00:00:75:02  device 7502 │
//!                                                  └─ v0 raw frames (golden capture)  ┘
//! ```
//!
//! Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW), which CI has.

use crate::gateway::Gateway;
use crate::netns::Namespaces;
use crate::scratch::Scratch;
use crate::tshark::Capture;
use std::path::Path;
use std::process::Stdio;

const PORT: &str = "47808";
const DEVICES: [(u32, &str, &str); 2] = [(7501, "d1", "020000007501"), (7502, "d2", "020000007502")];

/// The namespace with its bridge and four veth ports on it: `r2`, `d1`,
/// `d2` (with their fixed MACs) and `v0`.
fn segment(test: &str) -> Namespaces {
    let ns = Namespaces::create(test, &["r"]);
    ns.exec_ok("r", &["ip", "link", "add", "br0", "type", "bridge"]);
    ns.exec_ok("r", &["ip", "link", "set", "br0", "up"]);
    for (dev, mac) in [("r2", None), ("d1", Some("02:00:00:00:75:01")), ("d2", Some("02:00:00:00:75:02")), ("v0", None)]
    {
        let bridge_side = format!("b-{dev}");
        let mut add = vec!["ip", "link", "add", dev];
        if let Some(mac) = mac {
            add.extend(["address", mac]);
        }
        add.extend(["type", "veth", "peer", "name", &bridge_side]);
        ns.exec_ok("r", &add);
        ns.exec_ok("r", &["ip", "link", "set", &bridge_side, "master", "br0"]);
        ns.exec_ok("r", &["ip", "link", "set", &bridge_side, "up"]);
        ns.exec_ok("r", &["ip", "link", "set", dev, "up"]);
    }
    ns
}

/// `examples/NAME`: its port is 47808, which is free in the namespace.
fn example(name: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)).unwrap();
    assert!(text.contains("\"eth1\""), "{name} uses eth1");
    text
}

fn write(scratch: &Scratch, name: &str, text: &str) -> String {
    let path = scratch.path(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The router joins B/IP network 1 to Ethernet network 5: bacpypes3 and
/// rusty-bacnet on network 1 find, read, write and subscribe to our two
/// Ethernet devices through it; a station of raw frames replays
/// bacnet-stack's captured Who-Is (and a padded copy) on the segment and
/// hears both devices' I-Ams; the devices' Network Port objects say
/// Ethernet and their MACs. tshark dissects the segment's capture with no
/// malformed frame.
#[test]
fn third_party_clients_reach_ethernet_devices_through_the_router() {
    let _timing = crate::peers::shared_blocking();
    let ns = segment("ethernet");
    let scratch = Scratch::new("ethernet", "router");
    let router = write(
        &scratch,
        "router.toml",
        &(example("ethernet-router.toml").replace("\"eth1\"", "\"r2\"") + "\n[http]\nbind = \"off\"\n"),
    );
    let devices = Scratch::new("ethernet", "devices");
    let mut config = String::new();
    for (instance, dev, _) in DEVICES {
        config +=
            &format!("[[device]]\ninstance = {instance}\npassword = \"x\"\nethernet = {{ interface = \"{dev}\" }}\n\n");
    }
    let devices_config = write(&devices, "devices.toml", &(config + "[http]\nbind = \"off\"\n"));
    let pcap = scratch.path("ethernet.pcapng");
    let capture = Capture::with(ns.command("r", "tshark"), "br0", "llc", &pcap);
    let router = Gateway::start_in(ns.name("r"), &["run", "--config", &router], &scratch.0)
        .unwrap_or_else(|log| panic!("router exited:\n{log}"));
    let served = Gateway::start_in(ns.name("r"), &["run", "--config", &devices_config], &devices.0)
        .unwrap_or_else(|log| panic!("devices exited:\n{log}"));
    assert!(
        served.log().contains("BACnet Ethernet d1 (MAC 02:00:00:00:75:01)"),
        "the device says where it is:\n{}",
        served.log()
    );

    // The golden capture's frames, replayed by a station of raw frames.
    let vector =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../bacnet/tests/it/vectors/ethernet-bacnet-stack-whois-iam.pcapng");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/ethernet_vector_peer.py");
    let out = ns
        .command("r", crate::peers::python().to_str().unwrap())
        .arg(&script)
        .args(["--interface", "v0", "--pcapng", vector.to_str().unwrap(), "--devices", "7501,7502"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"step\": \"summary\", \"ok\": true"),
        "raw frames:\n{stdout}\n{}\ndevices:\n{}",
        String::from_utf8_lossy(&out.stderr),
        served.log()
    );

    // bacpypes3 (route-aware addresses) and rusty-bacnet (a global Who-Is
    // from the router's port on another address) through the router.
    let routed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/routed_client.py");
    let macs = DEVICES.map(|(_, _, mac)| mac).join(",");
    for (stack, local) in [("bacpypes3", "127.0.0.3:47950".to_string()), ("rusty", format!("127.0.0.4:{PORT}"))] {
        let out = ns
            .command("r", crate::peers::python().to_str().unwrap())
            .arg(&routed)
            .args(["--stack", stack, "--router", &format!("127.0.0.1:{PORT}"), "--network", "5"])
            .args(["--devices", "7501,7502", "--macs", &macs, "--local", &local])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("\"step\": \"summary\", \"ok\": true"),
            "{stack} through the router:\n{stdout}\n{}\nrouter:\n{}\ndevices:\n{}",
            String::from_utf8_lossy(&out.stderr),
            router.log(),
            served.log()
        );
    }

    // Our CLI reads each device's Network Port: Ethernet (0), its MAC.
    for (instance, _, mac) in DEVICES {
        let through = format!("127.0.0.1:{PORT}@5:{mac}");
        let read = |property: &str| ns.trellis("r", &["--port", "0", "read", &through, "network-port,1", property]);
        let (ok, out) = read("network-type");
        assert!(ok && out.trim() == "0", "device {instance}'s network-type (ethernet is 0):\n{out}");
        let (ok, out) = read("mac-address");
        assert!(
            ok && out.to_lowercase().replace([':', ' '], "").contains(mac),
            "device {instance}'s mac-address:\n{out}"
        );
    }
    drop(served);
    drop(router);
    capture.finish(&[], &["who-Is", "i-Am", "readProperty", "writeProperty", "subscribeCOV", "DSAP: BACnet"]);
}

/// Our CLI talks BACnet Ethernet itself (`--ethernet IF`): a Who-Is on
/// the segment finds both devices by MAC, a read by `eth:MAC` answers.
/// Without CAP_NET_RAW the gateway refuses to start and says why; an
/// interface that is not there is named.
#[test]
fn our_client_on_ethernet_and_the_errors_an_operator_sees() {
    let _timing = crate::peers::shared_blocking();
    let ns = segment("ethclient");
    let scratch = Scratch::new("ethernet", "client");
    // The example's device (7501) on d1, a second one on d2.
    let config = example("ethernet.toml").replace("\"eth1\"", "\"d1\"")
        + "\n[[device]]\ninstance = 7502\nethernet = { interface = \"d2\" }\n\n[http]\nbind = \"off\"\n";
    let config = write(&scratch, "devices.toml", &config);
    let served = Gateway::start_in(ns.name("r"), &["run", "--config", &config], &scratch.0)
        .unwrap_or_else(|log| panic!("devices exited:\n{log}"));
    let (ok, out) = ns.trellis("r", &["--ethernet", "v0", "whois", "--wait", "2"]);
    assert!(
        ok && out.contains("eth:020000007501") && out.contains("eth:020000007502"),
        "Who-Is on the segment:\n{out}\n{}",
        served.log()
    );
    let (ok, out) =
        ns.trellis("r", &["--ethernet", "v0", "read", "eth:02:00:00:00:75:02", "device,7502", "object-name"]);
    assert!(ok, "read by MAC:\n{out}");
    drop(served);

    // Without CAP_NET_RAW (dropped from the bounding set, so not regained
    // on exec even as root): a clear refusal, naming the capability.
    let other = Scratch::new("ethernet", "no-raw");
    let out = ns
        .command("r", "setpriv")
        .args(["--bounding-set", "-net_raw", "--", env!("CARGO_BIN_EXE_trellis"), "run", "--config", &config])
        .env("TRELLIS_ADMIN_SOCKET", Gateway::socket_in(&other.0))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("CAP_NET_RAW") && text.contains("\"d1\""),
        "without CAP_NET_RAW:\n{text}"
    );
    let missing = write(
        &other,
        "missing.toml",
        "[[device]]\ninstance = 7509\nethernet = { interface = \"nosuch0\" }\n[http]\nbind = \"off\"\n",
    );
    let out = ns
        .command("r", env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--config", &missing])
        .env("TRELLIS_ADMIN_SOCKET", Gateway::socket_in(&other.0))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("no network interface named \"nosuch0\""),
        "missing interface:\n{text}"
    );
}
