//! Full-text search (v1.1 §16.6) over the FTS5 indexes the envelope path keeps
//! (`envelope_search`, `thread_search`): only rows the caller is a recorded reader or
//! active participant of. User text arrives as [`Terms`], which quotes every term, so no
//! input is ever FTS5 syntax; the service applies the audience rule to each envelope.

use super::{Connection, StoreResult};
use loom_protocol::Address;
use loom_protocol::id::ThreadId;
use loom_protocol::thread::ThreadState;
use rusqlite::params;

/// User search terms in FTS5's query form: each term an FTS5 string (quoted, internal `"`
/// doubled), the terms AND-ed. Whatever the user typed, the result cannot be an FTS5
/// syntax error nor an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms(String);

impl Terms {
    /// The query for `terms`; `None` when there are none.
    pub fn of(terms: &[&str]) -> Option<Terms> {
        (!terms.is_empty()).then(|| {
            Terms(
                terms
                    .iter()
                    .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        })
    }

    /// The FTS5 query text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What to look for.
#[derive(Debug, Clone, Copy)]
pub struct SearchQuery<'a> {
    /// The caller.
    pub caller: &'a Address,
    /// Full-text terms.
    pub text: Option<&'a Terms>,
    /// Exact structured intent (envelopes only).
    pub intent: Option<&'a str>,
    /// Only this thread.
    pub thread: Option<&'a ThreadId>,
}

/// The caller's threads matching `text` with their stored states, best match first (bm25,
/// ties by id). The state comes with the row, so a page costs the same whether or not the
/// threads are still in the thread cache.
pub fn threads(
    conn: &Connection,
    caller: &Address,
    text: &Terms,
    thread: Option<&ThreadId>,
    limit: usize,
) -> StoreResult<Vec<(String, ThreadState)>> {
    let mut sql = String::from(
        "SELECT s.thread_id, t.state FROM thread_search s \
         JOIN thread_participants p ON p.thread_id = s.thread_id AND p.identity = ?2 AND p.active = 1 \
         JOIN threads t ON t.id = s.thread_id \
         WHERE thread_search MATCH ?1",
    );
    if thread.is_some() {
        sql += " AND s.thread_id = ?3";
    }
    sql += &format!(" ORDER BY bm25(thread_search), s.thread_id LIMIT {limit}");
    let mut stmt = conn.prepare(&sql)?;
    let me = caller.to_string();
    let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, ThreadState)> {
        let state: String = r.get(1)?;
        Ok((r.get(0)?, super::threads::state_from_json(&state)?))
    };
    match thread {
        Some(t) => stmt
            .query_map(params![text.as_str(), me, t.to_string()], row)?
            .collect(),
        None => stmt.query_map(params![text.as_str(), me], row)?.collect(),
    }
}

/// Whether the caller (`?1`) is an active participant of envelope `e`'s thread: its
/// participant rows are the thread state's (`threads::index`), so this is
/// `ThreadState::is_active_participant` without loading the state.
const CALLER_IS_MEMBER: &str = "EXISTS (SELECT 1 FROM thread_participants p WHERE p.thread_id = e.thread_id AND p.identity = ?1 AND p.active = 1)";

/// Visits the caller's matching envelopes that are not erased, best match first (bm25,
/// then thread and `event_seq`; without text by thread and `event_seq`): `visit` gets each
/// body and whether the caller is an active participant of its thread (the §8.3 audience
/// check needs nothing else of the thread), and says whether to keep going.
pub fn envelopes<E: From<rusqlite::Error>>(
    conn: &Connection,
    q: &SearchQuery<'_>,
    mut visit: impl FnMut(&str, bool) -> Result<bool, E>,
) -> Result<(), E> {
    let mut args: Vec<String> = vec![q.caller.to_string()];
    let mut sql = format!(
        "SELECT e.body, {CALLER_IS_MEMBER} FROM envelope_search s JOIN envelopes e ON e.id = s.envelope_id \
         WHERE e.body IS NOT NULL AND (\
           EXISTS (SELECT 1 FROM json_each(e.readers) r WHERE r.value = ?1) \
           OR {CALLER_IS_MEMBER})",
    );
    if let Some(text) = q.text {
        args.push(text.as_str().to_owned());
        sql += &format!(" AND envelope_search MATCH ?{}", args.len());
    }
    if let Some(intent) = q.intent {
        args.push(intent.to_owned());
        sql += &format!(" AND e.intent = ?{}", args.len());
    }
    if let Some(t) = q.thread {
        args.push(t.to_string());
        sql += &format!(" AND e.thread_id = ?{}", args.len());
    }
    sql += if q.text.is_some() {
        " ORDER BY bm25(envelope_search), e.thread_id, e.event_seq"
    } else {
        " ORDER BY e.thread_id, e.event_seq"
    };
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    // Quoted terms cannot be FTS5 syntax errors; any error here is the node's.
    while let Some(row) = rows.next()? {
        let (body, member): (String, bool) = (row.get(0)?, row.get(1)?);
        if !visit(&body, member)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Terms;

    #[test]
    fn every_term_is_one_quoted_string() {
        assert_eq!(Terms::of(&[]), None);
        let t = Terms::of(&["alpha", "NOT", "a\"b", "c*", "x:y"]).unwrap();
        assert_eq!(t.as_str(), r#""alpha" "NOT" "a""b" "c*" "x:y""#);
    }

    #[test]
    fn no_input_is_fts5_syntax() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE f USING fts5(body); INSERT INTO f VALUES ('a NOT b'), ('x\"y');",
        )
        .unwrap();
        for input in [
            &["NOT"][..],
            &["\""],
            &["a", "OR", "("],
            &["*"],
            &["x\"y"],
            &["body:a"],
        ] {
            let q = Terms::of(input).unwrap();
            let n: rusqlite::Result<i64> = conn.query_row(
                "SELECT COUNT(*) FROM f WHERE f MATCH ?1",
                [q.as_str()],
                |r| r.get(0),
            );
            assert!(n.is_ok(), "{input:?} -> {} -> {n:?}", q.as_str());
        }
    }
}
