//! The heap-less MS/TP node (`trellis_mstp_node::Node`) fed arbitrary
//! octets with arbitrary gaps, UART errors and silences, mixed with
//! well-formed frames (Token, Poll For Master, BACnet Data with any NPDU) to
//! its address or another.
//!
//! Checks, for every input:
//! - nothing panics;
//! - everything the node writes is one whole, valid, standard frame from
//!   its own address;
//! - a data frame it sends carries an NPDU that decodes, and one sent to a
//!   station (not broadcast) is an answer to a confirmed request: a
//!   ComplexACK, SimpleACK, Error, Reject or Abort (a request it cannot
//!   answer gets Reply Postponed, a frame without data).
//!
//! Input: operations, each an opcode octet and its operands (see `run`).
#![no_main]

use bacnet::apdu::Apdu;
use bacnet::mstp::{Frame, FrameType};
use bacnet::npdu::{Npdu, NpduPayload};
use std::collections::VecDeque;
use trellis_mstp_node::{Device, LineError, Node, NodeConfig, Point, PointKind, Uart};

const TS: u8 = 5;

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

#[derive(Default)]
struct Script {
    input: VecDeque<Result<u8, LineError>>,
    sent: Vec<Vec<u8>>,
}

impl Uart for Script {
    fn read(&mut self) -> Option<Result<u8, LineError>> {
        self.input.pop_front()
    }

    fn write(&mut self, octets: &[u8]) {
        self.sent.push(octets.to_vec());
    }
}

fn check_sent(octets: &[u8]) {
    let (frame, len) = Frame::decode(octets, &mut []).unwrap_or_else(|e| panic!("invalid frame ({e}): {octets:02x?}"));
    assert_eq!(len, octets.len(), "not one whole frame: {octets:02x?}");
    assert_eq!(frame.source, TS);
    assert!(!frame.frame_type.is_cobs());
    if frame.frame_type == FrameType::TEST_RESPONSE {
        return;
    }
    if frame.frame_type != FrameType::BACNET_DATA_NOT_EXPECTING_REPLY {
        assert!(frame.data.is_empty());
        return;
    }
    let npdu = Npdu::decode(frame.data).expect("the node's NPDU decodes");
    let NpduPayload::Apdu(apdu) = npdu.payload else { panic!("the node sent a network message") };
    let apdu = Apdu::decode(apdu).expect("the node's APDU decodes");
    if frame.destination != 255 {
        assert!(
            matches!(
                apdu,
                Apdu::ComplexAck(_) | Apdu::SimpleAck { .. } | Apdu::Error { .. } | Apdu::Reject { .. } | Apdu::Abort { .. }
            ),
            "not an answer: {apdu:?}"
        );
    }
}

fn run(data: &[u8]) {
    let mut points = [
        Point::new(PointKind::AnalogInput(bacnet::EngineeringUnits::DEGREES_CELSIUS), 1, "Supply Air Temp", 18.5),
        Point::new(PointKind::AnalogValue(bacnet::EngineeringUnits::DEGREES_CELSIUS), 1, "Zone Setpoint", 21.0),
        Point::new(PointKind::BinaryInput, 1, "Fan Status", 0.0),
        Point::new(PointKind::BinaryValue, 1, "Fan Command", 0.0),
    ];
    let mut device = Device {
        instance: 7805,
        name: "fuzz",
        vendor_name: "Trellis",
        vendor_identifier: 0xFFFF,
        model_name: "fuzz",
        firmware_revision: "0",
        application_software_version: "0",
        database_revision: 1,
        points: &mut points,
    };
    let mut node = Node::new(NodeConfig::new(TS, 38_400), 0).expect("a valid node");
    let mut uart = Script::default();
    let mut now: u32 = 0;
    let mut input = data;
    let mut take = |n: usize| -> &[u8] {
        let (a, b) = input.split_at(n.min(input.len()));
        input = b;
        a
    };
    loop {
        let &[op] = take(1) else { break };
        match op >> 5 {
            // Raw octets, each after a gap of (op & 7) × 100 µs.
            0 | 1 => {
                let gap = u32::from(op & 7) * 100;
                for &b in take(usize::from(op & 0x1F) + 1) {
                    uart.input.push_back(Ok(b));
                    now = now.wrapping_add(gap);
                    node.poll(now, &mut uart, &mut device);
                }
            }
            // A UART error.
            2 => uart.input.push_back(Err(LineError)),
            // Silence: (op & 0x1F) ms, polled every 250 µs.
            3 => {
                for _ in 0..u32::from(op & 0x1F) * 4 {
                    now = now.wrapping_add(250);
                    node.poll(now, &mut uart, &mut device);
                }
            }
            // A well-formed frame: op & 3 picks Token, Poll For Master,
            // BACnet Data Expecting Reply or Not; op & 4 sends it to the
            // node (else to the next octet's address); then the source and,
            // for data, a length octet and the NPDU.
            _ => {
                let frame_type = [
                    FrameType::TOKEN,
                    FrameType::POLL_FOR_MASTER,
                    FrameType::BACNET_DATA_EXPECTING_REPLY,
                    FrameType::BACNET_DATA_NOT_EXPECTING_REPLY,
                ][usize::from(op & 3)];
                let destination = if op & 4 != 0 { TS } else { take(1).first().copied().unwrap_or(TS) };
                let source = take(1).first().copied().unwrap_or(0);
                let npdu = if frame_type.carries_npdu() {
                    let n = take(1).first().copied().unwrap_or(0);
                    take(usize::from(n)).to_vec()
                } else {
                    Vec::new()
                };
                let frame = Frame { frame_type, destination, source, data: &npdu };
                if let Ok(octets) = frame.to_vec() {
                    uart.input.extend(octets.into_iter().map(Ok));
                }
                now = now.wrapping_add(300);
                node.poll(now, &mut uart, &mut device);
            }
        }
    }
    for _ in 0..8 {
        now = now.wrapping_add(500);
        node.poll(now, &mut uart, &mut device);
    }
    for octets in &uart.sent {
        check_sent(octets);
    }
}
