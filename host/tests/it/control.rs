//! Device management executed by the served demo building, driven by our
//! client on loopback: DeviceCommunicationControl silences or stops
//! initiation and ends by itself or on `enable`; ReinitializeDevice restarts
//! the plugin warm (state kept) or cold (state and subscriptions gone);
//! time synchronization moves the clock the plugin reads.

use crate::peers::free_port;
use bacnet::enums::{EnableDisable, ErrorClass, ErrorCode, PropertyIdentifier as P, ReinitializedState};
use bacnet::tsm::TsmConfig;
use bacnet::{Date, ObjectIdentifier, ObjectType, Time, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use trellis::client::{Client, ClientConfig, ClientError, CovSubscription, Destination, DeviceAddress};
use trellis::plugin::{EngineConfig, PluginConfig, PluginEngine, PluginModel, builtin};
use trellis::server::{DeviceConfig, Server, build, serve};
use trellis_bip::BipConfig;

const DEVICE: u32 = 389_001;
const PASSWORD: &str = "s3cret";

fn av(i: u32) -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::ANALOG_VALUE, i).unwrap()
}

fn device_object() -> ObjectIdentifier {
    ObjectIdentifier::new(ObjectType::DEVICE, DEVICE).unwrap()
}

async fn serve_demo() -> (DeviceAddress, Arc<Server<PluginModel>>, tokio::task::JoinHandle<anyhow::Result<()>>) {
    let engine = PluginEngine::new(&EngineConfig {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let model = PluginModel::load(&engine, builtin::DEMO_BUILDING, PluginConfig::new("demo")).unwrap();
    let config = DeviceConfig { password: Some(PASSWORD.into()), ..DeviceConfig::default() };
    let server = Arc::new(build(model, config, 999).await.unwrap());
    let port = free_port();
    let task = tokio::spawn(serve(BipConfig::new(Ipv4Addr::LOCALHOST, port), server.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    (DeviceAddress::direct(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)), server, task)
}

/// A client that gives up quickly (one attempt of 500 ms): silence is the
/// expected answer in some steps.
async fn impatient() -> Client {
    let tsm = TsmConfig { apdu_timeout: Duration::from_millis(500), retries: 0, ..TsmConfig::default() };
    Client::bind(ClientConfig { bip: BipConfig::new(Ipv4Addr::LOCALHOST, 0), tsm, ..Default::default() }).await.unwrap()
}

async fn read_setpoint(c: &Client, device: &DeviceAddress) -> Result<f32, ClientError> {
    let v = c.read_property(device, av(1), P::PRESENT_VALUE, None).await?;
    match v.as_primitive() {
        Some(Value::Real(r)) => Ok(*r),
        other => panic!("setpoint is not a REAL: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcc_disable_silences_the_device_until_enabled_with_the_password() {
    let _timing = crate::peers::shared().await;
    let (device, _server, gateway) = serve_demo().await;
    let c = impatient().await;
    let wrong = c.device_communication_control(&device, None, EnableDisable::DISABLE, Some("guess")).await;
    assert_eq!(wrong.unwrap_err().bacnet_error(), Some((ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE)));
    let none = c.device_communication_control(&device, None, EnableDisable::DISABLE, None).await;
    assert_eq!(none.unwrap_err().bacnet_error(), Some((ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE)));
    read_setpoint(&c, &device).await.expect("answered while enabled");

    c.device_communication_control(&device, None, EnableDisable::DISABLE, Some(PASSWORD)).await.unwrap();
    let silent = read_setpoint(&c, &device).await.unwrap_err();
    assert!(matches!(silent, ClientError::Timeout { .. }), "no answer while disabled: {silent}");
    let scan = c.who_is(Destination::Device(device.clone()), None, Duration::from_millis(500)).await.unwrap();
    assert!(scan.collect().await.is_empty(), "no I-Am while disabled");

    c.device_communication_control(&device, None, EnableDisable::ENABLE, Some(PASSWORD)).await.unwrap();
    read_setpoint(&c, &device).await.expect("answered again once enabled");
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dcc_disable_initiation_stops_cov_notifications_but_not_answers() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo().await;
    let c = impatient().await;
    let mut notes = c.cov_notifications();
    c.subscribe_cov(&device, &CovSubscription::new(3, av(1)).lifetime(60)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), notes.recv()).await.expect("initial notification").unwrap();

    c.device_communication_control(&device, Some(1), EnableDisable::DISABLE_INITIATION, Some(PASSWORD)).await.unwrap();
    c.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(18.0).into(), Some(8)).await.unwrap();
    assert_eq!(read_setpoint(&c, &device).await.unwrap(), 18.0, "requests are still answered");
    let quiet = tokio::time::timeout(Duration::from_millis(800), notes.recv()).await;
    assert!(quiet.is_err(), "no notification while initiation is disabled: {quiet:?}");
    let scan = c.who_is(Destination::Device(device.clone()), None, Duration::from_millis(500)).await.unwrap();
    assert_eq!(scan.collect().await.len(), 1, "I-Am still answers Who-Is");
    assert!(
        server.cov().stats.suppressed.load(std::sync::atomic::Ordering::Relaxed) >= 1,
        "the change was suppressed, and counted"
    );

    c.device_communication_control(&device, None, EnableDisable::ENABLE, Some(PASSWORD)).await.unwrap();
    c.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(24.0).into(), Some(8)).await.unwrap();
    let back = tokio::time::timeout(Duration::from_secs(5), notes.recv()).await.expect("notifications resume").unwrap();
    let pv = back.notification.values.iter().find(|v| v.property == P::PRESENT_VALUE).unwrap();
    assert_eq!(pv.value.as_primitive(), Some(&Value::Real(24.0)));
    gateway.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_start_keeps_the_written_setpoint_and_a_cold_start_forgets_it() {
    let _timing = crate::peers::shared().await;
    let (device, server, gateway) = serve_demo().await;
    let c = impatient().await;
    let initial = read_setpoint(&c, &device).await.unwrap();
    c.write_property(&device, av(1), P::PRESENT_VALUE, None, Value::Real(26.5).into(), Some(8)).await.unwrap();
    c.subscribe_cov(&device, &CovSubscription::new(8, av(1)).lifetime(600)).await.unwrap();

    let refused = c.reinitialize_device(&device, ReinitializedState::WARMSTART, Some("guess")).await.unwrap_err();
    assert_eq!(refused.bacnet_error(), Some((ErrorClass::SECURITY, ErrorCode::PASSWORD_FAILURE)));
    let backup = c.reinitialize_device(&device, ReinitializedState::START_BACKUP, Some(PASSWORD)).await.unwrap_err();
    assert_eq!(backup.bacnet_error(), Some((ErrorClass::SERVICES, ErrorCode::OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED)));

    let restarts = || server.model().health().restarts;
    let before = restarts();
    c.reinitialize_device(&device, ReinitializedState::WARMSTART, Some(PASSWORD)).await.unwrap();
    wait_for(|| restarts() > before).await;
    assert_eq!(read_setpoint(&c, &device).await.unwrap(), 26.5, "a warm start keeps the state");
    assert_eq!(server.cov().subscriptions(), 1, "and the subscriptions");

    c.reinitialize_device(&device, ReinitializedState::COLDSTART, Some(PASSWORD)).await.unwrap();
    wait_for(|| restarts() > before + 1).await;
    assert_eq!(read_setpoint(&c, &device).await.unwrap(), initial, "a cold start begins from scratch");
    assert_eq!(server.cov().subscriptions(), 0, "and drops the subscriptions");
    gateway.abort();
}

async fn wait_for(done: impl Fn() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the restart did not happen within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utc_time_synchronization_moves_the_clock_the_plugin_reads() {
    let _timing = crate::peers::shared().await;
    let (device, _server, gateway) = serve_demo().await;
    let c = impatient().await;
    let date = Date { year: (2031 - 1900) as u8, month: 7, day: 4, weekday: 5 };
    let time = Time { hour: 9, minute: 30, second: 0, hundredths: 0 };
    c.utc_time_synchronization(Destination::Device(device.clone()), date, time).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let local_date = c.read_property(&device, device_object(), P::LOCAL_DATE, None).await.unwrap();
    let Some(Value::Date(d)) = local_date.as_primitive() else { panic!("Local_Date: {local_date:?}") };
    assert_eq!((d.year, d.month, d.day), (131, 7, 4), "the plugin's Device object reads the synchronized date");
    let local_time = c.read_property(&device, device_object(), P::LOCAL_TIME, None).await.unwrap();
    let Some(Value::Time(t)) = local_time.as_primitive() else { panic!("Local_Time: {local_time:?}") };
    assert_eq!((t.hour, t.minute), (9, 30));
    gateway.abort();
}
