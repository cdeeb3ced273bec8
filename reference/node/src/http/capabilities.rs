//! Capability routes (v1.1 §16.4); issuing honours `Idempotency-Key` (§14.4).

use super::envelopes::create_once;
use super::{AppState, Authed, StrictJson, json_response};
use crate::error::ApiError;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{delete, post};
use serde::Deserialize;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/capabilities", post(issue).get(list))
        .route("/v1/capabilities/{id}", delete(revoke))
}

type R = Result<Response, ApiError>;

/// `GET /v1/capabilities` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    thread_id: Option<String>,
}

async fn issue(
    State(s): State<AppState>,
    Authed(c): Authed,
    headers: HeaderMap,
    body: StrictJson,
) -> R {
    create_once(
        &s,
        &c,
        &headers,
        "POST /v1/capabilities",
        &body.raw,
        async |_| s.issue_capability(&c, body.value.clone()),
    )
    .await
}

async fn list(
    State(s): State<AppState>,
    Authed(c): Authed,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> R {
    let Query(q) = q.map_err(|e| ApiError::bad_request("$query", e.body_text(), "v1.1 §16.4"))?;
    Ok(json_response(
        StatusCode::OK,
        s.list_capabilities(&c, q.thread_id.as_deref())?,
    ))
}

/// The body is the caller-signed `capability.revoked@v1` thread_op (see
/// [`crate::service::Service::revoke_capability`]).
async fn revoke(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
    body: StrictJson,
) -> R {
    Ok(json_response(
        StatusCode::OK,
        s.revoke_capability(&c, &id, body.value).await?,
    ))
}
