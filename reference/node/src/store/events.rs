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

const LIVE_AFTER: &str = "SELECT e.seq, e.id, e.type, e.thread_id, e.envelope_id, e.payload, e.created_at, \
     (SELECT group_concat(r.identity, ' ') FROM event_readers r WHERE r.event_seq = e.seq) \
     FROM events e WHERE e.seq > ?1 ORDER BY e.seq LIMIT ?2";
const HEAD: &str = "SELECT COALESCE(MAX(seq), 0) FROM events";
const ACK: &str = "INSERT INTO realtime_acks (identity, seq, at) VALUES (?1, ?2, ?3) \
     ON CONFLICT(identity) DO UPDATE SET seq = MAX(seq, excluded.seq), at = excluded.at";
const ACKED: &str = "SELECT seq FROM realtime_acks WHERE identity = ?1";
const CO_PARTICIPANTS: &str = "SELECT DISTINCT b.identity FROM thread_participants a \
     JOIN thread_participants b ON b.thread_id = a.thread_id AND b.active = 1 \
     WHERE a.identity = ?1 AND a.active = 1";

/// An event as the real-time hub fans it out: the row and every identity allowed to see it.
#[derive(Debug, Clone)]
pub struct LiveRow {
    /// Position (the cursor).
    pub seq: i64,
    /// `evt_` id.
    pub id: String,
    /// Event type.
    pub kind: String,
    /// Thread.
    pub thread: Option<String>,
    /// Envelope.
    pub envelope: Option<String>,
    /// Payload (JSON text).
    pub payload: String,
    /// When.
    pub created_at: String,
    /// Who may read it, sorted.
    pub readers: Vec<String>,
}

/// At most `limit` events after position `after`, each with its readers (§17).
pub fn live_after(conn: &Connection, after: i64, limit: usize) -> rusqlite::Result<Vec<LiveRow>> {
    let mut stmt = conn.prepare_cached(LIVE_AFTER)?;
    let rows = stmt.query_map(
        params![after, i64::try_from(limit).unwrap_or(i64::MAX)],
        |r| {
            let readers: Option<String> = r.get(7)?;
            let mut readers: Vec<String> = readers
                .unwrap_or_default()
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            readers.sort_unstable();
            Ok(LiveRow {
                seq: r.get(0)?,
                id: r.get(1)?,
                kind: r.get(2)?,
                thread: r.get(3)?,
                envelope: r.get(4)?,
                payload: r.get(5)?,
                created_at: r.get(6)?,
                readers,
            })
        },
    )?;
    rows.collect()
}

/// The position of the newest event (0 when there is none).
pub fn head(conn: &Connection) -> rusqlite::Result<i64> {
    conn.row(HEAD, [], |r| r.get(0))
}

/// Records that `identity` acknowledged everything up to `seq` (§17.2); an older ack never
/// moves the mark back.
pub fn record_ack(
    conn: &Connection,
    identity: &Address,
    seq: i64,
    at: &str,
) -> rusqlite::Result<()> {
    conn.exec(ACK, params![identity.to_string(), seq, at])
        .map(|_| ())
}

/// The last position `identity` acknowledged.
pub fn acked(conn: &Connection, identity: &Address) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    conn.row(ACKED, params![identity.to_string()], |r| r.get(0))
        .optional()
}

/// The identities that share an active thread with `identity`, itself included when it is in
/// one (who may see its presence, §17.5).
pub fn co_participants(
    conn: &Connection,
    identity: &Address,
) -> rusqlite::Result<BTreeSet<Address>> {
    let mut stmt = conn.prepare_cached(CO_PARTICIPANTS)?;
    let rows = stmt.query_map(params![identity.to_string()], |r| r.get::<_, String>(0))?;
    let mut out = BTreeSet::new();
    for r in rows {
        if let Ok(a) = Address::parse(&r?) {
            out.insert(a);
        }
    }
    Ok(out)
}
