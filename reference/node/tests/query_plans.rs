//! Every statement on the envelope write path finds its rows through an index (issue 14):
//! `EXPLAIN QUERY PLAN` of each must not scan a table that grows with the data. A full scan
//! per envelope (the old `thread_search` delete by an UNINDEXED column) makes throughput fall
//! as the store fills.

use loom_node::Storage;
use loom_node::store::{Store, accept, audit, envelopes, resolvers, threads};

/// Tables whose size grows with envelopes, threads or identities.
const GROWING: [&str; 16] = [
    "envelopes",
    "envelope_readers",
    "envelope_search",
    "threads",
    "thread_participants",
    "thread_labels",
    "thread_search",
    "events",
    "event_readers",
    "audit_log",
    "tasks",
    "capabilities",
    "delegations",
    "delegation_revocations",
    "identities",
    "identity_keys",
];

fn plan(store: &Store, sql: &str) -> Vec<String> {
    let conn = store.conn();
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
    stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A plan line that reads every row of a growing table. FTS5 tables report `VIRTUAL TABLE
/// INDEX n:` with an empty constraint string for a full scan; a rowid lookup has one.
fn full_scan(line: &str) -> Option<&'static str> {
    let rest = line.strip_prefix("SCAN ")?;
    let table = GROWING.iter().find(|t| {
        rest == **t || rest.starts_with(&format!("{t} ")) || rest.starts_with(&format!("{t}\t"))
    })?;
    let virtual_lookup = rest
        .split_once("VIRTUAL TABLE INDEX ")
        .is_some_and(|(_, idx)| idx.split_once(':').is_some_and(|(_, c)| !c.is_empty()));
    (!virtual_lookup && !rest.contains("USING INDEX") && !rest.contains("USING COVERING INDEX"))
        .then_some(*table)
}

#[test]
fn no_write_path_statement_scans_a_growing_table() {
    let store = Store::open(&Storage::Memory).unwrap();
    let statements = [
        envelopes::EXISTS,
        envelopes::SELECT_BODY,
        envelopes::DELETE_SEARCH,
        envelopes::INSERT_SEARCH,
        envelopes::SELECT_FOR_READ,
        envelopes::SELECT_FOR_RETRACT,
        envelopes::ERASE,
        envelopes::MARK_RETRACTED,
        threads::SELECT_RUNTIME,
        threads::SELECT_DAG,
        threads::SELECT_STATE,
        threads::UPDATE_STATE,
        threads::UPDATE_COUNTERS,
        threads::UPDATE_OTHER,
        threads::DELETE_PARTICIPANTS,
        threads::INSERT_PARTICIPANT,
        threads::TOUCH_PARTICIPANTS,
        threads::DELETE_LABELS,
        threads::DELETE_SEARCH,
        threads::INSERT_SEARCH,
        accept::SPEND_CAPABILITY,
        accept::REVOKE_CAPABILITY,
        accept::CAPABILITY_HOLDER,
        accept::REVOKE_DELEGATION,
        accept::SELECT_TASK,
        accept::UPDATE_TASK,
        audit::SELECT_HEAD,
        resolvers::ACTIVE_SIGNING_KEY,
        resolvers::IDENTITY_TYPE,
        resolvers::SIGNING_KEYS,
        resolvers::LINK_REVOKED_BY_CONTENT,
        resolvers::LINK_REVOKED_BY_ID,
        resolvers::PAIR_REVOKED,
        resolvers::CAPABILITY_REVOKED,
        resolvers::CAPABILITY_SPENT,
    ];
    let mut scans = Vec::new();
    for sql in statements {
        for line in plan(&store, sql) {
            if let Some(table) = full_scan(&line) {
                scans.push(format!("{table}: {line}\n    in {sql}"));
            }
        }
    }
    assert!(
        scans.is_empty(),
        "full scans on the write path:\n{}",
        scans.join("\n")
    );
}

#[test]
fn the_check_sees_a_full_scan() {
    // The statement migration 2 replaced: deleting by an UNINDEXED FTS5 column.
    let store = Store::open(&Storage::Memory).unwrap();
    let lines = plan(&store, "DELETE FROM thread_search WHERE thread_id = ?1");
    assert!(
        lines.iter().any(|l| full_scan(l) == Some("thread_search")),
        "{lines:?}"
    );
    let lines = plan(&store, "SELECT 1 FROM envelopes WHERE sender = ?1");
    assert!(
        lines.iter().any(|l| full_scan(l) == Some("envelopes")),
        "{lines:?}"
    );
}
