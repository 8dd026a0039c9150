//! Served devices and our client over MS/TP: two demo-building devices and
//! one client station, each a driver thread on a simulated RS-485 line in
//! real time (paced at 10 bits per octet), doing Who-Is, ReadProperty,
//! ReadPropertyMultiple and WriteProperty with a read-back; the line's
//! capture (pcap, linktype 165) must dissect cleanly in tshark.
//!
//! No speed is asserted: the machine is shared. Timeouts are generous.

use bacnet::apdu::MaxApdu;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::services::{PropertyReference, ReadAccessSpecification};
use bacnet::tsm::TsmConfig;
use bacnet::{AnyValue, ObjectIdentifier, ObjectType, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use trellis::client::{Client, Destination, DeviceAddress};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, build, serve_mstp};
use trellis_mstp::MstpConfig;
use trellis_mstp::sim::{Line, LineConfig};

/// Our two served stations (MAC, Device instance) and the client's MAC.
const DEVICES: [(u8, u32); 2] = [(1, 510_001), (2, 510_002)];
const CLIENT_MAC: u8 = 3;

/// A station's port on the line: Max_Master 3 so the ring forms quickly.
fn port(line: &Line, mac: u8) -> MstpConfig {
    let mut config = MstpConfig::sim(line, mac);
    config.node.max_master = 3;
    config
}

fn av(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap()
}

/// `tshark -r path -V`, failing on any malformed packet, dissector error or
/// bad checksum (the transports/mstp tests' judge).
fn dissect_cleanly(path: &Path) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .arg("-V")
        .output()
        .expect("tshark is installed by the README's test command (.ci/test)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "tshark -r failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.is_empty(), "tshark printed nothing for {}", path.display());
    for bad in ["Malformed", "Expert Info (Error", "Expert Info (Warning", "[incorrect]"] {
        assert!(!text.contains(bad), "tshark reports `{bad}` in {}:\n{text}", path.display());
    }
    text
}

async fn two_devices_and_a_client_over_mstp(baud: u32) {
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("mstp-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let line = Line::new(LineConfig::new(baud));
    let pcap: PathBuf = std::env::temp_dir().join(format!("trellis-host-mstp-{}-{baud}.pcap", std::process::id()));
    line.capture_file(&pcap).unwrap();

    let mut gateways = Vec::new();
    for (mac, instance) in DEVICES {
        let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new(format!("demo-{mac}")))
            .expect("load demo-building");
        let config = DeviceConfig { instance: Some(instance), ..DeviceConfig::default() };
        let server = Arc::new(build(model, config, 999).await.unwrap());
        gateways.push(tokio::spawn(serve_mstp(port(&line, mac), server)));
    }
    let tsm = TsmConfig {
        apdu_timeout: Duration::from_secs(5),
        retries: 3,
        // Answers fit a standard MS/TP frame (no extended frames needed).
        max_apdu_accepted: MaxApdu::UP_TO_480,
        ..TsmConfig::default()
    };
    let client = Client::bind_mstp(port(&line, CLIENT_MAC), tsm).await.unwrap();

    // Who-Is to MAC 255: both devices answer with an I-Am broadcast.
    let found = client.who_is(Destination::LocalBroadcast, None, Duration::from_secs(5)).await.unwrap().collect().await;
    for (mac, instance) in DEVICES {
        assert!(
            found.iter().any(|d| d.i_am.device.instance == instance && d.address == DeviceAddress::mstp(mac)),
            "no I-Am from device {instance} at MAC {mac} ({baud} baud): {found:?}"
        );
    }

    for (i, (mac, instance)) in DEVICES.into_iter().enumerate() {
        let device = DeviceAddress::mstp(mac);
        let device_id = ObjectIdentifier::new(ObjectType::DEVICE, instance).unwrap();

        let id = client.read_property(&device, device_id, P::OBJECT_IDENTIFIER, None).await.unwrap();
        assert_eq!(id, AnyValue::from(Value::ObjectIdentifier(device_id)));

        let spec = ReadAccessSpecification {
            object: av(1),
            properties: vec![PropertyReference::new(P::OBJECT_NAME), PropertyReference::new(P::PRESENT_VALUE)],
        };
        let results = client.read_property_multiple(&device, vec![spec]).await.unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].results.len(), 2);
        assert!(results[0].results.iter().all(|r| r.outcome.is_ok()), "{results:?}");

        let setpoint = 20.5 + i as f32;
        client
            .write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(setpoint).into(), Some(8))
            .await
            .unwrap();
        let back = client.read_property(&device, av(1), P::PRESENT_VALUE, None).await.unwrap();
        assert_eq!(back, AnyValue::from(Value::Real(setpoint)), "read-back from device {instance}");
    }

    drop(client);
    for g in &gateways {
        g.abort();
    }
    for g in gateways {
        let _ = g.await;
    }
    // Let the driver threads stop and the line hand its last frames over.
    tokio::time::sleep(Duration::from_millis(300)).await;
    line.flush().unwrap();
    let stats = line.stats();
    println!("MS/TP at {baud} baud: {stats:?}");

    let text = dissect_cleanly(&pcap);
    for expected in ["who-Is", "i-Am", "readProperty", "readPropertyMultiple", "writeProperty"] {
        assert!(text.contains(expected), "no {expected} in the capture at {baud} baud");
    }
    assert!(text.contains("BACnet Data Expecting Reply"), "requests go as Data Expecting Reply");
    let _ = std::fs::remove_file(&pcap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_served_devices_and_our_client_over_mstp_at_115200() {
    two_devices_and_a_client_over_mstp(115_200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_served_devices_and_our_client_over_mstp_at_38400() {
    two_devices_and_a_client_over_mstp(38_400).await;
}

/// `trellis run` with `mstp = { device = … }` in its `[[device]]` serves
/// on that serial port: here the slave end of a pseudo-terminal pair whose
/// master end is our client's MS/TP port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trellis_run_serves_a_device_on_an_mstp_serial_port() {
    use serialport::SerialPort;
    let (master, slave) = serialport::TTYPort::pair().expect("a pseudo-terminal pair");
    let slave_path = slave.name().expect("the slave's path");
    let scratch = std::env::temp_dir().join(format!("trellis-run-mstp-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let config = scratch.join("mstp.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\ninstance = 510009\nmstp = {{ device = \"{slave_path}\", baud = 38400, mac = 5, max_master = 7, max_info_frames = 1 }}\n"
        ),
    )
    .unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch)
        .unwrap_or_else(|log| panic!("the gateway exited before serving; stderr:\n{log}"));
    assert!(gateway.log().contains("MS/TP"), "{}", gateway.log());

    let mut node = bacnet::mstp::MasterConfig::new(CLIENT_MAC, 38_400);
    node.max_master = 7;
    node.receive.t_frame_abort = trellis_mstp::SERIAL_T_FRAME_ABORT;
    let options = trellis_mstp::DriverOptions { realtime_priority: None, ..Default::default() };
    let line = trellis_mstp::SerialLine::from_tty(master, "pty-master").unwrap();
    let (handle, driver) = trellis_mstp::bind_port(Box::new(line), node, options).unwrap();
    let tsm = TsmConfig { apdu_timeout: Duration::from_secs(5), retries: 3, ..TsmConfig::default() };
    let client = Client::on_mstp(handle, driver, tsm).unwrap();

    let device = DeviceAddress::mstp(5);
    let found = client
        .who_is(Destination::LocalBroadcast, Some((510009, 510009)), Duration::from_secs(5))
        .await
        .unwrap()
        .collect()
        .await;
    assert!(found.iter().any(|d| d.address == device), "no I-Am from MAC 5: {found:?}\n{}", gateway.log());
    client.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(19.5).into(), Some(8)).await.unwrap();
    let back = client.read_property(&device, av(1), P::PRESENT_VALUE, None).await.unwrap();
    assert_eq!(back, AnyValue::from(Value::Real(19.5)));
    drop(client);
    drop(gateway);
    drop(slave);
    let _ = std::fs::remove_dir_all(&scratch);
}
