//! Errors of the HTTP API, always as JSON:
//! `{"error": {"status": 404, "message": "…", "bacnet": {"class": "object", "code": "unknown-object"}}}`
//! (`bacnet` only when the device answered with a BACnet Error; `reject` or
//! `abort` with the reason when it rejected or aborted).
//!
//! Status codes: unknown object or property → 404; the device busy or
//! failing (device and resources classes, Abort) → 503; every other refusal
//! of the device (write-access-denied, value-out-of-range, a Reject, …) →
//! 422. 403 stays the credential's: a read-only token that tried to write.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bacnet::services::ServiceCodec;
use serde_json::json;

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    bacnet: Option<serde_json::Value>,
}

impl ApiError {
    /// `status` with a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), bacnet: None }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// What a device answered instead of an acknowledgement: an Error (its
    /// class and code), a Reject or an Abort (its reason).
    pub fn from_device(r: &bacnet::tsm::Response) -> ApiError {
        use bacnet::enums::{ErrorClass, ErrorCode};
        use bacnet::tsm::Response as R;
        match r {
            R::Error(body) => match bacnet::services::BacnetError::decode(body) {
                Ok(e) => {
                    let status = match (e.class, e.code) {
                        (_, ErrorCode::UNKNOWN_OBJECT | ErrorCode::UNKNOWN_PROPERTY) => StatusCode::NOT_FOUND,
                        (ErrorClass::DEVICE | ErrorClass::RESOURCES, _) => StatusCode::SERVICE_UNAVAILABLE,
                        _ => StatusCode::UNPROCESSABLE_ENTITY,
                    };
                    ApiError {
                        status,
                        message: format!("the device answered {}: {}", e.class, e.code),
                        bacnet: Some(json!({"class": e.class.to_string(), "code": e.code.to_string()})),
                    }
                }
                Err(_) => ApiError::new(StatusCode::BAD_GATEWAY, "the device answered an Error that does not decode"),
            },
            R::Reject(reason) => ApiError {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                message: format!("the device rejected the request: {reason}"),
                bacnet: Some(json!({"reject": reason.to_string()})),
            },
            R::Abort(reason) => ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: format!("the device aborted the request: {reason}"),
                bacnet: Some(json!({"abort": reason.to_string()})),
            },
            R::SimpleAck | R::ComplexAck(_) => {
                ApiError::new(StatusCode::BAD_GATEWAY, "the device acknowledged in an unexpected form")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"status": self.status.as_u16(), "message": self.message});
        if let Some(b) = self.bacnet {
            error["bacnet"] = b;
        }
        (self.status, Json(json!({ "error": error }))).into_response()
    }
}

/// A handler's result.
pub type ApiResult<T> = Result<T, ApiError>;

/// Every error answer as JSON: axum's own rejections (a path or query that
/// does not parse, 405, 413, 415) come as plain text, and are rewritten
/// into the API's error object with their text as the message.
pub async fn as_json(r: Response) -> Response {
    let status = r.status();
    let is_json = r.headers().get(axum::http::header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/event-stream")
    });
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return r;
    }
    let (parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let message = String::from_utf8_lossy(&text).trim().to_string();
    let message = if message.is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { message };
    let mut out = ApiError::new(status, message).into_response();
    for (k, v) in parts.headers.iter() {
        if k != axum::http::header::CONTENT_TYPE && k != axum::http::header::CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}
