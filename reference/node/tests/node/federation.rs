//! Two reference nodes federating on loopback (v1.1 §15, issue 15): `alice@a.test` writes
//! to `bob@b.test`, bob answers in the same thread; a message queued while the peer is down
//! survives a restart of the sender and is delivered once the peer is back; the 72 h TTL
//! ends, on the manual clock, in a `receipt.failed@v1` envelope for the sender; the policy
//! is enforced both ways; re-delivery and replays behave as §23.2 says.

use crate::support::fed::{fed_node, fed_pair, free_port, serve, temp_dir};
use crate::support::{Ident, TestNode};
use loom_node::{Quirks, Storage};
use loom_protocol::clock::Clock;
use serde_json::Value;

const HOUR_MS: i64 = 3_600_000;

async fn pair() -> (
    TestNode,
    TestNode,
    crate::support::fed::Served,
    crate::support::fed::Served,
) {
    let (a, b, pa, pb) = fed_pair(|_| {}, |_| {}).await;
    let sa = serve(&a, pa).await;
    let sb = serve(&b, pb).await;
    (a, b, sa, sb)
}

fn advance(nodes: &[&TestNode], ms: i64) {
    for n in nodes {
        n.clock.advance_ms(ms);
    }
}

async fn send(
    from: &Ident,
    node: &TestNode,
    thread: &str,
    parent: Option<&str>,
    to: &Ident,
    text: &str,
) -> Value {
    let env = from.message(node, thread, parent, &[to], text);
    from.send(node, env).await.expect(201).body
}

#[tokio::test]
async fn alice_writes_to_bob_and_bob_answers_in_the_same_thread() {
    let (a, b, _sa, _sb) = pair().await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let root = send(&alice, &a, &t, None, &bob, "hi bob").await;
    let rid = root["id"].as_str().unwrap().to_owned();
    assert_eq!(a.outbox().len(), 1, "one outbox row for b.test");
    assert_eq!(a.outbox()[0].destination, "b.test");

    let r = a.tick().await;
    assert_eq!((r.delivered, r.failed, r.retried), (1, 0, 0));
    assert_eq!(a.outbox()[0].state, "delivered");

    // Bob reads it on his node: b's own event_seq, the origin's origin_event_seq (§11.6).
    let got = b
        .get(&format!("/v1/envelopes/{rid}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(got["content"]["human"]["text"], "hi bob");
    assert_eq!(got["meta"]["event_seq"], 1);
    assert_eq!(got["meta"]["origin_event_seq"], 1);
    assert_eq!(got["meta"]["node_id"], "b.test");

    // Bob answers in the same thread; it travels back to a.test.
    let reply = send(&bob, &b, &t, Some(&rid), &alice, "hi alice").await;
    assert_eq!(b.outbox().len(), 1);
    assert_eq!(b.tick().await.delivered, 1);
    let on_a = a.thread_envelopes(&t, &alice).await;
    let ids: Vec<&str> = on_a.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids, [rid.as_str(), reply["id"].as_str().unwrap()]);
    assert_eq!(
        on_a[1]["meta"]["origin_event_seq"], 2,
        "bob's node numbered it 2"
    );
    // Received envelopes are not sent on again.
    assert_eq!(a.outbox().len(), 1);
    assert_eq!(b.outbox().len(), 1);
}

#[tokio::test]
async fn a_message_queued_while_the_peer_is_down_is_delivered_after_restarts() {
    let (pa, pb) = (free_port().await, free_port().await); // nothing listens on pb yet
    let dir = temp_dir("queued");
    let a = fed_node(
        "a.test",
        "b.test",
        pb,
        Storage::Dir(dir.clone()),
        Quirks::none(),
        |_| {},
    );
    let b = fed_node(
        "b.test",
        "a.test",
        pa,
        Storage::Memory,
        Quirks::none(),
        |_| {},
    );
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let root = send(&alice, &a, &t, None, &bob, "are you there?").await;
    let rid = root["id"].as_str().unwrap().to_owned();

    let r = a.tick().await;
    assert_eq!((r.delivered, r.retried), (0, 1));
    let row = &a.outbox()[0];
    assert_eq!((row.state.as_str(), row.attempts), ("queued", 1));
    assert_eq!(row.last_failure.as_deref(), Some("unreachable"));

    // The sending node restarts: the outbox is in its store.
    let now = a.clock.now();
    drop(a);
    let a = fed_node(
        "a.test",
        "b.test",
        pb,
        Storage::Dir(dir.clone()),
        Quirks::none(),
        |_| {},
    );
    a.clock.set(now);
    assert_eq!(a.outbox()[0].state, "queued");
    let sa = serve(&a, pa).await;

    // The peer comes up; once the backoff delay has passed the message goes out.
    let _sb = serve(&b, pb).await;
    advance(&[&a, &b], 1_000);
    assert_eq!(a.tick().await.delivered, 1);
    let got = b
        .get(&format!("/v1/envelopes/{rid}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(got["content"]["human"]["text"], "are you there?");
    sa.stop().await;
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The receipt envelopes `who` can see on `node`.
async fn failure_receipts(node: &TestNode, who: &Ident) -> Vec<Value> {
    let list = node
        .get("/v1/threads?limit=50", &who.token)
        .await
        .expect(200)
        .body;
    let mut out = Vec::new();
    for t in list["threads"].as_array().unwrap() {
        for e in node.thread_envelopes(t["id"].as_str().unwrap(), who).await {
            if e["type"] == "receipt" {
                out.push(e);
            }
        }
    }
    out
}

#[tokio::test]
async fn the_ttl_ends_in_a_failure_receipt_for_the_sender() {
    // Neither node is served: every delivery attempt of a fails.
    let (a, b, _, _) = fed_pair(|_| {}, |_| {}).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let root = send(&alice, &a, &t, None, &bob, "lost").await;
    let rid = root["id"].as_str().unwrap().to_owned();
    a.tick().await;
    // Backoff grows: each retry is due later than the last (§15.6).
    let mut gaps = Vec::new();
    for _ in 0..4 {
        let due = a.node.service().next_outbox_due().unwrap().unwrap();
        let gap = due.unix_ms() - a.clock.now().unix_ms();
        gaps.push(gap);
        a.clock.advance_ms(gap);
        assert_eq!(a.tick().await.retried, 1);
    }
    assert!(
        gaps.windows(2).all(|w| w[1] > w[0]),
        "delays grow: {gaps:?}"
    );
    assert!(failure_receipts(&a, &alice).await.is_empty());

    a.clock.advance_ms(72 * HOUR_MS);
    let (token, _) = a.login(&alice.address, &alice.key, &alice.key_id).await;
    let alice = Ident { token, ..alice };
    let r = a.tick().await;
    assert_eq!(r.failed, 1);
    let row = &a.outbox()[0];
    assert_eq!(
        (row.state.as_str(), row.reason.as_deref()),
        ("failed", Some("NODE_UNREACHABLE"))
    );
    let receipts = failure_receipts(&a, &alice).await;
    assert_eq!(receipts.len(), 1);
    let p = &receipts[0]["content"]["structured"];
    assert_eq!(p["intent"], "receipt.failed@v1");
    assert_eq!(p["parameters"]["envelope_id"], rid.as_str());
    assert_eq!(p["parameters"]["reason"], "NODE_UNREACHABLE");
    assert_eq!(p["parameters"]["recipient"], bob.address.as_str());
    assert_eq!(receipts[0]["from"]["identity"], "loom://loom-node@a.test");
    // Nothing more is attempted.
    a.clock.advance_ms(HOUR_MS);
    assert_eq!(a.tick().await, Default::default());
}

#[tokio::test]
async fn identical_redelivery_is_accepted_once_and_a_replay_is_refused() {
    let (a, b, _sa, _sb) = pair().await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let env = alice.sign(alice.message(&a, &t, None, &[&bob], "once"));
    let (h, body) = a.signed_delivery(vec![env.clone()]);
    let r = b.deliver(&h, body.clone()).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "accepted");
    assert_eq!(r.body["receipt"]["accepted_envelope_ids"][0], env["id"]);
    assert_eq!(r.body["receipt"]["sender_node"], "b.test");
    assert!(r.body["receipt"]["signature"]["value"].is_string());
    // The same request again: a replayed nonce (§15.3).
    let replay = b
        .deliver(&h, body)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    assert_eq!(replay.body["error"]["details"]["field"], "X-LOOM-Nonce");
    // A new request carrying the same envelope: accepted, stored once (§23.2).
    let before = b.node.service().store.fingerprint().unwrap();
    let (h2, body2) = a.signed_delivery(vec![env.clone()]);
    let r = b.deliver(&h2, body2).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "accepted");
    let after = b.node.service().store.fingerprint().unwrap();
    let envelopes = |f: &str| {
        f.split(';')
            .find(|p| p.starts_with("envelopes="))
            .unwrap()
            .to_owned()
    };
    assert_eq!(envelopes(&before), envelopes(&after));
    // A different envelope under the stored id is a duplicate.
    let mut other = alice.message(&a, &t, None, &[&bob], "changed");
    other["id"] = env["id"].clone();
    let (h3, body3) = a.signed_delivery(vec![alice.sign(other)]);
    b.deliver(&h3, body3)
        .await
        .expect_error(409, "ENVELOPE_DUPLICATE");
}

#[tokio::test]
async fn a_bad_envelope_in_a_batch_leaves_the_receipt_partial() {
    let (a, b, _sa, _sb) = pair().await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let good = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "good"));
    let mut bad = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "bad"));
    bad["content"]["human"]["text"] = "tampered".into();
    let (h, body) = a.signed_delivery(vec![good.clone(), bad.clone()]);
    let r = b.deliver(&h, body).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "partial");
    assert_eq!(
        r.body["receipt"]["accepted_envelope_ids"],
        serde_json::json!([good["id"]])
    );
    assert_eq!(r.body["rejected"][0]["envelope_id"], bad["id"]);
    assert_eq!(r.body["rejected"][0]["error"]["code"], "SIGNATURE_INVALID");
    b.get(
        &format!("/v1/envelopes/{}", bad["id"].as_str().unwrap()),
        &bob.token,
    )
    .await
    .expect_error(404, "ENVELOPE_NOT_FOUND");
}

#[tokio::test]
async fn a_foreign_sender_is_refused() {
    let (a, b, _sa, _sb) = pair().await;
    let bob = b.register("bob", "human", 2).await;
    let carol = b.register("carol", "human", 3).await;
    // a.test delivers an envelope signed by b.test's own carol: not a.test's to deliver.
    let env = carol.sign(carol.message(&b, &b.thread_id(), None, &[&bob], "forged route"));
    let (h, body) = a.signed_delivery(vec![env]);
    let r = b
        .deliver(&h, body)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    assert_eq!(r.body["error"]["details"]["field"], "from.identity");
}

#[tokio::test]
async fn the_federation_policy_is_enforced_both_ways() {
    let (a, b, pa, pb) = fed_pair(
        |c| {
            c.federation.blocklist = vec!["b.test".into()];
        },
        |c| {
            c.federation_policy = "allowlist".into();
        },
    )
    .await;
    let (_sa, _sb) = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    // b.test's allowlist does not name a.test.
    let env = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "x"));
    let (h, body) = a.signed_delivery(vec![env]);
    b.deliver(&h, body)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // a.test blocks b.test: its outbox fails the delivery at once.
    send(&alice, &a, &a.thread_id(), None, &bob, "y").await;
    assert_eq!(a.tick().await.failed, 1);
    assert_eq!(a.outbox()[0].reason.as_deref(), Some("CAPABILITY_DENIED"));
}

#[tokio::test]
async fn the_node_document_and_hello_describe_federation() {
    let (a, _b, _sa, _sb) = pair().await;
    let doc = a
        .call("GET", "/.well-known/loom.json", None, None)
        .await
        .expect(200)
        .body;
    assert_eq!(doc["conformance_level"], 2);
    let fed = &doc["federation"];
    assert!(
        fed["deliver_url"]
            .as_str()
            .unwrap()
            .ends_with("/v1/federation/deliver")
    );
    assert!(
        fed["identity_resolve_url"]
            .as_str()
            .unwrap()
            .contains("{identity}")
    );
    assert!(
        fed["signing_keys"][0]["public_key_pem"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );
    let view = loom_protocol::federation::read_node_document(&doc, "a.test").unwrap();
    let hello = a
        .call("GET", "/v1/federation/hello", None, None)
        .await
        .expect(200)
        .body;
    loom_protocol::federation::hello::verify_hello(&hello, &view.keys).unwrap();
    // Identity documents carry the home node's signature (DESIGN.md §9).
    let alice = a.register("alice", "human", 1).await;
    let id = a
        .call(
            "GET",
            "/v1/identity/loom%3A%2F%2Falice%40a.test",
            None,
            None,
        )
        .await
        .expect(200)
        .body;
    let v = loom_protocol::federation::verify_identity_document(&id, &view.keys).unwrap();
    assert_eq!(v.signing_keys[0].0, alice.key_id);
}

#[tokio::test]
async fn quarantine_holds_deliveries_from_unlisted_peers() {
    let (a, b, pa, pb) = fed_pair(
        |_| {},
        |c| {
            c.federation_policy = "quarantine".into();
        },
    )
    .await;
    let (_sa, _sb) = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let env = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "held"));
    let (h, body) = a.signed_delivery(vec![env.clone()]);
    let r = b.deliver(&h, body).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "accepted");
    // Held, not threaded: bob cannot read it.
    b.get(
        &format!("/v1/envelopes/{}", env["id"].as_str().unwrap()),
        &bob.token,
    )
    .await
    .expect_error(404, "ENVELOPE_NOT_FOUND");
    let fp = b.node.service().store.fingerprint().unwrap();
    assert!(fp.contains("federation_quarantine=1;"), "{fp}");
}

/// A delegation link `delegator` → `delegate` with `scope`, signed by `signer`'s key under
/// the delegator's key id (v1.1 §13.1, §13.3.1).
fn link(
    n: &TestNode,
    delegator: &Ident,
    delegate: &Ident,
    scope: &[&str],
    signer: &Ident,
) -> Value {
    let mut l = serde_json::json!({
        "delegator": delegator.address,
        "delegate": delegate.address,
        "scope": scope,
        "created_at": n.now(),
        "expires_at": "2099-01-01T00:00:00Z",
        "revocable": true,
        "allow_sub_delegation": false,
    });
    let kid =
        loom_protocol::id::KeyId::parse(&delegator.key_id, loom_protocol::id::KeyKind::Signing)
            .unwrap();
    loom_protocol::delegation::sign_delegation_link(&mut l, &signer.key, &kid).unwrap();
    l
}

#[tokio::test]
async fn a_delivered_agent_envelope_is_judged_by_its_delegation_chain() {
    let (a, b, _sa, _sb) = pair().await;
    let carol = a.register("carol", "human", 3).await;
    let bot = a.register("bot", "agent", 9).await;
    let bob = b.register("bob", "human", 2).await;
    let mallory = a.register("mallory", "human", 4).await;
    let agent_message = |chain: Vec<Value>| {
        let mut env = bot.message(&a, &a.thread_id(), None, &[&bob], "on carol's behalf");
        env["from"]["delegation_chain"] = Value::Array(chain);
        bot.sign(env)
    };
    // carol's link is verified with carol's keys, which b.test resolves from a.test although
    // carol sends nothing herself (§13.3 step 2).
    let good = link(&a, &carol, &bot, &["message.*"], &carol);
    let (h, body) = a.signed_delivery(vec![agent_message(vec![good])]);
    b.deliver(&h, body).await.expect(202);
    for (why, chain) in [
        ("no chain", vec![]),
        (
            "signed by another key",
            vec![link(&a, &carol, &bot, &["message.*"], &mallory)],
        ),
        (
            "scope excludes the action",
            vec![link(&a, &carol, &bot, &["calendar.*"], &carol)],
        ),
    ] {
        let (h, body) = a.signed_delivery(vec![agent_message(chain)]);
        let r = b.deliver(&h, body).await;
        assert_eq!(r.status.as_u16(), 403, "{why}: {}", r.body);
        assert_eq!(r.body["error"]["code"], "DELEGATION_INVALID", "{why}");
    }
}

#[tokio::test]
async fn a_rotated_sender_key_is_fetched_again_once_the_refetch_interval_passed() {
    let (a, b, pa, pb) = fed_pair(
        |_| {},
        |c| {
            c.federation.refetch_min_interval_ms = 5_000;
        },
    )
    .await;
    let (_sa, _sb) = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let deliver = |who: &Ident| {
        let env = who.sign(who.message(&a, &a.thread_id(), None, &[&bob], "x"));
        a.signed_delivery(vec![env])
    };
    let (h, body) = deliver(&alice);
    b.deliver(&h, body).await.expect(202);
    // alice adds a second key on a.test and signs with it (v1.0 §7.4 rotation).
    let k2 = loom_protocol::keys::signing_key_from_seed(&[22; 32]);
    a.call("POST", "/v1/identity/me/keys", Some(&alice.token), Some(serde_json::json!({"key_id": "k_sign_alice_2", "public_key_pem": loom_protocol::keys::public_key_to_spki_pem(&k2.verifying_key())}))).await.expect(201);
    let rotated = Ident {
        key: k2,
        key_id: "k_sign_alice_2".into(),
        ..alice.clone()
    };
    // Within the configured interval b.test keeps its cached document: the key is unknown.
    advance(&[&a, &b], 1_000);
    let (h, body) = deliver(&rotated);
    b.deliver(&h, body).await.expect(401);
    // Once the interval passed, the unknown key id makes b.test fetch alice again.
    advance(&[&a, &b], 5_000);
    let (h, body) = deliver(&rotated);
    b.deliver(&h, body).await.expect(202);
}

#[tokio::test]
async fn a_peer_accepts_deliveries_signed_with_a_rotated_node_key() {
    let dir = temp_dir("node-key-rotation");
    let (pa, pb) = (free_port().await, free_port().await);
    let a_node = |dir: &std::path::Path| {
        fed_node(
            "a.test",
            "b.test",
            pb,
            Storage::Dir(dir.to_path_buf()),
            Quirks::none(),
            |_| {},
        )
    };
    let a = a_node(&dir);
    let b = fed_node(
        "b.test",
        "a.test",
        pa,
        Storage::Memory,
        Quirks::none(),
        |_| {},
    );
    let sa = serve(&a, pa).await;
    let _sb = serve(&b, pb).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    send(
        &alice,
        &a,
        &a.thread_id(),
        None,
        &bob,
        "before the rotation",
    )
    .await;
    assert_eq!(a.tick().await.delivered, 1);
    let old = a.node.service().node_key().0.to_owned();
    sa.stop().await;
    drop(a);

    // `loom-node node-key rotate --data DIR` on the stopped node.
    let store = loom_node::store::Store::open(&Storage::Dir(dir.clone())).unwrap();
    let clock = loom_protocol::clock::ManualClock::new(
        loom_protocol::Timestamp::parse("2026-06-01T00:00:00Z").unwrap(),
    );
    let env = loom_node::Env::new(std::sync::Arc::new(clock), 99);
    let new = loom_node::Service::rotate_node_key(&store, &env).unwrap();
    drop(store);
    assert_ne!(new, old);

    let a = a_node(&dir);
    let _sa = serve(&a, pa).await;
    assert_eq!(a.node.service().node_key().0, new);
    let doc = a
        .call("GET", "/.well-known/loom.json", None, None)
        .await
        .body;
    for keys in [&doc["signing_keys"], &doc["federation"]["signing_keys"]] {
        let status = |id: &str| {
            keys.as_array()
                .unwrap()
                .iter()
                .find(|k| k["key_id"] == id)
                .map(|k| k["status"].clone())
        };
        assert_eq!(status(&new), Some("active".into()), "{keys}");
        assert_eq!(status(&old), Some("retired".into()), "{keys}");
    }
    // b.test still holds the old document; the new key id makes it fetch again once its
    // re-fetch interval (a minute by default) has passed.
    advance(&[&a, &b], 61_000);
    let (token, _) = a.login(&alice.address, &alice.key, &alice.key_id).await;
    let alice = Ident { token, ..alice };
    let sent = send(&alice, &a, &a.thread_id(), None, &bob, "after the rotation").await;
    assert_eq!(a.tick().await.delivered, 1);
    let id = sent["id"]
        .as_str()
        .unwrap_or_else(|| sent["envelope"]["id"].as_str().unwrap());
    b.get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await
        .expect(200);
    drop(a);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Content sealed for `members` (X25519 keys from fixed seeds) at `epoch` with `counter`.
fn sealed_for(members: &[&Ident], epoch: u64, counter: u64) -> serde_json::Value {
    use loom_protocol::e2ee::crypto::{Sealing, public_key};
    use loom_protocol::e2ee::{AadKind, Profile, Recipient, WrapRandomness, seal};
    let recipients: Vec<(Recipient, WrapRandomness)> = members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let k = u8::try_from(i).unwrap() + 1;
            let r = Recipient {
                to: m.address.clone(),
                key_id: format!("k_enc_member_{k}"),
                public: public_key(&[k; 32]),
            };
            (
                r,
                WrapRandomness {
                    ephemeral_secret: [k + 50; 32].into(),
                    nonce: [k; 24],
                },
            )
        })
        .collect();
    let s = Sealing {
        profile: Profile::V1,
        epoch,
        replay_counter: counter,
        kind: AadKind::Payload,
    };
    seal(
        &s,
        br#"{"human":{"text":"sealed"}}"#,
        &[9; 32],
        &[8; 24],
        &recipients,
    )
    .unwrap()
    .to_value()
}

/// v1.1 §7.4: an E2EE thread spanning two nodes. The epoch operation and the encrypted payload
/// travel like any envelope; the receiving node stores the content byte for byte, enforces the
/// thread's encryption as its own (ENCRYPTION_REQUIRED for cleartext), and never indexes it.
#[tokio::test]
async fn an_e2ee_thread_federates_its_ciphertext_byte_for_byte() {
    let (a, b, _sa, _sb) = pair().await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    send(&alice, &a, &t, None, &bob, "plain root").await;
    let keys = sealed_for(&[&alice, &bob], 0, 0);
    let op = alice.op(
        &a,
        &t,
        "encryption.epoch@v1",
        serde_json::json!({"profile": "loom-e2ee-x25519-xchacha20-v1", "epoch": 0, "wrapped_keys": keys["wrapped_keys"]}),
    );
    alice.send(&a, op).await.expect(201);
    let mut env = alice.message(&a, &t, None, &[&bob], "unused");
    let content = sealed_for(&[&alice, &bob], 0, 7);
    env["content"] = content.clone();
    let sent = alice.send(&a, env).await.expect(201).body;
    let id = sent["id"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        a.tick().await;
    }
    let got = b
        .get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(
        loom_protocol::jcs::to_canonical_string(&got["content"]),
        loom_protocol::jcs::to_canonical_string(&content),
        "the ciphertext arrives unchanged"
    );
    let th = b
        .get(&format!("/v1/threads/{t}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(th["encryption"]["enabled"], true, "{th}");
    // Bob's node holds the thread to the same rule as Alice's.
    // (Both test nodes draw ids from one seed: take fresh ones from a.test's generator.)
    let fresh_id = || a.thread_id().replacen("thr_", "env_", 1);
    let mut clear = bob.message(&b, &t, Some(&id), &[&alice], "in clear");
    clear["id"] = fresh_id().into();
    let refused = bob.send(&b, clear).await.expect(403).body;
    assert_eq!(refused["error"]["code"], "ENCRYPTION_REQUIRED");
    let mut reply = bob.message(&b, &t, Some(&id), &[&alice], "unused");
    reply["id"] = fresh_id().into();
    reply["content"] = sealed_for(&[&alice, &bob], 0, 1);
    bob.send(&b, reply).await.expect(201);
}
