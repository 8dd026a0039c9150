//! The MS/TP Receive Frame state machine (`bacnet::mstp::Receiver`) fed
//! arbitrary octets with arbitrary gaps, UART errors and timeouts, mixed with
//! well-formed frames of every type (standard and COBS-encoded) whose octets
//! are sometimes corrupted or stalled.
//!
//! Checks, for every input:
//! - nothing panics;
//! - every frame the receiver reports re-encodes to exactly the octets that
//!   were just fed (so decoding is the inverse of encoding, COBS included);
//! - a well-formed frame fed to an idle receiver without a gap of
//!   Tframe_abort is reported, unchanged, at its last octet and not before;
//! - the counters add up, and `poll_timeout`/`handle_timeout` leave IDLE.
//!
//! Input: one settings octet, then operations, each an opcode octet and its
//! operands (see `run`). Self-contained: it needs nothing from `bacnet_fuzz`.
#![no_main]

use bacnet::mstp::{Frame, FrameType, Micros, ReceiveConfig, ReceiveEvent, ReceiveState, Receiver};

const T_FRAME_ABORT: Micros = 1_000;

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }

    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

struct Harness {
    rx: Receiver,
    now: Micros,
    /// Every octet fed, in order.
    fed: Vec<u8>,
    frames: u64,
}

impl Harness {
    /// Feed one octet after `gap`; checks any frame it completes. Returns
    /// whether it completed a frame, and the frame's octets.
    fn octet(&mut self, gap: Micros, octet: u8) -> Option<Vec<u8>> {
        self.now += gap;
        self.fed.push(octet);
        match self.rx.handle_octet(self.now, octet) {
            ReceiveEvent::Frame(f) => Some(check_frame(&self.fed, &f)),
            _ => None,
        }
    }

    /// Feed a chunk at once through `handle_octets`.
    fn chunk(&mut self, gap: Micros, octets: &[u8]) -> Vec<Vec<u8>> {
        self.now += gap;
        let mut input = octets;
        let mut found = Vec::new();
        while !input.is_empty() {
            let before = input.len();
            let event = self.rx.handle_octets(self.now, &mut input);
            let taken = before - input.len();
            assert!(taken > 0, "handle_octets took nothing");
            self.fed.extend(&octets[octets.len() - before..octets.len() - input.len()]);
            if let ReceiveEvent::Frame(f) = event {
                found.push(check_frame(&self.fed, &f));
            }
        }
        found
    }
}

/// The frame re-encodes to the last octets fed.
fn check_frame(fed: &[u8], f: &Frame<'_>) -> Vec<u8> {
    assert!(f.data.len() <= 1506);
    let octets = f.to_vec().unwrap_or_else(|e| panic!("received {f:?} does not encode: {e}"));
    let tail = &fed[fed.len().checked_sub(octets.len()).expect("frame longer than the input")..];
    assert_eq!(tail, &octets[..], "received {f:?} is not the octets fed");
    octets
}

fn run(data: &[u8]) {
    let mut input = Input(data);
    let Some(settings) = input.u8() else { return };
    let input_buffer_size = if settings & 1 == 1 { 64 } else { 1506 };
    let config = ReceiveConfig { input_buffer_size, t_frame_abort: T_FRAME_ABORT };
    let mut h = Harness { rx: Receiver::new(config), now: 0, fed: Vec::new(), frames: 0 };

    while let Some(op) = input.u8() {
        match op >> 5 {
            // Raw octets, one at a time, each after a gap of (op & 7) * 200 µs.
            0 | 1 => {
                let n = usize::from(op & 0x1F) + 1;
                let gap = Micros::from(op & 7) * 200;
                for &b in input.take(n).to_vec().iter() {
                    h.frames += u64::from(h.octet(gap, b).is_some());
                }
            }
            // Raw octets as one chunk.
            2 => {
                let n = usize::from(op & 0x1F) + 1;
                let chunk = input.take(n).to_vec();
                h.frames += h.chunk(0, &chunk).len() as u64;
            }
            // Time passes, (op & 0x1F) * 97 µs, and the timeout if it is due.
            3 => {
                h.now += Micros::from(op & 0x1F) * 97;
                if let Some(deadline) = h.rx.poll_timeout() {
                    assert!(deadline >= h.rx.last_octet_at().unwrap_or(0));
                    if h.now >= deadline {
                        h.rx.handle_timeout(h.now);
                        assert_eq!(h.rx.state(), ReceiveState::Idle);
                        assert_eq!(h.rx.poll_timeout(), None);
                    }
                }
            }
            // A UART error.
            4 => {
                h.rx.handle_receive_error(h.now);
                assert_eq!(h.rx.state(), ReceiveState::Idle);
            }
            // A well-formed frame: type, destination, source, length (2),
            // data from the input; op & 0x0F picks the gap between octets
            // (in 100 µs, so 10 and more exceed Tframe_abort) and op & 0x10
            // the chunked entry point.
            _ => {
                let (Some(t), Some(d), Some(s), Some(len)) = (input.u8(), input.u8(), input.u8(), input.u16()) else {
                    return;
                };
                let body = input.take(usize::from(len % 1600)).to_vec();
                let frame = Frame { frame_type: FrameType(t), destination: d, source: s, data: &body };
                let Ok(octets) = frame.to_vec() else { continue };
                let gap = Micros::from(op & 0x0F) * 100;
                let fits = frame.header().is_ok_and(|hd| hd.length <= input_buffer_size);
                let expect = h.rx.state() == ReceiveState::Idle && fits && gap < T_FRAME_ABORT;
                if op & 0x10 != 0 {
                    let found = h.chunk(gap, &octets);
                    if expect {
                        assert_eq!(found, std::slice::from_ref(&octets), "an idle receiver missed a whole frame");
                    }
                    h.frames += found.len() as u64;
                } else {
                    for (i, &b) in octets.iter().enumerate() {
                        let got = h.octet(if i == 0 { 0 } else { gap }, b);
                        if expect {
                            assert_eq!(got.is_some(), i + 1 == octets.len(), "frame reported at octet {i}");
                        }
                        h.frames += u64::from(got.is_some());
                    }
                }
            }
        }
        let c = h.rx.counters();
        assert_eq!(c.octets as usize, h.fed.len());
        assert_eq!(c.frames, h.frames);
    }
}
