//! Request extractors that fail with spec errors: strict JSON bodies (content type, size,
//! RFC 8259 + I-JSON: duplicate keys, lone surrogates, depth, via `loom_protocol::jcs`) and
//! bearer authentication (§14.2).

use super::AppState;
use crate::error::ApiError;
use crate::service::Caller;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde_json::Value;

/// A JSON body parsed strictly; the raw bytes are kept (signatures are over exact inputs).
#[derive(Debug, Clone)]
pub struct StrictJson {
    /// The parsed value.
    pub value: Value,
    /// The exact bytes received.
    pub raw: Bytes,
}

impl FromRequest<AppState> for StrictJson {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        json_content_type(req.headers())?;
        let waiting = expects_continue(req.headers());
        let body = bounded_body(
            req.into_body(),
            state,
            waiting,
            state.config.limits.max_body_bytes,
            "request body",
            "v1.1 §24.2",
        )
        .await?;
        let value = loom_protocol::jcs::parse_strict_bytes(&body).map_err(|e| {
            ApiError::bad_request("$body", format!("malformed JSON: {e}"), "v1.1 §7.2, §14.1")
        })?;
        Ok(StrictJson { value, raw: body })
    }
}

/// The request must say it is JSON (v1.1 §14.1): 415 otherwise, naming what it said.
pub(super) fn json_content_type(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let ctype = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ctype.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    Err(ApiError::new(
        loom_protocol::ErrorCode::EnvelopeInvalid,
        "Content-Type",
        format!("expected application/json; charset=utf-8, got {ctype:?}"),
        "v1.1 §14.1",
    )
    .with_status(415))
}

/// Whether the client waits for `100 Continue` before it sends the body (RFC 9110 §10.1.1).
pub(super) fn expects_continue(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
}

/// The body, read up to `limit` bytes: `PAYLOAD_TOO_LARGE` naming `what` and `section` beyond.
/// When the client waits for `100 Continue` (`waiting`) and the declared length
/// (`Content-Length`) is already over the limit, the 413 goes out before it sends a byte
/// (RFC 9110 §10.1.1; issue 36, item 9). A client that is sending its body anyway is read up
/// to the limit first, as before: answering while it still writes would cut it off mid-body,
/// and many clients then never read the answer. While it is read, the body holds its share
/// of the node's budget for bodies in flight (`super::body_budget`): 503 when it has none.
pub(super) async fn bounded_body(
    mut body: axum::body::Body,
    service: &crate::service::Service,
    waiting: bool,
    limit: usize,
    what: &str,
    section: &'static str,
) -> Result<Bytes, ApiError> {
    use axum::body::HttpBody as _;
    use http_body_util::BodyExt as _;
    let too_large = || {
        ApiError::new(
            loom_protocol::ErrorCode::PayloadTooLarge,
            "$body",
            format!("{what} exceeds {limit} bytes"),
            section,
        )
    };
    if waiting && body.size_hint().lower() > u64::try_from(limit).unwrap_or(u64::MAX) {
        return Err(too_large());
    }
    let mut share = service.bodies.share();
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        // A body that breaks off (the client went away, a deadline cut it) is answered as
        // before: the connection is closing and nobody reads the answer.
        let frame = frame.map_err(|_| too_large())?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > limit {
            return Err(too_large());
        }
        share.grow(data.len())?;
        buf.extend_from_slice(&data);
    }
    Ok(Bytes::from(buf))
}

impl StrictJson {
    /// The body as a typed request, naming what is wrong when it does not fit.
    pub fn parse<T: serde::de::DeserializeOwned>(
        &self,
        section: &'static str,
    ) -> Result<T, ApiError> {
        crate::error::typed_body(&self.value, section)
    }
}

/// The authenticated caller (`Authorization: Bearer at_…`).
#[derive(Debug, Clone)]
pub struct Authed(pub Caller);

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(c) = parts.extensions.get::<Caller>() {
            return Ok(Authed(c.clone()));
        }
        let value = parts.headers.get(header::AUTHORIZATION).ok_or_else(|| {
            ApiError::unauthenticated("an Authorization: Bearer access token is required")
        })?;
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                ApiError::unauthenticated("the Authorization header must be 'Bearer <token>'")
            })?;
        state.authenticate(token).map(Authed)
    }
}
