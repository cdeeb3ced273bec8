//! Identity (§16.3, registration per DESIGN.md §9) and auth (§14.2) routes.

use super::{AppState, Authed, StrictJson, json_response};
use crate::error::ApiError;
use crate::service::identity::{KeyInput, REGISTER_PURPOSE};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, get, post};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/identity/challenge", post(register_challenge))
        .route("/v1/identity", post(register))
        .route("/v1/identity/me", get(me).patch(update_me))
        .route("/v1/identity/me/keys", post(add_key))
        .route("/v1/identity/me/keys/{key_id}", delete(revoke_key))
        .route("/v1/identity/{address}", get(resolve))
        .route("/v1/auth/challenge", post(auth_challenge))
        .route("/v1/auth/token", post(auth_token))
        .route("/v1/auth/refresh", post(auth_refresh))
}

type R = Result<Response, ApiError>;

async fn register_challenge(State(s): State<AppState>, body: StrictJson) -> R {
    let req = body.parse("v1.1 §16.3")?;
    Ok(json_response(
        StatusCode::OK,
        s.issue_challenge(REGISTER_PURPOSE, &req)?,
    ))
}

async fn register(State(s): State<AppState>, body: StrictJson) -> R {
    Ok(json_response(
        StatusCode::CREATED,
        s.register_identity(&body.value)?,
    ))
}

async fn me(State(s): State<AppState>, Authed(c): Authed) -> R {
    Ok(json_response(
        StatusCode::OK,
        s.resolve_identity(&c.identity)?,
    ))
}

async fn update_me(State(s): State<AppState>, Authed(c): Authed, body: StrictJson) -> R {
    Ok(json_response(
        StatusCode::OK,
        s.update_identity(&c, &body.value)?,
    ))
}

async fn add_key(State(s): State<AppState>, Authed(c): Authed, body: StrictJson) -> R {
    let input: KeyInput = body.parse("v1.1 §16.3")?;
    Ok(json_response(StatusCode::CREATED, s.add_key(&c, &input)?))
}

async fn revoke_key(State(s): State<AppState>, Authed(c): Authed, Path(key_id): Path<String>) -> R {
    Ok(json_response(StatusCode::OK, s.revoke_key(&c, &key_id)?))
}

/// `{address}` is `loom://local@domain` percent-encoded, or `local@domain`.
async fn resolve(State(s): State<AppState>, Path(address): Path<String>) -> R {
    let full = if address.contains("://") {
        address
    } else {
        format!("loom://{address}")
    };
    // §6.1: addresses compare case-insensitively, so a lookup normalizes before it compares.
    let addr = loom_protocol::Address::parse(&full).map_err(|e| {
        ApiError::bad_request("identity", format!("not a LOOM address: {e}"), "v1.1 §6.1")
    })?;
    Ok(json_response(StatusCode::OK, s.resolve_identity(&addr)?))
}

async fn auth_challenge(State(s): State<AppState>, body: StrictJson) -> R {
    let req = body.parse("v1.1 §14.2")?;
    Ok(json_response(StatusCode::OK, s.auth_challenge(&req)?))
}

async fn auth_token(State(s): State<AppState>, body: StrictJson) -> R {
    let req = body.parse("v1.1 §14.2")?;
    Ok(json_response(StatusCode::OK, s.auth_token(&req)?))
}

async fn auth_refresh(State(s): State<AppState>, body: StrictJson) -> R {
    let req = body.parse("v1.1 §14.2")?;
    Ok(json_response(StatusCode::OK, s.auth_refresh(&req)?))
}
