//! The machinery of the legal-variant shim: an axum middleware in front of the reference
//! node's router that hands each request to the variant's handler, and the small tools the
//! handlers share — buffer a request or response body, rebuild it with a new body, answer a
//! §24.1 error the way a node would.

use super::Variant;
use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header, request, response};
use axum::middleware::Next;
use axum::response::Response;
use loom_protocol::clock::Clock;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Largest body the shim buffers (the node's own limits are far below).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// What a variant remembers across requests.
#[derive(Debug, Default)]
pub struct Memory {
    /// (bearer, path, Idempotency-Key) → the body first sent with it.
    pub idempotency: BTreeMap<(String, String, String), Bytes>,
    /// Addresses registered through the shim (lowercase).
    pub registered: BTreeSet<String>,
    /// Opaque token → the node's token.
    pub tokens: BTreeMap<String, String>,
    /// Threads that received an envelope through the shim.
    pub threads: BTreeSet<String>,
    /// Request ids the shim issued for its own errors.
    pub errors: u64,
    /// Signing keys of identities registered through the shim: address (lowercase) →
    /// `(key_id, key)`.
    pub signing_keys: BTreeMap<String, Vec<(String, ed25519_dalek::VerifyingKey)>>,
    /// Capability ids the shim minted → the token's own id.
    pub capability_ids: BTreeMap<String, String>,
}

/// The shim's state: the variant, a clock for error timestamps, the run's fake peers (what
/// a node's outbound fetches would reach), and its memory.
#[derive(Debug)]
pub struct Shim {
    /// The variant in force.
    pub variant: &'static Variant,
    clock: Arc<dyn Clock>,
    /// The fake federation peers the node behind the shim federates with.
    pub federation: Arc<crate::peer::Federation>,
    /// What the variant remembers.
    pub memory: Mutex<Memory>,
    /// The node's own router, for what the shim must open a connection to itself (the
    /// WebSocket proxy, `ws_proxy`).
    inner: std::sync::OnceLock<axum::Router>,
}

impl Shim {
    /// The shim of `variant`.
    pub fn new(
        variant: &'static Variant,
        clock: Arc<dyn Clock>,
        federation: Arc<crate::peer::Federation>,
    ) -> Arc<Shim> {
        Arc::new(Shim {
            variant,
            clock,
            federation,
            memory: Mutex::new(Memory::default()),
            inner: std::sync::OnceLock::new(),
        })
    }

    /// Keeps the node's unwrapped router (set once, when the node starts).
    pub fn set_inner(&self, router: axum::Router) {
        let _ = self.inner.set(router);
    }

    /// The node's unwrapped router.
    pub fn inner(&self) -> Option<axum::Router> {
        self.inner.get().cloned()
    }

    /// Runs `f` on the memory.
    pub fn remember<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> T {
        let mut m = self
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut m)
    }

    /// A §24.1 error response with `code` (its §24.2 status), as the variant's node answers.
    pub fn error(&self, code: &str, field: &str, reason: &str) -> Response {
        let status = loom_protocol::ErrorCode::parse(code).map_or(400, |c| c.http_status());
        let n = self.remember(|m| {
            m.errors += 1;
            m.errors
        });
        json_reply(
            status,
            &json!({"error": {
                "code": code,
                "message": reason,
                "details": {"field": field, "reason": reason, "section": self.variant.section},
                "request_id": format!("req_shim{n:06}"),
                "timestamp": self.clock.now().to_rfc3339(),
            }}),
        )
    }
}

/// The middleware: every request goes through the variant's handler.
pub async fn dispatch(State(shim): State<Arc<Shim>>, req: Request, next: Next) -> Response {
    (shim.variant.handler)(shim.clone(), req, next).await
}

/// Buffers a request body.
pub async fn split(req: Request) -> (request::Parts, Bytes) {
    let (parts, body) = req.into_parts();
    let bytes = to_bytes(body, BODY_LIMIT).await.unwrap_or_default();
    (parts, bytes)
}

/// A request from `parts` with `body` (Content-Length set to match).
pub fn join(mut parts: request::Parts, body: impl Into<Bytes>) -> Request {
    let body = body.into();
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    Request::from_parts(parts, Body::from(body))
}

/// Runs the node and buffers its response.
pub async fn respond(next: Next, req: Request) -> (response::Parts, Bytes) {
    let (parts, body) = next.run(req).await.into_parts();
    let bytes = to_bytes(body, BODY_LIMIT).await.unwrap_or_default();
    (parts, bytes)
}

/// A response from `parts` with `body` (Content-Length set to match).
pub fn reply(mut parts: response::Parts, body: impl Into<Bytes>) -> Response {
    let body = body.into();
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    Response::from_parts(parts, Body::from(body))
}

/// A JSON response with the §14.1 content type.
pub fn json_reply(status: u16, v: &Value) -> Response {
    let body = serde_json::to_vec(v).unwrap_or_default();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

/// Runs the node; when it answers `status` with a JSON body, `edit` rewrites the body.
pub async fn edit_json(
    next: Next,
    req: Request,
    when: impl Fn(u16) -> bool,
    edit: impl FnOnce(&mut Value),
) -> Response {
    let (parts, bytes) = respond(next, req).await;
    if !when(parts.status.as_u16()) {
        return reply(parts, bytes);
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut v) => {
            edit(&mut v);
            reply(parts, serde_json::to_vec(&v).unwrap_or_default())
        }
        Err(_) => reply(parts, bytes),
    }
}

/// Whether `req` is `method` on a path starting with `prefix` (and, if `exact`, equal to it).
pub fn is(req: &Request, method: &str, path: &str) -> bool {
    req.method().as_str() == method && req.uri().path() == path
}

/// Whether `req` is `method` on a path under `prefix`.
pub fn under(req: &Request, method: &str, prefix: &str) -> bool {
    req.method().as_str() == method && req.uri().path().starts_with(prefix)
}

/// The bearer token of a request, if any.
pub fn bearer(parts: &request::Parts) -> Option<String> {
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned)
}
