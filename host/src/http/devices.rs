//! `/api/devices…`: the served devices, their objects and properties — read
//! and written through each device's own server, as a requester inside the
//! gateway (its bounds and checks apply as to any client), never around it.
//!
//! Values come as `{"value": <JSON>, "text": "<as the CLI prints it>"}`;
//! a write takes `{"value": …, "priority": 1..16}` (`null` relinquishes; a
//! string is parsed as on the CLI, `real:21.5`, `active`, …).
//!
//! Must never: call a plugin directly for a request the server would refuse,
//! or hold a device's thread (everything here awaits its answers).

use super::Gateway;
use super::error::{ApiError, ApiResult};
use crate::cli::format;
use crate::model::{ObjectModel, PropertyTarget};
use crate::plugin::PluginModel;
use crate::server::{AnswerRoom, Server};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use bacnet::enums::{ConfirmedServiceChoice as S, PropertyIdentifier as P};
use bacnet::services::{
    PropertyReference, ReadAccessSpecification, ReadPropertyAck, ReadPropertyMultipleAck, ReadPropertyMultipleRequest,
    ReadPropertyRequest, ServiceCodec, WritePropertyRequest,
};
use bacnet::{AnyValue, Element, ObjectIdentifier, ObjectType, Value};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Room for an answer inside the gateway: as much as a segmented answer may take.
const ROOM: AnswerRoom = AnswerRoom { octets: 1 << 20, segmented: true };

/// Who asks from the HTTP API, for the server's per-requester bounds.
fn requester() -> crate::client::DeviceAddress {
    crate::client::DeviceAddress::from(crate::client::LinkAddress::Local(u32::MAX - 2))
}

pub(super) fn device(g: &Gateway, instance: u32) -> ApiResult<&Arc<Server<PluginModel>>> {
    g.devices
        .get(&instance)
        .map(|d| &d.server)
        .ok_or_else(|| ApiError::not_found(format!("no device {instance} is served here")))
}

pub(super) fn object_id(text: &str) -> ApiResult<ObjectIdentifier> {
    text.parse().map_err(|_| ApiError::bad_request(format!("`{text}` is not an object (e.g. analog-value,1)")))
}

fn property_id(text: &str) -> ApiResult<P> {
    P::from_name(text).ok_or_else(|| ApiError::bad_request(format!("`{text}` is not a property (e.g. present-value)")))
}

/// `analog-value,1`.
pub(super) fn object_text(o: ObjectIdentifier) -> String {
    format!("{},{}", o.object_type, o.instance)
}

/// A value as the API shows it.
pub(super) fn shown(object_type: ObjectType, property: P, v: &AnyValue) -> serde_json::Value {
    json!({"value": crate::point_json::to_json(v), "text": format::value(object_type, property, v)})
}

/// `GET /api/devices`.
pub async fn list(State(g): State<Arc<Gateway>>) -> ApiResult<Json<serde_json::Value>> {
    let mut out = Vec::new();
    for (instance, d) in &g.devices {
        let model = d.server.model();
        let info = model.describe();
        let objects = model.objects().await.unwrap_or_default();
        let name = objects.iter().find(|o| o.id.object_type == ObjectType::DEVICE).map(|o| o.name.clone());
        let h = model.health();
        out.push(json!({
            "instance": instance,
            "name": name,
            "on": d.on,
            "plugin": {"name": info.name, "version": info.version, "interface": model.interface()},
            "objects": objects.len(),
            "state": super::plugins::state_of(&h),
        }));
    }
    Ok(Json(json!(out)))
}

/// The properties the point table shows for each object.
const TABLE: [P; 4] = [P::PRESENT_VALUE, P::UNITS, P::STATUS_FLAGS, P::OUT_OF_SERVICE];

/// `GET /api/devices/{device}/objects`: every object but the Device, with
/// its Present_Value, Units, Status_Flags and Out_Of_Service (one model call).
pub async fn objects(State(g): State<Arc<Gateway>>, Path(instance): Path<u32>) -> ApiResult<Json<serde_json::Value>> {
    let server = device(&g, instance)?;
    let model = server.model();
    let objects = model.objects().await.map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let objects: Vec<_> = objects.into_iter().filter(|o| o.id.object_type != ObjectType::DEVICE).collect();
    let targets: Vec<PropertyTarget> = objects
        .iter()
        .flat_map(|o| TABLE.map(|property| PropertyTarget { object: o.id, property, array_index: None }))
        .collect();
    let reads =
        model.read(&targets).await.map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let mut reads = reads.into_iter().map(|r| r.into_iter().next().and_then(|r| r.outcome.ok()));
    let rows: Vec<serde_json::Value> = objects
        .into_iter()
        .map(|o| {
            let mut row = json!({
                "object": object_text(o.id),
                "type": o.id.object_type.to_string(),
                "instance": o.id.instance,
                "name": o.name,
            });
            let mut units = None;
            for property in TABLE {
                let Some(v) = reads.next().flatten() else { continue };
                if property == P::UNITS
                    && let [Element::Application(Value::Enumerated(u))] = v.0.as_slice()
                {
                    units = Some(bacnet::enums::EngineeringUnits(*u));
                }
                row[property.to_string()] = shown(o.id.object_type, property, &v);
            }
            if let (Some(u), Some(pv)) = (units, row.get_mut("present-value")) {
                let text = pv["text"].as_str().unwrap_or_default().to_string();
                pv["text"] = json!(format::with_units(text, Some(u)));
            }
            row
        })
        .collect();
    Ok(Json(json!(rows)))
}

/// `GET /api/devices/{device}/objects/{object}`: every property
/// (ReadPropertyMultiple `all`), errors per property.
pub async fn object(
    State(g): State<Arc<Gateway>>,
    Path((instance, object)): Path<(u32, String)>,
) -> ApiResult<Json<serde_json::Value>> {
    let server = device(&g, instance)?;
    let object = object_id(&object)?;
    let request = ReadPropertyMultipleRequest(vec![ReadAccessSpecification {
        object,
        properties: vec![PropertyReference::new(P::ALL)],
    }]);
    let answer = server.execute(&requester(), S::READ_PROPERTY_MULTIPLE, &request.to_vec(), ROOM).await;
    let bacnet::tsm::Response::ComplexAck(body) = &answer else {
        return Err(ApiError::from_device(&answer));
    };
    let ack = ReadPropertyMultipleAck::decode(body)
        .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, format!("the answer does not decode: {e}")))?;
    let mut properties = serde_json::Map::new();
    for result in ack.0.iter().flat_map(|r| r.results.iter()) {
        let entry = match &result.outcome {
            Ok(v) => shown(object.object_type, result.property, v),
            Err(e) => json!({"error": {"class": e.class.to_string(), "code": e.code.to_string()}}),
        };
        properties.insert(result.property.to_string(), entry);
    }
    Ok(Json(json!({"object": object_text(object), "properties": properties})))
}

/// `?index=N`: an array element (0 = the array's length).
#[derive(Debug, Deserialize)]
pub struct Index {
    index: Option<u32>,
}

/// `GET /api/devices/{device}/objects/{object}/properties/{property}`.
pub async fn read(
    State(g): State<Arc<Gateway>>,
    Path((instance, object, property)): Path<(u32, String, String)>,
    Query(q): Query<Index>,
) -> ApiResult<Json<serde_json::Value>> {
    let server = device(&g, instance)?;
    let (object, property) = (object_id(&object)?, property_id(&property)?);
    let request = ReadPropertyRequest { object, property, array_index: q.index };
    let answer = server.execute(&requester(), S::READ_PROPERTY, &request.to_vec(), ROOM).await;
    let bacnet::tsm::Response::ComplexAck(body) = &answer else {
        return Err(ApiError::from_device(&answer));
    };
    let ack = ReadPropertyAck::decode(body)
        .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, format!("the answer does not decode: {e}")))?;
    Ok(Json(shown(object.object_type, property, &ack.value)))
}

/// A write's body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Write {
    value: serde_json::Value,
    priority: Option<u8>,
    index: Option<u32>,
}

/// `PUT /api/devices/{device}/objects/{object}/properties/{property}`:
/// WriteProperty; 204 when the device acknowledged.
pub async fn write(
    State(g): State<Arc<Gateway>>,
    Path((instance, object, property)): Path<(u32, String, String)>,
    body: Result<Json<Write>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<StatusCode> {
    let Json(w) =
        body.map_err(|e| ApiError::bad_request(format!("expected {{\"value\": …, \"priority\": 1..16}}: {e}")))?;
    let server = device(&g, instance)?;
    let (object, property) = (object_id(&object)?, property_id(&property)?);
    if let Some(p) = w.priority
        && !(1..=16).contains(&p)
    {
        return Err(ApiError::bad_request("priority must be 1..=16"));
    }
    let value = match &w.value {
        serde_json::Value::String(text) => {
            crate::cli::parse::value(object.object_type, property, text).map_err(ApiError::bad_request)?
        }
        other if property == P::PRESENT_VALUE || property == P::RELINQUISH_DEFAULT => AnyValue::from(
            crate::point_json::from_json(object.object_type, other)
                .ok_or_else(|| ApiError::bad_request(format!("{other} is not a value for {}", object_text(object))))?,
        ),
        other => AnyValue::from(crate::point_json::from_json(ObjectType::DEVICE, other).ok_or_else(|| {
            ApiError::bad_request(format!("{other} is not a value (give it as text, e.g. \"real:1.5\")"))
        })?),
    };
    let request = WritePropertyRequest { object, property, array_index: w.index, value, priority: w.priority };
    let answer = server.execute(&requester(), S::WRITE_PROPERTY, &request.to_vec(), ROOM).await;
    match answer {
        bacnet::tsm::Response::SimpleAck => Ok(StatusCode::NO_CONTENT),
        other => Err(ApiError::from_device(&other)),
    }
}
