//! Blob routes (v1.1 §16.7). Parts are raw request bodies of any content type, read up to
//! the node's `max_blob_bytes` (413 beyond); downloads answer the bytes with the blob's
//! `Content-Type`, a `Content-Disposition` with an ASCII-safe file name, and the SHA-256 as
//! `ETag`. Initiating honours `Idempotency-Key` (§14.4).

use super::envelopes::create_once;
use super::{AppState, Authed, StrictJson, json_response};
use crate::error::ApiError;
use crate::service::blobs::BlobCreate;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/blobs", post(create))
        .route("/v1/blobs/{id}", get(download))
        .route("/v1/blobs/{id}/parts/{n}", put(part))
        .route("/v1/blobs/{id}/complete", post(complete))
}

type R = Result<Response, ApiError>;

async fn create(
    State(s): State<AppState>,
    Authed(c): Authed,
    headers: HeaderMap,
    body: StrictJson,
) -> R {
    let req: BlobCreate = body.parse("v1.1 §16.7")?;
    create_once(&s, &c, &headers, "POST /v1/blobs", &body.raw, async |_| {
        s.create_blob(&c, &req)
    })
    .await
}

async fn part(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path((id, n)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    body: Body,
) -> R {
    let max = s.config.limits.max_blob_bytes;
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let waiting = super::extract::expects_continue(&headers);
    let bytes = super::extract::bounded_body(
        body,
        &s,
        waiting,
        limit,
        "a blob part (the blob limit)",
        "v1.1 §16.7, §24.2",
    )
    .await?;
    Ok(json_response(
        StatusCode::OK,
        s.put_blob_part(&c, &id, &n, &bytes)?,
    ))
}

async fn complete(State(s): State<AppState>, Authed(c): Authed, Path(id): Path<String>) -> R {
    Ok(json_response(StatusCode::OK, s.complete_blob(&c, &id)?))
}

async fn download(State(s): State<AppState>, Authed(c): Authed, Path(id): Path<String>) -> R {
    Ok(blob_response(s.get_blob(Some(&c), &id)?))
}

/// A blob download (§16.7): the bytes with their type, a safe file name and the SHA-256
/// as `ETag`.
pub(crate) fn blob_response(blob: crate::service::blobs::BlobContent) -> Response {
    let safe: String = blob
        .filename
        .chars()
        .map(|ch| {
            if ch.is_ascii_graphic() && ch != '"' && ch != '\\' || ch == ' ' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    let mut resp = (StatusCode::OK, blob.bytes).into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&blob.mime_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", blob.sha256)) {
        h.insert(header::ETAG, v);
    }
    resp
}
