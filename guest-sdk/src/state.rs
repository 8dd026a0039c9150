//! The state a model hands across a hot swap or a restart (`export-state`
//! → `import-state`).
//!
//! Format, version 1: the magic `TRST`, a version octet, then BACnet
//! encoding (Clause 20.2) — self-describing, bounded to decode, and already
//! in the core:
//!
//! ```text
//! state   ::= "TRST" 0x01 record*
//! record  ::= [0] { ObjectIdentifier (Unsigned property-id, [1] { value })* }   -- one object
//!           | [2] { OctetString }                                             -- the model's own bytes
//!           | [3] { ObjectIdentifier Boolean Unsigned (Unsigned | Null)        -- one Trend Log:
//!                   [0] { BACnetLogRecord* } }                                --   Enable, Total_Record_Count,
//!                                                                             --   next record due (Unix ms), Log_Buffer
//!           | [4] { ObjectIdentifier CharacterString }                         -- an object a client created
//! ```
//!
//! Per object: Present_Value of a non-commandable object, Priority_Array of a
//! commandable one (16 elements, Null = empty), Out_Of_Service, and those of
//! Object_Name, Description, Location and COV_Increment that a client wrote
//! (so configuration changes in a new version still take effect for the
//! rest). Per Trend Log, besides its written Object_Name and Description in
//! a `[0]` record: Enable, Total_Record_Count, its schedule and its buffer,
//! so records and sequence numbers go on across a swap. Import skips what
//! the new version does not have: unknown records, objects, properties, and
//! values that no longer fit (a state beyond Number_Of_States, a datatype
//! that changed); a buffer larger than the new Buffer_Size keeps its newest
//! records. A higher version, or bytes that are not a state, are an error and
//! leave the store untouched.
//!
//! Objects a client created (`[4]`, before the object records) are made
//! again from the importing version's template for their type, then take
//! their `[0]` record; a version without that template skips them (and
//! says so in the log).
//!
//! The `[3]` and `[4]` records did not change the version: version 1 readers skip
//! record tags they do not know (so an older plugin takes the rest of a
//! newer state), and a state without `[3]` records restores every Trend Log
//! empty.

use crate::store::{CREATION_ONLY, Class, LogRecord, Object, PresentValue, Store, TrendLog};
use bacnet::codec::Reader;
use bacnet::{AnyValue, Element, ObjectIdentifier, PropertyIdentifier as P, Value};

const MAGIC: &[u8; 4] = b"TRST";
const VERSION: u8 = 1;
const OBJECT: u8 = 0;
const PROPERTY_VALUE: u8 = 1;
const MODEL: u8 = 2;
const TREND_LOG: u8 = 3;
const CREATED: u8 = 4;

/// Encode the store's state and the model's own bytes.
pub(crate) fn export(store: &Store, model: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    let device = store.device();
    let w = store.device_written;
    let mut props: Vec<(P, AnyValue)> = Vec::new();
    if w.name {
        props.push((P::OBJECT_NAME, crate::value::text(&device.name).into()));
    }
    if w.description {
        props.push((P::DESCRIPTION, crate::value::text(&device.description).into()));
    }
    if w.location {
        props.push((P::LOCATION, crate::value::text(&device.location).into()));
    }
    object_record(&mut body, device.id(), &props);
    // Created objects before their values: an import makes them first.
    for (id, name) in store.created_objects() {
        body.push(Element::Constructed {
            tag: CREATED,
            elements: vec![
                Element::Application(Value::ObjectIdentifier(id)),
                Element::Application(crate::value::text(name)),
            ],
        });
    }
    for o in store.objects.values() {
        let mut props = object_props(o);
        if store.is_created(o.id) {
            props.extend(crate::store::creation_props(o));
        }
        object_record(&mut body, o.id, &props);
    }
    for t in store.trend_logs.values() {
        let mut props: Vec<(P, AnyValue)> = Vec::new();
        if t.written.name {
            props.push((P::OBJECT_NAME, crate::value::text(&t.name).into()));
        }
        if t.written.description {
            props.push((P::DESCRIPTION, crate::value::text(&t.description).into()));
        }
        if !props.is_empty() {
            object_record(&mut body, t.id, &props);
        }
        body.push(trend_log_record(t));
    }
    body.push(Element::Constructed {
        tag: MODEL,
        elements: vec![Element::Application(Value::OctetString(model.to_vec()))],
    });
    let mut out = Vec::with_capacity(64 + 16 * body.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    AnyValue(body).encode(&mut out);
    out
}

fn object_props(o: &Object) -> Vec<(P, AnyValue)> {
    let mut props = Vec::new();
    if o.written.name {
        props.push((P::OBJECT_NAME, crate::value::text(&o.name).into()));
    }
    if o.written.description {
        props.push((P::DESCRIPTION, crate::value::text(&o.description).into()));
    }
    if let (true, Class::Analog { cov_increment, .. }) = (o.written.cov_increment, &o.class) {
        props.push((P::COV_INCREMENT, Value::Real(*cov_increment).into()));
    }
    props.push((P::OUT_OF_SERVICE, Value::Boolean(o.out_of_service).into()));
    match &o.command {
        Some(c) => props.push((
            P::PRIORITY_ARRAY,
            crate::value::array(c.slots.iter().map(|s| s.map(|v| v.to_value()).unwrap_or(Value::Null))),
        )),
        None => props.push((P::PRESENT_VALUE, o.value.to_value().into())),
    }
    if let Some(r) = &o.reporting {
        let mut kept = vec![P::EVENT_STATE, P::ACKED_TRANSITIONS, P::EVENT_TIME_STAMPS, P::EVENT_MESSAGE_TEXTS];
        if r.written {
            kept.extend(WRITABLE_REPORTING);
        }
        for p in kept {
            let value = match p {
                P::EVENT_STATE => Ok(Value::Enumerated(o.event_state.0).into()),
                _ => crate::store::props::read_reporting(r, p).map(|prop| match prop {
                    crate::store::props::Prop::One(v) => v.into(),
                    crate::store::props::Prop::Array(items) => crate::value::array(items),
                    crate::store::props::Prop::Any(v) => v,
                    crate::store::props::Prop::Elements(e) => AnyValue(e),
                }),
            };
            if let Ok(v) = value {
                props.push((p, v));
            }
        }
    }
    props
}

/// The intrinsic reporting properties a client may write, kept across a
/// swap once one was written (those the object does not have are not
/// read, so not kept).
const WRITABLE_REPORTING: [P; 11] = [
    P::TIME_DELAY,
    P::TIME_DELAY_NORMAL,
    P::NOTIFICATION_CLASS,
    P::HIGH_LIMIT,
    P::LOW_LIMIT,
    P::DEADBAND,
    P::LIMIT_ENABLE,
    P::ALARM_VALUE,
    P::EVENT_ENABLE,
    P::NOTIFY_TYPE,
    P::EVENT_DETECTION_ENABLE,
];

fn trend_log_record(t: &TrendLog) -> Element {
    let next_due = match t.next_due_ms {
        Some(ms) => Value::Unsigned(ms),
        None => Value::Null,
    };
    Element::Constructed {
        tag: TREND_LOG,
        elements: vec![
            Element::Application(Value::ObjectIdentifier(t.id)),
            Element::Application(Value::Boolean(t.enable)),
            Element::Application(Value::Unsigned(t.total_record_count.into())),
            Element::Application(next_due),
            Element::Constructed { tag: 0, elements: t.log_buffer().0 },
        ],
    }
}

/// A Trend Log's state as decoded.
struct TrendLogState {
    id: ObjectIdentifier,
    enable: bool,
    total_record_count: u32,
    next_due_ms: Option<u64>,
    records: Vec<LogRecord>,
}

fn decode_trend_log(elements: &[Element]) -> Result<TrendLogState, String> {
    let [
        Element::Application(Value::ObjectIdentifier(id)),
        Element::Application(Value::Boolean(enable)),
        Element::Application(Value::Unsigned(total)),
        Element::Application(next),
        Element::Constructed { tag: 0, elements: buffer },
    ] = elements
    else {
        return Err(
            "state: a trend log record is not an identifier, Enable, Total_Record_Count, schedule and buffer".into()
        );
    };
    let total_record_count =
        u32::try_from(*total).map_err(|_| format!("state: Total_Record_Count of {id} is out of range"))?;
    let next_due_ms = match next {
        Value::Unsigned(ms) => Some(*ms),
        Value::Null => None,
        _ => return Err(format!("state: the schedule of {id} is not a time or Null")),
    };
    let records = LogRecord::decode_all(buffer)
        .ok_or_else(|| format!("state: the buffer of {id} is not a list of log records"))?;
    Ok(TrendLogState { id: *id, enable: *enable, total_record_count, next_due_ms, records })
}

fn object_record(body: &mut Vec<Element>, id: ObjectIdentifier, props: &[(P, AnyValue)]) {
    let mut elements = vec![Element::Application(Value::ObjectIdentifier(id))];
    for (p, v) in props {
        elements.push(Element::Application(Value::Unsigned(p.0 as u64)));
        elements.push(Element::Constructed { tag: PROPERTY_VALUE, elements: v.0.clone() });
    }
    body.push(Element::Constructed { tag: OBJECT, elements });
}

/// A decoded state: per object its properties, and the model's bytes.
pub(crate) struct State {
    created: Vec<(ObjectIdentifier, String)>,
    objects: Vec<(ObjectIdentifier, Vec<(P, AnyValue)>)>,
    trend_logs: Vec<TrendLogState>,
    pub(crate) model: Vec<u8>,
}

/// Decode a state without applying it.
pub(crate) fn decode(bytes: &[u8]) -> Result<State, String> {
    let mut r = Reader::new(bytes);
    let magic = r.take(4, "magic").map_err(|_| not_a_state())?;
    if magic != MAGIC {
        return Err(not_a_state());
    }
    let version = r.u8("version").map_err(|_| not_a_state())?;
    if version > VERSION {
        return Err(format!("state version {version} is newer than this plugin reads (up to {VERSION})"));
    }
    let body = AnyValue::from_bytes(r.rest()).map_err(|e| format!("state does not decode: {e}"))?;
    let mut state = State { created: Vec::new(), objects: Vec::new(), trend_logs: Vec::new(), model: Vec::new() };
    for e in body.0 {
        match e {
            Element::Constructed { tag: OBJECT, elements } => state.objects.push(decode_object(elements)?),
            Element::Constructed { tag: TREND_LOG, elements } => state.trend_logs.push(decode_trend_log(&elements)?),
            Element::Constructed { tag: CREATED, elements } => match elements.as_slice() {
                [
                    Element::Application(Value::ObjectIdentifier(id)),
                    Element::Application(Value::CharacterString(name)),
                ] => {
                    let name = crate::value::decode_text(name)
                        .ok_or_else(|| format!("state: the name of created object {id} does not decode"))?;
                    state.created.push((*id, name));
                }
                _ => return Err("state: a created-object record is not an identifier and a name".into()),
            },
            Element::Constructed { tag: MODEL, elements } => match elements.as_slice() {
                [Element::Application(Value::OctetString(b))] => state.model = b.clone(),
                _ => return Err("state: the model record is not one OctetString".into()),
            },
            // Records a later version 1 writer added: skip.
            _ => {}
        }
    }
    Ok(state)
}

fn not_a_state() -> String {
    "not a Trellis object-model state (it must start with \"TRST\" and a version octet)".into()
}

fn decode_object(elements: Vec<Element>) -> Result<(ObjectIdentifier, Vec<(P, AnyValue)>), String> {
    let mut it = elements.into_iter();
    let Some(Element::Application(Value::ObjectIdentifier(id))) = it.next() else {
        return Err("state: an object record does not start with its identifier".into());
    };
    let mut props = Vec::new();
    while let Some(e) = it.next() {
        let (Element::Application(Value::Unsigned(p)), Some(Element::Constructed { tag: PROPERTY_VALUE, elements })) =
            (e, it.next())
        else {
            return Err(format!("state: a property of {id} is not a property-id and a value"));
        };
        let p = u32::try_from(p).map_err(|_| format!("state: property {p} of {id} is out of range"))?;
        props.push((P(p), AnyValue(elements)));
    }
    Ok((id, props))
}

/// Apply a decoded state to the store: what fits is restored, the rest is
/// skipped. Pending changes are settled (the host saw these values from the
/// instance that exported them).
pub(crate) fn apply(store: &mut Store, state: &State) {
    for (id, name) in &state.created {
        if !store.recreate(*id, name.clone()) {
            let why = "this version cannot create its type, or the identifier or name is taken";
            crate::host::log(crate::host::LogLevel::Warn, &format!("created object {id} ({name}) not restored: {why}"));
        }
    }
    // What this version does not have is dropped, and said (once).
    let dropped: Vec<String> = state
        .objects
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| *id != store.device_id() && !store.objects.contains_key(id) && !store.trend_logs.contains_key(id))
        .map(|id| id.to_string())
        .collect();
    if !dropped.is_empty() {
        let list = dropped.join(", ");
        let message = format!("state of {} objects this version does not have dropped: {list}", dropped.len());
        crate::host::log(crate::host::LogLevel::Warn, &message);
    }
    for (id, props) in &state.objects {
        // A created object's creation-only properties first (its states
        // decide which values fit), then Out_Of_Service (it decides whether
        // a Present_Value sticks).
        let first = |p: &P| *p == P::OUT_OF_SERVICE || CREATION_ONLY.contains(p);
        for (p, v) in props.iter().filter(|(p, _)| CREATION_ONLY.contains(p)) {
            if store.is_created(*id) {
                let _ = store.initialize(&crate::model::Write::new(*id, *p, v.clone()));
            }
        }
        for (p, v) in props.iter().filter(|(p, _)| *p == P::OUT_OF_SERVICE) {
            restore(store, *id, *p, v);
        }
        for (p, v) in props.iter().filter(|(p, _)| !first(p)) {
            restore(store, *id, *p, v);
        }
    }
    for s in &state.trend_logs {
        let Some(t) = store.trend_logs.get_mut(&s.id) else { continue };
        t.enable = s.enable;
        t.total_record_count = s.total_record_count;
        t.next_due_ms = s.next_due_ms;
        let keep = s.records.len().min(t.buffer_size as usize);
        t.records = s.records[s.records.len() - keep..].iter().cloned().collect();
    }
    store.settle();
}

fn restore(store: &mut Store, id: ObjectIdentifier, p: P, v: &AnyValue) {
    let text = || match v.as_primitive() {
        Some(Value::CharacterString(s)) => crate::value::decode_text(s),
        _ => None,
    };
    if id == store.device_id() {
        let Some(t) = text() else { return };
        match p {
            P::OBJECT_NAME => {
                let renamed = store.rename(id, t);
                store.device_written.name |= renamed;
            }
            P::DESCRIPTION => {
                store.device.description = t;
                store.device_written.description = true;
            }
            P::LOCATION => {
                store.device.location = t;
                store.device_written.location = true;
            }
            _ => {}
        }
        return;
    }
    if p == P::OBJECT_NAME {
        if let Some(t) = text()
            && store.rename(id, t)
        {
            if let Some(o) = store.objects.get_mut(&id) {
                o.written.name = true;
            }
            if let Some(log) = store.trend_logs.get_mut(&id) {
                log.written.name = true;
            }
        }
        return;
    }
    if let Some(log) = store.trend_logs.get_mut(&id) {
        if let (P::DESCRIPTION, Some(t)) = (p, text()) {
            log.description = t;
            log.written.description = true;
        }
        return;
    }
    let Some(o) = store.objects.get_mut(&id) else { return };
    match (p, v.as_primitive()) {
        (P::DESCRIPTION, _) => {
            if let Some(t) = text() {
                o.description = t;
                o.written.description = true;
            }
        }
        (P::OUT_OF_SERVICE, Some(Value::Boolean(b))) => o.out_of_service = *b,
        (P::COV_INCREMENT, Some(Value::Real(x))) if x.is_finite() && *x >= 0.0 => {
            if let Class::Analog { cov_increment, .. } = &mut o.class {
                *cov_increment = *x;
                o.written.cov_increment = true;
            }
        }
        (P::PRESENT_VALUE, Some(pv)) if o.command.is_none() => {
            if let Some(pv) = present_value(o, pv) {
                o.value = pv;
            }
        }
        (p, _) if WRITABLE_REPORTING.contains(&p) => {
            if let Some(r) = o.reporting.as_mut() {
                let write = crate::model::Write::new(id, p, v.clone());
                let _ = r.write(&write);
            }
        }
        (P::EVENT_STATE, Some(Value::Enumerated(n))) => {
            let state = bacnet::EventState(*n);
            let value = match o.present_value() {
                PresentValue::Binary(b) => Some(u32::from(b)),
                PresentValue::MultiState(n) => Some(n),
                PresentValue::Analog(_) => None,
            };
            let reliability = o.effective_reliability();
            if let Some(r) = o.reporting.as_mut() {
                r.detector = bacnet::event::Detector::resume(state, value);
                r.fault_reliability = (state == bacnet::EventState::FAULT).then_some(reliability);
                o.event_state = state;
            }
        }
        (P::ACKED_TRANSITIONS, Some(Value::BitString(b))) => {
            if let Some(r) = o.reporting.as_mut() {
                r.acked = [0, 1, 2].map(|i| i >= b.len() || b.get(i));
            }
        }
        (P::EVENT_TIME_STAMPS, _) => {
            if let Some(r) = o.reporting.as_mut() {
                for (slot, e) in r.time_stamps.iter_mut().zip(&v.0) {
                    *slot = match e {
                        Element::Constructed { tag: 2, elements } => match elements.as_slice() {
                            [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))]
                                if d.year != 255 =>
                            {
                                Some((*d, *t))
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                }
            }
        }
        (P::EVENT_MESSAGE_TEXTS, _) => {
            if let Some(r) = o.reporting.as_mut() {
                for (slot, e) in r.texts.iter_mut().zip(&v.0) {
                    if let Element::Application(Value::CharacterString(s)) = e {
                        *slot = crate::value::decode_text(s).unwrap_or_default();
                    }
                }
            }
        }
        (P::PRIORITY_ARRAY, _) => {
            let slots: Vec<Option<PresentValue>> =
                v.0.iter()
                    .map(|e| match e {
                        Element::Application(Value::Null) => None,
                        Element::Application(x) => present_value(o, x),
                        _ => None,
                    })
                    .collect();
            if let (Some(c), 16) = (o.command.as_mut(), slots.len()) {
                c.slots.copy_from_slice(&slots);
            }
        }
        _ => {}
    }
}

fn present_value(o: &Object, v: &Value) -> Option<PresentValue> {
    let pv = match v {
        Value::Real(x) => PresentValue::Analog(*x),
        Value::Enumerated(0) => PresentValue::Binary(false),
        Value::Enumerated(1) => PresentValue::Binary(true),
        Value::Unsigned(n) => PresentValue::MultiState(u32::try_from(*n).ok()?),
        _ => return None,
    };
    o.check_value(pv).ok().map(|()| pv)
}
