//! Delegations over the API (v1.1 §16.5, §13): creating a signed link, listing by role,
//! revoking it (§13.4) — after which an agent envelope carrying the link is
//! `DELEGATION_INVALID` end to end — and rejected requests that change nothing.

use crate::support::{Ident, TestNode};
use loom_protocol::id::{KeyId, KeyKind};
use serde_json::{Value, json};

fn link(
    n: &TestNode,
    delegator: &Ident,
    delegate: &Ident,
    scope: &[&str],
    id: Option<&str>,
) -> Value {
    let mut l = json!({
        "delegator": delegator.address,
        "delegate": delegate.address,
        "scope": scope,
        "created_at": n.now(),
        "expires_at": "2027-01-01T00:00:00Z",
        "revocable": true,
        "allow_sub_delegation": false,
    });
    if let Some(id) = id {
        l["id"] = id.into();
    }
    sign(delegator, &mut l);
    l
}

fn sign(delegator: &Ident, l: &mut Value) {
    let kid = KeyId::parse(&delegator.key_id, KeyKind::Signing).unwrap();
    loom_protocol::delegation::sign_delegation_link(l, &delegator.key, &kid).unwrap();
}

async fn create(n: &TestNode, who: &Ident, l: &Value) -> crate::support::Resp {
    n.call("POST", "/v1/delegations", Some(&who.token), Some(l.clone()))
        .await
}

async fn list(n: &TestNode, who: &Ident, role: &str) -> Vec<Value> {
    n.get(&format!("/v1/delegations{role}"), &who.token)
        .await
        .expect(200)
        .body["delegations"]
        .as_array()
        .unwrap()
        .clone()
}

fn audit_count(n: &TestNode, action: &str) -> i64 {
    n.node
        .service()
        .store
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM audit_log WHERE action = ?1",
            [action],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn a_revoked_delegation_stops_the_agent() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let bot = n.register("bot.alice", "agent", 5).await;
    let l = link(&n, &alice, &bot, &["message.*"], None);
    let r = create(&n, &alice, &l).await.expect(201);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("dlg_"), "{id}");
    // The assigned id sits beside the link; the link is exactly as signed.
    assert_eq!(r.body["link"], l);
    assert_eq!(r.body["status"], "active");
    assert_eq!(audit_count(&n, "delegation.created"), 1);
    assert_eq!(list(&n, &alice, "?role=delegator").await.len(), 1);
    assert_eq!(list(&n, &alice, "?role=delegate").await.len(), 0);
    assert_eq!(list(&n, &bot, "?role=delegate").await.len(), 1);
    assert_eq!(list(&n, &bot, "").await.len(), 1);
    assert!(list(&n, &bob, "").await.is_empty());
    n.get("/v1/delegations?role=owner", &alice.token)
        .await
        .expect_error(400, "ENVELOPE_INVALID");

    let t = n.thread_id();
    let mut env = bot.message(&n, &t, None, &[&alice], "on behalf of alice");
    env["from"]["delegation_chain"] = json!([l]);
    bot.send(&n, env).await.expect(201);

    let path = format!("/v1/delegations/{id}");
    n.call("DELETE", &path, Some(&bot.token), None)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    n.call("DELETE", &path, Some(&bob.token), None)
        .await
        .expect_error(404, "ENVELOPE_NOT_FOUND");
    assert_eq!(list(&n, &bot, "").await[0]["status"], "active");
    let r = n
        .call(
            "DELETE",
            &format!("{path}?reason=lost"),
            Some(&alice.token),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["status"], "revoked");
    assert!(r.body["revoked_at"].is_string());
    assert_eq!(audit_count(&n, "delegation.revoked"), 1);
    n.call("DELETE", &path, Some(&alice.token), None)
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");

    // Both ends learn of it (§13.4, §17.3).
    for who in [&alice, &bot] {
        let ev = n.get("/v1/events", &who.token).await.expect(200);
        let found: Vec<&Value> = ev.body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "delegation.revoked")
            .collect();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0]["payload"]["delegation_id"], id.as_str());
        assert_eq!(found[0]["payload"]["reason"], "lost");
    }
    assert!(
        !n.get("/v1/events", &bob.token).await.body["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "delegation.revoked")
    );

    let mut env = bot.message(&n, &t, None, &[&alice], "still here?");
    env["from"]["delegation_chain"] = json!([l]);
    bot.send(&n, env)
        .await
        .expect_error(403, "DELEGATION_INVALID");
}

#[tokio::test]
async fn a_link_with_its_own_id_is_revoked_by_id() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bot = n.register("bot.alice", "agent", 5).await;
    let l = link(&n, &alice, &bot, &["*"], Some("dlg_custom-1"));
    let r = create(&n, &alice, &l).await.expect(201);
    assert_eq!(r.body["id"], "dlg_custom-1");
    create(&n, &alice, &l)
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
    n.call(
        "DELETE",
        "/v1/delegations/dlg_custom-1",
        Some(&alice.token),
        None,
    )
    .await
    .expect(200);
    let t = n.thread_id();
    let mut env = bot.message(&n, &t, None, &[&alice], "hi");
    env["from"]["delegation_chain"] = json!([l]);
    bot.send(&n, env)
        .await
        .expect_error(403, "DELEGATION_INVALID");
}

#[tokio::test]
async fn bad_links_are_refused_and_nothing_is_stored() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let bot = n.register("bot.alice", "agent", 5).await;
    // Only the delegator may submit its link.
    let l = link(&n, &alice, &bot, &["message.*"], None);
    create(&n, &bob, &l)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // Scope syntax (§13.2).
    let r = create(&n, &alice, &link(&n, &alice, &bot, &["Message.*"], None))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(r.body["error"]["details"]["field"], "scope[0]");
    create(&n, &alice, &link(&n, &alice, &bot, &["a.*.b"], None))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // An agent may not hand out '*'.
    let helper = n.register("helper.bot", "agent", 6).await;
    create(&n, &bot, &link(&n, &bot, &helper, &["*"], None))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // Expired.
    let mut old = link(&n, &alice, &bot, &["message.*"], None);
    old["expires_at"] = "2026-01-01T00:00:00Z".into();
    sign(&alice, &mut old);
    create(&n, &alice, &old)
        .await
        .expect_error(403, "DELEGATION_INVALID");
    // No expiry at all.
    let mut forever = link(&n, &alice, &bot, &["message.*"], None);
    forever.as_object_mut().unwrap().remove("expires_at");
    sign(&alice, &mut forever);
    create(&n, &alice, &forever)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    // Tampered after signing.
    let mut tampered = link(&n, &alice, &bot, &["message.*"], None);
    tampered["scope"] = json!(["*"]);
    let r = create(&n, &alice, &tampered)
        .await
        .expect_error(403, "DELEGATION_INVALID");
    assert_eq!(r.body["error"]["details"]["field"], "signature");
    // Not an address.
    let mut nobody = link(&n, &alice, &bot, &["message.*"], None);
    nobody["delegate"] = "bot".into();
    sign(&alice, &mut nobody);
    create(&n, &alice, &nobody)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert!(list(&n, &alice, "").await.is_empty());
    assert!(list(&n, &bot, "").await.is_empty());
    assert_eq!(audit_count(&n, "delegation.created"), 0);
}
