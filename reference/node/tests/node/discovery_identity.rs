//! Discovery (§15.2), registration (DESIGN.md §9), identity (§16.3) and auth (§14.2).

use crate::support::{DOMAIN, TestNode};
use serde_json::json;

#[tokio::test]
async fn the_node_document_has_every_section_15_2_member() {
    let n = TestNode::new();
    let r = n
        .call("GET", "/.well-known/loom.json", None, None)
        .await
        .expect(200);
    let d = &r.body;
    for m in [
        "node_id",
        "domain",
        "api_url",
        "websocket_url",
        "signing_keys",
        "supported_versions",
        "supported_profiles",
    ] {
        assert!(!d[m].is_null(), "{m} missing: {d}");
    }
    assert_eq!(d["domain"], DOMAIN);
    assert!(
        d["federation"]["deliver_url"]
            .as_str()
            .unwrap()
            .ends_with("/v1/federation/deliver")
    );
    assert!(
        ["open", "quarantine", "allowlist"].contains(&d["federation"]["policy"].as_str().unwrap())
    );
    assert!(
        d["signing_keys"][0]["key_id"]
            .as_str()
            .unwrap()
            .starts_with("k_node_sign_")
    );
    assert_eq!(r.headers["content-type"], "application/json; charset=utf-8");
    let caps = n
        .call("GET", "/v1/protocol/capabilities", None, None)
        .await
        .expect(200);
    assert_eq!(caps.body["conformance_level"], 2);
}

#[tokio::test]
async fn register_login_and_resolve() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    assert!(alice.token.starts_with("at_") && alice.refresh.starts_with("rt_"));
    let me = n.get("/v1/identity/me", &alice.token).await.expect(200);
    assert_eq!(me.body["id"], alice.address);
    assert_eq!(me.body["type"], "human");
    let r = n
        .call(
            "GET",
            "/v1/identity/loom%3A%2F%2Falice%40node.test",
            None,
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["public_keys"]["signing"][0]["key_id"], alice.key_id);
    n.call(
        "GET",
        "/v1/identity/loom%3A%2F%2Fnobody%40node.test",
        None,
        None,
    )
    .await
    .expect_error(404, "IDENTITY_NOT_FOUND");
}

#[tokio::test]
async fn duplicate_registration_is_409() {
    let n = TestNode::new();
    n.register("alice", "human", 1).await;
    let ch = n
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(json!({"identity": "loom://alice@node.test", "key_id": "k_sign_alice_1"})),
        )
        .await
        .expect(200);
    // Any proof: the duplicate is reported only after a valid proof, so try a valid one.
    let key = loom_protocol::keys::signing_key_from_seed(&[1; 32]);
    let mut req = json!({"id": "loom://alice@node.test", "type": "human", "display_name": "alice",
        "signing_keys": [{"key_id": "k_sign_alice_1", "public_key_pem": loom_protocol::keys::public_key_to_spki_pem(&key.verifying_key())}]});
    let hash = loom_node::service::identity::registration_document_hash(&req);
    let text = loom_node::service::identity::registration_text(
        "loom://alice@node.test",
        "k_sign_alice_1",
        &hash,
        ch.body["nonce"].as_str().unwrap(),
    );
    req["registration_proof"] = json!({"challenge_id": ch.body["challenge_id"], "key_id": "k_sign_alice_1",
        "signature": loom_protocol::keys::sign_b64url(&key, None, text.as_bytes())});
    n.call("POST", "/v1/identity", None, Some(req))
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
}

#[tokio::test]
async fn a_wrong_registration_proof_is_refused_and_burns_the_challenge() {
    let n = TestNode::new();
    let ch = n
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(json!({"identity": "loom://eve@node.test", "key_id": "k_sign_eve_1"})),
        )
        .await
        .expect(200);
    let key = loom_protocol::keys::signing_key_from_seed(&[9; 32]);
    let req = json!({"id": "loom://eve@node.test", "type": "human",
        "signing_keys": [{"key_id": "k_sign_eve_1", "public_key_pem": loom_protocol::keys::public_key_to_spki_pem(&key.verifying_key())}],
        "registration_proof": {"challenge_id": ch.body["challenge_id"], "key_id": "k_sign_eve_1", "signature": loom_protocol::keys::sign_b64url(&key, None, b"something else")}});
    n.call("POST", "/v1/identity", None, Some(req.clone()))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let again = n
        .call("POST", "/v1/identity", None, Some(req))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    assert!(
        again.body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{}",
        again.body
    );
    n.call(
        "GET",
        "/v1/identity/loom%3A%2F%2Feve%40node.test",
        None,
        None,
    )
    .await
    .expect_error(404, "IDENTITY_NOT_FOUND");
}

#[tokio::test]
async fn tokens_expire_refresh_rotates_and_bad_tokens_are_401() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    n.get("/v1/identity/me", "at_nonsense")
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    n.call("GET", "/v1/identity/me", None, None)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    n.clock.advance_ms(3_600_001);
    n.get("/v1/identity/me", &alice.token)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let r = n
        .call(
            "POST",
            "/v1/auth/refresh",
            None,
            Some(json!({"refresh_token": alice.refresh})),
        )
        .await
        .expect(200);
    let fresh = r.body["access_token"].as_str().unwrap();
    n.get("/v1/identity/me", fresh).await.expect(200);
    // The old refresh token was rotated out.
    n.call(
        "POST",
        "/v1/auth/refresh",
        None,
        Some(json!({"refresh_token": alice.refresh})),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
    // An access token is not a refresh token.
    n.call(
        "POST",
        "/v1/auth/refresh",
        None,
        Some(json!({"refresh_token": fresh})),
    )
    .await
    .expect_error(401, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn login_with_a_wrong_signature_fails_and_the_challenge_is_single_use() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let ch = n
        .call(
            "POST",
            "/v1/auth/challenge",
            None,
            Some(json!({"identity": alice.address, "key_id": alice.key_id})),
        )
        .await
        .expect(200);
    let bad = loom_protocol::keys::sign_b64url(&alice.key, None, b"not the nonce");
    n.call("POST", "/v1/auth/token", None, Some(json!({"identity": alice.address, "key_id": alice.key_id, "challenge": ch.body["challenge_id"], "signature": bad}))).await.expect_error(401, "SIGNATURE_INVALID");
    let good = loom_protocol::keys::sign_b64url(
        &alice.key,
        None,
        ch.body["nonce"].as_str().unwrap().as_bytes(),
    );
    n.call("POST", "/v1/auth/token", None, Some(json!({"identity": alice.address, "key_id": alice.key_id, "challenge": ch.body["challenge_id"], "signature": good}))).await.expect_error(401, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn keys_can_be_added_and_revoked_but_not_the_last_one() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    n.call(
        "DELETE",
        &format!("/v1/identity/me/keys/{}", alice.key_id),
        Some(&alice.token),
        None,
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    let k2 = loom_protocol::keys::signing_key_from_seed(&[2; 32]);
    let r = n.call("POST", "/v1/identity/me/keys", Some(&alice.token), Some(json!({"key_id": "k_sign_alice_2", "public_key_pem": loom_protocol::keys::public_key_to_spki_pem(&k2.verifying_key())}))).await.expect(201);
    assert_eq!(
        r.body["public_keys"]["signing"].as_array().unwrap().len(),
        2
    );
    n.call(
        "DELETE",
        &format!("/v1/identity/me/keys/{}", alice.key_id),
        Some(&alice.token),
        None,
    )
    .await
    .expect(200);
    // The token backed by the revoked key is gone with it.
    n.get("/v1/identity/me", &alice.token)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
}

#[tokio::test]
async fn transport_errors_are_section_24_1_bodies() {
    let n = TestNode::new();
    n.call("GET", "/v1/no/such/route", None, None)
        .await
        .expect_error(404, "EXTENSION_DISABLED");
    let r = n
        .call("DELETE", "/.well-known/loom.json", None, None)
        .await
        .expect_error(405, "EXTENSION_DISABLED");
    assert!(r.headers.get("allow").is_some());
    n.raw(
        "POST",
        "/v1/auth/challenge",
        None,
        &[],
        Some(("text/plain", b"{}".to_vec())),
    )
    .await
    .expect_error(415, "ENVELOPE_INVALID");
    n.raw(
        "POST",
        "/v1/auth/challenge",
        None,
        &[],
        Some(("application/json", b"{\"a\":1,\"a\":2}".to_vec())),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
    n.raw(
        "POST",
        "/v1/auth/challenge",
        None,
        &[],
        Some(("application/json", vec![0xff, 0xfe])),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
    let big = vec![b' '; 2 * 1024 * 1024];
    n.raw(
        "POST",
        "/v1/auth/challenge",
        None,
        &[],
        Some(("application/json", big)),
    )
    .await
    .expect_error(413, "PAYLOAD_TOO_LARGE");
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    n.raw(
        "POST",
        "/v1/auth/challenge",
        None,
        &[],
        Some(("application/json", deep.into_bytes())),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
}

/// §6.3/§6.4: agents publish their delegation, teams their members and routing policy,
/// services their operator; the delegator's signature must verify and the delegator exist.
#[tokio::test]
async fn typed_identities_publish_their_members_and_agents_need_a_signed_delegation() {
    let n = TestNode::new();
    let bot = n.register("bot", "agent", 5).await;
    let doc = n.get("/v1/identity/me", &bot.token).await.expect(200).body;
    assert_eq!(doc["type"], "agent");
    assert_eq!(doc["delegator"], format!("loom://sponsor-bot@{DOMAIN}"));
    for m in [
        "agent_info",
        "delegation_scope",
        "delegation_expires",
        "delegation_signature",
    ] {
        assert!(!doc[m].is_null(), "{m} missing from {doc}");
    }
    let team = n.register("desk", "team", 6).await;
    let doc = n.get("/v1/identity/me", &team.token).await.expect(200).body;
    assert_eq!(doc["routing_policy"], "all");
    assert_eq!(doc["members"], json!([]));
    let svc = n.register("cron", "service", 7).await;
    let doc = n.get("/v1/identity/me", &svc.token).await.expect(200).body;
    assert_eq!(doc["operator"], "LOOM test suite");

    // Signed by someone other than the named delegator: refused, nothing stored.
    let mut forged = n.type_members("bot2", "agent", 8).await;
    let other = n.type_members("bot3", "agent", 9).await;
    forged["delegation_signature"] = other["delegation_signature"].clone();
    let r = n.post_registration("bot2", "agent", 8, forged).await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "SIGNATURE_INVALID");
    assert_eq!(r.body["error"]["details"]["field"], "delegation_signature");
    // A local delegator that is not registered.
    let mut ghost = n.type_members("bot4", "agent", 10).await;
    ghost["delegator"] = format!("loom://ghost@{DOMAIN}").into();
    let r = n.post_registration("bot4", "agent", 10, ghost).await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.body);
    assert_eq!(r.body["error"]["details"]["field"], "delegator");
    assert_eq!(r.body["error"]["details"]["section"], "v1.1 §6.4");
}
