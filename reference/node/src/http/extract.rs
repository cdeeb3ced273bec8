//! Request extractors that fail with spec errors: strict JSON bodies (content type, size,
//! RFC 8259 + I-JSON: duplicate keys, lone surrogates, depth, via `loom_protocol::jcs`; a
//! self-test node reads them as its [`crate::quirks::JsonReading`] says) and bearer
//! authentication (§14.2).

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
        let ctype = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let dev = &state.settings().http;
        let essence = ctype.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") && !dev.accept_any_content_type {
            return Err(ApiError::new(
                loom_protocol::ErrorCode::EnvelopeInvalid,
                "Content-Type",
                format!("expected application/json; charset=utf-8, got {ctype:?}"),
                "v1.1 §14.1",
            )
            .with_status(415));
        }
        let limit = if dev.ignore_body_limit {
            usize::MAX
        } else {
            state.config.limits.max_body_bytes
        };
        let body = axum::body::to_bytes(req.into_body(), limit)
            .await
            .map_err(|_| {
                ApiError::new(
                    loom_protocol::ErrorCode::PayloadTooLarge,
                    "$body",
                    format!("request body exceeds {limit} bytes"),
                    "v1.1 §24.2",
                )
            })?;
        let (value, body) = dev.json.read(body).map_err(|e| {
            ApiError::bad_request("$body", format!("malformed JSON: {e}"), "v1.1 §7.2, §14.1")
        })?;
        Ok(StrictJson { value, raw: body })
    }
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
