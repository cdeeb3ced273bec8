//! Federation state (v1.1 §15): peer node documents, the LOOM-HTTP-SIG-1 nonce cache,
//! resolved remote identities, the store-and-forward outbox and quarantined deliveries.

use super::Cached;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

const NODE_DOC: &str = "SELECT document, fetched_at FROM federation_nodes WHERE node = ?1";
const PUT_NODE_DOC: &str = "INSERT INTO federation_nodes (node, document, fetched_at) VALUES (?1, ?2, ?3) ON CONFLICT(node) DO UPDATE SET document = excluded.document, fetched_at = excluded.fetched_at";
const NONCE_SEEN: &str =
    "SELECT 1 FROM federation_nonces WHERE node = ?1 AND nonce = ?2 AND seen_ms > ?3";
const RECORD_NONCE: &str = "INSERT INTO federation_nonces (node, nonce, seen_ms) VALUES (?1, ?2, ?3) ON CONFLICT(node, nonce) DO UPDATE SET seen_ms = excluded.seen_ms WHERE federation_nonces.seen_ms <= ?4";
const PURGE_NONCES: &str = "DELETE FROM federation_nonces WHERE seen_ms <= ?1";
const REMOTE_IDENTITY: &str = "SELECT type, keys, fetched_at FROM remote_identities WHERE id = ?1";
const PUT_REMOTE_IDENTITY: &str = "INSERT INTO remote_identities (id, node, type, keys, document, fetched_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(id) DO UPDATE SET node = excluded.node, type = excluded.type, keys = excluded.keys, document = excluded.document, fetched_at = excluded.fetched_at";
/// A store-and-forward queue: federation deliveries (§15.6) or outbound mail (§21.3).
/// Both have the same rows and lifecycle; only the table differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// `federation_outbox`: one row per (destination node, envelope).
    Federation,
    /// `bridge_outbox`: one row per (mail recipient, envelope).
    Mail,
}

/// One queue's statements.
#[derive(Debug)]
struct QueueSql {
    queue: String,
    depth_for: String,
    depth_all: String,
    due: String,
    next_due: String,
    mark_delivered: String,
    mark_retry: String,
    mark_failed: String,
    rows: String,
    for_envelope: String,
}

impl QueueSql {
    fn for_table(t: &str) -> Self {
        Self {
            queue: format!(
                "INSERT OR IGNORE INTO {t} (destination, envelope_id, sender, recipients, queued_at, queued_ms, next_attempt_ms, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, 'queued')"
            ),
            depth_for: format!(
                "SELECT COUNT(*) FROM {t} WHERE destination = ?1 AND state = 'queued'"
            ),
            depth_all: format!("SELECT COUNT(*) FROM {t} WHERE state = 'queued'"),
            // Per destination, first in first out: a row waits while an older row for the
            // same destination is queued and not yet due, so a thread's envelopes reach a
            // peer in the order they were queued even after retries with different back-offs
            // (a task update never arrives before the task, v1.1 §11.6, §18.3).
            due: format!(
                "SELECT id, destination, envelope_id, sender, recipients, queued_at, queued_ms, attempts, last_failure, next_attempt_ms FROM {t} o WHERE state = 'queued' AND next_attempt_ms <= ?1 AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.destination = o.destination AND p.state = 'queued' AND p.id < o.id AND p.next_attempt_ms > ?1) ORDER BY destination, id LIMIT ?2"
            ),
            // The earliest time a row can go: a destination's oldest queued row goes first
            // (`due`), so only those rows' times count (a younger row already past its time
            // but held behind an older one must not make the worker spin).
            next_due: format!(
                "SELECT MIN(next_attempt_ms) FROM {t} o WHERE state = 'queued' AND NOT EXISTS (SELECT 1 FROM {t} p WHERE p.destination = o.destination AND p.state = 'queued' AND p.id < o.id)"
            ),
            mark_delivered: format!(
                "UPDATE {t} SET state = 'delivered', attempts = attempts + 1, done_at = ?2, last_failure = NULL WHERE id = ?1"
            ),
            mark_retry: format!(
                "UPDATE {t} SET attempts = ?2, last_failure = ?3, next_attempt_ms = ?4 WHERE id = ?1"
            ),
            mark_failed: format!(
                "UPDATE {t} SET state = 'failed', attempts = ?2, last_failure = ?3, reason = ?4, done_at = ?5 WHERE id = ?1"
            ),
            rows: format!(
                "SELECT destination, envelope_id, state, attempts, last_failure, reason FROM {t} ORDER BY id"
            ),
            for_envelope: format!(
                "SELECT id, destination, envelope_id, sender, recipients, queued_at, queued_ms, attempts, last_failure, next_attempt_ms, state FROM {t} WHERE envelope_id = ?1 ORDER BY id"
            ),
        }
    }
}

impl Queue {
    fn sql(self) -> &'static QueueSql {
        static FEDERATION: std::sync::LazyLock<QueueSql> =
            std::sync::LazyLock::new(|| QueueSql::for_table("federation_outbox"));
        static MAIL: std::sync::LazyLock<QueueSql> =
            std::sync::LazyLock::new(|| QueueSql::for_table("bridge_outbox"));
        match self {
            Queue::Federation => &FEDERATION,
            Queue::Mail => &MAIL,
        }
    }
}

const QUARANTINE: &str = "INSERT OR IGNORE INTO federation_quarantine (envelope_id, node, envelope, received_at) VALUES (?1, ?2, ?3, ?4)";
const SIGNED_HASH: &str = "SELECT body_sha256 FROM envelopes WHERE id = ?1";

/// A peer's stored node document and when it was fetched.
pub fn node_document(conn: &Connection, node: &str) -> rusqlite::Result<Option<(Value, String)>> {
    let row: Option<(String, String)> = conn
        .row(NODE_DOC, [node], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(row.and_then(|(doc, at)| serde_json::from_str(&doc).ok().map(|d| (d, at))))
}

/// Stores (or replaces) a peer's node document.
pub fn put_node_document(
    conn: &Connection,
    node: &str,
    doc: &Value,
    at: &str,
) -> rusqlite::Result<()> {
    conn.exec(PUT_NODE_DOC, params![node, doc.to_string(), at])?;
    Ok(())
}

/// Whether `(node, nonce)` was recorded after `cutoff_ms`.
pub fn nonce_seen(
    conn: &Connection,
    node: &str,
    nonce: &str,
    cutoff_ms: i64,
) -> rusqlite::Result<bool> {
    Ok(conn
        .row(NONCE_SEEN, params![node, nonce, cutoff_ms], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Records `(node, nonce)` at `now_ms`; false when it is already recorded after
/// `cutoff_ms` (a replay that raced this one).
pub fn record_nonce(
    conn: &Connection,
    node: &str,
    nonce: &str,
    now_ms: i64,
    cutoff_ms: i64,
) -> rusqlite::Result<bool> {
    Ok(conn.exec(RECORD_NONCE, params![node, nonce, now_ms, cutoff_ms])? == 1)
}

/// Forgets nonces recorded at or before `cutoff_ms`; the number removed.
pub fn purge_nonces(conn: &Connection, cutoff_ms: i64) -> rusqlite::Result<usize> {
    conn.exec(PURGE_NONCES, [cutoff_ms])
}

/// A retired signing key as stored: `(key_id, base64url, retired_at)`.
pub type RetiredRemoteKey = (String, String, Option<String>);

/// A resolved remote identity: its type, active keys `(key_id, base64url)` and the keys its
/// document keeps as `retired` (v1.0 §7.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteIdentity {
    /// `type` as its home node published it.
    pub kind: Option<String>,
    /// Active signing keys.
    pub keys: Vec<(String, String)>,
    /// Retired signing keys `(key_id, base64url, retired_at)`, for historical envelopes.
    pub retired: Vec<RetiredRemoteKey>,
    /// When it was fetched.
    pub fetched_at: String,
}

impl RemoteIdentity {
    /// Whether `key_id` is among its keys, active or retired.
    pub fn lists_key(&self, key_id: &str) -> bool {
        self.keys.iter().any(|(k, _)| k == key_id)
            || self.retired.iter().any(|(k, _, _)| k == key_id)
    }
}

/// The `keys` column: `{"active": [[key_id, key]…], "retired": [[key_id, key, retired_at]…]}`;
/// rows written before retired keys were kept hold the bare active array.
fn decode_keys(text: &str) -> (Vec<(String, String)>, Vec<RetiredRemoteKey>) {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return (Vec::new(), Vec::new());
    };
    let active = |v: Option<&Value>| -> Vec<(String, String)> {
        v.cloned()
            .and_then(|a| serde_json::from_value(a).ok())
            .unwrap_or_default()
    };
    match &v {
        Value::Array(_) => (active(Some(&v)), Vec::new()),
        _ => (
            active(v.get("active")),
            v.get("retired")
                .cloned()
                .and_then(|a| serde_json::from_value(a).ok())
                .unwrap_or_default(),
        ),
    }
}

/// A remote identity as resolved earlier.
pub fn remote_identity(conn: &Connection, id: &str) -> rusqlite::Result<Option<RemoteIdentity>> {
    let row: Option<(Option<String>, String, String)> = conn
        .row(REMOTE_IDENTITY, [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    Ok(row.map(|(kind, keys, fetched_at)| {
        let (keys, retired) = decode_keys(&keys);
        RemoteIdentity {
            kind,
            keys,
            retired,
            fetched_at,
        }
    }))
}

/// Stores a verified remote identity.
pub fn put_remote_identity(
    conn: &Connection,
    id: &str,
    node: &str,
    ident: &RemoteIdentity,
    document: &Value,
) -> rusqlite::Result<()> {
    let keys = serde_json::json!({"active": ident.keys, "retired": ident.retired}).to_string();
    conn.exec(
        PUT_REMOTE_IDENTITY,
        params![
            id,
            node,
            ident.kind,
            keys,
            document.to_string(),
            ident.fetched_at
        ],
    )?;
    Ok(())
}

/// A new outbox item.
#[derive(Debug)]
pub struct NewOutboxItem<'a> {
    /// Destination node.
    pub destination: &'a str,
    /// The envelope.
    pub envelope_id: &'a str,
    /// Its local sender.
    pub sender: &'a str,
    /// The recipients hosted by the destination.
    pub recipients: &'a [String],
    /// When it was queued (RFC 3339) and the same in ms.
    pub queued_at: &'a str,
    /// `queued_at` in Unix ms (also the first attempt's time).
    pub queued_ms: i64,
}

/// Queues an item (a second row for the same destination and envelope is ignored).
pub fn queue(conn: &Connection, q: Queue, item: &NewOutboxItem<'_>) -> rusqlite::Result<()> {
    let recipients = serde_json::to_string(item.recipients).unwrap_or_else(|_| "[]".into());
    conn.exec(
        &q.sql().queue,
        params![
            item.destination,
            item.envelope_id,
            item.sender,
            recipients,
            item.queued_at,
            item.queued_ms
        ],
    )?;
    Ok(())
}

/// Queued items for `destination` and in all.
pub fn depth(conn: &Connection, q: Queue, destination: &str) -> rusqlite::Result<(usize, usize)> {
    let n = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> rusqlite::Result<usize> {
        let v: i64 = conn.row(sql, p, |r| r.get(0))?;
        Ok(usize::try_from(v).unwrap_or(0))
    };
    Ok((
        n(&q.sql().depth_for, &[&destination])?,
        n(&q.sql().depth_all, &[])?,
    ))
}

/// A queued outbox item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxItem {
    /// Row id.
    pub id: i64,
    /// Destination node.
    pub destination: String,
    /// The envelope.
    pub envelope_id: String,
    /// Its local sender.
    pub sender: String,
    /// The recipients on the destination.
    pub recipients: Vec<String>,
    /// When it was queued.
    pub queued_at: String,
    /// The same in Unix ms.
    pub queued_ms: i64,
    /// Failed attempts so far.
    pub attempts: u32,
    /// The last failure (`unreachable`, `timeout`, `http:<status>`, `receipt`).
    pub last_failure: Option<String>,
    /// When the next attempt is due.
    pub next_attempt_ms: i64,
}

fn item(r: &rusqlite::Row<'_>) -> rusqlite::Result<OutboxItem> {
    let recipients: String = r.get(4)?;
    Ok(OutboxItem {
        id: r.get(0)?,
        destination: r.get(1)?,
        envelope_id: r.get(2)?,
        sender: r.get(3)?,
        recipients: serde_json::from_str(&recipients).unwrap_or_default(),
        queued_at: r.get(5)?,
        queued_ms: r.get(6)?,
        attempts: u32::try_from(r.get::<_, i64>(7)?).unwrap_or(u32::MAX),
        last_failure: r.get(8)?,
        next_attempt_ms: r.get(9)?,
    })
}

/// Items due at `now_ms`, by destination then queue order, at most `limit`.
pub fn due(
    conn: &Connection,
    q: Queue,
    now_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<OutboxItem>> {
    let mut stmt = conn.prepare_cached(&q.sql().due)?;
    let rows = stmt.query_map(
        params![now_ms, i64::try_from(limit).unwrap_or(i64::MAX)],
        item,
    )?;
    rows.collect()
}

/// Every item of `envelope_id`, whatever its state, with the state.
pub fn items_for(
    conn: &Connection,
    q: Queue,
    envelope_id: &str,
) -> rusqlite::Result<Vec<(OutboxItem, String)>> {
    let mut stmt = conn.prepare_cached(&q.sql().for_envelope)?;
    let rows = stmt.query_map([envelope_id], |r| Ok((item(r)?, r.get(10)?)))?;
    rows.collect()
}

/// The earliest `next_attempt_ms` of a queued item.
pub fn next_due(conn: &Connection, q: Queue) -> rusqlite::Result<Option<i64>> {
    conn.row(&q.sql().next_due, [], |r| r.get(0))
}

/// Marks an item delivered.
pub fn mark_delivered(conn: &Connection, q: Queue, id: i64, at: &str) -> rusqlite::Result<()> {
    conn.exec(&q.sql().mark_delivered, params![id, at])?;
    Ok(())
}

/// Records a failed attempt and when to try again.
pub fn mark_retry(
    conn: &Connection,
    q: Queue,
    id: i64,
    attempts: u32,
    failure: &str,
    next_ms: i64,
) -> rusqlite::Result<()> {
    conn.exec(&q.sql().mark_retry, params![id, attempts, failure, next_ms])?;
    Ok(())
}

/// Marks an item failed for good with a §24.2 `reason`.
pub fn mark_failed(
    conn: &Connection,
    q: Queue,
    id: i64,
    attempts: u32,
    failure: &str,
    reason: &str,
    at: &str,
) -> rusqlite::Result<()> {
    conn.exec(
        &q.sql().mark_failed,
        params![id, attempts, failure, reason, at],
    )?;
    Ok(())
}

/// One outbox row as tests and operators see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// Destination node.
    pub destination: String,
    /// The envelope.
    pub envelope_id: String,
    /// `queued`, `delivered` or `failed`.
    pub state: String,
    /// Attempts made.
    pub attempts: u32,
    /// The last failure.
    pub last_failure: Option<String>,
    /// The §24.2 reason of a failed item.
    pub reason: Option<String>,
}

/// Every outbox row in queue order.
pub fn outbox(conn: &Connection, q: Queue) -> rusqlite::Result<Vec<OutboxRow>> {
    let mut stmt = conn.prepare_cached(&q.sql().rows)?;
    let rows = stmt.query_map([], |r| {
        Ok(OutboxRow {
            destination: r.get(0)?,
            envelope_id: r.get(1)?,
            state: r.get(2)?,
            attempts: u32::try_from(r.get::<_, i64>(3)?).unwrap_or(u32::MAX),
            last_failure: r.get(4)?,
            reason: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// Holds a delivered envelope in quarantine (§23.1).
pub fn quarantine(
    conn: &Connection,
    envelope_id: &str,
    node: &str,
    envelope: &Value,
    at: &str,
) -> rusqlite::Result<bool> {
    Ok(conn.exec(
        QUARANTINE,
        params![envelope_id, node, envelope.to_string(), at],
    )? == 1)
}

/// The hex SHA-256 of a stored envelope's signed form, if it is stored.
pub fn signed_hash(conn: &Connection, id: &str) -> rusqlite::Result<Option<String>> {
    conn.row(SIGNED_HASH, [id], |r| r.get(0)).optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per destination, first in first out: a younger row whose own time has come waits for
    /// an older one still backing off, and the worker's next wake-up is the older row's time
    /// (not the younger's, which would make it spin).
    #[test]
    fn a_destination_s_rows_go_in_queue_order_after_retries() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE federation_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, destination TEXT NOT NULL, envelope_id TEXT NOT NULL, sender TEXT NOT NULL, recipients TEXT NOT NULL, queued_at TEXT NOT NULL, queued_ms INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, last_failure TEXT, next_attempt_ms INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT, done_at TEXT, UNIQUE (destination, envelope_id));",
        )
        .unwrap();
        let q = Queue::Federation;
        for (dest, env) in [
            ("b.test", "env_1"),
            ("b.test", "env_2"),
            ("c.test", "env_3"),
        ] {
            queue(
                &conn,
                q,
                &NewOutboxItem {
                    destination: dest,
                    envelope_id: env,
                    sender: "loom://alice@a.test",
                    recipients: &[],
                    queued_at: "2026-03-01T12:00:00Z",
                    queued_ms: 0,
                },
            )
            .unwrap();
        }
        let ids = |now| -> Vec<String> {
            due(&conn, q, now, 10)
                .unwrap()
                .into_iter()
                .map(|i| i.envelope_id)
                .collect()
        };
        assert_eq!(ids(0), ["env_1", "env_2", "env_3"]);
        // Both b.test rows failed; the older backs off longer than the younger.
        let rows = due(&conn, q, 0, 10).unwrap();
        mark_retry(&conn, q, rows[0].id, 1, "unreachable", 1000).unwrap();
        mark_retry(&conn, q, rows[1].id, 1, "unreachable", 10).unwrap();
        mark_retry(&conn, q, rows[2].id, 1, "unreachable", 500).unwrap();
        assert_eq!(ids(20), Vec::<String>::new(), "env_2 waits for env_1");
        assert_eq!(next_due(&conn, q).unwrap(), Some(500));
        assert_eq!(ids(500), ["env_3"]);
        mark_delivered(&conn, q, rows[2].id, "t").unwrap();
        assert_eq!(next_due(&conn, q).unwrap(), Some(1000));
        assert_eq!(ids(1000), ["env_1", "env_2"], "in queue order, one batch");
        mark_delivered(&conn, q, rows[0].id, "t").unwrap();
        assert_eq!(next_due(&conn, q).unwrap(), Some(10));
        assert_eq!(ids(1000), ["env_2"]);
    }
}
