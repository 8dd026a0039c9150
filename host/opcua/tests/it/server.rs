//! The server over a fake point source, through the crate's own client
//! ([`trellis_opcua::client::Puller`]) and async-opcua's session:
//!
//! ```text
//! client ──Read (maxAge 0)──▶ server ──read──▶ point source (21.5)
//! client ──Write 19.0──▶ server ──write at priority 8──▶ point source; refused one ──▶ BadNotWritable
//! gateway ──Updater::changed(23.0)──▶ server ──DataChange──▶ client's subscription
//! ```

use bacnet::enums::{ErrorClass, ErrorCode, ObjectType, PropertyIdentifier as P};
use bacnet::services::BacnetError;
use bacnet::{AnyValue, ObjectIdentifier, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use trellis_opcua::auth::{Access, User};
use trellis_opcua::client::{PullEvent, PullSettings, Puller};
use trellis_opcua::opcua::types::Variant;
use trellis_opcua::server::{Security, Settings};
use trellis_opcua::source::{DeviceView, ObjectView, PointFault, PointRef, PointSource};

const DEVICE: u32 = 7;

fn av(instance: u32) -> ObjectIdentifier {
    ObjectIdentifier { object_type: ObjectType::ANALOG_VALUE, instance }
}

/// Two analog values; AV 2 refuses writes.
#[derive(Default)]
struct Fake {
    values: Mutex<std::collections::HashMap<u32, f32>>,
    writes: Mutex<Vec<(PointRef, AnyValue, u8)>>,
}

impl PointSource for Fake {
    async fn devices(&self) -> Vec<DeviceView> {
        let object = |i: u32, name: &str| ObjectView {
            id: av(i),
            name: name.into(),
            description: Some("a test point".into()),
            units: Some(62),
            properties: vec![(P::PRESENT_VALUE, AnyValue::primitive(Value::Real(0.0)))],
        };
        vec![DeviceView {
            instance: DEVICE,
            name: "Test Device".into(),
            objects: vec![object(1, "Setpoint"), object(2, "Locked")],
        }]
    }

    async fn read(&self, points: &[PointRef]) -> Vec<Result<AnyValue, PointFault>> {
        let values = self.values.lock().unwrap();
        points
            .iter()
            .map(|p| Ok(AnyValue::primitive(Value::Real(values.get(&p.object.instance).copied().unwrap_or(21.5)))))
            .collect()
    }

    async fn write(&self, point: PointRef, value: AnyValue, priority: u8) -> Result<(), PointFault> {
        if point.object.instance == 2 {
            return Err(PointFault::Bacnet(BacnetError::new(ErrorClass::PROPERTY, ErrorCode::WRITE_ACCESS_DENIED)));
        }
        if let Some(Value::Real(v)) = value.as_primitive() {
            self.values.lock().unwrap().insert(point.object.instance, *v);
        }
        self.writes.lock().unwrap().push((point, value, priority));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_writes_and_changes_reach_a_client() {
    let dir = std::env::temp_dir().join(format!("trellis-opcua-it-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let source = Arc::new(Fake::default());
    let settings = Settings {
        bind: "127.0.0.1:0".parse().unwrap(),
        host_name: "127.0.0.1".into(),
        application_name: "test".into(),
        application_uri: "urn:trellis:test".into(),
        security: vec![Security::None],
        anonymous: Access::None,
        users: vec![User { name: "op".into(), password: "pw".into(), write: true }],
        pki_dir: dir.join("server-pki"),
        trust_client_certs: false,
        node_ids: Some(dir.join("node-ids")),
        write_priority: 8,
        max_sessions: 4,
        min_publishing_interval_ms: 1,
    };
    let running = trellis_opcua::server::start(settings, source.clone()).await.unwrap();
    let point = |i| PointRef { device: DEVICE, object: av(i), property: P::PRESENT_VALUE };
    let (setpoint, locked) = (running.updater.node_of(point(1)).unwrap(), running.updater.node_of(point(2)).unwrap());

    let (puller, mut events) = Puller::start(PullSettings {
        url: running.url.clone(),
        security: Security::None,
        user: Some(("op".into(), "pw".into())),
        pki_dir: dir.join("client-pki"),
        trust_server_certs: true,
        application_uri: "urn:trellis:test:client".into(),
        publishing: Duration::from_millis(10),
        nodes: vec![setpoint, locked],
    })
    .await
    .unwrap();
    let next_value = async |events: &mut tokio::sync::mpsc::Receiver<PullEvent>, index: usize| loop {
        match tokio::time::timeout(Duration::from_secs(30), events.recv()).await.expect("an event within 30 s") {
            Some(PullEvent::Value { index: i, value }) if i == index => return value.value,
            Some(_) => continue,
            None => panic!("the client ended"),
        }
    };
    // The first value of the subscription is a read of the point source.
    assert_eq!(next_value(&mut events, 0).await, Some(Variant::Float(21.5)));

    // A write reaches the point source at the configured priority.
    puller.write(0, Variant::Double(19.0)).await.unwrap();
    let writes = source.writes.lock().unwrap().clone();
    assert_eq!(writes, vec![(point(1), AnyValue::primitive(Value::Real(19.0)), 8)]);
    // A BACnet refusal comes back as its status code.
    let refused = puller.write(1, Variant::Double(1.0)).await.unwrap_err();
    assert_eq!(refused, trellis_opcua::opcua::types::StatusCode::BadNotWritable);

    // A change the gateway pushes reaches the subscription.
    assert_eq!(running.updater.changed(DEVICE, av(1), [(P::PRESENT_VALUE, AnyValue::primitive(Value::Real(23.0)))]), 1);
    loop {
        if next_value(&mut events, 0).await == Some(Variant::Float(23.0)) {
            break;
        }
    }
    running.handle.cancel();
    let _ = std::fs::remove_dir_all(&dir);
}
