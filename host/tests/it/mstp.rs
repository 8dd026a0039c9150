//! Served devices and our client over MS/TP: two demo-building devices and
//! one client station, each a driver thread on a simulated RS-485 line in
//! real time (paced at 10 bits per octet), doing Who-Is, ReadProperty,
//! ReadPropertyMultiple and WriteProperty with a read-back; the line's
//! capture (pcap, linktype 165) must dissect cleanly in tshark.
//!
//! No speed is asserted: the machine is shared. Timeouts are generous.

use bacnet::apdu::MaxApdu;
use bacnet::enums::PropertyIdentifier as P;
use bacnet::mstp::FrameType;
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

/// `tshark -r path -V`, failing on a malformed packet, dissector error or
/// bad checksum (the transports/mstp tests' judge) in more frames than the
/// line damaged: a collision garbles both transmissions it overlaps, and the
/// capture, like a real analyser's, holds what the line carried. Our
/// encoders must never be the cause, so an undamaged line allows none.
pub(crate) fn dissect_cleanly(path: &Path, damaged_on_the_line: u64) -> String {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .arg("-V")
        .output()
        .expect("tshark is installed by the README's test command (.ci/test)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "tshark -r failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.is_empty(), "tshark printed nothing for {}", path.display());
    let bad_markers = ["Malformed", "Expert Info (Error", "Expert Info (Warning", "[incorrect]"];
    let bad: Vec<&str> = text.split("\nFrame ").filter(|frame| bad_markers.iter().any(|m| frame.contains(m))).collect();
    assert!(
        bad.len() as u64 <= damaged_on_the_line,
        "tshark finds {} bad frames in {}, the line damaged {damaged_on_the_line}; the first:\nFrame {}",
        bad.len(),
        path.display(),
        bad[0]
    );
    text
}

/// How many capture frames `trellis sim-line`'s closing summary lets the
/// line have damaged: both transmissions of each collision, and each piece
/// of a frame cut short because its writer paused mid-frame (an emulated
/// UART starved of CPU). Neither may touch more than one frame in ten: a
/// broken token ring collides on most passes, a loaded machine on a few
/// in a hundred.
pub(crate) fn damaged_by_the_line(summary: &str) -> u64 {
    let count = |what: &str| -> u64 {
        summary
            .split(',')
            .find_map(|p| p.trim().strip_suffix(what)?.trim().rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    let frames = count("frames");
    let collisions = count("collisions");
    let (cut_short, pieces) = summary
        .split_once(" frames cut short by their writer's pause in ")
        .and_then(|(before, after)| {
            let cut = before.rsplit(' ').next()?.parse::<u64>().ok()?;
            Some((cut, after.split(' ').next()?.parse::<u64>().ok()?))
        })
        .expect("sim-line's summary names the frames it cut short");
    assert!(frames > 0 && collisions * 10 <= frames && cut_short * 10 <= frames, "{summary}");
    2 * collisions + pieces
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

    // The same Who-Is once the ring is settled. The first one went while
    // three stations were still forming the ring, where a collision may
    // garble it (the line counts it) — the devices' start-up I-Ams then
    // answer the assertion above, and the capture has no clean Who-Is.
    let again = client.who_is(Destination::LocalBroadcast, None, Duration::from_secs(3)).await.unwrap().collect().await;
    for (mac, instance) in DEVICES {
        assert!(
            again.iter().any(|d| d.i_am.device.instance == instance && d.address == DeviceAddress::mstp(mac)),
            "no I-Am from device {instance} at MAC {mac} to the second Who-Is ({baud} baud): {again:?}"
        );
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

    // Each collision damages the two transmissions it overlaps.
    let damaged = 2 * stats.collisions + stats.flipped + stats.dropped;
    let text = dissect_cleanly(&pcap, damaged);
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

/// A served device as an MS/TP slave node (Clause 9.5.7, MAC 200, above
/// any master's range) beside our client, the line's only master: it
/// answers ReadProperty and ReadPropertyMultiple addressed to it, but not
/// Who-Is (a slave cannot initiate, so it sends no I-Am), and it never
/// sends a Token or a Reply To Poll For Master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_device_as_an_mstp_slave_answers_requests_and_stays_out_of_the_ring() {
    const SLAVE_MAC: u8 = 200;
    const INSTANCE: u32 = 510_200;
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("mstp-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let line = Line::new(LineConfig::new(115_200));
    let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo-slave")).unwrap();
    let server = Arc::new(
        build(model, DeviceConfig { instance: Some(INSTANCE), ..DeviceConfig::default() }, 999).await.unwrap(),
    );
    let mut slave = MstpConfig::sim(&line, SLAVE_MAC);
    slave.node.slave = true;
    let gateway = tokio::spawn(serve_mstp(slave, server));
    let tsm = TsmConfig {
        apdu_timeout: Duration::from_secs(3),
        retries: 1,
        max_apdu_accepted: MaxApdu::UP_TO_480,
        ..TsmConfig::default()
    };
    let client = Client::bind_mstp(port(&line, CLIENT_MAC), tsm).await.unwrap();

    let found = client.who_is(Destination::LocalBroadcast, None, Duration::from_secs(2)).await.unwrap().collect().await;
    assert!(found.is_empty(), "a slave sends no I-Am: {found:?}");

    let device = DeviceAddress::mstp(SLAVE_MAC);
    let any_device = ObjectIdentifier::new(ObjectType::DEVICE, ObjectIdentifier::MAX_INSTANCE).unwrap();
    let id = client.read_property(&device, any_device, P::OBJECT_IDENTIFIER, None).await.unwrap();
    let device_id = ObjectIdentifier::new(ObjectType::DEVICE, INSTANCE).unwrap();
    assert_eq!(id, AnyValue::from(Value::ObjectIdentifier(device_id)));
    let spec = ReadAccessSpecification {
        object: av(1),
        properties: vec![PropertyReference::new(P::OBJECT_NAME), PropertyReference::new(P::PRESENT_VALUE)],
    };
    let results = client.read_property_multiple(&device, vec![spec]).await.unwrap();
    assert!(results[0].results.iter().all(|r| r.outcome.is_ok()), "{results:?}");

    drop(client);
    gateway.abort();
    let _ = gateway.await;
    let from_slave: Vec<_> = line
        .frames()
        .iter()
        .filter_map(|f| f.header())
        .filter(|h| h.source == SLAVE_MAC)
        .map(|h| h.frame_type)
        .collect();
    assert!(!from_slave.is_empty());
    assert!(
        from_slave.iter().all(|&t| t == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY),
        "the slave sent only replies: {from_slave:?}"
    );
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

/// A `socat` pseudo-terminal pair (`pty,raw,echo=0` at both ends, linked
/// at two paths unique to the test); socat is killed by PID on drop.
struct PtyPair {
    child: std::process::Child,
    a: PathBuf,
    b: PathBuf,
}

impl PtyPair {
    fn start(tag: &str) -> PtyPair {
        let base = std::env::temp_dir().join(format!("trellis-socat-{}-{tag}", std::process::id()));
        let (a, b) = (base.with_extension("a"), base.with_extension("b"));
        let _ = std::fs::remove_file(&a);
        let _ = std::fs::remove_file(&b);
        let child = Command::new("socat")
            .arg("-d")
            .arg("-d")
            .arg(format!("pty,raw,echo=0,link={}", a.display()))
            .arg(format!("pty,raw,echo=0,link={}", b.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("socat is installed by the README's test command (.ci/test)");
        let pair = PtyPair { child, a, b };
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !(pair.a.exists() && pair.b.exists()) {
            assert!(std::time::Instant::now() < until, "socat made no pty links in 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        pair
    }

    fn a(&self) -> &str {
        self.a.to_str().unwrap()
    }

    fn b(&self) -> &str {
        self.b.to_str().unwrap()
    }
}

impl Drop for PtyPair {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.a);
        let _ = std::fs::remove_file(&self.b);
    }
}

fn peer_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers").join(name)
}

/// The rusty-bacnet wheel's MS/TP station (`rusty_server.py --mstp`, an
/// `MstpEndpoint`); killed by PID on drop.
struct RustyStation {
    child: std::process::Child,
}

impl RustyStation {
    fn start(path: &str, mac: u8, device: u32) -> RustyStation {
        use std::io::BufRead;
        let mut child = Command::new(crate::peers::python())
            .arg(peer_script("rusty_server.py"))
            .args(["--mstp", path, "--mac", &mac.to_string(), "--baud", "38400", "--max-master", "3"])
            .args(["--device-id", &device.to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start rusty_server.py --mstp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let station = RustyStation { child };
        loop {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.trim() == "READY" => break,
                Ok(_) => {}
                Err(_) => panic!("rusty_server.py --mstp did not become READY in 60 s"),
            }
        }
        station
    }

    /// Ask it for one I-Am broadcast (SIGUSR1).
    fn broadcast_i_am(&self) {
        let status = Command::new("kill").args(["-USR1", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }
}

impl Drop for RustyStation {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Our MS/TP client (MAC 1) and the rusty-bacnet wheel's MS/TP station
/// (`MstpEndpoint`, MAC 2) on the two ends of a socat pty pair at 38,400
/// baud: the token passes, ReadProperty works, and the station's I-Am
/// reaches our client. The wheel's `MstpEndpoint` does not answer Who-Is
/// (documented in host/tests/peers/README.md): asserted here, so this test
/// fails when a new wheel starts answering and the note must change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_and_the_rusty_bacnet_mstp_station_over_a_socat_pty_pair() {
    const RUSTY: u32 = 4101;
    let _shared = crate::peers::shared().await;
    let pty = PtyPair::start("rusty-station");
    let rusty = RustyStation::start(pty.b(), 2, RUSTY);

    let mut config = MstpConfig::serial(pty.a(), 1, 38_400);
    config.node.max_master = 3;
    config.options.realtime_priority = None;
    let tsm = TsmConfig {
        apdu_timeout: Duration::from_secs(5),
        retries: 3,
        max_apdu_accepted: MaxApdu::UP_TO_480,
        ..TsmConfig::default()
    };
    let client = Client::bind_mstp(config, tsm).await.unwrap();
    let station = DeviceAddress::mstp(2);

    // ReadProperty of analog-input,1 present-value and the Device object.
    let ai1 = ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap();
    let pv = client.read_property(&station, ai1, P::PRESENT_VALUE, None).await.unwrap();
    assert_eq!(pv, AnyValue::from(Value::Real(72.5)));
    let device_id = ObjectIdentifier::new(ObjectType::DEVICE, RUSTY).unwrap();
    let id = client.read_property(&station, device_id, P::OBJECT_IDENTIFIER, None).await.unwrap();
    assert_eq!(id, AnyValue::from(Value::ObjectIdentifier(device_id)));

    // Who-Is: the token passes (the reads above worked), yet no I-Am.
    let found = client
        .who_is(Destination::LocalBroadcast, Some((RUSTY, RUSTY)), Duration::from_secs(3))
        .await
        .unwrap()
        .collect()
        .await;
    assert!(
        found.is_empty(),
        "rusty-bacnet's MstpEndpoint now answers Who-Is ({found:?}): update host/tests/peers/README.md and this test"
    );

    // Its own I-Am broadcast (broadcast_i_am) reaches us.
    let scan = client.who_is(Destination::LocalBroadcast, Some((RUSTY, RUSTY)), Duration::from_secs(5)).await.unwrap();
    rusty.broadcast_i_am();
    let found = scan.collect().await;
    assert!(
        found.iter().any(|d| d.i_am.device.instance == RUSTY && d.address == station),
        "no I-Am from the rusty station at MAC 2: {found:?}"
    );
    drop(client);
    drop(rusty);
    drop(pty);
}

/// The rusty-bacnet wheel's `BACnetClient(transport="mstp")` (MAC 1,
/// `rusty_mstp_client.py`) on one end of a socat pty pair, our served
/// device (`serve_mstp`, MAC 5) on the other: its Who-Is finds us and it
/// reads our analog-value,1 present-value and Device object name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rusty_bacnet_mstp_client_reads_our_served_device_over_a_socat_pty_pair() {
    const OURS: u32 = 510_011;
    let _shared = crate::peers::shared().await;
    let pty = PtyPair::start("rusty-client");
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("mstp-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let model =
        PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo-pty")).expect("load demo-building");
    let config = DeviceConfig { instance: Some(OURS), ..DeviceConfig::default() };
    let server = Arc::new(build(model, config, 999).await.unwrap());
    let mut port = MstpConfig::serial(pty.a(), 5, 38_400);
    port.node.max_master = 7;
    port.options.realtime_priority = None;
    let gateway = tokio::spawn(serve_mstp(port, server));

    let script = peer_script("rusty_mstp_client.py");
    let b = pty.b().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(crate::peers::python())
            .arg(script)
            .args(["--mstp", &b, "--mac", "1", "--baud", "38400", "--max-master", "7"])
            .args(["--target", "5", "--device", &OURS.to_string(), "--discover-ms", "3000"])
            .args(["--read", "analog-value,1:present-value", "--read", &format!("device,{OURS}:object-name")])
            .output()
            .expect("run rusty_mstp_client.py")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rusty_mstp_client.py failed:\n{stdout}\n{stderr}");
    let steps: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(steps.len(), 3, "{stdout}");
    assert!(steps.iter().all(|s| s["ok"] == true), "{stdout}");
    assert_eq!(steps[0]["macs"], serde_json::json!(["05"]), "{stdout}");
    assert_eq!(steps[1]["tag"], "real", "{stdout}");
    assert!(steps[1]["value"].as_str().is_some_and(|v| v.parse::<f32>().is_ok()), "{stdout}");
    assert!(steps[2]["value"].as_str().is_some_and(|v| v.len() > 2), "{stdout}");
    gateway.abort();
    drop(pty);
}

/// The CLI over MS/TP: `trellis run` serves a device on one end of a socat
/// pty pair; `trellis --mstp … whois / read / write` talks to it from the
/// other end as a station of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reaches_a_served_device_over_mstp() {
    let _timing = crate::peers::shared().await;
    let pty = PtyPair::start("cli");
    let scratch = std::env::temp_dir().join(format!("trellis-cli-mstp-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let config = scratch.join("mstp.toml");
    std::fs::write(
        &config,
        format!(
            "[[device]]\ninstance = 510011\nmstp = {{ device = \"{}\", baud = 38400, mac = 5, max_master = 7 }}\n",
            pty.a()
        ),
    )
    .unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch)
        .unwrap_or_else(|log| panic!("the gateway exited before serving; stderr:\n{log}"));
    let b = pty.b().to_string();
    let cli = move |args: &[&str]| {
        let mut all = vec!["--mstp", b.as_str(), "--mac", "3", "--max-master", "7", "--timeout-ms", "3000"];
        all.extend_from_slice(args);
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        async move {
            tokio::task::spawn_blocking(move || {
                Command::new(env!("CARGO_BIN_EXE_trellis")).args(&all).output().expect("run trellis")
            })
            .await
            .unwrap()
        }
    };
    let text = |o: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };

    let whois = cli(&["whois", "--low", "510011", "--high", "510011", "--wait", "5"]).await;
    assert!(whois.status.success() && text(&whois).contains("510011"), "{}\n{}", text(&whois), gateway.log());
    assert!(text(&whois).contains("mstp:5"), "the I-Am came from MAC 5: {}", text(&whois));
    let write = cli(&["write", "mstp:5", "analog-value,1", "present-value", "23.25", "--priority", "8"]).await;
    assert!(write.status.success(), "{}", text(&write));
    let read = cli(&["read", "mstp:5", "analog-value,1", "present-value"]).await;
    assert!(read.status.success() && text(&read).contains("23.25"), "{}", text(&read));
    drop(gateway);
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `trellis sim-line`: a process of its own that paces a simulated line
/// and hands out one pseudo-terminal per station. Killed by PID on drop.
pub(crate) struct SimLineProcess {
    child: std::process::Child,
}

impl SimLineProcess {
    /// Start it; the station paths it prints.
    pub(crate) fn start(args: &[&str]) -> (SimLineProcess, Vec<String>) {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
            .arg("sim-line")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start trellis sim-line");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let count: usize = args.windows(2).find(|w| w[0] == "--stations").map_or(2, |w| w[1].parse().unwrap());
        let mut paths = Vec::new();
        for i in 0..count {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let path = line.trim().strip_prefix(&format!("station {i}: ")).unwrap_or_else(|| panic!("{line:?}"));
            paths.push(path.to_string());
        }
        (SimLineProcess { child }, paths)
    }

    /// SIGTERM, then its summary on stderr.
    pub(crate) fn stop(mut self) -> String {
        use std::io::Read;
        // SIGTERM by PID, the way an operator stops it (the test process
        // has no signal API of its own).
        let _ = std::process::Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.success(), "sim-line exited with {status}: {err}");
        err
    }
}

impl Drop for SimLineProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Across processes on the paced line: `trellis sim-line` (one process)
/// gives three pseudo-terminals; a gateway (another) serves two devices on
/// two of them; the CLI (a process per command) is the third station and
/// does Who-Is, ReadProperty, ReadPropertyMultiple and WriteProperty with a
/// read-back. The line's capture dissects cleanly in tshark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stations_in_separate_processes_talk_over_the_paced_pty_line() {
    let scratch = std::env::temp_dir().join(format!("trellis-sim-line-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let pcap = scratch.join("line.pcap");
    let (line, paths) =
        SimLineProcess::start(&["--baud", "38400", "--stations", "3", "--capture", pcap.to_str().unwrap()]);
    let config = scratch.join("mstp.toml");
    let mut toml = String::new();
    for (path, (mac, instance)) in paths.iter().zip([(5, 520_005), (6, 520_006)]) {
        toml.push_str(&format!(
            "[[device]]\ninstance = {instance}\nmstp = {{ device = \"{path}\", baud = 38400, mac = {mac}, max_master = 7 }}\n"
        ));
    }
    std::fs::write(&config, toml).unwrap();
    let gateway = crate::gateway::Gateway::start(&["run", "--config", config.to_str().unwrap()], &scratch)
        .unwrap_or_else(|log| panic!("the gateway exited before serving; stderr:\n{log}"));

    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"))
            .args(["--mstp", &paths[2], "--mac", "3", "--baud", "38400", "--max-master", "7"])
            .args(["--timeout-ms", "3000", "--retries", "2"])
            .args(args)
            .output()
            .expect("run trellis");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "trellis {args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };
    let found = cli(&["whois", "--wait", "4"]);
    assert!(found.contains("520005") && found.contains("520006"), "Who-Is found: {found}\n{}", gateway.log());
    let name = cli(&["read", "mstp:5", "device,520005", "object-name"]);
    assert!(!name.trim().is_empty());
    cli(&["write", "mstp:6", "analog-value,1", "present-value", "23.5", "--priority", "8"]);
    let back = cli(&["read", "mstp:6", "analog-value,1", "present-value"]);
    assert!(back.contains("23.5"), "read-back: {back}");
    let many = cli(&["readm", "mstp:5", "analog-value,1", "object-name", "present-value"]);
    assert!(many.lines().count() >= 2, "readm: {many}");

    drop(gateway);
    let summary = line.stop();
    // Token passing keeps the line collision-free when every station keeps
    // its timing; three processes on a loaded 2-core machine (the whole
    // suite runs beside them) miss a slot now and then — a reply or a token
    // use later than T_usage_timeout — which the protocol recovers from, and
    // the reads above succeeded. A broken token ring collides on most
    // passes; a loaded machine on a few in a hundred.
    let text = dissect_cleanly(&pcap, damaged_by_the_line(&summary));
    for expected in ["who-Is", "i-Am", "readProperty", "readPropertyMultiple", "writeProperty", "Token"] {
        assert!(text.contains(expected), "no {expected} in the capture");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `examples/mstp-rs485.toml` on a pseudo-terminal: the kernel's RS-485
/// mode is asked of the serial driver before anything is served, and a
/// driver without it (a pty has none) stops the gateway with an error that
/// names the port and says why, instead of a gateway that would hold the
/// bus or never be heard.
#[test]
fn the_rs485_example_refuses_a_serial_port_without_rs485_mode_and_says_so() {
    let pty = PtyPair::start("rs485");
    let scratch = crate::scratch::Scratch::new("mstp", "rs485");
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mstp-rs485.toml")).unwrap();
    assert!(example.contains("\"/dev/ttyS1\""));
    let config = scratch.path("mstp-rs485.toml");
    std::fs::write(&config, example.replace("\"/dev/ttyS1\"", &format!("\"{}\"", pty.a()))).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(["run", "--config", config.to_str().unwrap()])
        .env("XDG_CACHE_HOME", &scratch.0)
        .env("TRELLIS_ADMIN_SOCKET", crate::gateway::Gateway::socket_in(&scratch.0))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it must not serve:\n{log}");
    assert!(
        log.contains(pty.a())
            && log.contains("kernel RS-485 mode (TIOCSRS485) refused")
            && log.contains("no RS-485 mode"),
        "the error names the port and the reason:\n{log}"
    );
}
