//! The Receive Frame state machine (Clause 9.5.4) over a fixed buffer.
//!
//! States as the standard names them: IDLE, PREAMBLE, HEADER, DATA (and
//! SKIP_DATA for a frame this node will not keep: another station's, an
//! extended frame, or one longer than [`MAX_DATA`]). The header and data
//! CRCs are the core's (`bacnet::mstp::crc`). A gap longer than
//! Tframe_abort inside a frame makes it invalid, as does a UART error.

use crate::{Micros, elapsed};
use bacnet::mstp::crc::{data_crc_ok, header_crc_ok};
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
    /// A valid frame; its data (if any) is [`Receiver::data`].
    Frame {
        /// Frame Type.
        frame_type: FrameType,
        /// Destination Address.
        destination: u8,
        /// Source Address.
        source: u8,
    },
    /// A frame for another station, or one this node drops (extended,
    /// too long), received whole: valid, but nothing to hand up.
    NotForUs,
    /// A bad CRC, a gap past Tframe_abort or a UART error inside a frame.
    Invalid,
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
            data: [0; MAX_DATA + 2],
            last_octet: 0,
        }
    }

    /// Where it is.
    pub fn state(&self) -> ReceiveState {
        self.state
    }

    /// The data of the last [`Received::Frame`] (without its CRC).
    pub fn data(&self) -> &[u8] {
        &self.data[..self.len]
    }

    /// Tframe_abort: a frame that has gone silent this long is invalid.
    pub fn handle_timeout(&mut self, now: Micros) -> Option<Received> {
        let mid_frame = self.state != ReceiveState::Idle;
        if mid_frame && elapsed(now, self.last_octet) > self.t_frame_abort as i32 {
            self.state = ReceiveState::Idle;
            return Some(Received::Invalid);
        }
        None
    }

    /// A UART error: the frame being received, if any, is invalid.
    pub fn handle_error(&mut self, now: Micros) -> Option<Received> {
        self.last_octet = now;
        let mid_frame = self.state != ReceiveState::Idle;
        self.state = ReceiveState::Idle;
        mid_frame.then_some(Received::Invalid)
    }

    /// One octet from the line.
    pub fn handle_octet(&mut self, now: Micros, octet: u8) -> Option<Received> {
        if let Some(invalid) = self.handle_timeout(now) {
            // The old frame is over; this octet may begin a new one.
            self.last_octet = now;
            self.idle(octet);
            return Some(invalid);
        }
        self.last_octet = now;
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
            ReceiveState::Data | ReceiveState::SkipData => {
                let keep = self.state == ReceiveState::Data;
                let index = self.field_len() - self.remaining;
                if keep {
                    // `index` < field_len() ≤ MAX_DATA + 2 in DATA.
                    if let Some(slot) = self.data.get_mut(index) {
                        *slot = octet;
                    }
                }
                self.remaining -= 1;
                if self.remaining > 0 {
                    return None;
                }
                self.state = ReceiveState::Idle;
                if !keep {
                    return Some(Received::NotForUs);
                }
                if data_crc_ok(&self.data[..self.len + 2]) { Some(self.frame()) } else { Some(Received::Invalid) }
            }
        }
    }

    fn idle(&mut self, octet: u8) {
        if octet == 0x55 {
            self.state = ReceiveState::Preamble;
        }
    }

    fn field_len(&self) -> usize {
        let length = u16::from_be_bytes([self.header[3], self.header[4]]);
        usize::from(length) + 2
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
        let keep = ours && !frame_type.is_cobs() && length <= MAX_DATA;
        self.remaining = length + 2;
        if keep {
            self.len = length;
            self.state = ReceiveState::Data;
        } else {
            self.state = ReceiveState::SkipData;
        }
        None
    }

    fn frame(&self) -> Received {
        Received::Frame { frame_type: FrameType(self.header[0]), destination: self.header[1], source: self.header[2] }
    }
}
