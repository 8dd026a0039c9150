//! The gateway's router (Clause 6) end to end, over real UDP: the examples
//! `virtual-network.toml` (ten devices behind one B/IP port) and
//! `router.toml` (two B/IP networks and a virtual one), and the network
//! layer's answers on the wire.
//!
//! ```text
//! client ──Who-Is (DNET 1001, remote broadcast)──▶ router :P (network 1) ──▶ ten devices on network 1001
//!        ◀──I-Am ×10, SNET 1001 SADR <instance>──
//! client ──ReadProperty DNET 1001 DADR 0003ea──▶ router ──▶ device 1002 ──▶ ReadProperty-ACK, SNET/SADR ──▶ client
//! ```

use crate::gateway::Gateway;
use crate::peers::free_port;
use crate::scratch::Scratch;
use bacnet::bvll::Bvll;
use bacnet::enums::RejectMessageReason;
use bacnet::npdu::{NetAddress, NetworkMessage, Npdu, NpduPayload};
use bacnet::{ObjectIdentifier, ObjectType, PropertyIdentifier, Value};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, Destination, DeviceAddress, RemoteStation};

async fn bind_client() -> Client {
    let bip = trellis_bip::BipConfig::new(Ipv4Addr::LOCALHOST, 0);
    Client::bind(ClientConfig { bip, ..Default::default() }).await.unwrap()
}

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name)).unwrap()
}

/// `port`'s device on network `net` with MAC `mac`, through the router at `port`.
fn behind(port: u16, net: u16, mac: &[u8]) -> DeviceAddress {
    DeviceAddress {
        link: SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into(),
        remote: Some(RemoteStation { net, mac: mac.to_vec() }),
    }
}

fn bip_mac(port: u16) -> Vec<u8> {
    let p = port.to_be_bytes();
    vec![127, 0, 0, 1, p[0], p[1]]
}

fn device(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::DEVICE, instance).unwrap()
}

fn start(name: &str, config: &str, scratch: &Scratch) -> Gateway {
    let path = scratch.path(name);
    std::fs::write(&path, config).unwrap();
    Gateway::start(&["run", "--config", path.to_str().unwrap()], &scratch.0)
        .unwrap_or_else(|log| panic!("exited:\n{log}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_devices_on_a_virtual_network_answer_behind_one_port() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "virtual-network");
    let port = free_port();
    let gateway = start(
        "virtual-network.toml",
        &example("virtual-network.toml").replace("port = 47808", &format!("port = {port}")),
        &scratch,
    );
    assert!(gateway.log().contains("virtual network 1001 with 10 devices"), "{}", gateway.log());
    let client = bind_client().await;

    // A Who-Is to every station of network 1001, through the router.
    let everyone = behind(port, 1001, &[]);
    let scan = client.who_is(Destination::Device(everyone), None, Duration::from_secs(2)).await.unwrap();
    let mut found: Vec<(u32, DeviceAddress)> =
        scan.collect().await.into_iter().map(|d| (d.i_am.device.instance, d.address)).collect();
    found.sort();
    let expected: Vec<(u32, DeviceAddress)> =
        (1001..=1010).map(|i| (i, behind(port, 1001, &trellis::server::virtual_mac(i)))).collect();
    assert_eq!(found, expected, "every device answers, from its own SNET/SADR");

    // Each one answers a read of its own Device object through the router.
    for (instance, address) in &expected {
        let id = client
            .read_property(address, device(*instance), PropertyIdentifier::OBJECT_IDENTIFIER, None)
            .await
            .unwrap_or_else(|e| panic!("device {instance}: {e}"));
        assert_eq!(id, Value::ObjectIdentifier(device(*instance)).into());
    }
    // A write through the router reaches that device only.
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let (first, second) = (&expected[0].1, &expected[1].1);
    client
        .write_property(first, av1, PropertyIdentifier::PRESENT_VALUE, None, Value::Real(26.5).into(), Some(8))
        .await
        .unwrap();
    let read = |a: DeviceAddress| {
        let client = &client;
        async move { client.read_property(&a, av1, PropertyIdentifier::PRESENT_VALUE, None).await.unwrap() }
    };
    assert_eq!(read(first.clone()).await, Value::Real(26.5).into());
    assert_ne!(read(second.clone()).await, Value::Real(26.5).into());
    drop(gateway);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_example_joins_two_ip_networks_and_a_virtual_one() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "router");
    let (one, two) = (free_port(), free_port());
    let config = example("router.toml")
        .replace("port = 47808", &format!("port = {one}"))
        .replace("port = 47809", &format!("port = {two}"));
    let gateway = start("router.toml", &config, &scratch);
    let client = bind_client().await;
    let direct = |port| DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let cases = [
        ("device 100, on network 1, asked there", direct(one), 100),
        ("device 200, on network 2, asked there", direct(two), 200),
        ("device 200, from network 1", behind(one, 2, &bip_mac(two)), 200),
        ("device 100, from network 2", behind(two, 1, &bip_mac(one)), 100),
        ("device 300, from network 1", behind(one, 3, &trellis::server::virtual_mac(300)), 300),
        ("device 300, from network 2", behind(two, 3, &trellis::server::virtual_mac(300)), 300),
    ];
    for (what, address, instance) in cases {
        let id = client
            .read_property(&address, device(instance), PropertyIdentifier::OBJECT_IDENTIFIER, None)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", gateway.log()));
        assert_eq!(id, Value::ObjectIdentifier(device(instance)).into(), "{what}");
    }
    drop(gateway);
}

/// Send one NPDU to the router as an Original-Unicast-NPDU and collect
/// the network-layer messages it answers with for a while.
fn ask(socket: &UdpSocket, router: u16, npdu: &Npdu<'_>) -> Vec<Vec<u8>> {
    let mut n = Vec::new();
    npdu.encode(&mut n).unwrap();
    let mut datagram = Vec::new();
    Bvll::OriginalUnicastNpdu(&n).encode(&mut datagram).unwrap();
    socket.send_to(&datagram, (Ipv4Addr::LOCALHOST, router)).unwrap();
    let mut answers = Vec::new();
    let mut buf = [0u8; 1500];
    while let Ok(len) = socket.recv(&mut buf) {
        if let Ok(b) = Bvll::decode(&buf[..len])
            && let Some(n) = b.npdu()
        {
            answers.push(n.to_vec());
        }
    }
    answers
}

fn message<'a>(m: NetworkMessage<'a>, destination: Option<NetAddress<'a>>) -> Npdu<'a> {
    Npdu {
        destination,
        source: None,
        hop_count: 255,
        expecting_reply: false,
        priority: bacnet::enums::NetworkPriority::NORMAL,
        payload: NpduPayload::Message(m),
    }
}

fn messages(answers: &[Vec<u8>]) -> Vec<NetworkMessage<'_>> {
    answers
        .iter()
        .filter_map(|a| match Npdu::decode(a) {
            Ok(Npdu { payload: NpduPayload::Message(m), .. }) => Some(m),
            _ => None,
        })
        .collect()
}

#[test]
fn the_network_layer_answers_on_the_wire() {
    let scratch = Scratch::new("router", "network-layer");
    let port = free_port();
    let config = format!(
        "[[router.port]]\nport = {port}\nnetwork = 5\n\n\
         [[device]]\nvirtual_network = 6\ninstance = 77\nplugin = \"builtin:demo-building\"\npassword = \"x\"\n"
    );
    let gateway = start("gateway.toml", &config, &scratch);
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(500))).unwrap();

    let answers = ask(&socket, port, &message(NetworkMessage::WhoIsRouterToNetwork(None), None));
    let nets: Vec<Vec<u16>> = messages(&answers)
        .into_iter()
        .filter_map(|m| match m {
            NetworkMessage::IAmRouterToNetwork(l) => Some(l.iter().collect()),
            _ => None,
        })
        .collect();
    assert_eq!(nets, [vec![6]], "I-Am-Router-To-Network for the virtual network\n{}", gateway.log());

    let answers = ask(&socket, port, &message(NetworkMessage::WhatIsNetworkNumber, None));
    assert!(
        messages(&answers).contains(&NetworkMessage::NetworkNumberIs { net: 5, configured: true }),
        "{answers:02x?}"
    );

    let to_nowhere = Npdu {
        destination: Some(NetAddress { net: 999, mac: &[1] }),
        payload: NpduPayload::Apdu(&[0x10, 0x08]),
        ..message(NetworkMessage::WhatIsNetworkNumber, None)
    };
    let answers = ask(&socket, port, &to_nowhere);
    assert!(
        messages(&answers).contains(&NetworkMessage::RejectMessageToNetwork {
            reason: RejectMessageReason::NOT_DIRECTLY_CONNECTED,
            net: 999
        }),
        "{answers:02x?}"
    );
    drop(gateway);
}

/// bacpypes3 and the rusty-bacnet wheel as clients of devices on our
/// virtual network: bacpypes3 by route-aware address (NET:MAC@router),
/// rusty by a global Who-Is and reads by instance through the router that
/// forwarded the I-Ams.
#[test]
fn third_party_clients_reach_the_devices_behind_the_router() {
    let scratch = Scratch::new("router", "peers");
    let port = free_port();
    // /8: the router also listens on the broadcast address, so rusty's
    // global Who-Is (sent there, from the same port on another address) arrives.
    let config = format!(
        "[[router.port]]\nbind = \"127.0.0.1/8\"\nport = {port}\nnetwork = 1\n\n\
         [[device]]\nvirtual_network = 1001\ninstance = 1001\npassword = \"x\"\n\n\
         [[device]]\nvirtual_network = 1001\ninstance = 1002\npassword = \"x\"\n"
    );
    let gateway = start("gateway.toml", &config, &scratch);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/routed_client.py");
    for (stack, local) in [("bacpypes3", format!("127.0.0.3:{}", free_port())), ("rusty", format!("127.0.0.4:{port}"))]
    {
        let output = std::process::Command::new(crate::peers::python())
            .arg(&script)
            .args(["--stack", stack, "--router", &format!("127.0.0.1:{port}"), "--network", "1001"])
            .args(["--devices", "1001,1002", "--local", &local])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("start routed_client.py");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("\"step\": \"summary\", \"ok\": true"),
            "{stack}:\n{stdout}\n{}\ngateway:\n{}",
            String::from_utf8_lossy(&output.stderr),
            gateway.log()
        );
        let steps = stdout.lines().filter(|l| l.contains("\"ok\": true")).count();
        assert!(steps >= 3, "{stack} ran its steps:\n{stdout}");
    }
    drop(gateway);
}

fn network_port(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::NETWORK_PORT, instance).unwrap()
}

/// Every device has a Network Port object per port it is reached through
/// (Clause 12.56), in its Object_List; the device on a router port has one
/// per router network, with the Routing_Table of routes learned there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_port_objects_describe_each_devices_ports_and_the_routes() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "network-port");
    let (one, two) = (free_port(), free_port());
    let config = example("router.toml")
        .replace("port = 47808", &format!("port = {one}"))
        .replace("port = 47809", &format!("port = {two}"));
    let gateway = start("router.toml", &config, &scratch);
    let client = bind_client().await;
    let device100 = DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, one));
    let device300 = behind(one, 3, &trellis::server::virtual_mac(300));
    let read = |address: &DeviceAddress, object, property| {
        let (client, address) = (&client, address.clone());
        async move { client.read_property(&address, object, property, None).await }
    };

    // Device 100 (on router port 1): ports for networks 1, 2 and 3, listed in its Object_List.
    let list = read(&device100, device(100), PropertyIdentifier::OBJECT_LIST).await.unwrap();
    for i in 1..=3 {
        assert!(
            list.0.contains(&bacnet::Element::Application(Value::ObjectIdentifier(network_port(i)))),
            "network-port,{i} in {list}"
        );
    }
    let count = client.read_property(&device100, device(100), PropertyIdentifier::OBJECT_LIST, Some(0)).await.unwrap();
    assert_eq!(count, Value::Unsigned(list.0.len() as u64).into(), "Object_List[0] counts the ports too");
    let last =
        client.read_property(&device100, device(100), PropertyIdentifier::OBJECT_LIST, Some(list.0.len() as u32)).await;
    assert_eq!(last.unwrap(), Value::ObjectIdentifier(network_port(3)).into());
    let numbers: Vec<_> = futures_numbers(&client, &device100).await;
    assert_eq!(numbers, [1, 2, 3]);
    let kind = read(&device100, network_port(1), PropertyIdentifier::NETWORK_TYPE).await.unwrap();
    assert_eq!(kind, Value::Enumerated(5).into(), "ipv4");
    let mac = read(&device100, network_port(1), PropertyIdentifier::MAC_ADDRESS).await.unwrap();
    assert_eq!(mac, Value::OctetString(bip_mac(one)).into());
    let kind = read(&device100, network_port(3), PropertyIdentifier::NETWORK_TYPE).await.unwrap();
    assert_eq!(kind, Value::Enumerated(7).into(), "virtual");

    // Another router on network 1 announces network 40: it appears in port 1's Routing_Table.
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let forty = [0u8, 40];
    let i_am = NetworkMessage::IAmRouterToNetwork(bacnet::npdu::NetworkList::from_bytes(&forty).unwrap());
    ask(&socket, one, &message(i_am, None));
    let table = read(&device100, network_port(1), PropertyIdentifier::ROUTING_TABLE).await.unwrap();
    let mut encoded = Vec::new();
    table.encode(&mut encoded);
    let router_mac = bip_mac(socket.local_addr().unwrap().port());
    let mut expected = vec![0x09, 40, 0x1D, 6];
    expected.extend_from_slice(&router_mac);
    expected.extend_from_slice(&[0x29, 0]);
    assert_eq!(encoded, expected, "network 40 through the announcing router, available");

    // Device 300, on virtual network 3: one port, configured network 3.
    let number = read(&device300, network_port(1), PropertyIdentifier::NETWORK_NUMBER).await.unwrap();
    assert_eq!(number, Value::Unsigned(3).into());
    let refused = client
        .write_property(
            &device300,
            network_port(1),
            PropertyIdentifier::NETWORK_NUMBER,
            None,
            Value::Unsigned(9).into(),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        refused.bacnet_error(),
        Some((bacnet::enums::ErrorClass::PROPERTY, bacnet::enums::ErrorCode::WRITE_ACCESS_DENIED))
    );
    drop(gateway);
}

async fn futures_numbers(client: &Client, device: &DeviceAddress) -> Vec<u64> {
    let mut out = Vec::new();
    for i in 1..=3 {
        let v = client.read_property(device, network_port(i), PropertyIdentifier::NETWORK_NUMBER, None).await.unwrap();
        match v.as_primitive() {
            Some(Value::Unsigned(n)) => out.push(*n),
            other => panic!("network-port,{i} network-number: {other:?}"),
        }
    }
    out
}

/// B/IP ↔ MS/TP (`examples/mstp-trunk.toml`): on a simulated line, the
/// router is MAC 1 and a served device MAC 2 (another gateway process); a
/// client on B/IP reads and writes that device through the router.
///
/// ```text
/// client ──ReadProperty DNET 2 DADR 02──▶ router (B/IP :P) ══MS/TP══▶ device 2002 (MAC 2)
///        ◀──ComplexACK SNET 2 SADR 02──── router ◀══ at the device's token ══
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_ip_reaches_a_device_on_the_mstp_trunk() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "mstp-trunk");
    let (_line, ptys) = crate::mstp::SimLineProcess::start(&["--baud", "38400", "--stations", "2"]);
    let port = free_port();
    let router =
        example("mstp-trunk.toml").replace("port = 47808", &format!("port = {port}")).replace("/dev/ttyUSB0", &ptys[0]);
    let gateway = start("mstp-trunk.toml", &router, &scratch);
    let device = format!(
        "[[device]]\ninstance = 2002\npassword = \"x\"\nmstp = {{ device = \"{}\", baud = 38400, mac = 2, max_master = 7 }}\n",
        ptys[1]
    );
    let station = start("station.toml", &device, &Scratch::new("router", "mstp-station"));
    let client = bind_client().await;
    let remote = behind(port, 2, &[2]);
    let id = client
        .read_property(&remote, device_id(2002), PropertyIdentifier::OBJECT_IDENTIFIER, None)
        .await
        .unwrap_or_else(|e| panic!("{e}\nrouter:\n{}\nstation:\n{}", gateway.log(), station.log()));
    assert_eq!(id, Value::ObjectIdentifier(device_id(2002)).into());
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    client
        .write_property(&remote, av1, PropertyIdentifier::PRESENT_VALUE, None, Value::Real(17.25).into(), Some(8))
        .await
        .unwrap();
    let back = client.read_property(&remote, av1, PropertyIdentifier::PRESENT_VALUE, None).await.unwrap();
    assert_eq!(back, Value::Real(17.25).into());
    drop(station);
    drop(gateway);
}

/// The `firewall` policy on the B/IP ↔ MS/TP router: the IP side reads
/// the trunk's device but may not write it (the router answers
/// Reject-Message-To-Network, security-error), and the value stays.
///
/// ```text
/// client ──ReadProperty DNET 2──▶ router ─firewall: forward─▶ MS/TP ──▶ device 2003 ──ACK──▶ client
/// client ──WriteProperty DNET 2──▶ router ─firewall: reject─▶ Reject-Message-To-Network (security-error) ──▶ client
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_firewall_lets_the_ip_side_read_but_not_write_the_mstp_trunk() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "mstp-firewall");
    let (_line, ptys) = crate::mstp::SimLineProcess::start(&["--baud", "38400", "--stations", "2"]);
    let port = free_port();
    let router = example("mstp-trunk.toml")
        .replace("port = 47808", &format!("port = {port}"))
        .replace("/dev/ttyUSB0", &ptys[0])
        + "\n[[router.policy]]\nplugin = \"builtin:firewall\"\n\n[router.policy.settings]\ndefault = \"reject\"\n\
           default_reject_reason = \"security-error\"\n\
           [[router.policy.settings.rule]]\nname = \"answers\"\naction = \"forward\"\n\
           kinds = [\"simple-ack\", \"complex-ack\", \"segment-ack\", \"error\", \"reject\", \"abort\"]\n\
           [[router.policy.settings.rule]]\nname = \"reads\"\naction = \"forward\"\n\
           services = [\"read-property\", \"who-is\", \"i-am\"]\n\
           [[router.policy.settings.rule]]\nname = \"network-layer\"\naction = \"forward\"\nkinds = [\"network-message\"]\n";
    let gateway = start("mstp-firewall.toml", &router, &scratch);
    let device = format!(
        "[[device]]\ninstance = 2003\npassword = \"x\"\nmstp = {{ device = \"{}\", baud = 38400, mac = 2, max_master = 7 }}\n",
        ptys[1]
    );
    let station = start("station.toml", &device, &Scratch::new("router", "mstp-firewall-station"));
    let client = bind_client().await;
    let remote = behind(port, 2, &[2]);
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let before = client
        .read_property(&remote, av1, PropertyIdentifier::PRESENT_VALUE, None)
        .await
        .unwrap_or_else(|e| panic!("a read crosses: {e}\nrouter:\n{}\nstation:\n{}", gateway.log(), station.log()));
    let refused = client
        .write_property(&remote, av1, PropertyIdentifier::PRESENT_VALUE, None, Value::Real(-5.5).into(), Some(8))
        .await;
    assert!(refused.is_err(), "a write from the IP side is refused: {refused:?}");
    let after = client.read_property(&remote, av1, PropertyIdentifier::PRESENT_VALUE, None).await.unwrap();
    assert_eq!(after, before, "the trunk's device was not written");
    assert_ne!(after, Value::Real(-5.5).into());
    drop(station);
    drop(gateway);
}

fn device_id(instance: u32) -> ObjectIdentifier {
    device(instance)
}

/// COV through the router, and the wire's truth: a confirmed COV
/// subscription to a device on the virtual network, its notifications
/// (acknowledged back through the router), the network layer's answers —
/// all captured on `lo` and dissected by tshark with no malformed packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cov_crosses_the_router_and_tshark_dissects_every_packet() {
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "cov-capture");
    let port = free_port();
    let config = format!(
        "[[router.port]]\nport = {port}\nnetwork = 1\n\n\
         [[device]]\nvirtual_network = 1001\ninstance = 1001\npassword = \"x\"\n"
    );
    let pcap = scratch.path("router.pcapng");
    let capture = crate::tshark::Capture::on("lo", &format!("udp port {port}"), &pcap);
    let gateway = start("gateway.toml", &config, &scratch);

    let client = bind_client().await;
    let device = behind(port, 1001, &trellis::server::virtual_mac(1001));
    let av1 = ObjectIdentifier::new(ObjectType::ANALOG_VALUE, 1).unwrap();
    let mut notifications = client.cov_notifications();
    client
        .subscribe_cov(&device, &trellis::client::CovSubscription::new(7, av1).confirmed(true).lifetime(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", gateway.log()));
    client
        .write_property(&device, av1, PropertyIdentifier::PRESENT_VALUE, None, Value::Real(30.5).into(), Some(8))
        .await
        .unwrap();
    let mut values = Vec::new();
    while values.len() < 2 {
        let n = tokio::time::timeout(Duration::from_secs(5), notifications.recv())
            .await
            .expect("a notification through the router")
            .unwrap();
        assert_eq!(n.source, device, "from the device, through the router");
        assert!(n.confirmed);
        values.push(n.notification);
    }
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    ask(&socket, port, &message(NetworkMessage::WhoIsRouterToNetwork(None), None));
    let nowhere = Npdu {
        destination: Some(NetAddress { net: 999, mac: &[1] }),
        payload: NpduPayload::Apdu(&[0x10, 0x08]),
        ..message(NetworkMessage::WhatIsNetworkNumber, None)
    };
    ask(&socket, port, &nowhere);
    drop(gateway);
    capture.finish(
        &[port],
        &[
            "subscribeCOV",
            "confirmedCOVNotification",
            "writeProperty",
            "I-Am-Router-To-Network",
            "Reject-Message-To-Network",
        ],
    );
}

/// Our client reaches the peers' devices through our router: bacpypes3's
/// and rusty-bacnet's servers are stations of network 2, reached from
/// network 1 through the router's second B/IP port (DNET 2, DADR their
/// B/IP address); they answer the router, which routes the answer back.
///
/// ```text
/// client ──RP DNET 2 DADR peer──▶ router :one ──(port two)──RP SNET 1 SADR client──▶ peer
///        ◀──ACK SNET 2 SADR peer── router ◀──ACK DNET 1 DADR client── peer
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reaches_the_peers_devices_through_the_router() {
    use crate::peers::{Kind, Peer};
    let _timing = crate::peers::shared().await;
    let scratch = Scratch::new("router", "to-peers");
    let (one, two) = (free_port(), free_port());
    let config = format!("[[router.port]]\nport = {one}\nnetwork = 1\n\n[[router.port]]\nport = {two}\nnetwork = 2\n");
    let gateway = start("router.toml", &config, &scratch);
    let client = bind_client().await;
    for (i, kind) in Kind::ALL.iter().enumerate() {
        let instance = 3701 + i as u32;
        let peer = Peer::start(*kind, instance);
        let mac = bip_mac(peer.address.ip().unwrap().port());
        let through = behind(one, 2, &mac);
        let id = client
            .read_property(&through, device(instance), PropertyIdentifier::OBJECT_IDENTIFIER, None)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} through the router: {e}\n{}", gateway.log()));
        assert_eq!(id, Value::ObjectIdentifier(device(instance)).into(), "{kind:?}");
        drop(peer);
    }
    drop(gateway);
}
