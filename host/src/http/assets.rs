//! The console's files, embedded in the binary (it works offline, on a
//! plant network, with nothing fetched from elsewhere): `/` is the page,
//! `/console/{file}` its script and style sheet.
//!
//! Each answer has an ETag (the file's SHA-256) and `Cache-Control:
//! no-cache`: the browser revalidates, and an unchanged file costs a 304.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// (name, content type, bytes).
const FILES: [(&str, &str, &[u8]); 3] = [
    ("index.html", "text/html; charset=utf-8", include_bytes!("../../console/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("../../console/app.js")),
    ("app.css", "text/css; charset=utf-8", include_bytes!("../../console/app.css")),
];

/// The favicon: a small SVG trellis.
const FAVICON: &[u8] = include_bytes!("../../console/favicon.svg");

static ETAGS: LazyLock<Vec<String>> =
    LazyLock::new(|| FILES.iter().map(|(_, _, b)| format!("\"{}\"", &hex(&Sha256::digest(b))[..32])).collect());

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn serve(i: usize, headers: &HeaderMap) -> Response {
    let (_, kind, bytes) = FILES[i];
    let etag = &ETAGS[i];
    if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes()) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag.clone())]).into_response();
    }
    (
        [
            (header::CONTENT_TYPE, kind.to_string()),
            (header::ETAG, etag.clone()),
            (header::CACHE_CONTROL, "no-cache".into()),
        ],
        bytes,
    )
        .into_response()
}

/// `GET /`.
pub async fn index(headers: HeaderMap) -> Response {
    serve(0, &headers)
}

/// `GET /console/{file}`.
pub async fn file(axum::extract::Path(name): axum::extract::Path<String>, headers: HeaderMap) -> Response {
    match FILES.iter().position(|(n, _, _)| *n == name) {
        Some(i) => serve(i, &headers),
        None => super::error::ApiError::not_found(format!("no console file {name}")).into_response(),
    }
}

/// `GET /favicon.ico`.
pub async fn favicon() -> Response {
    ([(header::CONTENT_TYPE, "image/svg+xml"), (header::CACHE_CONTROL, "max-age=86400")], FAVICON).into_response()
}
