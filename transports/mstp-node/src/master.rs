//! The Master Node state machine (Clause 9.5.6) for a node that only
//! serves: the token ring without a queue of requests to send.
//!
//! States as the standard names them: IDLE, USE_TOKEN, DONE_WITH_TOKEN,
//! PASS_TOKEN, NO_TOKEN and POLL_FOR_MASTER, with its variables TS, NS, PS,
//! TokenCount, RetryCount, EventCount, SoleMaster and SilenceTimer, and the
//! transitions' names where they happen. WAIT_FOR_REPLY is never entered:
//! this node sends no BACnet Data Expecting Reply. ANSWER_DATA_REQUEST lasts
//! no time at all: [`crate::Node`] computes every answer as the request's
//! last octet arrives, and it goes after Tturnaround (Reply, or
//! DeferredReply — Reply Postponed — for a request it has no answer to).
//!
//! The ring decides and [`crate::Node`] transmits: the methods that send
//! return the no-data frame to put on the line ([`Send`]); the node sends
//! its one data frame (an I-Am) in USE_TOKEN and tells the ring.

use crate::{Micros, elapsed};
use bacnet::mstp::{BROADCAST, FrameType, N_MAX_MASTER, N_MIN_OCTETS, N_POLL, N_RETRY_TOKEN};

const T_NO_TOKEN: Micros = bacnet::mstp::T_NO_TOKEN as Micros;
const T_SLOT: Micros = bacnet::mstp::T_SLOT as Micros;

/// Settings of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// TS: this station's address, 0..=Max_Master.
    pub this_station: u8,
    /// Max_Master: the highest address polled, at most 127.
    pub max_master: u8,
    /// Tusage_timeout: how long to wait for a station passed the token or
    /// polled to start (20..=35 ms).
    pub t_usage_timeout: Micros,
}

/// Where the state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterState {
    /// IDLE: listening.
    Idle,
    /// USE_TOKEN: holding the token, may send one data frame.
    UseToken,
    /// DONE_WITH_TOKEN: about to pass the token or poll.
    DoneWithToken,
    /// PASS_TOKEN: waiting for NS to use the token.
    PassToken,
    /// NO_TOKEN: the line went silent; waiting for this station's slot.
    NoToken,
    /// POLL_FOR_MASTER: waiting for a Reply To Poll For Master from PS.
    PollForMaster,
}

/// A frame without data the ring wants on the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Send {
    /// Token, Poll For Master or Reply To Poll For Master.
    pub frame_type: FrameType,
    /// Where to.
    pub destination: u8,
}

/// What a valid frame means for the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Nothing to do.
    Nothing,
    /// Send this frame.
    Send(Send),
    /// A BACnet Data frame for this station or broadcast: hand its NPDU to
    /// the server (answer at once if it expects a reply).
    Data {
        /// The sender.
        source: u8,
        /// The sender waits for an answer (ReceivedDataNeedingReply): the
        /// answer, or Reply Postponed when there is none.
        expecting_reply: bool,
    },
    /// A Test_Request for this station: answer with a Test_Response
    /// carrying its data.
    TestRequest {
        /// The sender.
        source: u8,
    },
}

/// The Master Node state machine.
#[derive(Debug)]
pub struct Ring {
    config: RingConfig,
    state: MasterState,
    next_station: u8,
    poll_station: u8,
    token_count: u32,
    retry_count: u32,
    event_count: u32,
    sole_master: bool,
    missed_slot: bool,
    silence_start: Micros,
}

impl Ring {
    /// A node starting at `now`: INITIALIZE, then at once IDLE
    /// (DoneInitializing: NS = PS = TS, TokenCount = Npoll, so that the
    /// first token received starts a Poll For Master cycle). A `max_master`
    /// above 127 counts as 127, a `this_station` above it as Max_Master.
    pub fn new(config: RingConfig, now: Micros) -> Ring {
        let max_master = config.max_master.min(N_MAX_MASTER);
        let ts = config.this_station.min(max_master);
        Ring {
            config: RingConfig { this_station: ts, max_master, ..config },
            state: MasterState::Idle,
            next_station: ts,
            poll_station: ts,
            token_count: N_POLL,
            retry_count: 0,
            event_count: 0,
            sole_master: false,
            missed_slot: false,
            silence_start: now,
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &RingConfig {
        &self.config
    }

    /// Where it is.
    pub fn state(&self) -> MasterState {
        self.state
    }

    /// NS: the station the token goes to next.
    pub fn next_station(&self) -> u8 {
        self.next_station
    }

    /// SoleMaster: no other master answered the polls.
    pub fn sole_master(&self) -> bool {
        self.sole_master
    }

    /// An octet (or a UART error) arrived: SilenceTimer restarts, and a
    /// station waiting in PASS_TOKEN or NO_TOKEN sees the line in use
    /// (SawTokenUser, SawFrame) after Nmin_octets.
    pub fn octet(&mut self, now: Micros) {
        self.silence_start = now;
        self.missed_slot = false;
        self.event_count = self.event_count.saturating_add(1);
        if matches!(self.state, MasterState::PassToken | MasterState::NoToken) && self.event_count > N_MIN_OCTETS {
            self.state = MasterState::Idle;
        }
    }

    /// This node's own frame leaves the line at `end`: SilenceTimer
    /// restarts there.
    pub fn transmitted(&mut self, end: Micros) {
        self.silence_start = end;
    }

    /// An invalid frame was received.
    pub fn invalid_frame(&mut self) -> Option<Send> {
        if self.state == MasterState::PollForMaster { self.poll_for_master_failed() } else { None }
    }

    /// A valid frame was received (not one of this node's own).
    pub fn frame(&mut self, frame_type: FrameType, destination: u8, source: u8) -> Reaction {
        let ts = self.config.this_station;
        if source == ts {
            // Another station with this address: nothing a master can do.
            return Reaction::Nothing;
        }
        let for_us = destination == ts;
        match self.state {
            MasterState::PollForMaster => {
                if for_us && frame_type == FrameType::REPLY_TO_POLL_FOR_MASTER {
                    // ReceivedReplyToPFM.
                    self.sole_master = false;
                    self.next_station = source;
                    self.event_count = 0;
                    self.poll_station = ts;
                    self.token_count = 0;
                    self.retry_count = 0;
                    self.state = MasterState::PassToken;
                    return Reaction::Send(self.token());
                }
                // ReceivedUnexpectedFrame.
                self.state = MasterState::Idle;
                Reaction::Nothing
            }
            MasterState::Idle => self.idle_frame(frame_type, for_us, destination == BROADCAST, source),
            // PASS_TOKEN and NO_TOKEN leave for IDLE on the frame's octets.
            _ => Reaction::Nothing,
        }
    }

    fn idle_frame(&mut self, frame_type: FrameType, for_us: bool, broadcast: bool, source: u8) -> Reaction {
        if frame_type == FrameType::TOKEN && for_us {
            // ReceivedToken.
            self.sole_master = false;
            self.state = MasterState::UseToken;
            Reaction::Nothing
        } else if frame_type == FrameType::POLL_FOR_MASTER && for_us {
            // ReceivedPFM.
            Reaction::Send(Send { frame_type: FrameType::REPLY_TO_POLL_FOR_MASTER, destination: source })
        } else if frame_type == FrameType::BACNET_DATA_EXPECTING_REPLY && for_us {
            // ReceivedDataNeedingReply.
            Reaction::Data { source, expecting_reply: true }
        } else if frame_type == FrameType::TEST_REQUEST && for_us {
            // ReceivedDataNeedingReply, a Test_Request.
            Reaction::TestRequest { source }
        } else if frame_type == FrameType::BACNET_DATA_NOT_EXPECTING_REPLY && (for_us || broadcast) {
            // ReceivedDataNoReply.
            Reaction::Data { source, expecting_reply: false }
        } else {
            // ReceivedUnwantedFrame: frames for other stations, broadcast
            // tokens and requests, replies nobody waits for, proprietary
            // frames.
            Reaction::Nothing
        }
    }

    /// In USE_TOKEN, the node sent its data frame (`sent`) or had none
    /// (NothingToSend); with Max_Info_Frames 1 either way the token is done.
    pub fn used_token(&mut self) {
        if self.state == MasterState::UseToken {
            self.state = MasterState::DoneWithToken;
        }
    }

    /// In DONE_WITH_TOKEN: pass the token or poll.
    pub fn done_with_token(&mut self) -> Option<Send> {
        if self.state != MasterState::DoneWithToken {
            return None;
        }
        let ts = self.config.this_station;
        let ns = self.next_station;
        if !self.sole_master && ns == ts {
            // NextStationUnknown.
            self.poll_station = self.next_after(ts);
            self.retry_count = 0;
            self.state = MasterState::PollForMaster;
            Some(self.poll())
        } else if self.token_count < N_POLL - 1 {
            self.token_count += 1;
            if self.sole_master && ns != self.next_after(ts) {
                // SoleMaster: keep the token.
                self.state = MasterState::UseToken;
                None
            } else {
                // SendToken.
                self.retry_count = 0;
                self.event_count = 0;
                self.state = MasterState::PassToken;
                Some(self.token())
            }
        } else if self.next_after(self.poll_station) == ns {
            self.retry_count = 0;
            self.token_count = 1;
            if self.sole_master {
                // SoleMasterRestartMaintenancePFM.
                self.poll_station = self.next_after(ns);
                self.next_station = ts;
                self.state = MasterState::PollForMaster;
                Some(self.poll())
            } else {
                // ResetMaintenancePFM.
                self.poll_station = ts;
                self.event_count = 0;
                self.state = MasterState::PassToken;
                Some(self.token())
            }
        } else {
            // SendMaintenancePFM.
            self.poll_station = self.next_after(self.poll_station);
            self.retry_count = 0;
            self.state = MasterState::PollForMaster;
            Some(self.poll())
        }
    }

    /// When the state's timer runs out (`None`: no timer).
    pub fn deadline(&self) -> Option<Micros> {
        let s = self.silence_start;
        let after = |d: Micros| Some(s.wrapping_add(d));
        match self.state {
            MasterState::Idle => after(T_NO_TOKEN),
            MasterState::PassToken | MasterState::PollForMaster => after(self.config.t_usage_timeout),
            MasterState::NoToken if self.missed_slot => after(self.slot(self.config.max_master.saturating_add(1)) + 1),
            MasterState::NoToken => after(self.slot(self.config.this_station)),
            MasterState::UseToken | MasterState::DoneWithToken => None,
        }
    }

    /// The timers: Tno_token, the slots, Tusage_timeout.
    pub fn handle_timeout(&mut self, now: Micros) -> Option<Send> {
        let silence = elapsed(now, self.silence_start);
        if silence < 0 {
            return None;
        }
        let silence = silence as Micros;
        match self.state {
            MasterState::Idle if silence >= T_NO_TOKEN => {
                // LostToken.
                self.event_count = 0;
                self.missed_slot = false;
                self.state = MasterState::NoToken;
                self.no_token(silence)
            }
            MasterState::NoToken => self.no_token(silence),
            MasterState::PassToken if silence >= self.config.t_usage_timeout => {
                if self.retry_count < N_RETRY_TOKEN {
                    // RetrySendToken.
                    self.retry_count += 1;
                    self.event_count = 0;
                    Some(self.token())
                } else {
                    // FindNewSuccessor.
                    self.poll_station = self.next_after(self.next_station);
                    self.next_station = self.config.this_station;
                    self.retry_count = 0;
                    self.token_count = 0;
                    self.state = MasterState::PollForMaster;
                    Some(self.poll())
                }
            }
            MasterState::PollForMaster if silence >= self.config.t_usage_timeout => self.poll_for_master_failed(),
            _ => None,
        }
    }

    fn no_token(&mut self, silence: Micros) -> Option<Send> {
        let ts = self.config.this_station;
        if silence < self.slot(ts) {
            return None;
        }
        if silence < self.slot(ts.saturating_add(1)) || silence > self.slot(self.config.max_master.saturating_add(1)) {
            // GenerateToken.
            self.poll_station = self.next_after(ts);
            self.next_station = ts;
            self.retry_count = 0;
            self.token_count = 0;
            self.state = MasterState::PollForMaster;
            Some(self.poll())
        } else {
            // This station's slot passed while the node was busy: wait for a
            // frame or for the silence to outlast every slot.
            self.missed_slot = true;
            None
        }
    }

    fn poll_for_master_failed(&mut self) -> Option<Send> {
        let ts = self.config.this_station;
        if self.sole_master {
            // SoleMaster.
            self.state = MasterState::UseToken;
            None
        } else if self.next_station != ts {
            // DoneWithPFM.
            self.event_count = 0;
            self.retry_count = 0;
            self.state = MasterState::PassToken;
            Some(self.token())
        } else if self.next_after(self.poll_station) != ts {
            // SendNextPFM.
            self.poll_station = self.next_after(self.poll_station);
            self.retry_count = 0;
            Some(self.poll())
        } else {
            // DeclareSoleMaster.
            self.sole_master = true;
            self.state = MasterState::UseToken;
            None
        }
    }

    fn slot(&self, n: u8) -> Micros {
        T_NO_TOKEN + T_SLOT * Micros::from(n)
    }

    fn next_after(&self, n: u8) -> u8 {
        let m = u16::from(self.config.max_master) + 1;
        ((u16::from(n) + 1) % m) as u8
    }

    fn token(&self) -> Send {
        Send { frame_type: FrameType::TOKEN, destination: self.next_station }
    }

    fn poll(&self) -> Send {
        Send { frame_type: FrameType::POLL_FOR_MASTER, destination: self.poll_station }
    }
}
