//! `trellis events` and `trellis ack`: a device's alarms and events
//! (GetEventInformation) and their acknowledgment (AcknowledgeAlarm).

use super::{Failure, device, object};
use crate::client::Client;
use bacnet::BitString;
use bacnet::enums::EventState;
use bacnet::services::{EventSummary, TimeStamp};
use clap::Args;

/// Arguments of `trellis events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    address: String,
}

/// Arguments of `trellis ack`.
#[derive(Debug, Args)]
pub struct AckArgs {
    /// Device address: IP[:PORT][@NET:MAC].
    address: String,
    /// The object whose alarm is acknowledged, e.g. analog-input,7.
    object: String,
    /// Acknowledge only the transition into this state (normal, fault,
    /// offnormal, high-limit, low-limit); by default every transition the
    /// device says is not acknowledged yet.
    #[arg(long, value_name = "STATE")]
    state: Option<String>,
    /// Acknowledgment_Source: who acknowledges.
    #[arg(long, value_name = "NAME", default_value = "trellis")]
    source: String,
    /// Acknowledging process identifier.
    #[arg(long, value_name = "ID", default_value_t = 1)]
    process: u32,
}

const TRANSITIONS: [&str; 3] = ["to-offnormal", "to-fault", "to-normal"];

fn bits(b: &BitString) -> [bool; 3] {
    [0, 1, 2].map(|i| i < b.len() && b.get(i))
}

fn stamp(t: &TimeStamp) -> String {
    match t {
        TimeStamp::DateTime(d, _) if d.year == 255 => "-".into(),
        TimeStamp::DateTime(d, t) => format!("{d} {t}"),
        TimeStamp::Time(t) => format!("{t}"),
        TimeStamp::SequenceNumber(n) => format!("#{n}"),
    }
}

fn summary_line(s: &EventSummary) -> String {
    let acked = bits(&s.acknowledged_transitions);
    let enabled = bits(&s.event_enable);
    let mut line = format!("{} {} {}", s.object, s.event_state, s.notify_type);
    for i in 0..3 {
        let ack = if acked[i] { "acked" } else { "NOT ACKED" };
        let enable = if enabled[i] { "" } else { " (disabled)" };
        line += &format!(
            "; {} {} {ack} priority {}{enable}",
            TRANSITIONS[i],
            stamp(&s.event_time_stamps[i]),
            s.event_priorities[i]
        );
    }
    line
}

/// Run `trellis events`: one line per object in an offnormal or fault
/// state or with a transition not acknowledged.
pub async fn run_events(client: &Client, a: EventsArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    for s in client.get_event_information(&dev).await? {
        println!("{}", summary_line(&s));
    }
    Ok(())
}

/// Run `trellis ack`.
pub async fn run_ack(client: &Client, a: AckArgs) -> Result<(), Failure> {
    let dev = device(&a.address)?;
    let o = object(&a.object)?;
    let wanted = match &a.state {
        Some(s) => {
            Some(EventState::from_name(s).ok_or_else(|| Failure::usage(format!("--state {s}: not an event state")))?)
        }
        None => None,
    };
    let summaries = client.get_event_information(&dev).await?;
    let Some(s) = summaries.iter().find(|s| s.object == o) else {
        return Err(Failure { code: super::exit::OTHER, message: format!("{o} has no alarm or event waiting") });
    };
    let acked = bits(&s.acknowledged_transitions);
    let offnormal = if matches!(s.event_state, EventState::NORMAL | EventState::FAULT) {
        EventState::OFFNORMAL
    } else {
        s.event_state
    };
    let states = [offnormal, EventState::FAULT, EventState::NORMAL];
    let index = |st: EventState| match st {
        EventState::FAULT => 1,
        EventState::NORMAL => 2,
        _ => 0,
    };
    let todo: Vec<usize> = match wanted {
        Some(st) => vec![index(st)],
        None => (0..3).filter(|i| !acked[*i]).collect(),
    };
    if todo.is_empty() {
        println!("{o}: every transition is acknowledged");
        return Ok(());
    }
    let unix_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let (date, time) = bacnet::civil::local_date_time(unix_ms, 0);
    for i in todo {
        let state = wanted.unwrap_or(states[i]);
        client
            .acknowledge_alarm(
                &dev,
                a.process,
                o,
                state,
                s.event_time_stamps[i],
                &a.source,
                TimeStamp::DateTime(date, time),
            )
            .await?;
        println!("{o}: {} acknowledged", TRANSITIONS[i]);
    }
    Ok(())
}
