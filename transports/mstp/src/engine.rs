//! One turn of a port: what the driver thread does each time it wakes, and
//! what a [`Simulation`](crate::sim::Simulation) does for each station at
//! each instant of virtual time. The same code in both, so the tests in
//! virtual time exercise the driver's own handling of the channels.

use crate::handle::{Command, DriverCounters, MstpHandle, MstpSender, PortStatus, Received, Shared};
use crate::port::{Port, Rx, RxOctet};
use bacnet::mstp::{MasterConfig, MasterEvent, MasterNode, MasterState, Micros};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, PoisonError};

/// Inputs and outputs one turn may go through before it yields: far more
/// than one instant ever needs; a bound, not a tuning knob.
const MAX_ROUNDS: usize = 64;

pub(crate) struct Engine<P> {
    node: MasterNode,
    pub(crate) port: P,
    name: String,
    down: Receiver<Command>,
    up: SyncSender<Received>,
    shared: Arc<Shared>,
    counters: DriverCounters,
    /// Tokens received so far, and when the last one was seen (for the
    /// token rotation time).
    tokens_seen: (u64, Option<Micros>),
    rx: Vec<RxOctet>,
    octets: Vec<u8>,
    /// The last instant handed to the node (time given to it never goes back).
    last_now: Micros,
    /// Who the last request handed up came from.
    answering: Option<u8>,
    next: Option<Micros>,
    stopped: bool,
}

/// A node, its port and the channels to a new handle.
pub(crate) fn engine<P: Port>(
    port: P,
    node: MasterConfig,
    channel_bound: usize,
    now: Micros,
) -> Result<(MstpHandle, Engine<P>), bacnet::mstp::master::ConfigError> {
    let node = MasterNode::new(node, now)?;
    let bound = channel_bound.max(1);
    let (down_tx, down) = mpsc::sync_channel(bound);
    let (up, up_rx) = mpsc::sync_channel(bound);
    let shared = Arc::new(Shared::new(status(&node, DriverCounters::default())));
    let sender =
        MstpSender::new(down_tx, port.waker(), shared.clone(), node.config().this_station, node.config().slave);
    let engine = Engine {
        name: port.name(),
        node,
        port,
        down,
        up,
        shared,
        counters: DriverCounters::default(),
        tokens_seen: (0, None),
        rx: Vec::with_capacity(256),
        octets: Vec::with_capacity(256),
        last_now: now,
        answering: None,
        next: Some(now),
        stopped: false,
    };
    Ok((MstpHandle::new(sender, up_rx), engine))
}

fn status(node: &MasterNode, driver: DriverCounters) -> PortStatus {
    PortStatus {
        state: node.state(),
        next_station: node.next_station(),
        sole_master: node.sole_master(),
        master: *node.counters(),
        receive: *node.receiver().counters(),
        driver,
    }
}

impl<P: Port> Engine<P> {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The instant the node next needs a turn (from the last turn).
    pub(crate) fn next(&self) -> Option<Micros> {
        self.next
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Everything due at `now`: octets received, the host's commands, the
    /// node's timers, frames to write, NPDUs to hand up. Returns when the
    /// node next needs a turn.
    pub(crate) fn turn(&mut self, now: Micros) -> Option<Micros> {
        if self.stopped {
            return None;
        }
        let now = now.max(self.last_now);
        if self.shared.stop.load(Ordering::Acquire) {
            self.stop();
            return None;
        }
        self.receive(now);
        self.last_now = now;
        self.commands(now);
        if self.stopped {
            return None;
        }
        self.node.handle_timeout(now);
        for _ in 0..MAX_ROUNDS {
            if !self.outputs(now) {
                break;
            }
        }
        self.time_token_rotation(now);
        *self.shared.status.lock().unwrap_or_else(PoisonError::into_inner) = status(&self.node, self.counters);
        self.next = self.node.poll_timeout();
        self.next
    }

    /// When a token arrived in this turn: the time since the one before
    /// (the token's rotation around the ring, as this station sees it).
    fn time_token_rotation(&mut self, now: Micros) {
        let received = self.node.counters().tokens_received;
        if received == self.tokens_seen.0 {
            return;
        }
        if let Some(before) = self.tokens_seen.1 {
            let took = now.saturating_sub(before);
            let c = &mut self.counters;
            c.token_rotations += 1;
            c.token_rotation_total_us += took;
            c.token_rotation_last_us = took;
            c.token_rotation_max_us = c.token_rotation_max_us.max(took);
        }
        self.tokens_seen = (received, Some(now));
    }

    /// Feed what the port received, each octet at its own instant.
    fn receive(&mut self, now: Micros) {
        self.rx.clear();
        if let Err(e) = self.port.read(now, &mut self.rx) {
            self.counters.read_errors += 1;
            if self.counters.read_errors.is_power_of_two() {
                tracing::warn!(port = %self.name, error = %e, count = self.counters.read_errors, "MS/TP read error");
            }
        }
        let mut i = 0;
        while i < self.rx.len() {
            let at = self.rx[i].at.clamp(self.last_now, now);
            match self.rx[i].rx {
                Rx::Error => {
                    self.node.handle_receive_error(at);
                    i += 1;
                }
                Rx::Octet(_) => {
                    self.octets.clear();
                    while let Some(RxOctet { at: a, rx: Rx::Octet(o) }) = self.rx.get(i) {
                        if (*a).clamp(self.last_now, now) != at {
                            break;
                        }
                        self.octets.push(*o);
                        i += 1;
                    }
                    self.node.handle_octets(at, &self.octets);
                }
            }
            self.last_now = at;
        }
    }

    fn commands(&mut self, now: Micros) {
        loop {
            match self.down.try_recv() {
                Ok(Command::Send { destination, npdu, expecting_reply }) => {
                    // The node counts what it refuses (send_refused).
                    let _ = self.node.send(destination, npdu, expecting_reply);
                }
                Ok(Command::Reply { destination, npdu }) => {
                    if self.node.state() == MasterState::AnswerDataRequest && self.answering == Some(destination) {
                        self.counters.replies_in_time += 1;
                    } else {
                        self.counters.replies_late += 1;
                    }
                    let _ = self.node.reply(now, destination, npdu);
                }
                Ok(Command::ReplyPostponed { destination }) => {
                    if self.answering == Some(destination) {
                        self.node.reply_postponed(now);
                    }
                }
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    // Every sender is gone: nobody can send or stop us.
                    self.stop();
                    return;
                }
            }
        }
    }

    /// Write the frames due and hand up what was received; true if anything
    /// happened (an event may have queued a frame).
    fn outputs(&mut self, now: Micros) -> bool {
        let mut any = false;
        while let Some(t) = self.node.poll_transmit(now) {
            any = true;
            let late = now.saturating_sub(t.at);
            self.counters.transmits += 1;
            self.counters.transmit_late_total += late;
            self.counters.transmit_late_max = self.counters.transmit_late_max.max(late);
            match self.port.write(now, &t.octets) {
                Ok(()) => self.counters.frames_written += 1,
                Err(e) => {
                    self.counters.write_errors += 1;
                    if self.counters.write_errors.is_power_of_two() {
                        tracing::warn!(port = %self.name, error = %e, count = self.counters.write_errors, "MS/TP write error");
                    }
                }
            }
        }
        while let Some(event) = self.node.poll_event() {
            any = true;
            match event {
                MasterEvent::Received { source, destination, expecting_reply, npdu } => {
                    if expecting_reply {
                        self.answering = Some(source);
                    }
                    let r = Received { source_mac: source, npdu, expecting_reply, broadcast: destination == 255 };
                    match self.up.try_send(r) {
                        Ok(()) => self.counters.npdus_up += 1,
                        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                            self.counters.up_dropped += 1;
                            if expecting_reply {
                                // Nobody will answer: free the line now.
                                self.node.reply_postponed(now);
                            }
                        }
                    }
                }
                MasterEvent::NoReply { destination } => {
                    tracing::debug!(port = %self.name, destination, "no reply before Treply_timeout");
                }
            }
        }
        any
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.next = None;
        *self.shared.status.lock().unwrap_or_else(PoisonError::into_inner) = status(&self.node, self.counters);
        self.shared.stopped.store(true, Ordering::Release);
    }

    /// Stop (if not yet) and say how things stand.
    pub(crate) fn finish(&mut self) -> PortStatus {
        if !self.stopped {
            self.stop();
        }
        self.shared.status()
    }
}
