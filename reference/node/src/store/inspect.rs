//! The read-only queries behind [`crate::inspect`]: what an observer of a node's store (the
//! simulator's invariants, tests) may read, in one place with the rest of the SQL.

use super::audit::{AuditVerdict, verify};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// A read-only connection to the store in `dir` (`dir/loom.db`), if there is one.
pub(crate) fn open_read_only(dir: &Path) -> Option<Connection> {
    let path = dir.join("loom.db");
    if !path.exists() {
        return None;
    }
    Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()
}

/// `PRAGMA integrity_check`: every problem SQLite finds in the database file (b-tree
/// structure, index entries that do not match their rows, constraint violations), empty
/// when the store is sound.
pub(crate) fn integrity(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare("PRAGMA integrity_check")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut problems = Vec::new();
    for row in rows {
        let line = row?;
        if line != "ok" {
            problems.push(line);
        }
    }
    Ok(problems)
}

/// (queued outbox rows, stored envelopes); `-1` for a count that could not be read.
pub(crate) fn counts(c: &Connection) -> (i64, i64) {
    let count = |sql: &str| {
        c.prepare_cached(sql)
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .unwrap_or(-1)
    };
    let queued = |table: &str| {
        count(&format!(
            "SELECT COUNT(*) FROM {table} WHERE state = 'queued'"
        ))
    };
    let (federation, mail) = (queued("federation_outbox"), queued("bridge_outbox"));
    (
        if federation < 0 || mail < 0 {
            -1
        } else {
            federation + mail
        },
        count("SELECT COUNT(*) FROM envelopes"),
    )
}

/// One stored envelope's row: (id, thread, event_seq, parent, body SHA-256, body, type).
pub(crate) type EnvelopeRow = (
    String,
    String,
    i64,
    Option<String>,
    String,
    Option<String>,
    String,
);

/// Every stored envelope, in commit order (rowid).
pub(crate) fn envelopes(c: &Connection) -> rusqlite::Result<Vec<EnvelopeRow>> {
    let mut stmt = c.prepare(
        "SELECT id, thread_id, event_seq, parent_id, body_sha256, body, type FROM envelopes ORDER BY rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
        ))
    })?;
    rows.collect()
}

/// One outbox row: (destination, envelope id, state, last failure).
pub(crate) type OutboxRow = (String, String, String, Option<String>);

/// Every outbox row.
pub(crate) fn outbox(c: &Connection) -> rusqlite::Result<Vec<OutboxRow>> {
    let mut stmt =
        c.prepare("SELECT destination, envelope_id, state, last_failure FROM federation_outbox")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    rows.collect()
}

/// Every outbound mail row (§21.3): (the recipient, envelope id, state, last failure).
pub(crate) fn mail_outbox(c: &Connection) -> rusqlite::Result<Vec<OutboxRow>> {
    let mut stmt = c.prepare(
        "SELECT json_extract(recipients, '$[0]'), envelope_id, state, last_failure FROM bridge_outbox",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    rows.collect()
}

/// Every thread: (id, status).
pub(crate) fn threads(c: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = c.prepare("SELECT id, status FROM threads")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Every active participation: (thread, identity, role).
pub(crate) fn active_participants(
    c: &Connection,
) -> rusqlite::Result<Vec<(String, String, String)>> {
    let mut stmt =
        c.prepare("SELECT thread_id, identity, role FROM thread_participants WHERE active = 1")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

/// The public keys of the node's signing keys, as stored.
pub(crate) fn node_public_keys(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = c.prepare("SELECT public_key FROM node_keys")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    rows.collect()
}

/// The audit log against the store's own anchors ([`verify`]).
pub(crate) fn audit(c: &Connection) -> rusqlite::Result<AuditVerdict> {
    verify(c)
}

const EVENTS_FOR: &str = "SELECT e.seq, e.id, e.thread_id FROM event_readers r JOIN events e ON e.seq = r.event_seq \
     WHERE r.identity = ?1 AND r.event_seq > ?2 AND r.event_seq <= ?3 ORDER BY r.event_seq";

/// The events `identity` may read with positions in `(after, upto]`: (seq, id, thread).
pub(crate) fn events_for(
    c: &Connection,
    identity: &str,
    after: i64,
    upto: i64,
) -> rusqlite::Result<Vec<(i64, String, Option<String>)>> {
    let mut stmt = c.prepare(EVENTS_FOR)?;
    let rows = stmt.query_map(rusqlite::params![identity, after, upto], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    rows.collect()
}
