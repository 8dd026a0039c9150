//! The Receive Frame state machine (Clause 9.5.4) over a fixed buffer.
//!
//! States as the standard names them: IDLE, PREAMBLE, HEADER, DATA and
//! SKIP_DATA. Every valid frame is reported, whoever it is for (the master
//! state machine decides what it means); the data is kept only for a frame
//! to this station or broadcast. Another station's data is counted off with
//! a running data CRC, without buffering; an extended (COBS) frame's, which
//! this node does not take, is counted off and not reported. A frame to this
//! station longer than [`MAX_DATA`] is FrameTooLong: invalid at its header,
//! then skipped. The header and data CRCs are the core's
//! (`bacnet::mstp::crc`). A gap longer than Tframe_abort or a UART error
//! inside a frame makes it invalid; in PREAMBLE either just returns to IDLE
//! (a lone 0x55 is not a frame).

use crate::{Micros, elapsed};
use bacnet::mstp::crc::{DATA_CRC_INITIAL, DATA_CRC_RESIDUE, calc_data_crc, data_crc_ok, header_crc_ok};
use bacnet::mstp::{BROADCAST, FrameType};

/// The longest data field kept: the standard frames' limit of 501 octets
/// (an NPDU of a 480-octet APDU and its network header).
pub const MAX_DATA: usize = bacnet::mstp::frame::MAX_NPDU_STANDARD;

/// Where the state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveState {
    /// IDLE: waiting for the first preamble octet (0x55).
    Idle,
    /// PREAMBLE: waiting for the second (0xFF).
    Preamble,
    /// HEADER: this many of the five header octets and HeaderCRC read.
    Header(u8),
    /// DATA: reading a data field this node keeps.
    Data,
    /// SKIP_DATA: counting off a data field it does not keep.
    SkipData,
}

/// A frame, or the end of one that was not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A valid frame; its data (if this node keeps it) is
    /// [`Receiver::data`].
    Frame {
        /// Frame Type.
        frame_type: FrameType,
        /// Destination Address.
        destination: u8,
        /// Source Address.
        source: u8,
    },
    /// A bad CRC, a gap past Tframe_abort or a UART error inside a frame,
    /// or a frame to this station too long for its buffer.
    Invalid,
}

/// What SKIP_DATA reports at the end of the data field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// Another station's frame: valid if its running data CRC is.
    Check,
    /// Already reported (FrameTooLong), or an extended frame: nothing.
    Silent,
}

/// The Receive Frame state machine.
#[derive(Debug)]
pub struct Receiver {
    this_station: u8,
    t_frame_abort: Micros,
    state: ReceiveState,
    header: [u8; 6],
    /// Octets of the data field (data and its two CRC octets) still due.
    remaining: usize,
    len: usize,
    skip: Skip,
    skip_crc: u16,
    data: [u8; MAX_DATA + 2],
    last_octet: Micros,
}

impl Receiver {
    /// A receiver for station `this_station` that gives up on a frame
    /// after `t_frame_abort` µs without an octet.
    pub fn new(this_station: u8, t_frame_abort: Micros) -> Receiver {
        Receiver {
            this_station,
            t_frame_abort,
            state: ReceiveState::Idle,
            header: [0; 6],
            remaining: 0,
            len: 0,
            skip: Skip::Silent,
            skip_crc: DATA_CRC_INITIAL,
            data: [0; MAX_DATA + 2],
            last_octet: 0,
        }
    }

    /// Where it is.
    pub fn state(&self) -> ReceiveState {
        self.state
    }

    /// The data of the last [`Received::Frame`] (without its CRC); empty
    /// for a frame whose data was not kept.
    pub fn data(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// Inside a frame: past its preamble.
    fn mid_frame(&self) -> bool {
        !matches!(self.state, ReceiveState::Idle | ReceiveState::Preamble)
    }

    /// Tframe_abort: a frame that has gone silent this long is invalid (a
    /// preamble that has, is forgotten).
    pub fn handle_timeout(&mut self, now: Micros) -> Option<Received> {
        if self.state == ReceiveState::Idle || elapsed(now, self.last_octet) <= self.t_frame_abort as i32 {
            return None;
        }
        let invalid = self.mid_frame();
        self.state = ReceiveState::Idle;
        invalid.then_some(Received::Invalid)
    }

    /// A UART error: the frame being received, if any, is invalid.
    pub fn handle_error(&mut self, now: Micros) -> Option<Received> {
        self.last_octet = now;
        let invalid = self.mid_frame();
        self.state = ReceiveState::Idle;
        invalid.then_some(Received::Invalid)
    }

    /// One octet from the line.
    pub fn handle_octet(&mut self, now: Micros, octet: u8) -> Option<Received> {
        let timed_out = self.handle_timeout(now);
        self.last_octet = now;
        if timed_out.is_some() {
            // The old frame is over; this octet may begin a new one.
            self.idle(octet);
            return timed_out;
        }
        match self.state {
            ReceiveState::Idle => {
                self.idle(octet);
                None
            }
            ReceiveState::Preamble => {
                self.state = match octet {
                    0xFF => ReceiveState::Header(0),
                    // A repeated first preamble octet.
                    0x55 => ReceiveState::Preamble,
                    _ => ReceiveState::Idle,
                };
                None
            }
            ReceiveState::Header(n) => {
                self.header[usize::from(n)] = octet;
                if n < 5 {
                    self.state = ReceiveState::Header(n + 1);
                    return None;
                }
                self.header_done()
            }
            ReceiveState::Data => {
                let index = self.len + 2 - self.remaining;
                // `index` < len + 2 ≤ MAX_DATA + 2.
                if let Some(slot) = self.data.get_mut(index) {
                    *slot = octet;
                }
                self.remaining -= 1;
                if self.remaining > 0 {
                    return None;
                }
                self.state = ReceiveState::Idle;
                if data_crc_ok(&self.data[..self.len + 2]) { Some(self.frame()) } else { Some(Received::Invalid) }
            }
            ReceiveState::SkipData => {
                self.skip_crc = calc_data_crc(octet, self.skip_crc);
                self.remaining -= 1;
                if self.remaining > 0 {
                    return None;
                }
                self.state = ReceiveState::Idle;
                match self.skip {
                    Skip::Silent => None,
                    Skip::Check if self.skip_crc == DATA_CRC_RESIDUE => Some(self.frame()),
                    Skip::Check => Some(Received::Invalid),
                }
            }
        }
    }

    fn idle(&mut self, octet: u8) {
        if octet == 0x55 {
            self.state = ReceiveState::Preamble;
        }
    }

    fn header_done(&mut self) -> Option<Received> {
        self.state = ReceiveState::Idle;
        let h = self.header;
        if !header_crc_ok(&h[..5], h[5]) {
            return Some(Received::Invalid);
        }
        let length = usize::from(u16::from_be_bytes([h[3], h[4]]));
        self.len = 0;
        if length == 0 {
            return Some(self.frame());
        }
        let frame_type = FrameType(h[0]);
        let ours = h[1] == self.this_station || h[1] == BROADCAST;
        self.remaining = length + 2;
        if frame_type.is_cobs() {
            self.skip(Skip::Silent);
            None
        } else if !ours {
            self.skip(Skip::Check);
            None
        } else if length > MAX_DATA {
            // FrameTooLong.
            self.skip(Skip::Silent);
            Some(Received::Invalid)
        } else {
            self.len = length;
            self.state = ReceiveState::Data;
            None
        }
    }

    fn skip(&mut self, skip: Skip) {
        self.skip = skip;
        self.skip_crc = DATA_CRC_INITIAL;
        self.state = ReceiveState::SkipData;
    }

    fn frame(&self) -> Received {
        Received::Frame { frame_type: FrameType(self.header[0]), destination: self.header[1], source: self.header[2] }
    }
}
