//! The anchored §25.1 audit chain (issue 19): a signed checkpoint beside the store and a
//! high-water mark let `audit verify` see what a hash chain alone cannot — rows cut from its
//! end, a rewritten log — as well as reordered and edited rows, envelopes without their
//! audit row, and it never hands out a deleted row's sequence number again.

use crate::support::TestNode;
use loom_node::store::Store;
use loom_node::store::audit::{self, AuditVerdict, CHECKPOINT_FILE, Checkpoint};
use loom_node::{StartError, Storage};
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
    // A node will not start on the cut log; an append (what it would do) numbers the next
    // row after the high-water mark, not after the last row left.
    assert!(matches!(start(&d.0), Err(StartError::Audit(_))));
    let store = Store::open(&Storage::Dir(d.0.clone())).unwrap();
    audit::append(
        &store.conn(),
        &audit::AuditEntry {
            at: "2026-03-01T00:00:00Z",
            actor: "node",
            action: "test.appended",
            subject: "x",
            details: serde_json::json!({}),
        },
    )
    .unwrap();
    drop(store);
    let conn = Connection::open(d.0.join("loom.db")).unwrap();
    let new: i64 = conn
        .query_row("SELECT MAX(seq) FROM audit_log", [], |r| r.get(0))
        .unwrap();
    assert_eq!(new, rows + 1, "a deleted number was handed out again");
    // And the gap the deletion left is reported.
    let (seq, reason) = broken(check(&d.0));
    assert_eq!(seq, rows + 1, "{reason}");
    assert!(reason.contains("deleted"), "{reason}");
}

/// A node on `dir`, as `loom-node serve --data DIR` builds it.
fn start(dir: &Path) -> Result<loom_node::Node, StartError> {
    let config = loom_node::NodeConfig {
        domain: crate::support::DOMAIN.into(),
        storage: Storage::Dir(dir.to_owned()),
        ..loom_node::NodeConfig::default()
    };
    let env = loom_node::Env::new(std::sync::Arc::new(loom_protocol::clock::SystemClock), 5);
    loom_node::Node::builder(config, env).build()
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(BIN).args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// Issue 36, item 2: cut the last rows and lower the high-water mark, then restart. The node
/// used to start, sign a fresh checkpoint over the cut chain and let `audit verify` call it
/// intact; now it refuses, signs nothing, and exits 3 naming the commands — until an
/// operator re-anchors the log, which stays on record in the log itself.
#[tokio::test]
async fn a_restart_refuses_a_cut_log_until_an_operator_re_anchors_it() {
    let d = TempDir::new("restart-cut");
    let dir = d.0.to_str().unwrap();
    let rows = anchored_store(&d.0).await;
    let keep = rows - 3;
    sql(
        &d.0,
        &format!(
            "DELETE FROM audit_log WHERE seq > {keep}; UPDATE audit_anchor SET high_water = {keep};"
        ),
    );
    let signed = std::fs::read(d.0.join(CHECKPOINT_FILE)).unwrap();
    let Err(StartError::Audit(why)) = start(&d.0) else {
        panic!("the node started on a cut log");
    };
    for part in [
        "tail truncation",
        "v1.1 §25.1",
        "loom-node audit verify --data",
        "loom-node audit anchor --data",
    ] {
        assert!(why.contains(part), "{part}: {why}");
    }
    assert_eq!(
        std::fs::read(d.0.join(CHECKPOINT_FILE)).unwrap(),
        signed,
        "the checkpoint was re-signed"
    );
    // The binary: exit 3, the same reason.
    let (code, text) = run(&["serve", "--data", dir, "--listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("tail truncation"), "{text}");
    assert_eq!(run(&["audit", "verify", "--data", dir]).0, Some(1));
    // Re-anchoring after review: recorded, then the node starts and the log verifies.
    let (code, text) = run(&["audit", "anchor", "--data", dir]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("audit log re-anchored"), "{text}");
    let conn = Connection::open(d.0.join("loom.db")).unwrap();
    let (seq, replaced): (i64, String) = conn
        .query_row(
            "SELECT seq, details FROM audit_log WHERE action = 'audit.reanchored'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    drop(conn);
    assert_eq!(seq, keep + 1);
    let replaced: serde_json::Value = serde_json::from_str(&replaced).unwrap();
    assert_eq!(replaced["replaces"]["seq"], rows, "{replaced}");
    assert!(start(&d.0).is_ok());
    // Re-anchoring hides nothing: the envelopes whose rows were cut still show.
    let (_, reason) = broken(check(&d.0));
    assert!(
        reason.contains("has no envelope.accepted audit row"),
        "{reason}"
    );
}

/// A non-empty log whose checkpoint file is gone is refused too (it used to verify as
/// "unanchored"), and `audit anchor` will not re-anchor a chain with an edited row.
#[tokio::test]
async fn a_missing_checkpoint_or_an_edited_row_is_refused() {
    let d = TempDir::new("missing-cp");
    let dir = d.0.to_str().unwrap();
    let rows = anchored_store(&d.0).await;
    std::fs::remove_file(d.0.join(CHECKPOINT_FILE)).unwrap();
    let Err(StartError::Audit(why)) = start(&d.0) else {
        panic!("the node started without its checkpoint");
    };
    assert!(
        why.contains(&format!(
            "holds {rows} rows but there is no signed checkpoint"
        )),
        "{why}"
    );
    let (code, text) = run(&["audit", "verify", "--data", dir]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("no signed checkpoint"), "{text}");
    sql(
        &d.0,
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2;",
    );
    let (code, text) = run(&["audit", "anchor", "--data", dir, "--domain", "node.test"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("broken at row 2"), "{text}");
}

/// More rows on `dir`, then gone without a shutdown checkpoint (as after kill -9); returns
/// the last row, which is past the checkpoint.
async fn crash_tail(dir: &Path, local: &str, seed: u8) -> i64 {
    {
        let n = TestNode::with(|c| c.storage = Storage::Dir(dir.to_owned()));
        n.register(local, "human", seed).await;
    }
    let cp = Checkpoint::read(dir).unwrap().unwrap();
    let conn = Connection::open(dir.join("loom.db")).unwrap();
    let last: i64 = conn
        .query_row("SELECT MAX(seq) FROM audit_log", [], |r| r.get(0))
        .unwrap();
    assert!(last > cp.seq, "{last} {cp:?}");
    last
}

/// Rows a crash left after the last checkpoint are walked at start-up, not refused; one of
/// them edited is refused.
#[tokio::test]
async fn a_crash_tail_after_the_checkpoint_starts_and_an_edit_in_it_does_not() {
    let d = TempDir::new("crash-tail");
    anchored_store(&d.0).await;
    crash_tail(&d.0, "carol", 3).await;
    drop(start(&d.0).expect("an unsigned tail that chains on is fine"));
    let d = TempDir::new("crash-tail-edited");
    anchored_store(&d.0).await;
    let last = crash_tail(&d.0, "carol", 3).await;
    sql(
        &d.0,
        &format!("UPDATE audit_log SET subject = 'x' WHERE seq = {last};"),
    );
    let Err(StartError::Audit(why)) = start(&d.0) else {
        panic!("the node started on an edited tail");
    };
    assert!(why.contains("the row was edited"), "{why}");
}

/// The unsigned tail is bounded by rows as well as by time: after `audit_checkpoint_rows`
/// accepted envelopes a checkpoint is signed without waiting for `audit_checkpoint_secs`.
#[tokio::test]
async fn a_checkpoint_follows_every_audit_checkpoint_rows_envelopes() {
    let d = TempDir::new("rows");
    let n = TestNode::with(|c| {
        c.storage = Storage::Dir(d.0.clone());
        c.audit_checkpoint_rows = 3;
    });
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let signed = || Checkpoint::read(&d.0).unwrap().unwrap().seq;
    let head = || -> i64 {
        Connection::open(d.0.join("loom.db"))
            .unwrap()
            .query_row("SELECT MAX(seq) FROM audit_log", [], |r| r.get(0))
            .unwrap()
    };
    let at_start = signed();
    for i in 0..2 {
        let env = alice.message(&n, &n.thread_id(), None, &[&bob], &format!("m{i}"));
        alice.send(&n, env).await.expect(201);
    }
    assert_eq!(signed(), at_start, "two envelopes: no checkpoint yet");
    let env = alice.message(&n, &n.thread_id(), None, &[&bob], "m2");
    alice.send(&n, env).await.expect(201);
    assert_eq!(
        signed(),
        head(),
        "the third envelope's group signs the head"
    );
}
