//! Migration 3 (issue 14: fewer B-trees per envelope) rebuilds the reader, participant, label
//! and event tables: a store written at schema 2 keeps every row, and the event log goes on
//! from its last `seq`. Migration 7 moves each envelope's readers into its row.

use loom_node::Storage;
use loom_node::store::Store;
use rusqlite::Connection;

/// Writes a schema-2 store the way the node did before migration 3, with a row in every
/// table migration 3 rebuilds.
fn schema_2_store(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    let conn = Connection::open(dir.join("loom.db")).unwrap();
    conn.execute_batch(include_str!("../../src/store/schema.sql"))
        .unwrap();
    conn.execute_batch(include_str!("../../src/store/schema_2.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    conn.execute_batch(
        "INSERT INTO threads (id, state, status, created_at, updated_at) VALUES ('thr_1', '{}', 'active', 't1', 't2');
         INSERT INTO thread_participants VALUES ('thr_1', 'loom://a@x.test', 'owner', 1);
         INSERT INTO thread_labels VALUES ('thr_1', 'ops');
         INSERT INTO envelopes (id, thread_id, event_seq, type, sender, created_at, received_at, body, body_sha256)
             VALUES ('env_1', 'thr_1', 1, 'message', 'loom://a@x.test', 't', 't', '{}', 'h');
         INSERT INTO envelope_readers VALUES ('env_1', 'loom://b@x.test', 'reader');
         INSERT INTO envelope_readers VALUES ('env_1', 'loom://a@x.test', 'sender');
         INSERT INTO envelopes (id, thread_id, event_seq, type, sender, created_at, received_at, body, body_sha256)
             VALUES ('env_2', 'thr_1', 2, 'message', 'loom://a@x.test', 't', 't', '{}', 'h');
         INSERT INTO events (seq, id, type, payload, created_at) VALUES (41, 'evt_41', 'envelope.new', '{}', 't');
         INSERT INTO events (id, type, payload, created_at) VALUES ('evt_42', 'envelope.new', '{}', 't');
         INSERT INTO event_readers VALUES (41, 'loom://a@x.test');
         INSERT INTO event_readers VALUES (42, 'loom://a@x.test');",
    )
    .unwrap();
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn migration_3_keeps_every_row_and_the_event_sequence() {
    let dir = std::env::temp_dir().join(format!("loom-migrate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    schema_2_store(&dir);

    let store = Store::open(&Storage::Dir(dir.clone())).unwrap();
    assert_eq!(store.schema_version().unwrap(), 9);
    {
        let conn = store.conn();
        for (table, n) in [
            ("threads", 1),
            ("thread_participants", 1),
            ("thread_labels", 1),
            ("envelopes", 2),
            ("events", 2),
            ("event_readers", 2),
        ] {
            assert_eq!(count(&conn, table), n, "{table}");
        }
        let without_rowid: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID%' AND name NOT LIKE '%search%' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            without_rowid,
            ["event_readers", "thread_labels", "thread_participants"]
        );
        // Migration 7: the readers are in the envelope row, in string order ('[]' when an
        // envelope had none), and their table is gone.
        let readers: Vec<String> = conn
            .prepare("SELECT readers FROM envelopes ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(readers, [r#"["loom://a@x.test","loom://b@x.test"]"#, "[]"]);
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'envelope_readers'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
        let keys: (String, String) = conn
            .query_row(
                "SELECT created_at, updated_at FROM thread_participants WHERE thread_id = 'thr_1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            keys,
            ("t1".to_owned(), "t2".to_owned()),
            "participants copy the thread's sort keys"
        );
        // No AUTOINCREMENT any more, and the next event still follows the last one.
        conn.execute(
            "INSERT INTO events (id, type, payload, created_at) VALUES ('evt_43', 'envelope.new', '{}', 't')",
            [],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 43);
        let fk: Option<String> = conn
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .ok();
        assert_eq!(fk, None);
        let fk_on: i64 = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk_on, 1, "foreign keys are enforced again after migrating");
    }
    drop(store);
    // Opening again applies nothing.
    let store = Store::open(&Storage::Dir(dir.clone())).unwrap();
    assert_eq!(store.schema_version().unwrap(), 9);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
