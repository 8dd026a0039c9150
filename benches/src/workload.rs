//! The service load generator: every BACnet service, through our own client.
//!
//! [`crate::load`] is the fastest generator we can write, but it speaks one
//! request (a ReadProperty template). The other scenarios need segmented
//! answers reassembled, writes, COV subscriptions and Who-Is, so they drive
//! the `trellis` crate's [`Client`] instead: each simulated client is one
//! `Client` (its own UDP port, its own transaction state machine), with
//! `in_flight` tasks each running one request at a time. The client costs
//! more per request than the raw generator, and that cost is the same for
//! every target, so the ratios between servers stay fair; the absolute
//! figures are not a server's limit (see each scenario's `client_cpu`).
//!
//! A request that fails is classified like [`crate::load`] does it
//! (admission Abort, timeout, other); the client runs with no retries, so a
//! timeout is a lost request, not a hidden retransmission.
//!
//! Runs on the calling thread (one current-thread tokio runtime): no
//! cross-thread wake-ups, and the caller pins it like the raw generator.

use crate::load::Mark;
use crate::stats::{Latencies, Outcomes};
use bacnet::enums::{PropertyIdentifier, UnconfirmedServiceChoice};
use bacnet::services::{PropertyReference, ReadAccessSpecification, WhoIs};
use bacnet::tsm::TsmConfig;
use bacnet::{AnyValue, ObjectIdentifier, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::rc::Rc;
use std::time::{Duration, Instant};
use trellis::client::{Client, ClientConfig, ClientError, CovSubscription, Destination, DeviceAddress};

/// One request of the workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// ReadProperty of Present_Value.
    Read(ObjectIdentifier),
    /// ReadPropertyMultiple of these properties of each object; any
    /// per-property error in the answer counts the request as an Error.
    ReadMultiple(Vec<ObjectIdentifier>, Vec<PropertyIdentifier>),
    /// WriteProperty of Present_Value (a REAL) at priority 16.
    Write(ObjectIdentifier, f32),
    /// SubscribeCOV, unconfirmed notifications, lifetime 300 s (a renewal
    /// when the same client subscribed to the object before).
    Subscribe(ObjectIdentifier),
    /// Who-Is without a range, sent to the target: unconfirmed, so it
    /// counts as answered when sent; the I-Ams heard are counted apart.
    WhoIs,
}

impl Op {
    /// The name this kind of request is reported under.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Read(_) => "read",
            Op::ReadMultiple(..) => "rpm",
            Op::Write(..) => "write",
            Op::Subscribe(_) => "subscribe",
            Op::WhoIs => "who-is",
        }
    }
}

/// One workload step.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// The server under test.
    pub target: SocketAddrV4,
    /// Simulated clients (one [`Client`], one UDP port, each).
    pub clients: usize,
    /// Requests each client keeps in flight (one task each).
    pub in_flight: usize,
    /// Requests sent before this are not counted.
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// APDU timeout; there are no retries.
    pub timeout: Duration,
}

/// What one kind of request did in the measured window.
#[derive(Debug, Clone, Default)]
pub struct KindResult {
    /// Outcomes.
    pub outcomes: Outcomes,
    /// Round trips of the successful ones.
    pub latencies: Latencies,
}

/// What a workload step measured.
#[derive(Debug, Clone, Default)]
pub struct WorkloadResult {
    /// Per kind of request ([`Op::kind`]).
    pub kinds: BTreeMap<&'static str, KindResult>,
    /// I-Am answers heard by the clients (the target may broadcast them
    /// where our clients cannot hear).
    pub i_ams: u64,
}

impl WorkloadResult {
    /// Every kind together.
    pub fn total(&self) -> KindResult {
        let mut t = KindResult::default();
        for k in self.kinds.values() {
            t.outcomes.merge(&k.outcomes);
            t.latencies.merge(k.latencies.clone());
        }
        t
    }
}

/// Client settings for a workload: APDU timeout `timeout`, no retries,
/// `in_flight` requests outstanding per device.
pub fn client_config(timeout: Duration, in_flight: usize) -> ClientConfig {
    let mut c = ClientConfig::default();
    c.bip.bind = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0);
    c.tsm = TsmConfig { apdu_timeout: timeout, retries: 0, max_in_flight_per_peer: in_flight.max(1), ..c.tsm };
    c
}

/// Run one step: `next_op(client, sequence)` chooses each request; `mark` is
/// called at the start and the end of the measured window.
pub fn run(
    cfg: &WorkloadConfig,
    next_op: impl Fn(usize, u64) -> Op + 'static,
    mark: impl FnMut(Mark),
) -> anyhow::Result<WorkloadResult> {
    anyhow::ensure!(cfg.clients >= 1 && cfg.in_flight >= 1, "clients and in_flight ≥ 1");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, run_async(cfg.clone(), Rc::new(next_op), mark))
}

async fn run_async(
    cfg: WorkloadConfig,
    next_op: Rc<dyn Fn(usize, u64) -> Op>,
    mut mark: impl FnMut(Mark),
) -> anyhow::Result<WorkloadResult> {
    let device = DeviceAddress::direct(cfg.target);
    let mut clients = Vec::with_capacity(cfg.clients);
    for _ in 0..cfg.clients {
        clients.push(Client::bind(client_config(cfg.timeout, cfg.in_flight)).await?);
    }
    let result = Rc::new(RefCell::new(WorkloadResult::default()));
    let i_ams = Rc::new(RefCell::new(0u64));
    let t0 = Instant::now();
    let measure_from = t0 + cfg.warmup;
    let send_until = measure_from + cfg.measure;
    let mut tasks = Vec::new();
    for (n, client) in clients.iter().enumerate() {
        let mut heard = client.subscribe_unconfirmed();
        let counter = i_ams.clone();
        tokio::task::spawn_local(async move {
            while let Ok(u) = heard.recv().await {
                if u.service == UnconfirmedServiceChoice::I_AM {
                    *counter.borrow_mut() += 1;
                }
            }
        });
        for lane in 0..cfg.in_flight {
            let (client, device, next_op, result) = (client.clone(), device.clone(), next_op.clone(), result.clone());
            let lanes = cfg.in_flight as u64;
            tasks.push(tokio::task::spawn_local(async move {
                // Each lane takes every `lanes`-th sequence number of its client.
                let mut seq = lane as u64;
                // Lanes start spread over the first half of the warm-up.
                let start =
                    t0 + cfg.warmup / 2 * (n * cfg.in_flight + lane) as u32 / (cfg.clients * cfg.in_flight) as u32;
                tokio::time::sleep_until(start.into()).await;
                while Instant::now() < send_until {
                    let op = next_op(n, seq);
                    seq += lanes;
                    let sent = Instant::now();
                    let outcome = execute(&client, &device, &op).await;
                    if sent >= measure_from {
                        let mut r = result.borrow_mut();
                        let k = r.kinds.entry(op.kind()).or_default();
                        match outcome {
                            Ok(()) => {
                                k.outcomes.ok += 1;
                                // A Who-Is has no answer to wait for: its
                                // send time is no round trip.
                                if op != Op::WhoIs {
                                    k.latencies.record(sent.elapsed());
                                }
                            }
                            Err(e) => classify(&e, &mut k.outcomes),
                        }
                    }
                }
            }));
        }
    }
    tokio::time::sleep_until(measure_from.into()).await;
    mark(Mark::WindowStart);
    tokio::time::sleep_until(send_until.into()).await;
    mark(Mark::WindowEnd);
    for t in tasks {
        t.await?;
    }
    drop(clients);
    let mut r = result.take();
    r.i_ams = *i_ams.borrow();
    Ok(r)
}

/// Count a failed request.
pub fn classify(e: &ClientError, o: &mut Outcomes) {
    match e {
        e if e.is_admission_refusal() => o.admission += 1,
        ClientError::Timeout { .. } => o.timeout += 1,
        ClientError::Abort { .. } => o.abort += 1,
        ClientError::Reject(_) => o.reject += 1,
        ClientError::Bacnet { .. } | ClientError::WriteFailed { .. } => o.error += 1,
        ClientError::Io(_) => o.io_errors += 1,
        _ => o.unexpected += 1,
    }
}

/// Run one request to its end.
pub async fn execute(client: &Client, device: &DeviceAddress, op: &Op) -> Result<(), ClientError> {
    match op {
        Op::Read(object) => {
            client.read_property(device, *object, PropertyIdentifier::PRESENT_VALUE, None).await.map(drop)
        }
        Op::ReadMultiple(objects, properties) => {
            let properties: Vec<_> = properties.iter().map(|&p| PropertyReference::new(p)).collect();
            let specs = objects
                .iter()
                .map(|&object| ReadAccessSpecification { object, properties: properties.clone() })
                .collect();
            let results = client.read_property_multiple(device, specs).await?;
            match results.iter().flat_map(|r| &r.results).find_map(|r| r.outcome.as_ref().err()) {
                Some(e) => Err(ClientError::Bacnet { class: e.class, code: e.code }),
                None => Ok(()),
            }
        }
        Op::Write(object, value) => {
            let value = AnyValue::primitive(Value::Real(*value));
            client.write_property(device, *object, PropertyIdentifier::PRESENT_VALUE, None, value, Some(16)).await
        }
        Op::Subscribe(object) => {
            let s = CovSubscription::new(object.instance, *object).lifetime(300);
            client.subscribe_cov(device, &s).await
        }
        Op::WhoIs => {
            let body = bacnet::services::ServiceCodec::to_vec(&WhoIs { range: None });
            client.send_unconfirmed(Destination::Device(device.clone()), UnconfirmedServiceChoice::WHO_IS, body).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::ObjectType;

    fn config(target: SocketAddrV4, timeout_ms: u64) -> WorkloadConfig {
        WorkloadConfig {
            target,
            clients: 2,
            in_flight: 2,
            warmup: Duration::from_millis(20),
            measure: Duration::from_millis(300),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    fn analog_input_1() -> ObjectIdentifier {
        ObjectIdentifier::new(ObjectType::ANALOG_INPUT, 1).unwrap()
    }

    #[test]
    fn against_a_silent_server_every_measured_request_is_a_timeout() {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let std::net::SocketAddr::V4(addr) = silent.local_addr().unwrap() else { unreachable!() };
        let mut marks = Vec::new();
        let r = run(&config(addr, 100), |_, _| Op::Read(analog_input_1()), |m| marks.push(m)).unwrap();
        assert_eq!(marks, [Mark::WindowStart, Mark::WindowEnd]);
        let o = r.kinds["read"].outcomes;
        assert_eq!(o.ok, 0);
        assert!(o.timeout > 0 && o.requests() == o.timeout, "{o:?}");
    }

    #[test]
    fn each_kind_is_counted_apart_and_errors_are_classified() {
        // A device with only its Device object: reading analog-input,1 is an
        // Error (unknown object); a Who-Is is sent and answered with an I-Am.
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let port = crate::target::free_port().unwrap();
        let addr = SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port);
        let model = trellis::server::DeviceOnlyModel::new(7, "only a device");
        let server = runtime.block_on(trellis::server::build(model, trellis::server::DeviceConfig::default(), 999));
        runtime.spawn(trellis::server::serve(trellis_bip::BipConfig::new(*addr.ip(), port), server.unwrap()));
        std::thread::sleep(Duration::from_millis(200));
        let r = run(
            &config(addr, 2000),
            |_, seq| if seq % 2 == 0 { Op::Read(analog_input_1()) } else { Op::WhoIs },
            |_| {},
        )
        .unwrap();
        let (read, who_is) = (&r.kinds["read"], &r.kinds["who-is"]);
        assert!(read.outcomes.error > 0 && read.outcomes.ok == 0, "{:?}", read.outcomes);
        assert!(read.latencies.is_empty(), "failed requests have no round trip");
        assert!(who_is.outcomes.ok > 0 && who_is.latencies.is_empty(), "{:?}", who_is.outcomes);
        assert!(r.i_ams > 0, "the device answers Who-Is with an I-Am to the requester");
        assert_eq!(r.total().outcomes.requests(), read.outcomes.requests() + who_is.outcomes.requests());
    }
}
