//! The host's own objects' state on disk (issue 42): what clients wrote to
//! the objects the host serves — Notification Classes' recipient lists,
//! Schedules and Calendars (written, created, deleted), the Device's
//! Restart_Notification_Recipients — and the COV subscriptions they hold,
//! so a restart of the gateway keeps them as the model keeps its own
//! (`trellis_plugin`'s disk state).
//!
//! Each accepted change is a [`Record`] appended to the device's `host`
//! journal before it is answered. On start ([`Server::persist`]) the
//! records are executed again through the paths a request takes — with
//! the operator's configuration as it is now, so what it no longer allows
//! is refused, logged and left out — and the ones that took effect become
//! the next snapshot. Only what still matters is kept: the last write per
//! property, created objects until deleted, subscriptions until they lapse
//! or are cancelled (their lifetimes counted on the wall clock: a
//! subscription restored after 10 minutes has 10 minutes less).
//!
//! Not kept: SubscribeCOVPropertyMultiple subscriptions (a client
//! renews them), subscriptions of subscribers inside the gateway (the MQTT
//! bridge and applications subscribe again when they start), File objects
//! (their data is on disk already).
//!
//! Must never: answer a change as done before it is journaled (unless the
//! disk failed: then it is logged and counted, and the change holds until
//! a restart), or let a record from the disk panic the host.

use super::dispatch::{Server, refusal_text};
use bacnet::ObjectIdentifier;
use bacnet::enums::ConfirmedServiceChoice as S;
use bacnet::services::WritePropertyRequest;
use bacnet::services::{
    CreateObjectRequest, ObjectSpecifier, ServiceCodec, SubscribeCOVPropertyRequest, SubscribeCOVRequest,
};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};
use trellis_model::{ObjectModel, PropertyWrite};
use trellis_net::DeviceAddress;
use trellis_persist::{Journal, Recovered};

const WRITE: u8 = 1;
const CREATE: u8 = 2;
const DELETE: u8 = 3;
const COV: u8 = 4;

/// One accepted change to the host's objects.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A WriteProperty to a host-owned object.
    Write(PropertyWrite),
    /// A CreateObject the host executed, by the identifier it created.
    Create(CreateObjectRequest),
    /// A DeleteObject of an object a CreateObject made.
    Delete(ObjectIdentifier),
    /// A SubscribeCOV or SubscribeCOVProperty (or its cancellation).
    Cov {
        /// The subscriber's address, as `DeviceAddress` prints it.
        subscriber: String,
        /// SubscribeCOV (5) or SubscribeCOVProperty (28).
        service: u8,
        /// When it was accepted (Unix seconds).
        accepted: u64,
        /// The request's service data.
        body: Vec<u8>,
    },
}

impl Record {
    /// The record's octets.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Record::Write(w) => {
                out.push(WRITE);
                w.to_record(&mut out);
            }
            Record::Create(r) => {
                out.push(CREATE);
                r.encode(&mut out);
            }
            Record::Delete(o) => {
                out.push(DELETE);
                out.extend_from_slice(&o.to_u32().to_le_bytes());
            }
            Record::Cov { subscriber, service, accepted, body } => {
                out.push(COV);
                let s = &subscriber.as_bytes()[..subscriber.len().min(255)];
                out.push(s.len() as u8);
                out.extend_from_slice(s);
                out.push(*service);
                out.extend_from_slice(&accepted.to_le_bytes());
                out.extend_from_slice(body);
            }
        }
        out
    }

    /// A record back from its octets; what is wrong with them otherwise.
    pub fn decode(b: &[u8]) -> Result<Record, String> {
        let (kind, rest) = b.split_first().ok_or("an empty record")?;
        match *kind {
            WRITE => PropertyWrite::from_record(rest).map(Record::Write),
            CREATE => CreateObjectRequest::decode(rest)
                .map(Record::Create)
                .map_err(|e| format!("a CreateObject record does not decode: {e}")),
            DELETE => match <[u8; 4]>::try_from(rest) {
                Ok(o) => Ok(Record::Delete(ObjectIdentifier::from_u32(u32::from_le_bytes(o)))),
                Err(_) => Err("a DeleteObject record is not one identifier".into()),
            },
            COV => {
                let (&len, rest) = rest.split_first().ok_or("a COV record cut short")?;
                let (s, rest) = rest.split_at_checked(len as usize).ok_or("a COV record cut short")?;
                let subscriber = std::str::from_utf8(s).map_err(|_| "a COV record's subscriber is not text")?;
                let (&service, rest) = rest.split_first().ok_or("a COV record cut short")?;
                let (at, body) = rest.split_at_checked(8).ok_or("a COV record cut short")?;
                let accepted = u64::from_le_bytes(at.try_into().expect("8 octets"));
                Ok(Record::Cov { subscriber: subscriber.to_string(), service, accepted, body: body.to_vec() })
            }
            k => Err(format!("a record of unknown kind {k}")),
        }
    }

    /// What the record is about, and whether it ends what it is about
    /// (a deletion, a cancellation) rather than sets it.
    fn key(&self) -> Result<(Key, bool), String> {
        Ok(match self {
            Record::Write(w) => {
                let t = w.target;
                (Key::Property(t.object.to_u32(), t.property.0, t.array_index.unwrap_or(u32::MAX)), false)
            }
            Record::Create(r) => match r.object {
                ObjectSpecifier::Identifier(id) => (Key::Object(id.to_u32()), false),
                ObjectSpecifier::Type(_) => return Err("a CreateObject record without the created identifier".into()),
            },
            Record::Delete(o) => (Key::Object(o.to_u32()), true),
            Record::Cov { subscriber, service, body, .. } => {
                let (pid, object, property, index, cancel) = match S(*service) {
                    S::SUBSCRIBE_COV => {
                        let r = SubscribeCOVRequest::decode(body).map_err(|e| format!("a SubscribeCOV record: {e}"))?;
                        (r.subscriber_process_identifier, r.monitored_object, u32::MAX, u32::MAX, r.is_cancellation())
                    }
                    S::SUBSCRIBE_COV_PROPERTY => {
                        let r = SubscribeCOVPropertyRequest::decode(body)
                            .map_err(|e| format!("a SubscribeCOVProperty record: {e}"))?;
                        let p = r.monitored_property;
                        let index = p.array_index.unwrap_or(u32::MAX);
                        (r.subscriber_process_identifier, r.monitored_object, p.property.0, index, r.is_cancellation())
                    }
                    s => return Err(format!("a COV record of service {}", s.0)),
                };
                (Key::Cov(subscriber.clone(), pid, object.to_u32(), property, index), cancel)
            }
        })
    }

    /// When a subscription record lapses (Unix seconds), if it does.
    fn expires(&self) -> Option<u64> {
        let Record::Cov { service, accepted, body, .. } = self else { return None };
        let lifetime = match S(*service) {
            S::SUBSCRIBE_COV => SubscribeCOVRequest::decode(body).ok()?.lifetime,
            S::SUBSCRIBE_COV_PROPERTY => SubscribeCOVPropertyRequest::decode(body).ok()?.lifetime,
            _ => None,
        };
        match lifetime {
            Some(0) | None => None,
            Some(s) => Some(accepted + u64::from(s)),
        }
    }
}

/// What a record sets: the last one per key is all that matters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// (object, property, array index or u32::MAX)
    Property(u32, u32, u32),
    /// A created object.
    Object(u32),
    /// (subscriber, process, object, property or u32::MAX, index or u32::MAX)
    Cov(String, u32, u32, u32, u32),
}

/// Unix seconds now.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The journal and what in it still matters.
#[derive(Debug)]
pub struct Retained {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    journal: Journal,
    /// Per key: the order it was set in, the record, when it lapses.
    live: BTreeMap<Key, (u64, Vec<u8>, Option<u64>)>,
    next: u64,
    failures: u64,
    /// The disk refused a change: the next snapshot makes up for it.
    owed: bool,
}

impl Retained {
    /// Keep `applied` (the records that took effect at start, in order)
    /// as the snapshot, and journal through `journal` from now on.
    pub(crate) fn new(journal: Journal, applied: &[Record]) -> Retained {
        let mut inner = Inner { journal, live: BTreeMap::new(), next: 0, failures: 0, owed: false };
        for r in applied {
            inner.take(r, r.encode());
        }
        inner.snapshot();
        Retained { inner: Mutex::new(inner) }
    }

    /// Journal an accepted change before it is answered.
    pub(crate) fn record(&self, r: &Record) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let encoded = r.encode();
        let appended = inner.journal.append(&[&encoded]);
        // In force whether or not the disk took it: the next snapshot has it.
        inner.take(r, encoded);
        if let Err(e) = appended {
            inner.failures += 1;
            if !inner.owed {
                tracing::error!(
                    "could not journal a change to the host's objects ({e}): it holds in memory (a crash now \
                     loses it), and the next change writes a snapshot of them all"
                );
            }
            inner.owed = true;
            return;
        }
        // Compacted when the journal holds far more than what matters, or
        // whole when the disk refused an earlier change.
        if inner.owed || inner.journal.records() > 64 + 2 * inner.live.len() {
            inner.snapshot();
        }
    }

    /// Changes the disk refused since the start.
    pub fn failures(&self) -> u64 {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).failures
    }
}

impl Inner {
    /// Take `r` (whose octets are `encoded`) into what matters.
    fn take(&mut self, r: &Record, encoded: Vec<u8>) {
        let Ok((key, ends)) = r.key() else { return };
        if ends {
            if let Key::Object(o) = key {
                self.live.retain(|k, _| !matches!(k, Key::Property(obj, ..) if *obj == o));
            }
            self.live.remove(&key);
        } else {
            self.next += 1;
            self.live.insert(key, (self.next, encoded, r.expires()));
        }
    }

    /// The records still in force, in the order they were set, as the
    /// snapshot: each `length (u32 LE) | record`.
    fn snapshot(&mut self) {
        let now = unix_now();
        self.live.retain(|_, (_, _, expires)| expires.is_none_or(|at| at > now));
        let mut ordered: Vec<_> = self.live.values().collect();
        ordered.sort_by_key(|(seq, ..)| *seq);
        let mut state = Vec::new();
        for (_, record, _) in ordered {
            state.extend_from_slice(&(record.len() as u32).to_le_bytes());
            state.extend_from_slice(record);
        }
        match self.journal.replace_snapshot(&state) {
            Ok(()) => {
                if std::mem::take(&mut self.owed) {
                    tracing::info!("the disk takes writes again: the host objects' changes are all on it");
                }
            }
            Err(e) => {
                self.failures += 1;
                if !self.owed {
                    tracing::error!("could not write the host objects' snapshot: {e}; the journal keeps the changes");
                }
                self.owed = true;
            }
        }
    }
}

impl<M: ObjectModel> Server<M> {
    /// Keep the host's objects' state on disk from now on (issue 42),
    /// starting from what `journal` held: each kept change is executed
    /// again through the path its request took, under the configuration
    /// as it is now; what is refused is logged and left out, and what took
    /// effect becomes the snapshot. Called once, before the device serves.
    /// Returns (changes applied, changes left out).
    pub async fn persist(&self, journal: Journal, recovered: Recovered) -> (usize, usize) {
        let device = self.device_id().instance;
        for note in &recovered.notes {
            if note.damage {
                tracing::warn!(device, "{}", note.text);
            } else {
                tracing::info!(device, "{}", note.text);
            }
        }
        let (records, mut dropped) = recovered_records(recovered.snapshot.as_deref(), &recovered.records);
        let now = unix_now();
        let mut applied = Vec::with_capacity(records.len());
        let mut lapsed = 0;
        for r in records {
            let outcome = match &r {
                Record::Write(w) => {
                    let t = w.target;
                    let request = WritePropertyRequest {
                        object: t.object,
                        property: t.property,
                        array_index: t.array_index,
                        value: w.value.clone(),
                        priority: w.priority,
                    };
                    self.write_property(request).await.map(|()| Some(r.clone())).map_err(refusal_text)
                }
                Record::Create(request) => {
                    self.create_object(request.clone()).await.map(|_| Some(r.clone())).map_err(refusal_text)
                }
                Record::Delete(o) => self.delete_object(*o).await.map(|()| Some(r.clone())).map_err(refusal_text),
                Record::Cov { subscriber, service, accepted, body } => {
                    self.resubscribe(subscriber, *service, *accepted, body, now).await
                }
            };
            match outcome {
                Ok(Some(r)) => applied.push(r),
                Ok(None) => lapsed += 1,
                Err(why) => {
                    dropped += 1;
                    tracing::warn!(device, "a kept change to the host's objects is left out: {}: {why}", describe(&r));
                }
            }
        }
        let kept = applied.len();
        self.set_retained(Retained::new(journal, &applied));
        tracing::info!(
            device,
            "host objects' state restored from disk: {kept} changes applied, {dropped} left out, {lapsed} \
             subscriptions lapsed meanwhile"
        );
        (kept, dropped)
    }

    /// A kept subscription made again with what is left of its lifetime;
    /// `None` when it lapsed while the gateway was down. The record that
    /// took effect (its lifetime counted from now).
    async fn resubscribe(
        &self,
        subscriber: &str,
        service: u8,
        accepted: u64,
        body: &[u8],
        now: u64,
    ) -> Result<Option<Record>, String> {
        let peer: DeviceAddress = subscriber.parse().map_err(|e| format!("{e}"))?;
        let left = |lifetime: Option<u32>| match lifetime {
            Some(0) | None => Some(lifetime),
            Some(s) => {
                let gone = now.saturating_sub(accepted);
                (gone < u64::from(s)).then(|| Some(s - gone as u32))
            }
        };
        let mut out = Vec::new();
        match S(service) {
            S::SUBSCRIBE_COV => {
                let mut r = SubscribeCOVRequest::decode(body).map_err(|e| e.to_string())?;
                let Some(lifetime) = left(r.lifetime) else { return Ok(None) };
                r.lifetime = lifetime;
                r.encode(&mut out);
                self.subscribe_cov(&peer, r).await.map_err(refusal_text)?;
            }
            S::SUBSCRIBE_COV_PROPERTY => {
                let mut r = SubscribeCOVPropertyRequest::decode(body).map_err(|e| e.to_string())?;
                let Some(lifetime) = left(r.lifetime) else { return Ok(None) };
                r.lifetime = lifetime;
                r.encode(&mut out);
                self.subscribe_cov_property(&peer, r).await.map_err(refusal_text)?;
            }
            s => return Err(format!("service {} is not a subscription", s.0)),
        }
        Ok(Some(Record::Cov { subscriber: subscriber.to_string(), service, accepted: now, body: out }))
    }
}

/// A record for the log.
fn describe(r: &Record) -> String {
    match r {
        Record::Write(w) => format!("write of {} property {}", w.target.object, w.target.property),
        Record::Create(c) => match c.object {
            ObjectSpecifier::Identifier(id) => format!("creation of {id}"),
            ObjectSpecifier::Type(t) => format!("creation of a {t}"),
        },
        Record::Delete(o) => format!("deletion of {o}"),
        Record::Cov { subscriber, .. } => format!("COV subscription of {subscriber}"),
    }
}

/// The records a journal held: its snapshot's, then the journal's; what
/// does not decode is logged and left out.
pub(crate) fn recovered_records(snapshot: Option<&[u8]>, journal: &[Vec<u8>]) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    let mut take = |b: &[u8]| match Record::decode(b) {
        Ok(r) => out.push(r),
        Err(e) => {
            bad += 1;
            tracing::warn!("a journaled change to the host's objects is left out: {e}");
        }
    };
    let mut cut = false;
    if let Some(mut s) = snapshot {
        while let Some((len, rest)) = s.split_at_checked(4) {
            let len = u32::from_le_bytes(len.try_into().expect("4 octets")) as usize;
            let Some((record, rest)) = rest.split_at_checked(len) else {
                tracing::warn!("the host objects' snapshot ends in a record cut short: left out");
                cut = true;
                break;
            };
            take(record);
            s = rest;
        }
    }
    for r in journal {
        take(r);
    }
    (out, bad + usize::from(cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bacnet::services::PropertyValue;
    use bacnet::{ObjectType, PropertyIdentifier as P, Value};
    use trellis_model::PropertyTarget;

    fn nc(instance: u32) -> ObjectIdentifier {
        ObjectIdentifier { object_type: ObjectType::NOTIFICATION_CLASS, instance }
    }

    #[test]
    fn every_kind_comes_back_from_its_octets() {
        let records = [
            Record::Write(PropertyWrite {
                target: PropertyTarget { object: nc(1), property: P::PRIORITY, array_index: Some(2) },
                value: Value::Unsigned(7).into(),
                priority: None,
            }),
            Record::Create(CreateObjectRequest {
                object: ObjectSpecifier::Identifier(ObjectIdentifier {
                    object_type: ObjectType::CALENDAR,
                    instance: 9,
                }),
                initial_values: vec![PropertyValue {
                    property: P::OBJECT_NAME,
                    array_index: None,
                    value: Value::CharacterString(bacnet::CharacterString::utf8("Holidays")).into(),
                    priority: None,
                }],
            }),
            Record::Delete(nc(3)),
            Record::Cov {
                subscriber: "127.0.0.1:47809".into(),
                service: 5,
                accepted: 1_700_000_000,
                body: {
                    let mut b = Vec::new();
                    SubscribeCOVRequest {
                        subscriber_process_identifier: 4,
                        monitored_object: nc(1),
                        issue_confirmed_notifications: Some(false),
                        lifetime: Some(600),
                    }
                    .encode(&mut b);
                    b
                },
            },
        ];
        for r in &records {
            assert_eq!(&Record::decode(&r.encode()).unwrap(), r);
        }
        assert_eq!(records[3].expires(), Some(1_700_000_600));
    }

    proptest::proptest! {
        /// A record from a damaged disk is an error or a record whose key
        /// and lifetime can be asked for: never a panic.
        #[test]
        fn any_octets_decode_to_a_record_or_an_error(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..96)) {
            if let Ok(r) = Record::decode(&b) {
                let _ = (r.key(), r.expires());
                proptest::prop_assert_eq!(Record::decode(&r.encode()), Ok(r));
            }
            let _ = recovered_records(Some(&b), std::slice::from_ref(&b));
        }
    }
}
