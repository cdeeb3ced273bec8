//! Threads (§10.1): the thread row with its serialized state, the participant, label and
//! search rows kept equal to that state, and the runtime (state + DAG) rebuilt from them.

use super::Cached;
use loom_protocol::Timestamp;
use loom_protocol::accept::ThreadRuntime;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::thread::ThreadState;
use rusqlite::{Connection, OptionalExtension, params};

/// The stored state and last `event_seq` of a thread.
pub const SELECT_RUNTIME: &str = "SELECT state, last_event_seq FROM threads WHERE id = ?1";
/// The DAG of a thread, in `event_seq` order.
pub const SELECT_DAG: &str =
    "SELECT id, parent_id, created_at FROM envelopes WHERE thread_id = ?1 ORDER BY event_seq";
/// The stored state.
pub const SELECT_STATE: &str = "SELECT state FROM threads WHERE id = ?1";
const INSERT_THREAD: &str = "INSERT INTO threads (id, state, status, subject, created_at, updated_at, last_event_seq, envelope_count) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 1)";
/// A thread's state and counters after an operation.
pub const UPDATE_STATE: &str = "UPDATE threads SET state = ?2, status = ?3, subject = ?4, updated_at = ?5, last_event_seq = ?6, envelope_count = envelope_count + 1 WHERE id = ?1";
/// A thread's counters after a non-operation envelope.
pub const UPDATE_COUNTERS: &str = "UPDATE threads SET updated_at = ?2, last_event_seq = ?3, envelope_count = envelope_count + 1 WHERE id = ?1";
const UPSERT_OTHER: &str = "INSERT INTO threads (id, state, status, subject, created_at, updated_at, last_event_seq, envelope_count) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, 0)
     ON CONFLICT(id) DO UPDATE SET state = ?2, status = ?3, updated_at = ?5";
/// Another thread's state (a merged fork).
pub const UPDATE_OTHER: &str =
    "UPDATE threads SET state = ?2, status = ?3, updated_at = ?4 WHERE id = ?1";
/// Participant rows of a thread, before re-indexing.
pub const DELETE_PARTICIPANTS: &str = "DELETE FROM thread_participants WHERE thread_id = ?1";
/// A participant row, with its thread's sort keys (migration 3).
pub const INSERT_PARTICIPANT: &str = "INSERT INTO thread_participants (thread_id, identity, role, active, created_at, updated_at) SELECT ?1, ?2, ?3, ?4, created_at, updated_at FROM threads WHERE id = ?1";
/// A participant row of a thread created in the same transaction: its sort keys are the
/// receipt time the thread row was written with ([`put`]), bound instead of read back.
const INSERT_FRESH_PARTICIPANT: &str = "INSERT INTO thread_participants (thread_id, identity, role, active, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)";
/// A thread's new `updated_at` in its participant rows (listing order, migration 3).
pub const TOUCH_PARTICIPANTS: &str =
    "UPDATE thread_participants SET updated_at = ?2 WHERE thread_id = ?1";
/// Label rows of a thread, before re-indexing.
pub const DELETE_LABELS: &str = "DELETE FROM thread_labels WHERE thread_id = ?1";
const INSERT_LABEL: &str = "INSERT INTO thread_labels (thread_id, label) VALUES (?1, ?2)";
/// The rowid of a thread's row, which keys its search row (migration 2).
pub const SELECT_ROWID: &str = "SELECT rowid FROM threads WHERE id = ?1";
/// The search row of a thread, by the thread row's rowid.
pub const DELETE_SEARCH: &str = "DELETE FROM thread_search WHERE rowid = ?1";
/// A thread's search row, keyed by the thread row's rowid.
pub const INSERT_SEARCH: &str = "INSERT INTO thread_search (rowid, thread_id, subject, labels, participants) VALUES (?1, ?2, ?3, ?4, ?5)";

fn state_json(state: &ThreadState) -> rusqlite::Result<String> {
    serde_json::to_string(state).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn bad_row(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

/// Rebuilds a thread's runtime from the store, or `None` when the thread does not exist.
pub fn load_runtime(conn: &Connection, id: &ThreadId) -> rusqlite::Result<Option<ThreadRuntime>> {
    let row: Option<(String, i64)> = conn
        .row(SELECT_RUNTIME, [id.to_string()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let Some((state, last)) = row else {
        return Ok(None);
    };
    let state: ThreadState = serde_json::from_str(&state).map_err(bad_row)?;
    let mut stmt = conn.prepare_cached(SELECT_DAG)?;
    let rows = stmt.query_map([id.to_string()], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut envelopes = Vec::new();
    for row in rows {
        let (eid, parent, created) = row?;
        let (Ok(eid), Ok(created)) = (EnvelopeId::parse(&eid), Timestamp::parse(&created)) else {
            continue;
        };
        envelopes.push((
            eid,
            parent.and_then(|p| EnvelopeId::parse(&p).ok()),
            created,
        ));
    }
    Ok(Some(ThreadRuntime::rebuild(
        state,
        u64::try_from(last).unwrap_or(0),
        envelopes,
    )))
}

/// The stored state of a thread.
pub fn stored_state(conn: &Connection, id: &ThreadId) -> rusqlite::Result<Option<ThreadState>> {
    let row: Option<String> = conn
        .row(SELECT_STATE, [id.to_string()], |r| r.get(0))
        .optional()?;
    row.map(|s| state_from_json(&s)).transpose()
}

/// A thread state as the `threads.state` column stores it.
pub(super) fn state_from_json(json: &str) -> rusqlite::Result<ThreadState> {
    serde_json::from_str(json).map_err(bad_row)
}

/// The envelope's own thread row: created, or its state and counters moved.
pub fn put(
    conn: &Connection,
    state: &ThreadState,
    fresh: bool,
    state_changed: bool,
    event_seq: i64,
    now: &str,
) -> rusqlite::Result<()> {
    let id = state.id.to_string();
    if fresh {
        conn.exec(
            INSERT_THREAD,
            params![
                id,
                state_json(state)?,
                state.state.as_str(),
                state.subject,
                now,
                event_seq
            ],
        )?;
    } else if state_changed {
        conn.exec(
            UPDATE_STATE,
            params![
                id,
                state_json(state)?,
                state.state.as_str(),
                state.subject,
                now,
                event_seq
            ],
        )?;
    } else {
        // Only operations change the replicated state (§11); other envelopes move the
        // sequence and the counters (and the listing order of the participants' rows; a
        // changed state re-indexes them from the thread row).
        conn.exec(UPDATE_COUNTERS, params![id, now, event_seq])?;
        conn.exec(TOUCH_PARTICIPANTS, params![id, now])?;
    }
    Ok(())
}

/// Another thread's state (fork targets, §11.4): created when `create` and missing.
pub fn put_other(
    conn: &Connection,
    state: &ThreadState,
    create: bool,
    now: &str,
) -> rusqlite::Result<()> {
    let id = state.id.to_string();
    if create {
        conn.exec(
            UPSERT_OTHER,
            params![
                id,
                state_json(state)?,
                state.state.as_str(),
                state.subject,
                now
            ],
        )?;
    } else {
        conn.exec(
            UPDATE_OTHER,
            params![id, state_json(state)?, state.state.as_str(), now],
        )?;
    }
    // The participant rows carry the thread's listing order (migration 3).
    conn.exec(TOUCH_PARTICIPANTS, params![id, now])?;
    Ok(())
}

/// Keeps the participants and labels equal to `state`; the thread row must be written
/// first, participant rows copy its sort keys. `fresh`: the thread was created by this
/// envelope at `now` ([`put`] wrote `created_at = updated_at = now`) and has no rows yet.
/// The search row is written separately ([`search_row`], [`put_search`]), once per group
/// (`batch::Deferred`).
pub fn index(
    conn: &Connection,
    state: &ThreadState,
    fresh: bool,
    now: &str,
) -> rusqlite::Result<()> {
    let id = state.id.to_string();
    if !fresh {
        conn.exec(DELETE_PARTICIPANTS, [&id])?;
    }
    for (a, p) in &state.participants {
        let (identity, role, active) = (a.to_string(), p.role.as_str(), p.left_at.is_none());
        if fresh {
            conn.exec(
                INSERT_FRESH_PARTICIPANT,
                params![id, identity, role, active, now],
            )?;
        } else {
            conn.exec(INSERT_PARTICIPANT, params![id, identity, role, active])?;
        }
    }
    if !fresh {
        conn.exec(DELETE_LABELS, [&id])?;
    }
    for l in &state.labels {
        conn.exec(INSERT_LABEL, params![id, l])?;
    }
    Ok(())
}

/// The §16.6 search row of a thread: subject, labels, participants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRow {
    /// Subject.
    pub subject: String,
    /// Labels, space-separated.
    pub labels: String,
    /// Participants, space-separated.
    pub participants: String,
}

/// The search row `state` indexes as.
pub fn search_row(state: &ThreadState) -> SearchRow {
    let participants: Vec<String> = state.participants.keys().map(|a| a.to_string()).collect();
    let labels: Vec<&str> = state.labels.iter().map(String::as_str).collect();
    SearchRow {
        subject: state.subject.clone().unwrap_or_default(),
        labels: labels.join(" "),
        participants: participants.join(" "),
    }
}

/// The rowid of thread `id`'s row (its search row's key), `None` when it has none.
pub fn search_rowid(conn: &Connection, id: &ThreadId) -> rusqlite::Result<Option<i64>> {
    conn.row(SELECT_ROWID, [id.to_string()], |r| r.get(0))
        .optional()
}

/// Replaces the search row of thread `id`, keyed by its row's `rowid` ([`search_rowid`]);
/// `fresh`: it has none yet; `row` `None`: only remove it.
pub fn put_search(
    conn: &Connection,
    rowid: Option<i64>,
    id: &ThreadId,
    fresh: bool,
    row: Option<&SearchRow>,
) -> rusqlite::Result<()> {
    if !fresh {
        conn.exec(DELETE_SEARCH, [rowid])?;
    }
    if let Some(r) = row {
        conn.exec(
            INSERT_SEARCH,
            params![rowid, id.to_string(), r.subject, r.labels, r.participants],
        )?;
    }
    Ok(())
}
