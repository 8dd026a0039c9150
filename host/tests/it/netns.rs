//! Real subnets instead of loopback: network namespaces and veth pairs the
//! test creates (and removes on drop), so that broadcasts are subnet
//! broadcasts on an Ethernet-like link and IPv6 multicast is real
//! multicast — what loopback cannot show.
//!
//! ```text
//!  ns A (client)               ns R (router)                     ns B: b0 10.71.2.2/24 (bacpypes3 device 3102)
//!  a0 10.71.1.2/24 ── veth ── r1 10.71.1.1/24 │ r2 10.71.2.1/24 ── veth ──┘
//!     fd71:1::2/64               fd71:1::1/64 │ r3 10.71.3.1/24 ── veth ── ns C: c0 10.71.3.2/24 (trellis device 7103)
//!                  network 1 ◀────────── router ──────────▶ networks 2 and 3
//! ```
//!
//! (Each device has a subnet of its own: bacpypes3 binds its broadcast
//! socket without SO_REUSEADDR, so it cannot share one with another
//! station on the same host.)
//!
//! Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), which the CI machine has;
//! without it the tests fail saying so. Never touches an address outside
//! the namespaces it made.

use crate::gateway::Gateway;
use crate::scratch::Scratch;
use crate::tshark::Capture;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Network namespaces made for one test, deleted (with their veths) on drop.
pub(crate) struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    /// One namespace per tag, named after the test process, the test and
    /// the tag, each with `lo` up.
    pub(crate) fn create(test: &str, tags: &[&str]) -> Namespaces {
        let mut made = Namespaces { names: Vec::new() };
        for tag in tags {
            let name = format!("trellis-{}-{test}-{tag}", std::process::id());
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
            ip(&["netns", "add", &name]);
            made.names.push(name.clone());
            made.exec_ok(tag, &["ip", "link", "set", "lo", "up"]);
        }
        made
    }

    pub(crate) fn name(&self, tag: &str) -> &str {
        self.names.iter().find(|n| n.ends_with(&format!("-{tag}"))).expect("a namespace of this test")
    }

    /// A veth pair: `left` in namespace `a`, `right` in namespace `b`, both up.
    pub(crate) fn link(&self, (a, left): (&str, &str), (b, right): (&str, &str)) {
        let (na, nb) = (self.name(a), self.name(b));
        ip(&["link", "add", left, "netns", na, "type", "veth", "peer", "name", right, "netns", nb]);
        self.exec_ok(a, &["ip", "link", "set", left, "up"]);
        self.exec_ok(b, &["ip", "link", "set", right, "up"]);
    }

    /// Add an address (IPv6 without duplicate address detection, usable at once).
    pub(crate) fn address(&self, tag: &str, dev: &str, cidr: &str) {
        let mut args = vec!["ip", "addr", "add", cidr, "dev", dev];
        if cidr.contains(':') {
            args.push("nodad");
        }
        self.exec_ok(tag, &args);
    }

    pub(crate) fn command(&self, tag: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.name(tag), program]);
        c
    }

    pub(crate) fn exec(&self, tag: &str, argv: &[&str]) -> Output {
        self.command(tag, argv[0]).args(&argv[1..]).stdin(Stdio::null()).output().expect("run ip netns exec")
    }

    pub(crate) fn exec_ok(&self, tag: &str, argv: &[&str]) {
        let o = self.exec(tag, argv);
        assert!(o.status.success(), "{argv:?} in {tag}: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// `trellis ARGS` (the CLI) inside namespace `tag`: stdout and stderr together.
    pub(crate) fn trellis(&self, tag: &str, args: &[&str]) -> (bool, String) {
        let o = self.command(tag, env!("CARGO_BIN_EXE_trellis")).args(args).stdin(Stdio::null()).output().unwrap();
        (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("iproute2's ip is installed");
    assert!(
        o.status.success(),
        "ip {args:?} failed (these tests need root: CAP_NET_ADMIN and CAP_SYS_ADMIN): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A process in a namespace, killed on drop (by PID: `ip netns exec`
/// execs it).
pub(crate) struct InNamespace(Child);

impl Drop for InNamespace {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A peer's server script (`host/tests/peers/SCRIPT`) inside a namespace,
/// ready once it says READY (within 60 s).
pub(crate) fn peer_in(ns: &Namespaces, tag: &str, script: &str, args: &[&str]) -> InNamespace {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(script);
    let python = crate::peers::python();
    let mut child = ns
        .command(tag, python.to_str().unwrap())
        .arg(&script)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the peer");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.trim() == "READY" {
                let _ = tx.send(());
            }
        }
    });
    let child = InNamespace(child);
    rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("{} ready in its namespace", script.display()));
    child
}

/// tshark capturing on `dev` inside namespace `tag`.
pub(crate) fn capture(ns: &Namespaces, tag: &str, dev: &str, pcap: &Path) -> Capture {
    Capture::with(ns.command(tag, "tshark"), dev, "udp", pcap)
}

/// Three subnets, three BACnet/IP networks, one router between them: a
/// client's global Who-Is (DNET 65535) goes out as a subnet broadcast on networks 2
/// and 3, the device on each (bacpypes3's, ours) answers, their I-Ams come
/// back through the router with SNET 2 and 3, and reads by DNET/DADR reach
/// each one. Every link is captured and dissects cleanly.
///
/// ```text
/// client ──Who-Is DNET 65535 (10.71.1.255)──▶ router ──Who-Is SNET 1 (10.71.2.255, 10.71.3.255)──▶ 3102, 7103
/// client ◀──I-Am SNET 2|3 (10.71.1.255)── router ◀──I-Am (global)────────────────────── 3102, 7103
/// client ──RP DNET 3 DADR 0a470302bac0──▶ router ──RP SNET 1──▶ 7103 ──ACK──▶ router ──▶ client
/// ```
#[test]
fn the_router_joins_two_real_subnets_and_their_broadcasts() {
    let _timing = crate::peers::shared_blocking();
    let ns = Namespaces::create("subnets", &["a", "r", "b", "c"]);
    ns.link(("a", "a0"), ("r", "r1"));
    ns.link(("r", "r2"), ("b", "b0"));
    ns.link(("r", "r3"), ("c", "c0"));
    ns.address("a", "a0", "10.71.1.2/24");
    ns.address("r", "r1", "10.71.1.1/24");
    ns.address("r", "r2", "10.71.2.1/24");
    ns.address("b", "b0", "10.71.2.2/24");
    ns.address("r", "r3", "10.71.3.1/24");
    ns.address("c", "c0", "10.71.3.2/24");

    let scratch = Scratch::new("netns", "router");
    let router = scratch.path("router.toml");
    std::fs::write(
        &router,
        "[[router.port]]\nbind = \"10.71.1.1/24\"\nport = 47808\nnetwork = 1\n\n\
         [[router.port]]\nbind = \"10.71.2.1/24\"\nport = 47808\nnetwork = 2\n\n\
         [[router.port]]\nbind = \"10.71.3.1/24\"\nport = 47808\nnetwork = 3\n\n[http]\nbind = \"off\"\n",
    )
    .unwrap();
    let devices = Scratch::new("netns", "devices");
    let device = devices.path("device.toml");
    std::fs::write(
        &device,
        "[[device]]\nbind = \"10.71.3.2/24\"\nport = 47808\ninstance = 7103\npassword = \"x\"\n\n\
         [http]\nbind = \"off\"\n",
    )
    .unwrap();
    let pcaps: Vec<_> = (1..=3).map(|n| scratch.path(&format!("network-{n}.pcapng"))).collect();
    let captures: Vec<_> =
        ["r1", "r2", "r3"].iter().zip(&pcaps).map(|(dev, pcap)| capture(&ns, "r", dev, pcap)).collect();
    let router = Gateway::start_in(ns.name("r"), &["run", "--config", router.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("router exited:\n{log}"));
    let device = Gateway::start_in(ns.name("c"), &["run", "--config", device.to_str().unwrap()], &devices.0)
        .unwrap_or_else(|log| panic!("device exited:\n{log}"));
    let bacpypes3 = peer_in(
        &ns,
        "b",
        "bacpypes3_server.py",
        &["--port", "47808", "--device-id", "3102", "--address", "10.71.2.2/24"],
    );

    let client = ["--bind", "10.71.1.2/24", "--port", "47808"];
    let (ok, out) = ns.trellis("a", &[&client[..], &["whois", "--global", "--wait", "3"]].concat());
    assert!(
        ok && out.contains("7103") && out.contains("3102"),
        "Who-Is across the router:\n{out}\nrouter:\n{}\ndevice:\n{}",
        router.log(),
        device.log()
    );
    for (instance, net, mac) in [(7103, 3, "0a470302bac0"), (3102, 2, "0a470202bac0")] {
        let through = format!("10.71.1.1:47808@{net}:{mac}");
        let (ok, out) = ns.trellis(
            "a",
            &[&client[..], &["read", &through, &format!("device,{instance}"), "object-identifier"]].concat(),
        );
        assert!(
            ok && out.contains(&instance.to_string()),
            "read {instance} through the router:\n{out}\n{}",
            router.log()
        );
    }
    drop(bacpypes3);
    drop((device, router));
    let mut captures = captures.into_iter();
    let next = |c: &mut std::vec::IntoIter<Capture>| c.next().expect("three captures");
    next(&mut captures)
        .finish(&[], &["who-Is", "i-Am", "readProperty", "Source Network Address: 2", "Source Network Address: 3"]);
    next(&mut captures).finish(&[], &["who-Is", "i-Am", "readProperty", "Source Network Address: 1"]);
    next(&mut captures).finish(&[], &["who-Is", "i-Am", "readProperty", "Source Network Address: 1"]);
}

/// BACnet/IPv6 on a real link: the client's Who-Is goes to the link-local
/// multicast group FF02::BAC0 (not to a known peer, as on loopback), the
/// device on the other end has joined it and answers; the client then
/// reads by the VMAC it learned; then the same Who-Is on the site-local
/// group FF05::BAC0 to a device configured for it. The capture dissects
/// cleanly.
#[test]
fn ipv6_multicast_reaches_a_device_on_a_real_link() {
    let _timing = crate::peers::shared_blocking();
    let ns = Namespaces::create("multicast", &["a", "r"]);
    ns.link(("a", "a0"), ("r", "r1"));
    ns.address("a", "a0", "fd71:1::2/64");
    ns.address("r", "r1", "fd71:1::1/64");

    let scratch = Scratch::new("netns", "ipv6");
    let config = scratch.path("ipv6.toml");
    std::fs::write(
        &config,
        "[[device]]\ninstance = 7201\npassword = \"x\"\n\
         bip6 = { bind = \"fd71:1::1\", port = 47808 }\n\n[http]\nbind = \"off\"\n",
    )
    .unwrap();
    let pcap = scratch.path("ipv6.pcapng");
    let cap = capture(&ns, "r", "r1", &pcap);
    let device = Gateway::start_in(ns.name("r"), &["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("device exited:\n{log}"));
    let client = ["--ipv6", "fd71:1::2", "--port", "47808"];
    let (ok, out) = ns.trellis("a", &[&client[..], &["whois", "--wait", "3"]].concat());
    assert!(ok && out.contains("7201"), "Who-Is to FF02::BAC0:\n{out}\ndevice:\n{}", device.log());
    let vmac = format!("bip6:{:06x}", 7201);
    let (ok, out) = ns.trellis("a", &[&client[..], &["read", &vmac, "device,7201", "object-name"]].concat());
    assert!(ok, "read by VMAC after the multicast Who-Is:\n{out}\n{}", device.log());
    // Its Network Port says where it is: the address's /64 and the group.
    let (ok, out) = ns.trellis("a", &[&client[..], &["read", &vmac, "network-port,1", "ipv6-prefix-length"]].concat());
    assert!(ok && out.lines().any(|l| l.trim() == "64"), "ipv6-prefix-length:\n{out}");
    let (ok, out) =
        ns.trellis("a", &[&client[..], &["read", &vmac, "network-port,1", "bacnet-ipv6-multicast-address"]].concat());
    let hex = out.to_lowercase().replace([' ', ':', '-'], "");
    assert!(ok && hex.contains("ff02000000000000000000000000bac0"), "bacnet-ipv6-multicast-address:\n{out}");
    drop(device);

    // The same with the site-local group FF05::BAC0 on both sides.
    let config = scratch.path("ipv6-site.toml");
    std::fs::write(
        &config,
        "[[device]]\ninstance = 7202\npassword = \"x\"\n\
         bip6 = { bind = \"fd71:1::1\", port = 47808, site_group = true }\n\n[http]\nbind = \"off\"\n",
    )
    .unwrap();
    let device = Gateway::start_in(ns.name("r"), &["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("device exited:\n{log}"));
    let site = [&client[..], &["--ipv6-site-group"]].concat();
    let (ok, out) = ns.trellis("a", &[&site[..], &["whois", "--wait", "3"]].concat());
    assert!(ok && out.contains("7202"), "Who-Is to FF05::BAC0:\n{out}\ndevice:\n{}", device.log());
    drop(device);
    cap.finish(&[], &["ff02::bac0", "ff05::bac0", "who-Is", "i-Am", "readProperty"]);
}

/// rusty-bacnet's BACnet/IPv6 server on a real link behind our router's
/// IPv6 port: our B/IP client reads it through the router, which finds
/// the unknown VMAC by Address-Resolution to FF02::BAC0 (the first request
/// goes unanswered while it asks; the client's retry gets through).
///
/// ```text
/// client (B/IP, ns R) ──RP DNET 2 DADR 0010ce──▶ router ──Address-Resolution (ff02::bac0)──▶ rusty (ns A)
///                                                router ◀──Address-Resolution-ACK──────────── rusty
/// client ──RP (retry)──▶ router ──Original-Unicast-NPDU──▶ rusty ──ACK──▶ router ──SNET 2──▶ client
/// ```
#[test]
fn our_client_reaches_rusty_bacnets_ipv6_device_through_the_router() {
    let _timing = crate::peers::shared_blocking();
    let ns = Namespaces::create("router6", &["a", "r"]);
    ns.link(("a", "a0"), ("r", "r1"));
    ns.address("a", "a0", "fd71:1::2/64");
    ns.address("r", "r1", "fd71:1::1/64");
    let rusty =
        peer_in(&ns, "a", "rusty_server.py", &["--port", "47808", "--device-id", "4302", "--ipv6", "fd71:1::2"]);
    let scratch = Scratch::new("netns", "router6");
    let config = scratch.path("router6.toml");
    std::fs::write(
        &config,
        "[[router.port]]\nbind = \"127.0.0.1\"\nport = 47808\nnetwork = 1\n\n\
         [[router.port]]\nnetwork = 2\nbip6 = { bind = \"fd71:1::1\", port = 47808 }\n\n[http]\nbind = \"off\"\n",
    )
    .unwrap();
    let pcap = scratch.path("ipv6-router.pcapng");
    let cap = capture(&ns, "r", "r1", &pcap);
    let router = Gateway::start_in(ns.name("r"), &["run", "--config", config.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("router exited:\n{log}"));
    let (ok, out) = ns.trellis(
        "r",
        &[
            "--port",
            "0",
            "--timeout-ms",
            "1000",
            "read",
            "127.0.0.1:47808@2:0010ce",
            "device,4302",
            "object-identifier",
        ],
    );
    assert!(ok && out.contains("4302"), "read through the router:\n{out}\nrouter:\n{}", router.log());
    drop(router);
    drop(rusty);
    cap.finish(&[], &["ff02::bac0", "Address-Resolution", "readProperty"]);
}
