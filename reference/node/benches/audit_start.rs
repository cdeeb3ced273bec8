//! What the start-up audit check costs as the log grows (issue 36, item 2): a node verifies
//! its log against the last signed checkpoint before it starts, walking only the rows after
//! that checkpoint. Measured at 1,000, 10,000 and 100,000 rows with the checkpoint at the head
//! (a clean shutdown), with no checkpointed row (every row unsigned: the worst case, what a
//! crash right after the first start leaves) and, beside them, the full walk
//! `loom-node audit verify` does.
//! Run: `cargo bench -p loom-node --bench audit_start`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use loom_node::Storage;
use loom_node::store::Store;
use loom_node::store::audit::{self, AuditEntry, Checkpoint};
use loom_protocol::keys::{public_key_to_b64url, signing_key_from_seed};
use serde_json::json;
use std::path::PathBuf;

/// A store in a fresh directory with `rows` audit entries, and checkpoints over its empty
/// start and over its head.
fn store_with(rows: usize) -> (PathBuf, Store, Checkpoint, Checkpoint) {
    let dir = std::env::temp_dir().join(format!("loom-bench-audit-{rows}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&Storage::Dir(dir.clone())).expect("store");
    let key = signing_key_from_seed(&[9; 32]);
    let pk = public_key_to_b64url(&key.verifying_key());
    loom_node::store::node_keys::insert(&store, "k_node_sign_bench", &hex(&[9; 32]), &pk, "t")
        .expect("key");
    let sign = |s: &Store| {
        Checkpoint::sign(
            &s.read(),
            "bench.test",
            "2026-03-01T00:00:00Z",
            "k_node_sign_bench",
            &key,
        )
        .expect("sign")
    };
    let empty = sign(&store);
    {
        let tx = store.begin().expect("tx");
        for i in 0..rows {
            let subject = format!("env_{i:026}");
            audit::append(
                &tx,
                &AuditEntry {
                    at: "2026-03-01T00:00:00Z",
                    actor: "loom://alice@bench.test",
                    action: "envelope.accepted",
                    subject: &subject,
                    details: json!({"thread_id": "thr_x", "event_seq": i, "type": "message",
                        "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}),
                },
            )
            .expect("append");
        }
        tx.commit().expect("commit");
    }
    let head = sign(&store);
    (dir, store, empty, head)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("audit_start");
    g.sample_size(10);
    for rows in [1_000usize, 10_000, 100_000] {
        let (dir, store, empty, head) = store_with(rows);
        let conn = store.read();
        g.bench_with_input(
            BenchmarkId::new("checkpoint_at_head", rows),
            &rows,
            |b, _| b.iter(|| audit::verify_at_start(&conn, Some(&head)).expect("verify")),
        );
        g.bench_with_input(
            BenchmarkId::new("all_rows_unsigned", rows),
            &rows,
            |b, _| b.iter(|| audit::verify_at_start(&conn, Some(&empty)).expect("verify")),
        );
        g.bench_with_input(
            BenchmarkId::new("full_walk_audit_verify", rows),
            &rows,
            |b, _| b.iter(|| audit::verify_anchored(&conn, &head).expect("verify")),
        );
        drop(conn);
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
