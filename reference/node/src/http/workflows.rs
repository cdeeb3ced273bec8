//! Workflow view routes (v1.1 §19.2).

use super::{AppState, Authed, json_response};
use crate::error::ApiError;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/workflows/{id}", get(workflow))
        .route("/v1/threads/{id}/workflows", get(thread_workflows))
}

async fn workflow(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, s.get_workflow(&c, &id)?))
}

async fn thread_workflows(
    State(s): State<AppState>,
    Authed(c): Authed,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, s.thread_workflows(&c, &id)?))
}
