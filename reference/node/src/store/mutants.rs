//! Writes only the conformance self-test's defects make (`crate::quirks`, feature
//! `quirks`): a real node never issues these statements.

use rusqlite::{Connection, OptionalExtension, params};

/// `merge-moves-envelopes`: every envelope of thread `from` moved into `to` (v1.1 §11.4
/// says a merge does not move envelopes).
pub(crate) fn move_envelopes(conn: &Connection, from: &str, to: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE envelopes SET thread_id = ?2, event_seq = event_seq + 1000000, body = json_set(body, '$.thread_id', ?2) WHERE thread_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// `retract-keeps-content`: the content of a retracted envelope put back (v1.1 §25.2 says
/// retraction erases it); `body` as it was before the retraction.
pub(crate) fn restore_body(conn: &Connection, id: &str, body: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE envelopes SET body = ?2, erased_at = NULL WHERE id = ?1",
        params![id, body],
    )?;
    Ok(())
}

/// `drop-outbox-on-restart`: every queued delivery deleted (v1.1 §15.6 durable retry).
pub(crate) fn drop_queued_deliveries(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM federation_outbox WHERE state = 'queued'", [])
}

/// `forget-last-envelope-on-restart`: the newest envelope a user of `domain` submitted
/// (not the node's own receipts) deleted; returns its id (v1.1 §16.1 durability).
pub(crate) fn forget_newest_local_envelope(
    conn: &Connection,
    domain: &str,
) -> rusqlite::Result<Option<String>> {
    let id: Option<String> = conn
        .query_row(
            "SELECT id FROM envelopes WHERE sender LIKE ?1 AND sender NOT LIKE 'loom://loom-node@%'
                 ORDER BY rowid DESC LIMIT 1",
            [format!("%@{domain}")],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = &id {
        conn.execute("DELETE FROM envelopes WHERE id = ?1", [id])?;
    }
    Ok(id)
}

/// `ack-before-sync`: the writer's commits stop syncing the WAL (v1.1 §4, §16.1): a
/// commit returns, and the node answers 201, before anything reached the disk for good.
pub(crate) fn skip_commit_sync(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "OFF")
}

/// `prune-audit-on-restart`: the oldest audit row deleted (v1.1 §25.1); the chain then
/// starts at a row whose `prev_hash` is not the genesis hash, and `audit::walk` reports it.
pub(crate) fn prune_oldest_audit_row(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM audit_log WHERE seq = (SELECT MIN(seq) FROM audit_log)",
        [],
    )
}
