//! `trellis events`, `trellis ack` and `trellis listen`: a device's alarms
//! and events (GetEventInformation), their acknowledgment
//! (AcknowledgeAlarm), and the event notifications a Notification Class
//! sends to this CLI as its recipient.

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

/// Arguments of `trellis listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Stop after this many notifications.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    duration: Option<u64>,
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
    let todo: Vec<usize> = match wanted {
        Some(st) => vec![bacnet::event::transition_index(st)],
        None => (0..3).filter(|i| !acked[*i]).collect(),
    };
    if todo.is_empty() {
        println!("{o}: every transition is acknowledged");
        return Ok(());
    }
    let now = now_local();
    for i in todo {
        let state = wanted.unwrap_or(states[i]);
        client.acknowledge_alarm(&dev, a.process, o, state, s.event_time_stamps[i], &a.source, now).await?;
        println!("{o}: {} acknowledged", TRANSITIONS[i]);
    }
    Ok(())
}

/// One line for an event notification.
fn notification_line(r: &crate::client::EventNotificationReceived) -> String {
    let n = &r.notification;
    let from = n.from_state.map(|s| format!("{s} -> ")).unwrap_or_default();
    let mut line = format!(
        "{} {} {} {}{} ({}, class {}, priority {}, {}{}) from {} process {}",
        stamp(&n.time_stamp),
        n.event_object,
        n.notify_type,
        from,
        n.to_state,
        n.event_type,
        n.notification_class,
        n.priority,
        if r.confirmed { "confirmed" } else { "unconfirmed" },
        if n.ack_required == Some(true) { ", ack required" } else { "" },
        n.initiating_device,
        n.process_identifier,
    );
    if let Some(text) = &n.message_text {
        line += &format!(": {text}");
    }
    line
}

/// The local time now, as a BACnet time stamp (an acknowledgment's, a
/// received notification's).
fn now_local() -> TimeStamp {
    let unix_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let (date, time) = bacnet::civil::local_date_time(unix_ms, 0);
    TimeStamp::DateTime(date, time)
}

/// One line for a COV notification received unasked (a subscription of
/// someone else's, a device's restart notification, Clause 19.3): time,
/// object, each value by name, who sent it.
pub(crate) fn cov_line(r: &crate::client::CovNotificationReceived) -> String {
    let n = &r.notification;
    let object = n.monitored_object;
    format!(
        "{} {object} cov {} ({}) from {} process {}",
        stamp(&now_local()),
        super::format::property_values(object.object_type, &n.values),
        if r.confirmed { "confirmed" } else { "unconfirmed" },
        n.initiating_device,
        n.subscriber_process_identifier,
    )
}

/// Run `trellis listen`: print every event and COV notification this CLI
/// receives (bind it where a Notification Class's or the restart
/// notification's recipient is, with --port).
pub async fn run_listen(client: &Client, a: ListenArgs) -> Result<(), Failure> {
    use tokio::sync::broadcast::error::RecvError;
    let mut events = client.event_notifications();
    let mut covs = client.cov_notifications();
    let deadline = a.duration.map(|s| tokio::time::Instant::now() + std::time::Duration::from_secs(s));
    let until_deadline = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until_deadline);
    let mut seen = 0u64;
    eprintln!("listening for event and COV notifications");
    while a.count.is_none_or(|n| seen < n) {
        tokio::select! {
            r = events.recv() => match r {
                Ok(r) => {
                    println!("{}", notification_line(&r));
                    seen += 1;
                }
                Err(RecvError::Lagged(n)) => eprintln!("{n} notifications missed (too many at once)"),
                Err(RecvError::Closed) => break,
            },
            r = covs.recv() => match r {
                Ok(r) => {
                    println!("{}", cov_line(&r));
                    seen += 1;
                }
                Err(RecvError::Lagged(n)) => eprintln!("{n} notifications missed (too many at once)"),
                Err(RecvError::Closed) => break,
            },
            _ = &mut until_deadline => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    Ok(())
}
