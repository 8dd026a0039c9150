//! The BBMD (Annex J) of a served device's port, over real UDP: a foreign
//! device registers (only from an allowed network), its
//! Distribute-Broadcast-To-Network reaches the device, the tables read
//! back, the BDT cannot be written; and the rusty-bacnet wheel as a
//! foreign device discovers the device through it.
//!
//! ```text
//! foreign device ──Register-Foreign-Device (TTL 60)──▶ BBMD :P ──BVLC-Result 0──▶
//! foreign device ──Distribute-Broadcast-To-Network (Who-Is)──▶ BBMD ──▶ device ──I-Am──▶ foreign device
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::bvll::Bvll;
use bacnet::enums::BvlcResultCode;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::time::Duration;

fn start(scratch: &Scratch, config: &str) -> Gateway {
    let path = scratch.path("bbmd.toml");
    std::fs::write(&path, config).unwrap();
    Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"))
}

fn socket(ip: [u8; 4]) -> UdpSocket {
    let s = UdpSocket::bind((Ipv4Addr::from(ip), 0)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(1000))).unwrap();
    s
}

/// Send one BVLL message to the BBMD and return the first answer.
fn ask(s: &UdpSocket, bbmd: u16, msg: Bvll<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    msg.encode(&mut out).unwrap();
    s.send_to(&out, (Ipv4Addr::LOCALHOST, bbmd)).unwrap();
    let mut buf = [0u8; 1500];
    let n = s.recv(&mut buf).expect("an answer from the BBMD");
    buf[..n].to_vec()
}

fn result(answer: &[u8]) -> BvlcResultCode {
    match Bvll::decode(answer) {
        Ok(Bvll::Result(code)) => code,
        other => panic!("not a BVLC-Result: {other:?}"),
    }
}

#[test]
fn a_foreign_device_registers_and_its_broadcast_reaches_the_device() {
    let scratch = Scratch::new("bbmd", "example");
    let port = free_port();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bbmd.toml")).unwrap();
    // Only 127.0.0.3 may register in this run.
    let config = text
        .replace("port = 47808", &format!("port = {port}"))
        .replace("foreign_devices = [\"127.0.0.0/8\"]", "foreign_devices = [\"127.0.0.3/32\"]");
    let gateway = start(&scratch, &config);
    assert!(gateway.log().contains("BBMD on 127.0.0.1"), "{}", gateway.log());

    let stranger = socket([127, 0, 0, 4]);
    let refused = ask(&stranger, port, Bvll::RegisterForeignDevice { ttl: 60 });
    assert_eq!(result(&refused), BvlcResultCode::REGISTER_FOREIGN_DEVICE_NAK, "not from an allowed network");

    let fd = socket([127, 0, 0, 3]);
    assert_eq!(result(&ask(&fd, port, Bvll::RegisterForeignDevice { ttl: 60 })), BvlcResultCode::SUCCESSFUL_COMPLETION);
    let table = ask(&fd, port, Bvll::ReadForeignDeviceTable);
    let Ok(Bvll::ReadForeignDeviceTableAck(t)) = Bvll::decode(&table) else { panic!("{table:02x?}") };
    let entries: Vec<_> = t.fdt_entries().collect();
    let me = match fd.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        _ => unreachable!(),
    };
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].address, entries[0].ttl), (me, 60));
    assert!((60..=90).contains(&entries[0].remaining), "TTL plus the 30 s grace: {}", entries[0].remaining);

    let mut bdt = Vec::new();
    bacnet::bvll::encode_bdt(&[], &mut bdt);
    let write = Bvll::WriteBroadcastDistributionTable(bacnet::bvll::Table::from_bytes(&bdt, 0).unwrap());
    assert_eq!(result(&ask(&fd, port, write)), BvlcResultCode::WRITE_BROADCAST_DISTRIBUTION_TABLE_NAK);
    let table = ask(&fd, port, Bvll::ReadBroadcastDistributionTable);
    let Ok(Bvll::ReadBroadcastDistributionTableAck(t)) = Bvll::decode(&table) else { panic!("{table:02x?}") };
    let peers: Vec<SocketAddrV4> = t.bdt_entries().map(|e| e.address).collect();
    assert_eq!(peers, [SocketAddrV4::new(Ipv4Addr::LOCALHOST, port), "127.0.0.2:47808".parse().unwrap()]);

    // The foreign device's Who-Is, distributed: the device answers it.
    let who_is = [0x01, 0x00, 0x10, 0x08];
    let answer = ask(&fd, port, Bvll::DistributeBroadcastToNetwork(&who_is));
    let npdu = Bvll::decode(&answer).ok().and_then(|b| b.npdu().map(<[u8]>::to_vec)).expect("an NPDU");
    assert_eq!(&npdu[2..4], &[0x10, 0x00], "an I-Am: {answer:02x?}");
    // A station that is not registered is refused.
    assert_eq!(
        result(&ask(&stranger, port, Bvll::DistributeBroadcastToNetwork(&who_is))),
        BvlcResultCode::DISTRIBUTE_BROADCAST_TO_NETWORK_NAK
    );
    drop(gateway);
}

/// rusty-bacnet's client registers with our BBMD as a foreign device and
/// finds the device with a Who-Is sent through it. (It binds its own
/// address, `share_port_by_address`: bound to 0.0.0.0 it sends from
/// 127.0.0.1 and drops what comes back there.)
#[test]
fn the_rusty_bacnet_client_as_a_foreign_device_discovers_the_device() {
    let scratch = Scratch::new("bbmd", "rusty");
    let port = free_port();
    let config = format!(
        "[[device]]\nport = {port}\ninstance = 389077\npassword = \"x\"\n\
         bbmd = {{ foreign_devices = [\"127.0.0.0/8\"] }}\n"
    );
    let gateway = start(&scratch, &config);
    let script = format!(
        "import asyncio\n\
         from rusty_bacnet import BACnetClient, ForeignDevice\n\
         async def main():\n\
         \x20   async with BACnetClient(interface='127.0.0.5', port={client}, broadcast_address='127.255.255.255', \
         foreign_device=ForeignDevice('127.0.0.1:{port}', ttl=60), share_port_by_address=True) as c:\n\
         \x20       found = await c.discover(timeout_ms=3000)\n\
         \x20       print(sorted(d.object_identifier.instance for d in found))\n\
         asyncio.run(main())\n",
        client = free_port()
    );
    let output = std::process::Command::new(crate::peers::python()).args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("389077"),
        "{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    drop(gateway);
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_trellis")).args(args).output().expect("run trellis")
}

/// `trellis --bbmd IP:PORT whois`: our CLI registers as a foreign device and
/// its Who-Is reaches the device through the BBMD; a BBMD that does not
/// accept it is a clear error.
#[test]
fn the_cli_as_a_foreign_device_finds_the_device_and_a_refusal_is_said() {
    let scratch = Scratch::new("bbmd", "cli");
    let port = free_port();
    let config = format!(
        "[[device]]\nport = {port}\ninstance = 389088\npassword = \"x\"\n\
         bbmd = {{ foreign_devices = [\"127.0.0.0/8\"] }}\n"
    );
    let gateway = start(&scratch, &config);
    let bbmd = format!("127.0.0.1:{port}");
    let o = cli(&["--bind", "127.0.0.6", "--port", "0", "--bbmd", &bbmd, "--ttl", "60", "whois", "--wait", "2"]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && out.contains("389088"), "{out}\n{}", gateway.log());
    drop(gateway);

    let scratch = Scratch::new("bbmd", "cli-refused");
    let port = free_port();
    let config = format!("[[device]]\nport = {port}\ninstance = 389089\npassword = \"x\"\nbbmd = {{ }}\n");
    let gateway = start(&scratch, &config);
    let bbmd = format!("127.0.0.1:{port}");
    let o = cli(&["--bind", "127.0.0.6", "--port", "0", "--bbmd", &bbmd, "whois", "--wait", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("refused the foreign-device registration"), "{err}");
    drop(gateway);
}

/// The device's Network Port object shows its BBMD: whether it accepts
/// foreign devices, its BDT and its FDT (with the one just registered).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_port_object_shows_the_bbmds_tables() {
    use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier as P, Value};
    let scratch = Scratch::new("bbmd", "network-port");
    let port = free_port();
    let config = format!(
        "[[device]]\nport = {port}\ninstance = 389099\npassword = \"x\"\n\
         bbmd = {{ peers = [\"127.0.0.2:47808\"], foreign_devices = [\"127.0.0.0/8\"] }}\n"
    );
    let gateway = start(&scratch, &config);
    let fd = socket([127, 0, 0, 3]);
    assert_eq!(
        result(&ask(&fd, port, Bvll::RegisterForeignDevice { ttl: 120 })),
        BvlcResultCode::SUCCESSFUL_COMPLETION
    );
    let client = trellis::client::Client::bind(trellis::client::ClientConfig {
        bip: trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0),
        ..Default::default()
    })
    .await
    .unwrap();
    let device = trellis::client::DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let np = ObjectIdentifier::new(ObjectType::NETWORK_PORT, 1).unwrap();
    let accepts = client.read_property(&device, np, P::BBMD_ACCEPT_FD_REGISTRATIONS, None).await.unwrap();
    assert_eq!(accepts, Value::Boolean(true).into());
    let bdt = client.read_property(&device, np, P::BBMD_BROADCAST_DISTRIBUTION_TABLE, None).await.unwrap();
    assert_eq!(bdt.0.len(), 4, "two entries (ours and the peer), each an address and a mask: {bdt}");
    let fdt = client.read_property(&device, np, P::BBMD_FOREIGN_DEVICE_TABLE, None).await.unwrap();
    let me = match fd.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        _ => unreachable!(),
    };
    let mut address = me.ip().octets().to_vec();
    address.extend_from_slice(&me.port().to_be_bytes());
    assert_eq!(fdt.0.first(), Some(&bacnet::Element::Context { tag: 0, data: address }), "{fdt}");
    assert_eq!(fdt.0.get(1), Some(&bacnet::Element::Context { tag: 1, data: vec![120] }), "{fdt}");
    drop(gateway);

    // The same on a router port that is a BBMD: the device on it shows the
    // BBMD on its first Network Port (the router port's own network).
    let config = format!(
        "[[router.port]]\nbind = \"127.0.0.1\"\nport = {port}\nnetwork = 1\n\
         bbmd = {{ foreign_devices = [\"127.0.0.0/8\"] }}\n\n\
         [[device]]\nbind = \"127.0.0.1\"\nport = {port}\ninstance = 389098\npassword = \"x\"\n\n\
         [[device]]\nvirtual_network = 2\ninstance = 389097\npassword = \"x\"\n"
    );
    let gateway = start(&Scratch::new("bbmd", "router-port"), &config);
    let accepts = client.read_property(&device, np, P::BBMD_ACCEPT_FD_REGISTRATIONS, None).await;
    assert_eq!(accepts.unwrap(), Value::Boolean(true).into(), "{}", gateway.log());
    drop(gateway);
}

/// The other direction: our CLI registers as a foreign device with each
/// peer's BBMD (rusty-bacnet's and bacpypes3's) and finds the peer's
/// device with a Who-Is distributed through it.
#[test]
fn the_cli_as_a_foreign_device_of_each_peers_bbmd_finds_its_device() {
    for (i, kind) in crate::peers::Kind::ALL.into_iter().enumerate() {
        let instance = 4077 + i as u32;
        let peer = crate::peers::Peer::start_with(kind, instance, &["--bbmd"]);
        let bbmd = peer.address.link.to_string();
        let out = cli(&["--bind", "127.0.0.6", "--port", "0", "--bbmd", &bbmd, "whois", "--wait", "2"]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains(&instance.to_string()), "{kind:?}: {text}");
    }
}

/// bacpypes3 as a foreign device of our BBMD: it registers (its
/// Network Port object in foreign mode), its global Who-Is goes to the BBMD
/// as Distribute-Broadcast-To-Network, the device's I-Am comes back as a
/// Forwarded-NPDU, and a read follows. tshark dissects the conversation.
#[test]
fn the_bacpypes3_client_as_a_foreign_device_discovers_and_reads_the_device() {
    let scratch = Scratch::new("bbmd", "bacpypes3");
    let port = free_port();
    let config = format!(
        "[[device]]\nport = {port}\ninstance = 389078\npassword = \"x\"\n\
         bbmd = {{ foreign_devices = [\"127.0.0.0/8\"] }}\n"
    );
    let pcap = scratch.path("bbmd.pcapng");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let gateway = start(&scratch, &config);
    let script = format!(
        "import asyncio\n\
         from bacpypes3.app import Application\n\
         from bacpypes3.argparse import SimpleArgumentParser\n\
         from bacpypes3.pdu import Address\n\
         async def main():\n\
         \x20   args = SimpleArgumentParser().parse_args(['--address', '127.0.0.7:{client}', '--instance', '3998', \
         '--foreign', '127.0.0.1:{port}', '--ttl', '60'])\n\
         \x20   app = Application.from_args(args)\n\
         \x20   try:\n\
         \x20       await asyncio.sleep(1.0)\n\
         \x20       i_ams = await app.who_is(389078, 389078, timeout=3)\n\
         \x20       print('found', sorted(i.iAmDeviceIdentifier[1] for i in i_ams))\n\
         \x20       name = await app.read_property(Address('127.0.0.1:{port}'), 'device,389078', 'object-name')\n\
         \x20       print('name', name)\n\
         \x20   finally:\n\
         \x20       app.close()\n\
         asyncio.run(main())\n",
        client = free_port()
    );
    let output = std::process::Command::new(crate::peers::python()).args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("found [389078]") && stdout.contains("name "),
        "{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&output.stderr),
        gateway.log()
    );
    // The registration is in the BBMD's FDT (Read-FDT, as any BACnet tool reads it).
    let s = socket([127, 0, 0, 8]);
    let answer = ask(&s, port, Bvll::ReadForeignDeviceTable);
    match Bvll::decode(&answer) {
        Ok(Bvll::ReadForeignDeviceTableAck(table)) => {
            let entries: Vec<_> = table.fdt_entries().collect();
            assert!(
                entries.iter().any(|e| *e.address.ip() == Ipv4Addr::new(127, 0, 0, 7)),
                "bacpypes3 in the FDT: {entries:?}"
            );
        }
        other => panic!("not a Read-FDT-Ack: {other:?}"),
    }
    drop(gateway);
    capture.finish(
        &[port],
        &["Register-Foreign-Device", "Distribute-Broadcast-To-Network", "Forwarded-NPDU", "Read-Foreign-Device-Table"],
    );
}
