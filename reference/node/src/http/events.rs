//! Event catch-up route (v1.1 §16.8).

use super::{AppState, Authed, json_response};
use crate::error::ApiError;
use crate::service::events::EventsQuery;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/v1/events", get(events))
}

async fn events(
    State(s): State<AppState>,
    Authed(c): Authed,
    q: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request("$query", e.body_text(), "v1.1 §16.8"))?;
    Ok(json_response(StatusCode::OK, s.events(&c, &q)?))
}
