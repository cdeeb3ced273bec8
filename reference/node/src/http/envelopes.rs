//! Envelope (§16.1) and thread (§16.2) routes; create endpoints honour `Idempotency-Key`
//! (§14.4).

use super::{AppState, Authed, StrictJson, json_response, json_text_response};
use crate::error::ApiError;
use crate::service::Document;
use crate::service::envelopes::request_hash;
use crate::service::idempotency::{Claim, Outcome};
use crate::service::threads::ThreadQuery;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/envelopes", post(submit))
        .route("/v1/envelopes/{id}", get(get_envelope).delete(retract))
        .route("/v1/threads", get(list_threads))
        .route("/v1/threads/{id}", get(get_thread))
        .route("/v1/threads/{id}/envelopes", get(thread_envelopes))
        .route("/v1/threads/{id}/ops", post(post_op))
}

type R = Result<Response, ApiError>;

/// The `Idempotency-Key` header, if present and readable.
pub(super) fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    headers
        .get("idempotency-key")
        .map(|v| {
            v.to_str().map_err(|_| {
                ApiError::bad_request("Idempotency-Key", "must be visible ASCII", "v1.1 §14.4")
            })
        })
        .transpose()
}

/// Runs a create endpoint once per `Idempotency-Key` (§14.4): `f` produces the 201 body or
/// the error, and a repeat with the same key gets the same answer.
pub(super) async fn create_once<T>(
    s: &crate::service::Service,
    c: &crate::service::Caller,
    headers: &HeaderMap,
    route: &str,
    raw: &[u8],
    f: impl AsyncFnOnce(Option<Claim>) -> crate::error::ApiResult<T>,
) -> R
where
    T: Into<Document>,
{
    let key = idempotency_key(headers)?;
    // The body's hash is compared only when an Idempotency-Key names the request (§14.4).
    let hash = if key.is_some() {
        request_hash(raw)
    } else {
        String::new()
    };
    let outcome = s
        .idempotent(c, key, route, &hash, async |claim| match f(claim).await {
            Ok(v) => Outcome::Ok(201, v.into()),
            Err(e) => Outcome::Err(e),
        })
        .await?;
    Ok(respond(outcome))
}

pub(super) fn respond(outcome: Outcome) -> Response {
    match outcome {
        Outcome::Ok(status, body) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            match body.text {
                Some(text) => json_text_response(status, text),
                None => json_response(status, body.value),
            }
        }
        Outcome::Err(e) => e.into_response(),
    }
}

async fn submit(
    State(s): State<AppState>,
    Authed(c): Authed,
    headers: HeaderMap,
    StrictJson { raw, value }: StrictJson,
) -> R {
    create_once(
        &s,
        &c,
        &headers,
        "POST /v1/envelopes",
        &raw,
        async |claim| s.submit_envelope_claimed(&c, value, claim).await,
    )
    .await
}

async fn get_envelope(State(s): State<AppState>, Authed(c): Authed, Path(id): Path<String>) -> R {
    Ok(json_response(StatusCode::OK, s.get_envelope(&c, &id)?))
}

async fn retract(State(s): State<AppState>, Authed(c): Authed, Path(id): Path<String>) -> R {
    Ok(json_response(StatusCode::OK, s.retract_envelope(&c, &id)?))
}

async fn list_threads(
    State(s): State<AppState>,
    Authed(c): Authed,
    q: Result<Query<ThreadQuery>, axum::extract::rejection::QueryRejection>,
) -> R {
    let Query(q) = q.map_err(|e| ApiError::bad_request("$query", e.body_text(), "v1.1 §16.2"))?;
    Ok(json_response(StatusCode::OK, s.list_threads(&c, &q)?))
}

async fn get_thread(State(s): State<AppState>, Authed(c): Authed, Path(id): Path<String>) -> R {
    Ok(json_response(StatusCode::OK, s.get_thread(&c, &id)?))
}

async fn thread_envelopes(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
) -> R {
    Ok(json_response(StatusCode::OK, s.thread_envelopes(&c, &id)?))
}

async fn post_op(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
    StrictJson { raw, value }: StrictJson,
) -> R {
    let route = format!("POST /v1/threads/{id}/ops");
    create_once(&s, &c, &headers, &route, &raw, async |claim| {
        s.post_thread_op(&c, &id, value, claim).await
    })
    .await
}
