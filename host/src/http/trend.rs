//! `GET /api/devices/{device}/objects/{object}/trend`: the records of the
//! device's Trend Log object that logs this object's Present_Value, read
//! with ReadRange through the device's server — the chart on the point page.
//!
//! Answers `{"trend_log": "trend-log,1", "name": …, "records": [{"time":
//! "2026-12-02T07:50:00Z", "value": 21.5}, …]}` (times in UTC) (oldest first; a record's
//! value is `null` for a log-status or failure record), or `{"trend_log":
//! null, "records": []}` when no Trend Log logs it.
//!
//! Must never: read more than `count` records (at most 1,000).

use super::Gateway;
use super::devices::{device, object_id, object_text};
use super::error::{ApiError, ApiResult};
use crate::model::{ObjectModel, PropertyTarget};
use crate::server::AnswerRoom;
use axum::Json;
use axum::extract::{Path, Query, State};
use bacnet::codec::Primitive;
use bacnet::enums::{ConfirmedServiceChoice as S, PropertyIdentifier as P};
use bacnet::services::{Range, ReadRangeAck, ReadRangeRequest, ServiceCodec};
use bacnet::{Element, ObjectIdentifier, ObjectType, Value};
use serde::Deserialize;
use serde_json::json;
use std::num::NonZeroI16;
use std::sync::Arc;

/// `?count=N` (default 200, at most 1,000).
#[derive(Debug, Deserialize)]
pub struct Count {
    count: Option<u16>,
}

/// The handler.
pub async fn trend(
    State(g): State<Arc<Gateway>>,
    Path((instance, object)): Path<(u32, String)>,
    Query(q): Query<Count>,
) -> ApiResult<Json<serde_json::Value>> {
    let server = device(&g, instance)?;
    let object = object_id(&object)?;
    let model = server.model();
    let unavailable =
        |e: crate::model::ModelError| ApiError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    let logs: Vec<_> = model
        .objects()
        .await
        .map_err(unavailable)?
        .into_iter()
        .filter(|o| o.id.object_type == ObjectType::TREND_LOG)
        .collect();
    let targets: Vec<PropertyTarget> = logs
        .iter()
        .flat_map(|l| {
            [P::LOG_DEVICE_OBJECT_PROPERTY, P::RECORD_COUNT].map(|property| PropertyTarget {
                object: l.id,
                property,
                array_index: None,
            })
        })
        .collect();
    let reads = model.read(&targets).await.map_err(unavailable)?;
    let mut reads = reads.into_iter().map(|r| r.into_iter().next().and_then(|r| r.outcome.ok()));
    for log in logs {
        let (logged, count) = (reads.next().flatten(), reads.next().flatten());
        if logged.as_ref().and_then(|v| logged_object(&v.0)) != Some(object) {
            continue;
        }
        let records = match count.as_ref().map(|c| c.0.as_slice()) {
            Some([Element::Application(Value::Unsigned(n))]) => *n,
            _ => 0,
        };
        let wanted = i16::try_from(q.count.unwrap_or(200).clamp(1, 1000)).unwrap_or(200);
        let mut out = Vec::new();
        if records > 0 {
            let request = ReadRangeRequest {
                object: log.id,
                property: P::LOG_BUFFER,
                array_index: None,
                range: Some(Range::ByPosition {
                    reference_index: u32::try_from(records).unwrap_or(u32::MAX),
                    count: NonZeroI16::new(-wanted).unwrap_or(NonZeroI16::MIN),
                }),
            };
            let room = AnswerRoom { octets: 1 << 20, segmented: true };
            let me = crate::client::DeviceAddress::from(crate::client::LinkAddress::Local(u32::MAX - 2));
            let answer = server.execute(&me, S::READ_RANGE, &request.to_vec(), room).await;
            let bacnet::tsm::Response::ComplexAck(body) = &answer else {
                return Err(ApiError::from_device(&answer));
            };
            let ack = ReadRangeAck::decode(body).map_err(|e| {
                ApiError::new(axum::http::StatusCode::BAD_GATEWAY, format!("the ReadRange answer does not decode: {e}"))
            })?;
            out = records_of(&ack.item_data.0);
        }
        return Ok(Json(json!({"trend_log": object_text(log.id), "name": log.name, "records": out})));
    }
    Ok(Json(json!({"trend_log": null, "records": []})))
}

/// The object of a `BACnetDeviceObjectPropertyReference` ([0] object, [1]
/// property, [2] index, [3] device): only when it names Present_Value and
/// no other device.
fn logged_object(elements: &[Element]) -> Option<ObjectIdentifier> {
    let mut object = None;
    let mut present_value = false;
    for e in elements {
        match e {
            Element::Context { tag: 0, data } => object = ObjectIdentifier::decode_content(data, 0).ok(),
            Element::Context { tag: 1, data } => {
                present_value = u64::decode_content(data, 0).ok() == Some(u64::from(P::PRESENT_VALUE.0))
            }
            Element::Context { tag: 3, .. } => return None,
            _ => {}
        }
    }
    object.filter(|_| present_value)
}

/// A record's local date and time (the device's clock: the gateway's zone)
/// as an RFC 3339 instant, so a browser elsewhere places it right.
fn instant(d: &bacnet::Date, t: &bacnet::Time) -> Option<String> {
    let civil = jiff::civil::DateTime::new(
        1900 + i16::from(d.year),
        i8::try_from(d.month).ok()?,
        i8::try_from(d.day).ok()?,
        i8::try_from(t.hour).ok()?,
        i8::try_from(t.minute).ok()?,
        i8::try_from(t.second).ok()?,
        0,
    )
    .ok()?;
    Some(jiff::tz::TimeZone::system().to_timestamp(civil).ok()?.to_string())
}

/// `BACnetLogRecord`s as `{"time", "value"}`; what is not a record is skipped.
fn records_of(elements: &[Element]) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut rest = elements;
    while let [
        Element::Constructed { tag: 0, elements: ts },
        Element::Constructed { tag: 1, elements: datum },
        tail @ ..,
    ] = rest
    {
        rest = tail;
        if let [Element::Context { tag: 2, .. }, tail @ ..] = rest {
            rest = tail;
        }
        let [Element::Application(Value::Date(d)), Element::Application(Value::Time(t))] = ts.as_slice() else {
            continue;
        };
        let Some(time) = instant(d, t) else { continue };
        let value = match datum.as_slice() {
            [Element::Context { tag: 1, data }] => bool::decode_content(data, 0).ok().map(|b| json!(b)),
            [Element::Context { tag: 2, data }] => f32::decode_content(data, 0).ok().map(|v| json!(v)),
            [Element::Context { tag: 3 | 4, data }] => u64::decode_content(data, 0).ok().map(|v| json!(v)),
            [Element::Context { tag: 5, data }] => i64::decode_content(data, 0).ok().map(|v| json!(v)),
            _ => None,
        };
        out.push(json!({"time": time, "value": value}));
    }
    out
}
