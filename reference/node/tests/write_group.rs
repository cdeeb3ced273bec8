//! The single writer's group commit (issue 14, `service::write_group`): a group runs
//! without a savepoint per envelope, and an envelope whose effects fail after they were
//! written makes the writer roll the group back and run it again with a savepoint each, so
//! only that envelope is refused and nothing of it stays in the store.

mod support;

use loom_node::{Quirks, Storage};
use serde_json::json;
use support::TestNode;
use support::fed::{fed_node, free_port};

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
