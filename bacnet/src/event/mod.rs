//! Event-state detection (Clause 13.2, 13.3): the algorithms that move an
//! object's Event_State between NORMAL, an offnormal state and FAULT, with
//! Time_Delay and Time_Delay_Normal.
//!
//! Sans-IO like [`crate::cov`]: a [`Detector`] reads no clock and no
//! property. The owner (the guest SDK's store for intrinsic reporting, the
//! host for Event Enrollment) hands it the monitored value, the
//! reliability and the time (`now`, a `Duration` since any epoch) after
//! every change and at its ticks, and receives the transitions to report.
//!
//! What is decided here:
//! - Fault first (Clause 13.2.5): a reliability other than
//!   no-fault-detected moves the state to FAULT at once, whatever the
//!   algorithm says; when the fault clears, the state returns to NORMAL at
//!   once, and the algorithm applies again from the next evaluation.
//! - A condition must hold without a break for its delay (Time_Delay into
//!   an offnormal state, Time_Delay_Normal back to NORMAL): a pending
//!   transition whose condition stops holding is dropped, and a different
//!   condition starts its own delay.
//! - Event_Detection_Enable false: the state is NORMAL and nothing is
//!   reported (Clause 13.2.2.1.1).
//! - Which transitions are notified (Event_Enable), acknowledged
//!   (Ack_Required) and time-stamped is the owner's business: every
//!   transition comes out of here.
//!
//! Must never: report a transition to the state already in force (except
//! CHANGE_OF_STATE's offnormal-to-offnormal on a new alarm value, which the
//! standard requires), or read a clock.

mod algorithm;
#[cfg(test)]
mod tests;

pub use algorithm::{Algorithm, Monitored};

use algorithm::Wanted;

use crate::enums::EventState;
use core::time::Duration;

/// Which of Event_Enable, Acked_Transitions, Event_Time_Stamps, a
/// Notification Class's Priority and Ack_Required, and a destination's
/// transitions a transition into `to` belongs to: 0 to-offnormal (any
/// offnormal state), 1 to-fault, 2 to-normal.
pub fn transition_index(to: EventState) -> usize {
    match to {
        EventState::FAULT => 1,
        EventState::NORMAL => 2,
        _ => 0,
    }
}

/// What the owner knows of the object at `now`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inputs {
    /// The instant of this evaluation.
    pub now: Duration,
    /// The monitored value (Present_Value).
    pub value: Monitored,
    /// The object's Reliability is not no-fault-detected.
    pub fault: bool,
    /// Event_Detection_Enable.
    pub detection_enabled: bool,
    /// Time_Delay: how long an offnormal condition must hold.
    pub time_delay: Duration,
    /// Time_Delay_Normal: how long the normal condition must hold.
    pub time_delay_normal: Duration,
}

/// A change of Event_State to report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// The state left.
    pub from: EventState,
    /// The state entered.
    pub to: EventState,
    /// When it took effect (the evaluation that found its delay over).
    pub at: Duration,
    /// The monitored value that caused it.
    pub value: Monitored,
}

/// A transition waiting for its delay.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pending {
    to: EventState,
    /// For CHANGE_OF_STATE, the alarm value the condition is about.
    value: Option<u32>,
    since: Duration,
    delay: Duration,
}

/// One object's event state and the transition it is waiting to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Detector {
    state: EventState,
    /// For CHANGE_OF_STATE in OFFNORMAL: the alarm value that caused it.
    alarm_value: Option<u32>,
    pending: Option<Pending>,
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

impl Detector {
    /// An object in NORMAL with nothing pending.
    pub fn new() -> Self {
        Detector { state: EventState::NORMAL, alarm_value: None, pending: None }
    }

    /// An object found in `state` (state handed over across a restart),
    /// nothing pending; for CHANGE_OF_STATE in OFFNORMAL, `alarm_value` is
    /// the value that caused it (so that value does not alarm again).
    pub fn resume(state: EventState, alarm_value: Option<u32>) -> Self {
        let alarm_value = alarm_value.filter(|_| state == EventState::OFFNORMAL);
        Detector { state, alarm_value, pending: None }
    }

    /// Event_State now.
    pub fn state(&self) -> EventState {
        self.state
    }

    /// When a pending transition's delay ends: the owner evaluates again
    /// then (or at its next tick after it).
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.pending.map(|p| p.since.saturating_add(p.delay))
    }

    /// Apply `algorithm` to `inputs`; the transition made, if any.
    pub fn evaluate(&mut self, algorithm: &Algorithm, inputs: Inputs) -> Option<Transition> {
        if !inputs.detection_enabled {
            self.pending = None;
            self.alarm_value = None;
            self.state = EventState::NORMAL;
            return None;
        }
        if inputs.fault {
            self.pending = None;
            return (self.state != EventState::FAULT).then(|| self.enter(EventState::FAULT, None, inputs));
        }
        if self.state == EventState::FAULT {
            self.pending = None;
            return Some(self.enter(EventState::NORMAL, None, inputs));
        }
        let Some(Wanted { to, value, immediate }) = algorithm.wanted(self.state, self.alarm_value, inputs.value) else {
            self.pending = None;
            return None;
        };
        let delay = match to {
            _ if immediate => Duration::ZERO,
            EventState::NORMAL => inputs.time_delay_normal,
            _ => inputs.time_delay,
        };
        // The same condition keeps its start, unless its delay changed
        // (a limit disabled meanwhile is immediate) or the clock went back
        // past it (a TimeSynchronization: the delay starts again).
        let pending = match self.pending {
            Some(p) if p.to == to && p.value == value && p.delay == delay && p.since <= inputs.now => p,
            _ => Pending { to, value, since: inputs.now, delay },
        };
        if inputs.now.saturating_sub(pending.since) >= pending.delay {
            self.pending = None;
            return Some(self.enter(to, value, inputs));
        }
        self.pending = Some(pending);
        None
    }

    fn enter(&mut self, to: EventState, value: Option<u32>, inputs: Inputs) -> Transition {
        let from = self.state;
        self.state = to;
        self.alarm_value = value;
        Transition { from, to, at: inputs.now, value: inputs.value }
    }
}
