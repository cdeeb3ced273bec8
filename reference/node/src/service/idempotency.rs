//! `Idempotency-Key` (v1.1 §14.4): a repeated create request with the same key returns the
//! same result — success or error — byte for byte; the same key with a different request is
//! a deterministic 409. Keys are scoped to the authenticated identity.

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::quirks::Quirk;
use crate::store::Cached;
use loom_protocol::ErrorCode;
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

/// A stored or fresh result: HTTP status and body (an error is stored as its §24.1 parts).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A success with its status and JSON body.
    Ok(u16, Value),
    /// An error.
    Err(ApiError),
}

/// The longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

impl Service {
    /// Runs `f` once per (caller, key); replays the first outcome for repeats.
    pub async fn idempotent(
        &self,
        caller: &Caller,
        key: Option<&str>,
        route: &str,
        request_hash: &str,
        f: impl std::future::Future<Output = Outcome>,
    ) -> ApiResult<Outcome> {
        let Some(key) = key.filter(|_| !self.quirk(Quirk::IgnoreIdempotencyKey)) else {
            return Ok(f.await);
        };
        if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ApiError::bad_request(
                "Idempotency-Key",
                format!("must be 1-{MAX_KEY_LEN} visible ASCII characters"),
                "v1.1 §14.4",
            ));
        }
        let who = caller.identity.to_string();
        let stored: Option<(String, String, i64, String)> = self
            .store
            .conn()
            .row(
                "SELECT route, request_hash, status, response FROM idempotency WHERE identity = ?1 AND key = ?2",
                params![who, key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        if let Some((r, h, status, response)) = stored {
            if r != route || h != request_hash {
                return Err(ApiError::new(
                    ErrorCode::EnvelopeDuplicate,
                    "Idempotency-Key",
                    "this key was already used for a different request",
                    "v1.1 §14.4",
                ));
            }
            let body: Value = serde_json::from_str(&response).map_err(ApiError::internal)?;
            return Ok(replay(u16::try_from(status).unwrap_or(500), body));
        }
        let outcome = f.await;
        let (status, body) = match &outcome {
            Outcome::Ok(s, b) => (*s, b.clone()),
            Outcome::Err(e)
                if e.code == ErrorCode::InternalError || e.code == ErrorCode::RateLimitExceeded =>
            {
                // Transient failures are not remembered: a retry may succeed.
                return Ok(outcome);
            }
            Outcome::Err(e) => (e.http_status(), error_record(e)),
        };
        self.store.conn().exec(
            "INSERT OR IGNORE INTO idempotency (identity, key, route, request_hash, status, response, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![who, key, route, request_hash, status, body.to_string(), self.env.now().to_rfc3339()],
        )?;
        Ok(outcome)
    }
}

fn error_record(e: &ApiError) -> Value {
    serde_json::json!({"__error": {"code": e.code, "field": e.field, "reason": e.reason, "section": e.section, "status": e.status}})
}

fn replay(status: u16, body: Value) -> Outcome {
    match body.get("__error") {
        Some(e) => {
            let code: ErrorCode =
                serde_json::from_value(e["code"].clone()).unwrap_or(ErrorCode::InternalError);
            let section = e["section"].as_str().unwrap_or("v1.1 §14.4").to_owned();
            let mut err = ApiError::new(
                code,
                e["field"].as_str().unwrap_or("$"),
                e["reason"].as_str().unwrap_or(""),
                section,
            );
            err.status = e["status"].as_u64().and_then(|s| u16::try_from(s).ok());
            Outcome::Err(err)
        }
        None => Outcome::Ok(status, body),
    }
}
