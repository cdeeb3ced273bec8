//! Capability tokens over the API (v1.1 §16.4, §12): issuing, listing, using, single use,
//! revocation through the `capability.revoked@v1` thread_op and the epoch rule; every
//! rejected request leaves the store as it was.

use crate::support::{Ident, TestNode};
use serde_json::{Value, json};

/// A token from `issuer` to `holder` on `thread`, signed by the issuer.
fn token(
    n: &TestNode,
    issuer: &Ident,
    holder: &Ident,
    thread: &str,
    grants: &[&str],
    epoch: u64,
    single_use: bool,
) -> Value {
    let fields = json!({"epoch": epoch, "single_use": single_use});
    crate::support::capability_token(n, issuer, holder, thread, grants, &issuer.key, fields)
}

/// alice owns a thread with bob in it; carol is outside.
async fn setup(n: &TestNode) -> (Ident, Ident, Ident, String) {
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    alice
        .send(n, alice.message(n, &t, None, &[&bob], "hello"))
        .await
        .expect(201);
    (alice, bob, carol, t)
}

async fn issue(n: &TestNode, who: &Ident, token: &Value) -> crate::support::Resp {
    n.call(
        "POST",
        "/v1/capabilities",
        Some(&who.token),
        Some(token.clone()),
    )
    .await
}

async fn listed(n: &TestNode, who: &Ident, t: &str) -> Vec<Value> {
    n.get(&format!("/v1/capabilities?thread_id={t}"), &who.token)
        .await
        .expect(200)
        .body["capabilities"]
        .as_array()
        .unwrap()
        .clone()
}

async fn cap_epoch(n: &TestNode, who: &Ident, t: &str) -> u64 {
    n.get(&format!("/v1/threads/{t}"), &who.token)
        .await
        .expect(200)
        .body["cap_epoch"]
        .as_u64()
        .unwrap()
}

fn add_op(n: &TestNode, actor: &Ident, t: &str, who: &Ident, token: &Value) -> Value {
    actor.op(
        n,
        t,
        "thread.add_participant@v1",
        json!({"identity": who.address, "role": "participant", "capability_token": token}),
    )
}

fn revoke_op(n: &TestNode, actor: &Ident, t: &str, cap: &str) -> Value {
    actor.sign(actor.op(
        n,
        t,
        "capability.revoked@v1",
        json!({"capability_id": cap, "reason": "test"}),
    ))
}

#[tokio::test]
async fn an_owner_issues_and_a_holder_uses_a_token() {
    let n = TestNode::new();
    let (alice, bob, carol, t) = setup(&n).await;
    let tok = token(&n, &alice, &bob, &t, &["add_participant"], 0, false);
    // Idempotency-Key replays the first result byte for byte.
    let body = serde_json::to_vec(&tok).unwrap();
    let post = || {
        n.raw(
            "POST",
            "/v1/capabilities",
            Some(&alice.token),
            &[("idempotency-key", "cap-1")],
            Some(("application/json", body.clone())),
        )
    };
    let first = post().await.expect(201);
    assert_eq!(first.body, tok);
    assert_eq!(post().await.expect(201).raw, first.raw);
    issue(&n, &alice, &tok)
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
    // The owner sees all tokens, the holder their own, outsiders nothing.
    assert_eq!(listed(&n, &alice, &t).await.len(), 1);
    let mine = listed(&n, &bob, &t).await;
    assert_eq!(mine[0]["status"], "active");
    assert_eq!(mine[0]["token"], tok);
    n.get(&format!("/v1/capabilities?thread_id={t}"), &carol.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
    n.get("/v1/capabilities", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // bob, a participant but not an owner, adds carol with the token (§12.4).
    bob.send(&n, add_op(&n, &bob, &t, &carol, &tok))
        .await
        .expect(201);
    n.get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect(200);
    // Without a token the same operation is denied.
    let dave = n.register("dave", "human", 4).await;
    let bare = bob.op(
        &n,
        &t,
        "thread.add_participant@v1",
        json!({"identity": dave.address, "role": "participant"}),
    );
    bob.send(&n, bare)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    n.get(&format!("/v1/threads/{t}"), &dave.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
}

#[tokio::test]
async fn bad_tokens_are_refused_and_nothing_is_stored() {
    let n = TestNode::new();
    let (alice, bob, carol, t) = setup(&n).await;
    // A participant who is not an owner cannot issue.
    let by_bob = token(&n, &bob, &carol, &t, &["reply"], 0, false);
    issue(&n, &bob, &by_bob)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // issued_by must be the caller.
    let alices = token(&n, &alice, &bob, &t, &["reply"], 0, false);
    issue(&n, &bob, &alices)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // A tampered token no longer verifies.
    let mut tampered = token(&n, &alice, &bob, &t, &["reply"], 0, false);
    tampered["grants"] = json!(["admin"]);
    let r = issue(&n, &alice, &tampered)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    assert_eq!(r.body["error"]["details"]["field"], "signature.value");
    // The epoch must be the thread's cap_epoch (§12.3).
    let stale = token(&n, &alice, &bob, &t, &["reply"], 5, false);
    let r = issue(&n, &alice, &stale)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    assert_eq!(r.body["error"]["details"]["field"], "epoch");
    // Shape errors name the member.
    let unknown = token(&n, &alice, &bob, &t, &["fly"], 0, false);
    let r = issue(&n, &alice, &unknown)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(r.body["error"]["details"]["field"], "grants[0]");
    let mut no_epoch = token(&n, &alice, &bob, &t, &["reply"], 0, false);
    no_epoch.as_object_mut().unwrap().remove("epoch");
    issue(&n, &alice, &no_epoch)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // An unknown thread, and a thread the caller is not in, are not found.
    let nowhere = n.thread_id();
    issue(
        &n,
        &alice,
        &token(&n, &alice, &bob, &nowhere, &["reply"], 0, false),
    )
    .await
    .expect_error(404, "THREAD_NOT_FOUND");
    issue(
        &n,
        &carol,
        &token(&n, &carol, &bob, &t, &["reply"], 0, false),
    )
    .await
    .expect_error(404, "THREAD_NOT_FOUND");
    assert!(listed(&n, &alice, &t).await.is_empty());
}

#[tokio::test]
async fn revoking_bumps_the_epoch_and_old_tokens_fail() {
    let n = TestNode::new();
    let (alice, bob, carol, t) = setup(&n).await;
    let a = token(&n, &alice, &bob, &t, &["add_participant"], 0, false);
    let b = token(&n, &alice, &bob, &t, &["add_participant"], 0, false);
    issue(&n, &alice, &a).await.expect(201);
    issue(&n, &alice, &b).await.expect(201);
    let a_id = a["id"].as_str().unwrap();
    let path = format!("/v1/capabilities/{a_id}");
    // Only the signed operation revokes; a mismatched or unsigned body changes nothing.
    let other = revoke_op(&n, &alice, &t, b["id"].as_str().unwrap());
    n.call("DELETE", &path, Some(&alice.token), Some(other))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    let mut unsigned = revoke_op(&n, &alice, &t, a_id);
    unsigned["content"]["structured"]["parameters"]["reason"] = "tampered".into();
    n.call("DELETE", &path, Some(&alice.token), Some(unsigned))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    // A participant who is not an owner cannot revoke (no admin token).
    n.call(
        "DELETE",
        &path,
        Some(&bob.token),
        Some(revoke_op(&n, &bob, &t, a_id)),
    )
    .await
    .expect_error(403, "CAPABILITY_DENIED");
    n.call(
        "DELETE",
        &path,
        Some(&carol.token),
        Some(revoke_op(&n, &carol, &t, a_id)),
    )
    .await
    .expect_error(404, "ENVELOPE_NOT_FOUND");
    assert_eq!(cap_epoch(&n, &alice, &t).await, 0);
    let r = n
        .call(
            "DELETE",
            &path,
            Some(&alice.token),
            Some(revoke_op(&n, &alice, &t, a_id)),
        )
        .await
        .expect(200);
    assert_eq!(r.body["cap_epoch"], 1);
    assert_eq!(r.body["envelope"]["type"], "thread_op");
    assert_eq!(cap_epoch(&n, &alice, &t).await, 1);
    n.call(
        "DELETE",
        &path,
        Some(&alice.token),
        Some(revoke_op(&n, &alice, &t, a_id)),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    // The revoked token and the other epoch-0 token are both dead now.
    let r = bob
        .send(&n, add_op(&n, &bob, &t, &carol, &a))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    assert_eq!(
        r.body["error"]["details"]["field"],
        "capability_token.epoch"
    );
    bob.send(&n, add_op(&n, &bob, &t, &carol, &b))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    let statuses: Vec<Value> = listed(&n, &alice, &t)
        .await
        .iter()
        .map(|c| c["status"].clone())
        .collect();
    assert_eq!(statuses, vec![json!("revoked"), json!("stale_epoch")]);
    // A fresh token of the new epoch works.
    let c = token(&n, &alice, &bob, &t, &["add_participant"], 1, false);
    issue(&n, &alice, &c).await.expect(201);
    bob.send(&n, add_op(&n, &bob, &t, &carol, &c))
        .await
        .expect(201);
    // The holder and the participants get a capability.revoked event (§17.3).
    let ev = n.get("/v1/events", &bob.token).await.expect(200);
    let revoked: Vec<&Value> = ev.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "capability.revoked")
        .collect();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0]["payload"]["capability_id"], a_id);
}

#[tokio::test]
async fn single_use_tokens_work_once() {
    let n = TestNode::new();
    let (alice, bob, carol, t) = setup(&n).await;
    let dave = n.register("dave", "human", 4).await;
    let once = token(&n, &alice, &bob, &t, &["add_participant"], 0, true);
    issue(&n, &alice, &once).await.expect(201);
    bob.send(&n, add_op(&n, &bob, &t, &carol, &once))
        .await
        .expect(201);
    let r = bob
        .send(&n, add_op(&n, &bob, &t, &dave, &once))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    assert_eq!(
        r.body["error"]["details"]["field"],
        "capability_token.single_use"
    );
    assert_eq!(listed(&n, &bob, &t).await[0]["status"], "spent");
    n.get(&format!("/v1/threads/{t}"), &dave.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
}

#[tokio::test]
async fn a_token_for_another_thread_is_denied() {
    let n = TestNode::new();
    let (alice, bob, carol, t) = setup(&n).await;
    let t2 = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t2, None, &[&bob], "second"))
        .await
        .expect(201);
    let elsewhere = token(&n, &alice, &bob, &t2, &["add_participant"], 0, false);
    issue(&n, &alice, &elsewhere).await.expect(201);
    let r = bob
        .send(&n, add_op(&n, &bob, &t, &carol, &elsewhere))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // The issuer has no authority on this thread (and the scope names another one).
    assert!(
        r.body["error"]["details"]["field"]
            .as_str()
            .unwrap()
            .starts_with("capability_token."),
        "{}",
        r.body
    );
    n.get(&format!("/v1/threads/{t}"), &carol.token)
        .await
        .expect_error(404, "THREAD_NOT_FOUND");
}
