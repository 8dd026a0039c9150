//! A device served on BACnet/IPv6 (`examples/ipv6.toml`) and the
//! rusty-bacnet wheel's IPv6 client reading it on `::1`:
//!
//! ```text
//! client ──Virtual-Address-Resolution──▶ [::1]:P ──ACK (VMAC 05ef89)──▶ client
//! client ──ReadProperty to VMAC 05ef89──▶ device ──ComplexACK──▶ client (VMAC learned from the request)
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use std::path::Path;

#[test]
fn the_rusty_bacnet_ipv6_client_reads_the_device_served_on_ipv6() {
    let scratch = Scratch::new("bip6", "example");
    let port = free_port();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ipv6.toml")).unwrap();
    let config = text.replace("port = 47808", &format!("port = {port}"));
    let path = scratch.path("ipv6.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    assert!(gateway.log().contains("BACnet/IPv6 [::1]"), "{}", gateway.log());
    let script = format!(
        "import asyncio\n\
         from rusty_bacnet import BACnetClient, ObjectIdentifier, ObjectType, PropertyIdentifier, PropertyValue\n\
         async def main():\n\
         \x20   async with BACnetClient(transport='ipv6', ipv6_interface='::1', port={client}, ipv6_device_instance=4321) as c:\n\
         \x20       vmac = await c.resolve_vmac('[::1]:{port}')\n\
         \x20       print('vmac', vmac)\n\
         \x20       print(repr(await c.read_property(vmac, ObjectIdentifier(ObjectType.DEVICE, 389001), PropertyIdentifier.OBJECT_IDENTIFIER)))\n\
         \x20       await c.write_property(vmac, ObjectIdentifier(ObjectType.ANALOG_VALUE, 1), PropertyIdentifier.PRESENT_VALUE, PropertyValue.real(24.5), priority=8)\n\
         \x20       print(repr(await c.read_property(vmac, ObjectIdentifier(ObjectType.ANALOG_VALUE, 1), PropertyIdentifier.PRESENT_VALUE)))\n\
         asyncio.run(main())\n",
        client = free_port()
    );
    let output = std::process::Command::new(crate::peers::python()).args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success()
            && stdout.contains("0x05EF89")
            && stdout.contains("object_identifier(DEVICE, 389001)")
            && stdout.contains("real(24.5)"),
        "{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    drop(gateway);
}

/// Our CLI over BACnet/IPv6 on `::1`: the station's VMAC resolved first
/// (loopback has no multicast), then Who-Is, WriteProperty and ReadProperty
/// to `bip6:VMAC`.
#[test]
fn the_cli_reads_and_writes_the_device_over_ipv6() {
    let scratch = Scratch::new("bip6", "cli");
    let port = free_port();
    let config =
        format!("[[device]]\ninstance = 389062\npassword = \"x\"\nbip6 = {{ bind = \"::1\", port = {port} }}\n");
    let path = scratch.path("ipv6.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let peer = format!("[::1]:{port}");
    let vmac = "bip6:05efc6"; // 389062
    let cli = |args: &[&str]| {
        let mut all = vec!["--ipv6", "::1", "--ipv6-peer", peer.as_str()];
        all.extend_from_slice(args);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(&all).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{all:?}: {text}\ngateway:\n{}", gateway.log());
        text
    };
    let whois = cli(&["whois", "--target", vmac, "--wait", "1"]);
    assert!(whois.contains("389062") && whois.contains(&format!("{peer} is {vmac}")), "{whois}");
    cli(&["write", vmac, "analog-value,1", "present-value", "22.5", "--priority", "8"]);
    let read = cli(&["read", vmac, "analog-value,1", "present-value"]);
    assert!(read.contains("22.5"), "{read}");
    drop(gateway);
}

/// A BACnet/IPv6 port on the router: our CLI on `::1` reaches a device on
/// a virtual network behind it (`bip6:ROUTER@3:MAC`), and a B/IP client on
/// the router's other port reaches the same device.
#[test]
fn the_router_routes_between_ipv6_and_the_rest() {
    let scratch = Scratch::new("bip6", "router");
    let (ip4, ip6) = (free_port(), free_port());
    let config = format!(
        "[[router.port]]\nport = {ip4}\nnetwork = 1\n\n\
         [[router.port]]\nnetwork = 2\nbip6 = {{ bind = \"::1\", port = {ip6} }}\n\n\
         [[device]]\nvirtual_network = 3\ninstance = 300\npassword = \"x\"\n"
    );
    let path = scratch.path("router6.toml");
    std::fs::write(&path, config).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    assert!(gateway.log().contains("VMAC 3f0002"), "{}", gateway.log());
    let peer = format!("[::1]:{ip6}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args([
            "--ipv6",
            "::1",
            "--ipv6-peer",
            &peer,
            "read",
            "bip6:3f0002@3:00012c",
            "device,300",
            "object-identifier",
        ])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && text.contains("device,300"), "{text}\ngateway:\n{}", gateway.log());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["--port", "0", "read", &format!("127.0.0.1:{ip4}@3:00012c"), "device,300", "object-identifier"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && text.contains("device,300"), "{text}");
    drop(gateway);
}

/// Two IPv6 BBMDs, peers (`examples/ipv6-bbmd.toml`), and our CLI as a
/// foreign device of the second:
///
/// ```text
/// CLI ──Register-Foreign-Device──▶ BBMD B ──Result: success──▶ CLI
/// CLI ──Distribute-Broadcast-To-Network (Who-Is)──▶ BBMD B ──up──▶ device 602 ──I-Am──▶ B ──Forwarded-NPDU──▶ CLI
///                                                  └──Forwarded-NPDU──▶ BBMD A ──up──▶ device 601 ──I-Am──▶ A ──▶ B ──▶ CLI
/// ```
#[test]
fn a_foreign_device_finds_the_devices_behind_two_ipv6_bbmds_and_a_stranger_is_refused() {
    let scratch = Scratch::new("bip6", "bbmd");
    let (a, b) = (free_port(), free_port());
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ipv6-bbmd.toml"))
        .unwrap()
        .replace("47808", &a.to_string())
        .replace("47809", &b.to_string());
    let path = scratch.path("ipv6-bbmd.toml");
    std::fs::write(&path, text).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    assert!(gateway.log().contains("BACnet/IPv6 BBMD on"), "{}", gateway.log());
    let cli = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        (o.status.success(), text)
    };
    let bbmd = format!("[::1]:{b}");
    let (ok, found) = cli(&["--ipv6", "::1", "--port", "0", "--bbmd6", &bbmd, "whois", "--wait", "2"]);
    assert!(ok, "{found}\ngateway:\n{}", gateway.log());
    assert!(
        found.contains("bip6:000259") && found.contains("bip6:00025a"),
        "both devices (601, 602), one through the peer BBMD: {found}"
    );
    drop(gateway);

    // The same BBMDs accepting foreign devices from elsewhere only.
    let text = std::fs::read_to_string(&path).unwrap().replace("::1/128", "2001:db8::/32");
    std::fs::write(&path, text).unwrap();
    let gateway = Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"));
    let (ok, said) = cli(&["--ipv6", "::1", "--port", "0", "--bbmd6", &bbmd, "whois", "--wait", "1"]);
    assert!(!ok && said.contains("refused the foreign-device registration"), "{said}");
    drop(gateway);
}

/// Our CLI as a client of rusty-bacnet's BACnet/IPv6 server on `::1`:
/// its VMAC (its device instance) resolved by Virtual-Address-Resolution,
/// then Who-Is, ReadProperty and WriteProperty to it.
#[test]
fn the_cli_reads_and_writes_rusty_bacnets_ipv6_server() {
    let rusty = crate::peers::Peer::start_with(crate::peers::Kind::RustyBacnet, 4302, &["--ipv6", "::1"]);
    let peer = format!("[::1]:{}", rusty.address.ip().unwrap().port());
    let vmac = "bip6:0010ce"; // 4302
    let cli = |args: &[&str]| {
        let mut all = vec!["--ipv6", "::1", "--port", "0", "--ipv6-peer", peer.as_str()];
        all.extend_from_slice(args);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(&all).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{all:?}: {text}");
        text
    };
    let whois = cli(&["whois", "--target", vmac, "--wait", "1"]);
    assert!(whois.contains("4302") && whois.contains(&format!("{peer} is {vmac}")), "{whois}");
    cli(&["write", vmac, "analog-value,1", "present-value", "19.5", "--priority", "8"]);
    let read = cli(&["read", vmac, "analog-value,1", "present-value"]);
    assert!(read.contains("19.5"), "{read}");
    drop(rusty);
}
