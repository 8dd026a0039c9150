//! Whatever arrives on the line, the node neither panics nor sends anything
//! but valid frames from its own address; whatever a request holds, the
//! answer is one of the protocol's.

use crate::line::{device, points};
use bacnet::apdu::Apdu;
use bacnet::mstp::{Frame, FrameType};
use bacnet::npdu::{Npdu, NpduPayload};
use proptest::prelude::*;
use std::collections::VecDeque;
use trellis_mstp_node::{LineError, Node, NodeConfig, Uart};

const TS: u8 = 5;

/// Tturnaround at 38,400 baud: 40 bit times.
const TURNAROUND: u32 = 1_042;

/// A UART fed by the test, keeping what the node writes and checking that
/// it never writes sooner than Tturnaround after the last octet it read.
#[derive(Default)]
pub(crate) struct Script {
    pub(crate) now: u32,
    pub(crate) input: VecDeque<Result<u8, LineError>>,
    last_read: Option<u32>,
    pub(crate) sent: Vec<Vec<u8>>,
    pub(crate) sent_at: Vec<u32>,
}

impl Uart for Script {
    fn read(&mut self) -> Option<Result<u8, LineError>> {
        let input = self.input.pop_front()?;
        self.last_read = Some(self.now);
        Some(input)
    }

    fn write(&mut self, octets: &[u8]) {
        if let Some(at) = self.last_read {
            let gap = self.now.wrapping_sub(at);
            assert!(gap >= TURNAROUND, "the node wrote {gap} µs after the last octet it heard");
        }
        self.sent.push(octets.to_vec());
        self.sent_at.push(self.now);
    }
}

/// Feed `chunks` one per 300 µs (about an octet at 38,400 baud, or a burst),
/// then let 2 ms pass so anything due goes out.
fn run(node: &mut Node, chunks: &[Vec<Option<u8>>]) -> Vec<Vec<u8>> {
    let mut table = points();
    let mut dev = device(&mut table);
    let mut uart = Script::default();
    let mut now = 1_000u32;
    for chunk in chunks {
        uart.input.extend(chunk.iter().map(|o| o.ok_or(LineError)));
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
        now += 300;
    }
    for _ in 0..20 {
        now += 100;
        uart.now = now;
        node.poll(now, &mut uart, &mut dev);
    }
    uart.sent
}

/// The frame `octets` hold, which must be valid, whole, standard and the
/// node's own.
fn assert_own_valid_frame(octets: &[u8]) -> Frame<'_> {
    let (frame, len) = Frame::decode(octets, &mut [])
        .unwrap_or_else(|e| panic!("the node sent an invalid frame ({e}): {octets:02x?}"));
    assert_eq!(len, octets.len(), "one frame per write: {octets:02x?}");
    assert_eq!(frame.source, TS, "a frame from another address: {octets:02x?}");
    frame
}

/// Frames the node acts on (a token, a poll, a ReadProperty), whole or cut
/// short, between random octets and UART errors (`None`).
fn line_traffic() -> impl Strategy<Value = Vec<Vec<Option<u8>>>> {
    let rp = [0x01, 0x04, 0x00, 0x05, 0x01, 0x0C, 0x0C, 0x00, 0x80, 0x00, 0x01, 0x19, 0x55];
    let frames: Vec<Vec<u8>> = [
        Frame::token(TS, 0),
        Frame::poll_for_master(TS, 0),
        Frame { frame_type: FrameType::BACNET_DATA_EXPECTING_REPLY, destination: TS, source: 0, data: &rp },
        Frame {
            frame_type: FrameType::BACNET_DATA_NOT_EXPECTING_REPLY,
            destination: 255,
            source: 0,
            data: &[1, 0, 0x10, 8],
        },
    ]
    .iter()
    .map(|f| f.to_vec().expect("a frame"))
    .collect();
    let frame = (prop::sample::select(frames), any::<prop::sample::Index>())
        .prop_map(|(f, cut)| f[..=cut.index(f.len())].iter().copied().map(Some).collect::<Vec<_>>());
    let noise = prop::collection::vec(prop::option::weighted(0.98, any::<u8>()), 0..40);
    prop::collection::vec(prop_oneof![frame, noise], 0..60)
}

/// A confirmed request's header with a service the node knows or not, then
/// anything.
fn request_apdu() -> impl Strategy<Value = Vec<u8>> {
    let service = prop_oneof![Just(12u8), Just(15u8), any::<u8>()];
    (0u8..16, any::<u8>(), any::<u8>(), service, prop::collection::vec(any::<u8>(), 0..100)).prop_map(
        |(flags, max, invoke, service, tail)| {
            let mut apdu = vec![flags, max, invoke, service];
            apdu.extend(tail);
            apdu
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_octets_and_errors_from_the_line(chunks in line_traffic()) {
        let mut node = Node::new(NodeConfig::new(TS, 38_400), 0).expect("a valid node");
        for octets in run(&mut node, &chunks) {
            assert_own_valid_frame(&octets);
        }
    }

    #[test]
    fn any_apdu_in_a_request_for_the_node(apdu in prop_oneof![request_apdu(), prop::collection::vec(any::<u8>(), 0..120)], routed in any::<bool>()) {
        let mut npdu = if routed { vec![0x01, 0x0C, 0x00, 0x07, 1, 42] } else { vec![0x01, 0x04] };
        npdu.extend_from_slice(&apdu);
        let request = Frame { frame_type: FrameType::BACNET_DATA_EXPECTING_REPLY, destination: TS, source: 0, data: &npdu };
        let octets = request.to_vec().expect("a frame");
        let mut node = Node::new(NodeConfig::new(TS, 38_400), 0).expect("a valid node");
        let sent = run(&mut node, &[octets.into_iter().map(Some).collect()]);
        // A confirmed request (three octets at least) gets its answer;
        // anything else that expects a reply, Reply Postponed.
        prop_assert_eq!(sent.len(), 1, "one answer, always");
        let frame = assert_own_valid_frame(&sent[0]);
        prop_assert_eq!(frame.destination, 0);
        let answerable = apdu.len() >= 3 && apdu[0] >> 4 == 0;
        if frame.frame_type == FrameType::REPLY_POSTPONED {
            prop_assert!(!answerable, "Reply Postponed for a confirmed request: {:02x?}", apdu);
            return Ok(());
        }
        prop_assert!(answerable, "an answer to what is not a confirmed request: {:02x?}", apdu);
        prop_assert_eq!(frame.frame_type, FrameType::BACNET_DATA_NOT_EXPECTING_REPLY);
        let n = Npdu::decode(frame.data).expect("the answer's NPDU decodes");
        prop_assert_eq!(n.destination.map(|d| (d.net, d.mac.to_vec())), routed.then(|| (7, vec![42])));
        let NpduPayload::Apdu(apdu_out) = n.payload else { panic!("not an APDU") };
        let kind = Apdu::decode(apdu_out).expect("the answer's APDU decodes");
        let invoke_id = match kind {
            Apdu::ComplexAck(a) => a.invoke_id,
            Apdu::SimpleAck { invoke_id, .. }
            | Apdu::Error { invoke_id, .. }
            | Apdu::Reject { invoke_id, .. }
            | Apdu::Abort { invoke_id, .. } => invoke_id,
            other => panic!("not an answer: {other:?}"),
        };
        prop_assert_eq!(Some(invoke_id), apdu.get(2).copied());
    }
}
