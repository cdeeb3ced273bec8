//! Envelope submission and retrieval (v1.1 §16.1) with every acceptance rule, observed over
//! the API, and the store left unchanged by every rejection.

use crate::support::{Ident, TestNode};
use serde_json::{Value, json};

async fn trio(n: &TestNode) -> (Ident, Ident, Ident) {
    (
        n.register("alice", "human", 1).await,
        n.register("bob", "human", 2).await,
        n.register("carol", "human", 3).await,
    )
}

async fn count_envelopes(n: &TestNode, thread: &str, who: &Ident) -> usize {
    n.get(&format!("/v1/threads/{thread}/envelopes"), &who.token)
        .await
        .body["envelopes"]
        .as_array()
        .map_or(0, Vec::len)
}

#[tokio::test]
async fn a_root_and_a_reply_get_increasing_event_seq() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "hello");
    let created = alice.send(&n, root.clone()).await.expect(201);
    assert_eq!(created.body["meta"]["event_seq"], 1);
    assert_eq!(created.body["meta"]["pending_parent"], false);
    assert_eq!(created.body["meta"]["node_id"], "node.test");
    let reply = bob.message(&n, &t, root["id"].as_str(), &[&alice], "hi");
    let r = bob.send(&n, reply).await.expect(201);
    assert_eq!(r.body["meta"]["event_seq"], 2);
    let got = n
        .get(
            &format!("/v1/envelopes/{}", root["id"].as_str().unwrap()),
            &bob.token,
        )
        .await
        .expect(200);
    assert_eq!(got.body["content"]["human"]["text"], "hello");
    // §16.1: the 201 answers with the envelope as stored, `meta` included: the same bytes
    // a GET reads back, with the §14.1 content type.
    assert_eq!(
        String::from_utf8_lossy(&created.raw),
        String::from_utf8_lossy(&got.raw)
    );
    assert_eq!(
        created.headers["content-type"],
        "application/json; charset=utf-8"
    );
    // The stored envelope still verifies: meta is outside the signature (§7.2).
    let key = alice.key.verifying_key();
    loom_protocol::envelope::verify_envelope_signature(&got.body, &key).unwrap();
}

#[tokio::test]
async fn bad_signatures_are_refused_and_nothing_is_stored() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let mut env = alice.sign(alice.message(&n, &t, None, &[&bob], "hello"));
    env["content"]["human"]["text"] = "tampered".into();
    n.call(
        "POST",
        "/v1/envelopes",
        Some(&alice.token),
        Some(env.clone()),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
    // Signed by bob's key under alice's key id.
    let mut forged = alice.message(&n, &t, None, &[&bob], "hello");
    let kid = loom_protocol::id::KeyId::parse(&alice.key_id, loom_protocol::id::KeyKind::Signing)
        .unwrap();
    loom_protocol::envelope::sign_envelope(&mut forged, &bob.key, &kid).unwrap();
    n.call("POST", "/v1/envelopes", Some(&alice.token), Some(forged))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    // An unknown key id.
    let mut unknown = alice.message(&n, &t, None, &[&bob], "hello");
    unknown["from"]["key_id"] = "k_sign_alice_9".into();
    let kid9 =
        loom_protocol::id::KeyId::parse("k_sign_alice_9", loom_protocol::id::KeyKind::Signing)
            .unwrap();
    loom_protocol::envelope::sign_envelope(&mut unknown, &alice.key, &kid9).unwrap();
    n.call("POST", "/v1/envelopes", Some(&alice.token), Some(unknown))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    n.get(&format!("/v1/threads/{t}"), &alice.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
}

#[tokio::test]
async fn the_sender_must_be_the_authenticated_identity_of_the_registered_type() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let env = bob.sign(bob.message(&n, &t, None, &[&alice], "hi"));
    n.call("POST", "/v1/envelopes", Some(&alice.token), Some(env))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    let mut wrong_type = alice.message(&n, &t, None, &[&bob], "hi");
    wrong_type["from"]["type"] = "service".into();
    alice
        .send(&n, wrong_type)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    n.call(
        "POST",
        "/v1/envelopes",
        None,
        Some(alice.sign(alice.message(&n, &t, None, &[&bob], "x"))),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn duplicates_are_409_and_structure_errors_400() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let env = alice.message(&n, &t, None, &[&bob], "hello");
    alice.send(&n, env.clone()).await.expect(201);
    alice
        .send(&n, env)
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
    let mut bad = alice.message(&n, &t, None, &[&bob], "x");
    bad["loom"] = "1.0".into();
    alice
        .send(&n, bad)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    let mut no_to = alice.message(&n, &t, None, &[&bob], "x");
    no_to["to"] = json!([]);
    alice
        .send(&n, no_to)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(count_envelopes(&n, &t, &alice).await, 1);
}

#[tokio::test]
async fn unknown_types_are_accepted_and_stored() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let mut env = alice.message(&n, &t, None, &[&bob], "x");
    env["type"] = "custom.widget".into();
    let r = alice.send(&n, env).await.expect(201);
    assert_eq!(r.body["type"], "custom.widget");
}

#[tokio::test]
async fn audience_is_enforced_on_retrieval() {
    let n = TestNode::new();
    let (alice, bob, carol) = trio(&n).await;
    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "for bob");
    alice.send(&n, root.clone()).await.expect(201);
    let path = format!("/v1/envelopes/{}", root["id"].as_str().unwrap());
    n.get(&path, &carol.token)
        .await
        .expect_error(403, "AUDIENCE_DENIED");
    n.get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
    // A recipients-only envelope is hidden from a participant who is not a recipient.
    let add = alice.op(
        &n,
        &t,
        "thread.add_participant@v1",
        json!({"identity": carol.address, "role": "participant"}),
    );
    alice.send(&n, add).await.expect(201);
    let mut private = alice.message(&n, &t, root["id"].as_str(), &[&bob], "only bob");
    private["audience"] = json!({"mode": "recipients"});
    alice.send(&n, private.clone()).await.expect(201);
    n.get(
        &format!("/v1/envelopes/{}", private["id"].as_str().unwrap()),
        &carol.token,
    )
    .await
    .expect_error(403, "AUDIENCE_DENIED");
    n.get(
        &format!("/v1/envelopes/{}", private["id"].as_str().unwrap()),
        &bob.token,
    )
    .await
    .expect(200);
    let ids: Vec<Value> = n
        .get(&format!("/v1/threads/{t}/envelopes"), &carol.token)
        .await
        .body["envelopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert!(!ids.contains(&private["id"]), "{ids:?}");
    assert!(ids.contains(&root["id"]));
}

#[tokio::test]
async fn bcc_copies_reach_only_their_recipient() {
    let n = TestNode::new();
    let (alice, bob, carol) = trio(&n).await;
    let t = n.thread_id();
    let visible = alice.message(&n, &t, None, &[&bob], "hello");
    alice.send(&n, visible.clone()).await.expect(201);
    let mut copy = alice.message(&n, &t, visible["id"].as_str(), &[&bob], "hello");
    copy["to"]
        .as_array_mut()
        .unwrap()
        .push(json!({"identity": carol.address, "role": "bcc"}));
    copy["audience"] = json!({"mode": "custom", "identities": [alice.address, carol.address]});
    copy["references"] = json!({"linked_envelopes": [visible["id"]]});
    alice.send(&n, copy.clone()).await.expect(201);
    let path = format!("/v1/envelopes/{}", copy["id"].as_str().unwrap());
    n.get(&path, &carol.token).await.expect(200);
    n.get(&path, &bob.token)
        .await
        .expect_error(403, "AUDIENCE_DENIED");
    // Carol is no participant: only the copy's recorded readers (§8.3) let her list the
    // thread's envelopes and find the copy by search; the message to Bob stays hidden.
    let listed = n
        .get(&format!("/v1/threads/{t}/envelopes"), &carol.token)
        .await
        .expect(200);
    assert!(
        listed
            .body
            .to_string()
            .contains(copy["id"].as_str().unwrap())
    );
    let found = n.get("/v1/search?q=hello", &carol.token).await.expect(200);
    let found: Vec<&str> = found.body["envelopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(found, [copy["id"].as_str().unwrap()]);
    let stranger = n.register("dave", "human", 9).await;
    n.get(&format!("/v1/threads/{t}/envelopes"), &stranger.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
    // A bcc recipient listed next to visible ones would leak: refused.
    let mut leaky = alice.message(&n, &t, visible["id"].as_str(), &[&bob], "x");
    leaky["to"]
        .as_array_mut()
        .unwrap()
        .push(json!({"identity": carol.address, "role": "bcc"}));
    alice
        .send(&n, leaky)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
}

/// Search applies the same §8.3 audience rule as `GET /v1/envelopes/{id}`, membership
/// included: a participant removed from the thread (§11.5) no longer finds a message she
/// only saw as a participant, and still finds one addressed to her.
#[tokio::test]
async fn search_sees_a_removed_participant_as_get_does() {
    let n = TestNode::new();
    let (alice, bob, carol) = trio(&n).await;
    let t = n.thread_id();
    let kickoff = alice.message(&n, &t, None, &[&bob, &carol], "kickoff");
    alice.send(&n, kickoff.clone()).await.expect(201);
    let budget = alice.message(&n, &t, kickoff["id"].as_str(), &[&bob], "budget");
    alice.send(&n, budget.clone()).await.expect(201);
    let found = |q: &'static str| {
        let n = &n;
        let token = carol.token.clone();
        async move {
            let r = n
                .get(&format!("/v1/search?q={q}"), &token)
                .await
                .expect(200);
            r.body["envelopes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    let budget_id = budget["id"].as_str().unwrap().to_owned();
    let kickoff_id = kickoff["id"].as_str().unwrap().to_owned();
    assert_eq!(found("budget").await, std::slice::from_ref(&budget_id));
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
    n.get(&format!("/v1/envelopes/{budget_id}"), &carol.token)
        .await
        .expect_error(403, "AUDIENCE_DENIED");
    assert_eq!(found("budget").await, Vec::<String>::new());
    n.get(&format!("/v1/envelopes/{kickoff_id}"), &carol.token)
        .await
        .expect(200);
    assert_eq!(found("kickoff").await, [kickoff_id]);
}

#[tokio::test]
async fn pending_parents_cycles_and_size_limits() {
    let n = TestNode::with(|c| {
        c.limits.max_envelopes_per_thread = 4;
        c.limits.max_pending_parents = 1;
    });
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let a_id = n.envelope_id();
    let b = alice.message(&n, &t, Some(&a_id), &[&bob], "child first");
    let r = alice.send(&n, b.clone()).await.expect(201);
    assert_eq!(r.body["meta"]["pending_parent"], true);
    // A second unresolved parent exceeds max_pending_parents = 1.
    let other = n.envelope_id();
    alice
        .send(&n, alice.message(&n, &t, Some(&other), &[&bob], "x"))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // The missing parent naming its own child as parent closes a cycle.
    let mut a = alice.message(&n, &t, b["id"].as_str(), &[&bob], "cycle");
    a["id"] = a_id.clone().into();
    alice
        .send(&n, a)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    let mut own = alice.message(&n, &t, None, &[&bob], "self");
    own["parent_id"] = own["id"].clone();
    alice
        .send(&n, own)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    for i in 0..3 {
        alice
            .send(
                &n,
                alice.message(&n, &t, b["id"].as_str(), &[&bob], &format!("{i}")),
            )
            .await
            .expect(201);
    }
    alice
        .send(
            &n,
            alice.message(&n, &t, b["id"].as_str(), &[&bob], "fifth"),
        )
        .await
        .expect_error(400, "ENVELOPE_INVALID");
}

#[tokio::test]
async fn oversized_envelopes_are_413() {
    let n = TestNode::with(|c| c.limits.envelope.max_envelope_bytes = 2048);
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], &"x".repeat(4000)))
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], "small"))
        .await
        .expect(201);
}

#[tokio::test]
async fn idempotency_keys_replay_the_first_result() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let env = alice.sign(alice.message(&n, &t, None, &[&bob], "once"));
    let body = serde_json::to_vec(&env).unwrap();
    let post = |b: Vec<u8>, key: &'static str| {
        let n = &n;
        let tok = alice.token.clone();
        async move {
            n.raw(
                "POST",
                "/v1/envelopes",
                Some(&tok),
                &[("idempotency-key", key)],
                Some(("application/json", b)),
            )
            .await
        }
    };
    let first = post(body.clone(), "k-1").await.expect(201);
    let second = post(body.clone(), "k-1").await.expect(201);
    assert_eq!(first.raw, second.raw);
    // Without the key the same envelope is a duplicate.
    n.call("POST", "/v1/envelopes", Some(&alice.token), Some(env))
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
    let other =
        serde_json::to_vec(&alice.sign(alice.message(&n, &t, None, &[&bob], "other"))).unwrap();
    post(other, "k-1")
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
    assert_eq!(count_envelopes(&n, &t, &alice).await, 1);
    // An error result is replayed too.
    let mut bad = alice.message(&n, &t, None, &[&bob], "x");
    bad["loom"] = "1.0".into();
    let bad = serde_json::to_vec(&alice.sign(bad)).unwrap();
    let e1 = post(bad.clone(), "k-2")
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    let e2 = post(bad, "k-2").await.expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(e1.body["error"]["details"], e2.body["error"]["details"]);
}

/// Issue 36, item 6 (measured before: ten concurrent identical requests with one key got
/// 4 × 201 and 6 × 409): the writer remembers the result in the envelope's own transaction,
/// so a crash between the commit and the answer cannot leave a stored envelope whose retry
/// answers 409, and a twin that passed the HTTP pre-check before the first committed is
/// answered with the first's result. Ten requests over the router, then the race itself at
/// the service (a call there skips the pre-check, as a racing twin did).
#[tokio::test]
async fn one_key_gets_one_result_even_when_its_requests_race() {
    let n = TestNode::new();
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let env = alice.sign(alice.message(&n, &t, None, &[&bob], "raced"));
    let body = serde_json::to_vec(&env).unwrap();
    let posts = (0..10).map(|_| {
        n.raw(
            "POST",
            "/v1/envelopes",
            Some(&alice.token),
            &[("idempotency-key", "race-1")],
            Some(("application/json", body.clone())),
        )
    });
    let answers = futures_join_all(posts).await;
    for a in &answers {
        assert_eq!(a.status.as_u16(), 201, "{}", a.body);
        assert_eq!(a.body["id"], env["id"]);
        assert_eq!(
            a.body["meta"]["event_seq"],
            answers[0].body["meta"]["event_seq"]
        );
    }
    assert_eq!(count_envelopes(&n, &t, &alice).await, 1);
    // The writer remembers the result itself: no HTTP wrapper is involved here.
    let claim = loom_node::service::idempotency::Claim {
        key: "direct-1".into(),
        route: "POST /v1/envelopes".into(),
        request_hash: "h".into(),
    };
    let caller = loom_node::service::Caller {
        identity: loom_protocol::Address::parse_wire(&alice.address).unwrap(),
        key_id: alice.key_id.clone(),
    };
    let other = alice.sign(alice.message(&n, &t, None, &[&bob], "direct"));
    let svc = n.node.service();
    let stored = svc
        .submit_envelope_claimed(&caller, other.clone(), Some(claim.clone()))
        .await
        .unwrap();
    // A twin that passed the HTTP pre-check before the first committed reaches the writer
    // with the same key: it gets the first's result, not ENVELOPE_DUPLICATE.
    let twin = svc
        .submit_envelope_claimed(&caller, other.clone(), Some(claim.clone()))
        .await
        .expect("the twin is answered with the first result");
    assert_eq!(twin.value, stored.value);
    // The same key naming another request is the §14.4 conflict.
    let different = loom_node::service::idempotency::Claim {
        request_hash: "other".into(),
        ..claim
    };
    let e = svc
        .submit_envelope_claimed(&caller, other, Some(different))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (
            loom_protocol::ErrorCode::EnvelopeDuplicate,
            "Idempotency-Key"
        )
    );
    let remembered =
        loom_node::store::idempotency::get(&n.node.service().store, &caller.identity, "direct-1")
            .unwrap()
            .expect("remembered in the envelope's transaction");
    assert_eq!(remembered.status, 201);
    assert_eq!(
        remembered.response,
        loom_node::store::idempotency::Response::Success(stored.value)
    );
}

/// Polls every future to completion concurrently, in order of the results.
async fn futures_join_all<F: std::future::Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in fs {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(Option::unwrap).collect()
}

#[tokio::test]
async fn retraction_respects_sender_window_and_legal_hold() {
    let n = TestNode::with(|c| c.retract_window_secs = 60);
    let (alice, bob, _) = trio(&n).await;
    let t = n.thread_id();
    let env = alice.message(&n, &t, None, &[&bob], "oops");
    alice.send(&n, env.clone()).await.expect(201);
    let path = format!("/v1/envelopes/{}", env["id"].as_str().unwrap());
    n.call("DELETE", &path, Some(&bob.token), None)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    let r = n
        .call("DELETE", &path, Some(&alice.token), None)
        .await
        .expect(200);
    assert_eq!(r.body["retracted"], true);
    let got = n.get(&path, &bob.token).await.expect(200);
    assert_eq!(got.body["erased"], true);
    assert!(got.body.get("content").is_none());
    let late = alice.message(&n, &t, env["id"].as_str(), &[&bob], "late");
    alice.send(&n, late.clone()).await.expect(201);
    n.clock.advance_ms(61_000);
    n.call(
        "DELETE",
        &format!("/v1/envelopes/{}", late["id"].as_str().unwrap()),
        Some(&alice.token),
        None,
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    let mut held = alice.message(&n, &t, env["id"].as_str(), &[&bob], "held");
    held["labels"] = json!(["sys.legal_hold"]);
    alice.send(&n, held.clone()).await.expect(201);
    n.call(
        "DELETE",
        &format!("/v1/envelopes/{}", held["id"].as_str().unwrap()),
        Some(&alice.token),
        None,
    )
    .await
    .expect_error(403, "LEGAL_HOLD_ACTIVE");
}

#[tokio::test]
async fn agents_need_a_valid_delegation_chain() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bot = n.register("bot.alice", "agent", 5).await;
    let t = n.thread_id();
    let env = bot.message(&n, &t, None, &[&alice], "hi");
    bot.send(&n, env)
        .await
        .expect_error(403, "DELEGATION_INVALID");
    let mut link = json!({
        "id": "dlg_1",
        "delegator": alice.address,
        "delegate": bot.address,
        "scope": ["message.*"],
        "created_at": n.now(),
        "expires_at": "2027-01-01T00:00:00Z",
        "revocable": true,
        "allow_sub_delegation": false,
    });
    let kid = loom_protocol::id::KeyId::parse(&alice.key_id, loom_protocol::id::KeyKind::Signing)
        .unwrap();
    loom_protocol::delegation::sign_delegation_link(&mut link, &alice.key, &kid).unwrap();
    let mut env = bot.message(&n, &t, None, &[&alice], "hi");
    env["from"]["delegation_chain"] = json!([link]);
    bot.send(&n, env).await.expect(201);
}
