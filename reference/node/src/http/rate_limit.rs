//! Applies §14.3 rate limits before a request reaches its handler and reports them in
//! `X-LOOM-RateLimit-Limit`, `-Remaining` and `-Reset` (seconds until the window resets).
//! The authenticated caller found here is passed on, so handlers do not look it up again.

use super::AppState;
use crate::error::ApiError;
use crate::service::rate_limit::{LimitClass, RateDecision};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use loom_protocol::ErrorCode;
use std::net::SocketAddr;

fn classify(method: &Method, path: &str) -> Option<LimitClass> {
    match (method, path) {
        (&Method::POST, "/v1/envelopes") => Some(LimitClass::Envelopes),
        (&Method::POST, p) if p.starts_with("/v1/threads/") && p.ends_with("/ops") => {
            Some(LimitClass::Envelopes)
        }
        (&Method::POST, p)
            if p.starts_with("/v1/auth/")
                || p == "/v1/identity"
                || p == "/v1/identity/challenge" =>
        {
            Some(LimitClass::Auth)
        }
        (&Method::GET, p) if p == "/v1/threads" || p.starts_with("/v1/threads/") => {
            Some(LimitClass::ThreadReads)
        }
        // The per-node class of deliveries applies only once the node is authenticated
        // (service::federation), never to an unverified X-LOOM-Node.
        _ => None,
    }
}

fn headers(resp: &mut Response, d: &RateDecision) {
    let h = resp.headers_mut();
    for (name, value) in [
        ("x-loom-ratelimit-limit", d.limit.to_string()),
        ("x-loom-ratelimit-remaining", d.remaining.to_string()),
        ("x-loom-ratelimit-reset", d.reset_secs.to_string()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
}

/// The middleware.
pub(super) async fn limit(State(svc): State<AppState>, mut req: Request, next: Next) -> Response {
    let caller = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| svc.authenticate(t.trim()).ok());
    let Some(class) = classify(req.method(), req.uri().path()) else {
        if let Some(c) = caller {
            req.extensions_mut().insert(c);
        }
        return next.run(req).await;
    };
    let key = match (class, &caller) {
        (LimitClass::Auth, _) | (_, None) => req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or_else(|| "unknown".to_owned(), |c| c.0.ip().to_string()),
        (LimitClass::Federation, _) => req
            .headers()
            .get("x-loom-node")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("unknown")
            .to_ascii_lowercase(),
        (_, Some(c)) => c.identity.to_string(),
    };
    if let Some(c) = caller {
        req.extensions_mut().insert(c);
    }
    let Some(decision) = svc.rate_check(class, &key) else {
        return next.run(req).await;
    };
    let mut resp = if decision.allowed {
        next.run(req).await
    } else {
        ApiError::new(
            ErrorCode::RateLimitExceeded,
            "$request",
            format!("more than {} requests in one minute", decision.limit),
            "v1.1 §14.3",
        )
        .with_header("Retry-After", decision.reset_secs.to_string())
        .into_response()
    };
    headers(&mut resp, &decision);
    resp
}
