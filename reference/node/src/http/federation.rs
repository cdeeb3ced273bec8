//! Federation routes (v1.1 §15): `POST /v1/federation/deliver` (§15.4) and
//! `GET /v1/federation/hello` (§15.7). What the headers alone can refuse (missing
//! LOOM-HTTP-SIG-1 headers, a malformed node name, a blocked peer, a stale timestamp, a peer
//! whose node document cannot be found or does not list the key id as active) is refused
//! before the body is read; then the body is read raw — the signature covers its
//! exact bytes — up to `federation.max_wrapper_bytes` (sized for a full wrapper of 100
//! envelopes), while every other route keeps `limits.max_body_bytes`.

use super::extract::{bounded_body, expects_continue, json_content_type};
use super::{AppState, json_response};
use crate::error::ApiError;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/federation/deliver", post(deliver))
        .route("/v1/federation/hello", get(hello))
}

async fn deliver(State(s): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    json_content_type(&parts.headers)?;
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-loom-"))
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    // What the headers alone can refuse is refused before a byte of the body is buffered:
    // the signed headers, then the sending peer and its key.
    s.federation_head_check(&headers, parts.uri.path())?;
    let peer = s.federation_peer(&headers, parts.uri.path()).await?;
    let limit = s.config.federation.max_wrapper_bytes;
    let waiting = expects_continue(&parts.headers);
    let bytes = bounded_body(
        body,
        &s,
        waiting,
        limit,
        "delivery body",
        "v1.1 §15.4, §24.2",
    )
    .await?;
    let answer = s
        .federation_deliver(&headers, parts.uri.path(), &bytes, peer)
        .await?;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::ACCEPTED);
    Ok(json_response(status, answer.body))
}

async fn hello(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, s.federation_hello())
}
