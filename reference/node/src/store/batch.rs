//! Group transactions for the single writer: one `BEGIN IMMEDIATE … COMMIT` around many
//! envelopes, optionally a savepoint around each, so a failing envelope rolls back only its own
//! effects while the others commit together and share one WAL fsync.

use super::{envelopes, threads};
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::thread::ThreadState;
use rusqlite::Connection;
use std::collections::BTreeMap;

/// Runs `f` inside one write transaction on `conn`; commits when `f` returns `Ok`, rolls
/// back otherwise. The commit returns only once it is durable (`synchronous = FULL`).
pub fn transaction<T, E: From<rusqlite::Error>>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match f(conn) {
        Ok(v) => match conn.execute_batch("COMMIT") {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e.into())
            }
        },
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Runs `f` inside a savepoint of the current transaction: its changes stay when it returns
/// `Ok` and are undone when it returns `Err` (the outer transaction goes on). An error of
/// the savepoint statements themselves is returned as `Err(Err(..))`.
pub fn savepoint<T, E>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> rusqlite::Result<Result<T, E>> {
    conn.prepare_cached("SAVEPOINT envelope")?.execute([])?;
    let out = f(conn);
    if out.is_ok() {
        conn.prepare_cached("RELEASE envelope")?.execute([])?;
    } else {
        conn.prepare_cached("ROLLBACK TO envelope")?.execute([])?;
        conn.prepare_cached("RELEASE envelope")?.execute([])?;
    }
    Ok(out)
}

/// Search rows (§16.6) of a group, written once after its last savepoint: FTS5 flushes its
/// pending terms to a new segment whenever a savepoint opens over a written FTS5 table, so
/// writing them per envelope (inside its savepoint) would cost a segment per envelope.
/// Only envelopes whose savepoint was released reach a group's `Deferred`
/// ([`Deferred::absorb`]); the rows are written in the same transaction, before `COMMIT`.
#[derive(Debug, Default)]
pub struct Deferred {
    envelopes: Vec<EnvelopeSearch>,
    threads: BTreeMap<ThreadId, ThreadSearch>,
}

#[derive(Debug)]
struct EnvelopeSearch {
    id: EnvelopeId,
    thread: ThreadId,
    text: String,
    intent: String,
    parameters: String,
}

#[derive(Debug)]
struct ThreadSearch {
    /// The thread has no search row yet (created in this group).
    fresh: bool,
    /// The row to write; `None`: only remove the old one.
    row: Option<threads::SearchRow>,
}

impl Deferred {
    /// Queues the search row of a stored envelope.
    pub fn envelope(
        &mut self,
        id: EnvelopeId,
        thread: ThreadId,
        text: &str,
        intent: &str,
        parameters: &str,
    ) {
        self.envelopes.push(EnvelopeSearch {
            id,
            thread,
            text: text.to_owned(),
            intent: intent.to_owned(),
            parameters: parameters.to_owned(),
        });
    }

    /// Queues a thread's search row as of `state` (the last one queued for a thread wins);
    /// `fresh`: the thread was created in this group; `searchable` false: remove it only.
    pub fn thread(&mut self, state: &ThreadState, fresh: bool, searchable: bool) {
        let row = searchable.then(|| threads::search_row(state));
        self.threads
            .entry(state.id)
            .and_modify(|t| t.row = row.clone())
            .or_insert(ThreadSearch { fresh, row });
    }

    /// Takes the rows of an envelope whose savepoint was released.
    pub fn absorb(&mut self, other: Deferred) {
        self.envelopes.extend(other.envelopes);
        for (id, t) in other.threads {
            match self.threads.get_mut(&id) {
                Some(mine) => mine.row = t.row,
                None => {
                    self.threads.insert(id, t);
                }
            }
        }
    }

    /// Writes every queued row.
    pub fn flush(self, conn: &Connection) -> rusqlite::Result<()> {
        for e in &self.envelopes {
            envelopes::index(conn, &e.id, &e.thread, &e.text, &e.intent, &e.parameters)?;
        }
        for (id, t) in &self.threads {
            threads::put_search(conn, id, t.fresh, t.row.as_ref())?;
        }
        Ok(())
    }
}
