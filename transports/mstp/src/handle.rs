//! The host's side of a port: send NPDUs, receive them, answer requests.

use crate::port::Waker;
use bacnet::mstp::frame::MAX_NPDU_EXTENDED;
use bacnet::mstp::{MasterCounters, MasterState, ReceiveCounters};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvError, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// An NPDU received on the port for this station (or broadcast).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The sending station's MAC address.
    pub source_mac: u8,
    /// The NPDU octets.
    pub npdu: Vec<u8>,
    /// A BACnet Data Expecting Reply: answer with [`MstpSender::reply`]
    /// (within the configured Treply_delay, or the node sends Reply
    /// Postponed and the answer goes at the next token).
    pub expecting_reply: bool,
    /// Sent to the broadcast address (255).
    pub broadcast: bool,
}

/// Why the handle refused an NPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Empty, or longer than 1497 octets.
    #[error("MS/TP NPDU empty or longer than 1497 octets")]
    BadLength,
    /// The channel to the driver is full.
    #[error("MS/TP driver queue full")]
    Full,
    /// The driver has stopped.
    #[error("MS/TP driver stopped")]
    Stopped,
    /// This station is a slave node (Clause 9.5.7): it only answers
    /// requests and can never send on its own.
    #[error("an MS/TP slave node cannot initiate a transmission")]
    Slave,
}

/// What the host asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Send { destination: u8, npdu: Vec<u8>, expecting_reply: bool },
    Reply { destination: u8, npdu: Vec<u8> },
    ReplyPostponed { destination: u8 },
}

/// Counters the driver keeps (beside the master node's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverCounters {
    /// NPDUs handed to the host.
    pub npdus_up: u64,
    /// NPDUs dropped because the host's channel was full or closed (a
    /// request among them is answered with Reply Postponed at once).
    pub up_dropped: u64,
    /// Frames written to the port.
    pub frames_written: u64,
    /// Read errors from the port.
    pub read_errors: u64,
    /// Write errors from the port.
    pub write_errors: u64,
    /// Replies the host gave while the node was still waiting for them
    /// (sent in ANSWER_DATA_REQUEST).
    pub replies_in_time: u64,
    /// Replies that came after Reply Postponed (queued for the next token).
    pub replies_late: u64,
    /// Frames whose first octet was written after the instant the node
    /// named: the sum and the worst, µs.
    pub transmit_late_total: u64,
    /// See [`DriverCounters::transmit_late_total`].
    pub transmit_late_max: u64,
    /// Frames transmitted (the count behind the lateness figures).
    pub transmits: u64,
    /// Token rotations seen (a token received after an earlier one).
    pub token_rotations: u64,
    /// Their total time, µs: from one token received to the next.
    pub token_rotation_total_us: u64,
    /// The last one, µs.
    pub token_rotation_last_us: u64,
    /// The longest one, µs.
    pub token_rotation_max_us: u64,
}

/// A snapshot of the port's state and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortStatus {
    /// The master node's state.
    pub state: MasterState,
    /// NS, the station the token goes to.
    pub next_station: u8,
    /// No other master answered.
    pub sole_master: bool,
    /// The master node's counters.
    pub master: MasterCounters,
    /// The receive state machine's counters.
    pub receive: ReceiveCounters,
    /// The driver's counters.
    pub driver: DriverCounters,
}

/// State shared by the handle and the driver.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    pub(crate) stopped: AtomicBool,
    pub(crate) status: Mutex<PortStatus>,
}

impl Shared {
    pub(crate) fn new(status: PortStatus) -> Shared {
        Shared { stop: AtomicBool::new(false), stopped: AtomicBool::new(false), status: Mutex::new(status) }
    }

    pub(crate) fn status(&self) -> PortStatus {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Sends on the port; cheap to clone, usable from any thread or task (it
/// never blocks).
#[derive(Debug, Clone)]
pub struct MstpSender {
    down: SyncSender<Command>,
    waker: Waker,
    shared: Arc<Shared>,
    mac: u8,
    slave: bool,
}

impl MstpSender {
    pub(crate) fn new(
        down: SyncSender<Command>,
        waker: Waker,
        shared: Arc<Shared>,
        mac: u8,
        slave: bool,
    ) -> MstpSender {
        MstpSender { down, waker, shared, mac, slave }
    }

    /// This station is a slave node: [`MstpSender::send`] refuses, only
    /// replies go out.
    pub fn is_slave(&self) -> bool {
        self.slave
    }

    /// This station's MAC address.
    pub fn mac(&self) -> u8 {
        self.mac
    }

    fn command(&self, c: Command) -> Result<(), SendError> {
        if self.shared.stopped.load(Ordering::Acquire) {
            return Err(SendError::Stopped);
        }
        match self.down.try_send(c) {
            Ok(()) => {
                self.waker.wake();
                Ok(())
            }
            Err(TrySendError::Full(_)) => Err(SendError::Full),
            Err(TrySendError::Disconnected(_)) => Err(SendError::Stopped),
        }
    }

    /// Queue `npdu` for `dest_mac` (255: broadcast), sent at this station's
    /// next token in a BACnet Data frame (extended beyond 501 octets).
    pub fn send(&self, dest_mac: u8, npdu: Vec<u8>, expecting_reply: bool) -> Result<(), SendError> {
        check_len(&npdu)?;
        if self.slave {
            return Err(SendError::Slave);
        }
        self.command(Command::Send { destination: dest_mac, npdu, expecting_reply })
    }

    /// Answer the BACnet Data Expecting Reply that `dest_mac` sent: at once
    /// if the node still waits for it, else at the next token.
    pub fn reply(&self, dest_mac: u8, npdu: Vec<u8>) -> Result<(), SendError> {
        check_len(&npdu)?;
        self.command(Command::Reply { destination: dest_mac, npdu })
    }

    /// The answer to `dest_mac`'s request will take longer than
    /// Treply_delay: send Reply Postponed now (then [`MstpSender::reply`]
    /// when the answer is ready).
    pub fn reply_postponed(&self, dest_mac: u8) -> Result<(), SendError> {
        self.command(Command::ReplyPostponed { destination: dest_mac })
    }

    /// Stop the driver: it returns from [`crate::MstpDriver::run`] at its
    /// next turn, dropping what is queued. Idempotent.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// The driver has stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::Acquire)
    }

    /// The port's state and counters, as of the driver's last turn.
    pub fn status(&self) -> PortStatus {
        self.shared.status()
    }
}

fn check_len(npdu: &[u8]) -> Result<(), SendError> {
    if npdu.is_empty() || npdu.len() > MAX_NPDU_EXTENDED { Err(SendError::BadLength) } else { Ok(()) }
}

/// The host's end of an MS/TP port: an [`MstpSender`] and the NPDUs
/// received. [`MstpHandle::into_parts`] separates them (e.g. to receive on
/// a thread of its own while tasks send).
#[derive(Debug)]
pub struct MstpHandle {
    sender: MstpSender,
    received: Receiver<Received>,
}

impl MstpHandle {
    pub(crate) fn new(sender: MstpSender, received: Receiver<Received>) -> MstpHandle {
        MstpHandle { sender, received }
    }

    /// The sending side (cloneable).
    pub fn sender(&self) -> &MstpSender {
        &self.sender
    }

    /// The sending side and the receiver of NPDUs.
    pub fn into_parts(self) -> (MstpSender, Receiver<Received>) {
        (self.sender, self.received)
    }

    /// This station's MAC address.
    pub fn mac(&self) -> u8 {
        self.sender.mac
    }

    /// See [`MstpSender::send`].
    pub fn send(&self, dest_mac: u8, npdu: Vec<u8>, expecting_reply: bool) -> Result<(), SendError> {
        self.sender.send(dest_mac, npdu, expecting_reply)
    }

    /// See [`MstpSender::reply`].
    pub fn reply(&self, dest_mac: u8, npdu: Vec<u8>) -> Result<(), SendError> {
        self.sender.reply(dest_mac, npdu)
    }

    /// See [`MstpSender::reply_postponed`].
    pub fn reply_postponed(&self, dest_mac: u8) -> Result<(), SendError> {
        self.sender.reply_postponed(dest_mac)
    }

    /// See [`MstpSender::shutdown`].
    pub fn shutdown(&self) {
        self.sender.shutdown()
    }

    /// See [`MstpSender::status`].
    pub fn status(&self) -> PortStatus {
        self.sender.status()
    }

    /// The next NPDU, waiting for it (an error once the driver has stopped
    /// and everything was taken).
    pub fn recv(&self) -> Result<Received, RecvError> {
        self.received.recv()
    }

    /// The next NPDU, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Received, RecvTimeoutError> {
        self.received.recv_timeout(timeout)
    }

    /// The next NPDU if one is waiting.
    pub fn try_recv(&self) -> Result<Received, TryRecvError> {
        self.received.try_recv()
    }
}
