//! The event log (§16.8, §17): append with the readers allowed to see each event.

use super::Cached;
use loom_protocol::Address;
use loom_protocol::id::{EnvelopeId, ThreadId};
use rusqlite::{Connection, params};
use serde_json::Value;
use std::collections::BTreeSet;

const INSERT_EVENT: &str = "INSERT INTO events (id, type, thread_id, envelope_id, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const INSERT_READER: &str =
    "INSERT OR IGNORE INTO event_readers (event_seq, identity) VALUES (?1, ?2)";

/// An event to append.
#[derive(Debug, Clone, Copy)]
pub struct NewEvent<'a> {
    /// `evt_` id.
    pub id: &'a str,
    /// Event type.
    pub kind: &'a str,
    /// Thread.
    pub thread: Option<&'a ThreadId>,
    /// Envelope.
    pub envelope: Option<&'a EnvelopeId>,
    /// Payload.
    pub payload: &'a Value,
    /// When.
    pub at: &'a str,
    /// Who may read it.
    pub readers: &'a BTreeSet<Address>,
}

/// Appends an event and its readers; returns its position (`seq`).
pub fn append(conn: &Connection, e: &NewEvent<'_>) -> rusqlite::Result<i64> {
    conn.exec(
        INSERT_EVENT,
        params![
            e.id,
            e.kind,
            e.thread.map(|t| t.to_string()),
            e.envelope.map(|x| x.to_string()),
            e.payload.to_string(),
            e.at
        ],
    )?;
    let seq = conn.last_insert_rowid();
    for r in e.readers {
        conn.exec(INSERT_READER, params![seq, r.to_string()])?;
    }
    Ok(seq)
}
