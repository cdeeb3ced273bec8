//! Workflow runs (v1.1 §19.2), one row per `workflow_id`, the run as JSON.

use super::Cached;
use loom_protocol::workflow::{RunStatus, WorkflowRun};
use rusqlite::{Connection, OptionalExtension, params};

/// A new run: a second definition with the same id fails the transaction, never replaces.
const INSERT: &str =
    "INSERT INTO workflows (id, thread_id, status, run, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)";
const UPDATE: &str =
    "UPDATE workflows SET status = ?3, run = ?4, updated_at = ?5 WHERE id = ?1 AND thread_id = ?2";
const GET: &str = "SELECT run FROM workflows WHERE id = ?1";
const IN_THREAD: &str = "SELECT run FROM workflows WHERE thread_id = ?1 ORDER BY id LIMIT ?2";

fn status(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Held => "held",
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
    }
}

/// Stores `run`: defined now (`fresh`) or moved.
pub fn put(conn: &Connection, run: &WorkflowRun, fresh: bool, now: &str) -> rusqlite::Result<()> {
    let text = serde_json::to_string(run)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.exec(
        if fresh { INSERT } else { UPDATE },
        params![
            run.definition.workflow_id,
            run.thread,
            status(run.status),
            text,
            now
        ],
    )
    .map(|_| ())
}

fn parse(text: String) -> rusqlite::Result<WorkflowRun> {
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// The run `id`.
pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<WorkflowRun>> {
    conn.row(GET, params![id], |r| r.get::<_, String>(0))
        .optional()?
        .map(parse)
        .transpose()
}

/// At most `limit` runs of `thread`, by id.
pub fn in_thread(
    conn: &Connection,
    thread: &str,
    limit: usize,
) -> rusqlite::Result<Vec<WorkflowRun>> {
    let mut stmt = conn.prepare_cached(IN_THREAD)?;
    let rows = stmt.query_map(
        params![thread, i64::try_from(limit).unwrap_or(i64::MAX)],
        |r| r.get::<_, String>(0),
    )?;
    rows.map(|r| r.and_then(parse)).collect()
}
