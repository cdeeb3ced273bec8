//! Remembered results of create requests with an `Idempotency-Key` (v1.1 §14.4), per
//! identity and key.

use super::{Cached, Store, StoreResult};
use loom_protocol::Address;
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

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
    /// Its body (errors as their §24.1 parts).
    pub response: Value,
}

/// The result remembered for `(identity, key)`.
pub fn get(store: &Store, identity: &Address, key: &str) -> StoreResult<Option<Remembered>> {
    store
        .read()
        .row(SELECT, params![identity.to_string(), key], |r| {
            Ok(Remembered {
                route: r.get(0)?,
                request_hash: r.get(1)?,
                status: u16::try_from(r.get::<_, i64>(2)?).unwrap_or(500),
                response: serde_json::from_str(&r.get::<_, String>(3)?).map_err(bad_row)?,
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
    store.conn().exec(
        INSERT,
        params![
            identity.to_string(),
            key,
            r.route,
            r.request_hash,
            r.status,
            r.response.to_string(),
            at
        ],
    )?;
    Ok(())
}
