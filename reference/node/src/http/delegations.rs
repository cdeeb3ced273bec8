//! Delegation routes (v1.1 §16.5); creating honours `Idempotency-Key` (§14.4).

use super::envelopes::create_once;
use super::{AppState, Authed, StrictJson, json_response};
use crate::error::ApiError;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{delete, post};
use serde::Deserialize;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/delegations", post(create).get(list))
        .route("/v1/delegations/{id}", delete(revoke))
}

type R = Result<Response, ApiError>;

/// `GET /v1/delegations` query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    role: Option<String>,
}

/// `DELETE /v1/delegations/{id}` query: an optional reason carried in the event (§13.4).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeQuery {
    reason: Option<String>,
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(q)| q)
        .map_err(|e| ApiError::bad_request("$query", e.body_text(), "v1.1 §16.5"))
}

async fn create(
    State(s): State<AppState>,
    Authed(c): Authed,
    headers: HeaderMap,
    body: StrictJson,
) -> R {
    create_once(
        &s,
        &c,
        &headers,
        "POST /v1/delegations",
        &body.raw,
        async |_| s.create_delegation(&c, body.value.clone()),
    )
    .await
}

async fn list(
    State(s): State<AppState>,
    Authed(c): Authed,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> R {
    let q = query(q)?;
    Ok(json_response(
        StatusCode::OK,
        s.list_delegations(&c, q.role.as_deref())?,
    ))
}

async fn revoke(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
    q: Result<Query<RevokeQuery>, QueryRejection>,
) -> R {
    let q = query(q)?;
    Ok(json_response(
        StatusCode::OK,
        s.revoke_delegation(&c, &id, q.reason.as_deref())?,
    ))
}
