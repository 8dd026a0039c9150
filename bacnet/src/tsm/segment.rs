//! Segmentation of one message (Clause 5.2 and 5.4): the sending half
//! ([`Segmenter`]) and the receiving half ([`Reassembly`]) of a segmented
//! Confirmed-Request or ComplexACK.
//!
//! Both halves are shared by the client and the server state machines. They
//! keep no clock: the owner arms T_seg after every transmission (and
//! T_wait_for_seg = 4 × T_seg while receiving) and calls
//! [`Segmenter::on_timeout`] when it expires.
//!
//! Sequence numbers on the wire are the segment index modulo 256; both
//! halves count segments with a `usize` so a message may have more than 256
//! segments, as "more than 64" allows.
//!
//! ```text
//! sender                                     receiver
//!   | segment 0 (proposed window P) ------------> |
//!   | <------------ Segment-ACK 0 (actual W ≤ P)  |
//!   | segments 1..=W -----------------------------> |
//!   | <------------------------ Segment-ACK W      |   (end of window)
//!   | segments W+1..  (last has more-follows=0) --> |
//!   | <--------------------- Segment-ACK last      |   → message complete
//! ```
//! A segment out of order makes the receiver answer a negative Segment-ACK
//! naming the last segment it holds in order; the sender resends the window
//! from the segment after it.
//!
//! The sender must never become an amplifier for a peer that acknowledges
//! blind (sequence numbers and invoke IDs are predictable, and a UDP source
//! address can be spoofed): the receiver's window is clamped to the one
//! proposed (Clause 5.3: ActualWindowSize ≤ ProposedWindowSize), a positive
//! Segment-ACK inside the window in flight sends only segments never sent
//! before, and no segment goes out more than `1 + retries` times, whatever
//! the peer sends: a resend it asks for beyond that is not made.

use crate::apdu::{Apdu, ComplexAck, ConfirmedRequest, MaxApdu, MaxSegments, SegmentInfo};
use crate::enums::{AbortReason, ConfirmedServiceChoice};
use alloc::vec::Vec;

/// The largest window the standard allows (Clause 20.1.2.8).
pub const MAX_WINDOW_SIZE: u8 = 127;

/// Octets of the APDU header of one segment: the rest of Max-APDU carries
/// service data.
fn header_len(kind: &SegmentedKind) -> usize {
    match kind {
        SegmentedKind::Request { .. } => 6,
        SegmentedKind::ComplexAck => 5,
    }
}

/// Which PDU is being segmented, with the header fields every segment repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentedKind {
    /// A Confirmed-Request sent by a client.
    Request {
        /// The client accepts a segmented answer.
        segmented_response_accepted: bool,
        /// Segments the client accepts in the answer.
        max_segments: MaxSegments,
        /// Max-APDU the client accepts in the answer.
        max_apdu: MaxApdu,
    },
    /// A ComplexACK sent by a server.
    ComplexAck,
}

/// Service data octets per segment for a peer accepting `max_apdu` octets.
pub fn segment_payload(kind: &SegmentedKind, max_apdu: usize) -> usize {
    max_apdu.saturating_sub(header_len(kind)).max(1)
}

/// Segments needed to carry `body` in APDUs of at most `max_apdu` octets.
pub fn segments_needed(kind: &SegmentedKind, body_len: usize, max_apdu: usize) -> usize {
    body_len.div_ceil(segment_payload(kind, max_apdu)).max(1)
}

/// What a Segment-ACK did to a [`Segmenter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOutcome {
    /// The last segment is acknowledged: the message is delivered.
    Complete,
    /// Send these segments (the next window, or a resent one after a NAK);
    /// then arm T_seg.
    Send(Vec<Vec<u8>>),
    /// An acknowledgement outside the window in flight (a duplicate or a
    /// stale one): ignore it, keep the timer running.
    Duplicate,
    /// The acknowledgement is not acceptable: send an Abort with this reason
    /// and end the transaction.
    Abort(AbortReason),
}

/// The sending half of a segmented message.
#[derive(Debug, Clone)]
pub struct Segmenter {
    kind: SegmentedKind,
    invoke_id: u8,
    service: ConfirmedServiceChoice,
    body: Vec<u8>,
    payload: usize,
    count: usize,
    /// Index of the first segment of the window in flight
    /// (InitialSequenceNumber).
    window_start: usize,
    /// Segments in the window in flight (ActualWindowSize); 1 until the
    /// receiver's first Segment-ACK names its own.
    window: usize,
    /// One past the highest segment sent so far: segments below it are
    /// resends, at or above it fresh.
    sent_end: usize,
    /// Times each segment has been sent; none goes out more than
    /// `1 + retries` times.
    sends: Vec<u8>,
    proposed_window: u8,
    retries: u8,
    retries_left: u8,
}

impl Segmenter {
    /// Prepare `body` for a peer that accepts APDUs of `max_apdu` octets,
    /// proposing `proposed_window` (clamped to 1..=127) and resending a
    /// window at most `retries` times.
    pub fn new(
        kind: SegmentedKind,
        invoke_id: u8,
        service: ConfirmedServiceChoice,
        body: Vec<u8>,
        max_apdu: usize,
        proposed_window: u8,
        retries: u8,
    ) -> Self {
        let payload = segment_payload(&kind, max_apdu);
        let count = body.len().div_ceil(payload).max(1);
        Segmenter {
            kind,
            invoke_id,
            service,
            body,
            payload,
            count,
            window_start: 0,
            window: 1,
            sent_end: 0,
            sends: alloc::vec![0; count],
            proposed_window: proposed_window.clamp(1, MAX_WINDOW_SIZE),
            retries,
            retries_left: retries,
        }
    }

    /// Segments in the message.
    pub fn segment_count(&self) -> usize {
        self.count
    }

    /// The last segment has been sent (though perhaps not acknowledged):
    /// an answer may legitimately overtake the final Segment-ACK.
    pub fn sent_all(&self) -> bool {
        self.sent_end >= self.count
    }

    /// The invoke ID every segment carries.
    pub fn invoke_id(&self) -> u8 {
        self.invoke_id
    }

    /// Start (or restart) the message: segment 0 alone, to learn the
    /// receiver's window. Arm T_seg after sending it.
    pub fn first(&mut self) -> Vec<u8> {
        self.window_start = 0;
        self.window = 1;
        self.retries_left = self.retries;
        self.sent_end = self.sent_end.max(1);
        self.sends[0] = self.sends[0].saturating_add(1);
        self.encode_segment(0)
    }

    /// Handle a Segment-ACK from the receiver.
    pub fn on_ack(&mut self, negative: bool, sequence_number: u8, actual_window_size: u8) -> AckOutcome {
        if actual_window_size == 0 || actual_window_size > MAX_WINDOW_SIZE {
            return AckOutcome::Abort(AbortReason::WINDOW_SIZE_OUT_OF_RANGE);
        }
        // InWindow(seq, InitialSequenceNumber), modulo 256 (Clause 5.4).
        let offset = sequence_number.wrapping_sub(self.window_start as u8) as usize;
        if offset >= self.window {
            return AckOutcome::Duplicate;
        }
        let acked = self.window_start + offset;
        if acked + 1 >= self.count {
            // Everything is held by the receiver (a NAK naming the last
            // segment says the same).
            return AckOutcome::Complete;
        }
        // Clause 5.3: the receiver's window may not exceed ours. A larger
        // one is clamped, not obeyed: obeying it let one blind
        // Segment-ACK draw 89 segments where 16 were proposed.
        let window = actual_window_size.min(self.proposed_window) as usize;
        let from = if negative || acked + 1 >= self.sent_end {
            // A NAK (a segment was lost: resend from the one after
            // `acked`), or every segment sent is held: the window from
            // `acked + 1`, as Clause 5.4 has it.
            acked + 1
        } else {
            // A positive Segment-ACK inside the window in flight: the
            // segments after it are on their way; send only fresh ones.
            self.sent_end
        };
        self.window_start = acked + 1;
        self.window = window;
        self.retries_left = self.retries;
        AckOutcome::Send(self.segments(from))
    }

    /// T_seg expired without an acceptable Segment-ACK: the window to resend,
    /// or `None` when the retries are spent (the transaction has failed).
    pub fn on_timeout(&mut self) -> Option<Vec<Vec<u8>>> {
        if self.retries_left == 0 {
            return None;
        }
        self.retries_left -= 1;
        Some(self.segments(self.window_start))
    }

    /// The segments of the window in flight from `from` on (a resend starts
    /// at the window's first segment, fresh sending at `sent_end`), less
    /// any already sent `1 + retries` times.
    fn segments(&mut self, from: usize) -> Vec<Vec<u8>> {
        let end = (self.window_start + self.window).min(self.count);
        self.sent_end = self.sent_end.max(end);
        let mut out = Vec::with_capacity(end.saturating_sub(from));
        for i in from.max(self.window_start)..end {
            if self.sends[i] > self.retries {
                continue;
            }
            self.sends[i] += 1;
            out.push(self.encode_segment(i));
        }
        out
    }

    fn encode_segment(&self, index: usize) -> Vec<u8> {
        let start = (index * self.payload).min(self.body.len());
        let end = (start + self.payload).min(self.body.len());
        let segment = Some(SegmentInfo {
            sequence_number: index as u8,
            proposed_window_size: self.proposed_window,
            more_follows: index + 1 < self.count,
        });
        let body = &self.body[start..end];
        let apdu = match self.kind {
            SegmentedKind::Request { segmented_response_accepted, max_segments, max_apdu } => {
                Apdu::ConfirmedRequest(ConfirmedRequest {
                    segment,
                    segmented_response_accepted,
                    max_segments,
                    max_apdu,
                    invoke_id: self.invoke_id,
                    service: self.service,
                    body,
                })
            }
            SegmentedKind::ComplexAck => {
                Apdu::ComplexAck(ComplexAck { segment, invoke_id: self.invoke_id, service: self.service, body })
            }
        };
        let mut out = Vec::with_capacity(header_len(&self.kind) + body.len());
        apdu.encode(&mut out);
        out
    }
}

/// Bounds on a message being received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Largest window this side accepts (ActualWindowSize is the smaller of
    /// this and the sender's proposal).
    pub window: u8,
    /// Most segments accepted.
    pub max_segments: usize,
    /// Most service-data octets accepted.
    pub max_octets: usize,
}

/// A Segment-ACK to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentAck {
    /// Negative: a segment was missing.
    pub negative: bool,
    /// The last segment held in order.
    pub sequence_number: u8,
    /// The receiver's window.
    pub actual_window_size: u8,
}

impl SegmentAck {
    /// Encode, as sent by the server (`server` true) or the client.
    pub fn encode(self, server: bool, invoke_id: u8) -> Vec<u8> {
        let mut out = Vec::with_capacity(4);
        Apdu::SegmentAck {
            negative: self.negative,
            server,
            invoke_id,
            sequence_number: self.sequence_number,
            actual_window_size: self.actual_window_size,
        }
        .encode(&mut out);
        out
    }
}

/// What a received segment did to a [`Reassembly`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentOutcome {
    /// Keep waiting (restart T_wait_for_seg); nothing to send.
    Wait,
    /// Send this Segment-ACK and keep waiting.
    Ack(SegmentAck),
    /// The message is whole: send this final Segment-ACK and deliver.
    Complete(SegmentAck, Vec<u8>),
    /// Give up: send an Abort with this reason.
    Abort(AbortReason),
}

/// The receiving half of a segmented message.
#[derive(Debug, Clone)]
pub struct Reassembly {
    body: Vec<u8>,
    /// Segments held, in order.
    received: usize,
    /// Index of the segment the last Segment-ACK named.
    window_start: usize,
    window: u8,
    limits: ReassemblyLimits,
}

impl Reassembly {
    /// Begin with the first segment received. Returns the reassembly and
    /// what to do (the Segment-ACK for segment 0, or completion when it was
    /// the only one), or the Abort reason when it cannot begin.
    pub fn begin(
        segment: SegmentInfo,
        data: &[u8],
        limits: ReassemblyLimits,
    ) -> Result<(Reassembly, SegmentOutcome), AbortReason> {
        if segment.proposed_window_size == 0 || segment.proposed_window_size > MAX_WINDOW_SIZE {
            return Err(AbortReason::WINDOW_SIZE_OUT_OF_RANGE);
        }
        if segment.sequence_number != 0 {
            return Err(AbortReason::INVALID_APDU_IN_THIS_STATE);
        }
        if data.len() > limits.max_octets {
            return Err(AbortReason::BUFFER_OVERFLOW);
        }
        let window = segment.proposed_window_size.min(limits.window.clamp(1, MAX_WINDOW_SIZE));
        let mut body = Vec::with_capacity(data.len() * 4);
        body.extend_from_slice(data);
        let mut r = Reassembly { body, received: 1, window_start: 0, window, limits };
        let ack = r.ack(false, 0);
        if !segment.more_follows {
            let body = core::mem::take(&mut r.body);
            return Ok((r, SegmentOutcome::Complete(ack, body)));
        }
        Ok((r, SegmentOutcome::Ack(ack)))
    }

    /// The window agreed with the sender.
    pub fn window(&self) -> u8 {
        self.window
    }

    /// Segments held so far.
    pub fn received(&self) -> usize {
        self.received
    }

    fn ack(&self, negative: bool, index: usize) -> SegmentAck {
        SegmentAck { negative, sequence_number: index as u8, actual_window_size: self.window }
    }

    /// Handle a later segment.
    pub fn on_segment(&mut self, segment: SegmentInfo, data: &[u8]) -> SegmentOutcome {
        let last = self.received - 1;
        if segment.sequence_number != self.received as u8 {
            // Out of order, lost or duplicated: name the last segment held
            // in order so the sender resends from the one after it; its
            // new window ends W segments after that one.
            self.window_start = last;
            return SegmentOutcome::Ack(self.ack(true, last));
        }
        if self.received >= self.limits.max_segments || self.body.len() + data.len() > self.limits.max_octets {
            return SegmentOutcome::Abort(AbortReason::BUFFER_OVERFLOW);
        }
        self.body.extend_from_slice(data);
        self.received += 1;
        let index = self.received - 1;
        if !segment.more_follows {
            let ack = self.ack(false, index);
            return SegmentOutcome::Complete(ack, core::mem::take(&mut self.body));
        }
        if index == self.window_start + self.window as usize {
            self.window_start = index;
            return SegmentOutcome::Ack(self.ack(false, index));
        }
        SegmentOutcome::Wait
    }
}
