//! Delegation links stored through the API (v1.1 §16.5, §13): the signed link with its
//! delegator, delegate, expiry and the link's own `created_at` (to recognise id-less links
//! in chains, [`super::resolvers`]), and when it was revoked (§13.4).

use super::{Cached, Connection, StoreResult, Tx};
use loom_protocol::{Address, Timestamp};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

const EXISTS: &str = "SELECT 1 FROM delegations WHERE id = ?1";
const INSERT: &str = "INSERT INTO delegations (id, delegator, delegate, document, created_at, expires_at, link_created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const LIST: &str = "SELECT id, delegator, delegate, document, created_at, revoked_at FROM delegations WHERE (?2 AND delegator = ?1) OR (?3 AND delegate = ?1) ORDER BY rowid";
const GET: &str = "SELECT id, delegator, delegate, document, created_at, revoked_at FROM delegations WHERE id = ?1";
const MARK_REVOKED: &str = "UPDATE delegations SET revoked_at = ?2 WHERE id = ?1";

fn bad_row(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

/// A stored link.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredLink {
    /// Id.
    pub id: String,
    /// Delegator (wire form).
    pub delegator: String,
    /// Delegate (wire form).
    pub delegate: String,
    /// The signed link.
    pub link: Value,
    /// When the node stored it.
    pub stored_at: String,
    /// When revoked.
    pub revoked_at: Option<String>,
}

fn stored(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredLink> {
    Ok(StoredLink {
        id: r.get(0)?,
        delegator: r.get(1)?,
        delegate: r.get(2)?,
        link: serde_json::from_str(&r.get::<_, String>(3)?).map_err(bad_row)?,
        stored_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

/// Whether a link with this id is stored.
pub fn exists(conn: &Connection, id: &str) -> StoreResult<bool> {
    Ok(conn.row(EXISTS, [id], |_| Ok(())).optional()?.is_some())
}

/// A link to store.
#[derive(Debug, Clone, Copy)]
pub struct NewLink<'a> {
    /// Id (the link's own, or one the node assigned).
    pub id: &'a str,
    /// Delegator.
    pub delegator: &'a Address,
    /// Delegate.
    pub delegate: &'a Address,
    /// The signed link.
    pub link: &'a Value,
    /// When stored.
    pub stored_at: &'a str,
    /// The link's `expires_at`.
    pub expires_at: Timestamp,
    /// The link's `created_at`.
    pub created_at: Timestamp,
}

/// Stores a link.
pub fn insert(tx: &Tx<'_>, l: &NewLink<'_>) -> StoreResult<()> {
    tx.exec(
        INSERT,
        params![
            l.id,
            l.delegator.to_string(),
            l.delegate.to_string(),
            l.link.to_string(),
            l.stored_at,
            l.expires_at.to_rfc3339(),
            l.created_at.to_rfc3339()
        ],
    )?;
    Ok(())
}

/// The links of `identity` as delegator and/or delegate, in the order they were stored.
pub fn of_identity(
    conn: &Connection,
    identity: &Address,
    as_delegator: bool,
    as_delegate: bool,
) -> StoreResult<Vec<StoredLink>> {
    let mut stmt = conn.prepare_cached(LIST)?;
    let rows = stmt.query_map(
        params![identity.to_string(), as_delegator, as_delegate],
        stored,
    )?;
    rows.collect()
}

/// The link `id`.
pub fn get(conn: &Connection, id: &str) -> StoreResult<Option<StoredLink>> {
    conn.row(GET, [id], stored).optional()
}

/// Marks a link revoked at `at`.
pub fn mark_revoked(tx: &Tx<'_>, id: &str, at: &str) -> StoreResult<()> {
    tx.exec(MARK_REVOKED, params![id, at])?;
    Ok(())
}
