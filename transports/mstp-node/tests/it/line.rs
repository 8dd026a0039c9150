//! The node on the gateway's simulated line, in virtual time: a
//! [`Uart`] over a station of the line, and a loop that runs the line's
//! other stations (the gateway's driver code) and polls the node in turn.

use bacnet::apdu::Apdu;
use bacnet::enums::EngineeringUnits;
use bacnet::npdu::{Npdu, NpduPayload};
use std::collections::VecDeque;
use trellis_mstp::sim::{LineConfig, LineFrame, SimPort, Simulation};
use trellis_mstp::{MstpHandle, Port, Received, Rx, RxOctet};
use trellis_mstp_node::{Device, LineError, Node, NodeConfig, Point, PointKind, Uart};

pub const BAUD: u32 = 38_400;
pub const NODE_MAC: u8 = 5;
pub const GATEWAY_MAC: u8 = 0;
pub const DEVICE_INSTANCE: u32 = 7805;
/// How often the loop polls the node: about a fifth of an octet time at
/// 38,400 baud, as a microcontroller's main loop would (it runs far faster).
pub const POLL_EVERY: u64 = 50;

/// The node's serial port: a station of the simulated line.
pub struct SimUart {
    port: SimPort,
    now: u64,
    waiting: VecDeque<RxOctet>,
    scratch: Vec<RxOctet>,
}

impl Uart for SimUart {
    fn read(&mut self) -> Option<Result<u8, LineError>> {
        if self.waiting.is_empty() {
            self.port.read(self.now, &mut self.scratch).expect("a simulated port reads");
            self.waiting.extend(self.scratch.drain(..));
        }
        self.waiting.pop_front().map(|o| match o.rx {
            Rx::Octet(b) => Ok(b),
            Rx::Error => Err(LineError),
        })
    }

    fn write(&mut self, octets: &[u8]) {
        self.port.write(self.now, octets).expect("a simulated port writes");
    }
}

/// The table the firmware image serves (transports/mstp-node/firmware).
pub fn points() -> [Point; 4] {
    [
        Point::new(PointKind::AnalogInput(EngineeringUnits::DEGREES_CELSIUS), 1, "Supply Air Temp", 18.5),
        Point::new(PointKind::AnalogValue(EngineeringUnits::DEGREES_CELSIUS), 1, "Zone Setpoint", 21.0),
        Point::new(PointKind::BinaryInput, 1, "Fan Status", 0.0),
        Point::new(PointKind::BinaryValue, 1, "Fan Command", 0.0),
    ]
}

pub fn device(points: &mut [Point]) -> Device<'_> {
    Device {
        instance: DEVICE_INSTANCE,
        name: "Trellis MS/TP node 5",
        vendor_name: "Trellis",
        vendor_identifier: 0xFFFF,
        model_name: "trellis-mstp-node test",
        firmware_revision: "0.1.0",
        application_software_version: "tests",
        database_revision: 1,
        points,
    }
}

/// A line with the node on it and, if asked, the gateway's MS/TP driver
/// (station 0) as the test's network layer sees it.
pub struct Segment {
    pub sim: Simulation,
    pub node: Node,
    pub uart: SimUart,
    pub gateway: Option<MstpHandle>,
    invoke: u8,
}

impl Segment {
    pub fn new(with_gateway: bool, config: LineConfig) -> Segment {
        let mut sim = Simulation::new(config);
        let gateway = with_gateway.then(|| {
            sim.add_station(bacnet::mstp::MasterConfig::new(GATEWAY_MAC, config.baud)).expect("the gateway's node")
        });
        let port = sim.line().attach();
        let node = Node::new(NodeConfig::new(NODE_MAC, config.baud), 0).expect("a valid node");
        Segment {
            sim,
            node,
            uart: SimUart { port, now: 0, waiting: VecDeque::new(), scratch: Vec::new() },
            gateway,
            invoke: 0,
        }
    }

    /// Run line, gateway and node for `duration` µs.
    pub fn run_for(&mut self, device: &mut Device<'_>, duration: u64) {
        let until = self.sim.now() + duration;
        while self.sim.now() < until {
            let t = self.sim.now() + POLL_EVERY;
            self.sim.run_until(t);
            self.uart.now = t;
            self.node.poll(t as u32, &mut self.uart, device);
        }
    }

    pub fn gateway(&self) -> &MstpHandle {
        self.gateway.as_ref().expect("a segment with the gateway")
    }

    /// Everything the gateway's network layer has received.
    pub fn gateway_received(&self) -> Vec<Received> {
        std::iter::from_fn(|| self.gateway().try_recv().ok()).collect()
    }

    /// Send a confirmed request from the gateway and run until its answer
    /// arrives (at most 2 s of line time); the answer's NPDU.
    pub fn ask(&mut self, device: &mut Device<'_>, npdu: Vec<u8>) -> Vec<u8> {
        self.gateway().send(NODE_MAC, npdu, true).expect("the gateway queues the request");
        for _ in 0..200 {
            self.run_for(device, 10_000);
            if let Some(r) = self.gateway_received().into_iter().find(|r| r.source_mac == NODE_MAC && !r.broadcast) {
                return r.npdu;
            }
        }
        panic!("no answer from the node in 2 s of line time")
    }

    pub fn frames(&self) -> Vec<LineFrame> {
        self.sim.line().frames()
    }
}

/// The APDU of an NPDU, which must carry one.
pub fn apdu_of(npdu: &[u8]) -> Apdu<'_> {
    let n = Npdu::decode(npdu).expect("a valid NPDU");
    let NpduPayload::Apdu(apdu) = n.payload else { panic!("not an APDU: {npdu:02x?}") };
    Apdu::decode(apdu).expect("a valid APDU")
}

/// How the node answered a confirmed request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A ReadProperty-ACK's value.
    Value(bacnet::AnyValue),
    /// A SimpleACK.
    Ok,
    /// An Error PDU.
    Error(bacnet::ErrorClass, bacnet::ErrorCode),
    /// A Reject PDU.
    Reject(bacnet::RejectReason),
    /// An Abort PDU from the server.
    Abort(bacnet::AbortReason),
}

/// A confirmed request NPDU: no routing, expecting a reply, invoke ID
/// `invoke`, the requester accepting APDUs up to `max_apdu_code`
/// (Clause 20.1.2.5: 0 = 50 octets … 5 = 1476).
pub fn confirmed(invoke: u8, max_apdu_code: u8, service: bacnet::ConfirmedServiceChoice, body: &[u8]) -> Vec<u8> {
    let mut npdu = vec![0x01, 0x04, 0x00, max_apdu_code, invoke, service.0];
    npdu.extend_from_slice(body);
    npdu
}

pub fn decode_answer(npdu: &[u8], invoke: u8) -> Answer {
    use bacnet::services::ServiceCodec;
    match apdu_of(npdu) {
        Apdu::ComplexAck(ack) => {
            assert_eq!(ack.invoke_id, invoke);
            let ack = bacnet::services::read_property::ReadPropertyAck::decode(ack.body).expect("a ReadProperty-ACK");
            Answer::Value(ack.value)
        }
        Apdu::SimpleAck { invoke_id, .. } => {
            assert_eq!(invoke_id, invoke);
            Answer::Ok
        }
        Apdu::Error { invoke_id, body, .. } => {
            assert_eq!(invoke_id, invoke);
            let e = bacnet::services::error::BacnetError::decode(body).expect("an Error PDU");
            Answer::Error(e.class, e.code)
        }
        Apdu::Reject { invoke_id, reason } => {
            assert_eq!(invoke_id, invoke);
            Answer::Reject(reason)
        }
        Apdu::Abort { server, invoke_id, reason } => {
            assert!(server, "an Abort from the server");
            assert_eq!(invoke_id, invoke);
            Answer::Abort(reason)
        }
        other => panic!("not an answer: {other:?}"),
    }
}

/// Object identifiers by type and instance.
pub fn oid(t: bacnet::ObjectType, instance: u32) -> bacnet::ObjectIdentifier {
    bacnet::ObjectIdentifier::new(t, instance).expect("a valid identifier")
}

impl Segment {
    /// ReadProperty from the gateway.
    pub fn read(
        &mut self,
        device: &mut Device<'_>,
        object: bacnet::ObjectIdentifier,
        property: bacnet::PropertyIdentifier,
        array_index: Option<u32>,
    ) -> Answer {
        use bacnet::services::ServiceCodec;
        let mut body = Vec::new();
        bacnet::services::read_property::ReadPropertyRequest { object, property, array_index }.encode(&mut body);
        let invoke = self.next_invoke();
        let npdu = confirmed(invoke, 5, bacnet::ConfirmedServiceChoice::READ_PROPERTY, &body);
        let answer = self.ask(device, npdu);
        decode_answer(&answer, invoke)
    }

    /// WriteProperty from the gateway.
    pub fn write(
        &mut self,
        device: &mut Device<'_>,
        object: bacnet::ObjectIdentifier,
        property: bacnet::PropertyIdentifier,
        value: bacnet::Value,
        priority: Option<u8>,
    ) -> Answer {
        use bacnet::services::ServiceCodec;
        let mut body = Vec::new();
        bacnet::services::write_property::WritePropertyRequest {
            object,
            property,
            array_index: None,
            value: bacnet::AnyValue::primitive(value),
            priority,
        }
        .encode(&mut body);
        let invoke = self.next_invoke();
        let npdu = confirmed(invoke, 5, bacnet::ConfirmedServiceChoice::WRITE_PROPERTY, &body);
        let answer = self.ask(device, npdu);
        decode_answer(&answer, invoke)
    }

    fn next_invoke(&mut self) -> u8 {
        self.invoke = self.invoke.wrapping_add(1);
        self.invoke
    }
}
