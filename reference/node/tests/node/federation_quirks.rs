//! Every federation quirk turns off exactly its check (DESIGN.md §4, issue 15): each scenario
//! runs against a correct pair of nodes and against a pair whose receiving (or sending) node
//! has the one quirk, and the observable answer flips, so a Level 2 conformance case for the
//! rule can be proven able to fail.

use crate::support::defacto::with_defacto;
use crate::support::fed::{Served, fed_node, federation_quirks, free_port, serve, temp_dir};
use crate::support::{Ident, TestNode};
use loom_node::{Quirk, Quirks, Storage};
use loom_protocol::clock::Clock;
use serde_json::{Value, json};

const HOUR_MS: i64 = 3_600_000;

struct Pair {
    a: TestNode,
    b: TestNode,
    alice: Ident,
    bob: Ident,
    _served: (Served, Served),
}

fn quirks(q: Option<Quirk>) -> Quirks {
    q.map_or_else(Quirks::none, |q| Quirks::none().with(q))
}

/// a.test (quirks `qa`) and b.test (quirks `qb`, config `tweak_b`), both served, alice on a
/// and bob on b.
async fn pair(
    qa: Option<Quirk>,
    qb: Option<Quirk>,
    tweak_b: impl FnOnce(&mut loom_node::NodeConfig),
) -> Pair {
    let (pa, pb) = (free_port().await, free_port().await);
    let a = fed_node("a.test", "b.test", pb, Storage::Memory, quirks(qa), |_| {});
    let b = fed_node("b.test", "a.test", pa, Storage::Memory, quirks(qb), tweak_b);
    let served = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    Pair {
        a,
        b,
        alice,
        bob,
        _served: served,
    }
}

impl Pair {
    fn message(&self, text: &str) -> Value {
        self.alice.sign(
            self.alice
                .message(&self.a, &self.a.thread_id(), None, &[&self.bob], text),
        )
    }

    async fn deliver(&self, envelopes: Vec<Value>) -> crate::support::Resp {
        let (h, body) = self.a.signed_delivery(envelopes);
        self.b.deliver(&h, body).await
    }
}

/// The status of one delivery of a fresh message from a to b, where `q` sits on b.
async fn inbound_status(
    q: Option<Quirk>,
    tamper: impl Fn(&Pair, &mut Vec<(String, String)>, &mut Vec<u8>),
) -> u16 {
    let p = pair(None, q, |_| {}).await;
    let (mut h, mut body) = p.a.signed_delivery(vec![p.message("x")]);
    tamper(&p, &mut h, &mut body);
    p.b.deliver(&h, body).await.status.as_u16()
}

#[tokio::test]
async fn accept_unsigned_delivery() {
    let strip = |_: &Pair, h: &mut Vec<(String, String)>, _: &mut Vec<u8>| h.clear();
    assert_eq!(inbound_status(None, strip).await, 401);
    assert_eq!(
        inbound_status(Some(Quirk::AcceptUnsignedDelivery), strip).await,
        202
    );
}

#[tokio::test]
async fn skip_nonce_cache() {
    for (q, second) in [(None, 401), (Some(Quirk::SkipNonceCache), 202)] {
        let p = pair(None, q, |_| {}).await;
        let (h, body) = p.a.signed_delivery(vec![p.message("x")]);
        p.b.deliver(&h, body.clone()).await.expect(202);
        p.b.deliver(&h, body).await.expect(second);
    }
}

#[tokio::test]
async fn accept_stale_timestamp() {
    for (q, status) in [(None, 401), (Some(Quirk::AcceptStaleTimestamp), 202)] {
        let p = pair(None, q, |_| {}).await;
        let env = p.message("x");
        p.a.clock.advance_ms(-10 * 60_000);
        let (h, body) = p.a.signed_delivery(vec![env]);
        p.b.deliver(&h, body).await.expect(status);
    }
}

#[tokio::test]
async fn ignore_sender_node_mismatch() {
    let other = |p: &Pair, h: &mut Vec<(String, String)>, body: &mut Vec<u8>| {
        let mut w: Value = serde_json::from_slice(body).unwrap();
        w["sender_node"] = "c.test".into();
        *body = serde_json::to_vec(&w).unwrap();
        *h = p.a.sign_delivery(body);
    };
    assert_eq!(inbound_status(None, other).await, 401);
    assert_eq!(
        inbound_status(Some(Quirk::IgnoreSenderNodeMismatch), other).await,
        202
    );
}

#[tokio::test]
async fn accept_inactive_node_key() {
    for (q, status) in [(None, 401), (Some(Quirk::AcceptInactiveNodeKey), 202)] {
        let p = pair(None, q, |_| {}).await;
        // b resolves a.test and alice once, then learns that a's key is retired.
        p.deliver(vec![p.message("first")]).await.expect(202);
        let mut doc =
            p.a.call("GET", "/.well-known/loom.json", None, None)
                .await
                .body;
        doc["federation"]["signing_keys"][0]["status"] = "retired".into();
        doc["signing_keys"][0]["status"] = "retired".into();
        let now = p.b.now();
        loom_node::store::federation::put_node_document(
            &p.b.node.service().store.conn(),
            "a.test",
            &doc,
            &now,
        )
        .unwrap();
        p.deliver(vec![p.message("second")]).await.expect(status);
    }
}

#[tokio::test]
async fn accept_foreign_sender() {
    for (q, status) in [(None, 403), (Some(Quirk::AcceptForeignSender), 202)] {
        let p = pair(None, q, |_| {}).await;
        let carol = p.b.register("carol", "human", 3).await;
        let env = carol.sign(carol.message(&p.b, &p.b.thread_id(), None, &[&p.bob], "forged"));
        p.deliver(vec![env]).await.expect(status);
    }
}

#[tokio::test]
async fn ignore_federation_policy() {
    for (q, status) in [(None, 403), (Some(Quirk::IgnoreFederationPolicy), 202)] {
        let p = pair(None, q, |c| c.federation.blocklist = vec!["a.test".into()]).await;
        p.deliver(vec![p.message("x")]).await.expect(status);
    }
}

#[tokio::test]
async fn ignore_wrapper_limit() {
    for (q, status) in [(None, 413), (Some(Quirk::IgnoreWrapperLimit), 202)] {
        let p = pair(None, q, |_| {}).await;
        let envs: Vec<Value> = (0..101).map(|i| p.message(&format!("m{i}"))).collect();
        p.deliver(envs).await.expect(status);
    }
}

#[tokio::test]
async fn skip_envelope_signature_on_delivery() {
    for (q, status) in [
        (None, 401),
        (Some(Quirk::SkipEnvelopeSignatureOnDelivery), 202),
    ] {
        let p = pair(None, q, |_| {}).await;
        let mut env = p.message("x");
        env["content"]["human"]["text"] = "tampered".into();
        p.deliver(vec![env]).await.expect(status);
    }
}

#[tokio::test]
async fn skip_delegation_on_delivery() {
    for (q, status) in [(None, 403), (Some(Quirk::SkipDelegationOnDelivery), 202)] {
        let p = pair(None, q, |_| {}).await;
        let bot = p.a.register("bot", "agent", 9).await;
        // An agent envelope without a delegation chain (§13.3).
        let env = bot.sign(bot.message(&p.a, &p.a.thread_id(), None, &[&p.bob], "x"));
        p.deliver(vec![env]).await.expect(status);
    }
}

#[tokio::test]
async fn skip_capability_on_delivery() {
    for (q, status) in [(None, 403), (Some(Quirk::SkipCapabilityOnDelivery), 202)] {
        let p = pair(None, q, |_| {}).await;
        let dave = p.a.register("dave", "human", 4).await;
        let t = p.a.thread_id();
        let root = p
            .alice
            .sign(p.alice.message(&p.a, &t, None, &[&p.bob], "root"));
        p.deliver(vec![root]).await.expect(202);
        // dave is no participant and holds no capability: he may not resolve the thread.
        let op = dave.sign(dave.op(&p.a, &t, "thread.resolve@v1", json!({})));
        p.deliver(vec![op]).await.expect(status);
    }
}

#[tokio::test]
async fn reject_identical_redelivery() {
    for (q, second) in [(None, 202), (Some(Quirk::RejectIdenticalRedelivery), 409)] {
        let p = pair(None, q, |_| {}).await;
        let env = p.message("x");
        p.deliver(vec![env.clone()]).await.expect(202);
        p.deliver(vec![env]).await.expect(second);
    }
}

#[tokio::test]
async fn unsigned_receipt() {
    for (q, signed) in [(None, true), (Some(Quirk::UnsignedReceipt), false)] {
        let p = pair(None, q, |_| {}).await;
        let r = p.deliver(vec![p.message("x")]).await.expect(202);
        assert_eq!(
            r.body["receipt"]["signature"]["value"].is_string(),
            signed,
            "{q:?}"
        );
    }
}

#[tokio::test]
async fn drop_origin_event_seq() {
    for (q, kept) in [(None, true), (Some(Quirk::DropOriginEventSeq), false)] {
        let p = pair(None, q, |_| {}).await;
        let mut env = p.message("x");
        env["meta"] = json!({"origin_event_seq": 7});
        let id = env["id"].as_str().unwrap().to_owned();
        p.deliver(vec![env]).await.expect(202);
        let got =
            p.b.get(&format!("/v1/envelopes/{id}"), &p.bob.token)
                .await
                .expect(200)
                .body;
        assert_eq!(
            got["meta"]["origin_event_seq"] == 7,
            kept,
            "{q:?}: {}",
            got["meta"]
        );
    }
}

#[tokio::test]
async fn no_refetch_on_unknown_key() {
    for (q, status) in [(None, 202), (Some(Quirk::NoRefetchOnUnknownKey), 401)] {
        let p = pair(None, q, |_| {}).await;
        p.deliver(vec![p.message("first")]).await.expect(202);
        // b holds an outdated document of a.test (before a key rotation), two minutes old.
        let mut doc =
            p.a.call("GET", "/.well-known/loom.json", None, None)
                .await
                .body;
        let other = loom_protocol::keys::public_key_to_b64url(
            &loom_protocol::keys::signing_key_from_seed(&[42; 32]).verifying_key(),
        );
        let old = json!([{"key_id": "k_node_sign_old", "algorithm": "Ed25519", "public_key": other, "status": "active"}]);
        doc["signing_keys"] = old.clone();
        doc["federation"]["signing_keys"] = old;
        let then = p.b.now();
        loom_node::store::federation::put_node_document(
            &p.b.node.service().store.conn(),
            "a.test",
            &doc,
            &then,
        )
        .unwrap();
        p.b.clock.advance_ms(120_000);
        p.a.clock.advance_ms(120_000);
        p.deliver(vec![p.message("second")]).await.expect(status);
    }
    // The same for a remote sender's identity document: alice adds a key on a.test and
    // signs with it once the (configured) re-fetch interval has passed.
    for (q, status) in [(None, 202), (Some(Quirk::NoRefetchOnUnknownKey), 401)] {
        let p = pair(None, q, |c| c.federation.refetch_min_interval_ms = 1_000).await;
        p.deliver(vec![p.message("first")]).await.expect(202);
        let k2 = loom_protocol::keys::signing_key_from_seed(&[22; 32]);
        let pem = loom_protocol::keys::public_key_to_spki_pem(&k2.verifying_key());
        p.a.call(
            "POST",
            "/v1/identity/me/keys",
            Some(&p.alice.token),
            Some(json!({"key_id": "k_sign_alice_2", "public_key_pem": pem})),
        )
        .await
        .expect(201);
        let rotated = Ident {
            key: k2,
            key_id: "k_sign_alice_2".into(),
            ..p.alice.clone()
        };
        p.b.clock.advance_ms(2_000);
        p.a.clock.advance_ms(2_000);
        let env = rotated.sign(rotated.message(&p.a, &p.a.thread_id(), None, &[&p.bob], "k2"));
        p.deliver(vec![env]).await.expect(status);
    }
}

#[tokio::test]
async fn drop_delivered_envelopes() {
    for (q, stored) in [(None, 200), (Some(Quirk::DropDeliveredEnvelopes), 404)] {
        let p = pair(None, q, |_| {}).await;
        let env = p.message("x");
        let id = env["id"].as_str().unwrap().to_owned();
        let r = p.deliver(vec![env]).await.expect(202);
        assert_eq!(
            r.body["receipt"]["accepted_envelope_ids"],
            json!([id]),
            "{q:?}"
        );
        p.b.get(&format!("/v1/envelopes/{id}"), &p.bob.token)
            .await
            .expect(stored);
    }
}

#[tokio::test]
async fn no_receipt() {
    for (q, receipt) in [(None, true), (Some(Quirk::NoReceipt), false)] {
        let p = pair(None, q, |_| {}).await;
        let env = p.message("x");
        let id = env["id"].as_str().unwrap().to_owned();
        let r = p.deliver(vec![env]).await.expect(202);
        assert_eq!(
            r.body.to_string().contains(&id),
            receipt,
            "{q:?}: {}",
            r.body
        );
        // The envelope is stored either way: only the receipt is missing.
        p.b.get(&format!("/v1/envelopes/{id}"), &p.bob.token)
            .await
            .expect(200);
    }
}

#[tokio::test]
async fn reject_old_envelopes() {
    for (q, status) in [(None, 202), (Some(Quirk::RejectOldEnvelopes), 400)] {
        let p = pair(None, q, |_| {}).await;
        // Signed two days ago, delivered now in a fresh wrapper (store-and-forward, §15.5).
        let two_days_ago = p.a.clock.now().plus_ms(-48 * HOUR_MS).to_rfc3339();
        let mut env = p.alice.message(
            &p.a,
            &p.a.thread_id(),
            None,
            &[&p.bob],
            "queued for two days",
        );
        env["created_at"] = two_days_ago.into();
        p.deliver(vec![p.alice.sign(env)]).await.expect(status);
        // A fresh envelope is accepted with or without the quirk.
        p.deliver(vec![p.message("fresh")]).await.expect(202);
    }
}

#[tokio::test]
async fn store_redelivered_twice() {
    for (q, copies) in [(None, 1), (Some(Quirk::StoreRedeliveredTwice), 2)] {
        let p = pair(None, q, |_| {}).await;
        let env = p.message("x");
        let (id, t) = (
            env["id"].clone(),
            env["thread_id"].as_str().unwrap().to_owned(),
        );
        p.deliver(vec![env.clone()]).await.expect(202);
        p.deliver(vec![env]).await.expect(202);
        let list =
            p.b.get(&format!("/v1/threads/{t}/envelopes"), &p.bob.token)
                .await
                .expect(200)
                .body;
        let n = list["envelopes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["id"] == id)
            .count();
        assert_eq!(n, copies, "{q:?}: {list}");
    }
}

// --- the sending side ---

/// a (quirk `q`) sends alice → bob; b.test is served unless `peer_down`.
async fn outbound(q: Option<Quirk>, peer_down: bool) -> (TestNode, TestNode, Ident, Vec<Served>) {
    let (pa, pb) = (free_port().await, free_port().await);
    let a = fed_node("a.test", "b.test", pb, Storage::Memory, quirks(q), |_| {});
    let b = fed_node(
        "b.test",
        "a.test",
        pa,
        Storage::Memory,
        Quirks::none(),
        |_| {},
    );
    let served = if peer_down {
        Vec::new()
    } else {
        vec![serve(&a, pa).await, serve(&b, pb).await]
    };
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    alice
        .send(&a, alice.message(&a, &a.thread_id(), None, &[&bob], "x"))
        .await
        .expect(201);
    (a, b, alice, served)
}

#[tokio::test]
async fn unsigned_outbound() {
    for (q, delivered, failed) in [(None, 1, 0), (Some(Quirk::UnsignedOutbound), 0, 1)] {
        let (a, _b, _alice, _s) = outbound(q, false).await;
        let r = a.tick().await;
        assert_eq!((r.delivered, r.failed), (delivered, failed), "{q:?}");
    }
}

#[tokio::test]
async fn no_retry() {
    for (q, retried, failed) in [(None, 1, 0), (Some(Quirk::NoRetry), 0, 1)] {
        let (a, _b, _alice, _s) = outbound(q, true).await;
        let r = a.tick().await;
        assert_eq!((r.retried, r.failed), (retried, failed), "{q:?}");
    }
}

#[tokio::test]
async fn linear_backoff() {
    for (q, grows) in [(None, true), (Some(Quirk::LinearBackoff), false)] {
        let (a, _b, _alice, _s) = outbound(q, true).await;
        a.tick().await;
        let mut gaps = Vec::new();
        for _ in 0..4 {
            let due = a.node.service().next_outbox_due().unwrap().unwrap();
            let gap = due.unix_ms() - a.clock.now().unix_ms();
            gaps.push(gap);
            a.clock.advance_ms(gap);
            a.tick().await;
        }
        assert_eq!(
            gaps.windows(2).all(|w| w[1] > w[0]),
            grows,
            "{q:?}: {gaps:?}"
        );
    }
}

#[tokio::test]
async fn drop_outbox_on_restart() {
    for (q, left) in [(None, 1), (Some(Quirk::DropOutboxOnRestart), 0)] {
        let (a, _alice, _id, dir) = restarted(q, "drop").await;
        let queued = a.outbox().iter().filter(|r| r.state == "queued").count();
        assert_eq!(queued, left, "{q:?}");
        drop(a);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// a.test on a durable store, alice sends one message to bob on b.test (unreachable), a
/// restarts with quirk `q`; returns the restarted node, alice and the message id.
async fn restarted(q: Option<Quirk>, name: &str) -> (TestNode, Ident, String, std::path::PathBuf) {
    let dir = temp_dir(&format!("{name}-{}", q.is_some()));
    let pb = free_port().await;
    let a = fed_node(
        "a.test",
        "b.test",
        pb,
        Storage::Dir(dir.clone()),
        quirks(q),
        |_| {},
    );
    let b = fed_node(
        "b.test",
        "a.test",
        9,
        Storage::Memory,
        Quirks::none(),
        |_| {},
    );
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let env = alice.message(&a, &a.thread_id(), None, &[&bob], "x");
    let id = env["id"].as_str().unwrap().to_owned();
    alice.send(&a, env).await.expect(201);
    drop(a);
    let a = fed_node(
        "a.test",
        "b.test",
        pb,
        Storage::Dir(dir.clone()),
        quirks(q),
        |_| {},
    );
    (a, alice, id, dir)
}

#[tokio::test]
async fn forget_last_envelope_on_restart() {
    for (q, kept) in [(None, 200), (Some(Quirk::ForgetLastEnvelopeOnRestart), 404)] {
        let (a, alice, id, dir) = restarted(q, "forget").await;
        a.get(&format!("/v1/envelopes/{id}"), &alice.token)
            .await
            .expect(kept);
        drop(a);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// White-box: the writer's `synchronous` level. That a power loss then loses acknowledged
/// envelopes is proven on the simulated disk (`simulator/tests/sweeps.rs`, storage-faults).
#[tokio::test]
async fn ack_before_sync() {
    for (q, level) in [(None, 2), (Some(Quirk::AckBeforeSync), 0)] {
        let (a, _alice, _id, dir) = restarted(q, "unsynced").await;
        let got: i64 = a
            .node
            .service()
            .store
            .conn()
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(got, level, "{q:?}: PRAGMA synchronous");
        drop(a);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn prune_audit_on_restart() {
    for (q, intact) in [(None, true), (Some(Quirk::PruneAuditOnRestart), false)] {
        let (a, _alice, _id, dir) = restarted(q, "prune").await;
        let verdict = loom_node::store::audit::verify(&a.node.service().store.conn()).unwrap();
        assert_eq!(
            matches!(
                verdict,
                loom_node::store::audit::AuditVerdict::Intact { .. }
            ),
            intact,
            "{q:?}: {verdict:?}"
        );
        drop(a);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn orphan_delivered_replies() {
    for (q, linked) in [(None, true), (Some(Quirk::OrphanDeliveredReplies), false)] {
        let p = pair(None, q, |_| {}).await;
        let first = p.message("x");
        let (thread, parent) = (
            first["thread_id"].as_str().unwrap().to_owned(),
            first["id"].as_str().unwrap().to_owned(),
        );
        let reply = p.alice.sign(
            p.alice
                .message(&p.a, &thread, Some(&parent), &[&p.bob], "y"),
        );
        let id = reply["id"].as_str().unwrap().to_owned();
        p.deliver(vec![first, reply]).await.expect(202);
        let stored: Option<String> =
            p.b.node
                .service()
                .store
                .conn()
                .query_row(
                    "SELECT parent_id FROM envelopes WHERE id = ?1",
                    [&id],
                    |r| r.get(0),
                )
                .unwrap();
        assert_eq!(
            stored.as_deref() == Some(parent.as_str()),
            linked,
            "{q:?}: {stored:?}"
        );
    }
}

#[tokio::test]
async fn ignore_delivered_lock() {
    for (q, status) in [
        (None, "locked"),
        (Some(Quirk::IgnoreDeliveredLock), "active"),
    ] {
        let p = pair(None, q, |_| {}).await;
        let first = p.message("x");
        let thread = first["thread_id"].as_str().unwrap().to_owned();
        let lock = p
            .alice
            .sign(p.alice.op(&p.a, &thread, "thread.lock@v1", json!({})));
        let id = lock["id"].as_str().unwrap().to_owned();
        p.deliver(vec![first, lock]).await.expect(202);
        // The lock is stored either way (bob reads it); only the quirk leaves it unapplied.
        p.b.get(&format!("/v1/envelopes/{id}"), &p.bob.token)
            .await
            .expect(200);
        let th =
            p.b.get(&format!("/v1/threads/{thread}"), &p.bob.token)
                .await
                .expect(200);
        assert_eq!(th.body["state"], status, "{q:?}");
    }
}

/// Runs alice's undeliverable message past the TTL; the failed row's reason and the number
/// of receipt envelopes alice can read.
async fn expire(q: Option<Quirk>) -> (Option<String>, usize) {
    let (a, _b, alice, _s) = outbound(q, true).await;
    a.tick().await;
    a.clock.advance_ms(73 * HOUR_MS);
    a.tick().await;
    (a.outbox()[0].reason.clone(), receipts_of(&a, &alice).await)
}

/// The number of receipt envelopes `who` can read on `a` (logged in afresh).
async fn receipts_of(a: &TestNode, who: &Ident) -> usize {
    let (token, _) = a.login(&who.address, &who.key, &who.key_id).await;
    let list = a.get("/v1/threads?limit=50", &token).await.expect(200).body;
    let mut receipts = 0;
    for t in list["threads"].as_array().unwrap() {
        let r = a
            .get(
                &format!("/v1/threads/{}/envelopes", t["id"].as_str().unwrap()),
                &token,
            )
            .await;
        receipts += r.body["envelopes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "receipt")
            .count();
    }
    receipts
}

#[tokio::test]
async fn no_failure_receipt() {
    assert_eq!(expire(None).await.1, 1);
    assert_eq!(expire(Some(Quirk::NoFailureReceipt)).await.1, 0);
}

#[tokio::test]
async fn wrong_failure_reason() {
    assert_eq!(expire(None).await.0.as_deref(), Some("NODE_UNREACHABLE"));
    let (reason, _) = expire(Some(Quirk::WrongFailureReason)).await;
    assert!(
        !matches!(
            reason.as_deref(),
            Some("NODE_UNREACHABLE" | "DELIVERY_TIMEOUT")
        ),
        "{reason:?}"
    );
}

#[test]
fn every_federation_quirk_has_a_test_here() {
    let src = include_str!("federation_quirks.rs");
    for &q in federation_quirks() {
        let test = q.name().replace('-', "_");
        assert!(
            src.contains(&format!("async fn {test}()")),
            "{q:?} has no test"
        );
    }
}

#[tokio::test]
async fn require_signed_trust_epoch() {
    // DESIGN.md §9: five signed lines beside `X-LOOM-Trust-Epoch: 1`.
    for (q, status) in [(None, 202), (Some(Quirk::RequireSignedTrustEpoch), 401)] {
        let w = with_defacto(quirks(q)).await;
        let r = w.deliver_from_js(w.carol_message()).await;
        assert_eq!(r.status.as_u16(), status, "{q:?}: {}", r.body);
    }
}

#[tokio::test]
async fn top_level_receipt() {
    // The de-facto node reads the receipt under `receipt` and checks its nine-line signature.
    for (q, read) in [(None, true), (Some(Quirk::TopLevelReceipt), false)] {
        let w = with_defacto(quirks(q)).await;
        let env = w.carol_message();
        let id = env["id"].as_str().unwrap().to_owned();
        let r = w.deliver_from_js(env).await.expect(202);
        let key = w.a.node.service().node_key().1.verifying_key();
        assert_eq!(
            crate::support::defacto::receipt_accepts(&r.body, &key, &id),
            read,
            "{q:?}: {}",
            r.body
        );
    }
}

#[tokio::test]
async fn full_key_node_signature() {
    // The de-facto node verifies our senders' documents over the registration form.
    for (q, state) in [
        (None, "delivered"),
        (Some(Quirk::FullKeyNodeSignature), "failed"),
    ] {
        let w = with_defacto(quirks(q)).await;
        let (id, got) = w.to_js().await;
        assert_eq!(got, state, "{q:?}: {:?}", w.js.refusals());
        assert_eq!(w.js.stored().contains_key(&id), q.is_none());
        if q.is_some() {
            assert!(
                w.js.refusals().iter().any(|r| r.contains("node_signature")),
                "{:?}",
                w.js.refusals()
            );
        }
    }
}

#[tokio::test]
async fn duplicate_rejection_is_failure() {
    // The first answer is lost after the envelope was stored; the re-send is answered with a
    // partial receipt naming it `ENVELOPE_DUPLICATE` (a string, or `{code}`).
    for error_as_object in [false, true] {
        for (q, state, failures) in [
            (None, "delivered", 0),
            (Some(Quirk::DuplicateRejectionIsFailure), "failed", 1),
        ] {
            let w = with_defacto(quirks(q)).await;
            w.js.set(crate::support::defacto::Behaviour {
                error_as_object,
                lose_next_answer: true,
                ..Default::default()
            });
            let (id, first) = w.to_js().await;
            assert_eq!(first, "queued", "a 503 is retried");
            assert!(w.js.stored().contains_key(&id));
            w.a.clock.advance_ms(HOUR_MS);
            w.a.tick().await;
            let row =
                w.a.outbox()
                    .into_iter()
                    .find(|r| r.envelope_id == id)
                    .unwrap();
            assert_eq!(row.state, state, "{q:?} {error_as_object}");
            assert_eq!(
                receipts_of(&w.a, &w.alice).await,
                failures,
                "{q:?} {error_as_object}"
            );
        }
    }
}

#[tokio::test]
async fn one_delegation_reading() {
    // js.test's agent acts under carol's link, whose signature covers `signature_context`.
    for (q, status) in [(None, 202), (Some(Quirk::OneDelegationReading), 403)] {
        let w = with_defacto(quirks(q)).await;
        let (env, _) = w.bot_message();
        let r = w.deliver_from_js(env).await;
        assert_eq!(r.status.as_u16(), status, "{q:?}: {}", r.body);
        if status == 403 {
            assert_eq!(r.body["error"]["code"], "DELEGATION_INVALID");
        }
    }
}

#[tokio::test]
async fn no_refetch_on_signature_failure() {
    for (q, after_rotation) in [(None, 202), (Some(Quirk::NoRefetchOnSignatureFailure), 401)] {
        let w = with_defacto(quirks(q)).await;
        w.deliver_from_js(w.carol_message()).await.expect(202);
        assert_eq!(w.js.document_fetches(), 1);
        // A restart of js.test: a new node key under the same key id (DESIGN.md §9).
        w.js.rotate_node_key_same_id(2);
        w.a.clock.advance_ms(HOUR_MS);
        let r = w.deliver_from_js(w.carol_message()).await;
        assert_eq!(r.status.as_u16(), after_rotation, "{q:?}: {}", r.body);
        if q.is_none() {
            assert_eq!(w.js.document_fetches(), 2, "one re-fetch");
            // A second rotation within the interval is not fetched again: one fetch per
            // `refetch_min_interval_ms`, so forged signatures cannot make us fetch per request.
            w.js.rotate_node_key_same_id(3);
            let r = w.deliver_from_js(w.carol_message()).await;
            assert_eq!(r.status.as_u16(), 401, "{}", r.body);
            assert_eq!(w.js.document_fetches(), 2);
        }
    }
}

/// Concurrent deliveries that each need the peer's document again cost one fetch, not one
/// each (issue 36, item 5: single-flight per peer): js.test rotates its node key under the same
/// key id, and eight deliveries signed with the new key arrive at once.
#[tokio::test]
async fn concurrent_refetches_of_one_peer_are_one_fetch() {
    let w = with_defacto(quirks(None)).await;
    w.deliver_from_js(w.carol_message()).await.expect(202);
    assert_eq!(w.js.document_fetches(), 1);
    w.js.rotate_node_key_same_id(2);
    w.a.clock.advance_ms(HOUR_MS);
    let m: Vec<_> = (0..8)
        .map(|_| w.js.delivery(vec![w.carol_message()]))
        .collect();
    let d = |i: usize| w.a.deliver(&m[i].0, m[i].1.clone());
    let all = tokio::join!(d(0), d(1), d(2), d(3), d(4), d(5), d(6), d(7));
    for r in [all.0, all.1, all.2, all.3, all.4, all.5, all.6, all.7] {
        assert_eq!(r.status.as_u16(), 202, "{}", r.body);
    }
    assert_eq!(w.js.document_fetches(), 2, "one re-fetch for all eight");
}
