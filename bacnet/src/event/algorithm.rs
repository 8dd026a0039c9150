//! The event algorithms of Clause 13.3 this crate implements, as the state
//! each one wants given the current state and the monitored value.

use crate::enums::EventState;
use alloc::vec::Vec;

/// The monitored value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Monitored {
    /// An analog value (OUT_OF_RANGE).
    Real(f32),
    /// A binary (0 inactive, 1 active) or multi-state (1..) value
    /// (CHANGE_OF_STATE).
    State(u32),
}

/// An event algorithm and its parameters (the object's properties).
#[derive(Debug, Clone, PartialEq)]
pub enum Algorithm {
    /// OUT_OF_RANGE (Clause 13.3.6): analog inputs, outputs and values.
    OutOfRange {
        /// Low_Limit.
        low_limit: f32,
        /// High_Limit.
        high_limit: f32,
        /// Deadband: how far back inside a limit the value must come.
        deadband: f32,
        /// Limit_Enable's low-limit-enable.
        low_enabled: bool,
        /// Limit_Enable's high-limit-enable.
        high_enabled: bool,
    },
    /// CHANGE_OF_STATE (Clause 13.3.2): binary objects (Alarm_Value) and
    /// multi-state objects (Alarm_Values).
    ChangeOfState {
        /// The values that are offnormal.
        alarm_values: Vec<u32>,
    },
}

impl Algorithm {
    /// The state the algorithm calls for from `current`, with the alarm
    /// value it is about (CHANGE_OF_STATE); `None` when it calls for no
    /// change.
    pub(super) fn wanted(&self, current: EventState, alarm_value: Option<u32>, value: Monitored) -> Option<Wanted> {
        match (self, value) {
            (
                Algorithm::OutOfRange { low_limit, high_limit, deadband, low_enabled, high_enabled },
                Monitored::Real(v),
            ) => {
                let above = *high_enabled && v > *high_limit;
                let below = *low_enabled && v < *low_limit;
                // A limit disabled while in its state: back to NORMAL at
                // once (Clause 13.3.6, conditions (c) and (h)).
                let disabled = match current {
                    EventState::HIGH_LIMIT => !*high_enabled,
                    EventState::LOW_LIMIT => !*low_enabled,
                    _ => false,
                };
                // The disabled limit first: NORMAL at once, even when the
                // value is beyond the other limit (its own transition
                // follows from NORMAL, after its Time_Delay).
                let to = match current {
                    EventState::HIGH_LIMIT | EventState::LOW_LIMIT if disabled => EventState::NORMAL,
                    EventState::HIGH_LIMIT if below => EventState::LOW_LIMIT,
                    EventState::HIGH_LIMIT if v < high_limit - deadband => EventState::NORMAL,
                    EventState::LOW_LIMIT if above => EventState::HIGH_LIMIT,
                    EventState::LOW_LIMIT if v > low_limit + deadband => EventState::NORMAL,
                    EventState::HIGH_LIMIT | EventState::LOW_LIMIT => return None,
                    _ if above => EventState::HIGH_LIMIT,
                    _ if below => EventState::LOW_LIMIT,
                    _ => return None,
                };
                (to != current).then_some(Wanted { to, value: None, immediate: disabled && to == EventState::NORMAL })
            }
            (Algorithm::ChangeOfState { alarm_values }, Monitored::State(v)) => {
                let offnormal = alarm_values.contains(&v);
                let (to, value) = match (current, offnormal) {
                    (EventState::OFFNORMAL, true) if alarm_value != Some(v) => (EventState::OFFNORMAL, Some(v)),
                    (EventState::OFFNORMAL, true) => return None,
                    (EventState::OFFNORMAL, false) => (EventState::NORMAL, None),
                    (_, true) => (EventState::OFFNORMAL, Some(v)),
                    (_, false) => return None,
                };
                Some(Wanted { to, value, immediate: false })
            }
            // A value of the other kind: nothing to decide on.
            _ => None,
        }
    }
}

/// A transition an algorithm calls for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Wanted {
    /// The state.
    pub(super) to: EventState,
    /// CHANGE_OF_STATE: the alarm value it is about.
    pub(super) value: Option<u32>,
    /// Without waiting for a delay.
    pub(super) immediate: bool,
}
