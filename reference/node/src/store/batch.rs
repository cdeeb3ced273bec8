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
    /// `fresh`: the thread was created in this group.
    pub fn thread(&mut self, state: &ThreadState, fresh: bool) {
        let row = Some(threads::search_row(state));
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

    /// Writes every queued row, each table's in ascending rowid order. FTS5 keeps a
    /// transaction's new rows in memory while their rowids ascend; a smaller rowid first
    /// writes what it holds to a segment of its own (`sqlite3Fts5IndexBeginWrite`), which
    /// costs pages now and merge work later. Envelope rows are queued in the order their
    /// rows were inserted, so their rowids ascend; thread rows are sorted by theirs (thread
    /// ids are chosen by clients, and threads created earlier get their rows updated too).
    pub fn flush(self, conn: &Connection) -> rusqlite::Result<()> {
        for e in &self.envelopes {
            envelopes::index(conn, &e.id, &e.thread, &e.text, &e.intent, &e.parameters)?;
        }
        let mut rows = Vec::with_capacity(self.threads.len());
        for (id, t) in &self.threads {
            rows.push((threads::search_rowid(conn, id)?, id, t));
        }
        rows.sort_by_key(|(rowid, ..)| *rowid);
        for (rowid, id, t) in rows {
            threads::put_search(conn, rowid, id, t.fresh, t.row.as_ref())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Storage;
    use crate::store::Store;
    use loom_protocol::{Address, Timestamp};

    const NOW: &str = "2026-11-25T12:00:00Z";

    /// `n` thread rows whose ids descend while their rowids ascend: clients choose thread
    /// ids, so id order (the queue's) is not the order the rows were inserted in.
    fn threads_with_descending_ids(conn: &Connection, n: usize) -> Vec<ThreadState> {
        let owner = Address::parse("loom://alice@node.test").unwrap();
        let bob = Address::parse("loom://bob@node.test").unwrap();
        (0..n)
            .rev()
            .map(|i| {
                let id = ThreadId::parse(&format!("thr_01JMKB7X9Q2RVHF3KN4TYZP{i:03}")).unwrap();
                let at = Timestamp::parse(NOW).unwrap();
                let state = ThreadState::new(id, owner.clone(), std::slice::from_ref(&bob), at);
                threads::put(conn, &state, true, true, 1, NOW).unwrap();
                state
            })
            .collect()
    }

    fn data_rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM thread_search_data", [], |r| r.get(0))
            .unwrap()
    }

    /// Rows of `thread_search`'s data table (segment leaves, structure and averages
    /// records) after writing the search rows of `n` new threads in one transaction,
    /// either through [`Deferred`] or directly in the given order.
    fn pages_after(n: usize, write: impl Fn(&Connection, &[ThreadState])) -> i64 {
        let store = Store::open(&Storage::Memory).unwrap();
        let conn = store.conn();
        transaction(&conn, |c| {
            let states = threads_with_descending_ids(c, n);
            write(c, &states);
            Ok::<_, rusqlite::Error>(())
        })
        .unwrap();
        data_rows(&conn)
    }

    fn direct(c: &Connection, states: &[&ThreadState]) {
        for s in states {
            let rowid = threads::search_rowid(c, &s.id).unwrap();
            let row = threads::search_row(s);
            threads::put_search(c, rowid, &s.id, true, Some(&row)).unwrap();
        }
    }

    #[test]
    fn a_groups_thread_rows_reach_the_index_as_one_segment() {
        let n = 32;
        let through_deferred = pages_after(n, |c, states| {
            let mut d = Deferred::default();
            for s in states {
                d.thread(s, true);
            }
            d.flush(c).unwrap();
        });
        let ascending = pages_after(n, |c, states| direct(c, &states.iter().collect::<Vec<_>>()));
        // The order the queue holds them in (by thread id): each row's rowid is below the
        // last one's, and FTS5 writes a segment per row.
        let by_id = pages_after(n, |c, states| {
            direct(c, &states.iter().rev().collect::<Vec<_>>())
        });
        assert!(
            by_id > ascending,
            "{by_id} index rows by id, {ascending} by rowid"
        );
        assert_eq!(through_deferred, ascending);
    }
}
