//! `/api/plugins`: every plugin's health, provenance and limits hit; and
//! `POST /api/devices/{device}/plugin` (and `/api/apps/{name}/plugin`,
//! `/api/policies/{index}/plugin`): a hot swap by upload.
//!
//! An upload is the component's bytes (`Content-Type: application/wasm`),
//! with its signature and manifest, when it has them, in the headers
//! `X-Trellis-Signature` and `X-Trellis-Manifest` (base64 of the `.wasm.sig`
//! and `.manifest.toml` files). They are written to a private directory
//! (mode 0700, files 0600) and go through exactly the admin socket's swap:
//! the same signature and capability policy, the same limits, the old
//! plugin kept when anything fails.
//!
//! Must never: load an upload the policy would refuse from a file, or
//! leave uploaded files behind.

use super::Gateway;
use super::error::{ApiError, ApiResult};
use crate::admin::{AppLine, PolicyLine, Request as AdminRequest, Response as AdminResponse};
use crate::plugin::HealthReport;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use serde_json::json;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// "running", "restarting (back-off)" or "disabled".
pub fn state_of(h: &HealthReport) -> &'static str {
    if h.disabled {
        "disabled"
    } else if h.backing_off {
        "restarting (back-off)"
    } else {
        "running"
    }
}

/// `GET /api/plugins`.
pub async fn list(State(g): State<Arc<Gateway>>) -> Json<serde_json::Value> {
    let mut devices = Vec::new();
    for (device, model) in g.admin.devices() {
        let info = model.describe();
        let h = model.health();
        let calls = model.call_latency();
        devices.push(json!({
            "device": device,
            "name": info.name,
            "version": info.version,
            "interface": model.interface(),
            "state": state_of(&h),
            "restarts": h.restarts,
            "failures": h.failures,
            "traps": h.traps,
            "deadline_hits": h.deadline_hits,
            "memory_hits": h.memory_hits,
            "snapshots": h.snapshots,
            "last_error": model.last_failure(),
            "calls": {"count": calls.count, "seconds": calls.sum_seconds},
            "provenance": g.admin.provenance(device),
            "last_swap": g.admin.last_swap(device),
        }));
    }
    let policies: Vec<PolicyLine> = g.admin.policies().map(PolicyLine::of).collect();
    let apps: Vec<AppLine> = g.admin.apps().iter().map(AppLine::of).collect();
    Json(json!({"devices": devices, "policies": policies, "apps": apps}))
}

/// Names uploaded files apart.
static UPLOADS: AtomicU64 = AtomicU64::new(0);

/// `POST /api/devices/{device}/plugin`: swap the device's plugin for the
/// uploaded component; answers the new plugin, the load time and the pause.
pub async fn swap(
    State(g): State<Arc<Gateway>>,
    Path(device): Path<u32>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<serde_json::Value>> {
    swap_with(&g, &headers, body, |file| AdminRequest::Swap { device, file }).await
}

/// `POST /api/apps/{name}/plugin`: swap an application (`[[app]]` name).
pub async fn swap_app(
    State(g): State<Arc<Gateway>>,
    Path(app): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<serde_json::Value>> {
    swap_with(&g, &headers, body, |file| AdminRequest::SwapApp { app, file }).await
}

/// `POST /api/policies/{index}/plugin`: swap the router's routing policy
/// number `index` (1-based, in `[[router.policy]]` order).
pub async fn swap_policy(
    State(g): State<Arc<Gateway>>,
    Path(policy): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<serde_json::Value>> {
    swap_with(&g, &headers, body, |file| AdminRequest::SwapPolicy { policy, file }).await
}

/// Write the upload to the private directory, run the admin API's swap on
/// it, remove it, and answer what the swap said.
async fn swap_with(
    g: &Gateway,
    headers: &HeaderMap,
    body: Bytes,
    request: impl FnOnce(std::path::PathBuf) -> AdminRequest,
) -> ApiResult<Json<serde_json::Value>> {
    // Not a type a page of another site may send without asking first.
    if headers.get(axum::http::header::CONTENT_TYPE).is_none_or(|v| v.as_bytes() != b"application/wasm") {
        return Err(ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/wasm"));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request("the body must be the component (application/wasm)"));
    }
    let companion = |name: &str| -> ApiResult<Option<Vec<u8>>> {
        match headers.get(name) {
            None => Ok(None),
            Some(v) => base64::engine::general_purpose::STANDARD
                .decode(v.as_bytes())
                .map(Some)
                .map_err(|e| ApiError::bad_request(format!("{name} is not base64: {e}"))),
        }
    };
    let (signature, manifest) = (companion("x-trellis-signature")?, companion("x-trellis-manifest")?);
    let dir = g.uploads.clone();
    let n = UPLOADS.fetch_add(1, Ordering::Relaxed);
    let file = dir.join(format!("upload-{}-{n}.wasm", std::process::id()));
    let written = {
        let (dir, file) = (dir.clone(), file.clone());
        crate::offload::run("writing an uploaded plugin", std::time::Duration::from_secs(30), move || {
            crate::admin_dir::prepare(&dir).map_err(|e| e.to_string())?;
            write_private(&file, &body)?;
            if let Some(s) = signature {
                write_private(&crate::plugin::policy::signature_path(&file), &s)?;
            }
            if let Some(m) = manifest {
                write_private(&crate::plugin::policy::manifest_path(&file), &m)?;
            }
            Ok::<_, String>(())
        })
        .await
    };
    let outcome = match written {
        // On a task of its own: a client that goes away mid-swap neither
        // stops the swap half-way nor leaves the files behind.
        Ok(Ok(())) => {
            let (admin, req, f) = (g.admin.clone(), request(file.clone()), file.clone());
            let swapped = tokio::spawn(async move {
                let r = admin.handle(req).await;
                cleanup(&f, ());
                r
            });
            swapped
                .await
                .map_err(|e| cleanup(&file, ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())))?
        }
        Ok(Err(e)) => return Err(cleanup(&file, ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e))),
        Err(e) => return Err(cleanup(&file, ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))),
    };
    cleanup(&file, ());
    match outcome {
        AdminResponse::Swapped { device, plugin, load_ms, pause_us } => {
            Ok(Json(json!({"device": device, "plugin": plugin, "load_ms": load_ms, "pause_us": pause_us})))
        }
        AdminResponse::AppSwapped { app, plugin, load_ms } => {
            Ok(Json(json!({"app": app, "plugin": plugin, "load_ms": load_ms})))
        }
        AdminResponse::PolicySwapped { policy, plugin, load_ms } => {
            Ok(Json(json!({"policy": policy, "plugin": plugin, "load_ms": load_ms})))
        }
        AdminResponse::Failed { error } if error.starts_with("no ") => Err(ApiError::not_found(error)),
        AdminResponse::Failed { error } => Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, error)),
        AdminResponse::Status { .. } => {
            Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "unexpected answer from the admin API"))
        }
    }
}

/// Create `path` for us only, failing if it exists.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Remove an upload's files, passing `r` through.
fn cleanup<T>(file: &std::path::Path, r: T) -> T {
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_file(crate::plugin::policy::signature_path(file));
    let _ = std::fs::remove_file(crate::plugin::policy::manifest_path(file));
    r
}
