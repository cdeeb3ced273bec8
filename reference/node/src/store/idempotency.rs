//! Remembered results of create requests with an `Idempotency-Key` (v1.1 §14.4), per
//! identity and key. A success is kept as its JSON body; an error as its §24.1 parts under
//! one `__error` member of the `response` column (the stored form since the first schema).

use super::{Cached, Store, StoreResult};
use loom_protocol::{Address, ErrorCode};
use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

const SELECT: &str = "SELECT route, request_hash, status, response FROM idempotency WHERE identity = ?1 AND key = ?2";
const INSERT: &str = "INSERT OR IGNORE INTO idempotency (identity, key, route, request_hash, status, response, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

fn bad_row(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

/// A remembered result.
#[derive(Debug, Clone, PartialEq)]
pub struct Remembered {
    /// `METHOD path` of the first request.
    pub route: String,
    /// Hex SHA-256 of its body.
    pub request_hash: String,
    /// Its status.
    pub status: u16,
    /// What it answered.
    pub response: Response,
}

/// A remembered answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// A success and its JSON body.
    Success(Value),
    /// An error.
    Error(StoredError),
}

/// The §24.1 parts of a remembered error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredError {
    /// Registry code.
    pub code: ErrorCode,
    /// The field concerned.
    pub field: String,
    /// The rule broken.
    pub reason: String,
    /// Where the rule is written.
    pub section: String,
    /// A status other than the registry's, if the error had one.
    pub status: Option<u16>,
}

impl Response {
    fn to_json(&self) -> Value {
        match self {
            Response::Success(body) => body.clone(),
            Response::Error(e) => json!({"__error": {
                "code": e.code,
                "field": e.field,
                "reason": e.reason,
                "section": e.section,
                "status": e.status,
            }}),
        }
    }

    /// Reads the stored form leniently: a member that does not read takes the value the
    /// node has always replayed for it.
    fn from_json(body: Value) -> Response {
        let Some(e) = body.get("__error") else {
            return Response::Success(body);
        };
        Response::Error(StoredError {
            code: serde_json::from_value(e["code"].clone()).unwrap_or(ErrorCode::InternalError),
            field: e["field"].as_str().unwrap_or("$").to_owned(),
            reason: e["reason"].as_str().unwrap_or("").to_owned(),
            section: e["section"].as_str().unwrap_or("v1.1 §14.4").to_owned(),
            status: e["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
        })
    }
}

/// The result remembered for `(identity, key)`.
pub fn get(store: &Store, identity: &Address, key: &str) -> StoreResult<Option<Remembered>> {
    get_in(&store.read(), identity, key)
}

/// [`get`] inside the caller's transaction (the writer's, which remembers a success in the
/// same transaction as what it answered).
pub fn get_in(
    conn: &rusqlite::Connection,
    identity: &Address,
    key: &str,
) -> StoreResult<Option<Remembered>> {
    conn.row(SELECT, params![identity.to_string(), key], |r| {
        Ok(Remembered {
            route: r.get(0)?,
            request_hash: r.get(1)?,
            status: u16::try_from(r.get::<_, i64>(2)?).unwrap_or(500),
            response: Response::from_json(
                serde_json::from_str(&r.get::<_, String>(3)?).map_err(bad_row)?,
            ),
        })
    })
    .optional()
}

/// Remembers the first result for `(identity, key)` (a concurrent first one wins).
pub fn remember(
    store: &Store,
    identity: &Address,
    key: &str,
    r: &Remembered,
    at: &str,
) -> StoreResult<()> {
    remember_in(&store.conn(), identity, key, r, at)
}

/// [`remember`] inside the caller's transaction.
pub fn remember_in(
    conn: &rusqlite::Connection,
    identity: &Address,
    key: &str,
    r: &Remembered,
    at: &str,
) -> StoreResult<()> {
    conn.exec(
        INSERT,
        params![
            identity.to_string(),
            key,
            r.route,
            r.request_hash,
            r.status,
            r.response.to_json().to_string(),
            at
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_answers_read_back_as_written() {
        let ok = Response::Success(json!({"id": "env_1", "__note": 1}));
        assert_eq!(Response::from_json(ok.to_json()), ok);
        let err = Response::Error(StoredError {
            code: ErrorCode::CapabilityDenied,
            field: "id".into(),
            reason: "only the sender".into(),
            section: "v1.1 §20.7".into(),
            status: Some(415),
        });
        assert_eq!(Response::from_json(err.to_json()), err);
        // The stored form of earlier versions: the same member names.
        let stored = json!({"__error": {"code": "THREAD_NOT_FOUND", "field": "thread_id", "reason": "r", "section": "v1.1 §16.2", "status": null}});
        assert_eq!(
            Response::from_json(stored),
            Response::Error(StoredError {
                code: ErrorCode::ThreadNotFound,
                field: "thread_id".into(),
                reason: "r".into(),
                section: "v1.1 §16.2".into(),
                status: None,
            })
        );
    }
}
