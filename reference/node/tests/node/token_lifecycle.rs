//! Token lifecycle (v1.1 §14.2, issue 19): a refresh revokes the previous access token of
//! the same login at once, and a refresh token presented again after its rotation revokes
//! every token of that login (refresh-token reuse detection, OAuth 2.0 Security BCP §4.14).
//! Another login of the same identity is untouched, and the authentication cache drops
//! exactly the revoked tokens.

use crate::support::TestNode;
use loom_node::store::tokens::token_hash;
use serde_json::{Value, json};

async fn refresh(n: &TestNode, rt: &str) -> crate::support::Resp {
    n.call(
        "POST",
        "/v1/auth/refresh",
        None,
        Some(json!({"refresh_token": rt})),
    )
    .await
}

fn pair(r: &crate::support::Resp) -> (String, String) {
    let s = |k: &str| r.body[k].as_str().unwrap().to_owned();
    (s("access_token"), s("refresh_token"))
}

fn cached(n: &TestNode, token: &str) -> bool {
    n.node
        .service()
        .store
        .cache
        .tokens
        .get(&token_hash(token))
        .is_some()
}

#[tokio::test]
async fn a_refresh_revokes_the_previous_access_token_of_that_login_only() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    // A second login of the same identity (another device).
    let (other_at, other_rt) = n.login(&alice.address, &alice.key, &alice.key_id).await;
    n.get("/v1/identity/me", &alice.token).await.expect(200);
    n.get("/v1/identity/me", &other_at).await.expect(200);
    assert!(cached(&n, &alice.token) && cached(&n, &other_at));

    let r = refresh(&n, &alice.refresh).await.expect(200);
    let (new_at, new_rt) = pair(&r);
    let refused = n
        .get("/v1/identity/me", &alice.token)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    assert!(
        refused.body["error"]["details"]["reason"]
            .as_str()
            .is_some_and(|m| m.contains("revoked")),
        "{}",
        refused.body
    );
    n.get("/v1/identity/me", &new_at).await.expect(200);
    // The other login keeps working, and its cache entry was not dropped.
    assert!(
        cached(&n, &other_at),
        "only the rotated login's entries are dropped"
    );
    n.get("/v1/identity/me", &other_at).await.expect(200);
    refresh(&n, &other_rt).await.expect(200);
    // A second rotation in the same family ends the access token of the first one.
    let (newer_at, _) = pair(&refresh(&n, &new_rt).await.expect(200));
    n.get("/v1/identity/me", &new_at)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    n.get("/v1/identity/me", &newer_at).await.expect(200);
}

#[tokio::test]
async fn a_reused_refresh_token_revokes_every_token_of_its_login() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let (other_at, other_rt) = n.login(&alice.address, &alice.key, &alice.key_id).await;

    let (at2, rt2) = pair(&refresh(&n, &alice.refresh).await.expect(200));
    n.get("/v1/identity/me", &at2).await.expect(200);
    assert!(cached(&n, &at2));

    // The first refresh token again: a stolen copy or a replay.
    let reuse = refresh(&n, &alice.refresh)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let reason = reuse.body["error"]["details"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("§4.14") && reason.contains("log in again"),
        "{reason}"
    );

    // Every token of that login is gone, at once (the cache entry too) ...
    assert!(!cached(&n, &at2));
    n.get("/v1/identity/me", &at2)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    refresh(&n, &rt2)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    // ... and the other login is untouched.
    n.get("/v1/identity/me", &other_at).await.expect(200);
    refresh(&n, &other_rt).await.expect(200);

    // The reuse is in the audit log.
    let conn = n.node.service().store.conn();
    let actions: Vec<String> = conn
        .prepare("SELECT action FROM audit_log ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        actions.iter().any(|a| a == "security.refresh_token_reuse"),
        "{actions:?}"
    );
}

#[tokio::test]
async fn an_access_token_is_not_a_refresh_token() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let r = refresh(&n, &alice.token)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    assert_eq!(
        r.body["error"]["details"]["reason"],
        Value::from("this is not a refresh token"),
        "{}",
        r.body
    );
    // A refused refresh changes nothing: the access token still works.
    n.get("/v1/identity/me", &alice.token).await.expect(200);
}
