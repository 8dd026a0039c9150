//! The Receive Frame state machine (Clause 9.5.4), fed one octet at a time.
//!
//! States, as the standard names them: IDLE (waiting for the first preamble
//! octet), PREAMBLE (waiting for the second), HEADER (Frame Type through
//! HeaderCRC; the HEADER_CRC state of earlier editions is its last octet),
//! DATA (data and DataCRC; earlier editions' DATA_CRC state is the last two
//! octets) and SKIP_DATA (the data of a frame too long for the input
//! buffer).
//!
//! Each octet goes in through [`Receiver::handle_octet`] with the time it
//! arrived; what it completed comes out as a [`ReceiveEvent`]:
//!
//! - [`ReceiveEvent::NeedMore`]: the octet belongs to a frame (or is a pad
//!   octet after one); nothing to do yet.
//! - [`ReceiveEvent::Frame`]: a frame whose CRCs checked (ReceivedValidFrame).
//! - [`ReceiveEvent::Invalid`]: a frame began and was refused
//!   (ReceivedInvalidFrame): a bad HeaderCRC, a bad DataCRC or CRC-32K, an
//!   extended frame that is not valid COBS, a frame longer than
//!   InputBufferSize (reported at its header; its data is then skipped), or
//!   Tframe_abort / a UART error in the middle of it. The receiver carries
//!   on with the next octet.
//! - [`ReceiveEvent::Garbage`]: octets outside any frame, dropped and counted.
//!
//! The receiver does not filter by destination: it checks every frame on the
//! line, as a gateway's node state machine and a capture both want.
//!
//! Time is in microseconds ([`Micros`]) on any clock the driver chooses.
//! When octets stop in the middle of a frame for Tframe_abort, the frame is
//! dropped: [`Receiver::poll_timeout`] says when, [`Receiver::handle_timeout`]
//! does it, and an octet arriving after that instant does it first.
//! Silence of exactly Tframe_abort aborts (the standard makes Tframe_abort a
//! minimum).
//!
//! Memory is allocated once, in [`Receiver::new`]: InputBufferSize + 2
//! octets for the data field and InputBufferSize for decoded COBS data.
//! Nothing here panics on any input.

use super::Micros;
use super::cobs;
use super::crc::{DATA_CRC_INITIAL, DATA_CRC_RESIDUE, HEADER_CRC_INITIAL, HEADER_CRC_RESIDUE};
use super::crc::{calc_data_crc, calc_header_crc};
use super::frame::{Frame, FrameError, Header, MAX_EXTENDED_LENGTH, PREAMBLE, cobs_error};
use alloc::vec;
use alloc::vec::Vec;

/// Settings of a [`Receiver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveConfig {
    /// InputBufferSize: the largest Length field accepted. A longer frame is
    /// [`FrameError::FrameTooLong`] and its data is skipped.
    pub input_buffer_size: u16,
    /// Tframe_abort in µs: silence inside a frame that drops it. The
    /// standard allows 60 bit times up to 100 ms; a driver whose octets come
    /// in USB chunks needs more than the gap between chunks.
    pub t_frame_abort: Micros,
}

impl ReceiveConfig {
    /// Extended frames of the largest NPDU accepted, and Tframe_abort of 60
    /// bit times at `baud` (at least 1 µs, at most 100 ms).
    pub fn new(baud: u32) -> ReceiveConfig {
        ReceiveConfig {
            input_buffer_size: MAX_EXTENDED_LENGTH,
            t_frame_abort: super::bit_times(60, baud).min(super::T_FRAME_ABORT_MAX),
        }
    }
}

impl Default for ReceiveConfig {
    /// [`ReceiveConfig::new`] at 9600 baud: Tframe_abort 6250 µs, which is
    /// at least 60 bit times at every standard baud rate.
    fn default() -> Self {
        ReceiveConfig::new(9600)
    }
}

/// The states of the Receive Frame state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReceiveState {
    /// IDLE: waiting for the first preamble octet.
    Idle,
    /// PREAMBLE: waiting for the second preamble octet.
    Preamble,
    /// HEADER: Frame Type, Destination, Source, Length, HeaderCRC.
    Header,
    /// DATA: the data field and its CRC.
    Data,
    /// SKIP_DATA: the data field of a frame too long for the input buffer.
    SkipData,
}

/// A frame that began and was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid {
    /// Why.
    pub error: FrameError,
    /// The header, when its CRC had checked.
    pub header: Option<Header>,
}

/// What an octet (or a timeout) completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveEvent<'a> {
    /// Part of a frame, or a pad octet after one: nothing complete yet.
    NeedMore,
    /// A frame whose CRCs checked. Its data borrows the receiver's buffer
    /// until the next call.
    Frame(Frame<'a>),
    /// A frame was refused; the receiver carries on.
    Invalid(Invalid),
    /// Octets outside any frame were dropped (counted in
    /// [`ReceiveCounters::garbage`]).
    Garbage {
        /// How many: 1, or 2 for a first preamble octet and the octet after
        /// it that was not the second.
        octets: usize,
    },
}

/// What the receiver has seen since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveCounters {
    /// Octets received.
    pub octets: u64,
    /// UART errors reported through [`Receiver::handle_receive_error`].
    pub receive_errors: u64,
    /// Valid frames.
    pub frames: u64,
    /// Octets outside any frame.
    pub garbage: u64,
    /// Pad octets (one X'FF' directly after a frame).
    pub pad: u64,
    /// Frames refused for their HeaderCRC.
    pub bad_header_crc: u64,
    /// Frames refused for their DataCRC or CRC-32K.
    pub bad_data_crc: u64,
    /// Extended frames refused for their COBS encoding.
    pub bad_encoding: u64,
    /// Frames longer than InputBufferSize.
    pub frame_too_long: u64,
    /// Frames dropped by Tframe_abort.
    pub frame_abort: u64,
    /// Frames dropped by a UART error.
    pub receive_error_frames: u64,
}

/// What a step produced, without borrowing the buffers (so that a loop over
/// octets can return it).
#[derive(Debug, Clone, Copy)]
enum Outcome {
    NeedMore,
    Frame { header: Header, cobs_len: Option<usize> },
    Invalid(Invalid),
    Garbage(usize),
}

/// The Receive Frame state machine.
#[derive(Debug, Clone)]
pub struct Receiver {
    config: ReceiveConfig,
    state: ReceiveState,
    /// Frame Type, Destination, Source, Length1, Length2.
    header: [u8; 5],
    /// Octets of `header` received (Index, in the HEADER state).
    index: usize,
    header_crc: u8,
    data_crc: u16,
    /// The header once its CRC checked (DATA, SKIP_DATA).
    current: Option<Header>,
    /// Octets of the data field still to come (DATA, SKIP_DATA).
    remaining: usize,
    /// InputBuffer: the data field, CRC octets included.
    input: Vec<u8>,
    /// Decoded client data of an extended frame.
    decoded: Vec<u8>,
    /// When the last octet (or UART error) arrived.
    last_octet: Micros,
    /// The last octet ended a frame: one X'FF' now is a pad.
    after_frame: bool,
    counters: ReceiveCounters,
}

impl Receiver {
    /// A receiver in IDLE, its buffers allocated.
    pub fn new(config: ReceiveConfig) -> Receiver {
        let size = usize::from(config.input_buffer_size);
        Receiver {
            config,
            state: ReceiveState::Idle,
            header: [0; 5],
            index: 0,
            header_crc: HEADER_CRC_INITIAL,
            data_crc: DATA_CRC_INITIAL,
            current: None,
            remaining: 0,
            input: Vec::with_capacity(size + 2),
            decoded: vec![0; size],
            last_octet: 0,
            after_frame: false,
            counters: ReceiveCounters::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ReceiveConfig {
        &self.config
    }

    /// The current state.
    pub fn state(&self) -> ReceiveState {
        self.state
    }

    /// The counters.
    pub fn counters(&self) -> &ReceiveCounters {
        &self.counters
    }

    /// When the last octet or UART error arrived (the standard's
    /// SilenceTimer counts from here), if any has.
    pub fn last_octet_at(&self) -> Option<Micros> {
        (self.counters.octets + self.counters.receive_errors > 0).then_some(self.last_octet)
    }

    /// Back to IDLE, dropping any frame in progress (counters kept).
    pub fn reset(&mut self) {
        self.state = ReceiveState::Idle;
        self.current = None;
        self.after_frame = false;
    }

    /// When a frame in progress will be aborted by Tframe_abort; `None` in
    /// IDLE.
    pub fn poll_timeout(&self) -> Option<Micros> {
        (self.state != ReceiveState::Idle).then(|| self.last_octet.saturating_add(self.config.t_frame_abort))
    }

    /// Abort the frame in progress if Tframe_abort has passed by `now`.
    pub fn handle_timeout(&mut self, now: Micros) -> Option<Invalid> {
        if self.state != ReceiveState::Idle && now.saturating_sub(self.last_octet) >= self.config.t_frame_abort {
            self.abort(FrameError::FrameAbort)
        } else {
            None
        }
    }

    /// The UART reported an error (framing, overrun, break) at `now`: the
    /// standard's ReceiveError. A frame in progress is dropped.
    pub fn handle_receive_error(&mut self, now: Micros) -> Option<Invalid> {
        let stale = self.handle_timeout(now);
        self.last_octet = now;
        self.counters.receive_errors = self.counters.receive_errors.saturating_add(1);
        self.after_frame = false;
        stale.or_else(|| self.abort(FrameError::ReceiveError))
    }

    /// One octet received at `now`.
    ///
    /// When it arrives after Tframe_abort of silence inside a frame, that
    /// frame is aborted first and the event is that abort; the octet then
    /// starts afresh in IDLE (and if it is garbage, the counters have it).
    pub fn handle_octet(&mut self, now: Micros, octet: u8) -> ReceiveEvent<'_> {
        let outcome = self.step(now, octet);
        self.event(outcome)
    }

    /// Octets received together at `now` (a read from the serial port): runs
    /// them until one completes something, advancing `input` past the octets
    /// taken. Returns [`ReceiveEvent::NeedMore`] once `input` is empty.
    pub fn handle_octets(&mut self, now: Micros, input: &mut &[u8]) -> ReceiveEvent<'_> {
        while let Some((&octet, rest)) = input.split_first() {
            *input = rest;
            let outcome = self.step(now, octet);
            if !matches!(outcome, Outcome::NeedMore) {
                return self.event(outcome);
            }
        }
        ReceiveEvent::NeedMore
    }

    fn event(&self, outcome: Outcome) -> ReceiveEvent<'_> {
        match outcome {
            Outcome::NeedMore => ReceiveEvent::NeedMore,
            Outcome::Garbage(octets) => ReceiveEvent::Garbage { octets },
            Outcome::Invalid(invalid) => ReceiveEvent::Invalid(invalid),
            Outcome::Frame { header, cobs_len } => {
                let data = match cobs_len {
                    Some(n) => self.decoded.get(..n).unwrap_or_default(),
                    None => self.input.get(..usize::from(header.length)).unwrap_or_default(),
                };
                ReceiveEvent::Frame(Frame {
                    frame_type: header.frame_type,
                    destination: header.destination,
                    source: header.source,
                    data,
                })
            }
        }
    }

    /// Drop the frame in progress; the invalid frame to report, if any.
    fn abort(&mut self, error: FrameError) -> Option<Invalid> {
        let state = core::mem::replace(&mut self.state, ReceiveState::Idle);
        self.after_frame = false;
        let header = self.current.take();
        match state {
            ReceiveState::Idle => None,
            ReceiveState::Preamble => {
                // A lone X'55': line garbage, not a frame.
                self.counters.garbage = self.counters.garbage.saturating_add(1);
                None
            }
            // Its FrameTooLong was already reported.
            ReceiveState::SkipData => None,
            ReceiveState::Header | ReceiveState::Data => {
                let counter = match error {
                    FrameError::ReceiveError => &mut self.counters.receive_error_frames,
                    _ => &mut self.counters.frame_abort,
                };
                *counter = counter.saturating_add(1);
                Some(Invalid { error, header })
            }
        }
    }

    fn step(&mut self, now: Micros, octet: u8) -> Outcome {
        self.counters.octets = self.counters.octets.saturating_add(1);
        let stale = self.handle_timeout(now);
        self.last_octet = now;
        let outcome = self.octet(octet);
        match stale {
            Some(invalid) => Outcome::Invalid(invalid),
            None => outcome,
        }
    }

    fn garbage(&mut self, octets: usize) -> Outcome {
        self.counters.garbage = self.counters.garbage.saturating_add(octets as u64);
        Outcome::Garbage(octets)
    }

    fn octet(&mut self, octet: u8) -> Outcome {
        let after_frame = core::mem::replace(&mut self.after_frame, false);
        match self.state {
            ReceiveState::Idle => {
                if octet == PREAMBLE[0] {
                    // Preamble1.
                    self.state = ReceiveState::Preamble;
                    Outcome::NeedMore
                } else if octet == 0xFF && after_frame {
                    self.counters.pad = self.counters.pad.saturating_add(1);
                    Outcome::NeedMore
                } else {
                    // EatAnOctet.
                    self.garbage(1)
                }
            }
            ReceiveState::Preamble => {
                if octet == PREAMBLE[1] {
                    // Preamble2.
                    self.state = ReceiveState::Header;
                    self.index = 0;
                    self.header_crc = HEADER_CRC_INITIAL;
                    Outcome::NeedMore
                } else if octet == PREAMBLE[0] {
                    // RepeatedPreamble1: the earlier X'55' was garbage.
                    self.garbage(1)
                } else {
                    // NotPreamble.
                    self.state = ReceiveState::Idle;
                    self.garbage(2)
                }
            }
            ReceiveState::Header => {
                self.header_crc = calc_header_crc(octet, self.header_crc);
                if let Some(slot) = self.header.get_mut(self.index) {
                    *slot = octet;
                    self.index += 1;
                    return Outcome::NeedMore;
                }
                // The HeaderCRC octet.
                self.state = ReceiveState::Idle;
                if self.header_crc != HEADER_CRC_RESIDUE {
                    self.counters.bad_header_crc = self.counters.bad_header_crc.saturating_add(1);
                    return Outcome::Invalid(Invalid { error: FrameError::BadHeaderCrc, header: None });
                }
                self.header_done(Header::from_fields(&self.header))
            }
            ReceiveState::Data => {
                self.input.push(octet);
                self.data_crc = calc_data_crc(octet, self.data_crc);
                self.remaining -= 1;
                if self.remaining > 0 {
                    return Outcome::NeedMore;
                }
                self.state = ReceiveState::Idle;
                self.after_frame = true;
                let header = self.current.take().unwrap_or(Header::from_fields(&self.header));
                self.data_done(header)
            }
            ReceiveState::SkipData => {
                self.remaining -= 1;
                if self.remaining == 0 {
                    self.state = ReceiveState::Idle;
                    self.current = None;
                    self.after_frame = true;
                }
                Outcome::NeedMore
            }
        }
    }

    /// The HeaderCRC checked.
    fn header_done(&mut self, header: Header) -> Outcome {
        if header.length == 0 {
            self.after_frame = true;
            if header.frame_type.is_cobs() {
                self.counters.bad_encoding = self.counters.bad_encoding.saturating_add(1);
                return Outcome::Invalid(Invalid { error: FrameError::BadEncoding, header: Some(header) });
            }
            // NoData.
            self.counters.frames = self.counters.frames.saturating_add(1);
            return Outcome::Frame { header, cobs_len: None };
        }
        self.remaining = header.data_field_len();
        self.current = Some(header);
        if header.length > self.config.input_buffer_size {
            // FrameTooLong.
            self.state = ReceiveState::SkipData;
            self.counters.frame_too_long = self.counters.frame_too_long.saturating_add(1);
            return Outcome::Invalid(Invalid { error: FrameError::FrameTooLong, header: Some(header) });
        }
        // Data.
        self.state = ReceiveState::Data;
        self.input.clear();
        self.data_crc = DATA_CRC_INITIAL;
        Outcome::NeedMore
    }

    /// The last octet of the data field arrived.
    fn data_done(&mut self, header: Header) -> Outcome {
        let result = if header.frame_type.is_cobs() {
            cobs::decode_frame_data(&self.input, &mut self.decoded).map(Some).map_err(cobs_error)
        } else if self.data_crc == DATA_CRC_RESIDUE {
            Ok(None)
        } else {
            Err(FrameError::BadDataCrc)
        };
        match result {
            Ok(cobs_len) => {
                self.counters.frames = self.counters.frames.saturating_add(1);
                Outcome::Frame { header, cobs_len }
            }
            Err(error) => {
                let counter = match error {
                    FrameError::BadDataCrc => &mut self.counters.bad_data_crc,
                    _ => &mut self.counters.bad_encoding,
                };
                *counter = counter.saturating_add(1);
                Outcome::Invalid(Invalid { error, header: Some(header) })
            }
        }
    }
}
