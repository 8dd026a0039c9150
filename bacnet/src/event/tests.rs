//! The algorithms as timelines: values arrive at seconds, transitions come
//! out when their conditions have held for their delays.

use super::*;
use alloc::vec;
use alloc::vec::Vec;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// High_Limit 80, Low_Limit 10, Deadband 2, both limits enabled.
fn out_of_range() -> Algorithm {
    Algorithm::OutOfRange { low_limit: 10.0, high_limit: 80.0, deadband: 2.0, low_enabled: true, high_enabled: true }
}

/// [`out_of_range`] with its high limit disabled.
fn high_limit_disabled() -> Algorithm {
    Algorithm::OutOfRange { low_limit: 10.0, high_limit: 80.0, deadband: 2.0, low_enabled: true, high_enabled: false }
}

fn inputs(now: u64, value: Monitored) -> Inputs {
    Inputs { now: s(now), value, fault: false, detection_enabled: true, time_delay: s(5), time_delay_normal: s(3) }
}

/// Feed `timeline` (second, value) and collect the transitions (second, to).
fn run(d: &mut Detector, a: &Algorithm, timeline: &[(u64, Monitored)]) -> Vec<(u64, EventState)> {
    timeline.iter().filter_map(|(t, v)| d.evaluate(a, inputs(*t, *v))).map(|t| (t.at.as_secs(), t.to)).collect()
}

use Monitored::{Real, State};

#[test]
fn a_value_above_the_high_limit_for_the_time_delay_is_high_limit_and_back_below_the_deadband_is_normal() {
    let mut d = Detector::new();
    let seen = run(
        &mut d,
        &out_of_range(),
        &[
            (0, Real(70.0)),
            (1, Real(81.0)),
            (3, Real(82.0)),
            (6, Real(83.0)),
            (7, Real(79.0)),
            (9, Real(77.5)),
            (12, Real(77.0)),
        ],
    );
    // Above from 1 s: HIGH_LIMIT at 6 s. 79 is inside the limit but not
    // below 80 - 2: no return; below 78 from 9 s: NORMAL at 12 s.
    assert_eq!(seen, vec![(6, EventState::HIGH_LIMIT), (12, EventState::NORMAL)]);
}

#[test]
fn a_condition_that_breaks_before_its_delay_starts_over() {
    let mut d = Detector::new();
    let seen = run(
        &mut d,
        &out_of_range(),
        &[(0, Real(85.0)), (4, Real(50.0)), (5, Real(85.0)), (9, Real(85.0)), (10, Real(85.0))],
    );
    assert_eq!(seen, vec![(10, EventState::HIGH_LIMIT)], "the 4 s dip restarted the delay at 5 s");
    assert_eq!(d.state(), EventState::HIGH_LIMIT);
}

#[test]
fn from_high_limit_straight_to_low_limit() {
    let mut d = Detector::new();
    let seen = run(&mut d, &out_of_range(), &[(0, Real(90.0)), (5, Real(90.0)), (6, Real(5.0)), (11, Real(5.0))]);
    assert_eq!(seen, vec![(5, EventState::HIGH_LIMIT), (11, EventState::LOW_LIMIT)]);
}

#[test]
fn disabling_the_limit_in_force_returns_to_normal_at_once() {
    let mut d = Detector::new();
    run(&mut d, &out_of_range(), &[(0, Real(90.0)), (5, Real(90.0))]);
    let disabled = high_limit_disabled();
    let t = d.evaluate(&disabled, inputs(6, Real(90.0))).unwrap();
    assert_eq!((t.from, t.to), (EventState::HIGH_LIMIT, EventState::NORMAL));
    assert_eq!(d.evaluate(&disabled, inputs(60, Real(200.0))), None, "the high limit is off");
}

#[test]
fn a_fault_comes_first_and_its_end_returns_to_normal() {
    let mut d = Detector::new();
    run(&mut d, &out_of_range(), &[(0, Real(90.0)), (5, Real(90.0))]);
    let fault = Inputs { fault: true, ..inputs(6, Real(90.0)) };
    let t = d.evaluate(&out_of_range(), fault).unwrap();
    assert_eq!((t.from, t.to, t.at), (EventState::HIGH_LIMIT, EventState::FAULT, s(6)));
    assert_eq!(d.evaluate(&out_of_range(), Inputs { now: s(7), ..fault }), None, "once");
    let t = d.evaluate(&out_of_range(), inputs(8, Real(90.0))).unwrap();
    assert_eq!((t.from, t.to), (EventState::FAULT, EventState::NORMAL));
    // Still above: HIGH_LIMIT again after the delay, from 9 s.
    assert_eq!(run(&mut d, &out_of_range(), &[(9, Real(90.0)), (14, Real(90.0))]), vec![(14, EventState::HIGH_LIMIT)]);
}

#[test]
fn without_event_detection_the_state_is_normal_and_nothing_is_reported() {
    let mut d = Detector::new();
    run(&mut d, &out_of_range(), &[(0, Real(90.0)), (5, Real(90.0))]);
    let off = Inputs { detection_enabled: false, ..inputs(6, Real(90.0)) };
    assert_eq!(d.evaluate(&out_of_range(), off), None);
    assert_eq!(d.state(), EventState::NORMAL);
}

#[test]
fn the_pending_delay_says_when_to_evaluate_again() {
    let mut d = Detector::new();
    assert_eq!(d.evaluate(&out_of_range(), inputs(2, Real(90.0))), None);
    assert_eq!(d.poll_timeout(), Some(s(7)));
    assert_eq!(d.evaluate(&out_of_range(), inputs(3, Real(50.0))), None);
    assert_eq!(d.poll_timeout(), None, "the condition broke");
}

#[test]
fn change_of_state_alarms_on_an_alarm_value_and_again_on_another_one() {
    // A multi-state value with states 1..4 whose 3 and 4 are alarms.
    let a = Algorithm::ChangeOfState { alarm_values: vec![3, 4] };
    let mut d = Detector::new();
    let seen = run(
        &mut d,
        &a,
        &[(0, State(1)), (1, State(3)), (6, State(3)), (7, State(4)), (12, State(4)), (13, State(2)), (16, State(2))],
    );
    assert_eq!(
        seen,
        vec![(6, EventState::OFFNORMAL), (12, EventState::OFFNORMAL), (16, EventState::NORMAL)],
        "offnormal on 3, offnormal again on 4, normal on 2"
    );
}

#[test]
fn a_binary_alarm_value_without_delays_is_reported_at_once() {
    let a = Algorithm::ChangeOfState { alarm_values: vec![1] };
    let mut d = Detector::new();
    let now = |t, v| Inputs { time_delay: Duration::ZERO, time_delay_normal: Duration::ZERO, ..inputs(t, State(v)) };
    assert_eq!(d.evaluate(&a, now(0, 1)).map(|t| t.to), Some(EventState::OFFNORMAL));
    assert_eq!(d.evaluate(&a, now(1, 1)), None);
    assert_eq!(d.evaluate(&a, now(2, 0)).map(|t| t.to), Some(EventState::NORMAL));
}

#[test]
fn a_disabled_high_limit_returns_to_normal_at_once_even_below_the_low_limit() {
    let mut d = Detector::new();
    run(&mut d, &out_of_range(), &[(0, Real(90.0)), (5, Real(90.0))]);
    assert_eq!(d.state(), EventState::HIGH_LIMIT);
    let disabled = high_limit_disabled();
    // The value fell below the low limit as the high limit was disabled:
    // NORMAL at once (condition (c)); LOW_LIMIT after its own delay, which
    // starts at the next evaluation.
    let seen = run(&mut d, &disabled, &[(6, Real(5.0)), (8, Real(5.0)), (12, Real(5.0)), (13, Real(5.0))]);
    assert_eq!(seen, vec![(6, EventState::NORMAL), (13, EventState::LOW_LIMIT)]);
}

#[test]
fn a_clock_set_back_during_a_delay_starts_the_delay_again() {
    let mut d = Detector::new();
    let a = out_of_range();
    assert_eq!(run(&mut d, &a, &[(100, Real(90.0)), (102, Real(90.0))]), vec![]);
    // TimeSynchronization moved the clock back an hour: the delay counts
    // from then, not from a start that is now in the future.
    assert_eq!(
        run(&mut d, &a, &[(50, Real(90.0)), (54, Real(90.0)), (55, Real(90.0))]),
        vec![(55, EventState::HIGH_LIMIT)]
    );
}
