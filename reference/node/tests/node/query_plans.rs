//! Every statement on the envelope write path finds its rows through an index (issue 14):
//! `EXPLAIN QUERY PLAN` of each must not scan a table that grows with the data. A full scan
//! per envelope (the old `thread_search` delete by an UNINDEXED column) makes throughput fall
//! as the store fills.

use loom_node::Storage;
use loom_node::store::listings::{self, ThreadPage, ThreadSort};
use loom_node::store::{Store, accept, audit, envelopes, resolvers, threads};
use loom_protocol::Address;

/// Tables whose size grows with envelopes, threads or identities.
const GROWING: [&str; 15] = [
    "envelopes",
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
        threads::SELECT_ROWID,
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

/// A page of threads or events reads the page, not the caller's whole history: no full scan
/// and no temporary B-tree sorting every row of the caller (the growth benchmark's reads
/// grew tenfold over 200,000 envelopes while the listings sorted that way).
#[test]
fn a_listing_page_reads_one_index_range_in_order() {
    let store = Store::open(&Storage::Memory).unwrap();
    let caller = Address::parse("loom://alice@node.test").unwrap();
    let label_filter = Address::parse("loom://bob@node.test").unwrap();
    let mut statements = vec![
        listings::EVENTS_FOR_READER.to_owned(),
        listings::EVENTS_FOR_EVERYONE.to_owned(),
        // From the thread's envelopes, not from every envelope the reader may read
        // (migration 6 dropped the reader index by identity).
        listings::READABLE_IN_THREAD.to_owned(),
    ];
    for sort in [ThreadSort::UpdatedAt, ThreadSort::CreatedAt] {
        for desc in [true, false] {
            for after in [None, Some(("2026-01-01T00:00:00Z", "thr_x"))] {
                for (status, participant) in [(None, None), (Some("active"), Some(&label_filter))] {
                    let page = ThreadPage {
                        caller: &caller,
                        status,
                        label: None,
                        participant,
                        sort,
                        desc,
                        after,
                        limit: 51,
                        offset: 0,
                    };
                    statements.push(listings::threads_statement(&page).0);
                }
            }
        }
    }
    let mut bad = Vec::new();
    for sql in &statements {
        for line in plan(&store, sql) {
            if full_scan(&line).is_some() || line.contains("TEMP B-TREE") {
                bad.push(format!("{line}\n    in {sql}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "listings that grow with the data:\n{}",
        bad.join("\n")
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
    // The thread listing issue 14's growth benchmark found: sorted after the join.
    let lines = plan(
        &store,
        "SELECT t.id FROM threads t JOIN thread_participants p ON p.thread_id = t.id AND p.identity = ?1 AND p.active = 1 ORDER BY t.updated_at DESC, t.id DESC LIMIT 51",
    );
    assert!(lines.iter().any(|l| l.contains("TEMP B-TREE")), "{lines:?}");
    let lines = plan(&store, "SELECT 1 FROM envelopes WHERE sender = ?1");
    assert!(
        lines.iter().any(|l| full_scan(l) == Some("envelopes")),
        "{lines:?}"
    );
}
