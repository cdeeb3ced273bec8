//! `Idempotency-Key` (v1.1 §14.4): a repeated create request with the same key returns the
//! same result — success or error — byte for byte; the same key with a different request is
//! a deterministic 409. Keys are scoped to the authenticated identity.

use super::{Caller, Document, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::idempotency::{self, Remembered, Response, StoredError};
use loom_protocol::ErrorCode;

/// A stored or fresh result: HTTP status and body (an error is stored as its §24.1 parts).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A success with its status and JSON body.
    Ok(u16, Document),
    /// An error.
    Err(ApiError),
}

/// An `Idempotency-Key` a create request carries, handed to the writer with what it
/// creates: a success is remembered in the same transaction as the envelope, so neither a
/// crash after the commit nor a concurrent twin can answer differently (issue 36, item 6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The key.
    pub key: String,
    /// `METHOD path` of the request.
    pub route: String,
    /// Hex SHA-256 of its body.
    pub request_hash: String,
}

/// The longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

impl Service {
    /// Runs `f` once per (caller, key); replays the first outcome for repeats. `f` gets the
    /// [`Claim`] to hand to the writer, which remembers a success with what it creates.
    pub async fn idempotent(
        &self,
        caller: &Caller,
        key: Option<&str>,
        route: &str,
        request_hash: &str,
        f: impl AsyncFnOnce(Option<Claim>) -> Outcome,
    ) -> ApiResult<Outcome> {
        let Some(key) = key.filter(|_| !self.deviations.api.ignore_idempotency_key) else {
            return Ok(f(None).await);
        };
        if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ApiError::bad_request(
                "Idempotency-Key",
                format!("must be 1-{MAX_KEY_LEN} visible ASCII characters"),
                "v1.1 §14.4",
            ));
        }
        if let Some(r) = idempotency::get(&self.store, &caller.identity, key)? {
            return replay_for(r, route, request_hash);
        }
        let outcome = f(Some(Claim {
            key: key.to_owned(),
            route: route.to_owned(),
            request_hash: request_hash.to_owned(),
        }))
        .await;
        let (status, body) = match &outcome {
            Outcome::Ok(s, b) => (*s, Response::Success(b.value.clone())),
            Outcome::Err(e)
                if e.code == ErrorCode::InternalError || e.code == ErrorCode::RateLimitExceeded =>
            {
                // Transient failures are not remembered: a retry may succeed.
                return Ok(outcome);
            }
            Outcome::Err(e) => (e.http_status(), Response::Error(stored_error(e))),
        };
        idempotency::remember(
            &self.store,
            &caller.identity,
            key,
            &Remembered {
                route: route.to_owned(),
                request_hash: request_hash.to_owned(),
                status,
                response: body,
            },
            &self.env.now().to_rfc3339(),
        )?;
        Ok(outcome)
    }
}

fn stored_error(e: &ApiError) -> StoredError {
    StoredError {
        code: e.code,
        field: e.field.clone(),
        reason: e.reason.clone(),
        section: e.section.to_string(),
        status: e.status,
    }
}

/// The remembered outcome `r` for a repeat of `route` with body hash `request_hash`, or the
/// §14.4 conflict when the key named another request.
pub(crate) fn replay_for(r: Remembered, route: &str, request_hash: &str) -> ApiResult<Outcome> {
    if r.route != route || r.request_hash != request_hash {
        return Err(ApiError::new(
            ErrorCode::EnvelopeDuplicate,
            "Idempotency-Key",
            "this key was already used for a different request",
            "v1.1 §14.4",
        ));
    }
    Ok(replay(r.status, r.response))
}

fn replay(status: u16, response: Response) -> Outcome {
    match response {
        Response::Error(e) => {
            let mut err = ApiError::new(e.code, e.field, e.reason, e.section);
            err.status = e.status;
            Outcome::Err(err)
        }
        Response::Success(body) => Outcome::Ok(status, body.into()),
    }
}
