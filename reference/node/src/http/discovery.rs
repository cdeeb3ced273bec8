//! `/.well-known/loom.json` (§15.2), `/v1/protocol/extensions`, `/v1/protocol/capabilities`.

use super::{AppState, json_response};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/.well-known/loom.json", get(node_document))
        .route("/v1/protocol/extensions", get(extensions))
        .route("/v1/protocol/capabilities", get(capabilities))
}

async fn node_document(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, s.node_document())
}

async fn extensions(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, s.extensions())
}

async fn capabilities(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, s.protocol_capabilities())
}
