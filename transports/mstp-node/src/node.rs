//! The node: the receiver, the ring and the server over a [`Uart`], driven
//! by [`Node::poll`] from the application's main loop.
//!
//! Timing: a frame goes no sooner than Tturnaround (40 bit times) after the
//! last octet received, and SilenceTimer restarts at the end of the node's
//! own frames, reckoned from the baud rate (so a UART that returns from
//! [`Uart::write`] before the last bit has left is fine). Every answer is
//! computed when the request's last octet arrives, so a node polled at
//! least once per octet time answers within Tturnaround plus the time of
//! one `poll`, far inside Treply_delay (250 ms); likewise it uses a token
//! or answers a Poll For Master well inside Tusage_delay (15 ms).

use crate::device::{Device, Link};
use crate::master::{MasterState, Ring, RingConfig, Send};
use crate::receive::{MAX_DATA, Received, Receiver};
use crate::server::{self, Outcome};
use crate::{Micros, Uart, elapsed};
use bacnet::mstp::crc::data_crc;
use bacnet::mstp::frame::HEADER_LEN;
use bacnet::mstp::{FrameType, Header, N_MAX_MASTER};

/// The node's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeConfig {
    /// TS: this station's MAC address, 0..=Max_Master.
    pub this_station: u8,
    /// Max_Master: the highest address polled (at most 127).
    pub max_master: u8,
    /// The line's baud rate.
    pub baud: u32,
    /// Tusage_timeout, µs (20,000..=35,000).
    pub t_usage_timeout: Micros,
    /// Tframe_abort, µs: a frame silent this long is dropped. The standard
    /// allows 60 bit times to 100 ms; a node whose octets reach it late
    /// (through an operating system) needs the longer end.
    pub t_frame_abort: Micros,
}

impl NodeConfig {
    /// Station `this_station` at `baud`: Max_Master 127, Tusage_timeout
    /// 20 ms, Tframe_abort 60 bit times.
    pub const fn new(this_station: u8, baud: u32) -> NodeConfig {
        NodeConfig {
            this_station,
            max_master: N_MAX_MASTER,
            baud,
            t_usage_timeout: bacnet::mstp::T_USAGE_TIMEOUT as Micros,
            t_frame_abort: bit_times(60, baud),
        }
    }
}

/// A setting [`Node::new`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Max_Master above 127.
    MaxMaster,
    /// This_Station above Max_Master.
    ThisStation,
    /// A baud rate of 0.
    Baud,
}

/// An MS/TP master node serving one device.
#[derive(Debug)]
pub struct Node {
    ring: Ring,
    rx: Receiver,
    baud: u32,
    /// No frame before this: Tturnaround after the last octet received.
    turnaround_until: Micros,
    /// When the last frame this node wrote will have left the line.
    line_free_at: Micros,
    tx: [u8; TX_LEN],
    tx_len: usize,
    tx_at: Micros,
    i_am_due: bool,
}

impl Node {
    /// A node powered on at `now`. It announces itself with an I-Am at its
    /// first token (Clause 16.10.2 lets a device do so at start-up).
    pub fn new(config: NodeConfig, now: Micros) -> Result<Node, ConfigError> {
        if config.max_master > N_MAX_MASTER {
            return Err(ConfigError::MaxMaster);
        }
        if config.this_station > config.max_master {
            return Err(ConfigError::ThisStation);
        }
        if config.baud == 0 {
            return Err(ConfigError::Baud);
        }
        let ring = RingConfig {
            this_station: config.this_station,
            max_master: config.max_master,
            t_usage_timeout: config.t_usage_timeout,
        };
        Ok(Node {
            ring: Ring::new(ring, now),
            rx: Receiver::new(config.this_station, config.t_frame_abort),
            baud: config.baud,
            turnaround_until: now,
            line_free_at: now,
            tx: [0; TX_LEN],
            tx_len: 0,
            tx_at: now,
            i_am_due: true,
        })
    }

    /// The token ring's state machine.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Whether an I-Am waits for the next token.
    pub fn i_am_due(&self) -> bool {
        self.i_am_due
    }

    /// Run the node at `now`: take every octet the UART has, run the
    /// timers, and send what is due. Call it from the main loop at least
    /// once per octet time.
    pub fn poll<U: Uart>(&mut self, now: Micros, uart: &mut U, device: &mut Device<'_>) {
        while let Some(input) = uart.read() {
            self.turnaround_until = now.wrapping_add(self.bit_times(40));
            let received = match input {
                Ok(octet) => self.rx.handle_octet(now, octet),
                Err(_) => self.rx.handle_error(now),
            };
            self.ring.octet(now);
            match received {
                Some(Received::Frame { frame_type, destination, source }) => {
                    self.frame(now, frame_type, destination, source, device)
                }
                Some(Received::Invalid) => self.send_opt(now, |ring| ring.invalid_frame()),
                None => {}
            }
        }
        if self.rx.handle_timeout(now).is_some() {
            self.send_opt(now, Ring::invalid_frame);
        }
        self.transmit(now, uart);
        if self.tx_len == 0 {
            self.send_opt(now, |ring| ring.handle_timeout(now));
            self.use_token(now, device);
            self.transmit(now, uart);
        }
    }

    fn frame(&mut self, now: Micros, frame_type: FrameType, destination: u8, source: u8, device: &mut Device<'_>) {
        use crate::master::Reaction;
        match self.ring.frame(frame_type, destination, source) {
            Reaction::Nothing => {}
            Reaction::Send(send) => self.queue(now, send),
            Reaction::Data { source, expecting_reply } => {
                let link = Link { max_master: self.ring.config().max_master };
                let (npdu, out) = (self.rx.data(), &mut self.tx[HEADER_LEN..HEADER_LEN + MAX_DATA]);
                let outcome = server::handle(npdu, expecting_reply, device, link, out);
                if outcome == Outcome::IAm {
                    self.i_am_due = true;
                }
                match outcome {
                    // Reply.
                    Outcome::Reply(n) => self.queue_frame(now, FrameType::BACNET_DATA_NOT_EXPECTING_REPLY, source, n),
                    // DeferredReply: the requester waits for nothing and
                    // gets on with its token.
                    _ if expecting_reply => {
                        self.queue(now, Send { frame_type: FrameType::REPLY_POSTPONED, destination: source })
                    }
                    _ => {}
                }
            }
            Reaction::TestRequest { source } => {
                let data = self.rx.data();
                self.tx[HEADER_LEN..HEADER_LEN + data.len()].copy_from_slice(data);
                self.queue_frame(now, FrameType::TEST_RESPONSE, source, data.len());
            }
        }
    }

    /// USE_TOKEN and DONE_WITH_TOKEN: send the I-Am if one is due, then
    /// pass the token or poll, one frame at a time.
    fn use_token(&mut self, now: Micros, device: &Device<'_>) {
        while self.tx_len == 0 {
            match self.ring.state() {
                MasterState::UseToken => {
                    if self.i_am_due {
                        self.i_am_due = false;
                        let n = server::i_am(device, &mut self.tx[HEADER_LEN..HEADER_LEN + MAX_DATA]);
                        let frame_type = FrameType::BACNET_DATA_NOT_EXPECTING_REPLY;
                        self.queue_frame(now, frame_type, bacnet::mstp::BROADCAST, n);
                    }
                    self.ring.used_token();
                }
                MasterState::DoneWithToken => self.send_opt(now, Ring::done_with_token),
                _ => return,
            }
        }
    }

    fn send_opt(&mut self, now: Micros, decide: impl FnOnce(&mut Ring) -> Option<Send>) {
        if let Some(send) = decide(&mut self.ring) {
            self.queue(now, send);
        }
    }

    /// A frame without data, due after Tturnaround.
    fn queue(&mut self, now: Micros, send: Send) {
        self.queue_frame(now, send.frame_type, send.destination, 0);
    }

    /// A frame of `frame_type` around the `n` octets already in the data
    /// field (none: a header only), due after Tturnaround.
    fn queue_frame(&mut self, now: Micros, frame_type: FrameType, destination: u8, n: usize) {
        let n = n.min(MAX_DATA);
        let header = Header { frame_type, destination, source: self.source(), length: n as u16 };
        self.tx[..HEADER_LEN].copy_from_slice(&header.encode());
        self.tx_len = HEADER_LEN;
        if n > 0 {
            let crc = data_crc(&self.tx[HEADER_LEN..HEADER_LEN + n]);
            self.tx[HEADER_LEN + n..HEADER_LEN + n + 2].copy_from_slice(&crc);
            self.tx_len += n + 2;
        }
        self.tx_at = later(now, self.turnaround_until, self.bit_times(40));
    }

    /// Write the frame once it is due and the line has been quiet for
    /// Tturnaround (octets that came after it was queued push it back). It
    /// goes on the line when the node's previous frame has left it (the
    /// UART queues it), so SilenceTimer restarts at the end of the line's
    /// copy, not of the write.
    fn transmit<U: Uart>(&mut self, now: Micros, uart: &mut U) {
        let quiet = later(now, self.turnaround_until, self.bit_times(40)) == now;
        if self.tx_len == 0 || elapsed(now, self.tx_at) < 0 || !quiet {
            return;
        }
        uart.write(&self.tx[..self.tx_len]);
        let start = later(now, self.line_free_at, self.bit_times(10 * TX_LEN as u32));
        let end = start.wrapping_add(self.bit_times(10 * self.tx_len as u32));
        self.line_free_at = end;
        self.ring.transmitted(end);
        self.tx_len = 0;
    }

    fn source(&self) -> u8 {
        self.ring.config().this_station
    }

    fn bit_times(&self, bits: u32) -> Micros {
        bit_times(bits, self.baud)
    }
}

/// The transmit buffer: the longest standard frame.
const TX_LEN: usize = HEADER_LEN + MAX_DATA + 2;

/// `at` if it is after `now` by at most `horizon`, else `now`. Instants are
/// `u32` µs that wrap every 71 minutes: an `at` from long ago would read as
/// the future, so only the near future counts.
fn later(now: Micros, at: Micros, horizon: Micros) -> Micros {
    let ahead = elapsed(at, now);
    if ahead > 0 && ahead <= horizon as i32 { at } else { now }
}

/// `bits` bit times at `baud` in whole µs, rounded up, as the core's
/// `bacnet::mstp::bit_times` computes them, in 32-bit arithmetic (a 64-bit
/// division would link 0.9 KB of compiler support code on a Cortex-M). Exact
/// for Clause 9's baud rates, all multiples of 10; for up to 42,949 bits.
const fn bit_times(bits: u32, baud: u32) -> Micros {
    let per_100k = if baud < 10 { 1 } else { baud / 10 };
    let us = (bits * 100_000).div_ceil(per_100k);
    if us == 0 { 1 } else { us }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bit_times_agree_with_the_core_s_at_every_standard_baud_rate() {
        for baud in [9_600, 19_200, 38_400, 57_600, 76_800, 115_200] {
            for bits in [1, 40, 60, 80, 5_110] {
                let core = bacnet::mstp::bit_times(u64::from(bits), baud);
                assert_eq!(u64::from(super::bit_times(bits, baud)), core, "{bits} bits at {baud}");
            }
        }
    }
}
