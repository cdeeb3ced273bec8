//! The anchored §25.1 audit chain (issue 19): a signed checkpoint beside the store and a
//! high-water mark let `audit verify` see what a hash chain alone cannot — rows cut from its
//! end, a rewritten log — as well as reordered and edited rows, envelopes without their
//! audit row, and it never hands out a deleted row's sequence number again.

use crate::support::TestNode;
use loom_node::Storage;
use loom_node::store::Store;
use loom_node::store::audit::{self, AuditVerdict, CHECKPOINT_FILE, Checkpoint};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_loom-node");

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("loom-anchor-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A durable store with a few dozen audit rows (registrations, logins, envelopes) and a
/// checkpoint signed over its head; returns the number of rows.
async fn anchored_store(dir: &Path) -> i64 {
    let n = TestNode::with(|c| c.storage = Storage::Dir(dir.to_owned()));
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    for i in 0..5 {
        let t = n.thread_id();
        let env = alice.message(&n, &t, None, &[&bob], &format!("hello {i}"));
        alice.send(&n, env).await.expect(201);
    }
    let cp = n.node.service().audit_checkpoint().unwrap().unwrap();
    assert_eq!(cp.rows, cp.seq);
    // Nothing changed: no new checkpoint is written.
    assert!(n.node.service().audit_checkpoint().unwrap().is_none());
    cp.rows
}

fn check(dir: &Path) -> AuditVerdict {
    let store = Store::open_existing(dir).unwrap();
    match Checkpoint::read(dir).unwrap() {
        Some(cp) => audit::verify_anchored(&store.conn(), &cp).unwrap(),
        None => audit::verify(&store.conn()).unwrap(),
    }
}

fn sql(dir: &Path, statements: &str) {
    Connection::open(dir.join("loom.db"))
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

fn broken(v: AuditVerdict) -> (i64, String) {
    match v {
        AuditVerdict::Broken { seq, reason } => (seq, reason),
        AuditVerdict::Intact { rows } => panic!("expected a broken log, got intact ({rows} rows)"),
    }
}

#[tokio::test]
async fn an_intact_anchored_log_verifies() {
    let d = TempDir::new("intact");
    let rows = anchored_store(&d.0).await;
    assert!(rows >= 9, "{rows}");
    assert_eq!(check(&d.0), AuditVerdict::Intact { rows: rows as u64 });
    let out = std::process::Command::new(BIN)
        .args(["audit", "verify", "--data", d.0.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("anchored: signed checkpoint"), "{text}");
}

#[tokio::test]
async fn tail_truncation_is_detected_by_the_checkpoint_and_the_high_water_mark() {
    for (name, cut) in [("last5", 5), ("all-but-3", -3), ("all", 0)] {
        let d = TempDir::new(name);
        let rows = anchored_store(&d.0).await;
        let keep = match cut {
            0 => 0,
            c if c < 0 => -c,
            c => rows - c,
        };
        // Deleting rows alone: the high-water mark shows it.
        sql(&d.0, &format!("DELETE FROM audit_log WHERE seq > {keep};"));
        let (seq, reason) = broken(check(&d.0));
        assert_eq!(seq, keep + 1, "{name}: {reason}");
        assert!(reason.contains("tail truncation"), "{name}: {reason}");
        // Lowering the high-water mark too: the signed checkpoint still shows it.
        sql(
            &d.0,
            &format!("UPDATE audit_anchor SET high_water = {keep};"),
        );
        let (seq, reason) = broken(check(&d.0));
        assert_eq!(seq, keep + 1, "{name}: {reason}");
        assert!(
            reason.contains("signed checkpoint") && reason.contains("tail truncation"),
            "{name}: {reason}"
        );
        // The binary agrees and exits 1.
        let out = std::process::Command::new(BIN)
            .args(["audit", "verify", "--data", d.0.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.starts_with(&format!("audit log BROKEN at row {}", keep + 1)),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_rewritten_log_is_detected_by_the_checkpoint() {
    // The whole log replaced by a shorter valid chain re-numbered from 1 (the attacker
    // recomputes every hash): the chain walks, but the checkpoint's head row differs.
    let d = TempDir::new("rewritten");
    let rows = anchored_store(&d.0).await;
    let fresh = TempDir::new("rewritten-src");
    {
        let n = TestNode::with(|c| c.storage = Storage::Dir(fresh.0.clone()));
        for i in 0..(rows as u8) {
            n.register(&format!("u{i}"), "human", i + 10).await;
        }
    }
    let src = fresh.0.join("loom.db");
    sql(
        &d.0,
        &format!(
            "ATTACH '{}' AS src; DELETE FROM audit_log; INSERT INTO audit_log SELECT * FROM src.audit_log;
             UPDATE audit_anchor SET high_water = (SELECT MAX(seq) FROM audit_log); DETACH src;",
            src.display()
        ),
    );
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, rows, "{reason}");
    assert!(reason.contains("rewritten"), "{reason}");
}

#[tokio::test]
async fn reordered_and_edited_rows_and_a_forged_checkpoint_are_detected() {
    let d = TempDir::new("reorder");
    anchored_store(&d.0).await;
    // Swap the content of rows 3 and 4 (each keeps its seq).
    sql(
        &d.0,
        "CREATE TEMP TABLE r AS SELECT * FROM audit_log WHERE seq IN (3, 4);
         UPDATE audit_log SET at = (SELECT at FROM r WHERE seq = 4), actor = (SELECT actor FROM r WHERE seq = 4),
           action = (SELECT action FROM r WHERE seq = 4), subject = (SELECT subject FROM r WHERE seq = 4),
           details = (SELECT details FROM r WHERE seq = 4), prev_hash = (SELECT prev_hash FROM r WHERE seq = 4),
           hash = (SELECT hash FROM r WHERE seq = 4) WHERE seq = 3;",
    );
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, 3, "{reason}");

    let d = TempDir::new("edit");
    anchored_store(&d.0).await;
    sql(
        &d.0,
        "UPDATE audit_log SET subject = 'env_forged' WHERE seq = 5;",
    );
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, 5, "{reason}");
    assert!(reason.contains("edited"), "{reason}");

    // A checkpoint whose numbers were changed no longer verifies.
    let d = TempDir::new("forged");
    anchored_store(&d.0).await;
    let path = d.0.join(CHECKPOINT_FILE);
    let mut cp: Checkpoint = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    cp.seq -= 2;
    std::fs::write(&path, serde_json::to_vec(&cp).unwrap()).unwrap();
    let (_, reason) = broken(check(&d.0));
    assert!(reason.contains("not signed"), "{reason}");
}

#[tokio::test]
async fn an_envelope_without_its_audit_row_is_detected() {
    let d = TempDir::new("unaudited");
    anchored_store(&d.0).await;
    // A stored envelope whose audit row is removed and the chain re-linked would still fail
    // the walk; the bare fact "envelope without its row" is checked by copying one envelope
    // under a new id.
    sql(
        &d.0,
        "INSERT INTO envelopes (id, thread_id, event_seq, type, sender, created_at, received_at, body, body_sha256)
         SELECT 'env_00000000000000000000000000', thread_id, event_seq + 1000,
           type, sender, created_at, received_at, body, body_sha256
         FROM envelopes LIMIT 1;",
    );
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, 0, "{reason}");
    assert!(
        reason.contains("env_00000000000000000000000000")
            && reason.contains("no envelope.accepted"),
        "{reason}"
    );
}

#[tokio::test]
async fn deleted_sequence_numbers_are_never_reused() {
    let d = TempDir::new("reuse");
    let rows = anchored_store(&d.0).await;
    sql(
        &d.0,
        &format!("DELETE FROM audit_log WHERE seq > {};", rows - 5),
    );
    // A restarted node appends after the high-water mark, not after the last row left.
    let n = TestNode::with(|c| c.storage = Storage::Dir(d.0.clone()));
    n.register("carol", "human", 3).await;
    let conn = Connection::open(d.0.join("loom.db")).unwrap();
    let (min_new, max_new): (i64, i64) = conn
        .query_row(
            "SELECT MIN(seq), MAX(seq) FROM audit_log WHERE seq > ?1",
            [rows - 5],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(min_new, rows + 1, "a deleted number was handed out again");
    assert!(max_new > rows);
    // And the gap the deletion left is reported.
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, rows + 1, "{reason}");
    assert!(reason.contains("deleted"), "{reason}");
}
