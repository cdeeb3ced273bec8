//! Threads (v1.1 §10, §11, §16.2) and tasks (§18.3) over the API: state machine, locking,
//! capability-gated operations, listing with filters and pagination, rendering order.

use crate::support::{Ident, TestNode};
use serde_json::{Value, json};

async fn pair(n: &TestNode) -> (Ident, Ident) {
    (
        n.register("alice", "human", 1).await,
        n.register("bob", "human", 2).await,
    )
}

async fn state(n: &TestNode, tok: String, t: String) -> Value {
    n.get(&format!("/v1/threads/{t}"), &tok).await.body["state"].clone()
}

async fn start(n: &TestNode, alice: &Ident, bob: &Ident) -> (String, Value) {
    let t = n.thread_id();
    let root = alice.message(n, &t, None, &[bob], "root");
    alice.send(n, root.clone()).await.expect(201);
    (t, root)
}

#[tokio::test]
async fn the_state_machine_follows_section_10_4() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let (t, root) = start(&n, &alice, &bob).await;
    assert_eq!(state(&n, alice.token.clone(), t.clone()).await, "active");
    alice
        .send(&n, alice.op(&n, &t, "thread.archive@v1", json!({})))
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");
    alice
        .send(&n, alice.op(&n, &t, "thread.resolve@v1", json!({})))
        .await
        .expect(201);
    assert_eq!(state(&n, alice.token.clone(), t.clone()).await, "resolved");
    alice
        .send(&n, alice.op(&n, &t, "thread.lock@v1", json!({})))
        .await
        .expect(201);
    assert_eq!(state(&n, bob.token.clone(), t.clone()).await, "locked");
    bob.send(
        &n,
        bob.message(&n, &t, root["id"].as_str(), &[&alice], "too late"),
    )
    .await
    .expect_error(409, "THREAD_LOCKED");
    alice
        .send(&n, alice.op(&n, &t, "thread.reopen@v1", json!({})))
        .await
        .expect(201);
    bob.send(
        &n,
        bob.message(&n, &t, root["id"].as_str(), &[&alice], "again"),
    )
    .await
    .expect(201);
}

#[tokio::test]
async fn operations_need_the_owner_or_a_capability_token() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let carol = n.register("carol", "human", 3).await;
    let (t, _) = start(&n, &alice, &bob).await;
    bob.send(&n, bob.op(&n, &t, "thread.resolve@v1", json!({})))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // An outsider cannot post into the thread at all.
    carol
        .send(&n, carol.message(&n, &t, None, &[&alice], "let me in"))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // A token issued by alice lets bob resolve.
    let mut token = json!({
        "loom": "1.1", "id": "cap_01JMKB7X9Q2RVHF3KN4TYZPG00", "issued_by": alice.address, "issued_to": bob.address,
        "created_at": n.now(), "expires_at": null, "single_use": true, "epoch": 0, "grants": ["resolve"],
        "scope": {"thread_id": t},
    });
    let kid = loom_protocol::id::KeyId::parse(&alice.key_id, loom_protocol::id::KeyKind::Signing)
        .unwrap();
    loom_protocol::capability::sign_capability_token(&mut token, &alice.key, &kid).unwrap();
    bob.send(
        &n,
        bob.op(
            &n,
            &t,
            "thread.resolve@v1",
            json!({"capability_token": token.clone()}),
        ),
    )
    .await
    .expect(201);
    // Single use: the second presentation is refused.
    bob.send(
        &n,
        bob.op(
            &n,
            &t,
            "thread.reopen@v1",
            json!({"capability_token": token}),
        ),
    )
    .await
    .expect_error(403, "CAPABILITY_DENIED");
}

#[tokio::test]
async fn membership_changes_are_operations() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let carol = n.register("carol", "human", 3).await;
    let (t, _) = start(&n, &alice, &bob).await;
    n.get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
    alice
        .send(
            &n,
            alice.op(
                &n,
                &t,
                "thread.add_participant@v1",
                json!({"identity": carol.address, "role": "participant"}),
            ),
        )
        .await
        .expect(201);
    let th = n
        .get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect(200);
    assert!(
        th.body["participants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["identity"] == carol.address.as_str())
    );
    alice
        .send(
            &n,
            alice.op(
                &n,
                &t,
                "thread.remove_participant@v1",
                json!({"identity": carol.address}),
            ),
        )
        .await
        .expect(201);
    n.get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
    alice
        .send(
            &n,
            alice.op(
                &n,
                &t,
                "thread.update@v1",
                json!({"subject": "Q1", "labels": ["finance"]}),
            ),
        )
        .await
        .expect(201);
    let th = n
        .get(&format!("/v1/threads/{t}"), &bob.token)
        .await
        .expect(200);
    assert_eq!(th.body["subject"], "Q1");
    assert_eq!(th.body["labels"], json!(["finance"]));
    // Operations on a thread that does not exist.
    let other = n.thread_id();
    alice
        .send(&n, alice.op(&n, &other, "thread.resolve@v1", json!({})))
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
}

#[tokio::test]
async fn the_ops_endpoint_checks_its_path() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let (t, _) = start(&n, &alice, &bob).await;
    let op = alice.sign(alice.op(&n, &t, "thread.resolve@v1", json!({})));
    let other = n.thread_id();
    n.call(
        "POST",
        &format!("/v1/threads/{other}/ops"),
        Some(&alice.token),
        Some(op.clone()),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
    n.call(
        "POST",
        &format!("/v1/threads/{t}/ops"),
        Some(&alice.token),
        Some(op),
    )
    .await
    .expect(201);
    let msg = alice.sign(alice.message(&n, &t, None, &[&bob], "x"));
    n.call(
        "POST",
        &format!("/v1/threads/{t}/ops"),
        Some(&alice.token),
        Some(msg),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
}

#[tokio::test]
async fn listing_filters_sorts_and_paginates() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let mut threads = Vec::new();
    for i in 0..5 {
        n.clock.advance_ms(1000);
        let (t, _) = start(&n, &alice, &bob).await;
        if i % 2 == 0 {
            alice
                .send(&n, alice.op(&n, &t, "thread.resolve@v1", json!({})))
                .await
                .expect(201);
        }
        threads.push(t);
    }
    let all = n.get("/v1/threads?limit=50", &bob.token).await.expect(200);
    let ids: Vec<&str> = all.body["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let mut newest_first = threads.clone();
    newest_first.reverse();
    assert_eq!(ids, newest_first);
    let resolved = n
        .get("/v1/threads?state=resolved", &bob.token)
        .await
        .expect(200);
    assert_eq!(resolved.body["threads"].as_array().unwrap().len(), 3);
    // Cursor pages cover everything exactly once.
    let mut seen = Vec::new();
    let mut url = "/v1/threads?limit=2&sort=created_at&order=asc".to_owned();
    loop {
        let page = n.get(&url, &alice.token).await.expect(200);
        seen.extend(
            page.body["threads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(c) => {
                url = format!(
                    "/v1/threads?limit=2&sort=created_at&order=asc&cursor={}",
                    c.replace('|', "%7C").replace(':', "%3A")
                )
            }
            None => break,
        }
    }
    assert_eq!(seen, threads);
    let off = n
        .get(
            "/v1/threads?limit=2&offset=4&sort=created_at&order=asc",
            &alice.token,
        )
        .await
        .expect(200);
    assert_eq!(off.body["threads"][0]["id"], threads[4].as_str());
    n.get("/v1/threads?sort=size", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    n.get("/v1/threads?limit=0", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    n.get("/v1/threads?bogus=1", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
}

#[tokio::test]
async fn thread_envelopes_come_in_rendering_order() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let (t, root) = start(&n, &alice, &bob).await;
    let rid = root["id"].as_str().unwrap();
    n.clock.advance_ms(10);
    let late = bob.message(&n, &t, Some(rid), &[&alice], "later reply");
    n.clock.advance_ms(-5);
    let early = alice.message(&n, &t, Some(rid), &[&bob], "earlier reply");
    bob.send(&n, late.clone()).await.expect(201);
    alice.send(&n, early.clone()).await.expect(201);
    let env = n
        .get(&format!("/v1/threads/{t}/envelopes"), &bob.token)
        .await
        .expect(200);
    let ids: Vec<&Value> = env.body["envelopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(ids, vec![&root["id"], &early["id"], &late["id"]]);
}

#[tokio::test]
async fn tasks_move_by_the_table_and_by_the_right_actor() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let (t, _) = start(&n, &alice, &bob).await;
    let task = |who: &Ident, intent: &str, params: Value| {
        let mut e = who.message(&n, &t, None, &[&alice, &bob], "task");
        e["type"] = "task".into();
        e["content"]["structured"] = json!({"intent": intent, "parameters": params});
        e
    };
    let create = task(
        &alice,
        "task.create@v1",
        json!({"title": "invoice", "assignee": bob.address}),
    );
    alice.send(&n, create.clone()).await.expect(201);
    let tid = create["id"].as_str().unwrap();
    bob.send(
        &n,
        task(
            &bob,
            "task.state_update@v1",
            json!({"task_id": tid, "state": "completed"}),
        ),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    bob.send(
        &n,
        task(
            &bob,
            "task.state_update@v1",
            json!({"task_id": tid, "state": "assigned"}),
        ),
    )
    .await
    .expect_error(403, "CAPABILITY_DENIED");
    alice
        .send(
            &n,
            task(
                &alice,
                "task.state_update@v1",
                json!({"task_id": tid, "state": "assigned"}),
            ),
        )
        .await
        .expect(201);
    alice
        .send(
            &n,
            task(
                &alice,
                "task.state_update@v1",
                json!({"task_id": tid, "state": "accepted"}),
            ),
        )
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    bob.send(
        &n,
        task(
            &bob,
            "task.state_update@v1",
            json!({"task_id": tid, "state": "accepted"}),
        ),
    )
    .await
    .expect(201);
    bob.send(
        &n,
        task(
            &bob,
            "task.state_update@v1",
            json!({"task_id": "env_01JMKB7X9Q2RVHF3KN4TYZPG00", "state": "in_progress"}),
        ),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
}

/// §11.4: the fork thread exists as soon as the fork is applied (parent link, the parent's
/// participants), takes its first envelopes like any thread, and ends `merged`.
#[tokio::test]
async fn a_fork_thread_is_created_used_and_merged() {
    let n = TestNode::new();
    let (alice, bob) = pair(&n).await;
    let (t, root) = start(&n, &alice, &bob).await;
    let f = n.thread_id();
    let op = alice.op(
        &n,
        &t,
        "thread.fork@v1",
        json!({"fork_thread_id": f, "forked_from": root["id"]}),
    );
    alice.send(&n, op).await.expect(201);
    let fork = n
        .get(&format!("/v1/threads/{f}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(fork["state"], "active");
    assert_eq!(
        fork["linked_threads"],
        json!([{"thread_id": t, "relation": "parent"}])
    );
    assert_eq!(fork["participants"].as_array().unwrap().len(), 2);
    // Bob opens the fork's discussion and Alice replies; both land in the fork.
    let first = bob.message(&n, &f, None, &[&alice], "in the fork");
    bob.send(&n, first.clone()).await.expect(201);
    let reply = alice.message(&n, &f, first["id"].as_str(), &[&bob], "agreed");
    alice.send(&n, reply).await.expect(201);
    let list = n
        .get(&format!("/v1/threads/{f}/envelopes"), &bob.token)
        .await
        .expect(200);
    assert_eq!(list.body["envelopes"].as_array().unwrap().len(), 2);
    // A fork into the thread itself is refused.
    let op = alice.op(
        &n,
        &t,
        "thread.fork@v1",
        json!({"fork_thread_id": t, "forked_from": root["id"]}),
    );
    alice.send(&n, op).await.expect(400);
    let op = alice.op(&n, &t, "thread.merge@v1", json!({"fork_thread_id": f}));
    alice.send(&n, op).await.expect(201);
    assert_eq!(state(&n, bob.token.clone(), f).await, "merged");
}
