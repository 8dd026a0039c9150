//! The Master Node state machine (Clause 9.5.6), sans-IO, and the Slave
//! Node's (Clause 9.5.7) as a role of the same node.
//!
//! States, as the standard names them: INITIALIZE, IDLE, USE_TOKEN,
//! WAIT_FOR_REPLY, DONE_WITH_TOKEN, PASS_TOKEN, NO_TOKEN, POLL_FOR_MASTER and
//! ANSWER_DATA_REQUEST; variables TS (This_Station), NS (Next_Station), PS
//! (Poll_Station), TokenCount, FrameCount, RetryCount, EventCount,
//! SoleMaster and SilenceTimer; parameters Max_Master (Nmax_master) and
//! Max_Info_Frames (Nmax_info_frames); timers Tno_token, Tslot,
//! Treply_timeout, Tusage_timeout, Treply_delay and Tturnaround. Transition
//! names (ReceivedToken, LostToken, SawTokenUser, FindNewSuccessor,
//! GenerateToken, DeferredReply…) appear in the code where they happen.
//!
//! The node owns a [`Receiver`]; it does no I/O and reads no clock. The
//! driver calls, in any order:
//! - [`MasterNode::handle_octets`] with every octet received and the time
//!   it arrived (never the station's own transmissions echoed back);
//! - [`MasterNode::handle_receive_error`] for a UART error;
//! - [`MasterNode::handle_timeout`] when the instant from
//!   [`MasterNode::poll_timeout`] has passed;
//! - [`MasterNode::send`] to queue an NPDU for the next token, and
//!   [`MasterNode::reply`] / [`MasterNode::reply_postponed`] to answer a
//!   BACnet Data Expecting Reply the node handed up;
//!
//! and after each call drains [`MasterNode::poll_transmit`] (frames to put on
//! the line, each at the instant it names) and [`MasterNode::poll_event`]
//! (NPDUs received, for the network layer).
//!
//! Time is [`Micros`]. The node knows the baud rate, so it knows when a frame
//! it hands out will have left the line: SilenceTimer restarts at the end of
//! its own transmissions and at every octet received, and no frame starts
//! before Tturnaround (40 bit times) after the last octet received. A driver
//! that sends each frame at the instant [`Transmit::at`] says keeps the
//! node's view and the line's in step.
//!
//! What is decided here:
//! - A BACnet Data Expecting Reply for this station is handed up at once
//!   ([`MasterEvent::Received`] with `expecting_reply`) and the node waits in
//!   ANSWER_DATA_REQUEST for [`MasterNode::reply`] until Treply_delay (the
//!   configured `t_reply_delay`, measured from the request's last octet).
//!   Then it sends Reply Postponed (DeferredReply); a reply that comes later
//!   is queued like any NPDU and goes at the next token.
//! - A Test_Request for this station is answered by the node itself with a
//!   Test_Response carrying the same data.
//! - Broadcast Tokens, broadcast BACnet Data Expecting Reply and broadcast
//!   Test_Requests are unwanted frames and dropped (Clause 9.5.6 IDLE,
//!   ReceivedUnwantedFrame); proprietary frames are not known to this node
//!   and dropped the same way.
//! - A valid frame whose Source is TS means another station uses this
//!   address: counted in [`MasterCounters::duplicate_station`] (the
//!   standard gives a master no other remedy) and otherwise ignored.
//! - A **slave** ([`MasterConfig::slave`]) has only IDLE and
//!   ANSWER_DATA_REQUEST: it never uses, passes or generates the token,
//!   ignores Token and Poll For Master frames, answers a BACnet Data
//!   Expecting Reply addressed to it within Treply_delay or not at all
//!   (CannotReply: no Reply Postponed, since it could never send the answer
//!   later), answers Test_Request, and hands up BACnet Data Not Expecting
//!   Reply. It cannot initiate: [`MasterNode::send`] refuses with
//!   [`SendError::Slave`]. Its address may be 0..=254.
//! - The queue of NPDUs to send has a bound; [`MasterNode::send`] refuses
//!   beyond it. Events waiting for [`MasterNode::poll_event`] are bounded
//!   too ([`MAX_EVENTS`]); the frames waiting for
//!   [`MasterNode::poll_transmit`] are at most a few per input.

use super::frame::{BROADCAST, Frame, FrameType, MAX_NPDU_EXTENDED};
use super::receive::{ReceiveConfig, ReceiveEvent, Receiver};
use super::{Micros, N_MAX_MASTER, N_MIN_OCTETS, N_POLL, N_RETRY_TOKEN, T_NO_TOKEN, T_SLOT, bit_times};
use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Settings of a master node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MasterConfig {
    /// TS: this station's address, 0..=Max_Master (a slave's: 0..=254).
    pub this_station: u8,
    /// A slave node (Clause 9.5.7): answers requests addressed to it and
    /// never takes part in the token ring. Max_Master, Max_Info_Frames and
    /// the token timers do not apply.
    pub slave: bool,
    /// Max_Master (Nmax_master): the highest address polled, at most 127.
    pub max_master: u8,
    /// Max_Info_Frames (Nmax_info_frames): frames sent per token, at least 1.
    pub max_info_frames: u8,
    /// The line's baud rate (10 bit times per octet).
    pub baud: u32,
    /// Treply_timeout: how long WAIT_FOR_REPLY waits (255..=300 ms).
    pub t_reply_timeout: Micros,
    /// Tusage_timeout: how long PASS_TOKEN and POLL_FOR_MASTER wait for the
    /// other station to start (20..=35 ms).
    pub t_usage_timeout: Micros,
    /// How long ANSWER_DATA_REQUEST waits for the local reply before sending
    /// Reply Postponed. The standard's Treply_delay is a bound of 250 ms on
    /// the whole answer; keep a margin for the driver.
    pub t_reply_delay: Micros,
    /// NPDUs that may wait for the token; [`MasterNode::send`] refuses more.
    pub max_queue: usize,
    /// The receive state machine's settings.
    pub receive: ReceiveConfig,
}

impl MasterConfig {
    /// Station `this_station` at `baud`: Max_Master 127, Max_Info_Frames 1,
    /// Treply_timeout 255 ms, Tusage_timeout 20 ms, a local Treply_delay of
    /// 200 ms, 64 queued NPDUs, Tframe_abort of 60 bit times.
    pub fn new(this_station: u8, baud: u32) -> MasterConfig {
        MasterConfig {
            this_station,
            slave: false,
            max_master: N_MAX_MASTER,
            max_info_frames: 1,
            baud,
            t_reply_timeout: super::T_REPLY_TIMEOUT,
            t_usage_timeout: super::T_USAGE_TIMEOUT,
            t_reply_delay: 200_000,
            max_queue: 64,
            receive: ReceiveConfig::new(baud),
        }
    }
}

/// Why [`MasterNode::new`] refused its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Max_Master above 127.
    MaxMaster,
    /// A master's TS above Max_Master, or a slave's of 255 (broadcast).
    ThisStation,
    /// Max_Info_Frames of 0.
    MaxInfoFrames,
    /// A baud rate of 0.
    Baud,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ConfigError::MaxMaster => "Max_Master must be at most 127",
            ConfigError::ThisStation => {
                "a master's address must be at most Max_Master, a slave's at most 254 (255 is broadcast)"
            }
            ConfigError::MaxInfoFrames => "Max_Info_Frames must be at least 1",
            ConfigError::Baud => "the baud rate must not be 0",
        })
    }
}

impl core::error::Error for ConfigError {}

/// Why [`MasterNode::send`] or [`MasterNode::reply`] refused an NPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The queue holds `max_queue` NPDUs already.
    QueueFull,
    /// Empty, or longer than 1497 octets.
    BadLength,
    /// A slave node only answers requests; it cannot initiate.
    Slave,
}

impl core::fmt::Display for SendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SendError::QueueFull => "MS/TP send queue full",
            SendError::BadLength => "NPDU empty or longer than 1497 octets",
            SendError::Slave => "an MS/TP slave node cannot initiate a transmission, only answer a request",
        })
    }
}

impl core::error::Error for SendError {}

/// The states of the Master Node state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MasterState {
    /// INITIALIZE (left at once, in [`MasterNode::new`]).
    Initialize,
    /// IDLE: waiting for a frame, or for Tno_token of silence.
    Idle,
    /// USE_TOKEN: sending a frame (left at once).
    UseToken,
    /// WAIT_FOR_REPLY: waiting for the reply to a frame that expects one.
    WaitForReply,
    /// DONE_WITH_TOKEN: deciding to send another frame, pass the token or
    /// poll (left at once).
    DoneWithToken,
    /// PASS_TOKEN: waiting for NS to start using the token.
    PassToken,
    /// NO_TOKEN: the line was silent for Tno_token; waiting for this
    /// station's slot to generate a token.
    NoToken,
    /// POLL_FOR_MASTER: waiting for a Reply To Poll For Master from PS.
    PollForMaster,
    /// ANSWER_DATA_REQUEST: waiting for the local reply to a request.
    AnswerDataRequest,
}

/// A frame to put on the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// When its first octet should go: not before Tturnaround after the
    /// last octet received, nor before the previous frame has gone.
    pub at: Micros,
    /// The encoded frame.
    pub octets: Vec<u8>,
}

/// What the node hands up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterEvent {
    /// An NPDU from a BACnet Data frame for this station or broadcast.
    Received {
        /// The sender's address.
        source: u8,
        /// TS or 255.
        destination: u8,
        /// The sender waits for the reply: answer with
        /// [`MasterNode::reply`].
        expecting_reply: bool,
        /// The NPDU.
        npdu: Vec<u8>,
    },
    /// A frame this node sent expecting a reply got none before
    /// Treply_timeout (or the reply was garbled); the request is not resent.
    NoReply {
        /// Who did not answer.
        destination: u8,
    },
}

/// What the node has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MasterCounters {
    /// Tokens received (ReceivedToken).
    pub tokens_received: u64,
    /// Token frames sent, retries included.
    pub tokens_sent: u64,
    /// RetrySendToken.
    pub token_retries: u64,
    /// FindNewSuccessor: NS did not use the token twice.
    pub successor_lost: u64,
    /// LostToken: Tno_token of silence in IDLE.
    pub lost_token: u64,
    /// GenerateToken.
    pub tokens_generated: u64,
    /// Poll For Master frames sent.
    pub polls_sent: u64,
    /// Data frames sent (BACnet Data, Test_Response, replies).
    pub data_frames_sent: u64,
    /// ReplyTimeout and InvalidFrame in WAIT_FOR_REPLY.
    pub reply_timeouts: u64,
    /// DeferredReply: Reply Postponed sent.
    pub replies_postponed: u64,
    /// CannotReply (a slave): no answer within Treply_delay; none sent.
    pub replies_abandoned: u64,
    /// Valid frames from a station with this station's address.
    pub duplicate_station: u64,
    /// ReceivedUnexpectedFrame (WAIT_FOR_REPLY, POLL_FOR_MASTER): the token
    /// was dropped to resynchronise.
    pub unexpected_frames: u64,
    /// NPDUs [`MasterNode::send`] refused.
    pub send_refused: u64,
    /// Events dropped because [`MAX_EVENTS`] were waiting for
    /// [`MasterNode::poll_event`].
    pub events_dropped: u64,
}

/// Events that may wait for [`MasterNode::poll_event`]; more are dropped
/// and counted.
pub const MAX_EVENTS: usize = 256;

#[derive(Debug, Clone)]
struct Outgoing {
    destination: u8,
    npdu: Vec<u8>,
    expecting_reply: bool,
}

/// A request being answered in ANSWER_DATA_REQUEST.
#[derive(Debug, Clone, Copy)]
struct Answering {
    requester: u8,
    deadline: Micros,
}

/// A received frame, owned (its data copied out of the receiver).
#[derive(Debug)]
struct Received {
    frame_type: FrameType,
    destination: u8,
    source: u8,
    data: Vec<u8>,
}

/// Transitions through USE_TOKEN and DONE_WITH_TOKEN that one input may run
/// through: every loop sends a frame or counts a token, so this is never
/// reached; it only makes termination obvious.
const MAX_TRANSIENT_STEPS: usize = 4 * N_POLL as usize + 512;

/// The Master Node state machine.
#[derive(Debug, Clone)]
pub struct MasterNode {
    config: MasterConfig,
    rx: Receiver,
    state: MasterState,
    /// NS.
    next_station: u8,
    /// PS.
    poll_station: u8,
    token_count: u32,
    frame_count: u8,
    retry_count: u32,
    event_count: u32,
    sole_master: bool,
    /// NO_TOKEN: this station's slot passed while the driver was late; wait
    /// for a frame or for silence beyond every slot.
    missed_slot: bool,
    /// SilenceTimer counts from here (the last octet received, or the end of
    /// this node's last transmission).
    silence_start: Micros,
    /// No transmission before this (Tturnaround after the last octet).
    turnaround_until: Micros,
    /// The end of the frames handed out or queued for transmission.
    line_free_at: Micros,
    /// Where the last frame sent expecting a reply went.
    awaiting: u8,
    answering: Option<Answering>,
    transmit: VecDeque<Transmit>,
    queue: VecDeque<Outgoing>,
    events: VecDeque<MasterEvent>,
    counters: MasterCounters,
}

impl MasterNode {
    /// A node that starts at `now`: INITIALIZE, then at once IDLE
    /// (DoneInitializing: NS = PS = TS, TokenCount = Npoll, so that the
    /// first token it receives starts a Poll For Master cycle).
    pub fn new(config: MasterConfig, now: Micros) -> Result<MasterNode, ConfigError> {
        if config.max_master > N_MAX_MASTER {
            return Err(ConfigError::MaxMaster);
        }
        let highest = if config.slave { BROADCAST - 1 } else { config.max_master };
        if config.this_station > highest {
            return Err(ConfigError::ThisStation);
        }
        if config.max_info_frames == 0 {
            return Err(ConfigError::MaxInfoFrames);
        }
        if config.baud == 0 {
            return Err(ConfigError::Baud);
        }
        let ts = config.this_station;
        Ok(MasterNode {
            rx: Receiver::new(config.receive),
            config,
            // DoneInitializing.
            state: MasterState::Idle,
            next_station: ts,
            poll_station: ts,
            token_count: N_POLL,
            frame_count: 0,
            retry_count: 0,
            event_count: 0,
            sole_master: false,
            missed_slot: false,
            silence_start: now,
            turnaround_until: now,
            line_free_at: now,
            awaiting: ts,
            answering: None,
            transmit: VecDeque::new(),
            queue: VecDeque::new(),
            events: VecDeque::new(),
            counters: MasterCounters::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// The current state.
    pub fn state(&self) -> MasterState {
        self.state
    }

    /// NS: the station this node passes the token to (TS when unknown).
    pub fn next_station(&self) -> u8 {
        self.next_station
    }

    /// PS: the last station polled.
    pub fn poll_station(&self) -> u8 {
        self.poll_station
    }

    /// SoleMaster: no other master answered the polls.
    pub fn sole_master(&self) -> bool {
        self.sole_master
    }

    /// The counters.
    pub fn counters(&self) -> &MasterCounters {
        &self.counters
    }

    /// The receive state machine (its counters).
    pub fn receiver(&self) -> &Receiver {
        &self.rx
    }

    /// NPDUs waiting for the token.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queue an NPDU for `destination` (255 for broadcast), sent when this
    /// node next holds the token: in a BACnet Data frame, or the extended
    /// one beyond 501 octets.
    pub fn send(&mut self, destination: u8, npdu: Vec<u8>, expecting_reply: bool) -> Result<(), SendError> {
        if self.config.slave {
            self.counters.send_refused = self.counters.send_refused.saturating_add(1);
            return Err(SendError::Slave);
        }
        if npdu.is_empty() || npdu.len() > MAX_NPDU_EXTENDED {
            self.counters.send_refused = self.counters.send_refused.saturating_add(1);
            return Err(SendError::BadLength);
        }
        if self.queue.len() >= self.config.max_queue {
            self.counters.send_refused = self.counters.send_refused.saturating_add(1);
            return Err(SendError::QueueFull);
        }
        self.queue.push_back(Outgoing { destination, npdu, expecting_reply });
        Ok(())
    }

    /// The local reply to the BACnet Data Expecting Reply from `destination`
    /// that the node handed up. Within Treply_delay it goes at once in
    /// ANSWER_DATA_REQUEST (Reply); after, it is queued for the next token.
    pub fn reply(&mut self, now: Micros, destination: u8, npdu: Vec<u8>) -> Result<(), SendError> {
        if npdu.is_empty() || npdu.len() > MAX_NPDU_EXTENDED {
            self.counters.send_refused = self.counters.send_refused.saturating_add(1);
            return Err(SendError::BadLength);
        }
        self.handle_timeout(now);
        match self.answering {
            Some(a) if self.state == MasterState::AnswerDataRequest && a.requester == destination => {
                // Reply.
                self.answering = None;
                self.state = MasterState::Idle;
                let ts = self.config.this_station;
                if let Ok(frame) = Frame::bacnet_data(destination, ts, &npdu, false) {
                    self.send_frame(now, &frame);
                    self.counters.data_frames_sent = self.counters.data_frames_sent.saturating_add(1);
                }
                Ok(())
            }
            _ => self.send(destination, npdu, false),
        }
    }

    /// The local reply will not come within Treply_delay: send Reply
    /// Postponed now rather than at the deadline. Nothing happens outside
    /// ANSWER_DATA_REQUEST.
    pub fn reply_postponed(&mut self, now: Micros) {
        self.handle_timeout(now);
        if self.state == MasterState::AnswerDataRequest {
            self.deferred_reply(now);
        }
    }

    /// The next frame to send, once `now` has reached its instant.
    pub fn poll_transmit(&mut self, now: Micros) -> Option<Transmit> {
        if self.transmit.front()?.at <= now { self.transmit.pop_front() } else { None }
    }

    /// The next thing received to hand up.
    pub fn poll_event(&mut self) -> Option<MasterEvent> {
        self.events.pop_front()
    }

    /// The next instant something is due: a frame to transmit, Tframe_abort,
    /// or the current state's timer.
    pub fn poll_timeout(&self) -> Option<Micros> {
        let transmit = self.transmit.front().map(|t| t.at);
        let state = self.state_deadline();
        let rx = self.rx.poll_timeout();
        [transmit, state, rx].into_iter().flatten().min()
    }

    fn state_deadline(&self) -> Option<Micros> {
        let s = self.silence_start;
        match self.state {
            MasterState::Idle if self.config.slave => None,
            MasterState::Idle => Some(s.saturating_add(T_NO_TOKEN)),
            MasterState::WaitForReply => Some(s.saturating_add(self.config.t_reply_timeout)),
            MasterState::PassToken | MasterState::PollForMaster => Some(s.saturating_add(self.config.t_usage_timeout)),
            MasterState::NoToken if self.missed_slot => {
                Some(s.saturating_add(self.slot(self.config.max_master.saturating_add(1))).saturating_add(1))
            }
            MasterState::NoToken => Some(s.saturating_add(self.slot(self.config.this_station))),
            MasterState::AnswerDataRequest => self.answering.map(|a| a.deadline),
            MasterState::Initialize | MasterState::UseToken | MasterState::DoneWithToken => None,
        }
    }

    /// Tno_token + Tslot × n.
    fn slot(&self, n: u8) -> Micros {
        T_NO_TOKEN + T_SLOT * Micros::from(n)
    }

    fn silence(&self, now: Micros) -> Micros {
        now.saturating_sub(self.silence_start)
    }

    /// Run the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Micros) {
        if self.rx.handle_timeout(now).is_some() {
            self.on_invalid_frame(now);
        }
        let silence = self.silence(now);
        match self.state {
            MasterState::Idle if silence >= T_NO_TOKEN && !self.config.slave => {
                // LostToken.
                self.counters.lost_token = self.counters.lost_token.saturating_add(1);
                self.event_count = 0;
                self.missed_slot = false;
                self.state = MasterState::NoToken;
                self.no_token_timer(now);
            }
            MasterState::NoToken => self.no_token_timer(now),
            MasterState::WaitForReply if silence >= self.config.t_reply_timeout => {
                // ReplyTimeout.
                self.no_reply();
                self.frame_count = self.config.max_info_frames;
                self.state = MasterState::DoneWithToken;
                self.run(now);
            }
            MasterState::PassToken if silence >= self.config.t_usage_timeout => self.pass_token_timeout(now),
            MasterState::PollForMaster if silence >= self.config.t_usage_timeout => self.poll_for_master_failed(now),
            MasterState::AnswerDataRequest if self.answering.is_none_or(|a| now >= a.deadline) => {
                self.deferred_reply(now)
            }
            _ => {}
        }
    }

    /// A UART error at `now`.
    pub fn handle_receive_error(&mut self, now: Micros) {
        self.handle_timeout(now);
        self.octet_seen(now);
        if self.rx.handle_receive_error(now).is_some() {
            self.on_invalid_frame(now);
        }
        self.activity();
    }

    /// Octets received at `now` (a read from the serial port).
    pub fn handle_octets(&mut self, now: Micros, octets: &[u8]) {
        for &octet in octets {
            self.handle_timeout(now);
            self.octet_seen(now);
            let received = match self.rx.handle_octet(now, octet) {
                ReceiveEvent::Frame(f) => Some(Ok(Received {
                    frame_type: f.frame_type,
                    destination: f.destination,
                    source: f.source,
                    data: f.data.to_vec(),
                })),
                ReceiveEvent::Invalid(_) => Some(Err(())),
                ReceiveEvent::NeedMore | ReceiveEvent::Garbage { .. } => None,
            };
            self.activity();
            match received {
                Some(Ok(frame)) => self.on_valid_frame(now, frame),
                Some(Err(())) => self.on_invalid_frame(now),
                None => {}
            }
        }
    }

    /// An octet or error arrived: SilenceTimer restarts, EventCount counts.
    fn octet_seen(&mut self, now: Micros) {
        self.silence_start = now;
        self.missed_slot = false;
        self.turnaround_until = now.saturating_add(bit_times(40, self.config.baud));
        self.event_count = self.event_count.saturating_add(1);
    }

    /// SawTokenUser (PASS_TOKEN) and SawFrame (NO_TOKEN): another station
    /// is talking.
    fn activity(&mut self) {
        if matches!(self.state, MasterState::PassToken | MasterState::NoToken) && self.event_count > N_MIN_OCTETS {
            self.state = MasterState::Idle;
        }
    }

    fn no_reply(&mut self) {
        self.counters.reply_timeouts = self.counters.reply_timeouts.saturating_add(1);
        self.event(MasterEvent::NoReply { destination: self.awaiting });
    }

    fn event(&mut self, event: MasterEvent) {
        if self.events.len() < MAX_EVENTS {
            self.events.push_back(event);
        } else {
            self.counters.events_dropped = self.counters.events_dropped.saturating_add(1);
        }
    }

    fn on_invalid_frame(&mut self, now: Micros) {
        match self.state {
            MasterState::WaitForReply => {
                // InvalidFrame.
                self.no_reply();
                self.state = MasterState::DoneWithToken;
                self.run(now);
            }
            MasterState::PollForMaster => self.poll_for_master_failed(now),
            _ => {}
        }
    }

    fn on_valid_frame(&mut self, now: Micros, f: Received) {
        let ts = self.config.this_station;
        if f.source == ts {
            self.counters.duplicate_station = self.counters.duplicate_station.saturating_add(1);
            return;
        }
        match self.state {
            MasterState::Idle => self.idle_frame(now, f),
            MasterState::WaitForReply => {
                let t = f.frame_type;
                if f.destination == ts && t == FrameType::REPLY_POSTPONED {
                    // ReceivedPostpone.
                    self.state = MasterState::DoneWithToken;
                } else if f.destination == ts
                    && (t == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY
                        || t == FrameType::BACNET_EXTENDED_DATA_NOT_EXPECTING_REPLY
                        || t == FrameType::TEST_RESPONSE)
                {
                    // ReceivedReply.
                    if t != FrameType::TEST_RESPONSE {
                        self.indicate(f, false);
                    }
                    self.state = MasterState::DoneWithToken;
                } else {
                    // ReceivedUnexpectedFrame: drop the token.
                    self.counters.unexpected_frames = self.counters.unexpected_frames.saturating_add(1);
                    self.state = MasterState::Idle;
                }
                self.run(now);
            }
            MasterState::PollForMaster => {
                if f.destination == ts && f.frame_type == FrameType::REPLY_TO_POLL_FOR_MASTER {
                    // ReceivedReplyToPFM.
                    self.sole_master = false;
                    self.next_station = f.source;
                    self.event_count = 0;
                    self.send_token(now);
                    self.poll_station = ts;
                    self.token_count = 0;
                    self.retry_count = 0;
                    self.state = MasterState::PassToken;
                } else {
                    // ReceivedUnexpectedFrame.
                    self.counters.unexpected_frames = self.counters.unexpected_frames.saturating_add(1);
                    self.state = MasterState::Idle;
                }
            }
            // PASS_TOKEN and NO_TOKEN leave for IDLE by a frame's fifth
            // octet; ANSWER_DATA_REQUEST expects nothing on the line.
            _ => {}
        }
    }

    fn idle_frame(&mut self, now: Micros, f: Received) {
        let ts = self.config.this_station;
        let t = f.frame_type;
        let for_us = f.destination == ts;
        let broadcast = f.destination == BROADCAST;
        if !for_us && !broadcast {
            // ReceivedUnwantedFrame.
            return;
        }
        if self.config.slave && (t == FrameType::TOKEN || t == FrameType::POLL_FOR_MASTER) {
            // ReceivedUnwantedFrame: a slave takes no part in the ring.
            return;
        }
        if t == FrameType::TOKEN && for_us {
            // ReceivedToken.
            self.counters.tokens_received = self.counters.tokens_received.saturating_add(1);
            self.frame_count = 0;
            self.sole_master = false;
            self.state = MasterState::UseToken;
            self.run(now);
        } else if t == FrameType::POLL_FOR_MASTER && for_us {
            // ReceivedPFM.
            self.send_frame(now, &Frame::reply_to_poll_for_master(f.source, ts));
        } else if (t == FrameType::BACNET_DATA_EXPECTING_REPLY || t == FrameType::BACNET_EXTENDED_DATA_EXPECTING_REPLY)
            && for_us
        {
            // ReceivedDataNeedingReply.
            let source = f.source;
            self.indicate(f, true);
            self.answering =
                Some(Answering { requester: source, deadline: now.saturating_add(self.config.t_reply_delay) });
            self.state = MasterState::AnswerDataRequest;
        } else if t == FrameType::TEST_REQUEST && for_us {
            // ReceivedDataNeedingReply, answered here: Reply.
            self.send_frame(now, &Frame::test_response(f.source, ts, &f.data));
            self.counters.data_frames_sent = self.counters.data_frames_sent.saturating_add(1);
        } else if t == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY
            || t == FrameType::BACNET_EXTENDED_DATA_NOT_EXPECTING_REPLY
        {
            // ReceivedDataNoReply.
            self.indicate(f, false);
        }
        // Anything else (broadcast Token, DER or Test_Request; replies
        // nobody waits for; proprietary frames) is unwanted.
    }

    fn indicate(&mut self, f: Received, expecting_reply: bool) {
        self.event(MasterEvent::Received {
            source: f.source,
            destination: f.destination,
            expecting_reply,
            npdu: f.data,
        });
    }

    fn deferred_reply(&mut self, now: Micros) {
        if self.config.slave {
            // CannotReply: a slave sends nothing and returns to IDLE.
            if self.answering.take().is_some() {
                self.counters.replies_abandoned = self.counters.replies_abandoned.saturating_add(1);
            }
            self.state = MasterState::Idle;
            return;
        }
        // DeferredReply.
        if let Some(a) = self.answering.take() {
            self.send_frame(now, &Frame::reply_postponed(a.requester, self.config.this_station));
            self.counters.replies_postponed = self.counters.replies_postponed.saturating_add(1);
        }
        self.state = MasterState::Idle;
    }

    fn no_token_timer(&mut self, now: Micros) {
        let silence = self.silence(now);
        let ts = self.config.this_station;
        if silence < self.slot(ts) {
            return;
        }
        if silence < self.slot(ts.saturating_add(1)) || silence > self.slot(self.config.max_master.saturating_add(1)) {
            // GenerateToken.
            self.counters.tokens_generated = self.counters.tokens_generated.saturating_add(1);
            self.poll_station = self.next_after(ts);
            self.next_station = ts;
            self.retry_count = 0;
            self.token_count = 0;
            self.send_poll(now);
            self.state = MasterState::PollForMaster;
        } else {
            // This station's slot was missed: wait for a frame (SawFrame) or
            // for the silence to outlast every slot.
            self.missed_slot = true;
        }
    }

    fn pass_token_timeout(&mut self, now: Micros) {
        if self.retry_count < N_RETRY_TOKEN {
            // RetrySendToken.
            self.retry_count += 1;
            self.counters.token_retries = self.counters.token_retries.saturating_add(1);
            self.send_token(now);
            self.event_count = 0;
        } else {
            // FindNewSuccessor.
            self.counters.successor_lost = self.counters.successor_lost.saturating_add(1);
            self.poll_station = self.next_after(self.next_station);
            self.next_station = self.config.this_station;
            self.retry_count = 0;
            self.token_count = 0;
            self.send_poll(now);
            self.state = MasterState::PollForMaster;
        }
    }

    /// No Reply To Poll For Master before Tusage_timeout, or an invalid frame.
    fn poll_for_master_failed(&mut self, now: Micros) {
        let ts = self.config.this_station;
        if self.sole_master {
            // SoleMaster.
            self.frame_count = 0;
            self.state = MasterState::UseToken;
            self.run(now);
        } else if self.next_station != ts {
            // DoneWithPFM.
            self.event_count = 0;
            self.send_token(now);
            self.retry_count = 0;
            self.state = MasterState::PassToken;
        } else if self.next_after(self.poll_station) != ts {
            // SendNextPFM.
            self.poll_station = self.next_after(self.poll_station);
            self.retry_count = 0;
            self.send_poll(now);
        } else {
            // DeclareSoleMaster.
            self.sole_master = true;
            self.frame_count = 0;
            self.state = MasterState::UseToken;
            self.run(now);
        }
    }

    /// (n + 1) modulo (Max_Master + 1).
    fn next_after(&self, n: u8) -> u8 {
        let m = u16::from(self.config.max_master) + 1;
        ((u16::from(n) + 1) % m) as u8
    }

    /// Run USE_TOKEN and DONE_WITH_TOKEN until the node waits.
    fn run(&mut self, now: Micros) {
        for _ in 0..MAX_TRANSIENT_STEPS {
            match self.state {
                MasterState::UseToken => self.use_token(now),
                MasterState::DoneWithToken => self.done_with_token(now),
                _ => return,
            }
        }
        // Unreachable in practice; wait for the line rather than spin.
        self.state = MasterState::Idle;
    }

    fn use_token(&mut self, now: Micros) {
        let Some(out) = self.queue.pop_front() else {
            // NothingToSend.
            self.frame_count = self.config.max_info_frames;
            self.state = MasterState::DoneWithToken;
            return;
        };
        let ts = self.config.this_station;
        let frame = match Frame::bacnet_data(out.destination, ts, &out.npdu, out.expecting_reply) {
            Ok(frame) => frame,
            // `send` checked the length; nothing else fails.
            Err(_) => return,
        };
        self.send_frame(now, &frame);
        self.counters.data_frames_sent = self.counters.data_frames_sent.saturating_add(1);
        self.frame_count = self.frame_count.saturating_add(1);
        if out.expecting_reply && out.destination != BROADCAST {
            // SendAndWait.
            self.awaiting = out.destination;
            self.state = MasterState::WaitForReply;
        } else {
            // SendNoWait.
            self.state = MasterState::DoneWithToken;
        }
    }

    fn done_with_token(&mut self, now: Micros) {
        let ts = self.config.this_station;
        let ns = self.next_station;
        if self.frame_count < self.config.max_info_frames {
            // SendAnotherFrame.
            self.state = MasterState::UseToken;
        } else if !self.sole_master && ns == ts {
            // NextStationUnknown.
            self.poll_station = self.next_after(ts);
            self.retry_count = 0;
            self.send_poll(now);
            self.state = MasterState::PollForMaster;
        } else if self.token_count < N_POLL - 1 {
            if self.sole_master && ns != self.next_after(ts) {
                // SoleMaster: keep the token.
                self.frame_count = 0;
                self.token_count += 1;
                self.state = MasterState::UseToken;
            } else {
                // SendToken.
                self.token_count += 1;
                self.send_token(now);
                self.retry_count = 0;
                self.event_count = 0;
                self.state = MasterState::PassToken;
            }
        } else if self.next_after(self.poll_station) == ns {
            if self.sole_master {
                // SoleMasterRestartMaintenancePFM.
                self.poll_station = self.next_after(ns);
                self.next_station = ts;
                self.retry_count = 0;
                self.token_count = 1;
                self.send_poll(now);
                self.state = MasterState::PollForMaster;
            } else {
                // ResetMaintenancePFM.
                self.poll_station = ts;
                self.send_token(now);
                self.retry_count = 0;
                self.token_count = 1;
                self.event_count = 0;
                self.state = MasterState::PassToken;
            }
        } else {
            // SendMaintenancePFM.
            self.poll_station = self.next_after(self.poll_station);
            self.retry_count = 0;
            self.send_poll(now);
            self.state = MasterState::PollForMaster;
        }
    }

    fn send_token(&mut self, now: Micros) {
        self.counters.tokens_sent = self.counters.tokens_sent.saturating_add(1);
        self.send_frame(now, &Frame::token(self.next_station, self.config.this_station));
    }

    fn send_poll(&mut self, now: Micros) {
        self.counters.polls_sent = self.counters.polls_sent.saturating_add(1);
        self.send_frame(now, &Frame::poll_for_master(self.poll_station, self.config.this_station));
    }

    /// Queue a frame: it starts when the line is ours (Tturnaround after
    /// the last octet received, after this node's earlier frames), and
    /// SilenceTimer restarts when it ends.
    fn send_frame(&mut self, now: Micros, frame: &Frame<'_>) {
        let Ok(octets) = frame.to_vec() else { return };
        let at = now.max(self.turnaround_until).max(self.line_free_at);
        let end = at.saturating_add(bit_times(10 * octets.len() as u64, self.config.baud));
        self.line_free_at = end;
        self.silence_start = end;
        self.transmit.push_back(Transmit { at, octets });
    }
}
