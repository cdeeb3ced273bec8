//! Envelopes (§16.1): the stored document with its readers (§8.3, a JSON array of
//! addresses in the row, migration 7) and search row (§16.6), reads by id, retraction's
//! erasure (§20.7, §25.2).

use super::Cached;
use loom_protocol::Address;
use loom_protocol::id::{EnvelopeId, ThreadId};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use std::collections::BTreeSet;

/// Is the id stored?
pub const EXISTS: &str = "SELECT 1 FROM envelopes WHERE id = ?1";
/// The stored body (NULL once erased).
pub const SELECT_BODY: &str = "SELECT body FROM envelopes WHERE id = ?1";
const INSERT: &str = "INSERT INTO envelopes (id, thread_id, event_seq, parent_id, type, intent, sender, created_at, received_at, body, body_sha256, readers) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
/// An envelope's search row, keyed by the envelope row's rowid.
pub const INSERT_SEARCH: &str = "INSERT INTO envelope_search (rowid, envelope_id, thread_id, text, intent, parameters) VALUES ((SELECT rowid FROM envelopes WHERE id = ?1), ?1, ?2, ?3, ?4, ?5)";
/// The search row of an envelope, found by the envelope row's rowid (migration 2).
pub const DELETE_SEARCH: &str =
    "DELETE FROM envelope_search WHERE rowid = (SELECT rowid FROM envelopes WHERE id = ?1)";
/// What `GET /v1/envelopes/{id}` reads.
pub const SELECT_FOR_READ: &str =
    "SELECT thread_id, body, erased_at, retracted_at FROM envelopes WHERE id = ?1";
/// What retraction checks.
pub const SELECT_FOR_RETRACT: &str =
    "SELECT thread_id, sender, body, received_at, body_sha256 FROM envelopes WHERE id = ?1";
/// Retraction that erases the content (§25.2).
pub const ERASE: &str =
    "UPDATE envelopes SET body = NULL, erased_at = ?2, retracted_at = ?2 WHERE id = ?1";

/// The columns of a new envelope row.
#[derive(Debug, Clone, Copy)]
pub struct NewEnvelope<'a> {
    /// Id.
    pub id: &'a EnvelopeId,
    /// Thread.
    pub thread: &'a ThreadId,
    /// `meta.event_seq`.
    pub event_seq: i64,
    /// Parent.
    pub parent: Option<&'a EnvelopeId>,
    /// Type.
    pub kind: &'a str,
    /// Structured intent.
    pub intent: Option<&'a str>,
    /// Sender.
    pub sender: &'a Address,
    /// `created_at` as stored in the document.
    pub created_at: Option<&'a str>,
    /// Receipt time.
    pub received_at: &'a str,
    /// The document as stored (serialized once by the caller, which answers with it).
    pub body: &'a str,
    /// hex SHA-256 of `JCS(document − meta)`.
    pub body_sha256: &'a str,
}

/// Whether an envelope with this id is stored.
pub fn exists(conn: &Connection, id: &EnvelopeId) -> rusqlite::Result<bool> {
    Ok(conn
        .row(EXISTS, [id.to_string()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The stored document (`None` when missing or erased).
pub fn body(conn: &Connection, id: &EnvelopeId) -> rusqlite::Result<Option<Value>> {
    let body: Option<Option<String>> = conn
        .row(SELECT_BODY, [id.to_string()], |r| r.get(0))
        .optional()?;
    Ok(body.flatten().and_then(|s| serde_json::from_str(&s).ok()))
}

/// The readers column: the addresses as a JSON array, in string order (what migration 7
/// writes for older rows too).
fn readers_json(readers: &BTreeSet<Address>) -> String {
    let mut all: Vec<String> = readers.iter().map(Address::to_string).collect();
    all.sort_unstable();
    all.dedup();
    Value::from(all).to_string()
}

/// Stores the envelope row with its readers (the sender among them, §8.3).
pub fn insert(
    conn: &Connection,
    e: &NewEnvelope<'_>,
    readers: &BTreeSet<Address>,
) -> rusqlite::Result<()> {
    let id = e.id.to_string();
    conn.exec(
        INSERT,
        params![
            id,
            e.thread.to_string(),
            e.event_seq,
            e.parent.map(|p| p.to_string()),
            e.kind,
            e.intent,
            e.sender.to_string(),
            e.created_at,
            e.received_at,
            e.body,
            e.body_sha256,
            readers_json(readers)
        ],
    )?;
    Ok(())
}

/// The §16.6 search row of a stored envelope.
pub fn index(
    conn: &Connection,
    id: &EnvelopeId,
    thread: &ThreadId,
    text: &str,
    intent: &str,
    parameters: &str,
) -> rusqlite::Result<()> {
    conn.exec(
        INSERT_SEARCH,
        params![id.to_string(), thread.to_string(), text, intent, parameters],
    )?;
    Ok(())
}

/// A stored envelope as `GET /v1/envelopes/{id}` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRead {
    /// Thread id.
    pub thread: String,
    /// The document, `None` once erased.
    pub body: Option<String>,
    /// When erased.
    pub erased_at: Option<String>,
    /// When retracted.
    pub retracted_at: Option<String>,
}

/// Reads an envelope for `GET /v1/envelopes/{id}`.
pub fn read(conn: &Connection, id: &EnvelopeId) -> rusqlite::Result<Option<StoredRead>> {
    conn.row(SELECT_FOR_READ, [id.to_string()], |r| {
        Ok(StoredRead {
            thread: r.get(0)?,
            body: r.get(1)?,
            erased_at: r.get(2)?,
            retracted_at: r.get(3)?,
        })
    })
    .optional()
}

/// A stored envelope as retraction reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRetract {
    /// Thread id.
    pub thread: String,
    /// Sender.
    pub sender: String,
    /// The document, `None` once erased.
    pub body: Option<String>,
    /// Receipt time.
    pub received_at: String,
    /// `body_sha256`.
    pub sha256: String,
}

/// Reads an envelope for retraction.
pub fn read_for_retract(
    conn: &Connection,
    id: &EnvelopeId,
) -> rusqlite::Result<Option<StoredRetract>> {
    conn.row(SELECT_FOR_RETRACT, [id.to_string()], |r| {
        Ok(StoredRetract {
            thread: r.get(0)?,
            sender: r.get(1)?,
            body: r.get(2)?,
            received_at: r.get(3)?,
            sha256: r.get(4)?,
        })
    })
    .optional()
}

/// Retracts (§25.2): erases the content and drops its search row.
pub fn retract(conn: &Connection, id: &EnvelopeId, now: &str) -> rusqlite::Result<()> {
    let id = id.to_string();
    conn.exec(ERASE, params![id, now])?;
    conn.exec(DELETE_SEARCH, [&id])?;
    Ok(())
}
