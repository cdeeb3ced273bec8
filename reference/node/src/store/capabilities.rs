//! Capability tokens issued through the node (v1.1 §16.4, §12): the signed document with
//! its thread, holder and epoch, and when it was spent (§12.5) or revoked (§12.3). The
//! envelope path marks tokens spent and revoked in [`super::accept`].

use super::{Cached, Connection, StoreResult, Tx};
use loom_protocol::Address;
use loom_protocol::id::{CapabilityId, ThreadId};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

const OF_THREAD: &str = "SELECT id, issued_to, epoch, document, created_at, spent_at, revoked_at FROM capabilities WHERE thread_id = ?1 ORDER BY rowid";
const EXISTS: &str = "SELECT 1 FROM capabilities WHERE id = ?1";
const INSERT: &str = "INSERT INTO capabilities (id, thread_id, issued_by, issued_to, epoch, single_use, document, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
const HEAD: &str = "SELECT thread_id, issued_to, revoked_at FROM capabilities WHERE id = ?1";
const REVOKED_AT: &str = "SELECT revoked_at FROM capabilities WHERE id = ?1";

fn bad_row(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

/// A stored token.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCapability {
    /// `cap_` id as stored.
    pub id: String,
    /// Holder (wire form).
    pub issued_to: String,
    /// The `cap_epoch` it was issued under.
    pub epoch: u64,
    /// The signed token.
    pub document: Value,
    /// When the node stored it.
    pub created_at: String,
    /// When it was spent (§12.5).
    pub spent_at: Option<String>,
    /// When it was revoked (§12.3).
    pub revoked_at: Option<String>,
}

/// Every token of `thread`, in the order they were stored.
pub fn of_thread(conn: &Connection, thread: &ThreadId) -> StoreResult<Vec<StoredCapability>> {
    let mut stmt = conn.prepare_cached(OF_THREAD)?;
    let rows = stmt.query_map([thread.to_string()], |r| {
        Ok(StoredCapability {
            id: r.get(0)?,
            issued_to: r.get(1)?,
            epoch: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
            document: serde_json::from_str(&r.get::<_, String>(3)?).map_err(bad_row)?,
            created_at: r.get(4)?,
            spent_at: r.get(5)?,
            revoked_at: r.get(6)?,
        })
    })?;
    rows.collect()
}

/// Whether a token with this id is stored.
pub fn exists(conn: &Connection, id: &CapabilityId) -> StoreResult<bool> {
    Ok(conn
        .row(EXISTS, [id.to_string()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// A token to store.
#[derive(Debug, Clone, Copy)]
pub struct NewCapability<'a> {
    /// Id.
    pub id: &'a CapabilityId,
    /// `scope.thread_id`.
    pub thread: &'a ThreadId,
    /// Issuer.
    pub issued_by: &'a Address,
    /// Holder.
    pub issued_to: &'a Address,
    /// Epoch.
    pub epoch: u64,
    /// Single use.
    pub single_use: bool,
    /// The signed token.
    pub document: &'a Value,
    /// When stored.
    pub at: &'a str,
}

/// Stores a token.
pub fn insert(tx: &Tx<'_>, c: &NewCapability<'_>) -> StoreResult<()> {
    let epoch =
        i64::try_from(c.epoch).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    tx.exec(
        INSERT,
        params![
            c.id.to_string(),
            c.thread.to_string(),
            c.issued_by.to_string(),
            c.issued_to.to_string(),
            epoch,
            c.single_use,
            c.document.to_string(),
            c.at
        ],
    )?;
    Ok(())
}

/// Where a token belongs: its thread, holder and revocation time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityHead {
    /// Thread id as stored.
    pub thread: String,
    /// Holder (wire form).
    pub issued_to: String,
    /// When revoked.
    pub revoked_at: Option<String>,
}

/// The head of token `id`.
pub fn head(conn: &Connection, id: &CapabilityId) -> StoreResult<Option<CapabilityHead>> {
    conn.row(HEAD, [id.to_string()], |r| {
        Ok(CapabilityHead {
            thread: r.get(0)?,
            issued_to: r.get(1)?,
            revoked_at: r.get(2)?,
        })
    })
    .optional()
}

/// When token `id` was revoked (it must be stored).
pub fn revoked_at(conn: &Connection, id: &CapabilityId) -> StoreResult<Option<String>> {
    conn.row(REVOKED_AT, [id.to_string()], |r| r.get(0))
}
