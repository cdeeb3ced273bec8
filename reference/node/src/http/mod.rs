//! The HTTP shell (axum): routes parse requests and call [`Service`]; one middleware gives
//! every response a `req_` request id and turns every failure — the service's errors, unknown
//! routes, wrong methods, oversized bodies — into the §24.1 body.

mod blobs;
pub mod body_budget;
#[cfg(feature = "quirks")]
pub(crate) use blobs::blob_response;
mod capabilities;
mod delegations;
mod discovery;
mod envelopes;
mod events;
mod extract;
mod federation;
mod identity;
mod rate_limit;
mod search;
mod workflows;
mod ws;

pub use extract::{Authed, StrictJson};

use crate::error::ApiError;
use crate::service::Service;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Shared state of every handler.
pub type AppState = Arc<Service>;

/// The node's router.
pub fn router(service: Arc<Service>) -> Router {
    let api = Router::new()
        .merge(discovery::routes())
        .merge(identity::routes())
        .merge(envelopes::routes())
        .merge(capabilities::routes())
        .merge(delegations::routes())
        .merge(search::routes())
        .merge(events::routes())
        .merge(blobs::routes())
        .merge(federation::routes())
        .merge(workflows::routes())
        .merge(ws::routes())
        .fallback(|req: Request| async move { ApiError::no_route(req.uri().path()) });
    api.layer(middleware::from_fn_with_state(
        service.clone(),
        rate_limit::limit,
    ))
    .layer(middleware::from_fn_with_state(
        service.clone(),
        error_bodies,
    ))
    .with_state(service)
}

impl IntoResponse for ApiError {
    /// The status and headers now; the §24.1 body is written by [`error_bodies`], which knows
    /// the request id.
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = status.into_response();
        resp.extensions_mut().insert(self);
        resp
    }
}

/// Assigns the request id and renders every error as the §24.1 body.
async fn error_bodies(State(svc): State<AppState>, req: Request, next: Next) -> Response {
    let rid = svc.env.request_id();
    let method = req.method().clone();
    let mut resp = next.run(req).await;
    let err = match resp.extensions_mut().remove::<ApiError>() {
        Some(e) => Some(e),
        None if resp.status() == StatusCode::METHOD_NOT_ALLOWED => {
            let allow = resp
                .headers()
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            Some(ApiError::wrong_method(method.as_str(), &allow))
        }
        None if resp.status() == StatusCode::PAYLOAD_TOO_LARGE => Some(ApiError::new(
            loom_protocol::ErrorCode::PayloadTooLarge,
            "$body",
            format!(
                "request body exceeds {} bytes",
                svc.config.limits.max_body_bytes
            ),
            "v1.1 §24.2",
        )),
        None if resp.status().is_client_error() || resp.status().is_server_error() => Some(
            ApiError::internal(format!("unrendered error status {}", resp.status())),
        ),
        None => None,
    };
    let mut resp = match err {
        Some(e) => {
            // Keep what inner layers said (rate-limit headers), but not the empty body's framing.
            let mut rendered = render(&svc, &rid, e);
            for (name, value) in resp.headers() {
                if name != header::CONTENT_TYPE
                    && name != header::CONTENT_LENGTH
                    && !rendered.headers().contains_key(name)
                {
                    rendered.headers_mut().insert(name.clone(), value.clone());
                }
            }
            rendered
        }
        None => resp,
    };
    if let Ok(v) = HeaderValue::from_str(&rid) {
        resp.headers_mut().insert("x-loom-request-id", v);
    }
    // RFC 9110 §6.6.1: an origin server with a clock sends `Date`; the node's clock is the
    // injected one, so simulated runs stay byte-identical.
    if let Ok(v) = HeaderValue::from_str(&http_date(svc.env.now())) {
        resp.headers_mut().insert(header::DATE, v);
    }
    resp
}

/// Renders the errors the connection layer answers outside any route (503 beyond the
/// connection cap, 408 for a slow body) with a request id and the node's `Date`, like
/// [`error_bodies`] does for routed requests.
pub fn refusal(svc: Arc<Service>) -> crate::net::Refusal {
    Arc::new(move |e: ApiError| {
        let rid = svc.env.request_id();
        let mut resp = render(&svc, &rid, e);
        if let Ok(v) = HeaderValue::from_str(&rid) {
            resp.headers_mut().insert("x-loom-request-id", v);
        }
        if let Ok(v) = HeaderValue::from_str(&http_date(svc.env.now())) {
            resp.headers_mut().insert(header::DATE, v);
        }
        resp
    })
}

/// `t` as an RFC 9110 §5.6.7 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(t: loom_protocol::Timestamp) -> String {
    let ms = u64::try_from(t.unix_ms()).unwrap_or(0);
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

fn render(svc: &Service, rid: &str, e: ApiError) -> Response {
    e.to_response(Some(rid.to_owned()), Some(svc.env.now().to_rfc3339()))
}

/// A JSON response with the §14.1 content type, from text already serialized.
pub fn json_text_response(status: StatusCode, text: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

/// A JSON response with the §14.1 content type.
pub fn json_response(status: StatusCode, value: serde_json::Value) -> Response {
    json_text_response(status, value.to_string())
}
