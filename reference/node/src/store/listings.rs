//! The read side of threads and events (v1.1 §16.2, §16.8): the thread row as the §10.1
//! object shows it, a caller's threads with filters, sorting and pagination, and the event
//! log as one reader catches up on it. Statements only; the service applies the audience
//! rules to what they return.

use super::{Cached, Connection, StoreResult};
use loom_protocol::Address;
use loom_protocol::id::{EventId, ThreadId};
use rusqlite::{OptionalExtension, params};

const THREAD_ROW: &str = "SELECT created_at, updated_at, envelope_count, last_event_seq, (SELECT id FROM envelopes WHERE thread_id = ?1 AND parent_id IS NULL ORDER BY event_seq LIMIT 1) FROM threads WHERE id = ?1";
/// Whether any envelope of a thread records a reader (found from the thread).
pub const READABLE_IN_THREAD: &str = "SELECT EXISTS (SELECT 1 FROM envelopes e, json_each(e.readers) r WHERE e.thread_id = ?1 AND r.value = ?2)";
const EVENT_SEQ: &str = "SELECT seq FROM events WHERE id = ?1";
const EVENT_SEQ_FOR_READER: &str = "SELECT e.seq FROM events e JOIN event_readers r ON r.event_seq = e.seq AND r.identity = ?2 WHERE e.id = ?1";
/// A page of the caller's events: one range of `event_readers`' primary key (identity,
/// event_seq), read in order, so the cost is the page, not the caller's history (issue 14).
pub const EVENTS_FOR_READER: &str = "SELECT e.seq, e.id, e.type, e.thread_id, e.envelope_id, e.payload, e.created_at FROM event_readers r \
     JOIN events e ON e.seq = r.event_seq \
     WHERE r.identity = ?1 AND r.event_seq > ?2 ORDER BY r.event_seq LIMIT ?3";
/// A page of every event (the `ignore_event_audience` deviation).
pub const EVENTS_FOR_EVERYONE: &str = "SELECT e.seq, e.id, e.type, e.thread_id, e.envelope_id, e.payload, e.created_at FROM events e \
     WHERE ?1 IS NOT NULL AND e.seq > ?2 ORDER BY e.seq LIMIT ?3";

/// The counters and root of a stored thread (§10.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRow {
    /// Thread id as stored.
    pub id: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Envelopes in the thread.
    pub envelope_count: i64,
    /// Last `meta.event_seq`.
    pub last_event_seq: i64,
    /// The first root envelope (only [`thread_row`] reads it).
    pub root: Option<String>,
}

/// The row of thread `id`.
pub fn thread_row(conn: &Connection, id: &ThreadId) -> StoreResult<Option<ThreadRow>> {
    conn.row(THREAD_ROW, [id.to_string()], |r| {
        Ok(ThreadRow {
            id: id.to_string(),
            created_at: r.get(0)?,
            updated_at: r.get(1)?,
            envelope_count: r.get(2)?,
            last_event_seq: r.get(3)?,
            root: r.get(4)?,
        })
    })
    .optional()
}

/// Whether `who` is a recorded reader of any envelope of `thread` (a bcc recipient or
/// custom-audience reader who is no participant).
pub fn reads_in_thread(conn: &Connection, thread: &ThreadId, who: &Address) -> StoreResult<bool> {
    conn.row(
        READABLE_IN_THREAD,
        params![thread.to_string(), who.to_string()],
        |r| r.get(0),
    )
}

/// The order of a thread listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadSort {
    /// By last change.
    UpdatedAt,
    /// By creation.
    CreatedAt,
}

impl ThreadSort {
    fn column(self) -> &'static str {
        match self {
            ThreadSort::UpdatedAt => "updated_at",
            ThreadSort::CreatedAt => "created_at",
        }
    }
}

/// One page request of a caller's threads (`GET /v1/threads`, §16.2).
#[derive(Debug, Clone)]
pub struct ThreadPage<'a> {
    /// The caller (only threads it actively participates in).
    pub caller: &'a Address,
    /// Only this status.
    pub status: Option<&'a str>,
    /// Only threads with this label.
    pub label: Option<&'a str>,
    /// Only threads this identity also actively participates in.
    pub participant: Option<&'a Address>,
    /// Sort key.
    pub sort: ThreadSort,
    /// Descending.
    pub desc: bool,
    /// After this `(sort key, id)` (cursor pagination).
    pub after: Option<(&'a str, &'a str)>,
    /// Rows to return.
    pub limit: usize,
    /// Rows to skip.
    pub offset: usize,
}

/// A listed thread: its row and the value of the sort key (for the next cursor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedThread {
    /// The row (without root).
    pub row: ThreadRow,
    /// The sort key's value.
    pub key: String,
}

/// The statement and arguments of a page of the caller's threads. It walks the caller's
/// participant rows in the sort order of `thread_participants_by_{updated,created}`
/// (identity, active, sort key, thread id; the rows carry their thread's sort keys,
/// migration 3), so a page costs its own rows however many threads the caller has (issue
/// 14: no sort of the caller's whole list in a temporary B-tree).
pub fn threads_statement(p: &ThreadPage<'_>) -> (String, Vec<String>) {
    let sort = p.sort.column();
    let (cmp, dir) = if p.desc { ("<", "DESC") } else { (">", "ASC") };
    let mut sql = format!(
        "SELECT t.id, t.created_at, t.updated_at, t.envelope_count, t.last_event_seq, p.{sort} FROM thread_participants p \
         JOIN threads t ON t.id = p.thread_id WHERE p.identity = ?1 AND p.active = 1"
    );
    let mut args: Vec<String> = vec![p.caller.to_string()];
    if let Some(s) = p.status {
        args.push(s.to_owned());
        sql += &format!(" AND t.status = ?{}", args.len());
    }
    if let Some(l) = p.label {
        args.push(l.to_owned());
        sql += &format!(
            " AND EXISTS (SELECT 1 FROM thread_labels l WHERE l.thread_id = t.id AND l.label = ?{})",
            args.len()
        );
    }
    if let Some(a) = p.participant {
        args.push(a.to_string());
        sql += &format!(
            " AND EXISTS (SELECT 1 FROM thread_participants q WHERE q.thread_id = t.id AND q.identity = ?{} AND q.active = 1)",
            args.len()
        );
    }
    if let Some((k, id)) = p.after {
        args.push(k.to_owned());
        args.push(id.to_owned());
        sql += &format!(
            " AND (p.{sort}, p.thread_id) {cmp} (?{}, ?{})",
            args.len() - 1,
            args.len()
        );
    }
    sql += &format!(
        " ORDER BY p.{sort} {dir}, p.thread_id {dir} LIMIT {} OFFSET {}",
        p.limit, p.offset
    );
    (sql, args)
}

/// A page of the caller's threads ([`threads_statement`]).
pub fn threads(conn: &Connection, p: &ThreadPage<'_>) -> StoreResult<Vec<ListedThread>> {
    let (sql, args) = threads_statement(p);
    // Not cached: the page bounds are part of the text.
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), |r| {
        Ok(ListedThread {
            row: ThreadRow {
                id: r.get(0)?,
                created_at: r.get(1)?,
                updated_at: r.get(2)?,
                envelope_count: r.get(3)?,
                last_event_seq: r.get(4)?,
                root: None,
            },
            key: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// Position in the node's total order (the cursor).
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
}

/// Whose events a catch-up returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventAudience<'a> {
    /// Only events listing this identity among their readers (§8.3).
    ReadableBy(&'a Address),
    /// Every event (a self-test deviation; the identity is still required).
    Everyone(&'a Address),
}

/// The position of event `id` if `reader` may see it.
pub fn event_seq_for(
    conn: &Connection,
    id: &EventId,
    reader: &Address,
) -> StoreResult<Option<i64>> {
    conn.row(
        EVENT_SEQ_FOR_READER,
        params![id.to_string(), reader.to_string()],
        |r| r.get(0),
    )
    .optional()
}

/// The position of event `id`, whoever may see it (the `ignore_event_audience` deviation).
pub fn event_seq_any(conn: &Connection, id: &EventId) -> StoreResult<Option<i64>> {
    conn.row(EVENT_SEQ, params![id.to_string()], |r| r.get(0))
        .optional()
}

/// At most `limit` events after position `after`, in order.
pub fn events_after(
    conn: &Connection,
    audience: EventAudience<'_>,
    after: i64,
    limit: usize,
) -> StoreResult<Vec<EventRow>> {
    let (sql, who) = match audience {
        EventAudience::ReadableBy(a) => (EVENTS_FOR_READER, a),
        EventAudience::Everyone(a) => (EVENTS_FOR_EVERYONE, a),
    };
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(
        params![
            who.to_string(),
            after,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
        |r| {
            Ok(EventRow {
                seq: r.get(0)?,
                id: r.get(1)?,
                kind: r.get(2)?,
                thread: r.get(3)?,
                envelope: r.get(4)?,
                payload: r.get(5)?,
                created_at: r.get(6)?,
            })
        },
    )?;
    rows.collect()
}
