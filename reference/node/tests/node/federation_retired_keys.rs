//! Retired keys on delivery (v1.0 §7.4: "Old keys MUST be retained in the identity document
//! (marked `retired`) for signature verification of historical envelopes"). A queued
//! envelope can reach its recipient's node after the sender rotated (store-and-forward,
//! v1.1 §15.5–§15.6). a.test here is a real node's document and key served by a small
//! stand-in, so its identity document can show alice's rotation: `k_sign_alice…` (the key
//! alice registered with) retired one hour after the start, a new key active.

use crate::support::fed::fed_pair;
use crate::support::{Ident, TestNode};
use axum::Router;
use axum::routing::get;
use loom_protocol::clock::Clock;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::{public_key_to_b64url, public_key_to_spki_pem};
use serde_json::{Value, json};

const HOUR_MS: i64 = 3_600_000;

/// alice's identity document as a.test would publish it after rotating at `retired_at`:
/// her registered key retired, `k_sign_alice_new` active; signed by a.test's node key.
fn rotated_document(a: &TestNode, alice: &Ident, retired_at: &str) -> Value {
    let svc = a.node.service();
    let mut doc = svc.resolve_identity(&alice.addr()).unwrap();
    let new = ed25519_dalek::SigningKey::from_bytes(&[42; 32]).verifying_key();
    let keys = doc["signing_keys"].as_array_mut().unwrap();
    assert_eq!(keys.len(), 1);
    keys[0]["status"] = "retired".into();
    keys[0]["retired_at"] = retired_at.into();
    keys.push(json!({
        "key_id": "k_sign_alice_new", "algorithm": "Ed25519",
        "public_key": public_key_to_b64url(&new),
        "public_key_pem": public_key_to_spki_pem(&new).trim_end(),
        "status": "active",
    }));
    let (key_id, key) = svc.node_key();
    loom_protocol::federation::sign_identity_document(&mut doc, key_id, key).unwrap();
    doc
}

/// Serves a.test's node document and `identity` (for any identity path) on `port`.
async fn stand_in(a: &TestNode, identity: Value, port: u16) {
    let node_doc = a.node.service().node_document();
    let app = Router::new()
        .route(
            "/.well-known/loom.json",
            get(move || {
                let d = node_doc.clone();
                async move { axum::Json(d) }
            }),
        )
        .route(
            "/v1/identity/{*id}",
            get(move || {
                let d = identity.clone();
                async move { axum::Json(d) }
            }),
        );
    let listener = crate::support::fed::listen(port).await;
    tokio::spawn(async move {
        let _ = loom_node::net::serve(listener, app, None, std::future::pending()).await;
    });
}

#[tokio::test]
async fn an_envelope_signed_before_a_rotation_is_accepted_after_it() {
    let (a, b, pa, _pb) = fed_pair(|_| {}, |_| {}).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let start = a.clock.now().unix_ms();
    let t = a.thread_id();
    // Written (and signed with alice's first key) at the start, queued.
    let historical = alice.sign(alice.message(&a, &t, None, &[&bob], "before the rotation"));
    // alice rotates one hour later; the envelope arrives two hours after the start.
    let retired_at = loom_protocol::Timestamp::from_unix_ms(start + HOUR_MS).to_rfc3339();
    let doc = rotated_document(&a, &alice, &retired_at);
    stand_in(&a, doc, pa).await;
    for n in [&a, &b] {
        n.clock.advance_ms(2 * HOUR_MS);
    }
    let (token, _) = b.login(&bob.address, &bob.key, &bob.key_id).await;
    let bob = Ident { token, ..bob };

    // After the retirement, still with the retired key: not historical, refused.
    let late = alice.sign(alice.message(&a, &t, None, &[&bob], "after the rotation"));
    // Signed with a key alice's document does not list at all.
    let mut unknown = alice.message(&a, &t, None, &[&bob], "unknown key");
    unknown["from"]["key_id"] = "k_sign_alice_zz".into();
    let other = ed25519_dalek::SigningKey::from_bytes(&[43; 32]);
    let kid = KeyId::parse("k_sign_alice_zz", KeyKind::Signing).unwrap();
    loom_protocol::envelope::sign_envelope(&mut unknown, &other, &kid).unwrap();

    for (env, what) in [(&late, "after retirement"), (&unknown, "unknown key")] {
        let (h, body) = a.signed_delivery(vec![env.clone()]);
        let r = b.deliver(&h, body).await;
        assert_eq!(r.status.as_u16(), 401, "{what}: {}", r.body);
        assert_eq!(r.body["error"]["code"], "SIGNATURE_INVALID", "{what}");
        assert_eq!(r.body["error"]["details"]["field"], "from.key_id", "{what}");
        let id = env["id"].as_str().unwrap();
        let got = b.get(&format!("/v1/envelopes/{id}"), &bob.token).await;
        assert_eq!(got.status.as_u16(), 404, "{what} stored nothing");
    }

    // The historical envelope verifies with the retired key (v1.0 §7.4).
    let (h, body) = a.signed_delivery(vec![historical.clone()]);
    let r = b.deliver(&h, body).await.expect(202);
    let id = historical["id"].as_str().unwrap();
    assert_eq!(r.body["receipt"]["accepted_envelope_ids"], json!([id]));
    let got = b
        .get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(got["content"]["human"]["text"], "before the rotation");
}
