//! Search (v1.1 §16.6): cleartext text, intents and parameters, thread metadata; only
//! what the caller may read; never encrypted content; user input cannot break the query.

use crate::support::{Ident, TestNode};
use serde_json::{Value, json};

async fn search(n: &TestNode, who: &Ident, query: &str) -> Value {
    n.get(&format!("/v1/search?{query}"), &who.token)
        .await
        .expect(200)
        .body
}

fn ids(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn text_intent_parameters_and_thread_metadata_are_found() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "The quarterly invoice is attached");
    alice.send(&n, root.clone()).await.expect(201);
    let mut task = bob.message(&n, &t, root["id"].as_str(), &[&alice], "please review");
    task["content"]["structured"] =
        json!({"intent": "task.create@v1", "parameters": {"title": "zebrafish audit"}});
    bob.send(&n, task.clone()).await.expect(201);
    let subject = alice.op(
        &n,
        &t,
        "thread.update@v1",
        json!({"subject": "Budget planning", "labels": ["finance"]}),
    );
    alice.send(&n, subject).await.expect(201);

    let r = search(&n, &bob, "q=invoice").await;
    assert_eq!(ids(&r, "envelopes"), vec![root["id"].as_str().unwrap()]);
    assert_eq!(
        r["envelopes"][0]["content"]["human"]["text"],
        "The quarterly invoice is attached"
    );
    // Terms are AND-ed, case-insensitive.
    assert_eq!(
        ids(
            &search(&n, &bob, "q=QUARTERLY%20invoice").await,
            "envelopes"
        )
        .len(),
        1
    );
    assert!(
        ids(
            &search(&n, &bob, "q=quarterly%20zebrafish").await,
            "envelopes"
        )
        .is_empty()
    );
    // Parameters and intent.
    let r = search(&n, &alice, "q=zebrafish").await;
    assert_eq!(ids(&r, "envelopes"), vec![task["id"].as_str().unwrap()]);
    let r = search(&n, &alice, "intent=task.create@v1").await;
    assert_eq!(ids(&r, "envelopes"), vec![task["id"].as_str().unwrap()]);
    assert!(r["threads"].as_array().unwrap().is_empty());
    // Thread metadata: subject, labels, participants.
    for q in ["q=budget", "q=finance", "q=bob"] {
        let r = search(&n, &alice, q).await;
        assert_eq!(ids(&r, "threads"), vec![t.clone()], "{q}");
    }
    // thread_id narrows; limit caps.
    let other = n.thread_id();
    alice
        .send(
            &n,
            alice.message(&n, &other, None, &[&bob], "another invoice"),
        )
        .await
        .expect(201);
    assert_eq!(
        ids(&search(&n, &bob, "q=invoice").await, "envelopes").len(),
        2
    );
    assert_eq!(
        ids(
            &search(&n, &bob, &format!("q=invoice&thread_id={t}")).await,
            "envelopes"
        )
        .len(),
        1
    );
    assert_eq!(
        ids(&search(&n, &bob, "q=invoice&limit=1").await, "envelopes").len(),
        1
    );
}

#[tokio::test]
async fn only_readable_envelopes_and_own_threads_are_returned() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "secret pineapple plan");
    alice.send(&n, root.clone()).await.expect(201);
    // carol is outside the thread: no envelopes, no thread.
    let r = search(&n, &carol, "q=pineapple").await;
    assert!(r["envelopes"].as_array().unwrap().is_empty());
    assert!(
        search(&n, &carol, "q=alice").await["threads"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Once in the thread, carol sees thread-audience envelopes but not a recipients-only one.
    let add = alice.op(
        &n,
        &t,
        "thread.add_participant@v1",
        json!({"identity": carol.address, "role": "participant"}),
    );
    alice.send(&n, add).await.expect(201);
    let mut private = alice.message(
        &n,
        &t,
        root["id"].as_str(),
        &[&bob],
        "pineapple for bob only",
    );
    private["audience"] = json!({"mode": "recipients"});
    alice.send(&n, private.clone()).await.expect(201);
    assert_eq!(
        ids(&search(&n, &carol, "q=pineapple").await, "envelopes"),
        vec![root["id"].as_str().unwrap()]
    );
    assert_eq!(
        ids(&search(&n, &bob, "q=pineapple").await, "envelopes").len(),
        2
    );
}

#[tokio::test]
async fn encrypted_content_is_never_indexed() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let t = n.thread_id();
    let mut env = alice.message(&n, &t, None, &[&bob], "unused");
    // Well-formed content sealed for both (v1.1 §7.4; DESIGN.md §9), fixed randomness.
    use loom_protocol::e2ee::crypto::{Sealing, public_key};
    use loom_protocol::e2ee::{AadKind, Profile, Recipient, WrapRandomness, seal};
    let recipients: Vec<(Recipient, WrapRandomness)> =
        [(alice.address.clone(), 1u8), (bob.address.clone(), 2)]
            .into_iter()
            .map(|(to, k)| {
                let r = Recipient {
                    to: to.to_string(),
                    key_id: format!("k_enc_{k}x"),
                    public: public_key(&[k; 32]),
                };
                (
                    r,
                    WrapRandomness {
                        ephemeral_secret: [k + 10; 32].into(),
                        nonce: [k; 24],
                    },
                )
            })
            .collect();
    let s = Sealing {
        profile: Profile::V1,
        epoch: 0,
        replay_counter: 0,
        kind: AadKind::Payload,
    };
    let content = seal(
        &s,
        b"{\"human\":{\"text\":\"unused\"}}",
        &[3; 32],
        &[4; 24],
        &recipients,
    )
    .unwrap();
    let cipher: String = content
        .ciphertext
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|run| run.len())
        .unwrap()
        .to_owned();
    env["content"] = content.to_value();
    let stored = alice.send(&n, env).await.expect(201);
    let cq = format!("q={cipher}");
    for q in [cq.as_str(), "q=xchacha20", "q=unused"] {
        let r = search(&n, &bob, q).await;
        assert!(r["envelopes"].as_array().unwrap().is_empty(), "{q}: {r}");
    }
    let rows: i64 = n
        .node
        .service()
        .store
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM envelope_search WHERE envelope_id = ?1",
            [stored.body["id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn hostile_queries_are_plain_text_and_bad_ones_400() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let t = n.thread_id();
    alice
        .send(
            &n,
            alice.message(&n, &t, None, &[&bob], "say \"hello\" AND NOT bye*"),
        )
        .await
        .expect(201);
    // FTS5 operators and quotes in user input are just text.
    for q in [
        "q=%22hello",
        "q=hello%22%20OR%20%22",
        "q=NOT",
        "q=bye*",
        "q=text:hello",
        "q=NEAR(a%20b)",
        "q=(((",
        "q=-",
        "q=%5E",
    ] {
        n.get(&format!("/v1/search?{q}"), &alice.token)
            .await
            .expect(200);
    }
    assert_eq!(
        ids(&search(&n, &alice, "q=%22hello%22").await, "envelopes").len(),
        1
    );
    for q in [
        "",
        "q=",
        "q=%20%20",
        "q=a%00b",
        &format!("q={}", "x".repeat(600)),
    ] {
        let r = n
            .get(&format!("/v1/search?{q}"), &alice.token)
            .await
            .expect_error(400, "ENVELOPE_INVALID");
        assert_eq!(r.body["error"]["details"]["field"], "q", "{q}");
    }
    n.get("/v1/search?q=x&limit=0", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    n.get("/v1/search?q=x&thread_id=nope", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    n.call("GET", "/v1/search?q=x", None, None)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
}
