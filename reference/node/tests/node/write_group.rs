//! The single writer's group commit (issue 14, `service::write_group`): a group runs
//! without a savepoint per envelope, and an envelope whose effects fail after they were
//! written makes the writer roll the group back and run it again with a savepoint each, so
//! only that envelope is refused and nothing of it stays in the store.

use crate::support::TestNode;
use crate::support::fed::{fed_node, free_port};
use loom_node::{Quirks, Storage};
use serde_json::json;

fn fingerprint(n: &TestNode) -> String {
    n.node.service().store.fingerprint().unwrap()
}

/// The outbox row is written after the envelope's own rows (§15.6); a full outbox refuses
/// the envelope (429) only then, so this is the refusal that needs its rows undone.
#[tokio::test]
async fn a_refusal_after_the_envelope_rows_were_written_leaves_nothing_behind() {
    // Nobody listens on the peer's port: queued items stay queued.
    let port = free_port().await;
    let a = fed_node(
        "a.test",
        "b.test",
        port,
        Storage::Memory,
        Quirks::none(),
        |c| c.federation.queue_per_node = 1,
    );
    let alice = a.register("alice", "human", 1).await;
    let carol = a.register("carol", "human", 3).await;
    let remote = |mut env: serde_json::Value| {
        env["to"] = json!([{"identity": "loom://bob@b.test", "role": "primary"}]);
        env
    };

    let first = remote(alice.message(&a, &a.thread_id(), None, &[&carol], "one"));
    alice.send(&a, first).await.expect(201);
    assert_eq!(a.outbox().len(), 1);

    let before = fingerprint(&a);
    let second = remote(alice.message(&a, &a.thread_id(), None, &[&carol], "two"));
    let id = second["id"].as_str().unwrap().to_owned();
    alice
        .send(&a, second)
        .await
        .expect_error(429, "RATE_LIMIT_EXCEEDED");
    assert_eq!(
        fingerprint(&a),
        before,
        "the refused envelope left rows behind"
    );
    a.get(&format!("/v1/envelopes/{id}"), &alice.token)
        .await
        .expect(404);

    // The writer goes on: a local envelope is accepted and stored.
    let local = alice.message(&a, &a.thread_id(), None, &[&carol], "local");
    alice.send(&a, local).await.expect(201);
    assert_ne!(fingerprint(&a), before);
}

/// Sixteen tasks post threads of eight envelopes at once to a durable node on a
/// multi-threaded runtime with `workers` workers. The leader runs each group on its own
/// worker when there are two or more (the others take over that worker's queued tasks) and
/// under `block_in_place` when there is one (`write_group::needs_block_in_place`); either
/// way every envelope is accepted once, and each thread's `meta.event_seq` runs 1..=8 in
/// the order its envelopes were sent (§11.6).
fn sixteen_threads_at_once(workers: usize) {
    let dir =
        std::env::temp_dir().join(format!("loom-write-group-{workers}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let n = std::sync::Arc::new(TestNode::with(|c| c.storage = Storage::Dir(dir.clone())));
        let alice = n.register("alice", "human", 1).await;
        let bob = n.register("bob", "human", 2).await;
        let mut tasks = Vec::new();
        for t in 0..16 {
            let (n, alice, bob) = (n.clone(), alice.clone(), bob.clone());
            tasks.push(tokio::spawn(async move {
                let thread = n.thread_id();
                let mut parent: Option<String> = None;
                let mut seqs = Vec::new();
                for i in 0..8 {
                    let env =
                        alice.message(&n, &thread, parent.as_deref(), &[&bob], &format!("{t}/{i}"));
                    parent = env["id"].as_str().map(str::to_owned);
                    let r = alice.send(&n, env).await.expect(201);
                    seqs.push(r.body["meta"]["event_seq"].as_u64().unwrap());
                }
                seqs
            }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap(), (1..=8).collect::<Vec<u64>>());
        }
        let r = n
            .call("GET", "/v1/threads?limit=50", Some(&bob.token), None)
            .await
            .expect(200);
        assert_eq!(r.body["threads"].as_array().unwrap().len(), 16);
    });
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_posts_with_two_workers() {
    sixteen_threads_at_once(2);
}

#[test]
fn concurrent_posts_with_one_worker() {
    sixteen_threads_at_once(1);
}
